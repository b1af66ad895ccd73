//! Copying a value from one region into a region being built, natively:
//! no Python objects, one pass over the source (the copy `compacted()`
//! makes, and the one `append` and `compact` make of views of other
//! regions).
//!
//! Shapes are copied once per source object, whatever the number of
//! references to them, and so are strings, bytes and big ints of a source
//! of up to `EXACT_LEAVES_MAX_BYTES` (a larger source's are remembered in a
//! direct-mapped cache: one met again after being evicted is copied again,
//! which costs space, never correctness). Containers are copied once when the source
//! shares them (SHARED flag) or the caller asks for sharing; otherwise each
//! reference is a fresh copy, within a budget of one slot per source word
//! (so crafted sharing cannot make the copy exponential). Cycles of a
//! cyclic source become forward references in the copy (see `ForwardRefs`).

use rustc_hash::FxHashMap as HashMap;

use crate::columns::{Child, Column, ColumnKind};
use crate::dict_class;
use crate::encoder::{encode, Container, Source, Walk, NO_IDENTITY};
use crate::error::{FormatError, Result};
use crate::format::*;
use crate::hash::{hash_value, spend, MAX_KEY_DEPTH};
use crate::id_dict::{check_ids_distinct, Ids, ID_DICT_MAX_KEYS};
use crate::reader::{Dict, Reader, RecType, Seq, Table, Value};
use crate::writer::Builder;

/// Entries of the cache of copied strings (a power of two).
const LEAF_CACHE: usize = 1 << 16;

/// Sources up to this size remember every string, bytes and big int they
/// copied (an exact map), so their copy writes each once, as the compactor
/// does; larger ones use the direct-mapped cache (`Copied::leaves`).
const EXACT_LEAVES_MAX_BYTES: usize = 256 << 10;

/// Where a container being copied is among its children, and how it is
/// written: a few words, no owned data (`Note [What a cursor may hold]`
/// in `encoder.rs`).
#[derive(Clone, Copy)]
enum Cursor {
    /// `len` slots at `pos` of the object at `start` (a list's or tuple's
    /// items, a dict's values, a record's fields, a table's columns).
    Slots { start: usize, pos: usize, len: usize, next: usize, around: Around },
    /// Row `row` of the TABLE at `start` (its column slots at `cols`; its
    /// `len` values, of columns named by the key ids at `ids` in a
    /// KEYED_TABLE's row, else the first `len`), copied as a plain dict of
    /// the copied shape `shape`.
    Row { start: usize, cols: usize, ids: usize, len: usize, row: usize, shape: u64, next: usize },
    /// The LIST_COLUMN at `start` of `rows` lists: its child slot (of
    /// `child_len` items), cut by the u32 offsets at `offs`.
    ListColumn { start: usize, offs: usize, rows: usize, child_len: usize, over_table: bool, done: bool },
    /// Rows `first..first + len` of the TABLE whose column slots are at
    /// `cols` (an item of a ROWS_COLUMN, or a whole KEYED_TABLE, whose
    /// key-list word is at `keyed`), copied as a list of plain dicts (and
    /// Nones).
    SliceRows { cols: usize, keyed: usize, first: usize, len: usize, next: usize },
}

/// What the slots of a `Cursor::Slots` are copied into (`Container`).
#[derive(Clone, Copy)]
enum Around {
    Seq {
        tuple: bool,
    },
    Dict {
        class: u64,
        shape: u64,
    },
    /// An ID_DICT over the key table copied to `table`, its ids (the same
    /// in the copy) read from the source at `ids` when it is written.
    IdDict {
        table: u64,
        ids: usize,
    },
    Record {
        ty: u64,
    },
    Table {
        rows: usize,
        shape: u64,
    },
    /// A KEYED_TABLE over the shape copied to `shape`, its key lists (the
    /// same in the copy) read from the source's key-list word at `keyed`,
    /// for its `rows` rows, when it is written.
    KeyedTable {
        rows: usize,
        shape: u64,
        keyed: usize,
    },
}

