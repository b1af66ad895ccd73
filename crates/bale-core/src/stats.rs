//! What a region holds: counts and bytes per kind of value, and the shapes
//! its dicts use (for `bale info`).

use std::collections::{BTreeMap, HashMap};

use crate::columns::{offsets_size, Child, ColumnKind};
use crate::error::Result;
use crate::format::*;
use crate::reader::{Reader, Table, Value};

/// Counts of values and the bytes they occupy, by kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KindStats {
    /// Distinct stored objects (inline values count once per slot).
    pub count: u64,
    /// Bytes in the region: payloads, headers and indexes (inline values: 0).
    pub bytes: u64,
}

#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub kinds: BTreeMap<&'static str, KindStats>,
    /// Shape offset -> number of dicts using it.
    pub shapes: HashMap<usize, u64>,
    /// Slots reachable from the root (references included).
    pub slots: u64,
    /// Record types in the order first met: qualified name, flavor, field names.
    pub types: Vec<TypeInfo>,
    /// What EXTERN objects name (a store's value): `(segment, end, flags,
    /// slot)` of each, once.
    pub externs: std::collections::BTreeSet<(u32, u64, u32, u64)>,
}

impl Stats {
    /// The segments EXTERN objects name.
    pub fn extern_segments(&self) -> std::collections::BTreeSet<u32> {
        self.externs.iter().map(|x| x.0).collect()
    }
}

/// One entry of a region's type table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    pub name: String,
    pub flavor: u64,
    pub fields: Vec<String>,
    /// Records of this type reachable from the root.
    pub count: u64,
}

/// The record types reachable from `root`, each once (the region's type table).
pub fn record_types(r: &Reader<'_>, root: u64) -> Result<Vec<TypeInfo>> {
    Ok(region_stats(r, root)?.types)
}

/// One bit per 8-byte word of the region: the stored objects the walk has
/// counted, by their first word (1/64 of the region's size, whatever the
/// number of objects).
struct Visited(Vec<u64>);

impl Visited {
    fn new(region_len: usize) -> Visited {
        // Zeroed memory from the allocator: pages are touched only where a bit is set.
        Visited(vec![0; region_len / 8 / 64 + 1])
    }
    /// Marks the object starting at byte `off`; false when it was marked before.
    #[inline]
    fn first_visit(&mut self, off: usize) -> bool {
        let (w, b) = (off / 8 / 64, 1u64 << (off / 8 % 64));
        let was = self.0[w] & b != 0;
        self.0[w] |= b;
        !was
    }
}

/// Where the stored object that `slot` references starts (`None` for an
/// inline value). Called after `decode` checked the slot.
#[inline]
fn stored_at(slot: u64) -> Option<usize> {
    match slot & TAG_MASK {
        TAG_OBJ => Some(slot as usize),
        TAG_STR => Some(((slot >> 21) << 3) as usize),
        TAG_LIST | TAG_TUPLE if slot >> 3 != 0 => Some(((slot >> 19) << 3) as usize),
        _ => None,
    }
}

/// Slots still to walk: `n` slot words at `pos`, in a container that starts
/// at `limit`. A container's slots are one entry, so the stack holds at most
/// a few entries per level of nesting, however long the containers are.
struct Run {
    pos: usize,
    n: usize,
    limit: usize,
}

fn push_run(stack: &mut Vec<Run>, pos: usize, n: usize, limit: usize) {
    if n > 0 {
        stack.push(Run { pos, n, limit });
    }
}

