//! Parsed JSON as a source of the encoder: JSON text to region bytes with
//! no Python object made.
//!
//! It writes the bytes the compactor writes for what `json.loads` returns
//! for the same text, so `bale convert`, `bale.compact_json` and
//! `Writer.append_json` give the same file whichever way the JSON went
//! (tests compare them byte for byte over the shared corpora and generated
//! JSON). That fixes each choice below; see `Note [What json.loads shares]`.
//!
//! - Arrays: a TABLE when they are at least `TABLE_MIN_ROWS` objects with
//!   one key sequence whose values are scalars, arrays of scalars,
//!   objects (a table of them) or arrays of objects (a ROWS_COLUMN over
//!   the table of all of them), the tables below held by the same rules,
//!   `TABLE_MAX_NESTING` deep and within `layout::table_slack`;
//!   else an INT_LIST or FLOAT_LIST when all items are ints of 64 bits or
//!   all floats; else, for up to `SMALL_LEAF_SEQ` scalars, a list written at
//!   once; else a LIST through the walk.
//! - Objects: dicts whose SHAPE is found again by key sequence.

use std::collections::HashMap;
use std::convert::Infallible;

use rustc_hash::FxBuildHasher;

use crate::dict_class;
use crate::encoder::{Container, Source, Walk, NO_IDENTITY};
use crate::format::{make_int_slot, make_sstr_slot, Width, SLOT_EMPTY_LIST, SLOT_FALSE, SLOT_NONE, SLOT_TRUE};
use crate::id_dict::{Ids, KeyTable, ID_DICT_MARK};
use crate::json_doc::{JsonDoc, JsonNode, StrAt};
use crate::layout::{
    inline_str, key_signature, str_column_fits, str_column_is_smaller, str_slot_bytes, ColumnSlack,
    SHAPE_CACHE_MAX_KEYS, SMALL_LEAF_SEQ, TABLE_MAX_KEYS, TABLE_MAX_NESTING, TABLE_MIN_ROWS,
};
use crate::writer::Builder;

// Note [What json.loads shares]
// The compactor writes a string met again once only when the object is the
// same (its string cache is by address, for strings with more than one
// reference), and counts a string's payload in a column's size only when
// nothing else holds it. In what `json.loads` returns:
// - equal object keys are one object (its scanner keeps a memo of keys for
//   the call), so a key is written once: here, one slot per key id;
// - each string value is its own object with one reference, written each
//   time it occurs, with one exception: CPython makes every one-character
//   string of U+0080..U+00FF (and the empty and ASCII ones, which are
//   inline anyway) one shared object, keys and values alike: here,
//   `latin1_slots`.
// A dict's SHAPE is found again by its key sequence, which the compactor
// looks up by key addresses: with keys one object per content, that is the
// same as by key ids.

/// Where an open container is among its children.
#[derive(Clone, Copy)]
pub enum Cursor {
    /// Array items `doc.items[start + pos..start + len]` remain.
    Seq { start: usize, len: usize, pos: usize },
    /// Object entries `doc.entries[start + pos..start + len]` remain.
    Dict { start: usize, len: usize, pos: usize, shape: u64 },
}

/// A source that writes a parsed JSON text (see the module's notes).
pub struct JsonSource<'d> {
    doc: &'d JsonDoc,
    pub builder: Builder,
    walk: Walk<Cursor>,
    /// Slot of each key id written (0: not yet).
    key_slots: Vec<u64>,
    /// Slots of the one-character strings U+0080..U+00FF written (0: not yet).
    latin1_slots: [u64; 128],
    /// Shapes written, by key-id sequence (of up to `SHAPE_CACHE_MAX_KEYS` keys).
    shapes: HashMap<Box<[u32]>, u64, FxBuildHasher>,
    /// Shapes by `key_signature`, kept across items by a streaming writer.
    pub shapes_by_content: Option<HashMap<Box<[u8]>, u64, FxBuildHasher>>,
    /// The key ids of the object whose shape is being found (kept for its capacity).
    ids: Vec<u32>,
    /// Which objects become ID_DICTs, and their key table.
    key_table: KeyTable,
    /// The ids of the open ID_DICTs, innermost last.
    open_ids: Vec<Ids>,
    /// The numbers of a number list being written (kept for its capacity).
    words: Vec<u64>,
}

