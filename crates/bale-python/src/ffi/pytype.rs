//! `PyTypeObject`: the slots and dicts of a class, read to decide that
//! getting an attribute runs no Python code, and a class's `tp_basicsize`.
//!
//! These are public fields of the non-limited struct; they are read only
//! on the versions this was checked on (3.10 to 3.14, not PyPy). On any
//! other, and when `BALE_NO_FAST_PATHS` is set, `attrs_run_no_python`
//! answers `false`, which sends every attribute read through `getattr`
//! (the checked path of `Compactor::python`): slower, never wrong.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Set at import unless the fast paths are switched off.
static TYPE_READS: AtomicBool = AtomicBool::new(false);

pub fn enable_fast_path() {
    TYPE_READS.store(true, Ordering::Relaxed);
}

/// Whether `attrs_run_no_python` reads classes in this process.
pub fn fast_path_enabled() -> bool {
    cfg!(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API)))) && TYPE_READS.load(Ordering::Relaxed)
}

/// The size of an instance of `tp` without its items (`tp_basicsize`).
pub unsafe fn basicsize(tp: *mut ffi::PyTypeObject) -> usize {
    (*tp).tp_basicsize as usize
}

/// Whether `getattr(obj, name)` runs no Python code for every name of
/// `attrs` on instances of `tp`: the type keeps the generic attribute
/// lookup, its instances have no `__dict__` (whose lookups may compare a
/// non-str key with `__eq__`), every class of its MRO but `object` has only
/// exact str keys in its dict and holds each name, if at all, as a slot (a
/// member descriptor) or a plain class attribute (no `__get__`).
/// Properties, `__getattr__` and `__getattribute__` are Python code.
pub unsafe fn attrs_run_no_python(tp: *mut ffi::PyTypeObject, attrs: &[Py<PyString>]) -> bool {
    if !TYPE_READS.load(Ordering::Relaxed) {
        return false;
    }
    attrs_read_from_type(tp, attrs)
}

#[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
unsafe fn attrs_read_from_type(tp: *mut ffi::PyTypeObject, attrs: &[Py<PyString>]) -> bool {
    /// `Py_TPFLAGS_MANAGED_DICT` (3.11+): instances have a `__dict__` kept by the interpreter.
    const MANAGED_DICT: std::ffi::c_ulong = 1 << 4;
    // Addresses of one function may differ between codegen units: a false
    // "not generic" only sends the type down the slower, checked path. The
    // flags through the C API: free-threaded builds keep them atomic.
    let generic = matches!((*tp).tp_getattro, Some(f) if std::ptr::fn_addr_eq(f, ffi::PyObject_GenericGetAttr as ffi::getattrofunc));
    if !generic || (*tp).tp_dictoffset != 0 || ffi::PyType_GetFlags(tp) & MANAGED_DICT != 0 {
        return false;
    }
    let mro = (*tp).tp_mro;
    if mro.is_null() || ffi::PyTuple_Check(mro) == 0 {
        return false;
    }
    let object = std::ptr::addr_of_mut!(ffi::PyBaseObject_Type) as *mut PyObject;
    for i in 0..ffi::PyTuple_GET_SIZE(mro) {
        let base = ffi::PyTuple_GET_ITEM(mro, i);
        if base == object {
            continue;
        }
        let dict = (*(base as *mut ffi::PyTypeObject)).tp_dict;
        if dict.is_null() || ffi::PyDict_CheckExact(dict) == 0 {
            return false;
        }
        let (mut pos, mut key, mut value) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        while ffi::PyDict_Next(dict, &mut pos, &mut key, &mut value) != 0 {
            if ffi::PyUnicode_CheckExact(key) == 0 {
                return false;
            }
        }
        for a in attrs {
            let found = ffi::PyDict_GetItemWithError(dict, a.as_ptr());
            if found.is_null() {
                if !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear();
                    return false;
                }
                continue;
            }
            let kind = ffi::Py_TYPE(found);
            if kind != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) && (*kind).tp_descr_get.is_some() {
                return false;
            }
        }
    }
    true
}

#[cfg(not(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API)))))]
unsafe fn attrs_read_from_type(_tp: *mut ffi::PyTypeObject, _attrs: &[Py<PyString>]) -> bool {
    false
}
