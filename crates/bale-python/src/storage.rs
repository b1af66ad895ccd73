//! Where a region's bytes live: owned memory, a read-only file mapping, or
//! another object's exported buffer. All three are immutable and stay at one
//! address for the life of the region.

use std::ffi::c_void;

use pyo3::ffi;
use pyo3::prelude::*;

pub enum Storage {
    Owned(Box<[u8]>),
    Mapped(memmap2::Mmap),
    Exported(ExportedBuffer),
}

impl Storage {
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            Storage::Owned(b) => b,
            Storage::Mapped(m) => m,
            Storage::Exported(e) => e.bytes(),
        }
    }
}

/// A `Py_buffer` obtained from an exporter; keeps the exporter alive.
pub struct ExportedBuffer {
    view: Box<ffi::Py_buffer>,
}

// The exporter's memory is only read, and released under the GIL (in tp_dealloc).
unsafe impl Send for ExportedBuffer {}
unsafe impl Sync for ExportedBuffer {}

impl ExportedBuffer {
    /// Asks `obj` for a contiguous buffer (any exporter: bytes, bytearray,
    /// memoryview, mmap, numpy arrays, shared memory).
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<ExportedBuffer> {
        let mut view: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, ffi::PyBUF_SIMPLE) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(ExportedBuffer { view })
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        if self.view.len <= 0 || self.view.buf.is_null() {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.view.len as usize) }
    }
}

impl Drop for ExportedBuffer {
    fn drop(&mut self) {
        // Regions are dropped by their tp_dealloc, which runs with the GIL held.
        unsafe { ffi::PyBuffer_Release(&mut *self.view as *mut ffi::Py_buffer) };
    }
}

pub fn buffer_ptr(b: &[u8]) -> *mut c_void {
    b.as_ptr() as *mut c_void
}