/// What the scalars of a table's column (or the items of its arrays) have
/// in common, as `tables.rs` in the binding counts them.
#[derive(Clone, Copy)]
enum Run {
    Empty,
    Ints,
    Floats,
    /// Strings of one width: their code-unit bytes, and the bytes they would take as slots.
    Strs {
        width: Width,
        unit_bytes: usize,
        as_slots: usize,
    },
    Mixed,
}

/// One column of a table being gathered.
struct Gather {
    /// Every cell is an array (`mixed`: some are, some are not).
    lists: bool,
    mixed: bool,
    /// With `lists`: the arrays' items are objects (`rows`), the rows of a
    /// table under a ROWS_COLUMN (`child`, its columns, once gathered).
    of_rows: bool,
    /// Every cell is an object (`rows`): the column is their table.
    of_dicts: bool,
    rows: Vec<u32>,
    child: Option<(Vec<Gather>, i64)>,
    run: Run,
    /// With `lists`: item offsets of the cells.
    offsets: Vec<u32>,
    /// The scalars: the items of the array cells, or the cells.
    count: usize,
}

impl Gather {
    fn new() -> Gather {
        Gather {
            lists: false,
            mixed: false,
            of_rows: false,
            of_dicts: false,
            rows: Vec::new(),
            child: None,
            run: Run::Empty,
            offsets: vec![0],
            count: 0,
        }
    }
}

impl Run {
    /// Adds one value; false when it is no scalar.
    #[inline]
    fn add(&mut self, node: JsonNode) -> bool {
        match node {
            JsonNode::Str(s) => {
                if let Run::Empty = self {
                    *self = Run::Strs { width: s.width, unit_bytes: 0, as_slots: 0 };
                }
                match self {
                    Run::Strs { width, unit_bytes, as_slots }
                        if *width == s.width && str_column_fits(s.width, *unit_bytes + s.len) =>
                    {
                        *unit_bytes += s.len;
                        *as_slots += str_slot_bytes(s.width, s.len, !is_latin1_char(s));
                    }
                    _ => *self = Run::Mixed,
                }
            }
            JsonNode::Int(_) => *self = if matches!(self, Run::Empty | Run::Ints) { Run::Ints } else { Run::Mixed },
            JsonNode::Float(_) => {
                *self = if matches!(self, Run::Empty | Run::Floats) { Run::Floats } else { Run::Mixed }
            }
            JsonNode::BigInt { .. } | JsonNode::Null | JsonNode::Bool(_) => *self = Run::Mixed,
            JsonNode::Array { .. } | JsonNode::Object { .. } => return false,
        }
        true
    }
}

/// Whether a string is one character of U+0080..U+00FF (one object in CPython).
#[inline(always)]
fn is_latin1_char(s: StrAt) -> bool {
    s.width == Width::Latin1 && s.len == 1
}

