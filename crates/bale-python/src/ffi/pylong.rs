//! `PyLongObject`: exact ints read without a call, where the layout is known.
//!
//! In CPython 3.10 and 3.11 an int is a signed digit count (`ob_size`)
//! followed by 30-bit digits; 3.12 to 3.14 put a tag word first (`lv_tag`:
//! the sign in its two low bits, the digit count from bit 3 on) and the
//! same digits after it. Ints of up to three digits whose value fits in 63
//! bits are read here directly, which is most of the ints of real data
//! (ids, timestamps, hashes below 2^62 have three digits). Both layouts
//! are private, so each read is compiled for its versions only. Other
//! versions, digit sizes, PyPy, `BALE_NO_FAST_PATHS` and larger ints go
//! through `PyLong_AsLongLongAndOverflow`.

use pyo3::ffi::{self, PyObject};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set at module start when `sys.int_info.bits_per_digit` is 30 and the
/// digits read here agree with the C API on probe ints.
static THIRTY_BIT_DIGITS: AtomicBool = AtomicBool::new(false);

/// Switches the digit reads on when digits are 30 bits wide and reading
/// them gives the C API's value for ints across every digit count, sign
/// and boundary read here (a build whose header or tag word differs from
/// the one compiled for, such as an untested free-threaded one, stays on
/// the C API).
pub fn enable_fast_path(py: pyo3::Python<'_>, bits_per_digit: u32) -> pyo3::PyResult<()> {
    use pyo3::IntoPyObject;
    THIRTY_BIT_DIGITS.store(bits_per_digit == 30, Ordering::Relaxed);
    if bits_per_digit != 30 {
        return Ok(());
    }
    let mut agree = true;
    for magnitude in [0i64, 1, 7, (1 << 30) - 1, 1 << 30, (1 << 60) - 1, 1 << 60, 1 << 62, i64::MAX] {
        for v in [magnitude, -magnitude] {
            let int = v.into_pyobject(py)?;
            // SAFETY: `int` is an exact int, alive for the call.
            agree &= unsafe { int_value(int.as_ptr()) } == Some(v);
        }
    }
    // Beyond 63 bits (a fourth digit, or a third one of 8 or more) the read
    // must step aside rather than truncate.
    for big in [1u128 << 63, 1 << 90, u64::MAX as u128] {
        let int = big.into_pyobject(py)?;
        // SAFETY: as above.
        agree &= unsafe { int_value(int.as_ptr()) }.is_none();
    }
    THIRTY_BIT_DIGITS.store(agree, Ordering::Relaxed);
    Ok(())
}

/// Whether `int_value` reads digits itself in this process.
pub fn fast_path_enabled() -> bool {
    cfg!(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API)))) && THIRTY_BIT_DIGITS.load(Ordering::Relaxed)
}

/// The value of an exact int that fits in 64 bits; `None` otherwise.
#[inline(always)]
pub unsafe fn int_value(obj: *mut PyObject) -> Option<i64> {
    #[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
    if THIRTY_BIT_DIGITS.load(Ordering::Relaxed) {
        if let Some(v) = digits_value(obj) {
            return Some(v);
        }
    }
    let mut overflow = 0;
    let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
    (overflow == 0).then_some(v)
}

/// The digit count and sign of an int, from its size word.
#[cfg(all(Py_3_10, not(any(Py_3_12, PyPy, Py_LIMITED_API))))]
#[inline(always)]
unsafe fn count_and_sign(obj: *mut PyObject) -> (usize, bool) {
    let size = (*(obj as *mut ffi::PyVarObject)).ob_size;
    (size.unsigned_abs(), size < 0)
}

/// The digit count and sign of an int, from its tag word (sign in bits
/// 0-1: 0 positive, 1 zero, 2 negative; bit 2 reserved; the count above).
#[cfg(all(Py_3_12, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
#[inline(always)]
unsafe fn count_and_sign(obj: *mut PyObject) -> (usize, bool) {
    let tag = *((obj as *const u8).add(std::mem::size_of::<ffi::PyObject>()) as *const usize);
    (tag >> 3, tag & 3 == 2)
}

/// The value of an int of up to three 30-bit digits that fits in 63 bits;
/// `None` for others (read through the C API).
#[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
#[inline(always)]
unsafe fn digits_value(obj: *mut PyObject) -> Option<i64> {
    // The digits follow the size word (3.10-3.11) or the tag word (3.12-3.14),
    // both one pointer wide after the object header.
    let digits =
        (obj as *const u8).add(std::mem::size_of::<ffi::PyObject>() + std::mem::size_of::<usize>()) as *const u32;
    let (count, negative) = count_and_sign(obj);
    let v = match count {
        0 => 0,
        1 => *digits as i64,
        2 => *digits as i64 | (*digits.add(1) as i64) << 30,
        // Three digits hold 90 bits: below 2^63 when the top one is below 8.
        3 if *digits.add(2) < 8 => *digits as i64 | (*digits.add(1) as i64) << 30 | (*digits.add(2) as i64) << 60,
        _ => return None,
    };
    Some(if negative { -v } else { v })
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
