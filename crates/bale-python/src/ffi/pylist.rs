//! `PyListObject`: an exact list's length and item array.
//!
//! These are the reads of the public macros `PyList_GET_SIZE` and
//! `PyList_GET_ITEM` (pyo3-ffi's copies of them, bounded by the versions it
//! supports), taken as a slice so that a loop over the items needs no call.
//! A list can change whenever Python code runs: callers read it again after
//! any such code (Note [Python code during compaction] in `compactor.rs`).

use pyo3::ffi::{self, PyObject};

/// The number of items of an exact list.
#[inline(always)]
pub unsafe fn len(list: *mut PyObject) -> usize {
    ffi::Py_SIZE(list) as usize
}

/// The item array of an exact list (valid until Python code runs).
#[inline(always)]
pub unsafe fn items_ptr(list: *mut PyObject) -> *mut *mut PyObject {
    (*(list as *mut ffi::PyListObject)).ob_item
}

/// The items of an exact list, borrowed (valid until Python code runs).
#[inline(always)]
pub unsafe fn items<'a>(list: *mut PyObject) -> &'a [*mut PyObject] {
    let n = len(list);
    if n == 0 {
        // An empty list may have no item array at all.
        return &[];
    }
    std::slice::from_raw_parts(items_ptr(list), n)
}

/// Item `i` of an exact list, borrowed; `i` must be below `len`.
#[inline(always)]
pub unsafe fn item(list: *mut PyObject, i: usize) -> *mut PyObject {
    *items_ptr(list).add(i)
}
