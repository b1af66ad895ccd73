//! `PyLongObject`: exact ints read without a call, where the layout is known.
//!
//! In CPython 3.10 and 3.11 an int is a signed digit count (`ob_size`)
//! followed by 30-bit digits; ints of one or two digits (|v| < 2^60) are
//! read here directly, which is most of the ints of real data. That layout
//! is private (3.12 replaced `ob_size` with `lv_tag`), so the read is
//! compiled for those two versions only. Other versions, digit sizes, PyPy,
//! `BALE_NO_FAST_PATHS` and larger ints go through
//! `PyLong_AsLongLongAndOverflow`.

use pyo3::ffi::{self, PyObject};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set at module start when `sys.int_info.bits_per_digit` is 30.
static THIRTY_BIT_DIGITS: AtomicBool = AtomicBool::new(false);

pub fn enable_fast_path(bits_per_digit: u32) {
    THIRTY_BIT_DIGITS.store(bits_per_digit == 30, Ordering::Relaxed);
}

/// Whether `int_value` reads digits itself in this process.
pub fn fast_path_enabled() -> bool {
    cfg!(all(Py_3_10, not(any(Py_3_12, PyPy, Py_LIMITED_API)))) && THIRTY_BIT_DIGITS.load(Ordering::Relaxed)
}

/// The value of an exact int that fits in 64 bits; `None` otherwise.
#[inline(always)]
pub unsafe fn int_value(obj: *mut PyObject) -> Option<i64> {
    #[cfg(all(Py_3_10, not(any(Py_3_12, PyPy, Py_LIMITED_API))))]
    if THIRTY_BIT_DIGITS.load(Ordering::Relaxed) {
        let size = (*(obj as *mut ffi::PyVarObject)).ob_size;
        let digits = (obj as *const u8).add(std::mem::size_of::<ffi::PyVarObject>()) as *const u32;
        match size {
            0 => return Some(0),
            1 => return Some(*digits as i64),
            -1 => return Some(-(*digits as i64)),
            2 | -2 => {
                let v = *digits as i64 | (*digits.add(1) as i64) << 30;
                return Some(if size < 0 { -v } else { v });
            }
            _ => {}
        }
    }
    let mut overflow = 0;
    let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
    (overflow == 0).then_some(v)
}

/// An exact int's minimal two's complement bytes, little-endian (for ints
/// outside i64: BIGINT objects and key hashes), through the C API rather
/// than `int.to_bytes` (two method calls and a dict of keywords per int),
/// into `b` (cleared first): a compaction of many big ints reuses one
/// buffer rather than allocating one per int.
pub unsafe fn big_int_bytes(py: pyo3::Python<'_>, obj: *mut PyObject, b: &mut Vec<u8>) -> pyo3::PyResult<()> {
    b.clear();
    #[cfg(Py_3_13)]
    {
        b.resize(32, 0);
        let flags = ffi::Py_ASNATIVEBYTES_LITTLE_ENDIAN;
        let n = ffi::PyLong_AsNativeBytes(obj, b.as_mut_ptr().cast(), b.len() as ffi::Py_ssize_t, flags);
        if n < 0 {
            return Err(pyo3::PyErr::fetch(py));
        }
        if n as usize > b.len() {
            b.resize(n as usize, 0);
            if ffi::PyLong_AsNativeBytes(obj, b.as_mut_ptr().cast(), n, flags) < 0 {
                return Err(pyo3::PyErr::fetch(py));
            }
        }
        // A shorter value is sign-extended to the whole buffer.
    }
    #[cfg(not(Py_3_13))]
    {
        extern "C" {
            // Public (PyAPI_FUNC) in 3.10-3.12's cpython/longobject.h; pyo3-ffi skips it.
            fn _PyLong_NumBits(v: *mut PyObject) -> usize;
        }
        let bits = _PyLong_NumBits(obj);
        if bits == usize::MAX {
            return Err(pyo3::PyErr::fetch(py));
        }
        b.resize(bits / 8 + 1, 0);
        if ffi::_PyLong_AsByteArray(obj as *mut ffi::PyLongObject, b.as_mut_ptr(), b.len(), 1, 1) < 0 {
            return Err(pyo3::PyErr::fetch(py));
        }
    }
    bale_core::hash::minimize_twos_complement(b);
    Ok(())
}

/// An int from its minimal two's-complement bytes, little-endian; null
/// with the Python error set on failure. 3.13 made this public
/// (`PyLong_FromNativeBytes`); before it, the private but exported
/// `_PyLong_FromByteArray` is the only call that does it without Python code.
pub unsafe fn big_int(b: &[u8]) -> *mut PyObject {
    #[cfg(Py_3_13)]
    return ffi::PyLong_FromNativeBytes(b.as_ptr().cast(), b.len(), ffi::Py_ASNATIVEBYTES_LITTLE_ENDIAN);
    #[cfg(not(Py_3_13))]
    return ffi::_PyLong_FromByteArray(b.as_ptr(), b.len(), 1, 1);
}
