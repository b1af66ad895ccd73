//! Columnar lists: TABLE, STR_COLUMN, SLOT32_COLUMN, STR_CODE_COLUMN,
//! LIST_COLUMN and ROWS_COLUMN objects.
//!
//! A list of dicts with one key sequence is stored as one column per key
//! (a list of records then costs no dict header and no list slot per
//! record), a list of strings as one run of code units cut by u32 offsets,
//! and a list of lists as one child list cut the same way; a list of lists
//! of dicts of one key sequence (a ROWS_COLUMN) as one child TABLE of all
//! their dicts, cut the same way. All read as lists: a TABLE's items are
//! dicts whose values come from the columns, a STR_COLUMN's items are
//! strings, a LIST_COLUMN's and a ROWS_COLUMN's items are lists (a slice of
//! the child). A KEYED_TABLE is a TABLE whose rows name their keys: each
//! row is None or the dict of one of its key lists (ids into its shape, as
//! an ID_DICT's), so records whose keys vary are stored by column too; the
//! cells a row lacks hold values no reader reads. A table's column of
//! None, bools and small ints is a SLOT32_COLUMN, its items each the low
//! half of their slot (4 bytes a row, not a LIST's 8); its column of
//! repeated strings a STR_CODE_COLUMN, each item a u32 code into a list of
//! the column's distinct strings (its *dictionary*). See
//! `docs/FORMAT.md`, *Columns*.

use crate::error::{FormatError, Result};
use crate::format::*;
use crate::reader::{bad, Dict, NumList, Reader, Seq, Str, Table, Value};

/// A list stored in a columnar object: `len` items from item `first` on
/// (a LIST_COLUMN item is a slice of its child, so `first` may be > 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// The object's first byte; its references lie before it.
    pub start: usize,
    pub first: usize,
    pub len: usize,
    pub kind: ColumnKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// Rows of a TABLE: row i maps key j of `shape` to item i of the
    /// column at slot j of `cols`. Of a KEYED_TABLE when `keyed` is not 0:
    /// the place of its key-list word (`KeyLists`), after the column slots.
    Rows { shape: Table, cols: usize, keyed: usize },
    /// Strings of a STR_COLUMN: `offs` holds u32 code-unit offsets, the
    /// code units (of `width`) start at `units`, `total` of them.
    Strs { width: Width, offs: usize, units: usize, total: usize },
    /// Lists of a LIST_COLUMN: u32 item offsets at `offs` into `child`.
    Lists { child: Child, offs: usize },
    /// Scalars of a SLOT32_COLUMN: 4-byte cells at `cells`, each the low
    /// half of an INT or constant slot (`cell_slot`).
    Slots32 { cells: usize },
    /// Strings of a STR_CODE_COLUMN: 4-byte codes at `cells`, each the
    /// index of a string slot of the list `dict` (`Reader::code_item`).
    Codes { dict: Seq, cells: usize },
}

/// The child list of a LIST_COLUMN (or, `Rows`, of a ROWS_COLUMN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Child {
    Slots(Seq),
    Nums(NumList),
    /// A STR_COLUMN of `len` strings.
    Strs {
        len: usize,
        width: Width,
        offs: usize,
        units: usize,
        total: usize,
    },
    /// A TABLE (or, `keyed` not 0, a KEYED_TABLE) of `len` rows with the
    /// keys of `shape`, column slots at `cols` (the table object starts 16
    /// bytes before them).
    Rows {
        len: usize,
        shape: Table,
        cols: usize,
        keyed: usize,
    },
}

impl Child {
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn len(&self) -> usize {
        match self {
            Child::Slots(s) => s.len,
            Child::Nums(l) => l.len,
            Child::Strs { len, .. } | Child::Rows { len, .. } => *len,
        }
    }
    /// The whole child as a list value.
    pub fn value<'a>(&self) -> Value<'a> {
        match *self {
            Child::Slots(s) => Value::List(s),
            Child::Nums(l) => Value::NumList(l),
            Child::Strs { len, width, offs, units, total } => Value::Column(Column {
                start: offs - 16,
                first: 0,
                len,
                kind: ColumnKind::Strs { width, offs, units, total },
            }),
            Child::Rows { len, shape, cols, keyed } => {
                Value::Column(Column { start: cols - 16, first: 0, len, kind: ColumnKind::Rows { shape, cols, keyed } })
            }
        }
    }
}