impl<'d> JsonSource<'d> {
    /// A source writing `doc` into `builder`.
    pub fn new(doc: &'d JsonDoc, builder: Builder) -> JsonSource<'d> {
        JsonSource {
            doc,
            builder,
            walk: Walk::new(false),
            key_slots: vec![0; doc.keys.len()],
            latin1_slots: [0; 128],
            shapes: HashMap::default(),
            shapes_by_content: None,
            ids: Vec::new(),
            key_table: KeyTable::default(),
            open_ids: Vec::new(),
            words: Vec::new(),
        }
    }

    /// Writes the document; returns its root's slot.
    pub fn run(&mut self) -> u64 {
        match crate::encoder::encode(self, self.doc.root) {
            Ok(slot) => slot,
            Err(never) => match never {},
        }
    }

    /// The slot of a string value (see `Note [What json.loads shares]`).
    #[inline]
    fn str_slot(&mut self, s: StrAt) -> u64 {
        let units = self.doc.str_units(s);
        if inline_str(s.width, s.len) {
            return make_sstr_slot(units);
        }
        if is_latin1_char(s) {
            return self.latin1_slot(units[0]);
        }
        self.builder.str_units(s.width, units)
    }

    fn latin1_slot(&mut self, c: u8) -> u64 {
        latin1_slot_in(&mut self.builder, &mut self.latin1_slots, c)
    }

    /// The slot of key `id`, written once.
    fn key_slot(&mut self, id: u32) -> u64 {
        let s = self.doc.keys[id as usize].str;
        key_slot_in(&mut self.builder, &mut self.key_slots, &mut self.latin1_slots, self.doc, s, id)
    }

    /// A leaf's slot; `None` for an array or object.
    #[inline]
    fn scalar_slot(&mut self, node: JsonNode) -> Option<u64> {
        Some(match node {
            JsonNode::Null => SLOT_NONE,
            JsonNode::Bool(true) => SLOT_TRUE,
            JsonNode::Bool(false) => SLOT_FALSE,
            JsonNode::Int(v) => self.builder.int(v),
            JsonNode::BigInt { start, len } => self.builder.int_bytes(self.doc.big_int(start, len)),
            JsonNode::Float(f) => self.builder.float(f),
            JsonNode::Str(s) => self.str_slot(s),
            JsonNode::Array { .. } | JsonNode::Object { .. } => return None,
        })
    }

    /// The SHAPE of the keys of `entries`: found again, or written.
    fn shape(&mut self, entries: &[(u32, u32)]) -> u64 {
        match self.find_shape(entries) {
            Ok(s) => s,
            Err(signature) => self.write_shape(entries.len(), signature),
        }
    }

    /// The SHAPE written for this key sequence before, else the key
    /// signature to write it under (`self.ids` holds the key ids).
    fn find_shape(&mut self, entries: &[(u32, u32)]) -> Result<u64, Option<Box<[u8]>>> {
        let n = entries.len();
        self.ids.clear();
        self.ids.extend(entries.iter().map(|&(k, _)| k));
        if n <= SHAPE_CACHE_MAX_KEYS {
            if let Some(&s) = self.shapes.get(&self.ids[..]) {
                return Ok(s);
            }
        }
        let doc = self.doc;
        let signature = match &self.shapes_by_content {
            Some(_) if n <= SHAPE_CACHE_MAX_KEYS => Some(key_signature(self.ids.iter().map(|&k| {
                let s = doc.keys[k as usize].str;
                (s.width, doc.str_units(s))
            }))),
            _ => None,
        };
        match signature.as_ref().and_then(|sig| self.shapes_by_content.as_ref()?.get(sig).copied()) {
            Some(s) => {
                self.remember_shape(n, s);
                Ok(s)
            }
            None => Err(signature),
        }
    }

    /// Writes the SHAPE of the key ids in `self.ids` (found by `find_shape`).
    fn write_shape(&mut self, n: usize, signature: Option<Box<[u8]>>) -> u64 {
        let doc = self.doc;
        let ids = std::mem::take(&mut self.ids);
        let slots: Vec<u64> = ids.iter().map(|&k| self.key_slot(k)).collect();
        let hashes: Vec<u64> = ids.iter().map(|&k| doc.keys[k as usize].hash).collect();
        self.ids = ids;
        let s = self.builder.shape(&slots, &hashes);
        self.key_table.shape_written();
        if let (Some(map), Some(sig)) = (&mut self.shapes_by_content, signature) {
            map.insert(sig, s);
        }
        self.remember_shape(n, s);
        s
    }

    fn remember_shape(&mut self, n: usize, s: u64) {
        if n <= SHAPE_CACHE_MAX_KEYS {
            self.shapes.insert(self.ids.clone().into_boxed_slice(), s);
        }
    }

    /// How an object's keys are written (see `id_dict::KeyTable`): its
    /// SHAPE, or (marked by `ID_DICT_MARK`) the key table of an ID_DICT
    /// whose ids are pushed on `open_ids`.
    fn dict_keys(&mut self, entries: &[(u32, u32)]) -> u64 {
        let signature = match self.find_shape(entries) {
            Ok(s) => return s,
            Err(signature) => signature,
        };
        if self.key_table.wants(entries.len()) {
            let doc = self.doc;
            let keys = entries.iter().map(|&(k, _)| {
                let s = doc.keys[k as usize].str;
                (s.width, doc.str_units(s))
            });
            let (builder, key_slots, latin1_slots) = (&mut self.builder, &mut self.key_slots, &mut self.latin1_slots);
            let found = self.key_table.ids_of::<Infallible>(keys, |i| {
                let k = entries[i].0;
                let key = &doc.keys[k as usize];
                Ok((key_slot_in(builder, key_slots, latin1_slots, doc, key.str, k), key.hash))
            });
            if let Ok(Some(ids)) = found {
                self.open_ids.push(ids);
                return self.key_table.table(&mut self.builder) | ID_DICT_MARK;
            }
        }
        self.write_shape(entries.len(), signature)
    }

    /// All ints of 64 bits, or all floats, as raw numbers; `None` (nothing
    /// written) otherwise.
    fn number_list(&mut self, items: &[u32]) -> Option<u64> {
        let doc = self.doc;
        let float = match doc.node(items[0]) {
            JsonNode::Int(_) => false,
            JsonNode::Float(_) => true,
            _ => return None,
        };
        self.words.clear();
        for &i in items {
            match doc.node(i) {
                JsonNode::Int(v) if !float => self.words.push(v as u64),
                JsonNode::Float(f) if float => self.words.push(f.to_bits()),
                _ => return None,
            }
        }
        let words = std::mem::take(&mut self.words);
        let slot = self.builder.num_list(float, &words);
        self.words = words;
        Some(slot)
    }

    /// Up to `SMALL_LEAF_SEQ` scalars (ints that fit a slot, strings,
    /// floats, null, booleans) written at once; `None` (nothing written)
    /// when an item is anything else.
    fn small_leaf_seq(&mut self, items: &[u32]) -> Option<u64> {
        let doc = self.doc;
        let mut slots = [0u64; SMALL_LEAF_SEQ];
        // Classified first, so that nothing is written for a list that is no leaf.
        for (slot, &i) in slots.iter_mut().zip(items) {
            *slot = match doc.node(i) {
                JsonNode::Int(v) => make_int_slot(v)?,
                JsonNode::Null => SLOT_NONE,
                JsonNode::Bool(true) => SLOT_TRUE,
                JsonNode::Bool(false) => SLOT_FALSE,
                JsonNode::Str(_) | JsonNode::Float(_) => 0,
                _ => return None,
            };
        }
        for (slot, &i) in slots.iter_mut().zip(items) {
            match doc.node(i) {
                JsonNode::Str(s) => *slot = self.str_slot(s),
                JsonNode::Float(f) => *slot = self.builder.float(f),
                _ => {}
            }
        }
        Some(self.builder.seq(false, &slots[..items.len()]))
    }

    /// The value of column `j` of the row `row` (an object of the table's keys).
    #[inline]
    fn cell(&self, row: u32, j: usize) -> u32 {
        match self.doc.node(row) {
            JsonNode::Object { start, .. } => self.doc.entries[start + j].1,
            _ => unreachable!("a table's rows are objects"),
        }
    }

    /// The scalars of column `j`: the items of its array cells, or its cells.
    fn column_scalars(&self, rows: &[u32], j: usize, lists: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(rows.len());
        for &row in rows {
            let c = self.cell(row, j);
            match self.doc.node(c) {
                JsonNode::Array { start, len } if lists => out.extend_from_slice(self.doc.array_items(start, len)),
                _ => out.push(c),
            }
        }
        out
    }

    /// Writes `rows` as a TABLE when they are objects of one key sequence
    /// whose values are scalars, arrays of scalars, objects or arrays of
    /// objects that make a table; `None`, having written nothing, otherwise.
    fn table(&mut self, rows: &[u32]) -> Option<u64> {
        // The whole tree of tables is gathered before a byte is written.
        let columns = self.gather(rows, 0)?;
        Some(self.write_table(rows, columns))
    }

    /// Writes a gathered table: its SHAPE, its columns, the TABLE object.
    fn write_table(&mut self, rows: &[u32], columns: Vec<Gather>) -> u64 {
        let doc = self.doc;
        let JsonNode::Object { start, len: k } = doc.node(rows[0]) else { unreachable!("a table's rows are objects") };
        let shape = self.shape(doc.object_entries(start, k));
        let mut cols = Vec::with_capacity(k);
        for (j, mut g) in columns.into_iter().enumerate() {
            let slot = if let Some((child, _)) = g.child.take() {
                // The table of the objects (or the arrays' objects), then
                // for arrays the ROWS_COLUMN (the compactor's order).
                let table = self.write_table(&g.rows, child);
                if g.of_dicts {
                    table
                } else {
                    self.builder.rows_column(table, &g.offsets)
                }
            } else if g.mixed {
                let cells: Vec<u32> = rows.iter().map(|&r| self.cell(r, j)).collect();
                self.slot_column(&cells, true)
            } else if !g.lists {
                let cells: Vec<u32> = rows.iter().map(|&r| self.cell(r, j)).collect();
                self.scalars(g.run, &cells, true)
            } else {
                let child = if g.count == 0 {
                    SLOT_EMPTY_LIST
                } else {
                    let items = self.column_scalars(rows, j, true);
                    self.scalars(g.run, &items, false)
                };
                self.builder.list_column(child, &g.offsets)
            };
            cols.push(slot);
        }
        self.builder.table_object(rows.len(), shape, &cols)
    }

    /// The columns of `rows`, a table `level` tables below the outermost,
    /// when they are objects of one key sequence whose values columns hold.
    fn gather(&self, rows: &[u32], level: usize) -> Option<Vec<Gather>> {
        let doc = self.doc;
        let JsonNode::Object { start, len: k } = doc.node(rows[0]) else { return None };
        if level > TABLE_MAX_NESTING || k == 0 || k > TABLE_MAX_KEYS || rows.len() > u32::MAX as usize {
            return None;
        }
        let keys = doc.object_entries(start, k);
        let mut columns: Vec<Gather> = (0..k).map(|_| Gather::new()).collect();
        for (i, &row) in rows.iter().enumerate() {
            let JsonNode::Object { start, len } = doc.node(row) else { return None };
            if len != k {
                return None;
            }
            let entries = doc.object_entries(start, len);
            if entries.iter().zip(keys).any(|(a, b)| a.0 != b.0) {
                return None;
            }
            for (g, &(_, value)) in columns.iter_mut().zip(entries) {
                let node = doc.node(value);
                let list = matches!(node, JsonNode::Array { .. });
                if i == 0 {
                    g.of_dicts = matches!(node, JsonNode::Object { .. });
                }
                if g.of_dicts {
                    if !matches!(node, JsonNode::Object { .. }) {
                        return None;
                    }
                    g.rows.push(value);
                    continue;
                }
                if i == 0 {
                    g.lists = list;
                } else if list != g.lists {
                    // A scalar among arrays of objects: no column holds both.
                    if g.of_rows {
                        return None;
                    }
                    g.mixed = true;
                }
                if let JsonNode::Array { start, len } = node {
                    let items = doc.array_items(start, len);
                    // The column's first item an object: its arrays are rows.
                    if !g.of_rows && len > 0 && matches!(g.run, Run::Empty) && !g.mixed {
                        g.of_rows = matches!(doc.node(items[0]), JsonNode::Object { .. });
                    }
                    if g.of_rows {
                        if !items.iter().all(|&item| matches!(doc.node(item), JsonNode::Object { .. })) {
                            return None;
                        }
                        g.rows.extend_from_slice(items);
                    } else {
                        for &item in items {
                            if !g.run.add(doc.node(item)) {
                                return None;
                            }
                        }
                    }
                    g.count += len;
                    let total = *g.offsets.last().unwrap() as usize + len;
                    if total > u32::MAX as usize {
                        return None;
                    }
                    g.offsets.push(total as u32);
                } else {
                    if !g.run.add(node) {
                        return None;
                    }
                    g.count += 1;
                }
            }
        }
        // Then the tables of the columns of objects or of arrays of
        // objects, in key order, and what the tree's bytes leave of the
        // readers' budget.
        for g in columns.iter_mut().filter(|g| g.of_rows | g.of_dicts) {
            let child = self.gather(&g.rows, level + 1)?;
            let slack = table_slack(&child, g.rows.len());
            g.child = Some((child, slack));
        }
        (table_slack(&columns, rows.len()) >= 0).then_some(columns)
    }

    /// Scalars: raw numbers (a table's own column of ints, `column`, as
    /// 32-bit ints when they all fit); strings as a STR_COLUMN when that is
    /// smaller than slots; else slots.
    fn scalars(&mut self, run: Run, nodes: &[u32], column: bool) -> u64 {
        let doc = self.doc;
        match run {
            Run::Ints | Run::Floats => {
                let words: Vec<u64> = nodes
                    .iter()
                    .map(|&i| match doc.node(i) {
                        JsonNode::Int(v) => v as u64,
                        JsonNode::Float(f) => f.to_bits(),
                        _ => unreachable!("a run of numbers"),
                    })
                    .collect();
                match run {
                    Run::Ints if column => self.builder.int_column(&words),
                    _ => self.builder.num_list(matches!(run, Run::Floats), &words),
                }
            }
            Run::Strs { width, unit_bytes, as_slots } if str_column_is_smaller(nodes.len(), unit_bytes, as_slots) => {
                let mut units = Vec::with_capacity(unit_bytes);
                let mut offsets = Vec::with_capacity(nodes.len() + 1);
                offsets.push(0u32);
                for &i in nodes {
                    let JsonNode::Str(s) = doc.node(i) else { unreachable!("a run of strings") };
                    units.extend_from_slice(doc.str_units(s));
                    offsets.push((units.len() / width.unit()) as u32);
                }
                self.builder.str_column(width, &offsets, &units)
            }
            _ => self.slot_column(nodes, column),
        }
    }

    /// Cells as a list of slots (arrays of scalars as lists); a table's own
    /// column (`column`) of null, booleans and small ints as a SLOT32_COLUMN,
    /// of repeated strings as a STR_CODE_COLUMN (`Builder::slot_column`).
    fn slot_column(&mut self, nodes: &[u32], column: bool) -> u64 {
        let doc = self.doc;
        let mut slots = Vec::with_capacity(nodes.len());
        for &i in nodes {
            let slot = match doc.node(i) {
                JsonNode::Array { start, len } => {
                    let items = doc.array_items(start, len);
                    match if len == 0 { None } else { self.number_list(items) } {
                        Some(s) => s,
                        None => {
                            let inner: Vec<u64> =
                                items.iter().map(|&x| self.scalar_slot(doc.node(x)).expect("a scalar")).collect();
                            self.builder.seq(false, &inner)
                        }
                    }
                }
                node => self.scalar_slot(node).expect("a scalar"),
            };
            slots.push(slot);
        }
        // A table's own column of null, booleans, small ints or repeated
        // strings: 4 bytes a cell.
        if column {
            self.builder.slot_column(&slots)
        } else {
            self.builder.seq(false, &slots)
        }
    }
}

/// `layout::table_slack` of gathered columns (the compactor's count).
fn table_slack(columns: &[Gather], n: usize) -> i64 {
    let column = |g: &Gather| match &g.child {
        Some((_, slack)) if g.of_dicts => ColumnSlack::Table { slack: *slack },
        Some((_, slack)) => ColumnSlack::Rows { lists: n, slack: *slack },
        None if g.lists && !g.mixed => ColumnSlack::Lists { lists: n, items: g.count },
        None => ColumnSlack::Scalars { cells: n },
    };
    crate::layout::table_slack(n, columns.iter().map(column))
}

impl Source for JsonSource<'_> {
    type Node = u32;
    type Cursor = Cursor;
    type Error = Infallible;

