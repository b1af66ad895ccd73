//! Values of TABLE rows, read through columns decoded once.
//!
//! A row's value is item `row` of one of its table's columns. Decoding that
//! column (its slot, header, child and bounds) costs more than reading the
//! item, and a scan reads the same few columns for every row, so decoded
//! columns are kept in a small cache (`attached` state). An entry is keyed
//! by the region handle's id, which no other handle ever has, and by the
//! column slot's offset: the bytes under a handle never change, so an entry
//! stays right for as long as its handle lives, and is never matched after.

use bale_core::columns::slice_of;
use bale_core::{Column, ColumnKind, Dict, NumList, Reader, Seq, Value};
use pyo3::ffi;
use pyo3::prelude::*;

use crate::alloc::new_object;
use crate::convert::owned;
use crate::errors::format_error;
use crate::region::Region;
use crate::views::{read_to_py, value_to_py, Items, ListView};

/// A decoded column: the list-like values `Reader::table_column` returns.
#[derive(Clone, Copy)]
enum Decoded {
    Slots(Seq),
    Nums(NumList),
    Items(Column),
}

impl Decoded {
    fn of(v: &Value<'_>) -> Option<Decoded> {
        match *v {
            Value::List(s) => Some(Decoded::Slots(s)),
            Value::NumList(l) => Some(Decoded::Nums(l)),
            Value::Column(c) => Some(Decoded::Items(c)),
            _ => None,
        }
    }
    fn value<'a>(self) -> Value<'a> {
        match self {
            Decoded::Slots(s) => Value::List(s),
            Decoded::Nums(l) => Value::NumList(l),
            Decoded::Items(c) => Value::Column(c),
        }
    }
}

#[derive(Clone, Copy)]
struct Entry {
    /// 0 for an empty entry (handle ids start at 1).
    region: u64,
    table: usize,
    slot_at: usize,
    column: Decoded,
}

const EMPTY: Entry =
    Entry { region: 0, table: 0, slot_at: 0, column: Decoded::Slots(Seq { start: 0, pos: 0, len: 0 }) };

/// Sets of the cache. A column's set is its table's (its offset hashed)
/// plus its index, so up to this many columns of one table never share a
/// set; each set holds the two columns last used in it, so two tables
/// that a scan reads in turn and whose columns land in the same sets do
/// not evict each other. Direct-mapped by slot offset (64 or 256 entries
/// alike), a change of the writer that moved the sweep's nested records'
/// tables made their columns evict each other at every row, and every
/// read decoded its column again: their scan 5-10% slower.
const SETS: usize = 64;

crate::attached::attached!(COLUMNS: [[Entry; 2]; SETS] = [[EMPTY; 2]; SETS]);

/// The set of column `i` of the table at `table`.
#[inline(always)]
fn set_of(table: usize, i: usize) -> usize {
    let h = ((table >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    (h as usize).wrapping_add(i) % SETS
}

/// Column `i` of the table of row dict `d`, decoded (from the cache when
/// it was decoded before).
#[inline(always)]
fn column<'a>(
    _py: Python<'_>,
    region: &Region,
    r: &Reader<'a>,
    d: Dict,
    i: usize,
) -> bale_core::Result<Result<Decoded, Value<'a>>> {
    let slot_at = d.values + 8 * i;
    let id = region.id();
    let set = set_of(d.start, i);
    let hit = |e: &Entry| e.region == id && e.slot_at == slot_at && e.table == d.start;
    // Safety: attached (`_py`); the closures run no other code.
    let cached = unsafe {
        crate::attached::with(&COLUMNS, |c| {
            let ways = &mut c[set];
            if hit(&ways[0]) {
                Some(ways[0].column)
            } else if hit(&ways[1]) {
                // The last used first: the other is evicted next.
                ways.swap(0, 1);
                Some(ways[0].column)
            } else {
                None
            }
        })
    };
    if let Some(col) = cached {
        return Ok(Ok(col));
    }
    let col = r.table_column(d.start, d.values, i)?;
    Ok(match Decoded::of(&col) {
        Some(decoded) => {
            let entry = Entry { region: id, table: d.start, slot_at, column: decoded };
            unsafe {
                crate::attached::with(&COLUMNS, |c| {
                    c[set][1] = c[set][0];
                    c[set][0] = entry;
                })
            };
            Ok(decoded)
        }
        // Not a list: `row_item` reports it.
        None => Err(col),
    })
}

