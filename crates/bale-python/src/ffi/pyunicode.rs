//! `PyASCIIObject` / `PyCompactUnicodeObject`: a str's own code units,
//! read without copying or encoding, and written into a new str.
//!
//! The reads are CPython's public macros (`PyUnicode_GET_LENGTH`,
//! `PyUnicode_KIND`, `PyUnicode_DATA`, `PyUnicode_IS_ASCII`; PEP 393),
//! through pyo3-ffi's copies of them, bounded by the versions it supports.

use bale_core::format::Width;
use pyo3::ffi;

/// Width and code units of an exact `str` object (borrowed from it).
#[inline]
pub unsafe fn str_units<'a>(p: *mut ffi::PyObject) -> (Width, &'a [u8]) {
    let n = ffi::PyUnicode_GET_LENGTH(p) as usize;
    let kind = ffi::PyUnicode_KIND(p) as usize;
    let data = ffi::PyUnicode_DATA(p) as *const u8;
    let units = std::slice::from_raw_parts(data, n * kind);
    let width = match kind {
        1 => {
            if is_ascii(p, units) {
                Width::Ascii
            } else {
                Width::Latin1
            }
        }
        2 => Width::Ucs2,
        _ => Width::Ucs4,
    };
    (width, units)
}

/// Whether a str of 1-byte code units is ASCII. Up to 3.13, its `ascii`
/// state bit says so. 3.14 rearranged that bitfield and exports no function
/// that reads it (pyo3-ffi has no `PyUnicode_IS_ASCII` there), so there the
/// units say it: CPython sets the bit exactly when every code point is below
/// 128 (`_PyUnicode_CheckConsistency`), and a scan gives the same answer
/// for any str, without reading the struct.
#[inline(always)]
unsafe fn is_ascii(p: *mut ffi::PyObject, units: &[u8]) -> bool {
    #[cfg(not(Py_3_14))]
    {
        let _ = units;
        ffi::PyUnicode_IS_ASCII(p) != 0
    }
    #[cfg(Py_3_14)]
    {
        let _ = p;
        units.is_ascii()
    }
}

/// A new str of `units`, which the caller checked are all ASCII, written
/// straight into its data; null with the Python error set on failure.
#[inline]
pub unsafe fn new_ascii(units: &[u8]) -> *mut ffi::PyObject {
    if let [c] = units {
        // CPython keeps one object per 1-character Latin-1 string (as
        // `json.loads`, `pickle.loads` and `"".join` give them): no allocation.
        return ffi::PyUnicode_FromOrdinal(*c as std::os::raw::c_int);
    }
    let o = ffi::PyUnicode_New(units.len() as ffi::Py_ssize_t, 127);
    if !o.is_null() {
        std::ptr::copy_nonoverlapping(units.as_ptr(), ffi::PyUnicode_DATA(o) as *mut u8, units.len());
    }
    o
}