// The kinds `region_stats` counts, by the index its walk tallies them
// under (their names in NAMES).
const K_FLOAT_LIST: usize = 0;
const K_INT_LIST: usize = 1;
const K_NDARRAY: usize = 2;
const K_RECORD: usize = 3;
const K_NONE_BOOL: usize = 4;
const K_PAIR: usize = 5;
const K_INT_INLINE: usize = 6;
const K_INT64: usize = 7;
const K_BIGINT: usize = 8;
const K_FLOAT: usize = 9;
const K_COMPLEX: usize = 10;
const K_STR_INLINE: usize = 11;
const K_STR: usize = 12;
const K_BYTES: usize = 13;
const K_LIST: usize = 14;
const K_TUPLE: usize = 15;
const K_SET: usize = 16;
const K_FROZENSET: usize = 17;
const K_TABLE: usize = 18;
const K_STR_COLUMN: usize = 19;
const K_LIST_COLUMN: usize = 20;
const K_DICT: usize = 21;
const K_ID_DICT: usize = 22;
const K_EXTERN: usize = 23;
const K_ROWS_COLUMN: usize = 24;
const K_KEYED_TABLE: usize = 25;
const K_INT32_LIST: usize = 26;
const K_SLOT32_COLUMN: usize = 27;
const K_STR_CODE_COLUMN: usize = 28;
const NAMES: [&str; 29] = [
    "lists (floats, raw)",
    "lists (ints, raw)",
    "numpy arrays",
    "records",
    "None and bools",
    "tuples (inline int pairs)",
    "ints (inline)",
    "ints (64-bit objects)",
    "ints (big)",
    "floats",
    "complex numbers",
    "strings (inline)",
    "strings",
    "bytes",
    "lists",
    "tuples",
    "sets",
    "frozensets",
    "tables (lists of dicts, by column)",
    "string columns",
    "list columns",
    "dicts",
    "dicts (key ids)",
    "references to other segments",
    "row columns (lists of dicts, over a table)",
    "keyed tables (lists of dicts of several key sequences, by column)",
    "lists (ints, raw 32-bit)",
    "small-scalar columns (None, bools, small ints; 32-bit)",
    "string-code columns (repeated strings; 32-bit codes)",
];

