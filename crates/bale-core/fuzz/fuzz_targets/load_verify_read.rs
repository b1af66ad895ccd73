//! load -> verify -> full read of everything reachable -> to_json -> copy.
//!
//! The input is the bytes of a region. Unverified bytes may give a
//! `FormatError` anywhere, never a panic, an out-of-bounds read or a hang;
//! bytes that pass `verify` must read completely with no error at all
//! (every item, key, value, field, string unit, typed payload, every lookup
//! of a key or element iteration listed), and `to_json` must give either an
//! error or UTF-8 text. The root is copied region to region (`Transplant`,
//! through the core's encoder, as `Region.compacted()` does): the copy of a
//! verified region must succeed, pass `verify` itself (the binding trusts
//! it as it trusts its source) and hold an equal value.
//!
//! The custom mutator lets libFuzzer mutate freely, then (most of the time)
//! puts the header back in shape: magic, version, byte-order marker and
//! reserved bytes restored, length rounded to 8 and written to `total_len`,
//! checksum recomputed. Without it nearly every mutant would stop at the
//! checksum and the structure checks behind it would never be reached.
//!
//! ```text
//! make fuzz-core FUZZ_SECONDS=120
//! cargo +nightly fuzz run load_verify_read   # from crates/bale-core
//! ```

#![no_main]

use std::collections::HashSet;

use bale_core::format::FLAG_SHARED;
use bale_core::format::{
    BYTE_ORDER_MARK, HEADER_LEN, MAGIC, OFF_BOM, OFF_CHECKSUM, OFF_FLAGS, OFF_RESERVED, OFF_TOTAL_LEN, OFF_VERSION,
    VERSION,
};
use bale_core::{
    compute_checksum, hash, json, stats, typed, values_eq, Builder, FormatError, Reader, Region, Transplant, Value,
};
use libfuzzer_sys::{fuzz_mutator, fuzz_target};

/// Values visited per input (each stored container once).
const NODE_BUDGET: usize = 50_000;
/// Items read per container (the rest of a long list is skipped).
const ITEMS_PER_CONTAINER: usize = 4_096;

fuzz_target!(|data: &[u8]| {
    let Ok(region) = Region::new(data) else { return };
    let verified = bale_core::verify(&region).is_ok();
    let r = &region.reader;
    let outcome = read_all(r, &region);
    if verified {
        if let Err(e) = outcome {
            panic!("a region that passed verify failed to read: {e}");
        }
        if let Err(e) = stats::region_stats(r, region.header.root) {
            panic!("region_stats of a verified region failed: {e}");
        }
        if let Ok(root) = region.root() {
            assert!(
                !immutable_cycle(r, root),
                "a verified region holds a tuple or frozenset that contains itself through tuples and frozensets only \
                 (Python cannot build one; hash() of it overflows the stack)"
            );
        }
    } else {
        let _ = stats::region_stats(r, region.header.root);
    }
    if let Ok(root) = region.root() {
        let mut out = Vec::new();
        if json::to_json(r, root, &mut out).is_ok() {
            assert!(std::str::from_utf8(&out).is_ok(), "to_json wrote bytes that are not UTF-8");
        }
        let _ = values_eq(r, root, r, root);
    }
    copy_root(&region, data.len(), verified);
});

/// Copies the root into a fresh region as `Region.compacted()` does.
fn copy_root(region: &Region<'_>, len: usize, verified: bool) {
    let r = &region.reader;
    let mut t = Transplant::new(r, false, region.header.flags & FLAG_SHARED != 0);
    let mut dst = Builder::new();
    let root = match t.copy(r, &mut dst, region.header.root, len) {
        Ok(root) => root,
        // A store's value holding a reference to another segment: only
        // its store can copy it (`verify_report` says it has one).
        Err(_) if t.met_extern() => {
            if verified {
                assert!(
                    bale_core::verify_report(region).is_ok_and(|rep| rep.first_extern.is_some()),
                    "a copy met a reference that verify did not report"
                );
            }
            return;
        }
        Err(e) if verified => panic!("copying the root of a verified region failed: {e}"),
        Err(_) => return,
    };
    if !verified {
        return;
    }
    dst.set_flags(t.flags());
    let bytes = dst.finish(root);
    let copy = match Region::new_verified(&bytes) {
        Ok(copy) => copy,
        Err(e) => panic!("the copy of a verified region fails verify: {e}"),
    };
    match (region.root(), copy.root()) {
        (Ok(a), Ok(b)) => {
            if let Err(why) = same(r, a, &copy.reader, b) {
                panic!("the copy of a verified region holds another value: {why}");
            }
        }
        (a, b) => panic!("roots of a verified region and its copy: {:?} / {:?}", a.is_ok(), b.is_ok()),
    }
}

