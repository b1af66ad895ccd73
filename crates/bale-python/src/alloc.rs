//! Fast creation of view objects.
//!
//! PyO3 builds every instance through `object.__new__` with an argument
//! tuple; views are created on every container access, where that path costs
//! more than the read itself. For our frozen, `Send` view classes PyO3 lays
//! the Rust value directly after the object header, so we can allocate with
//! `PyObject_GC_New` (untracked) and write the value there. `check_layout` verifies
//! that layout once at import on real instances built by PyO3; if it does not
//! hold (another PyO3 version), every creation goes through `Py::new`.
//!
//! A scan makes and frees two views per record, and the allocator's work
//! for them (malloc, free, the GC's bookkeeping) costs as much as the read.
//! So each class keeps a few freed instances (`FreeList`), as CPython does
//! for its own floats and tuples.

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
    /// This class's freed instances kept for reuse.
    fn with_free_list<R>(f: impl FnOnce(&mut FreeList) -> R) -> R;
}

/// Instances of one class, freed and kept for reuse: their value is
/// dropped, their reference count is 1 (owned by the list) and they still
/// hold their reference to the class. The list is `attached` state.
pub struct FreeList {
    items: [*mut ffi::PyObject; FREE_LIST_LEN],
    len: usize,
}

const FREE_LIST_LEN: usize = 16;

impl FreeList {
    pub const fn new() -> FreeList {
        FreeList { items: [std::ptr::null_mut(); FREE_LIST_LEN], len: 0 }
    }
    #[inline]
    fn take(&mut self) -> Option<*mut ffi::PyObject> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.items[self.len])
    }
    /// Keeps `obj` if there is room.
    #[inline]
    fn keep(&mut self, obj: *mut ffi::PyObject) -> bool {
        if self.len == FREE_LIST_LEN {
            return false;
        }
        self.items[self.len] = obj;
        self.len += 1;
        true
    }
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
            #[inline(always)]
            fn with_free_list<R>(f: impl FnOnce(&mut $crate::alloc::FreeList) -> R) -> R {
                $crate::attached::attached!(FREE: $crate::alloc::FreeList = $crate::alloc::FreeList::new());
                // Safety: callers are attached (they make or free objects), and
                // `f`, a push or a pop, runs no other code.
                unsafe { $crate::attached::with(&FREE, f) }
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
    let basicsize = unsafe { crate::ffi::pytype::basicsize(T::type_object_raw(py)) };
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
/// Inlined, so that the value is written straight into the object rather
/// than copied there from the caller's stack, which stalls the copy.
#[inline(always)]
pub fn new_object<T: FastNew>(py: Python<'_>, value: T) -> PyResult<Py<T>> {
    if LAYOUT_OK.load(Ordering::Relaxed) {
        unsafe {
            #[cfg(not(Py_GIL_DISABLED))]
            if let Some(obj) = T::with_free_list(FreeList::take) {
                std::ptr::write((obj as *mut u8).add(HEADER) as *mut T, value);
                return Ok(Bound::from_owned_ptr(py, obj).cast_into_unchecked::<T>().unbind());
            }
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

/// Keeps `obj`, an instance of `T` whose reference count fell to zero and
/// whose value has been dropped, for reuse. False when the list is full
/// (the caller then frees it), or on free-threaded builds, where an object
/// taken back from zero would need more than its count set.
///
/// # Safety
/// `obj` is an untracked instance of `T` made by `new_object`, in `T`'s
/// `tp_dealloc`.
#[inline]
pub unsafe fn keep_freed<T: FastNew>(obj: *mut ffi::PyObject) -> bool {
    #[cfg(not(Py_GIL_DISABLED))]
    {
        if T::with_free_list(|l| l.keep(obj)) {
            // The list's own reference, so the object is never seen at zero.
            ffi::Py_IncRef(obj);
            return true;
        }
    }
    let _ = obj;
    false
}