/// Walks everything reachable from `root`, each stored object once.
///
/// Objects are told apart by the word they start at (a bitmap of 1/64 of
/// the region's size), not remembered one by one: memory does not grow with
/// their number. A region written by bale starts at most one object at any
/// word; a crafted one whose slots of different lengths or forms start at
/// one word has that object counted once. Slots are visited in the same
/// order as a recursive walk would (a value, then its contents, in order),
/// which is the order `types` lists record types in.
pub fn region_stats(r: &Reader<'_>, root: u64) -> Result<Stats> {
    let mut st = Stats::default();
    let mut visited = Visited::new(r.buf().len());
    let mut stack: Vec<Run> = Vec::new();
    let mut type_index: HashMap<usize, usize> = HashMap::new();
    // Per kind: NAMES by index, then typed scalars by kind byte.
    let mut tally: Vec<KindStats> = vec![KindStats::default(); NAMES.len() + 256];
    let mut next = Some((root, r.buf().len()));
    loop {
        let (slot, limit) = match next.take() {
            Some(item) => item,
            None => match stack.last_mut() {
                None => break,
                Some(run) => {
                    let item = (r.word(run.pos)?, run.limit);
                    run.pos += 8;
                    run.n -= 1;
                    if run.n == 0 {
                        stack.pop();
                    }
                    item
                }
            },
        };
        st.slots += 1;
        let tag = slot & TAG_MASK;
        let v = r.decode(slot, limit)?;
        if let Some(off) = stored_at(slot) {
            if !visited.first_visit(off) {
                continue;
            }
        }
        let header = if tag == TAG_OBJ { 8 } else { 0 };
        let (kind, bytes): (usize, u64) = match v {
            Value::Ext(e) => (NAMES.len() + e.kind as usize, 8 + pad8(e.payload.len()) as u64),
            Value::NumList(l) => (
                match (l.float, l.int32) {
                    (true, _) => K_FLOAT_LIST,
                    (false, true) => K_INT32_LIST,
                    (false, false) => K_INT_LIST,
                },
                8 + crate::num_list::payload_bytes(l.len, l.int32).unwrap_or(0) as u64,
            ),
            Value::NdArray(a) => {
                let head = 8 + pad8(ND_FIXED_BYTES + a.shape.len() + a.dtype.len());
                (K_NDARRAY, (head + pad8(a.data.len())) as u64)
            }
            Value::Record(rec) => {
                count_record(r, &mut st, &mut type_index, rec)?;
                push_run(&mut stack, rec.values, rec.len, rec.start);
                (K_RECORD, 8 + 8 * rec.len as u64)
            }
            Value::None | Value::Bool(_) => (K_NONE_BOOL, 0),
            Value::Pair(..) => (K_PAIR, 0),
            Value::Int(_) if tag == TAG_INT => (K_INT_INLINE, 0),
            Value::Int(_) => (K_INT64, 16),
            Value::BigInt(b) => (K_BIGINT, 8 + pad8(b.len()) as u64),
            Value::Float(_) => (K_FLOAT, 16),
            Value::Complex(..) => (K_COMPLEX, 24),
            Value::Str(_) if tag == TAG_SSTR => (K_STR_INLINE, 0),
            Value::Str(s) => (K_STR, header + pad8(s.len * s.width.unit()) as u64),
            Value::Bytes(b) => (K_BYTES, 8 + pad8(b.len()) as u64),
            Value::List(s) | Value::Tuple(s) => {
                push_run(&mut stack, s.pos, s.len, s.start);
                (if matches!(v, Value::List(_)) { K_LIST } else { K_TUPLE }, header + 8 * s.len as u64)
            }
            Value::Set(t) | Value::FrozenSet(t) => {
                push_run(&mut stack, t.pos, t.len, t.start);
                let size = 8 + 8 * t.len + 4 * index_cap(t.len);
                (if matches!(v, Value::Set(_)) { K_SET } else { K_FROZENSET }, pad8(size) as u64)
            }
            Value::Column(c) => match c.kind {
                ColumnKind::Rows { shape, cols, keyed } => {
                    use_shape(&mut st, &mut stack, shape, c.len as u64);
                    push_run(&mut stack, cols, shape.len, c.start);
                    match r.keyed_table_bytes(c)? {
                        0 => (K_TABLE, 16 + 8 * shape.len as u64),
                        bytes => (K_KEYED_TABLE, (keyed + bytes - c.start) as u64),
                    }
                }
                ColumnKind::Strs { width, total, .. } => {
                    (K_STR_COLUMN, (16 + offsets_size(c.len) + pad8(total * width.unit())) as u64)
                }
                ColumnKind::Slots32 { .. } => (K_SLOT32_COLUMN, (8 + pad8(4 * c.len)) as u64),
                ColumnKind::Codes { .. } => {
                    push_run(&mut stack, c.start + 8, 1, c.start);
                    (K_STR_CODE_COLUMN, (16 + pad8(4 * c.len)) as u64)
                }
                ColumnKind::Lists { child, .. } => {
                    push_run(&mut stack, c.start + 8, 1, c.start);
                    let kind = if matches!(child, Child::Rows { .. }) { K_ROWS_COLUMN } else { K_LIST_COLUMN };
                    (kind, (16 + offsets_size(c.len)) as u64)
                }
            },
            Value::Dict(d) => {
                use_shape(&mut st, &mut stack, d.shape, 1);
                push_run(&mut stack, d.values, d.len, d.start);
                (if d.ids != 0 { K_ID_DICT } else { K_DICT }, (d.values - d.start) as u64 + 8 * d.len as u64)
            }
            Value::Extern(x) => {
                st.externs.insert((x.segment, x.end, x.flags, x.slot));
                (K_EXTERN, crate::extern_ref::EXTERN_BYTES as u64)
            }
        };
        let e = &mut tally[kind];
        e.count += 1;
        e.bytes += bytes;
    }
    // Kinds tallied by index (a map lookup per object was most of the walk's time).
    for (i, t) in tally.into_iter().enumerate() {
        if t.count > 0 {
            let name = if i < NAMES.len() { NAMES[i] } else { crate::typed::kind_name((i - NAMES.len()) as u8) };
            let e = st.kinds.entry(name).or_default();
            e.count += t.count;
            e.bytes += t.bytes;
        }
    }
    Ok(st)
}

