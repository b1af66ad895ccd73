//! Copying a value from one region into a region being built, natively:
//! no Python objects, one pass over the source (the copy `compacted()`
//! makes, and the one `append` and `compact` make of views of other
//! regions).
//!
//! Strings and shapes are copied once per source object, whatever the
//! number of references to them. Containers are copied once when the source
//! shares them (SHARED flag) or the caller asks for sharing; otherwise each
//! reference is a fresh copy, within a budget of one slot per source word
//! (so crafted sharing cannot make the copy exponential). Cycles of a
//! cyclic source become forward references in the copy (see `ForwardRefs`).

use rustc_hash::FxHashMap as HashMap;

use crate::columns::{Column, ColumnKind};
use crate::error::{FormatError, Result};
use crate::format::*;
use crate::hash::{hash_value, spend, MAX_KEY_DEPTH};
use crate::reader::{Dict, Reader, RecType, Record, Seq, Table, Value};
use crate::writer::{Builder, ForwardRefs};

/// Entries of the cache of copied strings (a power of two).
const LEAF_CACHE: usize = 1 << 16;

/// The source key of a container without an address of its own (a
/// LIST_COLUMN's slice): never remembered, never met again.
const NO_ADDRESS: u64 = u64::MAX;

enum Frame {
    Seq {
        src: u64,
        seq: Seq,
        tuple: bool,
        next: usize,
        base: usize,
    },
    /// A TABLE row, copied as a dict.
    Row {
        dict: Dict,
        shape: u64,
        next: usize,
        base: usize,
    },
    /// A TABLE (`shape` set: its copied shape) or LIST_COLUMN: its column
    /// or child slots are copied, then the object around them.
    Columns {
        src: u64,
        col: Column,
        shape: Option<u64>,
        count: usize,
        next: usize,
        base: usize,
    },
    Dict {
        src: u64,
        dict: Dict,
        shape: u64,
        next: usize,
        base: usize,
    },
    Record {
        src: u64,
        rec: Record,
        ty: u64,
        next: usize,
        base: usize,
    },
}

/// The next thing to copy: a slot, or a value that has none (an item of a column).
enum Next<'a> {
    Slot(u64, usize),
    Value(Value<'a>),
}

/// What has been copied from one source region into one destination; keep
/// it across calls to copy several values of the same source into the same
/// destination with their common parts stored once.
pub struct Transplant {
    /// Share every container of the source that is referenced again.
    share: bool,
    /// Source offset -> destination slot of the shapes copied.
    shapes: HashMap<u64, u64>,
    /// Source slot -> destination slot of recently copied strings, bytes and
    /// big ints, direct-mapped: a repeated string is found in one probe of
    /// a table that stays in cache (an exact map of every string costs a
    /// cache miss per string). A string evicted before it recurs is copied
    /// again, which costs space, never correctness.
    leaves: Vec<(u64, u64)>,
    containers: HashMap<u64, u64>,
    /// Source containers being copied -> their depth on the stack.
    active: HashMap<u64, usize>,
    frames: Vec<Frame>,
    slots: Vec<u64>,
    forward: ForwardRefs,
    steps: usize,
    shared: bool,
}

impl Transplant {
    /// `share`: keep each container referenced several times as one copy
    /// (forced for sources with the SHARED flag).
    pub fn new(src: &Reader<'_>, share: bool, source_shared: bool) -> Transplant {
        Transplant {
            share: share || source_shared || src.cyclic(),
            shapes: HashMap::default(),
            leaves: Vec::new(),
            containers: HashMap::default(),
            active: HashMap::default(),
            frames: Vec::new(),
            slots: Vec::new(),
            forward: ForwardRefs::default(),
            steps: 0,
            shared: false,
        }
    }

    /// Whether a container was referenced again (the destination needs `FLAG_SHARED`).
    pub fn made_shared(&self) -> bool {
        self.shared
    }
    /// Whether forward references were written (the destination needs `FLAG_CYCLIC`).
    pub fn made_cycles(&self) -> bool {
        self.forward.made()
    }

    /// Copies the value of `slot` (found in a container starting at `limit`)
    /// from `src` into `dst` and returns its slot there.
    pub fn copy(&mut self, src: &Reader<'_>, dst: &mut Builder, slot: u64, limit: usize) -> Result<u64> {
        self.copy_next(src, dst, Next::Slot(slot, limit))
    }

    /// Copies a value that has no slot of its own (a row of a table, a
    /// slice of a list column) and returns its slot in `dst`.
    pub fn copy_value(&mut self, src: &Reader<'_>, dst: &mut Builder, v: Value<'_>) -> Result<u64> {
        self.copy_next(src, dst, Next::Value(v))
    }