/// Whether `a` (in `ra`) and `b` (in `rb`) are the same value, kind for
/// kind and bit for bit (a NaN is the same NaN, which Python's equality,
/// `values_eq`, would not say), walked in parallel within the budgets.
fn same<'a, 'b>(ra: &Reader<'a>, a: Value<'a>, rb: &Reader<'b>, b: Value<'b>) -> Result<(), String> {
    let mut stack = vec![(a, b)];
    let mut seen: HashSet<(u8, usize, usize)> = HashSet::new();
    let mut visited = 0usize;
    let err = |e: FormatError| format!("a verified value failed to read: {e}");
    while let Some((a, b)) = stack.pop() {
        visited += 1;
        if visited > NODE_BUDGET {
            break;
        }
        let differ = || Err(format!("{a:?} became {b:?}"));
        match (a, b) {
            (Value::None, Value::None) => {}
            (Value::Bool(x), Value::Bool(y)) if x == y => {}
            (Value::Int(x), Value::Int(y)) if x == y => {}
            (Value::Pair(x, y), Value::Pair(u, v)) if (x, y) == (u, v) => {}
            (Value::BigInt(x), Value::BigInt(y)) if x == y => {}
            (Value::Float(x), Value::Float(y)) if x.to_bits() == y.to_bits() => {}
            (Value::Complex(x, y), Value::Complex(u, v))
                if (x.to_bits(), y.to_bits()) == (u.to_bits(), v.to_bits()) => {}
            (Value::Str(x), Value::Str(y)) if x.width == y.width && x.units() == y.units() => {}
            (Value::Bytes(x), Value::Bytes(y)) if x == y => {}
            (Value::Ext(x), Value::Ext(y)) if (x.kind, x.aux, x.payload) == (y.kind, y.aux, y.payload) => {}
            (Value::NdArray(x), Value::NdArray(y))
                if (x.data, x.itemsize, x.flags, x.dtype, x.ndim())
                    == (y.data, y.itemsize, y.flags, y.dtype, y.ndim())
                    && (0..x.ndim()).all(|i| x.dim(i) == y.dim(i)) => {}
            (Value::NumList(x), Value::NumList(y)) if (x.float, x.int32, x.len) == (y.float, y.int32, y.len) => {
                for i in 0..x.len.min(ITEMS_PER_CONTAINER) {
                    if ra.num_word(x, i).map_err(err)? != rb.num_word(y, i).map_err(err)? {
                        return differ();
                    }
                }
            }
            (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) if x.len == y.len => {
                if seen.insert((0, x.pos, x.len)) {
                    for i in 0..x.len.min(ITEMS_PER_CONTAINER) {
                        stack.push((ra.seq_item(x, i).map_err(err)?, rb.seq_item(y, i).map_err(err)?));
                    }
                }
            }
            (Value::Set(x), Value::Set(y)) | (Value::FrozenSet(x), Value::FrozenSet(y)) if x.len == y.len => {
                if seen.insert((1, x.start, x.len)) {
                    for i in 0..x.len.min(ITEMS_PER_CONTAINER) {
                        stack.push((ra.table_item(x, i).map_err(err)?, rb.table_item(y, i).map_err(err)?));
                    }
                }
            }
            (Value::Dict(x), Value::Dict(y)) if x.len == y.len && x.class == y.class => {
                if seen.insert((2, x.start + x.row.map_or(0, |n| n + 1), x.len)) {
                    for i in 0..x.len.min(ITEMS_PER_CONTAINER) {
                        stack.push((ra.dict_key(x, i).map_err(err)?, rb.dict_key(y, i).map_err(err)?));
                        stack.push((ra.dict_value(x, i).map_err(err)?, rb.dict_value(y, i).map_err(err)?));
                    }
                }
            }
            (Value::Column(x), Value::Column(y)) if x.len == y.len => {
                if seen.insert((4, x.start + x.first, x.len)) {
                    for i in 0..x.len.min(ITEMS_PER_CONTAINER) {
                        stack.push((ra.column_item(x, i).map_err(err)?, rb.column_item(y, i).map_err(err)?));
                    }
                }
            }
            (Value::Record(x), Value::Record(y)) if x.len == y.len && x.ty.flavor == y.ty.flavor => {
                if seen.insert((5, x.start, x.len)) {
                    stack.push((
                        Value::Str(ra.type_name(x.ty).map_err(err)?),
                        Value::Str(rb.type_name(y.ty).map_err(err)?),
                    ));
                    for i in 0..x.len.min(ITEMS_PER_CONTAINER) {
                        stack.push((ra.field_name(x.ty, i).map_err(err)?, rb.field_name(y.ty, i).map_err(err)?));
                        stack.push((ra.record_value(x, i).map_err(err)?, rb.record_value(y, i).map_err(err)?));
                    }
                }
            }
            _ => return differ(),
        }
    }
    Ok(())
}

