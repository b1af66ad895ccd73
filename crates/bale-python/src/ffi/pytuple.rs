//! `PyTupleObject`: a tuple's length and inline item array.
//!
//! These are the reads of the public macros `PyTuple_GET_SIZE` and
//! `PyTuple_GET_ITEM` (pyo3-ffi's copies of them, bounded by the versions
//! it supports). A tuple's items never change once it is shared.

use pyo3::ffi::{self, PyObject};

/// The number of items of a tuple (exact or a subclass).
#[inline(always)]
pub unsafe fn len(tuple: *mut PyObject) -> usize {
    ffi::Py_SIZE(tuple) as usize
}

/// The item array of a tuple.
#[inline(always)]
pub unsafe fn items_ptr(tuple: *mut PyObject) -> *mut *mut PyObject {
    (*(tuple as *mut ffi::PyTupleObject)).ob_item.as_mut_ptr()
}

/// Item `i` of a tuple, borrowed; `i` must be below `len`.
#[inline(always)]
pub unsafe fn item(tuple: *mut PyObject, i: usize) -> *mut PyObject {
    *items_ptr(tuple).add(i)
}
