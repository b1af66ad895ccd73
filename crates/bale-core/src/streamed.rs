//! Objects written to a stream rather than into a [`Builder`]: the columns
//! of a table a streaming writer gathered on disk, too large to hold in
//! memory. Each writes the layout its `Builder` counterpart writes (see
//! `docs/FORMAT.md`, *Columns* and *Number lists*), its parts read from
//! readers, and returns the object's offset.
//!
//! [`Builder`]: crate::Builder

use std::io::{self, Read};

use crate::format::{
    header_word, pad8, Width, KIND_FLOAT_LIST, KIND_INT_LIST, KIND_LIST, KIND_LIST_COLUMN, KIND_SLOT32_COLUMN,
    KIND_STR_COLUMN,
};

/// Where the objects go: a region file being written, at offset `pos()`.
pub trait Sink {
    fn pos(&self) -> usize;
    fn put(&mut self, bytes: &[u8]) -> io::Result<()>;
}

/// Copies `r` into `out`; returns the bytes copied.
fn copy(r: &mut impl Read, out: &mut dyn Sink) -> io::Result<u64> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        out.put(&buf[..n])?;
        total += n as u64;
    }
}

/// `n` little-endian words from `r`, each as its low 4 bytes, zero-padded
/// to a word: u64 offsets as u32 ones, or i64s that fit 32 bits as i32s.
fn put_low_halves(r: &mut impl Read, n: u64, out: &mut dyn Sink) -> io::Result<()> {
    let mut word = [0u8; 8];
    let mut buf = Vec::with_capacity(1 << 16);
    for _ in 0..n {
        r.read_exact(&mut word)?;
        buf.extend_from_slice(&(u64::from_le_bytes(word) as u32).to_le_bytes());
        if buf.len() >= 1 << 16 {
            out.put(&buf)?;
            buf.clear();
        }
    }
    if n % 2 == 1 {
        buf.extend_from_slice(&[0u8; 4]);
    }
    out.put(&buf)
}

/// An INT_LIST (or, with `float`, a FLOAT_LIST) of the `n` words in `words`.
pub fn num_list(out: &mut dyn Sink, float: bool, n: u64, words: &mut impl Read) -> io::Result<u64> {
    let at = out.pos() as u64;
    out.put(&header_word(if float { KIND_FLOAT_LIST } else { KIND_INT_LIST }, n).to_le_bytes())?;
    copy(words, out)?;
    Ok(at)
}

/// An INT32_LIST of the `n` words in `words` (i64s that each fit 32 bits,
/// `num_list::all_fit_int32`): what `Builder::int32_list` writes.
pub fn int32_list(out: &mut dyn Sink, n: u64, words: &mut impl Read) -> io::Result<u64> {
    let at = out.pos() as u64;
    out.put(&crate::num_list::header(false, true, n as usize).to_le_bytes())?;
    put_low_halves(words, n, out)?;
    Ok(at)
}

/// A SLOT32_COLUMN of the `n` slots in `slots` (each one a
/// `columns::slot32_cell` has a cell for): the low 4 bytes of each, what
/// `Builder::slot_column` writes for them.
pub fn slot32_column(out: &mut dyn Sink, n: u64, slots: &mut impl Read) -> io::Result<u64> {
    let at = out.pos() as u64;
    out.put(&header_word(KIND_SLOT32_COLUMN, n).to_le_bytes())?;
    put_low_halves(slots, n, out)?;
    Ok(at)
}

/// A LIST object of the `n` slots in `slots` (written before it, each).
pub fn list(out: &mut dyn Sink, n: u64, slots: &mut impl Read) -> io::Result<u64> {
    let at = out.pos() as u64;
    out.put(&header_word(KIND_LIST, n).to_le_bytes())?;
    copy(slots, out)?;
    Ok(at)
}

/// Whether `unit_bytes` bytes of code units of `width` fit a STR_COLUMN
/// (its offsets are u32, in code units).
pub fn str_column_fits(width: Width, unit_bytes: u64) -> bool {
    unit_bytes / width.unit() as u64 <= u32::MAX as u64
}