    fn copy_next<'a>(&mut self, src: &Reader<'a>, dst: &mut Builder, first: Next<'a>) -> Result<u64> {
        // Each copy of a valid source visits at most `step_budget` values.
        self.steps = crate::hash::step_budget(src.buf().len());
        if let Some(s) = self.visit_next(src, dst, first)? {
            return Ok(s);
        }
        while let Some(top) = self.frames.last_mut() {
            let child = match top {
                Frame::Seq { seq, next, .. } if *next < seq.len => {
                    let (seq, i) = (*seq, *next);
                    *next += 1;
                    Some(Next::Slot(src.seq_slot(seq, i)?, seq.start))
                }
                Frame::Dict { dict, next, .. } if *next < dict.len => {
                    let (d, i) = (*dict, *next);
                    *next += 1;
                    Some(Next::Slot(src.word(d.values + 8 * i)?, d.start))
                }
                Frame::Record { rec, next, .. } if *next < rec.len => {
                    let (r, i) = (*rec, *next);
                    *next += 1;
                    Some(Next::Slot(src.word(r.values + 8 * i)?, r.start))
                }
                Frame::Row { dict, next, .. } if *next < dict.len => {
                    let (d, i) = (*dict, *next);
                    *next += 1;
                    Some(row_item(src, d, i)?)
                }
                Frame::Columns { col, count, next, .. } if *next < *count => {
                    let (c, i) = (*col, *next);
                    *next += 1;
                    // A table's column slots follow its shape word; a list column's child slot is its first word.
                    let pos =
                        if matches!(c.kind, ColumnKind::Rows { .. }) { c.start + 16 + 8 * i } else { c.start + 8 };
                    Some(Next::Slot(src.word(pos)?, c.start))
                }
                _ => None,
            };
            match child {
                Some(next) => {
                    if let Some(out) = self.visit_next(src, dst, next)? {
                        self.slots.push(out);
                    }
                }
                None => self.finish_frame(src, dst)?,
            }
        }
        Ok(self.slots.pop().expect("the copied value leaves one slot"))
    }

    fn finish_frame(&mut self, src: &Reader<'_>, dst: &mut Builder) -> Result<()> {
        let depth = self.frames.len() - 1;
        let (src_key, out, base) = match self.frames.pop().expect("a frame to finish") {
            Frame::Seq { src, tuple, base, .. } => (src, dst.seq(tuple, &self.slots[base..]), base),
            Frame::Dict { src, dict, shape, base, .. } => {
                (src, dst.dict_of_class(dict.class, shape, &self.slots[base..]), base)
            }
            Frame::Record { src, ty, base, .. } => (src, dst.record(ty, &self.slots[base..]), base),
            Frame::Row { shape, base, .. } => (NO_ADDRESS, dst.dict(shape, &self.slots[base..]), base),
            Frame::Columns { src: key, col, shape, base, .. } => {
                let out = match (shape, col.kind) {
                    (Some(shape), _) => dst.table_object(col.len, shape, &self.slots[base..]),
                    (None, ColumnKind::Lists { offs, child }) => {
                        let offsets = (0..=col.len).map(|i| read_u32(src.buf(), offs + 4 * i)).collect::<Vec<u32>>();
                        // The copy must be a valid column whatever the source holds.
                        if offsets[0] != 0
                            || offsets[col.len] as usize != child.len()
                            || offsets.windows(2).any(|w| w[0] > w[1])
                        {
                            return Err(FormatError::at(
                                offs,
                                "list column offsets do not run from 0 to its child's length",
                            ));
                        }
                        dst.list_column(self.slots[base], &offsets)
                    }
                    _ => unreachable!("a columns frame is a table or a list column"),
                };
                (key, out, base)
            }
        };
        self.forward.note(dst, out, &self.slots[base..]);
        self.forward.resolve(dst, depth, out);
        self.slots.truncate(base);
        if src_key != NO_ADDRESS {
            self.active.remove(&src_key);
            if self.share {
                self.containers.insert(src_key, out);
            }
        }
        self.slots.push(out);
        Ok(())
    }

    fn visit_next<'a>(&mut self, src: &Reader<'a>, dst: &mut Builder, next: Next<'a>) -> Result<Option<u64>> {
        match next {
            Next::Slot(slot, limit) => self.visit(src, dst, slot, limit),
            Next::Value(v) => self.visit_value(src, dst, v),
        }
    }

    /// A value without a slot: a leaf, or a row or slice (a frame is pushed).
    fn visit_value(&mut self, src: &Reader<'_>, dst: &mut Builder, v: Value<'_>) -> Result<Option<u64>> {
        spend(&mut self.steps)?;
        let base = self.slots.len();
        match v {
            Value::Dict(dict) if dict.row.is_some() => {
                let shape = self.shape(src, dst, dict.shape)?;
                self.frames.push(Frame::Row { dict, shape, next: 0, base });
                Ok(None)
            }
            Value::List(seq) if seq.len > 0 => {
                self.frames.push(Frame::Seq { src: NO_ADDRESS, seq, tuple: false, next: 0, base });
                Ok(None)
            }
            Value::Column(c) => self.column(src, dst, NO_ADDRESS, c),
            _ => self.leaf_or_key(src, dst, v, 0).map(Some),
        }
    }

    /// A columnar list: strings are copied at once, tables and list columns
    /// through a frame over their column slots.
    fn column(&mut self, src: &Reader<'_>, dst: &mut Builder, key: u64, c: Column) -> Result<Option<u64>> {
        let base = self.slots.len();
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
                Ok(Some(dst.str_column(width, &offsets, data)))
            }
            ColumnKind::Rows { shape, .. } => {
                let shape_out = self.shape(src, dst, shape)?;
                self.enter(key, self.frames.len());
                self.frames.push(Frame::Columns {
                    src: key,
                    col: c,
                    shape: Some(shape_out),
                    count: shape.len,
                    next: 0,
                    base,
                });
                Ok(None)
            }
            ColumnKind::Lists { .. } => {
                self.enter(key, self.frames.len());
                self.frames.push(Frame::Columns { src: key, col: c, shape: None, count: 1, next: 0, base });
                Ok(None)
            }
        }
    }

    /// A leaf's slot, or `None` after pushing a frame for a container.
    fn visit(&mut self, src: &Reader<'_>, dst: &mut Builder, slot: u64, limit: usize) -> Result<Option<u64>> {
        spend(&mut self.steps)?;
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
        if let Some(&out) = self.containers.get(&slot) {
            self.shared = true;
            return Ok(Some(out));
        }
        if let Some(&depth) = self.active.get(&slot) {
            self.shared = true;
            return Ok(Some(self.forward.placeholder(depth)));
        }
        let v = src.decode(slot, limit)?;
        let depth = self.frames.len();
        let base = self.slots.len();
        match v {
            Value::List(seq) | Value::Tuple(seq) => {
                let tuple = matches!(v, Value::Tuple(_));
                if seq.len == 0 {
                    if self.share && !tuple && slot & TAG_MASK == TAG_OBJ {
                        // An empty list with an address of its own may be shared.
                        let out = dst.empty_list_object();
                        self.containers.insert(slot, out);
                        return Ok(Some(out));
                    }
                    return Ok(Some(if tuple { SLOT_EMPTY_TUPLE } else { SLOT_EMPTY_LIST }));
                }
                self.enter(slot, depth);
                self.frames.push(Frame::Seq { src: slot, seq, tuple, next: 0, base });
                Ok(None)
            }
            Value::Dict(dict) => {
                let shape = self.shape(src, dst, dict.shape)?;
                self.enter(slot, depth);
                self.frames.push(Frame::Dict { src: slot, dict, shape, next: 0, base });
                Ok(None)
            }
            Value::Record(rec) => {
                let ty = self.rec_type(src, dst, rec.ty)?;
                self.enter(slot, depth);
                self.frames.push(Frame::Record { src: slot, rec, ty, next: 0, base });
                Ok(None)
            }
            Value::Column(c) => {
                let out = self.column(src, dst, slot, c)?;
                if let (Some(o), true) = (out, self.share) {
                    self.containers.insert(slot, o);
                }
                Ok(out)
            }
            Value::Set(_) | Value::FrozenSet(_) | Value::NumList(_) => {
                let out = self.leaf_or_key(src, dst, v, 0)?;
                if self.share {
                    self.containers.insert(slot, out);
                }
                Ok(Some(out))
            }
            Value::Str(_) | Value::Bytes(_) | Value::BigInt(_) => {
                // Immutable: one copy serves every reference it is found for.
                let out = self.leaf_or_key(src, dst, v, 0)?;
                self.remember_leaf(slot, out);
                Ok(Some(out))
            }
            _ => self.leaf_or_key(src, dst, v, 0).map(Some),
        }
    }

    #[inline]
    fn leaf_index(slot: u64) -> usize {
        (slot.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - LEAF_CACHE.trailing_zeros())) as usize
    }

    #[inline]
    fn recall_leaf(&self, slot: u64) -> Option<u64> {
        match self.leaves.get(Self::leaf_index(slot)) {
            Some(&(s, out)) if s == slot => Some(out),
            _ => None,
        }
    }

    fn remember_leaf(&mut self, slot: u64, out: u64) {
        if self.leaves.is_empty() {
            // Slot 0 never names an object (offsets start at 64): it marks empty entries.
            self.leaves = vec![(0, 0); LEAF_CACHE];
        }
        self.leaves[Self::leaf_index(slot)] = (slot, out);
    }

    fn enter(&mut self, slot: u64, depth: usize) {
        // Only a source that may hold cycles can lead back to a container
        // being copied; others need not pay for the bookkeeping.
        if self.share && slot != NO_ADDRESS {
            self.active.insert(slot, depth);
        }
    }

    fn shape(&mut self, src: &Reader<'_>, dst: &mut Builder, t: Table) -> Result<u64> {
        let key = t.start as u64;
        if let Some(&out) = self.shapes.get(&key) {
            return Ok(out);
        }
        let (keys, hashes) = self.elements(src, dst, t, 0)?;
        let out = dst.shape(&keys, &hashes);
        self.shapes.insert(key, out);
        Ok(out)
    }

    fn rec_type(&mut self, src: &Reader<'_>, dst: &mut Builder, ty: RecType) -> Result<u64> {
        let key = ty.start as u64;
        if let Some(&out) = self.shapes.get(&key) {
            return Ok(out);
        }
        let name = src.type_name(ty)?;
        let name = dst.str_units(name.width, name.units());
        let (fields, hashes) = self.elements(src, dst, ty.fields, 0)?;
        let out = dst.rec_type(ty.flavor, name, &fields, &hashes);
        self.shapes.insert(key, out);
        Ok(out)
    }

    /// Slots in `dst` and key hashes of the entries of a set or shape.
    fn elements(
        &mut self,
        src: &Reader<'_>,
        dst: &mut Builder,
        t: Table,
        depth: usize,
    ) -> Result<(Vec<u64>, Vec<u64>)> {
        // A copy gets a fresh index, so a damaged one would go unseen:
        // keys held twice or not stored canonically are refused here.
        crate::verify::check_table(src, t)?;
        let mut slots = Vec::with_capacity(t.len);
        let mut hashes = Vec::with_capacity(t.len);
        for i in 0..t.len {
            let v = src.table_item(t, i)?;
            hashes.push(hash_value(src, v, 0)?);
            slots.push(self.leaf_or_key(src, dst, v, depth + 1)?);
        }
        Ok((slots, hashes))
    }

    /// Copies a scalar, or a hashable container (a key or set element:
    /// tuples and frozensets of bounded depth, copied recursively).
    fn leaf_or_key(&mut self, src: &Reader<'_>, dst: &mut Builder, v: Value<'_>, depth: usize) -> Result<u64> {
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
            Value::Int(i) => dst.int(i),
            Value::Pair(a, b) => make_pair_slot(a, b).expect("a decoded pair fits a pair slot"),
            Value::BigInt(b) => dst.int_bytes(b),
            Value::Float(f) => dst.float(f),
            Value::Complex(re, im) => dst.complex(re, im),
            Value::Str(s) => dst.str_units(s.width, s.units()),
            Value::Bytes(b) => dst.bytes_obj(b),
            Value::Set(t) | Value::FrozenSet(t) => {
                let (slots, hashes) = self.elements(src, dst, t, depth)?;
                dst.set(matches!(v, Value::FrozenSet(_)), &slots, &hashes)
            }
            Value::Tuple(seq) | Value::List(seq) => {
                let mut slots = Vec::with_capacity(seq.len);
                for i in 0..seq.len {
                    spend(&mut self.steps)?;
                    slots.push(self.leaf_or_key(src, dst, src.seq_item(seq, i)?, depth + 1)?);
                }
                dst.seq(matches!(v, Value::Tuple(_)), &slots)
            }
            Value::Ext(e) => dst.ext(e.kind, e.aux, e.payload),
            Value::NumList(l) => {
                let words = (0..l.len).map(|i| src.word(l.pos + 8 * i)).collect::<Result<Vec<u64>>>()?;
                dst.num_list(l.float, &words)
            }
            Value::NdArray(a) => {
                let shape = (0..a.ndim()).map(|i| a.dim(i)).collect::<Vec<u64>>();
                dst.ndarray(a.data, a.itemsize, a.flags, &shape, a.dtype)
            }
            Value::Dict(_) => return Err(FormatError::new("a dict cannot be a set element or dict key")),
            Value::Column(_) => return Err(FormatError::new("a list cannot be a set element or dict key")),
            Value::Record(_) => return Err(FormatError::new("a record cannot be a set element or dict key")),
        })
    }
}

/// Value `i` of a table row: the slot of a slot column's item (so that
/// strings and containers are found again), else the value itself.
fn row_item<'a>(src: &Reader<'a>, d: Dict, i: usize) -> Result<Next<'a>> {
    let row = d.row.expect("a row");
    let col = src.table_column(d.start, d.values, i)?;
    match col {
        Value::List(seq) if seq.len > row => Ok(Next::Slot(src.seq_slot(seq, row)?, seq.start)),
        _ => Ok(Next::Value(src.dict_value(d, i)?)),
    }
}
