//! Direct C-API slots for the hottest view operations.
//!
//! PyO3 wraps every slot call in a trampoline that updates a thread-local
//! attach counter; on the scan path (`for r in view: r["k"]`) that costs
//! more than the read. These slots call the same Rust methods with the
//! thread already attached (CPython only calls slots from attached threads),
//! still catching panics. They are installed only when `alloc` has verified
//! the object layout they read the Rust value from.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PySystemError;
use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;
use pyo3::type_object::PyTypeInfo;

use crate::alloc::{keep_freed, value_of, FastNew};
use crate::dict_values::DictValues;
use crate::views::{
    seq_getitem, DictIterator, DictView, FrozenSetView, ListView, SequenceIterator, SetView, TupleView,
};

fn into_ptr(py: Python<'_>, out: std::thread::Result<PyResult<Option<Py<PyAny>>>>) -> *mut PyObject {
    match out {
        Ok(Ok(Some(obj))) => obj.into_ptr(),
        Ok(Ok(None)) => std::ptr::null_mut(),
        Ok(Err(e)) => {
            // These slots run with PyO3's attach count at zero, where PyO3
            // defers the release of the references an error holds to a
            // pool that only a PyO3-managed call drains: attaching here
            // drains it and releases this error's at once (rare path).
            Python::attach(|py| e.restore(py));
            std::ptr::null_mut()
        }
        Err(_) => {
            PySystemError::new_err("panic in bale (please report this bug)").restore(py);
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn dict_subscript(slf: *mut PyObject, key: *mut PyObject) -> *mut PyObject {
    let py = Python::assume_attached();
    let out = catch_unwind(AssertUnwindSafe(|| {
        let view: &DictView = value_of(slf);
        view.__getitem__(py, &Bound::from_borrowed_ptr(py, key)).map(Some)
    }));
    into_ptr(py, out)
}

unsafe extern "C" fn list_subscript(slf: *mut PyObject, key: *mut PyObject) -> *mut PyObject {
    let py = Python::assume_attached();
    let out = catch_unwind(AssertUnwindSafe(|| {
        let view: &ListView = value_of(slf);
        seq_getitem(py, &view.region, view.seq, &Bound::from_borrowed_ptr(py, key), false).map(Some)
    }));
    into_ptr(py, out)
}

unsafe extern "C" fn tuple_subscript(slf: *mut PyObject, key: *mut PyObject) -> *mut PyObject {
    let py = Python::assume_attached();
    let out = catch_unwind(AssertUnwindSafe(|| {
        let view: &TupleView = value_of(slf);
        seq_getitem(py, &view.region, view.seq, &Bound::from_borrowed_ptr(py, key), true).map(Some)
    }));
    into_ptr(py, out)
}

/// Exhaustion is NULL without an exception, as `tp_iternext` allows.
unsafe extern "C" fn sequence_next(slf: *mut PyObject) -> *mut PyObject {
    let py = Python::assume_attached();
    let out = catch_unwind(AssertUnwindSafe(|| value_of::<SequenceIterator>(slf).__next__(py)));
    into_ptr(py, out)
}

unsafe extern "C" fn dict_next(slf: *mut PyObject) -> *mut PyObject {
    let py = Python::assume_attached();
    let out = catch_unwind(AssertUnwindSafe(|| value_of::<DictIterator>(slf).__next__(py)));
    into_ptr(py, out)
}

unsafe extern "C" fn values_iter(slf: *mut PyObject) -> *mut PyObject {
    let py = Python::assume_attached();
    let out = catch_unwind(AssertUnwindSafe(|| value_of::<DictValues>(slf).iter(py).map(|it| Some(it.into_any()))));
    into_ptr(py, out)
}

unsafe extern "C" fn list_len(slf: *mut PyObject) -> ffi::Py_ssize_t {
    value_of::<ListView>(slf).seq.len() as ffi::Py_ssize_t
}

unsafe extern "C" fn tuple_len(slf: *mut PyObject) -> ffi::Py_ssize_t {
    value_of::<TupleView>(slf).seq.len() as ffi::Py_ssize_t
}

unsafe extern "C" fn dict_len(slf: *mut PyObject) -> ffi::Py_ssize_t {
    value_of::<DictView>(slf).dict.len as ffi::Py_ssize_t
}

/// A view or iterator whose only field with a destructor is its region.
trait HoldsRegion {
    fn region_ptr(&self) -> *mut PyObject;
}

macro_rules! holds_region {
    ($($t:ty),*) => {$(
        impl HoldsRegion for $t {
            fn region_ptr(&self) -> *mut PyObject {
                self.region.as_ptr()
            }
        }
    )*};
}
holds_region!(ListView, TupleView, DictView, SetView, FrozenSetView, SequenceIterator, DictIterator, DictValues);

/// Frees a view or iterator (created untracked by `alloc::new_object`)
/// without PyO3's generic path, keeping it for reuse when its class's
/// free list has room: a scan frees two views per record.
unsafe extern "C" fn dealloc<T: HoldsRegion + FastNew>(slf: *mut PyObject) {
    let region = value_of::<T>(slf).region_ptr();
    if !keep_freed::<T>(slf) {
        let tp = ffi::Py_TYPE(slf);
        ffi::PyObject_GC_Del(slf.cast());
        // Instances of heap types hold a reference to their type.
        ffi::Py_DecRef(tp.cast());
    }
    // Last: freeing a region may run code (its exporter's release) that
    // makes or frees views.
    ffi::Py_DecRef(region);
}

fn install_dealloc<T: HoldsRegion + FastNew>(py: Python<'_>) {
    unsafe {
        let tp = T::type_object_raw(py);
        (*tp).tp_dealloc = Some(dealloc::<T>);
        ffi::PyType_Modified(tp);
    }
}

/// Replaces PyO3's slots of the hot operations with the ones above.
pub fn install(py: Python<'_>) {
    install_dealloc::<ListView>(py);
    install_dealloc::<TupleView>(py);
    install_dealloc::<DictView>(py);
    install_dealloc::<SetView>(py);
    install_dealloc::<FrozenSetView>(py);
    install_dealloc::<SequenceIterator>(py);
    install_dealloc::<DictIterator>(py);
    install_dealloc::<DictValues>(py);
    unsafe {
        let tp = DictView::type_object_raw(py);
        if let Some(m) = (*tp).tp_as_mapping.as_mut() {
            m.mp_subscript = Some(dict_subscript);
            m.mp_length = Some(dict_len);
        }
        ffi::PyType_Modified(tp);
        let tp = SequenceIterator::type_object_raw(py);
        (*tp).tp_iternext = Some(sequence_next);
        ffi::PyType_Modified(tp);
        let tp = DictIterator::type_object_raw(py);
        (*tp).tp_iternext = Some(dict_next);
        ffi::PyType_Modified(tp);
        let tp = DictValues::type_object_raw(py);
        (*tp).tp_iter = Some(values_iter);
        ffi::PyType_Modified(tp);
        type Len = unsafe extern "C" fn(*mut PyObject) -> ffi::Py_ssize_t;
        type Subscript = unsafe extern "C" fn(*mut PyObject, *mut PyObject) -> *mut PyObject;
        for (tp, len, subscript) in [
            (ListView::type_object_raw(py), list_len as Len, list_subscript as Subscript),
            (TupleView::type_object_raw(py), tuple_len, tuple_subscript),
        ] {
            if let Some(s) = (*tp).tp_as_sequence.as_mut() {
                s.sq_length = Some(len);
            }
            if let Some(m) = (*tp).tp_as_mapping.as_mut() {
                m.mp_subscript = Some(subscript);
            }
            ffi::PyType_Modified(tp);
        }
    }
}