/// Bytes of `n + 1` u32 offsets, padded to a word.
#[inline]
pub fn offsets_size(n: usize) -> usize {
    pad8(4 * (n + 1))
}

/// The slot a SLOT32_COLUMN cell stands for: the cell sign-extended to 64
/// bits. Valid when that is an INT slot or None, False or True
/// (`is_slot32_cell`).
#[inline(always)]
pub fn cell_slot(cell: u32) -> u64 {
    cell as i32 as i64 as u64
}

/// Whether a SLOT32_COLUMN cell is valid (`cell_slot`).
#[inline]
pub fn is_slot32_cell(cell: u32) -> bool {
    let slot = cell_slot(cell);
    match slot & TAG_MASK {
        TAG_INT => true,
        TAG_CONST => matches!(slot, SLOT_NONE | SLOT_FALSE | SLOT_TRUE),
        _ => false,
    }
}

/// The SLOT32_COLUMN cell of `slot`, when it has one: an INT slot of an
/// int within 28 bits, or None, False or True.
#[inline(always)]
pub fn slot32_cell(slot: u64) -> Option<u32> {
    let cell = i32::try_from(slot as i64).ok()? as u32;
    is_slot32_cell(cell).then_some(cell)
}

/// The row byte of a KEYED_TABLE row that is None.
pub const NONE_ROW: u8 = 0xFF;

/// Where the key lists of a KEYED_TABLE of `n` rows lie. Its key-list word
/// (at `word`, after the column slots) holds `s`, the number of key lists
/// (1..=254), in bits 0..7 and `m`, their ids' total count, in bits 16..31
/// (other bits zero). Then `s + 1` u16 offsets into the ids, padded to a
/// word; the `m` id bytes, padded; and one byte per row, padded: the
/// index of the row's key list, or `NONE_ROW`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyLists {
    pub lists: usize,
    pub ids_total: usize,
    pub offs: usize,
    pub ids: usize,
    pub rows: usize,
}

impl KeyLists {
    /// The layout of the key-list word `w` at `word`; None when a reserved
    /// bit is set or there is no key list.
    pub fn at(word: usize, w: u64) -> Option<KeyLists> {
        let (lists, ids_total) = ((w & 0xFF) as usize, ((w >> 16) & 0xFFFF) as usize);
        if w & !0xFFFF_00FF != 0 || lists == 0 || lists == NONE_ROW as usize {
            return None;
        }
        let offs = word + 8;
        let ids = offs + pad8(2 * (lists + 1));
        Some(KeyLists { lists, ids_total, offs, ids, rows: ids + pad8(ids_total) })
    }
    /// Bytes from the key-list word to the end of the table, for `n` rows.
    pub fn size(&self, word: usize, n: usize) -> usize {
        self.rows + pad8(n) - word
    }
    /// Offset `t` (0..=`lists`) into the ids, read from `buf` (the region,
    /// whose extent of the table was checked).
    #[inline]
    pub fn offset(&self, buf: &[u8], t: usize) -> usize {
        u16::from_le_bytes([buf[self.offs + 2 * t], buf[self.offs + 2 * t + 1]]) as usize
    }
}

impl<'a> Reader<'a> {
    /// The u32 at `pos` (inside an extent already checked).
    #[inline]
    fn u32_at(&self, pos: usize) -> usize {
        read_u32(self.buf(), pos) as usize
    }

