//! `PyFloatObject`: a float's value (`ob_fval`), read as the public macro
//! `PyFloat_AS_DOUBLE` does (pyo3-ffi's copy of it, bounded by the
//! versions it supports): no call per float of a list or a column.

use pyo3::ffi::{self, PyObject};

/// The value of a float (exact or a subclass).
#[inline(always)]
pub unsafe fn value(float: *mut PyObject) -> f64 {
    ffi::PyFloat_AS_DOUBLE(float)
}
