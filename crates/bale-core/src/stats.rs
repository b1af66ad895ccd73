//! What a region holds: counts and bytes per kind of value, and the shapes
//! its dicts use (for `bale info`).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::Result;
use crate::format::*;
use crate::columns::{offsets_size, ColumnKind};
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

/// Walks everything reachable from `root`, each stored object once.
pub fn region_stats(r: &Reader<'_>, root: u64) -> Result<Stats> {
    let mut st = Stats::default();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut stack = vec![(root, r.buf().len())];
    let mut type_index: HashMap<usize, usize> = HashMap::new();
    while let Some((slot, limit)) = stack.pop() {
        st.slots += 1;
        let tag = slot & TAG_MASK;
        let v = r.decode(slot, limit)?;
        let inline = matches!(tag, TAG_INT | TAG_CONST | TAG_SSTR) || (matches!(tag, TAG_LIST | TAG_TUPLE) && slot >> 3 == 0);
        if !inline && !seen.insert(slot) {
            continue;
        }
        let header = if tag == TAG_OBJ { 8 } else { 0 };
        let (kind, bytes): (&'static str, u64) = match v {
            Value::Ext(e) => (crate::typed::kind_name(e.kind), 8 + pad8(e.payload.len()) as u64),
            Value::NumList(l) => (if l.float { "lists (floats, raw)" } else { "lists (ints, raw)" }, 8 + 8 * l.len as u64),
            Value::NdArray(a) => {
                let head = 8 + pad8(ND_FIXED_BYTES + a.shape.len() + a.dtype.len());
                ("numpy arrays", (head + pad8(a.data.len())) as u64)
            }
            Value::Record(rec) => {
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
                ColumnKind::Rows { shape, cols } => {
                    use_shape(r, &mut st, &mut stack, shape, c.len as u64)?;
                    for i in (0..shape.len).rev() {
                        stack.push((r.word(cols + 8 * i)?, c.start));
                    }
                    ("tables (lists of dicts, by column)", 16 + 8 * shape.len as u64)
                }
                ColumnKind::Strs { width, total, .. } => {
                    ("string columns", (16 + offsets_size(c.len) + pad8(total * width.unit())) as u64)
                }
                ColumnKind::Lists { .. } => {
                    stack.push((r.word(c.start + 8)?, c.start));
                    ("list columns", (16 + offsets_size(c.len)) as u64)
                }
            },
            Value::Dict(d) => {
                use_shape(r, &mut st, &mut stack, d.shape, 1)?;
                for i in (0..d.len).rev() {
                    stack.push((r.word(d.values + 8 * i)?, d.start));
                }
                ("dicts", 8 + 8 * d.len as u64)
            }
        };
        let e = st.kinds.entry(kind).or_default();
        e.count += 1;
        e.bytes += bytes;
    }
    Ok(st)
}

/// Counts `dicts` more dicts of `shape`; the first time, the shape's bytes
/// and its keys too.
fn use_shape(r: &Reader<'_>, st: &mut Stats, stack: &mut Vec<(u64, usize)>, shape: Table, dicts: u64) -> Result<()> {
    let uses = st.shapes.entry(shape.start).or_insert(0);
    let first = *uses == 0;
    *uses += dicts;
    if first {
        let size = 8 + 8 * shape.len + 4 * index_cap(shape.len);
        let e = st.kinds.entry("shapes (dict keys)").or_default();
        e.count += 1;
        e.bytes += pad8(size) as u64;
        for i in (0..shape.len).rev() {
            stack.push((r.word(shape.pos + 8 * i)?, shape.start));
        }
    }
    Ok(())
}