/// Reads everything reachable from the root (bounded by the budgets).
fn read_all<'a>(r: &Reader<'a>, region: &Region<'a>) -> Result<(), FormatError> {
    let mut stack = vec![region.root()?];
    let mut seen: HashSet<(u8, usize)> = HashSet::new();
    let mut visited = 0usize;
    while let Some(v) = stack.pop() {
        visited += 1;
        if visited > NODE_BUDGET {
            break;
        }
        match v {
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Complex(..) | Value::Pair(..) => {}
            Value::BigInt(b) => {
                let _ = json::bigint_decimal(b);
            }
            Value::Bytes(b) => {
                let _ = hash::hash_bytes(b);
            }
            Value::Str(s) => {
                let n = s.len.min(ITEMS_PER_CONTAINER);
                for i in 0..n {
                    let _ = s.char_at(i);
                }
                let _ = hash::hash_str_units(s.units());
            }
            Value::List(seq) | Value::Tuple(seq) => {
                if !seen.insert((0, seq.pos)) {
                    continue;
                }
                for i in 0..seq.len.min(ITEMS_PER_CONTAINER) {
                    stack.push(r.seq_item(seq, i)?);
                }
                if matches!(v, Value::Tuple(_)) {
                    let _ = hash::hash_value(r, v, 0); // a tuple holding a list is unhashable: an error is fine
                }
            }
            Value::Set(t) | Value::FrozenSet(t) => {
                if !seen.insert((1, t.start)) {
                    continue;
                }
                for i in 0..t.len.min(ITEMS_PER_CONTAINER) {
                    let e = r.table_item(t, i)?;
                    check_found(r, t, e, i)?;
                    stack.push(e);
                }
            }
            Value::Dict(d) => {
                if !seen.insert((2, d.start + d.row.map_or(0, |x| x + 1))) {
                    continue;
                }
                for i in 0..d.len.min(ITEMS_PER_CONTAINER) {
                    let k = r.dict_key(d, i)?;
                    // Found at its index in the shape (an ID_DICT's key table).
                    check_found(r, d.shape, k, r.dict_key_index(d, i))?;
                    stack.push(k);
                    stack.push(r.dict_value(d, i)?);
                }
                if let Some(Value::Str(s)) = (d.len > 0).then(|| r.dict_key(d, 0)).transpose()? {
                    let _ = bale_core::lookup_str(r, d, &s.to_string_lossy())?;
                }
            }
            Value::NumList(l) => {
                if !seen.insert((3, l.pos)) {
                    continue;
                }
                for i in 0..l.len.min(ITEMS_PER_CONTAINER) {
                    let _ = r.num_item(l, i)?;
                }
            }
            Value::Column(c) => {
                if !seen.insert((4, c.start + c.first)) {
                    continue;
                }
                for i in 0..c.len.min(ITEMS_PER_CONTAINER) {
                    stack.push(r.column_item(c, i)?);
                }
            }
            Value::Record(rec) => {
                if !seen.insert((5, rec.start)) {
                    continue;
                }
                let name = r.type_name(rec.ty)?;
                let _ = name.to_string_lossy();
                for i in 0..rec.len.min(ITEMS_PER_CONTAINER) {
                    stack.push(r.field_name(rec.ty, i)?);
                    stack.push(r.record_value(rec, i)?);
                }
            }
            Value::Ext(e) => {
                typed::check(&e)?;
                let _ = typed::kind_name(e.kind);
                if typed::hashable_ext(&e) {
                    let _ = hash::hash_ext(&e);
                }
                if let Ok(f) = bale_core::fraction::decode(&e) {
                    let _ = (f.exact_f64(), bale_core::fraction::check_lowest_terms(&f));
                }
            }
            Value::NdArray(a) => {
                let mut n = 1u64;
                for i in 0..a.ndim() {
                    n = n.wrapping_mul(a.dim(i));
                }
                let _ = (n, a.data.len(), a.dtype.len());
            }
            // A reference to another segment of a store: nothing to follow
            // here; its fields were checked by the decode, and it never hashes.
            Value::Extern(x) => {
                let _ = bale_core::extern_ref::words(&x);
                assert!(hash::hash_value(r, v, 0).is_err(), "an EXTERN hashed");
            }
        }
    }
    Ok(())
}