    /// A TABLE (a KEYED_TABLE when `keyed`) object at `off` with `n` rows
    /// (its extent not yet checked).
    pub(crate) fn decode_table(&self, off: usize, n: usize, limit: usize, keyed: bool) -> Result<Value<'a>> {
        self.extent(off, 16, limit, "table object")?;
        let shape_off = self.word(off + 8)? as usize;
        if !shape_off.is_multiple_of(8) || shape_off >= off {
            return Err(bad(off, "table shape does not lie before its table"));
        }
        let shape = self.shape_at(shape_off, off)?;
        if shape.len == 0 {
            // Its rows would take no bytes: n values in two words, past the
            // readers' budget, and a copy without the bytes around it
            // would no longer fit its own length.
            return Err(bad(off, "table has no keys (a table's shape holds at least one)"));
        }
        self.extent(off, 16 + 8 * shape.len, limit, "table object")?;
        let cols = off + 16;
        let keyed = if keyed {
            let word = cols + 8 * shape.len;
            self.extent(off, word + 8 - off, limit, "keyed table")?;
            let lists = KeyLists::at(word, self.word(word)?)
                .ok_or_else(|| bad(word, "keyed table's key-list word has no key list or a reserved bit set"))?;
            if n > self.buf().len() {
                return Err(bad(off, "table length does not fit in the region"));
            }
            self.extent(off, word + lists.size(word, n) - off, limit, "keyed table")?;
            word
        } else {
            0
        };
        Ok(Value::Column(Column { start: off, first: 0, len: n, kind: ColumnKind::Rows { shape, cols, keyed } }))
    }

    /// A STR_COLUMN object at `off` with `n` strings.
    pub(crate) fn decode_str_column(&self, off: usize, n: usize, limit: usize) -> Result<Value<'a>> {
        self.extent(off, 16, limit, "string column")?;
        let head = self.word(off + 8)?;
        if head & 0xFC != 0 {
            return Err(bad(off + 8, "string column has non-zero reserved bits"));
        }
        let width = Width::from_code(head);
        let total = (head >> 8) as usize;
        if total > self.buf().len() || n > self.buf().len() {
            return Err(bad(off, "string column length does not fit in the region"));
        }
        let offs = off + 16;
        let units = offs + offsets_size(n);
        self.extent(off, 16 + offsets_size(n) + pad8(total * width.unit()), limit, "string column")?;
        // Each item's offsets are checked against `total` when it is read
        // (one record read from a cold file touches no other page); the
        // whole run of offsets is checked by verify.
        Ok(Value::Column(Column { start: off, first: 0, len: n, kind: ColumnKind::Strs { width, offs, units, total } }))
    }

    /// A SLOT32_COLUMN object at `off` with `n` cells (each checked when
    /// it is read, and by verify).
    pub(crate) fn decode_slot32_column(&self, off: usize, n: usize, limit: usize) -> Result<Value<'a>> {
        // n is bounded by the buffer (`decode_object`), so the size cannot overflow.
        self.extent(off, 8 + pad8(4 * n), limit, "small-scalar column")?;
        Ok(Value::Column(Column { start: off, first: 0, len: n, kind: ColumnKind::Slots32 { cells: off + 8 } }))
    }

    /// A STR_CODE_COLUMN object at `off` with `n` codes (each checked when
    /// it is read, and by verify) into the list its dictionary slot holds.
    pub(crate) fn decode_code_column(&self, off: usize, n: usize, limit: usize) -> Result<Value<'a>> {
        // n is bounded by the buffer (`decode_object`), so the size cannot overflow.
        self.extent(off, 16 + pad8(4 * n), limit, "string-code column")?;
        // A LIST slot, or an OBJ slot of a LIST object lying before the
        // column, its kind checked before it is decoded: decoding reads its
        // header only, so no chain of columns, each another's dictionary,
        // can make decoding recurse (in a cyclic region too, where `extent`
        // lets references point anywhere).
        let dict_slot = self.word(off + 8)?;
        let refused = "string-code column dictionary is not a non-empty list";
        let is_list = match dict_slot & TAG_MASK {
            TAG_LIST => true,
            TAG_OBJ => (dict_slot as usize) < off && (self.word(dict_slot as usize)? & 0xFF) as u8 == KIND_LIST,
            _ => false,
        };
        if !is_list {
            return Err(bad(off + 8, refused));
        }
        let dict = match self.decode(dict_slot, off)? {
            Value::List(s) if s.len > 0 => s,
            _ => return Err(bad(off + 8, refused)),
        };
        if dict.pos + 8 * dict.len > off {
            return Err(bad(off + 8, "string-code column dictionary does not lie before its column"));
        }
        Ok(Value::Column(Column { start: off, first: 0, len: n, kind: ColumnKind::Codes { dict, cells: off + 16 } }))
    }

    /// The string code `code` names in `dict`, a STR_CODE_COLUMN's
    /// dictionary: checked to be one of its items and a string slot (a
    /// code may name one item any number of times, as slots may reference
    /// one string, but never a container).
    #[inline(always)]
    pub fn code_item(&self, dict: Seq, code: usize, at: usize) -> Result<Value<'a>> {
        if code >= dict.len {
            return Err(bad(at, "string-code column code names no string of its dictionary"));
        }
        let slot = self.word(dict.pos + 8 * code)?;
        if !matches!(slot & TAG_MASK, TAG_SSTR | TAG_STR) {
            return Err(bad(dict.pos + 8 * code, "string-code column dictionary item is no string slot"));
        }
        self.decode(slot, dict.start)
    }

    /// A LIST_COLUMN object at `off` with `n` lists; a ROWS_COLUMN (the same
    /// layout, its child a TABLE) when `over_table`.
    pub(crate) fn decode_list_column(&self, off: usize, n: usize, limit: usize, over_table: bool) -> Result<Value<'a>> {
        if n > self.buf().len() {
            return Err(bad(off, "list column length does not fit in the region"));
        }
        self.extent(off, 16 + offsets_size(n), limit, "list column")?;
        // The child lies before its column even in a cyclic region: a
        // column is never part of a cycle. A child that is a list column
        // itself is refused before it is decoded: decoding it decodes its
        // own child, and in a cyclic region (where `extent` lets references
        // point anywhere) a column that is its own child, or a chain of
        // them, recursed until the stack overflowed (found by
        // `fuzz-binding`; `tests/verify.rs`). A ROWS_COLUMN's child is a
        // TABLE, whose decoding decodes nothing below it.
        let child_slot = self.word(off + 8)?;
        let refused = if over_table {
            "rows column child is not a table"
        } else {
            "list column child is not a list, number list or string column"
        };
        if child_slot & TAG_MASK == TAG_OBJ {
            let at = child_slot as usize;
            if at >= off {
                return Err(bad(off + 8, "list column child does not lie before its column"));
            }
            let kind = (self.word(at)? & 0xFF) as u8;
            let table = kind == KIND_TABLE || kind == KIND_KEYED_TABLE;
            if kind == KIND_LIST_COLUMN || kind == KIND_ROWS_COLUMN || over_table != table {
                return Err(bad(off + 8, refused));
            }
        } else if over_table {
            return Err(bad(off + 8, refused));
        }
        let (child, end) = match self.decode(child_slot, off)? {
            Value::List(s) => (Child::Slots(s), s.pos + 8 * s.len),
            Value::NumList(l) => (Child::Nums(l), l.end()),
            Value::Column(Column { kind: ColumnKind::Strs { width, offs, units, total }, len, .. }) => {
                (Child::Strs { len, width, offs, units, total }, units + pad8(total * width.unit()))
            }
            Value::Column(Column { kind: ColumnKind::Rows { shape, cols, keyed }, len, .. }) => {
                let end = if keyed == 0 {
                    cols + 8 * shape.len
                } else {
                    let lists = KeyLists::at(keyed, self.word(keyed)?).expect("checked by decode_table");
                    keyed + lists.size(keyed, len)
                };
                (Child::Rows { len, shape, cols, keyed }, end)
            }
            _ => return Err(bad(off + 8, refused)),
        };
        if end > off {
            return Err(bad(off + 8, "list column child does not lie before its column"));
        }
        let offs = off + 16;
        Ok(Value::Column(Column { start: off, first: 0, len: n, kind: ColumnKind::Lists { child, offs } }))
    }

    /// Item `i` of a column (`i < c.len`, which the caller checks).
    #[inline]
    pub fn column_item(&self, c: Column, i: usize) -> Result<Value<'a>> {
        let j = c.first + i;
        match c.kind {
            // A row of a slice is the row of its table (`c.start` is then
            // the ROWS_COLUMN's): one place, whichever list it is read from.
            ColumnKind::Rows { shape, cols, keyed: 0 } => Ok(Value::Dict(Dict {
                start: cols - 16,
                shape,
                ids: 0,
                values: cols,
                len: shape.len,
                row: Some(j),
                class: 0,
            })),
            ColumnKind::Rows { shape, cols, keyed } => self.keyed_row(shape, cols, keyed, j),
            ColumnKind::Strs { width, offs, units, total } => {
                let (a, b) = (self.u32_at(offs + 4 * j), self.u32_at(offs + 4 * j + 4));
                if a > b || b > total {
                    return Err(bad(offs + 4 * j, "string column offsets decrease or run past its units"));
                }
                let u = width.unit();
                let data = &self.buf()[units + a * u..units + b * u];
                crate::reader::check_units(width, data, units + a * u)?;
                Ok(Value::Str(Str::borrowed(width, b - a, data)))
            }
            ColumnKind::Lists { child, offs } => {
                let (a, b) = self.list_bounds(offs, j, child.len())?;
                Ok(slice_of(child, c.start, a, b - a))
            }
            ColumnKind::Slots32 { cells } => {
                let cell = self.u32_at(cells + 4 * j) as u32;
                if !is_slot32_cell(cell) {
                    return Err(bad(cells + 4 * j, "small-scalar column cell is no int or constant slot"));
                }
                self.decode(cell_slot(cell), c.start)
            }
            ColumnKind::Codes { dict, cells } => self.code_item(dict, self.u32_at(cells + 4 * j), cells + 4 * j),
        }
    }

    /// The bytes of a KEYED_TABLE's key lists and row bytes, from its
    /// key-list word on (0 for any other column).
    pub fn keyed_table_bytes(&self, c: Column) -> Result<usize> {
        match c.kind {
            ColumnKind::Rows { keyed, cols, .. } if keyed != 0 => {
                let lists =
                    KeyLists::at(keyed, self.word(keyed)?).ok_or_else(|| bad(keyed, "keyed table has no key list"))?;
                // The table's own length, not a slice's.
                let n = (self.word(cols - 16)? >> 8) as usize;
                Ok(lists.size(keyed, n))
            }
            _ => Ok(0),
        }
    }

    /// Row `j` of a KEYED_TABLE (`ColumnKind::Rows`): None, or the dict of
    /// its key list, whose ids are checked here on every read as an
    /// ID_DICT's are (each names a key of the shape, so a value read is
    /// always item `j` of a column of the table).
    fn keyed_row(&self, shape: Table, cols: usize, keyed: usize, j: usize) -> Result<Value<'a>> {
        let lists = KeyLists::at(keyed, self.word(keyed)?).ok_or_else(|| bad(keyed, "keyed table has no key list"))?;
        let b = self.buf()[lists.rows + j];
        if b == NONE_ROW {
            return Ok(Value::None);
        }
        let t = b as usize;
        if t >= lists.lists {
            return Err(bad(lists.rows + j, "keyed table row names no key list of its table"));
        }
        let (a, e) = (lists.offset(self.buf(), t), lists.offset(self.buf(), t + 1));
        if a > e || e > lists.ids_total {
            return Err(bad(lists.offs + 2 * t, "keyed table key-list offsets decrease or run past its ids"));
        }
        let ids = lists.ids + a;
        crate::id_dict::check_ids_in_table(&self.buf()[ids..ids + (e - a)], shape.len).map_err(|m| bad(ids, m))?;
        Ok(Value::Dict(Dict { start: cols - 16, shape, ids, values: cols, len: e - a, row: Some(j), class: 0 }))
    }

    /// Where item `j` of a LIST_COLUMN (offsets at `offs`, child of
    /// `child_len` items) lies in its child: `[a, b)`.
    #[inline]
    pub fn list_bounds(&self, offs: usize, j: usize, child_len: usize) -> Result<(usize, usize)> {
        let (a, b) = (self.u32_at(offs + 4 * j), self.u32_at(offs + 4 * j + 4));
        if a > b || b > child_len {
            return Err(bad(offs + 4 * j, "list column offsets decrease or run past its child"));
        }
        Ok((a, b))
    }

    /// Value `i` of a TABLE row: item `row` of the column of its key (of
    /// column `i`, but in a KEYED_TABLE's row).
    pub(crate) fn row_value(&self, d: Dict, row: usize, i: usize) -> Result<Value<'a>> {
        let j = self.dict_key_index(d, i);
        self.row_item(d, self.table_column(d.start, d.values, j)?, row, j)
    }

    /// Item `row` of `col`, column `i` of the table of row dict `d` (read
    /// apart so that a caller may keep decoded columns; `i` is the column's
    /// index, `Reader::dict_key_index` of the value's place in `d`).
    #[inline]
    pub fn row_item(&self, d: Dict, col: Value<'a>, row: usize, i: usize) -> Result<Value<'a>> {
        match self.list_len(&col) {
            Some(n) if n > row => self.list_item(col, row),
            _ => Err(bad(d.values + 8 * i, "table column is not a list as long as its table")),
        }
    }

    /// Column `i` of the TABLE at `table` (column slots at `cols`), which
    /// lies wholly before the table even in a cyclic region.
    pub fn table_column(&self, table: usize, cols: usize, i: usize) -> Result<Value<'a>> {
        let slot = self.word(cols + 8 * i)?;
        let ok = match slot & TAG_MASK {
            TAG_OBJ => (slot as usize) < table,
            TAG_LIST => ((slot >> 19) << 3) as usize + 8 * ((slot >> 3) & 0xFFFF) as usize <= table,
            _ => false,
        };
        if !ok {
            return Err(bad(cols + 8 * i, "table column is not a list object lying before its table"));
        }
        self.decode(slot, table)
    }

    /// The length of a list-like value (list, number list, column).
    #[inline]
    pub fn list_len(&self, v: &Value<'a>) -> Option<usize> {
        match v {
            Value::List(s) => Some(s.len),
            Value::NumList(l) => Some(l.len),
            Value::Column(c) => Some(c.len),
            _ => None,
        }
    }

    /// Item `i` of a list-like value (`i` below its length).
    #[inline]
    pub fn list_item(&self, v: Value<'a>, i: usize) -> Result<Value<'a>> {
        match v {
            Value::List(s) | Value::Tuple(s) => self.seq_item(s, i),
            Value::NumList(l) => self.num_item(l, i),
            Value::Column(c) => self.column_item(c, i),
            _ => Err(FormatError::new("not a list")),
        }
    }
}

