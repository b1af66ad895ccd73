//! `PyDictObject` and its `PyDictKeysObject`: a dict's keys and values read
//! straight from its entry table.
//!
//! `PyDict_Next` is a call per entry; compacting a million records calls it
//! three million times (about a tenth of the time). For the common dict, a
//! "combined" table with only str keys and no deleted entries, the items
//! are an array of (key, value) pairs in insertion order, after the hash
//! index, in CPython 3.11 to 3.14 (the versions this was checked on). That
//! layout is private to CPython, so it is compiled only for those versions
//! (a later one, like a free-threaded build, whose dicts have a lock, takes
//! `PyDict_Next`), and used only when checked at import against
//! `PyDict_Next` on dicts of several sizes; otherwise (and for every other
//! dict) `PyDict_Next` is.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::compactor::prefetch;

/// Whether this interpreter's dicts have the layout read here.
static LAYOUT_CHECKED: AtomicBool = AtomicBool::new(false);

/// Offsets in `PyDictKeysObject`: log2 of the index bytes, the kind, the
/// number of entries used, and the hash index.
const LOG2_INDEX_BYTES: usize = 9;
const KIND: usize = 10;
const NENTRIES: usize = 24;
const INDICES: usize = 32;
/// `DICT_KEYS_UNICODE`: entries are (key, value) pairs of pointers.
const KIND_UNICODE: u8 = 1;

/// Where a keys object's entries start: after its hash index, of
/// 2^(log2 index bytes) bytes. (An address only: `pairs` checks the table
/// before it reads there; a prefetch never faults.)
#[cfg(all(Py_3_11, not(any(Py_3_15, PyPy, Py_LIMITED_API, Py_GIL_DISABLED))))]
#[inline(always)]
unsafe fn entries_of(keys: *const u8) -> *const u8 {
    keys.wrapping_add(INDICES + (1usize << (*keys.add(LOG2_INDEX_BYTES) & 63)))
}

/// The (key, value) pairs of an exact dict of `len` items, when its table
/// is combined, of str keys, with no deleted entries; else `None`.
#[inline(always)]
pub unsafe fn pairs<'a>(dict: *mut PyObject, len: usize) -> Option<&'a [[*mut PyObject; 2]]> {
    #[cfg(all(Py_3_11, not(any(Py_3_15, PyPy, Py_LIMITED_API, Py_GIL_DISABLED))))]
    {
        if !LAYOUT_CHECKED.load(Ordering::Relaxed) {
            return None;
        }
        let d = dict as *mut ffi::PyDictObject;
        if len == 0 {
            // An empty dict may share CPython's empty keys object, whose
            // entries would start at an odd address (one index byte).
            return ((*d).ma_used == 0).then_some(&[]);
        }
        let keys = (*d).ma_keys as *const u8;
        if !(*d).ma_values.is_null()
            || (*d).ma_used as usize != len
            || *keys.add(KIND) != KIND_UNICODE
            || *(keys.add(NENTRIES) as *const isize) != len as isize
        {
            return None;
        }
        Some(std::slice::from_raw_parts(entries_of(keys) as *const [*mut PyObject; 2], len))
    }
    #[cfg(not(all(Py_3_11, not(any(Py_3_15, PyPy, Py_LIMITED_API, Py_GIL_DISABLED)))))]
    {
        let _ = (dict, len);
        None
    }
}

/// The (key, value) items of a dict, in order, through `PyDict_Next`.
pub struct Items {
    dict: *mut PyObject,
    pos: ffi::Py_ssize_t,
}

/// Items of `dict`, which must stay alive and unchanged while they are read.
pub unsafe fn items(dict: *mut PyObject) -> Items {
    Items { dict, pos: 0 }
}

impl Iterator for Items {
    type Item = (*mut PyObject, *mut PyObject);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let mut key: *mut PyObject = std::ptr::null_mut();
        let mut value: *mut PyObject = std::ptr::null_mut();
        // SAFETY: `items` requires the dict to be alive and unchanged.
        (unsafe { ffi::PyDict_Next(self.dict, &mut self.pos, &mut key, &mut value) } != 0).then_some((key, value))
    }
}

/// The number of items of an exact dict.
#[inline(always)]
pub unsafe fn len(dict: *mut PyObject) -> usize {
    #[cfg(not(any(PyPy, Py_LIMITED_API)))]
    return (*(dict as *mut ffi::PyDictObject)).ma_used as usize;
    #[cfg(any(PyPy, Py_LIMITED_API))]
    return ffi::PyDict_Size(dict) as usize;
}

/// Fetches the first two cache lines of an exact dict's keys object, where
/// a small dict's entries are (its header gives the address).
#[inline(always)]
pub unsafe fn prefetch_entries(dict: *mut PyObject) {
    #[cfg(not(any(PyPy, Py_LIMITED_API)))]
    {
        let keys = (*(dict as *mut ffi::PyDictObject)).ma_keys as *mut u8;
        prefetch(keys as *mut PyObject);
        prefetch(keys.add(64) as *mut PyObject);
    }
    #[cfg(any(PyPy, Py_LIMITED_API))]
    let _ = dict;
}

/// Fetches the lines of the (key, value) pairs of an exact dict of `len`
/// items read by `pairs`, once its keys object's header is in cache
/// (`prefetch_entries`), a few rows ahead.
#[inline(always)]
pub unsafe fn prefetch_pairs(dict: *mut PyObject, len: usize) {
    #[cfg(all(Py_3_11, not(any(Py_3_15, PyPy, Py_LIMITED_API, Py_GIL_DISABLED))))]
    {
        if !LAYOUT_CHECKED.load(Ordering::Relaxed) {
            return;
        }
        let keys = (*(dict as *mut ffi::PyDictObject)).ma_keys as *const u8;
        // A prefetch never faults: an address past a table of another
        // layout only costs a wasted load.
        let entries = entries_of(keys);
        let end = entries.wrapping_add(len * std::mem::size_of::<[*mut PyObject; 2]>());
        let mut line = entries;
        while line < end {
            prefetch(line as *mut PyObject);
            line = line.wrapping_add(64);
        }
        prefetch(end.wrapping_sub(1) as *mut PyObject);
    }
    #[cfg(not(all(Py_3_11, not(any(Py_3_15, PyPy, Py_LIMITED_API, Py_GIL_DISABLED)))))]
    let _ = (dict, len);
}

/// Turns `pairs` on when it agrees with `PyDict_Next` on dicts whose hash
/// index takes 1 and 2 bytes per slot.
pub fn check_layout(py: Python<'_>) -> PyResult<()> {
    LAYOUT_CHECKED.store(true, Ordering::Relaxed);
    let mut agree = true;
    for size in [3usize, 100] {
        let dict = PyDict::new(py);
        for i in 0..size {
            dict.set_item(format!("key{i}"), i)?;
        }
        unsafe {
            let expected: Vec<_> = items(dict.as_ptr()).map(|(key, value)| [key, value]).collect();
            agree &= pairs(dict.as_ptr(), size).is_some_and(|p| p == expected.as_slice());
        }
    }
    LAYOUT_CHECKED.store(agree, Ordering::Relaxed);
    Ok(())
}

/// Whether `pairs` reads dicts in this process (for the tests).
pub fn layout_checked() -> bool {
    LAYOUT_CHECKED.load(Ordering::Relaxed)
}