/// Counts `dicts` more dicts of `shape`; the first time, the shape's bytes
/// and its keys too (walked after the values pushed next).
/// Counts a record under its type, and the type's bytes the first time.
fn count_record(
    r: &Reader<'_>,
    st: &mut Stats,
    type_index: &mut HashMap<usize, usize>,
    rec: crate::reader::Record,
) -> Result<()> {
    match type_index.get(&rec.ty.start) {
        Some(&i) => st.types[i].count += 1,
        None => {
            let mut fields = Vec::with_capacity(rec.len);
            for i in 0..rec.len {
                if let Value::Str(s) = r.field_name(rec.ty, i)? {
                    fields.push(s.to_string_lossy());
                }
            }
            let name = r.type_name(rec.ty)?.to_string_lossy();
            type_index.insert(rec.ty.start, st.types.len());
            st.types.push(TypeInfo { name, flavor: rec.ty.flavor, fields, count: 1 });
            let size = 8 + 8 * TYPE_PREFIX_WORDS + 8 * rec.len + 4 * index_cap(rec.len);
            let e = st.kinds.entry("record types").or_default();
            e.count += 1;
            e.bytes += pad8(size) as u64;
        }
    }
    Ok(())
}

fn use_shape(st: &mut Stats, stack: &mut Vec<Run>, shape: Table, dicts: u64) {
    if count_shape_use(st, shape, dicts) {
        push_run(stack, shape.pos, shape.len, shape.start);
    }
}