    #[inline(always)]
    fn parts(&mut self) -> (&mut Walk<Cursor>, &mut Builder) {
        (&mut self.walk, &mut self.builder)
    }

    fn visit(&mut self, node: u32) -> Result<Option<u64>, Infallible> {
        let doc = self.doc;
        match doc.node(node) {
            JsonNode::Array { start, len } => {
                if len == 0 {
                    return Ok(Some(SLOT_EMPTY_LIST));
                }
                let items = doc.array_items(start, len);
                if len >= TABLE_MIN_ROWS {
                    if let Some(slot) = self.table(items) {
                        return Ok(Some(slot));
                    }
                }
                if let Some(slot) = self.number_list(items) {
                    return Ok(Some(slot));
                }
                if len <= SMALL_LEAF_SEQ {
                    if let Some(slot) = self.small_leaf_seq(items) {
                        return Ok(Some(slot));
                    }
                }
                self.walk.open(Cursor::Seq { start, len, pos: 0 }, NO_IDENTITY);
                Ok(None)
            }
            JsonNode::Object { start, len } => {
                let shape = self.dict_keys(doc.object_entries(start, len));
                self.walk.open(Cursor::Dict { start, len, pos: 0, shape }, NO_IDENTITY);
                Ok(None)
            }
            leaf => Ok(self.scalar_slot(leaf)),
        }
    }