/// The next thing to copy: a slot (found in a container starting at the
/// second field), or the value held in `StoredValues::stashed`, which has
/// no slot (a row of a table, an item of a column). The value waits aside
/// so that what passes between the walk's calls stays two words: moving an
/// 88-byte `Value` through them cost a copy of a tree a third more time.
#[derive(Clone, Copy)]
enum Next {
    Slot(u64, usize),
    Stashed,
}

/// What has been copied from one source region into one destination; keep
/// it across calls to copy several values of the same source into the same
/// destination with their common parts stored once.
pub struct Transplant {
    walk: Walk<Cursor>,
    copied: Copied,
}

/// What the copy remembers besides the walk's identities.
struct Copied {
    /// Source offset -> destination slot of the shapes copied.
    shapes: HashMap<u64, u64>,
    /// (Place, count) of a KEYED_TABLE's key list's ids -> the SHAPE written
    /// for its keys (`key_list_shape`).
    key_lists: HashMap<(usize, usize), u64>,
    /// Source slot -> destination slot of recently copied strings, bytes and
    /// big ints, direct-mapped: a repeated string is found in one probe of
    /// a table that stays in cache (an exact map of every string costs a
    /// cache miss per string). A string evicted before it recurs is copied
    /// again, which costs space, never correctness.
    leaves: Vec<(u64, u64)>,
    /// For a source of up to `EXACT_LEAVES_MAX_BYTES`: every leaf copied,
    /// exactly (then `leaves` is unused).
    exact: Option<HashMap<u64, u64>>,
    /// What to do with EXTERN objects: without a policy, they are refused.
    externs: Option<ExternPolicy>,
    /// Whether a copy was refused for an EXTERN object it could not keep.
    met_extern: bool,
}

/// How a copy into a segment of a store treats the EXTERN objects of its
/// source (a value of another segment of the same store): one naming the
/// destination's own segment becomes a plain reference (its bytes are the
/// destination's, below `own_end`), one naming an `allowed` segment is
/// copied as it is and its segment added to `kept`.
#[derive(Debug, Default)]
pub struct ExternPolicy {
    pub own: u32,
    pub own_end: u64,
    pub allowed: rustc_hash::FxHashSet<u32>,
    pub kept: std::collections::BTreeSet<u32>,
    /// Header flags the plain references need (SHARED, and CYCLIC when a
    /// referenced region has it).
    pub flags: u32,
}

/// One copy: the stored values of `src` as a `Source` writing into `dst`.
struct StoredValues<'t, 'a> {
    src: &'t Reader<'a>,
    dst: &'t mut Builder,
    walk: &'t mut Walk<Cursor>,
    copied: &'t mut Copied,
    steps: usize,
    /// The value `Next::Stashed` stands for.
    stashed: Option<Value<'a>>,
}

impl Transplant {
    /// `share`: keep each container referenced several times as one copy
    /// (forced for sources with the SHARED flag).
    pub fn new(src: &Reader<'_>, share: bool, source_shared: bool) -> Transplant {
        Transplant {
            walk: Walk::new(share || source_shared || src.cyclic()),
            copied: Copied {
                shapes: HashMap::default(),
                key_lists: HashMap::default(),
                leaves: Vec::new(),
                exact: (src.buf().len() <= EXACT_LEAVES_MAX_BYTES).then(HashMap::default),
                externs: None,
                met_extern: false,
            },
        }
    }

    /// This copy with `policy` for EXTERN objects (see `ExternPolicy`).
    pub fn with_externs(mut self, policy: ExternPolicy) -> Transplant {
        self.copied.externs = Some(policy);
        self
    }

    /// The EXTERN policy given, with what the copies so far kept.
    pub fn externs(&self) -> Option<&ExternPolicy> {
        self.copied.externs.as_ref()
    }

    /// Whether a copy failed on an EXTERN object that it could not keep
    /// (the caller may copy the value as read through its store instead;
    /// this `Transplant` must then not be used again).
    pub fn met_extern(&self) -> bool {
        self.copied.met_extern
    }