/// Counts `dicts` uses of `shape`, and its bytes the first time; returns
/// whether this was the first (its keys are then still to walk).
fn count_shape_use(st: &mut Stats, shape: Table, dicts: u64) -> bool {
    let uses = st.shapes.entry(shape.start).or_insert(0);
    let first = *uses == 0;
    *uses += dicts;
    if first {
        let size = 8 + 8 * shape.len + 4 * index_cap(shape.len);
        let e = st.kinds.entry("shapes (dict keys)").or_default();
        e.count += 1;
        e.bytes += pad8(size) as u64;
    }
    first
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::reader::Region;
    use crate::writer::Builder;

    /// The walk as it was before issue 20 (item 6): a hash set of every
    /// stored object's slot, and every child slot on the stack. Kept here
    /// to check that the bitmap walk counts the same.
    fn hash_set_walk(r: &Reader<'_>, root: u64) -> Result<Stats> {
        let mut st = Stats::default();
        let mut seen: HashSet<u64> = HashSet::new();
        let mut stack = vec![(root, r.buf().len())];
        let mut type_index: HashMap<usize, usize> = HashMap::new();
        while let Some((slot, limit)) = stack.pop() {
            st.slots += 1;
            let tag = slot & TAG_MASK;
            let v = r.decode(slot, limit)?;
            let inline = matches!(tag, TAG_INT | TAG_CONST | TAG_SSTR)
                || (matches!(tag, TAG_LIST | TAG_TUPLE) && slot >> 3 == 0);
            if !inline && !seen.insert(slot) {
                continue;
            }
            let header = if tag == TAG_OBJ { 8 } else { 0 };
            let (kind, bytes): (&'static str, u64) = match v {
                Value::Ext(e) => (crate::typed::kind_name(e.kind), 8 + pad8(e.payload.len()) as u64),
                Value::NumList(l) => {
                    let name = match (l.float, l.int32) {
                        (true, _) => "lists (floats, raw)",
                        (false, true) => "lists (ints, raw 32-bit)",
                        (false, false) => "lists (ints, raw)",
                    };
                    (name, 8 + crate::num_list::payload_bytes(l.len, l.int32).unwrap_or(0) as u64)
                }
                Value::NdArray(a) => {
                    let head = 8 + pad8(ND_FIXED_BYTES + a.shape.len() + a.dtype.len());
                    ("numpy arrays", (head + pad8(a.data.len())) as u64)
                }
                Value::Record(rec) => {
                    count_record(r, &mut st, &mut type_index, rec)?;
                    for i in (0..rec.len).rev() {
                        stack.push((r.word(rec.values + 8 * i)?, rec.start));
                    }
                    ("records", 8 + 8 * rec.len as u64)
                }
                Value::None | Value::Bool(_) => ("None and bools", 0),
                Value::Pair(..) => ("tuples (inline int pairs)", 0),
                Value::Int(_) if tag == TAG_INT => ("ints (inline)", 0),
                Value::Int(_) => ("ints (64-bit objects)", 16),
                Value::BigInt(b) => ("ints (big)", 8 + pad8(b.len()) as u64),
                Value::Float(_) => ("floats", 16),
                Value::Complex(..) => ("complex numbers", 24),
                Value::Str(_) if tag == TAG_SSTR => ("strings (inline)", 0),
                Value::Str(s) => ("strings", header + pad8(s.len * s.width.unit()) as u64),
                Value::Bytes(b) => ("bytes", 8 + pad8(b.len()) as u64),
                Value::List(s) | Value::Tuple(s) => {
                    for i in (0..s.len).rev() {
                        stack.push((r.seq_slot(s, i)?, s.start));
                    }
                    (if matches!(v, Value::List(_)) { "lists" } else { "tuples" }, header + 8 * s.len as u64)
                }
                Value::Set(t) | Value::FrozenSet(t) => {
                    for i in (0..t.len).rev() {
                        stack.push((r.word(t.pos + 8 * i)?, t.start));
                    }
                    let size = 8 + 8 * t.len + 4 * index_cap(t.len);
                    (if matches!(v, Value::Set(_)) { "sets" } else { "frozensets" }, pad8(size) as u64)
                }
                Value::Column(c) => match c.kind {
                    ColumnKind::Rows { shape, cols, keyed } => {
                        old_use_shape(r, &mut st, &mut stack, shape, c.len as u64)?;
                        for i in (0..shape.len).rev() {
                            stack.push((r.word(cols + 8 * i)?, c.start));
                        }
                        match r.keyed_table_bytes(c)? {
                            0 => ("tables (lists of dicts, by column)", 16 + 8 * shape.len as u64),
                            bytes => (
                                "keyed tables (lists of dicts of several key sequences, by column)",
                                (keyed + bytes - c.start) as u64,
                            ),
                        }
                    }
                    ColumnKind::Strs { width, total, .. } => {
                        ("string columns", (16 + offsets_size(c.len) + pad8(total * width.unit())) as u64)
                    }
                    ColumnKind::Slots32 { .. } => {
                        ("small-scalar columns (None, bools, small ints; 32-bit)", (8 + pad8(4 * c.len)) as u64)
                    }
                    ColumnKind::Codes { .. } => {
                        stack.push((r.word(c.start + 8)?, c.start));
                        ("string-code columns (repeated strings; 32-bit codes)", (16 + pad8(4 * c.len)) as u64)
                    }
                    ColumnKind::Lists { child, .. } => {
                        stack.push((r.word(c.start + 8)?, c.start));
                        let name = if matches!(child, Child::Rows { .. }) {
                            "row columns (lists of dicts, over a table)"
                        } else {
                            "list columns"
                        };
                        (name, (16 + offsets_size(c.len)) as u64)
                    }
                },
                Value::Dict(d) => {
                    old_use_shape(r, &mut st, &mut stack, d.shape, 1)?;
                    for i in (0..d.len).rev() {
                        stack.push((r.word(d.values + 8 * i)?, d.start));
                    }
                    (
                        if d.ids != 0 { "dicts (key ids)" } else { "dicts" },
                        (d.values - d.start) as u64 + 8 * d.len as u64,
                    )
                }
                Value::Extern(_) => ("references to other segments", crate::extern_ref::EXTERN_BYTES as u64),
            };
            let e = st.kinds.entry(kind).or_default();
            e.count += 1;
            e.bytes += bytes;
        }
        Ok(st)
    }

    fn old_use_shape(
        r: &Reader<'_>,
        st: &mut Stats,
        stack: &mut Vec<(u64, usize)>,
        shape: Table,
        dicts: u64,
    ) -> Result<()> {
        if count_shape_use(st, shape, dicts) {
            for i in (0..shape.len).rev() {
                stack.push((r.word(shape.pos + 8 * i)?, shape.start));
            }
        }
        Ok(())
    }

    fn assert_same_as_hash_set_walk(bytes: &[u8], what: &str) {
        let region = Region::new(bytes).unwrap();
        let (r, root) = (region.reader, region.header.root);
        let (new, old) = (region_stats(&r, root).unwrap(), hash_set_walk(&r, root).unwrap());
        assert_eq!(new.kinds, old.kinds, "{what}: kinds");
        assert_eq!(new.shapes, old.shapes, "{what}: shapes");
        assert_eq!(new.slots, old.slots, "{what}: slots");
        assert_eq!(new.types, old.types, "{what}: record types, in the order met");
    }

    fn files(dir: &str) -> Vec<std::path::PathBuf> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests").join(dir);
        let mut out: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "bale"))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn golden_vectors_and_python_written_regions_count_as_with_a_hash_set() {
        // tests/info_regions holds regions with sharing, cycles, tables,
        // records, appends and streamed rows, written from Python.
        let mut n = 0;
        for path in files("vectors").into_iter().chain(files("info_regions")) {
            assert_same_as_hash_set_walk(&std::fs::read(&path).unwrap(), &path.display().to_string());
            n += 1;
        }
        assert!(n >= 30, "{n} regions found");
    }

    #[test]
    fn shared_containers_and_strings_count_once_in_either_walk() {
        let mut b = Builder::new();
        let s = b.str_utf8("a string longer than seven");
        let f = b.float(2.5);
        let inner = b.seq(false, &[s, f, s]);
        let tup = b.seq(true, &[inner, s]);
        let big = b.int(1 << 62);
        let root = b.seq(false, &[inner, tup, inner, tup, big, big, f]);
        b.set_flags(FLAG_SHARED);
        let bytes = b.finish(root);
        assert_same_as_hash_set_walk(&bytes, "shared");
        let region = Region::new(&bytes).unwrap();
        let st = region_stats(&region.reader, region.header.root).unwrap();
        assert_eq!(st.kinds["lists"].count, 2);
        assert_eq!(st.kinds["tuples"].count, 1);
        assert_eq!(st.kinds["strings"].count, 1);
        assert_eq!(st.kinds["floats"].count, 1);
        assert_eq!(st.kinds["ints (64-bit objects)"].count, 1);
        // Every slot met is counted; what a container met again holds is not
        // walked again: the root and its 7 items, then inner's 3, the tuple's 2.
        assert_eq!(st.slots, 1 + 7 + 3 + 2);
    }

    #[test]
    fn a_long_list_walks_with_a_stack_of_runs_and_a_bitmap_of_a_sixty_fourth() {
        let mut b = Builder::new();
        let items: Vec<u64> = (0..100_000).map(|i| b.float(i as f64 + 0.5)).collect();
        let root = b.seq(false, &items);
        let bytes = b.finish(root);
        assert_same_as_hash_set_walk(&bytes, "long list");
        assert!(Visited::new(bytes.len()).0.len() * 8 <= bytes.len() / 64 + 8);
        let region = Region::new(&bytes).unwrap();
        let st = region_stats(&region.reader, region.header.root).unwrap();
        assert_eq!(st.kinds["floats"], KindStats { count: 100_000, bytes: 1_600_000 });
    }
}