    #[inline]
    fn next_child(&mut self) -> Result<Option<u32>, Infallible> {
        let doc = self.doc;
        Ok(match self.walk.top() {
            Some(Cursor::Seq { start, len, pos }) if *pos < *len => {
                *pos += 1;
                Some(doc.items[*start + *pos - 1])
            }
            Some(Cursor::Dict { start, len, pos, .. }) if *pos < *len => {
                *pos += 1;
                Some(doc.entries[*start + *pos - 1].1)
            }
            _ => None,
        })
    }

    fn container(&self, cursor: &Cursor) -> Result<Container, Infallible> {
        Ok(match *cursor {
            Cursor::Seq { .. } => Container::Seq { tuple: false },
            Cursor::Dict { shape, .. } if shape & ID_DICT_MARK != 0 => {
                // The innermost open ID_DICT's ids are the last pushed.
                Container::IdDict {
                    table: shape & !ID_DICT_MARK,
                    ids: *self.open_ids.last().expect("pushed when opened"),
                }
            }
            Cursor::Dict { shape, .. } => Container::Dict { class: dict_class::PLAIN, shape },
        })
    }

    fn closed(&mut self, cursor: Cursor, _slot: u64, _kept: bool) {
        if let Cursor::Dict { shape, .. } = cursor {
            if shape & ID_DICT_MARK != 0 {
                self.open_ids.pop();
            }
        }
    }
}