/// A STR_COLUMN of `n` strings: `offsets` holds their n + 1 offsets (u64,
/// in code units of `width`), `units` their `unit_bytes` bytes of units.
pub fn str_column(
    out: &mut dyn Sink,
    width: Width,
    n: u64,
    offsets: &mut impl Read,
    units: &mut impl Read,
    unit_bytes: u64,
) -> io::Result<u64> {
    debug_assert!(str_column_fits(width, unit_bytes));
    let at = out.pos() as u64;
    out.put(&header_word(KIND_STR_COLUMN, n).to_le_bytes())?;
    out.put(&(width as u64 | (unit_bytes / width.unit() as u64) << 8).to_le_bytes())?;
    put_low_halves(offsets, n + 1, out)?;
    let len = copy(units, out)? as usize;
    out.put(&[0u8; 8][..pad8(len) - len])?;
    Ok(at)
}

/// A LIST_COLUMN of `rows` lists cut from the list-like at `child` by the
/// rows + 1 offsets (u64) in `offsets`.
pub fn list_column(out: &mut dyn Sink, rows: u64, child: u64, offsets: &mut impl Read) -> io::Result<u64> {
    let at = out.pos() as u64;
    out.put(&header_word(KIND_LIST_COLUMN, rows).to_le_bytes())?;
    out.put(&child.to_le_bytes())?;
    put_low_halves(offsets, rows + 1, out)?;
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Builder;

    /// Bytes at a base offset, as a file being written.
    struct Bytes(usize, Vec<u8>);

    impl Sink for Bytes {
        fn pos(&self) -> usize {
            self.0 + self.1.len()
        }
        fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
            self.1.extend_from_slice(bytes);
            Ok(())
        }
    }

    fn words(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn each_streamed_object_is_what_the_builder_writes() {
        let mut b = Builder::continuing(64, 256);
        let mut s = Bytes(64, Vec::new());

        let nums = [1u64, 2, u64::MAX];
        assert_eq!(b.num_list(false, &nums), num_list(&mut s, false, 3, &mut &words(&nums)[..]).unwrap());
        assert_eq!(b.num_list(true, &nums), num_list(&mut s, true, 3, &mut &words(&nums)[..]).unwrap());
        for small in [&[1u64, (-2i64) as u64, i32::MIN as i64 as u64][..], &[7, 8]] {
            assert_eq!(b.int32_list(small), int32_list(&mut s, small.len() as u64, &mut &words(small)[..]).unwrap());
        }
        let slots =
            [crate::format::SLOT_NONE, crate::format::SLOT_TRUE, crate::format::make_int_slot(-(1 << 28)).unwrap()];
        assert_eq!(b.slot_column(&slots), slot32_column(&mut s, 3, &mut &words(&slots)[..]).unwrap());

        let units = "abcdefgh".as_bytes();
        let offsets = [0u32, 3, 3, 8];
        let wide: Vec<u64> = offsets.iter().map(|&o| o as u64).collect();
        let a = b.str_column(Width::Ascii, &offsets, units);
        let c = str_column(&mut s, Width::Ascii, 3, &mut &words(&wide)[..], &mut &units[..], 8).unwrap();
        assert_eq!(a, c);

        let cut = [0u32, 2, 3];
        let wide: Vec<u64> = cut.iter().map(|&o| o as u64).collect();
        assert_eq!(b.list_column(a, &cut), list_column(&mut s, 2, c, &mut &words(&wide)[..]).unwrap());

        assert_eq!(b.new_bytes(), &s.1[..]);
    }

    #[test]
    fn a_streamed_list_is_a_list_object() {
        let mut s = Bytes(64, Vec::new());
        let at = list(&mut s, 2, &mut &words(&[9, 17])[..]).unwrap();
        assert_eq!(at, 64);
        assert_eq!(s.1[..8], header_word(KIND_LIST, 2).to_le_bytes());
        assert_eq!(s.1.len(), 24);
    }
}