/// Whether a tuple or frozenset reachable from `root` contains itself
/// through tuples and frozensets only (a cycle through a list, dict, set or
/// record is fine: Python builds those). Iterative depth-first search with
/// the same budgets as `read_all`; reading errors end the search.
fn immutable_cycle<'a>(r: &Reader<'a>, root: Value<'a>) -> bool {
    #[derive(PartialEq)]
    enum Mark {
        OnPath,
        Done,
    }
    // A tuple is its items and their number: two tuple slots may share
    // items, one a prefix of the other (a verified region may hold that),
    // and neither then contains the other.
    fn key(v: &Value<'_>) -> Option<(u8, usize, usize)> {
        match v {
            Value::Tuple(s) => Some((0, s.pos, s.len)),
            Value::FrozenSet(t) => Some((1, t.start, t.len)),
            _ => None,
        }
    }
    fn item<'a>(r: &Reader<'a>, v: &Value<'a>, i: usize) -> Option<Value<'a>> {
        match *v {
            Value::Tuple(s) if i < s.len.min(ITEMS_PER_CONTAINER) => r.seq_item(s, i).ok(),
            Value::FrozenSet(t) if i < t.len.min(ITEMS_PER_CONTAINER) => r.table_item(t, i).ok(),
            _ => None,
        }
    }
    let mut marks: std::collections::HashMap<(u8, usize, usize), Mark> = std::collections::HashMap::new();
    // Roots of searches: every tuple or frozenset `read_all` would meet.
    let mut starts = vec![root];
    let mut all = HashSet::new();
    let mut steps = 0usize;
    while let Some(v) = starts.pop() {
        steps += 1;
        if steps > NODE_BUDGET {
            return false;
        }
        let n = match v {
            Value::List(s) | Value::Tuple(s) => s.len,
            Value::Set(t) | Value::FrozenSet(t) => t.len,
            Value::Dict(d) => d.len,
            Value::Record(rec) => rec.len,
            Value::Column(c) => c.len,
            _ => 0,
        };
        let id = match v {
            Value::List(s) | Value::Tuple(s) => (0, s.pos),
            Value::Set(t) | Value::FrozenSet(t) => (1, t.start),
            Value::Dict(d) => (2, d.start + d.row.map_or(0, |x| x + 1)),
            Value::Record(rec) => (5, rec.start),
            Value::Column(c) => (4, c.start + c.first),
            _ => continue,
        };
        if !all.insert(id) {
            continue;
        }
        for i in 0..n.min(ITEMS_PER_CONTAINER) {
            let child = match v {
                Value::List(s) | Value::Tuple(s) => r.seq_item(s, i),
                Value::Set(t) | Value::FrozenSet(t) => r.table_item(t, i),
                Value::Dict(d) => r.dict_value(d, i),
                Value::Record(rec) => r.record_value(rec, i),
                Value::Column(c) => r.column_item(c, i),
                _ => break,
            };
            let Ok(child) = child else { return false };
            if let Value::Dict(d) = v {
                if let Ok(k) = r.dict_key(d, i) {
                    starts.push(k);
                }
            }
            starts.push(child);
        }
        let Some(k) = key(&v) else { continue };
        if marks.contains_key(&k) {
            continue;
        }
        // Depth-first search through tuples and frozensets from `v`.
        let mut path: Vec<(Value<'a>, usize)> = vec![(v, 0)];
        marks.insert(k, Mark::OnPath);
        while let Some((node, next)) = path.last_mut() {
            let node = *node;
            match item(r, &node, *next) {
                Some(child) => {
                    *next += 1;
                    steps += 1;
                    if steps > NODE_BUDGET {
                        return false;
                    }
                    if let Some(ck) = key(&child) {
                        match marks.get(&ck) {
                            Some(Mark::OnPath) => return true,
                            Some(Mark::Done) => {}
                            None => {
                                marks.insert(ck, Mark::OnPath);
                                path.push((child, 0));
                            }
                        }
                    }
                }
                None => {
                    if let Some(nk) = key(&node) {
                        marks.insert(nk, Mark::Done);
                    }
                    path.pop();
                }
            }
        }
    }
    false
}