/// The slot of key `id` (whose string is `s`), written once into `builder`.
fn key_slot_in(
    builder: &mut Builder,
    key_slots: &mut [u64],
    latin1_slots: &mut [u64; 128],
    doc: &JsonDoc,
    s: StrAt,
    id: u32,
) -> u64 {
    let units = doc.str_units(s);
    if inline_str(s.width, s.len) {
        return make_sstr_slot(units);
    }
    if is_latin1_char(s) {
        return latin1_slot_in(builder, latin1_slots, units[0]);
    }
    let at = id as usize;
    if key_slots[at] == 0 {
        key_slots[at] = builder.str_units(s.width, units);
    }
    key_slots[at]
}

/// The slot of the one-character string `c` (U+0080..U+00FF), written once.
fn latin1_slot_in(builder: &mut Builder, latin1_slots: &mut [u64; 128], c: u8) -> u64 {
    let at = (c - 0x80) as usize;
    if latin1_slots[at] == 0 {
        latin1_slots[at] = builder.str_units(Width::Latin1, &[c]);
    }
    latin1_slots[at]
}

/// Writes JSON text as a fresh region's bytes (header and checksum
/// included); `Err` when [`crate::json_doc::parse`] refuses the text.
pub fn json_region(text: &[u8], max_int_digits: usize) -> Result<Vec<u8>, crate::json_doc::JsonInputError> {
    let doc = crate::json_doc::parse(text, max_int_digits)?;
    let mut source = JsonSource::new(&doc, Builder::with_capacity(text.len() + 4096));
    let root = source.run();
    Ok(source.builder.finish(root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{KIND_TABLE, OFF_ROOT};
    use crate::Region;

    fn region(text: &str) -> Vec<u8> {
        json_region(text.as_bytes(), 4300).unwrap()
    }

    #[test]
    fn every_region_written_verifies() {
        for text in [
            "null",
            "[]",
            "{}",
            r#"[1, 2.5, "x", null, true]"#,
            r#"{"a": [1, 2, 3], "b": {"c": "caf\u00e9 au lait"}}"#,
            r#"[{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}, {"id": 3, "tags": ["c"]}, {"id": 4, "tags": []}]"#,
            r#"[{"k": "a long string value"}, {"k": 2}, {"k": null}, {"k": [1, "x"]}]"#,
            "[123456789012345678901234567890, -123456789012345678901234567890]",
            r#"[["\u00e9", "\u00e9"], {"\u00e9": "\u00e9"}]"#,
        ] {
            let bytes = region(text);
            Region::new_verified(&bytes).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn records_of_one_key_sequence_are_a_table() {
        let text = r#"[{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 3, "b": "z"}, {"a": 4, "b": "w"}]"#;
        let bytes = region(text);
        Region::new_verified(&bytes).unwrap();
        let root = u64::from_le_bytes(bytes[OFF_ROOT..OFF_ROOT + 8].try_into().unwrap()) as usize;
        assert_eq!(bytes[root], KIND_TABLE);
    }

    #[test]
    fn a_key_met_again_is_written_once() {
        let one = region(r#"[{"a long key name": 1}, {"a long key name": 2, "b": 3}]"#);
        let count = one.windows(b"a long key name".len()).filter(|w| w == b"a long key name").count();
        assert_eq!(count, 1);
    }

    #[test]
    fn a_string_value_met_again_is_written_each_time_as_json_loads_makes_it() {
        let bytes = region(r#"["a long string value", "a long string value", "a long string value", {}]"#);
        let count = bytes.windows(19).filter(|w| *w == b"a long string value").count();
        assert_eq!(count, 3);
    }
}