    /// Whether a container was referenced again (the destination needs `FLAG_SHARED`).
    pub fn made_shared(&self) -> bool {
        self.walk.met_again()
    }
    /// Whether forward references were written (the destination needs `FLAG_CYCLIC`).
    pub fn made_cycles(&self) -> bool {
        self.walk.made_cycles()
    }
    /// The header flags the copies made so far need: `FLAG_SHARED` when a
    /// value was referenced again, and `FLAG_CYCLIC` (with `FLAG_SHARED`)
    /// when forward references were written.
    pub fn flags(&self) -> u32 {
        let mut flags = self.copied.externs.as_ref().map_or(0, |p| p.flags);
        if self.made_shared() {
            flags |= FLAG_SHARED;
        }
        if self.made_cycles() {
            flags |= FLAG_SHARED | FLAG_CYCLIC;
        }
        flags
    }

    /// Copies the value of `slot` (found in a container starting at `limit`)
    /// from `src` into `dst` and returns its slot there.
    pub fn copy(&mut self, src: &Reader<'_>, dst: &mut Builder, slot: u64, limit: usize) -> Result<u64> {
        self.copy_next(src, dst, Next::Slot(slot, limit), None)
    }

    /// Copies a value that has no slot of its own (a row of a table, a
    /// slice of a list column) and returns its slot in `dst`.
    pub fn copy_value(&mut self, src: &Reader<'_>, dst: &mut Builder, v: Value<'_>) -> Result<u64> {
        self.copy_next(src, dst, Next::Stashed, Some(v))
    }

    fn copy_next<'a>(
        &mut self,
        src: &Reader<'a>,
        dst: &mut Builder,
        first: Next,
        stashed: Option<Value<'a>>,
    ) -> Result<u64> {
        let mut values = StoredValues {
            src,
            dst,
            walk: &mut self.walk,
            copied: &mut self.copied,
            // Each copy of a valid source visits at most `step_budget` values.
            steps: crate::hash::step_budget(src.buf().len()),
            stashed,
        };
        encode(&mut values, first)
    }
}

impl<'a> Source for StoredValues<'_, 'a> {
    type Node = Next;
    type Cursor = Cursor;
    type Error = FormatError;

    #[inline]
    fn parts(&mut self) -> (&mut Walk<Cursor>, &mut Builder) {
        (self.walk, self.dst)
    }

    fn visit(&mut self, next: Next) -> Result<Option<u64>> {
        spend(&mut self.steps)?;
        match next {
            Next::Slot(slot, limit) => self.visit_slot(slot, limit),
            Next::Stashed => {
                let v = self.stashed.take().expect("a stashed value");
                self.visit_value(v)
            }
        }
    }

    #[inline(always)]
    fn next_child(&mut self) -> Result<Option<Next>> {
        let src = self.src;
        Ok(match self.walk.top().expect("an open container") {
            Cursor::Slots { start, pos, len, next, .. } => {
                if *next == *len {
                    return Ok(None);
                }
                *next += 1;
                Some(Next::Slot(src.word(*pos + 8 * (*next - 1))?, *start))
            }
            Cursor::Row { start, cols, ids, len, row, next, .. } => {
                if *next == *len {
                    return Ok(None);
                }
                *next += 1;
                let j = if *ids == 0 { *next - 1 } else { src.buf()[*ids + *next - 1] as usize };
                let (item, value) = row_item(src, *start, *cols, *row, j)?;
                self.stashed = value;
                Some(item)
            }
            // A list column's child slot is its first word.
            Cursor::ListColumn { start, done, .. } => {
                if *done {
                    return Ok(None);
                }
                *done = true;
                Some(Next::Slot(src.word(*start + 8)?, *start))
            }
            Cursor::SliceRows { cols, keyed, first, len, next } => {
                if *next == *len {
                    return Ok(None);
                }
                *next += 1;
                // The table's shape, read again for each row (the cursor
                // holds a few words): a slice is copied alone, rarely.
                let table = *cols - 16;
                let shape = src.shape_at(src.word(table + 8)? as usize, table)?;
                let rows = Column {
                    start: table,
                    first: 0,
                    len: *first + *len,
                    kind: ColumnKind::Rows { shape, cols: *cols, keyed: *keyed },
                };
                self.stashed = Some(src.column_item(rows, *first + *next - 1)?);
                Some(Next::Stashed)
            }
        })
    }

    fn container(&self, cursor: &Cursor) -> Result<Container> {
        Ok(match *cursor {
            Cursor::Slots { around, .. } => match around {
                Around::Seq { tuple } => Container::Seq { tuple },
                Around::Dict { class, shape } => Container::Dict { class, shape },
                Around::IdDict { table, ids } => Container::IdDict { table, ids: self.src_ids(ids) },
                Around::Record { ty } => Container::Record { ty },
                Around::Table { rows, shape } => Container::Table { rows, shape },
                Around::KeyedTable { rows, shape, keyed } => self.keyed_table(rows, shape, keyed)?,
            },
            Cursor::Row { shape, .. } => Container::Dict { class: dict_class::PLAIN, shape },
            Cursor::SliceRows { .. } => Container::Seq { tuple: false },
            Cursor::ListColumn { offs, rows, child_len, over_table, .. } => {
                Container::ListColumn { offsets: list_offsets(self.src, offs, rows, child_len)?, rows: over_table }
            }
        })
    }
}

