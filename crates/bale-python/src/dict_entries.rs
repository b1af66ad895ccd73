//! A dict's keys and values read straight from its entry table.
//!
//! `PyDict_Next` is a call per entry; compacting a million records calls it
//! three million times (about a tenth of the time). For the common dict, a
//! "combined" table with only str keys and no deleted entries, the items
//! are an array of (key, value) pairs in insertion order, after the hash
//! index, in CPython 3.11 and later. That layout is private to CPython, so
//! it is used only when checked at import against `PyDict_Next` on dicts of
//! several sizes; otherwise (and for every other dict) `PyDict_Next` is.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;
use pyo3::types::PyDict;

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

/// The (key, value) pairs of an exact dict of `len` items, when its table
/// is combined, of str keys, with no deleted entries; else `None`.
#[inline(always)]
pub unsafe fn pairs<'a>(dict: *mut PyObject, len: usize) -> Option<&'a [[*mut PyObject; 2]]> {
    #[cfg(all(Py_3_11, not(any(PyPy, Py_LIMITED_API, Py_GIL_DISABLED))))]
    {
        if !LAYOUT_CHECKED.load(Ordering::Relaxed) {
            return None;
        }
        let d = dict as *mut ffi::PyDictObject;
        let keys = (*d).ma_keys as *const u8;
        if !(*d).ma_values.is_null() || (*d).ma_used as usize != len || *keys.add(KIND) != KIND_UNICODE || *(keys.add(NENTRIES) as *const isize) != len as isize {
            return None;
        }
        let entries = keys.add(INDICES + (1usize << *keys.add(LOG2_INDEX_BYTES)));
        Some(std::slice::from_raw_parts(entries as *const [*mut PyObject; 2], len))
    }
    #[cfg(not(all(Py_3_11, not(any(PyPy, Py_LIMITED_API, Py_GIL_DISABLED)))))]
    {
        let _ = (dict, len);
        None
    }
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
        let mut expected = Vec::new();
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key: *mut PyObject = std::ptr::null_mut();
        let mut value: *mut PyObject = std::ptr::null_mut();
        unsafe {
            while ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key, &mut value) != 0 {
                expected.push([key, value]);
            }
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
