//! Fast creation of view objects.
//!
//! PyO3 builds every instance through `object.__new__` with an argument
//! tuple; views are created on every container access, where that path costs
//! more than the read itself. For our frozen, `Send` view classes PyO3 lays
//! the Rust value directly after the object header, so we can allocate with
//! `PyObject_GC_New` (untracked) and write the value there. `check_layout` verifies
//! that layout once at import on real instances built by PyO3; if it does not
//! hold (another PyO3 version), every creation goes through `Py::new`.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::type_object::PyTypeInfo;

static LAYOUT_OK: AtomicBool = AtomicBool::new(false);

const HEADER: usize = std::mem::size_of::<ffi::PyObject>();

/// A frozen pyclass that `new_object` may create.
pub trait FastNew: PyTypeInfo + Sized {
    fn slow_new(py: Python<'_>, value: Self) -> PyResult<Py<Self>>;
    fn value_addr(obj: &Bound<'_, Self>) -> usize;
}

macro_rules! fast_new {
    ($($t:ty),*) => {$(
        impl $crate::alloc::FastNew for $t {
            fn slow_new(py: Python<'_>, value: Self) -> PyResult<Py<Self>> {
                Py::new(py, value)
            }
            fn value_addr(obj: &Bound<'_, Self>) -> usize {
                obj.get() as *const Self as usize
            }
        }
    )*};
}
pub(crate) use fast_new;

/// Whether `sample`, built by PyO3, holds its value right after the header
/// and nothing else.
pub fn layout_matches<T: FastNew>(py: Python<'_>, sample: T) -> PyResult<bool> {
    let obj = T::slow_new(py, sample)?;
    let base = obj.as_ptr() as usize;
    let value = T::value_addr(obj.bind(py));
    let basicsize = unsafe { (*T::type_object_raw(py)).tp_basicsize } as usize;
    Ok(value == base + HEADER && basicsize == HEADER + std::mem::size_of::<T>())
}

pub fn enable_fast_path(ok: bool) {
    LAYOUT_OK.store(ok, Ordering::Relaxed);
}

pub fn fast_path_enabled() -> bool {
    LAYOUT_OK.load(Ordering::Relaxed)
}

/// The Rust value of an instance of a class whose layout was verified.
///
/// # Safety
/// `obj` must be an instance of `T` and `fast_path_enabled()` true.
#[inline(always)]
pub unsafe fn value_of<'a, T>(obj: *mut ffi::PyObject) -> &'a T {
    &*((obj as *const u8).add(HEADER) as *const T)
}

/// A new, GC-untracked instance (views and iterators are never in a cycle).
#[inline]
pub fn new_object<T: FastNew>(py: Python<'_>, value: T) -> PyResult<Py<T>> {
    if LAYOUT_OK.load(Ordering::Relaxed) {
        unsafe {
            // A GC-type object created untracked (no memset, no track/untrack):
            // every field is written below.
            let obj = ffi::PyObject_GC_New::<ffi::PyObject>(T::type_object_raw(py));
            if obj.is_null() {
                drop(value);
                return Err(PyErr::fetch(py));
            }
            std::ptr::write((obj as *mut u8).add(HEADER) as *mut T, value);
            return Ok(Bound::from_owned_ptr(py, obj).cast_into_unchecked::<T>().unbind());
        }
    }
    let obj = T::slow_new(py, value)?;
    unsafe { ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
    Ok(obj)
}