impl<'a> StoredValues<'_, 'a> {
    /// A value without a slot: a leaf, or a row or slice (a container).
    fn visit_value(&mut self, v: Value<'a>) -> Result<Option<u64>> {
        match v {
            Value::Dict(d @ Dict { row: Some(row), start, values, len, ids, .. }) => {
                let shape = if ids == 0 { self.shape(d.shape)? } else { self.key_list_shape(d)? };
                self.walk.open(Cursor::Row { start, cols: values, ids, len, row, shape, next: 0 }, NO_IDENTITY);
                Ok(None)
            }
            Value::List(seq) if seq.len > 0 => {
                self.walk.open(seq_cursor(seq, false), NO_IDENTITY);
                Ok(None)
            }
            Value::Column(c) => self.column(c, NO_IDENTITY),
            _ => self.leaf_or_key(v, 0).map(Some),
        }
    }

    /// A columnar list: strings are copied at once, tables and list columns
    /// through their column slots.
    fn column(&mut self, c: Column, identity: u64) -> Result<Option<u64>> {
        let src = self.src;
        match c.kind {
            ColumnKind::Strs { width, offs, units, .. } => {
                let (a, b) =
                    (read_u32(src.buf(), offs + 4 * c.first), read_u32(src.buf(), offs + 4 * (c.first + c.len)));
                if a > b {
                    return Err(FormatError::at(offs, "string column offsets decrease"));
                }
                let offsets = (0..=c.len)
                    .map(|i| read_u32(src.buf(), offs + 4 * (c.first + i)).wrapping_sub(a))
                    .collect::<Vec<u32>>();
                let u = width.unit();
                let data = src
                    .buf()
                    .get(units + a as usize * u..units + b as usize * u)
                    .ok_or_else(|| FormatError::at(offs, "string column offsets run past its units"))?;
                // Each string is checked as the reader checks it.
                for i in 0..c.len {
                    src.column_item(c, i)?;
                }
                let out = self.dst.str_column(width, &offsets, data);
                self.walk.keep(identity, out);
                Ok(Some(out))
            }
            // Copied as it is, each cell checked as the reader checks it.
            ColumnKind::Slots32 { cells } => {
                let mut out_cells = Vec::with_capacity(c.len);
                for i in 0..c.len {
                    src.column_item(c, i)?;
                    out_cells.push(read_u32(src.buf(), cells + 4 * (c.first + i)));
                }
                let out = self.dst.slot32_column(&out_cells);
                self.walk.keep(identity, out);
                Ok(Some(out))
            }
            // The dictionary's strings copied as any leaves are, the codes as
            // they are, each code checked as the reader checks it.
            ColumnKind::Codes { dict, cells } => {
                let mut out_dict = Vec::with_capacity(dict.len);
                for i in 0..dict.len {
                    let s = src.code_item(dict, i, dict.pos + 8 * i)?;
                    out_dict.push(self.leaf_or_key(s, 0)?);
                }
                let mut codes = Vec::with_capacity(c.len);
                for i in 0..c.len {
                    src.column_item(c, i)?;
                    codes.push(read_u32(src.buf(), cells + 4 * (c.first + i)));
                }
                let out = self.dst.str_code_column(&out_dict, &codes);
                self.walk.keep(identity, out);
                Ok(Some(out))
            }
            // An item of a ROWS_COLUMN: some of its table's rows.
            ColumnKind::Rows { cols, keyed, .. } if crate::columns::is_slice(&Value::Column(c)) => {
                self.walk.open(Cursor::SliceRows { cols, keyed, first: c.first, len: c.len, next: 0 }, identity);
                Ok(None)
            }
            ColumnKind::Rows { shape, keyed, .. } => {
                let shape_out = self.shape(shape)?;
                // A KEYED_TABLE's key lists are checked here, before its
                // columns are copied, and copied as they are when it is
                // written (a copy keeps the form it copies).
                let around = if keyed == 0 {
                    Around::Table { rows: c.len, shape: shape_out }
                } else {
                    crate::verify::check_key_lists(src, keyed, shape.len, c.len)?;
                    Around::KeyedTable { rows: c.len, shape: shape_out, keyed }
                };
                // A table's column slots follow its shape word.
                self.walk.open(
                    Cursor::Slots { start: c.start, pos: c.start + 16, len: shape.len, next: 0, around },
                    identity,
                );
                Ok(None)
            }
            ColumnKind::Lists { offs, child } => {
                // Checked here, before its items are copied, and again when it is written.
                list_offsets(src, offs, c.len, child.len())?;
                let cursor = Cursor::ListColumn {
                    start: c.start,
                    offs,
                    rows: c.len,
                    child_len: child.len(),
                    over_table: matches!(child, Child::Rows { .. }),
                    done: false,
                };
                self.walk.open(cursor, identity);
                Ok(None)
            }
        }
    }

    /// The value of a slot: a leaf's slot, or `None` after opening a container.
    fn visit_slot(&mut self, slot: u64, limit: usize) -> Result<Option<u64>> {
        let src = self.src;
        match slot & TAG_MASK {
            TAG_INT | TAG_CONST | TAG_SSTR | TAG_PAIR => {
                src.decode(slot, limit)?;
                return Ok(Some(slot));
            }
            _ => {}
        }
        if let Some(out) = self.recall_leaf(slot) {
            return Ok(Some(out));
        }
        // Object slots are offsets of 64 or more: never `NO_IDENTITY`.
        if let Some(out) = self.walk.recall(slot) {
            return Ok(Some(out));
        }
        let v = src.decode(slot, limit)?;
        match v {
            Value::List(seq) | Value::Tuple(seq) => {
                let tuple = matches!(v, Value::Tuple(_));
                if seq.len == 0 {
                    if self.walk.shares() && !tuple && slot & TAG_MASK == TAG_OBJ {
                        // An empty list with an address of its own may be shared.
                        let out = self.dst.empty_list_object();
                        self.walk.keep(slot, out);
                        return Ok(Some(out));
                    }
                    return Ok(Some(if tuple { SLOT_EMPTY_TUPLE } else { SLOT_EMPTY_LIST }));
                }
                self.walk.open(seq_cursor(seq, tuple), slot);
                Ok(None)
            }
            Value::Dict(dict) => {
                let around = if dict.ids == 0 {
                    Around::Dict { class: dict.class, shape: self.shape(dict.shape)? }
                } else {
                    // Copied with the same ids, which must then be distinct.
                    let ids = &self.src.buf()[dict.ids..dict.ids + dict.len];
                    check_ids_distinct(ids, &[]).map_err(|m| FormatError::at(dict.start, m))?;
                    if dict.len <= ID_DICT_MAX_KEYS {
                        Around::IdDict { table: self.shape(dict.shape)?, ids: dict.ids }
                    } else {
                        // More ids than this writer puts in one: a SHAPE of its own.
                        Around::Dict { class: dict.class, shape: self.keys_shape(dict)? }
                    }
                };
                self.walk
                    .open(Cursor::Slots { start: dict.start, pos: dict.values, len: dict.len, next: 0, around }, slot);
                Ok(None)
            }
            Value::Record(rec) => {
                let ty = self.rec_type(rec.ty)?;
                let around = Around::Record { ty };
                self.walk
                    .open(Cursor::Slots { start: rec.start, pos: rec.values, len: rec.len, next: 0, around }, slot);
                Ok(None)
            }
            Value::Column(c) => self.column(c, slot),
            Value::Set(_) | Value::FrozenSet(_) | Value::NumList(_) => {
                let out = self.leaf_or_key(v, 0)?;
                self.walk.keep(slot, out);
                Ok(Some(out))
            }
            Value::Str(_) | Value::Bytes(_) | Value::BigInt(_) => {
                // Immutable: one copy serves every reference it is found for.
                let out = self.leaf_or_key(v, 0)?;
                self.remember_leaf(slot, out);
                Ok(Some(out))
            }
            _ => self.leaf_or_key(v, 0).map(Some),
        }
    }

    #[inline]
    fn leaf_index(slot: u64) -> usize {
        crate::hash::place_of(slot, LEAF_CACHE.trailing_zeros())
    }

    #[inline]
    fn recall_leaf(&self, slot: u64) -> Option<u64> {
        if let Some(exact) = &self.copied.exact {
            // Slot 0 is refused by `decode`, never remembered.
            return exact.get(&slot).copied();
        }
        match self.copied.leaves.get(Self::leaf_index(slot)) {
            // Slot 0 marks an empty entry; in damaged bytes it is refused by `decode`.
            Some(&(s, out)) if s == slot && slot != 0 => Some(out),
            _ => None,
        }
    }

    fn remember_leaf(&mut self, slot: u64, out: u64) {
        if let Some(exact) = &mut self.copied.exact {
            exact.insert(slot, out);
            return;
        }
        if self.copied.leaves.is_empty() {
            // Slot 0 never names an object (offsets start at 64): it marks empty entries.
            self.copied.leaves = vec![(0, 0); LEAF_CACHE];
        }
        self.copied.leaves[Self::leaf_index(slot)] = (slot, out);
    }

    fn shape(&mut self, t: Table) -> Result<u64> {
        let key = t.start as u64;
        if let Some(&out) = self.copied.shapes.get(&key) {
            return Ok(out);
        }
        let (keys, hashes) = self.elements(t, 0)?;
        let out = self.dst.shape(&keys, &hashes);
        self.copied.shapes.insert(key, out);
        Ok(out)
    }

    /// A new SHAPE of the keys of the ID_DICT `d` (whose ids are distinct).
    fn keys_shape(&mut self, d: Dict) -> Result<u64> {
        let src = self.src;
        crate::verify::check_table(src, d.shape)?;
        let (mut slots, mut hashes) = (Vec::with_capacity(d.len), Vec::with_capacity(d.len));
        for i in 0..d.len {
            let slot = src.dict_key_slot(d, i)?;
            let v = src.decode(slot, d.shape.start)?;
            hashes.push(hash_value(src, v, 0)?);
            slots.push(self.key_at(slot, v, 1)?);
        }
        Ok(self.dst.shape(&slots, &hashes))
    }

    /// The container of a KEYED_TABLE of `rows` rows whose key-list word is
    /// at `keyed` in the source (checked when its cursor was opened), over
    /// the shape copied to `shape`.
    fn keyed_table(&self, rows: usize, shape: u64, keyed: usize) -> Result<Container> {
        let buf = self.src.buf();
        let lists = crate::columns::KeyLists::at(keyed, self.src.word(keyed)?)
            .ok_or_else(|| FormatError::at(keyed, "keyed table has no key list"))?;
        let off = |t: usize| lists.offset(buf, t);
        let key_lists = (0..lists.lists).map(|t| buf[lists.ids + off(t)..lists.ids + off(t + 1)].to_vec()).collect();
        let row_lists = buf[lists.rows..lists.rows + rows].to_vec();
        Ok(Container::KeyedTable { shape, lists: key_lists, row_lists })
    }

    /// The SHAPE of the keys of a KEYED_TABLE's row `d`, written once for
    /// each of the table's key lists. A list is known by where its ids lie
    /// and their count: an empty list starts where the next one does.
    fn key_list_shape(&mut self, d: Dict) -> Result<u64> {
        if let Some(&out) = self.copied.key_lists.get(&(d.ids, d.len)) {
            return Ok(out);
        }
        let out = self.keys_shape(d)?;
        self.copied.key_lists.insert((d.ids, d.len), out);
        Ok(out)
    }

    /// The ids of the source's ID_DICT whose ids are at `pos`.
    fn src_ids(&self, pos: usize) -> Ids {
        let buf = self.src.buf();
        let n = buf[pos - 1] as usize;
        let mut out = Ids::default();
        out.0[0] = n as u8;
        out.0[1..=n].copy_from_slice(&buf[pos..pos + n]);
        out
    }

    fn rec_type(&mut self, ty: RecType) -> Result<u64> {
        let key = ty.start as u64;
        if let Some(&out) = self.copied.shapes.get(&key) {
            return Ok(out);
        }
        let name = self.src.type_name(ty)?;
        let name = self.dst.str_units(name.width, name.units());
        let (fields, hashes) = self.elements(ty.fields, 0)?;
        let out = self.dst.rec_type(ty.flavor, name, &fields, &hashes);
        self.copied.shapes.insert(key, out);
        Ok(out)
    }

    /// Slots in `dst` and key hashes of the entries of a set or shape.
    fn elements(&mut self, t: Table, depth: usize) -> Result<(Vec<u64>, Vec<u64>)> {
        let src = self.src;
        // A copy gets a fresh index, so a damaged one would go unseen:
        // keys held twice or not stored canonically are refused here.
        crate::verify::check_table(src, t)?;
        let mut slots = Vec::with_capacity(t.len);
        let mut hashes = Vec::with_capacity(t.len);
        for i in 0..t.len {
            let slot = src.word(t.pos + 8 * i)?;
            let v = src.decode(slot, t.start)?;
            hashes.push(hash_value(src, v, 0)?);
            slots.push(self.key_at(slot, v, depth + 1)?);
        }
        Ok((slots, hashes))
    }

    /// Copies the key, element or tuple item `v` read from `slot`: a
    /// string, bytes or big int copied before is found again by its slot,
    /// as values are (`visit_slot`), so a key string the source holds once
    /// is held once in the copy too.
    fn key_at(&mut self, slot: u64, v: Value<'_>, depth: usize) -> Result<u64> {
        // An inline string (SSTR) is its slot: nothing to find again.
        let stored = matches!(v, Value::Str(_) | Value::Bytes(_) | Value::BigInt(_)) && slot & TAG_MASK != TAG_SSTR;
        if stored {
            if let Some(out) = self.recall_leaf(slot) {
                return Ok(out);
            }
        }
        let out = self.leaf_or_key(v, depth)?;
        if stored {
            self.remember_leaf(slot, out);
        }
        Ok(out)
    }

    /// Copies a scalar, or a hashable container (a key or set element:
    /// tuples and frozensets of bounded depth, copied recursively).
    fn leaf_or_key(&mut self, v: Value<'_>, depth: usize) -> Result<u64> {
        let src = self.src;
        if depth > MAX_KEY_DEPTH {
            return Err(FormatError::new(format!("key nested too deeply (limit {MAX_KEY_DEPTH})")));
        }
        Ok(match v {
            Value::None => SLOT_NONE,
            Value::Bool(b) => {
                if b {
                    SLOT_TRUE
                } else {
                    SLOT_FALSE
                }
            }
            Value::Int(i) => self.dst.int(i),
            Value::Pair(a, b) => make_pair_slot(a, b).expect("a decoded pair fits a pair slot"),
            Value::BigInt(b) => self.dst.int_bytes(b),
            Value::Float(f) => self.dst.float(f),
            Value::Complex(re, im) => self.dst.complex(re, im),
            Value::Str(s) => self.dst.str_units(s.width, s.units()),
            Value::Bytes(b) => self.dst.bytes_obj(b),
            Value::Set(t) | Value::FrozenSet(t) => {
                let (slots, hashes) = self.elements(t, depth)?;
                self.dst.set(matches!(v, Value::FrozenSet(_)), &slots, &hashes)
            }
            Value::Tuple(seq) | Value::List(seq) => {
                let mut slots = Vec::with_capacity(seq.len);
                for i in 0..seq.len {
                    spend(&mut self.steps)?;
                    let slot = src.seq_slot(seq, i)?;
                    slots.push(self.key_at(slot, src.decode(slot, seq.start)?, depth + 1)?);
                }
                self.dst.seq(matches!(v, Value::Tuple(_)), &slots)
            }
            Value::Ext(e) => self.dst.ext(e.kind, e.aux, e.payload),
            Value::NumList(l) => {
                let words = (0..l.len).map(|i| src.num_word(l, i)).collect::<Result<Vec<u64>>>()?;
                if l.int32 {
                    self.dst.int32_list(&words)
                } else {
                    self.dst.num_list(l.float, &words)
                }
            }
            Value::NdArray(a) => {
                let shape = (0..a.ndim()).map(|i| a.dim(i)).collect::<Vec<u64>>();
                self.dst.ndarray(a.data, a.itemsize, a.flags, &shape, a.dtype)
            }
            Value::Dict(_) => return Err(FormatError::new("a dict cannot be a set element or dict key")),
            Value::Column(_) => return Err(FormatError::new("a list cannot be a set element or dict key")),
            Value::Record(_) => return Err(FormatError::new("a record cannot be a set element or dict key")),
            Value::Extern(x) if depth > 0 => return Err(crate::extern_ref::unhashable(&x)),
            Value::Extern(x) => match &mut self.copied.externs {
                Some(p) if x.segment == p.own && x.end <= p.own_end => {
                    p.flags |= FLAG_SHARED | (x.flags & FLAG_CYCLIC);
                    x.slot
                }
                Some(p) if x.segment != p.own && p.allowed.contains(&x.segment) => {
                    p.kept.insert(x.segment);
                    self.dst.extern_ref(&x)
                }
                _ => {
                    self.copied.met_extern = true;
                    return Err(crate::extern_ref::unresolved(&x));
                }
            },
        })
    }
}

