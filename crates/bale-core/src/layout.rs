//! Which layout a writer picks for a value, where the format allows
//! several: the thresholds and tests every source applies (the compactor
//! over Python objects, the JSON source over parsed JSON), so that equal
//! inputs give equal bytes whichever source wrote them.
//!
//! The format does not fix these choices (see `docs/FORMAT.md`, *Validity*):
//! a reader accepts either form. They are kept here so that they change in
//! one place, and the byte-for-byte tests between sources keep them equal.

use crate::format::{Width, SSTR_MAX};

/// Lists with fewer dicts than this are written row by row, not as a TABLE.
pub const TABLE_MIN_ROWS: usize = 4;

/// Records with more keys than this are written row by row.
pub const TABLE_MAX_KEYS: usize = 64;

/// Tables made of a column (its dicts, or the dicts of its lists under a
/// ROWS_COLUMN) lie at most this many below the outermost table; deeper,
/// the outermost list is written row by row. It ends the gathering of a
/// dict that holds itself (in its own values, or in a list there), which
/// the row path then refuses as a cycle.
pub const TABLE_MAX_NESTING: usize = 8;

/// What a column of a table of `n` rows holds, for `table_slack`.
#[derive(Clone, Copy, Debug)]
pub enum ColumnSlack {
    /// A cell per row, each a slot, a number or a string of a STR_COLUMN.
    Scalars { cells: usize },
    /// A list per row (a LIST_COLUMN), `items` scalars in all.
    Lists { lists: usize, items: usize },
    /// A list of dicts per row (a ROWS_COLUMN) over a table of `slack`.
    Rows { lists: usize, slack: i64 },
    /// A dict per row: the column is a table of `slack`.
    Table { slack: i64 },
}

/// What the bytes of a table of `n` rows and `columns` leave of the budget
/// readers hold a region to (FORMAT.md, *Order, acyclicity and sharing*:
/// at most four values per word, that is one per two bytes), counted
/// low: each cell, list and list item takes at least 4 bytes, two values'
/// worth, and is one value; each row is one value and takes no bytes. A
/// table whose slack is negative is written row by row. Only a column of
/// dicts, whose rows take no bytes of their own, can make it negative
/// (`[{"u": {"l": []}}] * n`: three values in four bytes a row).
pub fn table_slack(n: usize, columns: impl Iterator<Item = ColumnSlack>) -> i64 {
    let of = |c: ColumnSlack| match c {
        ColumnSlack::Scalars { cells } => cells as i64,
        ColumnSlack::Lists { lists, items } => (lists + items) as i64,
        ColumnSlack::Rows { lists, slack } => lists as i64 + slack,
        ColumnSlack::Table { slack } => slack,
    };
    columns.map(of).sum::<i64>() - n as i64
}

/// Lists and tuples of at most this many scalars are written at once,
/// without a frame of the walk.
pub const SMALL_LEAF_SEQ: usize = 4;

/// Key sequences of more keys than this are not looked up again: their
/// SHAPE is written for each dict.
pub const SHAPE_CACHE_MAX_KEYS: usize = 64;

/// Whether a string is written inline in its slot (an SSTR).
#[inline(always)]
pub fn inline_str(width: Width, unit_bytes: usize) -> bool {
    width == Width::Ascii && unit_bytes <= SSTR_MAX
}

/// The bytes a string takes when a column of strings is written as slots:
/// the slot, and the payload of a string not inline that nothing else
/// holds (`held_once`). A string held elsewhere is most likely repeated,
/// and stored once.
#[inline(always)]
pub fn str_slot_bytes(width: Width, unit_bytes: usize, held_once: bool) -> usize {
    if !inline_str(width, unit_bytes) && held_once {
        8 + ((unit_bytes + 7) & !7)
    } else {
        8
    }
}

/// Whether `count` strings of `unit_bytes` code-unit bytes in all are
/// smaller as a STR_COLUMN (u32 offsets and the units) than as slots that
/// take `as_slots` bytes (the sum of [`str_slot_bytes`]).
#[inline(always)]
pub fn str_column_is_smaller(count: usize, unit_bytes: usize, as_slots: usize) -> bool {
    4 * count + unit_bytes < as_slots
}

/// Whether a STR_COLUMN's offsets (u32, in code units) can reach past
/// `unit_bytes` bytes of units of `width`.
#[inline(always)]
pub fn str_column_fits(width: Width, unit_bytes: usize) -> bool {
    unit_bytes / width.unit() <= u32::MAX as usize
}

/// Bytes that are equal exactly when two sequences of string keys are:
/// each key's width, its length in bytes, then its code units. A streaming
/// writer finds a SHAPE written by an earlier item with it, whichever
/// source wrote that item.
pub fn key_signature<'a>(keys: impl IntoIterator<Item = (Width, &'a [u8])>) -> Box<[u8]> {
    let mut sig = Vec::new();
    for (w, units) in keys {
        sig.push(w as u8);
        sig.extend_from_slice(&(units.len() as u32).to_le_bytes());
        sig.extend_from_slice(units);
    }
    sig.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_ascii_string_costs_its_slot_only() {
        assert_eq!(str_slot_bytes(Width::Ascii, 7, true), 8);
        assert_eq!(str_slot_bytes(Width::Ascii, 8, true), 16);
        assert_eq!(str_slot_bytes(Width::Latin1, 1, true), 16);
        assert_eq!(str_slot_bytes(Width::Ucs2, 20, false), 8);
    }

    #[test]
    fn a_column_wins_only_when_strictly_smaller() {
        // Four strings of 8 bytes held once: 4 * 16 as slots, 16 + 32 as a column.
        assert!(str_column_is_smaller(4, 32, 64));
        assert!(!str_column_is_smaller(4, 48, 64));
    }

    #[test]
    fn signatures_differ_when_keys_do() {
        let a = key_signature([(Width::Ascii, &b"ab"[..]), (Width::Ascii, &b"c"[..])]);
        let b = key_signature([(Width::Ascii, &b"a"[..]), (Width::Ascii, &b"bc"[..])]);
        assert_ne!(a, b);
        assert_eq!(a, key_signature([(Width::Ascii, &b"ab"[..]), (Width::Ascii, &b"c"[..])]));
    }
}
