//! `PyBytesObject`: the contents of a bytes object (`ob_sval`), read as the
//! public macro `PyBytes_AS_STRING` does (pyo3-ffi's copy of it, bounded by
//! the versions it supports), borrowed without a copy.

use pyo3::ffi::{self, PyObject};

/// The contents of a bytes object (exact or a subclass), borrowed from it.
#[inline(always)]
pub unsafe fn data<'a>(bytes: *mut PyObject) -> &'a [u8] {
    let n = ffi::PyBytes_Size(bytes) as usize;
    std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(bytes) as *const u8, n)
}