/// The `rows + 1` offsets at `offs` of a list column whose child holds
/// `child_len` items: the copy must be a valid column whatever the source holds.
fn list_offsets(src: &Reader<'_>, offs: usize, rows: usize, child_len: usize) -> Result<Vec<u32>> {
    let offsets = (0..=rows).map(|i| read_u32(src.buf(), offs + 4 * i)).collect::<Vec<u32>>();
    if offsets[0] != 0 || offsets[rows] as usize != child_len || offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err(FormatError::at(offs, "list column offsets do not run from 0 to its child's length"));
    }
    Ok(offsets)
}

fn seq_cursor(seq: Seq, tuple: bool) -> Cursor {
    Cursor::Slots { start: seq.start, pos: seq.pos, len: seq.len, next: 0, around: Around::Seq { tuple } }
}

/// Value `i` of row `row` of the table at `start` (column slots at `cols`):
/// the slot of a slot column's item (so that strings and containers are
/// found again), else the value itself, stashed.
fn row_item<'a>(
    src: &Reader<'a>,
    start: usize,
    cols: usize,
    row: usize,
    i: usize,
) -> Result<(Next, Option<Value<'a>>)> {
    let col = src.table_column(start, cols, i)?;
    match col {
        Value::List(seq) if seq.len > row => Ok((Next::Slot(src.seq_slot(seq, row)?, seq.start), None)),
        _ => {
            // Only `row_item` reads a row dict here: its shape is not needed.
            let d = Dict {
                start,
                shape: Table { start: 0, pos: 0, len: 0 },
                ids: 0,
                values: cols,
                len: 0,
                row: Some(row),
                class: dict_class::PLAIN,
            };
            Ok((Next::Stashed, Some(src.row_item(d, col, row, i)?)))
        }
    }
}