/// Key `k` (entry `i` of table `t`) must be found by a hash lookup, at
/// entry `i`, unless it is not equal to itself (NaN, or a tuple holding one).
fn check_found<'a>(r: &Reader<'a>, t: bale_core::Table, k: Value<'a>, i: usize) -> Result<(), FormatError> {
    let h = hash::hash_value(r, k, 0)?;
    let found = r.find(t, h, |other| values_eq(r, k, r, other))?;
    if found != Some(i) && values_eq(r, k, r, k)? {
        // Two equal keys in one table: only damaged bytes can hold that.
        return Err(FormatError::new(format!("key {i} found at {found:?} by its own hash")));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Mutator
// ---------------------------------------------------------------------------

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    let size = libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    // One mutant in eight keeps whatever the mutation did to the header,
    // so the header checks themselves stay fuzzed.
    if seed % 8 == 0 || size < HEADER_LEN || max_size < HEADER_LEN {
        return size;
    }
    let mut size = size & !7;
    if size < HEADER_LEN {
        size = HEADER_LEN;
    }
    let b = &mut data[..size];
    b[..8].copy_from_slice(&MAGIC);
    b[OFF_VERSION..OFF_VERSION + 4].copy_from_slice(&VERSION.to_le_bytes());
    b[OFF_BOM..OFF_BOM + 4].copy_from_slice(&BYTE_ORDER_MARK.to_le_bytes());
    // Keep only known flags (SHARED, CYCLIC), CYCLIC only with SHARED.
    let mut flags = u32::from_le_bytes(b[OFF_FLAGS..OFF_FLAGS + 4].try_into().unwrap()) & 3;
    if flags == 2 {
        flags = 3;
    }
    b[OFF_FLAGS..OFF_FLAGS + 4].copy_from_slice(&flags.to_le_bytes());
    b[OFF_RESERVED..HEADER_LEN].fill(0);
    b[OFF_TOTAL_LEN..OFF_TOTAL_LEN + 8].copy_from_slice(&(size as u64).to_le_bytes());
    if seed % 8 != 1 {
        // One in eight keeps a wrong checksum (verify must refuse it).
        let sum = compute_checksum(b);
        b[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
    }
    size
});