/// `len` items of `child` from `a` on, as a list value. A slice is marked
/// by its `start` being the LIST_COLUMN's (`owner`), not its child's: it
/// has no address of its own, and its items still lie before `owner`.
#[inline(always)]
pub fn slice_of<'a>(child: Child, owner: usize, a: usize, len: usize) -> Value<'a> {
    if len == 0 {
        return Value::List(Seq { start: 0, pos: 0, len: 0 });
    }
    match child {
        Child::Slots(s) => Value::List(Seq { start: owner, pos: s.pos + 8 * a, len }),
        Child::Nums(l) => Value::NumList(NumList { start: owner, pos: l.item_pos(a), len, ..l }),
        Child::Strs { width, offs, units, total, .. } => {
            Value::Column(Column { start: owner, first: a, len, kind: ColumnKind::Strs { width, offs, units, total } })
        }
        Child::Rows { shape, cols, keyed, .. } => {
            Value::Column(Column { start: owner, first: a, len, kind: ColumnKind::Rows { shape, cols, keyed } })
        }
    }
}

/// Whether a list value is a slice of a LIST_COLUMN's child (it then has
/// no address of its own and cannot be referenced by a slot).
pub fn is_slice(v: &Value<'_>) -> bool {
    match v {
        Value::List(s) | Value::Tuple(s) => s.len > 0 && s.start != s.pos && s.start + 8 != s.pos,
        Value::NumList(l) => l.start + 8 != l.pos,
        Value::Column(c) => match c.kind {
            ColumnKind::Strs { offs, .. } => c.start + 16 != offs,
            ColumnKind::Rows { cols, .. } => c.start + 16 != cols,
            ColumnKind::Lists { .. } => false,
            ColumnKind::Slots32 { cells } => c.start + 8 != cells,
            ColumnKind::Codes { cells, .. } => c.start + 16 != cells,
        },
        _ => false,
    }
}
