//! Stored scalars to Python objects, through the C-API.

use bale_core::format::Width;
use bale_core::{Str, Value};
use pyo3::ffi;
use pyo3::prelude::*;

use crate::errors::FormatError;

/// A new reference, or the pending Python error.
#[inline]
pub unsafe fn owned(py: Python<'_>, p: *mut ffi::PyObject) -> PyResult<Py<PyAny>> {
    if p.is_null() {
        Err(PyErr::fetch(py))
    } else {
        Ok(Bound::from_owned_ptr(py, p).unbind())
    }
}

/// A `str` from code units; always canonical, whatever the stored width claims.
pub unsafe fn make_str(py: Python<'_>, s: &Str<'_>) -> PyResult<*mut ffi::PyObject> {
    let units = s.units();
    let n = s.len as ffi::Py_ssize_t;
    let p = match s.width {
        Width::Ascii => {
            // decode() checked that every unit is ASCII.
            crate::ffi::pyunicode::new_ascii(units)
        }
        Width::Latin1 => ffi::PyUnicode_FromKindAndData(ffi::PyUnicode_1BYTE_KIND as _, units.as_ptr().cast(), n),
        Width::Ucs2 => {
            if (units.as_ptr() as usize).is_multiple_of(2) {
                ffi::PyUnicode_FromKindAndData(ffi::PyUnicode_2BYTE_KIND as _, units.as_ptr().cast(), n)
            } else {
                let v: Vec<u16> = units.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                ffi::PyUnicode_FromKindAndData(ffi::PyUnicode_2BYTE_KIND as _, v.as_ptr().cast(), n)
            }
        }
        Width::Ucs4 => {
            // decode() checked every code point is <= 0x10FFFF.
            if (units.as_ptr() as usize).is_multiple_of(4) {
                ffi::PyUnicode_FromKindAndData(ffi::PyUnicode_4BYTE_KIND as _, units.as_ptr().cast(), n)
            } else {
                let v: Vec<u32> = units.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
                ffi::PyUnicode_FromKindAndData(ffi::PyUnicode_4BYTE_KIND as _, v.as_ptr().cast(), n)
            }
        }
    };
    if p.is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok(p)
}

/// A new 2-tuple of ints (a PAIR slot's value).
#[inline]
pub unsafe fn make_pair(py: Python<'_>, a: i64, b: i64) -> PyResult<*mut ffi::PyObject> {
    let t = ffi::PyTuple_New(2);
    if t.is_null() {
        return Err(PyErr::fetch(py));
    }
    for (i, v) in [a, b].into_iter().enumerate() {
        let p = ffi::PyLong_FromLongLong(v);
        if p.is_null() {
            ffi::Py_DecRef(t);
            return Err(PyErr::fetch(py));
        }
        ffi::PyTuple_SET_ITEM(t, i as ffi::Py_ssize_t, p);
    }
    Ok(t)
}

/// A new reference for a scalar value; `None` for containers.
#[inline]
pub unsafe fn scalar(py: Python<'_>, v: &Value<'_>) -> Option<PyResult<*mut ffi::PyObject>> {
    let p = match *v {
        Value::None => {
            let p = ffi::Py_None();
            ffi::Py_IncRef(p);
            p
        }
        Value::Bool(b) => {
            let p = if b { ffi::Py_True() } else { ffi::Py_False() };
            ffi::Py_IncRef(p);
            p
        }
        Value::Int(i) => ffi::PyLong_FromLongLong(i),
        Value::Pair(a, b) => return Some(make_pair(py, a, b)),
        Value::BigInt(b) => big_int(b),
        Value::Float(f) => ffi::PyFloat_FromDouble(f),
        Value::Complex(re, im) => ffi::PyComplex_FromDoubles(re, im),
        Value::Str(ref s) => return Some(make_str(py, s)),
        Value::Bytes(b) => ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as ffi::Py_ssize_t),
        Value::Ext(ref e) => return Some(crate::typed::ext_to_py(py, e)),
        _ => return None,
    };
    if p.is_null() {
        return Some(Err(PyErr::fetch(py)));
    }
    Some(Ok(p))
}

pub fn malformed(msg: &str) -> PyErr {
    FormatError::new_err(msg.to_string())
}

pub(crate) use crate::ffi::pylong::big_int;