/// Value `i` of the row dict `d` (`d.row` is set, `i < d.len`): item
/// `row` of the column of its key (a KEYED_TABLE's row names its keys).
#[inline]
pub fn row_value<'a>(
    py: Python<'_>,
    region: &Region,
    r: &Reader<'a>,
    d: Dict,
    row: usize,
    i: usize,
) -> bale_core::Result<Value<'a>> {
    let i = r.dict_key_index(d, i);
    match column(py, region, r, d, i)? {
        // A string of a column of codes, read from its code without passing
        // the column through the generic list read.
        Ok(Decoded::Items(Column { kind: ColumnKind::Codes { dict, cells }, first, len, .. })) if row < len => {
            let at = cells + 4 * (first + row);
            r.code_item(dict, bale_core::format::read_u32(r.buf(), at) as usize, at)
        }
        Ok(col) => r.row_item(d, col.value(), row, i),
        Err(not_a_list) => r.row_item(d, not_a_list, row, i),
    }
}

/// Value `i` of the row dict `d` as a Python object. The kinds a scan
/// meets most (a list of a list column, a number) are made here without
/// passing a `Value` through memory, which costs more than the read.
pub fn row_value_to_py(py: Python<'_>, region: &Py<Region>, d: Dict, row: usize, i: usize) -> PyResult<Py<PyAny>> {
    let reg = region.get();
    let r = reg.reader();
    let i = r.dict_key_index(d, i);
    let col = column(py, reg, &r, d, i).map_err(format_error)?;
    match col {
        Ok(Decoded::Items(Column { start, first, len, kind: ColumnKind::Lists { child, offs } })) if row < len => {
            let (a, b) = r.list_bounds(offs, first + row, child.len()).map_err(format_error)?;
            let seq = match slice_of(child, start, a, b - a) {
                Value::List(s) => Items::Slots(s),
                Value::Column(c) => Items::Column(c),
                v => return value_to_py(py, region, &v),
            };
            Ok(new_object(py, ListView { region: region.clone_ref(py), seq })?.into_any())
        }
        // A string of a column of codes (a tag, a category): the column's
        // item, without the generic row read's dispatch.
        Ok(Decoded::Items(c @ Column { kind: ColumnKind::Codes { .. }, .. })) if row < c.len => {
            read_to_py(py, region, r.column_item(c, row))
        }
        Ok(Decoded::Nums(l)) if row < l.len => {
            let w = r.num_word(l, row).map_err(format_error)?;
            unsafe {
                let p = if l.float {
                    ffi::PyFloat_FromDouble(f64::from_bits(w))
                } else {
                    ffi::PyLong_FromLongLong(w as i64)
                };
                owned(py, p)
            }
        }
        Ok(Decoded::Slots(seq)) if row < seq.len => {
            // A column of numbers beyond the raw forms (ints outside i64):
            // read without a `Value`, as thaw does.
            let slot = r.seq_slot(seq, row).map_err(format_error)?;
            let p = unsafe {
                match r.number_object(slot, seq.start).map_err(format_error)? {
                    Some(bale_core::Number::Int(v)) => ffi::PyLong_FromLongLong(v),
                    Some(bale_core::Number::Float(f)) => ffi::PyFloat_FromDouble(f),
                    Some(bale_core::Number::Big(b)) => crate::convert::big_int(b),
                    None => return read_to_py(py, region, r.decode(slot, seq.start)),
                }
            };
            unsafe { owned(py, p) }
        }
        col => {
            let col = match col {
                Ok(c) => c.value(),
                Err(v) => v,
            };
            read_to_py(py, region, r.row_item(d, col, row, i))
        }
    }
}

/// Value `i` of any dict: through the cache for a row.
#[inline]
pub fn dict_value<'a>(
    py: Python<'_>,
    region: &Region,
    r: &Reader<'a>,
    d: Dict,
    i: usize,
) -> bale_core::Result<Value<'a>> {
    match d.row {
        Some(row) => row_value(py, region, r, d, row, i),
        None => r.dict_value(d, i),
    }
}
