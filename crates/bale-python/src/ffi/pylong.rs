//! `PyLongObject`: exact ints read without a call, where the layout is known.
//!
//! In CPython 3.10 and 3.11 an int is a signed digit count (`ob_size`)
//! followed by 30-bit digits; 3.12 to 3.14 put a tag word first (`lv_tag`:
//! the sign in its two low bits, the digit count from bit 3 on) and the
//! same digits after it. Ints of up to three digits whose value fits in 63
//! bits are read here directly, which is most of the ints of real data
//! (ids, timestamps, hashes below 2^62 have three digits); larger ints are
//! read from their digits too, into an i128 (up to four digits) or into
//! their two's complement bytes. Both layouts are private, so each read is
//! compiled for its versions only. Other versions, digit sizes, PyPy and
//! `BALE_NO_FAST_PATHS` go through `PyLong_AsLongLongAndOverflow` and, for
//! ints beyond 64 bits, `_PyLong_AsByteArray` or `PyLong_AsNativeBytes`.

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
    // -2^63 is an i64; one below it is not.
    for (v, fits) in [(i64::MIN as i128, true), (i64::MIN as i128 - 1, false), (-(1i128 << 64), false)] {
        let int = v.into_pyobject(py)?;
        // SAFETY: as above.
        agree &= unsafe { int_value(int.as_ptr()) } == fits.then_some(v as i64);
    }
    // And the bytes of ints of every digit count to ten, either sign, at
    // and around digit boundaries, are the C API's.
    // (Only once the word and digits read above agree: a count read from
    // another layout could send these reads, and the writes below, out of
    // the object.)
    #[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
    for shift in [0u32, 29, 30, 31, 59, 60, 63, 64, 89, 90, 119, 120, 150, 299] {
        use pyo3::types::PyAnyMethods;
        if !agree {
            break;
        }
        for delta in [-1i64, 0, 1] {
            for negative in [false, true] {
                let mut v = pyo3::types::PyInt::new(py, 1)
                    .call_method1("__lshift__", (shift,))?
                    .call_method1("__add__", (delta,))?;
                if negative {
                    v = v.call_method0("__neg__")?;
                }
                let (mut ours, mut theirs) = (Vec::new(), Vec::new());
                // SAFETY: `v` is an exact int, alive for the calls.
                unsafe {
                    digits_bytes(v.as_ptr(), &mut ours);
                    c_api_bytes(py, v.as_ptr(), &mut theirs)?;
                }
                bale_core::hash::minimize_twos_complement(&mut ours);
                bale_core::hash::minimize_twos_complement(&mut theirs);
                agree &= ours == theirs;
            }
        }
    }
    // And ints made from digits equal the C API's, of every digit count to
    // five, either sign, at and around digit boundaries.
    #[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
    for shift in [62u32, 63, 64, 89, 90, 91, 119, 120, 126] {
        if !agree {
            break;
        }
        for delta in [-1i128, 0, 1] {
            for v in [(1i128 << shift) + delta, -(1i128 << shift) + delta] {
                // SAFETY: the layout was checked above, on ints the C API made;
                // both results are new references, released here.
                let (ours, theirs) = unsafe { (int_from_digits(v), c_api_int(&v.to_le_bytes())) };
                let (ours, theirs) = unsafe {
                    (pyo3::Bound::from_owned_ptr_or_err(py, ours)?, pyo3::Bound::from_owned_ptr_or_err(py, theirs)?)
                };
                use pyo3::types::PyAnyMethods;
                agree &= ours.eq(&theirs)? && ours.hash()? == theirs.hash()?;
            }
        }
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
        // Beyond 63 bits: no i64 but -2^63, without the C API's call (a
        // tenth of compacting ints of 100 bits).
        return digits_value(obj).or_else(|| i64_min(obj));
    }
    let mut overflow = 0;
    let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
    (overflow == 0).then_some(v)
}

