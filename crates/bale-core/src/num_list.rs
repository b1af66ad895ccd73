//! Number lists: INT_LIST (raw i64), INT32_LIST (raw i32) and FLOAT_LIST
//! (raw f64) objects, read as lists of Python ints or floats.
//!
//! Their payload is a contiguous array of little-endian items (numpy reads
//! it in place), zero-padded to a word. An INT32_LIST holds ints that fit
//! 32 bits in half an INT_LIST's bytes: bale's writers make one for a
//! table's column of such ints (a record's counts, small ids, flags), where
//! an INT_LIST spent 8 bytes a row on what pickle writes in 2 to 5. Each
//! item is one value in 4 bytes, within the readers' budget of four values
//! a word (FORMAT.md, *Order, acyclicity and sharing*), as a STR_COLUMN's
//! offsets are. See `docs/FORMAT.md`, *Number lists*.

use crate::format::{header_word, put_u32s, KIND_FLOAT_LIST, KIND_INT32_LIST, KIND_INT_LIST};

/// A list of `len` raw little-endian numbers at `pos`: i64 (or f64, when
/// `float`; i32, when `int32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumList {
    pub start: usize,
    pub pos: usize,
    pub len: usize,
    pub float: bool,
    pub int32: bool,
}

impl NumList {
    /// The bytes of one item: 4 in an INT32_LIST, else 8.
    #[inline(always)]
    pub fn item_bytes(&self) -> usize {
        if self.int32 {
            4
        } else {
            8
        }
    }

    /// Where item `i` lies.
    #[inline(always)]
    pub fn item_pos(&self, i: usize) -> usize {
        self.pos + self.item_bytes() * i
    }

    /// Where its items end (before any padding).
    #[inline(always)]
    pub fn end(&self) -> usize {
        self.item_pos(self.len)
    }

    /// Item `i` as an i64 (an INT_LIST's or INT32_LIST's) or f64 bit
    /// pattern (a FLOAT_LIST's), from `buf`, the region: `None` past its end.
    #[inline(always)]
    pub fn word_in(&self, buf: &[u8], i: usize) -> Option<u64> {
        let at = self.item_pos(i);
        if self.int32 {
            let b = buf.get(at..at.checked_add(4)?)?;
            Some(i32::from_le_bytes(b.try_into().unwrap()) as i64 as u64)
        } else {
            let b = buf.get(at..at.checked_add(8)?)?;
            Some(u64::from_le_bytes(b.try_into().unwrap()))
        }
    }
}

/// The object kinds of number lists, and whether each holds floats and
/// 32-bit ints: `None` for any other kind.
#[inline(always)]
pub fn kind_of(kind: u8) -> Option<(bool, bool)> {
    match kind {
        KIND_INT_LIST => Some((false, false)),
        KIND_FLOAT_LIST => Some((true, false)),
        KIND_INT32_LIST => Some((false, true)),
        _ => None,
    }
}

/// The payload bytes of a number list of `n` items (its header aside), or
/// `None` when they do not fit a `usize`.
#[inline]
pub fn payload_bytes(n: usize, int32: bool) -> Option<usize> {
    if int32 {
        n.checked_mul(4)?.checked_add(7).map(|b| b & !7)
    } else {
        n.checked_mul(8)
    }
}

/// Whether an int is stored in an INT32_LIST.
#[inline(always)]
pub fn fits_int32(v: i64) -> bool {
    i32::try_from(v).is_ok()
}

/// Whether every word of a run of ints (i64 bit patterns) fits 32 bits:
/// the writers' rule for a table's column of ints.
#[inline]
pub fn all_fit_int32(words: &[u64]) -> bool {
    words.iter().all(|&w| fits_int32(w as i64))
}

/// The header word of a number list of `n` items.
#[inline(always)]
pub fn header(float: bool, int32: bool, n: usize) -> u64 {
    let kind = match (float, int32) {
        (true, _) => KIND_FLOAT_LIST,
        (false, true) => KIND_INT32_LIST,
        (false, false) => KIND_INT_LIST,
    };
    header_word(kind, n as u64)
}

/// Appends the payload of an INT32_LIST of `words` (i64 bit patterns that
/// fit 32 bits, `all_fit_int32`) to `out`: their low 4 bytes each, then
/// zeros to a word.
pub fn put_int32_payload(out: &mut Vec<u8>, words: &[u64]) {
    put_u32s(
        out,
        words.len(),
        words.iter().map(|&w| {
            debug_assert!(fits_int32(w as i64));
            w as i64 as i32 as u32
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_sizes_are_padded_to_a_word() {
        assert_eq!(payload_bytes(0, true), Some(0));
        assert_eq!(payload_bytes(1, true), Some(8));
        assert_eq!(payload_bytes(2, true), Some(8));
        assert_eq!(payload_bytes(3, true), Some(16));
        assert_eq!(payload_bytes(3, false), Some(24));
        assert_eq!(payload_bytes(usize::MAX / 2, true), None);
        assert_eq!(payload_bytes(usize::MAX / 4, false), None);
    }

    #[test]
    fn int32_payload_round_trips_through_word_in() {
        let values: [i64; 5] = [0, -1, i32::MIN as i64, i32::MAX as i64, 12345];
        let words: Vec<u64> = values.iter().map(|&v| v as u64).collect();
        assert!(all_fit_int32(&words));
        let mut buf = vec![0xAAu8; 8];
        put_int32_payload(&mut buf, &words);
        assert_eq!(buf.len(), 8 + 24);
        assert!(buf[8 + 20..].iter().all(|&b| b == 0), "padding is zeros");
        let l = NumList { start: 0, pos: 8, len: 5, float: false, int32: true };
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(l.word_in(&buf, i), Some(v as u64));
        }
        assert_eq!(l.end(), 28);
        // Past the buffer: no item.
        assert_eq!(NumList { len: 7, ..l }.word_in(&buf, 6), None);
    }

    #[test]
    fn the_int32_rule_is_the_i32_range() {
        assert!(fits_int32(i32::MAX as i64) && fits_int32(i32::MIN as i64));
        assert!(!fits_int32(i32::MAX as i64 + 1) && !fits_int32(i32::MIN as i64 - 1));
        assert!(!all_fit_int32(&[1, (1u64 << 31)]));
        assert!(all_fit_int32(&[]));
    }

    #[test]
    fn headers_name_their_kinds() {
        assert_eq!(header(false, true, 3) & 0xFF, KIND_INT32_LIST as u64);
        assert_eq!(header(false, false, 3) & 0xFF, KIND_INT_LIST as u64);
        assert_eq!(header(true, false, 3) & 0xFF, KIND_FLOAT_LIST as u64);
        assert_eq!(kind_of(KIND_INT32_LIST), Some((false, true)));
        assert_eq!(kind_of(0x28), None);
    }
}
