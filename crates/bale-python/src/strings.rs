//! CPython's own string representation, read without copying or encoding.

use bale_core::format::Width;
use pyo3::ffi;

/// Width and code units of an exact `str` object (borrowed from it).
#[inline]
pub unsafe fn str_units<'a>(p: *mut ffi::PyObject) -> (Width, &'a [u8]) {
    let n = ffi::PyUnicode_GET_LENGTH(p) as usize;
    let kind = ffi::PyUnicode_KIND(p) as usize;
    let data = ffi::PyUnicode_DATA(p) as *const u8;
    let width = match kind {
        1 => {
            if ffi::PyUnicode_IS_ASCII(p) != 0 {
                Width::Ascii
            } else {
                Width::Latin1
            }
        }
        2 => Width::Ucs2,
        _ => Width::Ucs4,
    };
    (width, std::slice::from_raw_parts(data, n * kind))
}