/// `i64::MIN` when an int that `digits_value` left is -2^63 (three
/// digits: 0, 0, 8), the only int of 64 bits or more that fits.
#[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
#[inline(never)]
unsafe fn i64_min(obj: *mut PyObject) -> Option<i64> {
    let digits = digits_of(obj);
    let (count, negative) = count_and_sign(obj);
    (count == 3 && negative && *digits == 0 && *digits.add(1) == 0 && *digits.add(2) == 8).then_some(i64::MIN)
}

/// An int's digits: after the size word (3.10-3.11) or the tag word
/// (3.12-3.14), both one pointer wide after the object header.
#[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
#[inline(always)]
unsafe fn digits_of(obj: *mut PyObject) -> *mut u32 {
    (obj as *mut u8).add(std::mem::size_of::<ffi::PyObject>() + std::mem::size_of::<usize>()) as *mut u32
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
    let digits = digits_of(obj);
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
    #[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
    if THIRTY_BIT_DIGITS.load(Ordering::Relaxed) {
        digits_bytes(obj, b);
        bale_core::hash::minimize_twos_complement(b);
        return Ok(());
    }
    c_api_bytes(py, obj, b)?;
    bale_core::hash::minimize_twos_complement(b);
    Ok(())
}

/// `big_int_bytes` through the C API (not yet minimal).
unsafe fn c_api_bytes(py: pyo3::Python<'_>, obj: *mut PyObject, b: &mut Vec<u8>) -> pyo3::PyResult<()> {
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
    Ok(())
}

/// The value of an exact int of up to four 30-bit digits (120 bits), read
/// from its digits where `int_value` reads them; `None` for a longer int
/// or where digits are not read (its bytes then come from `big_int_bytes`).
#[inline]
pub unsafe fn int_i128(obj: *mut PyObject) -> Option<i128> {
    #[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
    if THIRTY_BIT_DIGITS.load(Ordering::Relaxed) {
        return digits_i128(obj);
    }
    let _ = obj;
    None
}

#[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
#[inline(always)]
unsafe fn digits_i128(obj: *mut PyObject) -> Option<i128> {
    let digits = digits_of(obj);
    let (count, negative) = count_and_sign(obj);
    if count > 4 {
        return None;
    }
    let mut m = 0u128;
    for i in 0..count {
        m |= (*digits.add(i) as u128) << (30 * i);
    }
    Some(if negative { -(m as i128) } else { m as i128 })
}

/// An int's two's complement bytes, little-endian (not yet minimal), from
/// its 30-bit digits: the magnitude's bytes, a zero byte for the sign,
/// then negated when the int is. CPython's `_PyLong_AsByteArray` does the
/// same a byte at a time with a check on each, and 3.10-3.12 need
/// `_PyLong_NumBits` first: they were 42% of compacting 200,000 ints of
/// 100 bits, and `PyLong_AsLongLongAndOverflow`, called first to find that
/// such an int is no i64, 12% more (`perf`).
#[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
unsafe fn digits_bytes(obj: *mut PyObject, b: &mut Vec<u8>) {
    let digits = digits_of(obj);
    if let Some(v) = digits_i128(obj) {
        // Its minimal bytes at once: the significant bits and a sign bit
        // (the byte-by-byte trim of `minimize_twos_complement`, which then
        // stops at once, mispredicted its every step). All 16 bytes, then
        // cut: a copy of a known length is two stores, one of a varying
        // length a call to memmove.
        b.extend_from_slice(&v.to_le_bytes());
        b.truncate(bale_core::hash::twos_complement_len(v));
        return;
    }
    let (count, negative) = count_and_sign(obj);
    b.reserve(count * 30 / 8 + 2);
    let (mut acc, mut bits) = (0u64, 0u32);
    for i in 0..count {
        acc |= (*digits.add(i) as u64) << bits;
        bits += 30;
        while bits >= 8 {
            b.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    // What is left of the top digit, then room for the sign bit.
    if bits > 0 {
        b.push(acc as u8);
    }
    b.push(0);
    if negative {
        // -m = !m + 1, byte by byte with the carry.
        let mut carry = true;
        for byte in b.iter_mut() {
            let (v, c) = (!*byte).overflowing_add(carry as u8);
            *byte = v;
            carry = c;
        }
    }
}

/// An int from its minimal two's-complement bytes, little-endian; null
/// with the Python error set on failure. 3.13 made this public
/// (`PyLong_FromNativeBytes`); before it, the private but exported
/// `_PyLong_FromByteArray` is the only call that does it without Python code.
pub unsafe fn big_int(b: &[u8]) -> *mut PyObject {
    #[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
    if THIRTY_BIT_DIGITS.load(Ordering::Relaxed) && (8..=16).contains(&b.len()) {
        // Sign-extended to 128 bits from two overlapping loads (a copy of
        // a varying length was a call to memcpy, a third of this call):
        // the low word, and the last eight bytes shifted down over the
        // ones the low word holds.
        let word = |at: usize| i64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"));
        let (lo, extra) = (word(0), b.len() - 8);
        let hi = if extra == 0 { lo >> 63 } else { word(extra) >> (8 * (8 - extra)) };
        return int_from_digits((hi as i128) << 64 | lo as u64 as i128);
    }
    c_api_int(b)
}

/// `big_int` through the C API.
unsafe fn c_api_int(b: &[u8]) -> *mut PyObject {
    #[cfg(Py_3_13)]
    return ffi::PyLong_FromNativeBytes(b.as_ptr().cast(), b.len(), ffi::Py_ASNATIVEBYTES_LITTLE_ENDIAN);
    #[cfg(not(Py_3_13))]
    return ffi::_PyLong_FromByteArray(b.as_ptr(), b.len(), 1, 1);
}

/// An int of 128 bits or less, made from its 30-bit digits (null with the
/// Python error set on failure): a new int object of as many digits,
/// filled, rather than `_PyLong_FromByteArray`'s loop over bytes (17% of
/// thawing 200,000 ints of 100 bits, `perf`; `pickle.loads` calls it too).
/// 3.14 has a public call for it (`PyLongWriter`); 3.10-3.13 make the
/// object with `_PyLong_New` (exported) and set its sign in the size word
/// (3.10-3.11) or tag word (3.12-3.13), the layouts `count_and_sign`
/// reads.
#[cfg(all(Py_3_10, not(any(Py_3_15, PyPy, Py_LIMITED_API))))]
unsafe fn int_from_digits(v: i128) -> *mut PyObject {
    if let Ok(v) = i64::try_from(v) {
        return ffi::PyLong_FromLongLong(v);
    }
    let m = v.unsigned_abs();
    let count = (128 - m.leading_zeros() as usize).div_ceil(30);
    let fill = |digits: *mut u32| {
        for i in 0..count {
            *digits.add(i) = ((m >> (30 * i)) & ((1 << 30) - 1)) as u32;
        }
    };
    #[cfg(Py_3_14)]
    {
        let mut digits: *mut std::ffi::c_void = std::ptr::null_mut();
        let writer = ffi::PyLongWriter_Create((v < 0) as std::ffi::c_int, count as ffi::Py_ssize_t, &mut digits);
        if writer.is_null() {
            return std::ptr::null_mut();
        }
        fill(digits as *mut u32);
        ffi::PyLongWriter_Finish(writer)
    }
    #[cfg(not(Py_3_14))]
    {
        extern "C" {
            // Exported (PyAPI_FUNC) in 3.10-3.13's longintrepr.h; pyo3-ffi skips it.
            fn _PyLong_New(size: ffi::Py_ssize_t) -> *mut PyObject;
        }
        let obj = _PyLong_New(count as ffi::Py_ssize_t);
        if obj.is_null() {
            return obj;
        }
        let word = (obj as *mut u8).add(std::mem::size_of::<ffi::PyObject>());
        fill(digits_of(obj));
        if v < 0 {
            #[cfg(not(Py_3_12))]
            {
                *(word as *mut ffi::Py_ssize_t) = -(count as ffi::Py_ssize_t);
            }
            #[cfg(Py_3_12)]
            {
                // `_PyLong_New` wrote the count and the positive sign (0).
                *(word as *mut usize) |= 2;
            }
        }
        obj
    }
}
