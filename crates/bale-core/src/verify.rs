//! Full verification: checksum plus every structural rule of `docs/FORMAT.md`,
//! in O(n) and without recursion.

use std::collections::HashSet;

use crate::columns::{Column, ColumnKind};
use crate::equality::values_eq;
use crate::error::{FormatError, Result};
use crate::format::*;
use crate::hash::{hash_value, is_canonical_width};
use crate::reader::{compute_checksum, Reader, Region, Seq, Table, Value};

/// Strings up to this many bytes are rechecked at each reference; longer
/// ones are remembered so that repeated references cost O(1).
const RECHECK_STR_BYTES: usize = 256;

/// Short string slots whose content was checked last, direct-mapped by
/// slot (0 is no STR slot): a vocabulary's words are checked once each, not
/// at every reference. The table has 2^bits entries, one per 16 words of
/// the region between 2^8 and 2^14: at a fixed 2^12, a third of a
/// 2,000-word vocabulary shared an entry with another word and was checked
/// again at most references.
const RECENT_STRS_MIN_BITS: u32 = 8;
const RECENT_STRS_MAX_BITS: u32 = 14;

fn recent_strs_bits(words: usize) -> u32 {
    (usize::BITS - (words / 16).leading_zeros()).clamp(RECENT_STRS_MIN_BITS, RECENT_STRS_MAX_BITS)
}

#[inline]
fn recent_index(slot: u64, bits: u32) -> usize {
    crate::hash::place_of(slot, bits)
}

struct Bitmap(Vec<u64>);
impl Bitmap {
    fn new(words: usize) -> Bitmap {
        Bitmap(vec![0; words / 64 + 1])
    }
    fn intersects(&self, other: &Bitmap) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }
    /// Sets bit `i`; returns whether it was set before.
    #[inline]
    fn test_and_set(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.0[w] & b != 0;
        self.0[w] |= b;
        was
    }
}

struct Verifier<'a> {
    r: Reader<'a>,
    shared: bool,
    /// Containers checked (by start word): each may be referenced once
    /// unless the region is SHARED.
    objects: Bitmap,
    sequences: Bitmap,
    /// Shapes and long string objects checked: shared by design.
    shareable: Bitmap,
    revisited_sequences: HashSet<u64>,
    long_strings: HashSet<u64>,
    recent_strs: Box<[u64]>,
    recent_bits: u32,
    stack: Vec<Work>,
    /// The dtypes of the numpy arrays met (their text cannot be checked
    /// without numpy: the caller checks each distinct one).
    dtypes: HashSet<ArrayType>,
    /// Offsets of arrays whose dtype may hold text (`U`): their code points
    /// are checked by the caller, which knows the dtype's layout.
    text_arrays: Vec<usize>,
    /// The first EXTERN object met (`Report::first_extern`).
    first_extern: Option<usize>,
    /// In CYCLIC regions: every tuple met, for `check_tuple_cycles`.
    tuples: Vec<Seq>,
    /// Scratch space and string-key hashes for `check_table_with`.
    table_hashes: Vec<u64>,
    key_hashes: Box<[(u64, u64)]>,
}

/// What `verify_report` found that only a numpy-aware caller can check.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub array_types: Vec<ArrayType>,
    pub text_arrays: Vec<usize>,
    /// Where the first EXTERN object met lies: a region that is not a
    /// store's value cannot be read through it (FORMAT.md, *References to
    /// other segments*), so such a reader refuses it.
    pub first_extern: Option<usize>,
}

/// What a numpy reader must accept for the arrays of a verified region:
/// the dtype text, the NDARRAY flags and the item size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayType {
    pub dtype: String,
    pub flags: u32,
    pub itemsize: u64,
}

/// Pending work: a slot to decode, or a run of slots to scan.
enum Work {
    Slot(u64, usize),
    Slots { pos: usize, n: usize, limit: usize },
}

/// Slots a run checks at once (`Verifier::scan`): one bit each in a u64.
const BLOCK_SLOTS: usize = 64;
/// Shorter runs (a tree's pairs, a deep list's one item) are checked slot
/// by slot: setting up a block cost them more than it saved.
const BLOCK_MIN_SLOTS: usize = 3;
/// A block whose tags changed this often is mixed: the next block is
/// checked as one (`Verifier::scan`). One list of one kind (a vocabulary's
/// strings) is checked slot by slot, which cost it less.
const MIXED_CHANGES: u32 = 16;

/// Of the slots of `block` (little-endian words, 1 to `BLOCK_SLOTS`): those
/// not complete in themselves, a bit for each STR, OBJ, LIST or TUPLE
/// slot; whether an INT, CONST, SSTR or PAIR slot among them breaks a rule
/// of `check_leaf`, computed without a branch a slot (Note [Slots checked
/// in blocks]); and how many times the tag changed from one slot to the
/// next.
#[inline]
fn classify_block(block: &[u8]) -> (u64, bool, u32) {
    let mut others = 0u64;
    let mut bad = 0u64;
    let mut changes = 0;
    let mut last = slot_at(block, 0) & TAG_MASK;
    for i in 0..block.len() / 8 {
        let s = slot_at(block, i);
        let tag = s & TAG_MASK;
        changes += (tag != last) as u32;
        last = tag;
        // Bit `tag` set: 0 (OBJ), 4 (STR), 5 (LIST), 6 (TUPLE).
        others |= ((0b0111_0001u64 >> tag) & 1) << i;
        let is = |t: u64| (tag == t) as u64;
        let bad_const = ((s >> 3) > CONST_TRUE) as u64;
        let (not_ascii, padding) = sstr_faults(s);
        let bad_sstr = (not_ascii | padding != 0) as u64;
        let bad_pair = pair_of(s).is_none() as u64;
        bad |= is(TAG_CONST) & bad_const | is(TAG_SSTR) & bad_sstr | is(TAG_PAIR) & bad_pair;
    }
    (others, bad != 0, changes)
}

/// An inline string slot's faults: bits of its characters past ASCII, and
/// bits of its padding (bytes 1..=len hold the characters; the bytes after
/// them and bits 6..7 of byte 0 are padding, so that equal strings have
/// equal slots). Word-wide: no loop over the bytes.
#[inline(always)]
fn sstr_faults(s: u64) -> (u64, u64) {
    let len = (s >> 3) & 7;
    let units = s >> 8;
    let used = (1u64 << (8 * len)) - 1;
    (units & used & 0x0080_8080_8080_8080, (s & 0xC0) | (units & !used))
}

#[inline(always)]
fn check_sstr(s: u64) -> Result<()> {
    let (not_ascii, padding) = sstr_faults(s);
    if not_ascii != 0 {
        return Err(FormatError::new(format!("inline string slot 0x{s:016x} is not ASCII")));
    }
    if padding != 0 {
        return Err(FormatError::new(format!("inline string slot 0x{s:016x} has non-zero padding")));
    }
    Ok(())
}

#[inline(always)]
fn check_pair(s: u64) -> Result<()> {
    match pair_of(s) {
        Some(_) => Ok(()),
        None => Err(FormatError::new(format!("pair slot 0x{s:016x} has non-zero top bits"))),
    }
}

/// Slot `i` of a block of little-endian words.
#[inline(always)]
fn slot_at(block: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(block[8 * i..8 * i + 8].try_into().unwrap())
}

/// Checks the checksum and the whole structure reachable from the root.
pub fn verify(region: &Region<'_>) -> Result<()> {
    verify_report(region).map(|_| ())
}

/// Like `verify`, and returns the distinct array types the region holds.
pub fn verify_report(region: &Region<'_>) -> Result<Report> {
    let buf = region.bytes();
    // The checksum and the structural walk are independent: for large
    // regions, hash on a second thread while walking on this one.
    let (sum, structure) = if buf.len() >= PARALLEL_MIN_BYTES {
        std::thread::scope(|scope| {
            let hasher = scope.spawn(|| compute_checksum(buf));
            let structure = verify_structure(region);
            (hasher.join().unwrap_or(!region.header.checksum), structure)
        })
    } else {
        (compute_checksum(buf), Ok(Report::default()))
    };
    if sum != region.header.checksum {
        return Err(FormatError::at(
            OFF_CHECKSUM,
            format!("checksum mismatch: header says 0x{:016x}, content hashes to 0x{sum:016x}", region.header.checksum),
        ));
    }
    if buf.len() >= PARALLEL_MIN_BYTES {
        structure
    } else {
        verify_structure(region)
    }
}

/// Regions from this size on hash their checksum on a second thread.
const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// The structural half of `verify`, without the checksum.
pub fn verify_structure(region: &Region<'_>) -> Result<Report> {
    let buf = region.bytes();
    let root = region.header.root;
    // A large root list or tuple (the common shape of datasets) is walked as
    // two halves on two threads. Each half has its own bitmaps; without the
    // SHARED flag no container may be reached from both halves, which the
    // bitmaps being disjoint proves.
    if buf.len() >= PARALLEL_MIN_BYTES {
        if let Ok(Value::List(seq) | Value::Tuple(seq)) = region.reader.decode(root, buf.len()) {
            let half = seq.len / 2;
            let first = Work::Slots { pos: seq.pos, n: half, limit: seq.start };
            let second = Work::Slots { pos: seq.pos + 8 * half, n: seq.len - half, limit: seq.start };
            let (a, b) = std::thread::scope(|scope| {
                let other = scope.spawn(|| walk(region, second));
                let a = walk(region, first);
                (a, other.join())
            });
            let a = a?;
            let b = b.map_err(|_| FormatError::new("verification thread failed"))??;
            if !region.shared() && (a.objects.intersects(&b.objects) || a.sequences.intersects(&b.sequences)) {
                return Err(FormatError::new(
                    "container referenced twice in a region whose header does not set the SHARED flag",
                ));
            }
            let mut dtypes = a.dtypes;
            dtypes.extend(b.dtypes);
            let mut text_arrays = a.text_arrays;
            text_arrays.extend(b.text_arrays);
            let mut tuples = a.tuples;
            tuples.extend(b.tuples);
            check_tuple_cycles(&region.reader, &tuples)?;
            let first_extern = a.first_extern.or(b.first_extern);
            return Ok(Report { array_types: dtypes.into_iter().collect(), text_arrays, first_extern });
        }
    }
    let v = walk(region, Work::Slot(root, buf.len()))?;
    check_tuple_cycles(&region.reader, &v.tuples)?;
    Ok(Report { array_types: v.dtypes.into_iter().collect(), text_arrays: v.text_arrays, first_extern: v.first_extern })
}

/// Whether an enum member's TYPE has exactly the fields `name`, `value`.
pub fn enum_fields(r: &Reader<'_>, rec: crate::reader::Record) -> Result<bool> {
    if rec.len != 2 {
        return Ok(false);
    }
    let named = |i: usize, want: &[u8]| -> Result<bool> {
        Ok(matches!(r.field_name(rec.ty, i)?, Value::Str(s) if s.width == Width::Ascii && s.units() == want))
    };
    Ok(named(0, b"name")? && named(1, b"value")?)
}

/// Note [Cycles through tuples only]
/// A CYCLIC region may hold a value that contains itself, as Python data
/// can: through a list, dict, set or mutable record. Python cannot build a
/// tuple that contains itself through tuples alone, and its own code relies
/// on that (`hash` of such a tuple recurses until the C stack overflows), so
/// a region that holds one is refused: a depth-first walk of the graph of
/// tuples met (each item that is a tuple is an edge) must find no edge back
/// to a tuple still on its path. Linear in the tuples' items.
fn check_tuple_cycles(r: &Reader<'_>, tuples: &[Seq]) -> Result<()> {
    if tuples.is_empty() {
        return Ok(());
    }
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state: rustc_hash::FxHashMap<(usize, usize), u8> = rustc_hash::FxHashMap::default();
    let mut path: Vec<(Seq, usize)> = Vec::new();
    let limit = r.buf().len();
    for &t in tuples {
        if state.contains_key(&(t.start, t.len)) {
            continue;
        }
        state.insert((t.start, t.len), ON_PATH);
        path.push((t, 0));
        while let Some((seq, next)) = path.last_mut() {
            let seq = *seq;
            if *next == seq.len {
                state.insert((seq.start, seq.len), DONE);
                path.pop();
                continue;
            }
            let slot = r.word(seq.pos + 8 * *next)?;
            *next += 1;
            let child = match slot & TAG_MASK {
                TAG_TUPLE if (slot >> 3) & 0xFFFF != 0 => r.seq_slot_items(slot, limit)?,
                TAG_OBJ => match r.decode(slot, limit)? {
                    Value::Tuple(s) if s.len > 0 => s,
                    _ => continue,
                },
                _ => continue,
            };
            match state.get(&(child.start, child.len)) {
                Some(&ON_PATH) => {
                    return Err(FormatError::at(
                        child.start,
                        "tuple contains itself through tuples only (Python cannot build such a value)",
                    ))
                }
                Some(_) => {}
                None => {
                    state.insert((child.start, child.len), ON_PATH);
                    path.push((child, 0));
                }
            }
        }
    }
    Ok(())
}

/// Checks everything reachable from `start`; returns the visit record.
fn walk<'a>(region: &Region<'a>, start: Work) -> Result<Verifier<'a>> {
    let words = region.bytes().len() / 8;
    let recent_bits = recent_strs_bits(words);
    let mut v = Verifier {
        r: region.reader,
        shared: region.shared(),
        objects: Bitmap::new(words),
        sequences: Bitmap::new(words),
        shareable: Bitmap::new(words),
        revisited_sequences: HashSet::new(),
        long_strings: HashSet::new(),
        recent_strs: vec![0; 1 << recent_bits].into_boxed_slice(),
        recent_bits,
        stack: vec![start],
        dtypes: HashSet::new(),
        text_arrays: Vec::new(),
        first_extern: None,
        tuples: Vec::new(),
        table_hashes: Vec::new(),
        key_hashes: vec![(0, 0); 1 << KEY_HASHES_BITS].into_boxed_slice(),
    };
    while let Some(work) = v.stack.pop() {
        match work {
            Work::Slot(slot, limit) => v.check(slot, limit)?,
            Work::Slots { pos, n, limit } => v.scan(pos, n, limit)?,
        }
    }
    Ok(v)
}

impl<'a> Verifier<'a> {
    /// Records a visit of the container at `pos`; false means already checked.
    fn first_visit(&mut self, slot: u64, pos: usize, headerless: bool) -> Result<bool> {
        let seen = if headerless { self.sequences.test_and_set(pos / 8) } else { self.objects.test_and_set(pos / 8) };
        if !seen {
            return Ok(true);
        }
        if !self.shared {
            return Err(FormatError::at(
                pos,
                "container referenced twice in a region whose header does not set the SHARED flag",
            ));
        }
        Ok(headerless && self.revisited_sequences.insert(slot))
    }

    #[inline]
    fn push_slots(&mut self, pos: usize, n: usize, limit: usize) -> Result<()> {
        if n > 0 {
            self.stack.push(Work::Slots { pos, n, limit });
        }
        Ok(())
    }

    /// Checks a run of slots: leaves here, containers onto the stack.
    ///
    /// Note [Slots checked in blocks]
    /// A list of mixed scalars (ints, None, short strings, floats) sends
    /// each slot down another arm of the tag's match: a mispredicted jump
    /// a slot, most of the time of verifying such a list (60% of it in
    /// `check_leaf`'s dispatch, 1.25 GB/s). So the slots are taken
    /// `BLOCK_SLOTS` at a time: the ones complete in themselves (INT,
    /// CONST, SSTR, PAIR) are checked together without a branch, and only
    /// the others (strings, containers, objects) are visited one by one,
    /// in order. A block with a bad slot among the first kind is checked
    /// slot by slot, so the error reported is the first in slot order. A
    /// block whose tags seldom change (`MIXED_CHANGES`) makes the next one
    /// go slot by slot, where the same arm is taken every time. An object
    /// slot is checked where it is met, not queued: its check queues what
    /// it holds.
    fn scan(&mut self, pos: usize, n: usize, limit: usize) -> Result<()> {
        if n < BLOCK_MIN_SLOTS {
            return self.scan_each(pos, n, limit);
        }
        let end = n.checked_mul(8).and_then(|bytes| pos.checked_add(bytes));
        let words = match end.and_then(|end| self.r.buf().get(pos..end)) {
            Some(words) => words,
            // The slot past the end is found, with its message, one by one.
            None => return self.scan_each(pos, n, limit),
        };
        // The first block is taken as a mixed one; each block decides for
        // the next by how often its tags changed from one slot to the next.
        let mut mixed = true;
        for (b, block) in words.chunks(8 * BLOCK_SLOTS).enumerate() {
            let changes = if mixed {
                let (others, bad, changes) = classify_block(block);
                if bad {
                    return self.scan_each(pos + 8 * BLOCK_SLOTS * b, n - BLOCK_SLOTS * b, limit);
                }
                let mut rest = others;
                while rest != 0 {
                    let i = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    self.scan_slot(slot_at(block, i), limit)?;
                }
                changes
            } else {
                let mut changes = 0;
                let mut last = slot_at(block, 0) & TAG_MASK;
                for i in 0..block.len() / 8 {
                    let s = slot_at(block, i);
                    changes += (s & TAG_MASK != last) as u32;
                    last = s & TAG_MASK;
                    self.scan_slot(s, limit)?;
                }
                changes
            };
            mixed = changes >= MIXED_CHANGES;
        }
        Ok(())
    }

    /// `scan`, slot by slot.
    fn scan_each(&mut self, pos: usize, n: usize, limit: usize) -> Result<()> {
        for i in 0..n {
            let s = self.r.word(pos + 8 * i)?;
            self.scan_slot(s, limit)?;
        }
        Ok(())
    }

    /// One slot of a run, by its tag: a leaf checked here (as `check_leaf`
    /// does, in the same match), a container onto the stack.
    #[inline(always)]
    fn scan_slot(&mut self, s: u64, limit: usize) -> Result<()> {
        match s & TAG_MASK {
            TAG_INT => {}
            TAG_SSTR => check_sstr(s)?,
            TAG_PAIR => check_pair(s)?,
            TAG_STR => self.check_short_str(s, limit)?,
            TAG_LIST | TAG_TUPLE => {
                let len = ((s >> 3) & 0xFFFF) as usize;
                let off = ((s >> 19) << 3) as usize;
                if len == 0 {
                    if off != 0 {
                        return Err(FormatError::new(format!("empty sequence slot 0x{s:016x} has an offset")));
                    }
                    return Ok(());
                }
                if off < HEADER_LEN || off + 8 * len > limit {
                    // Let decode() produce the precise message.
                    self.r.decode(s, limit)?;
                }
                if self.first_visit(s, off, true)? {
                    if self.r.cyclic() && s & TAG_MASK == TAG_TUPLE {
                        self.tuples.push(Seq { start: off, pos: off, len });
                    }
                    self.stack.push(Work::Slots { pos: off, n: len, limit: off });
                }
            }
            // Objects, and constants (one past True is refused by `check`).
            _ => self.check(s, limit)?,
        }
        Ok(())
    }

    /// Checks a slot that is complete in itself or points to string units
    /// only; false for the others (containers and objects).
    #[inline]
    fn check_leaf(&mut self, s: u64, limit: usize) -> Result<bool> {
        match s & TAG_MASK {
            TAG_INT => {}
            TAG_CONST if s >> 3 <= CONST_TRUE => {}
            TAG_SSTR => check_sstr(s)?,
            TAG_STR => self.check_short_str(s, limit)?,
            TAG_PAIR => check_pair(s)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A headerless string: in place, valid units, canonical width.
    #[inline(always)]
    fn check_short_str(&mut self, s: u64, limit: usize) -> Result<()> {
        let width = Width::from_code(s >> 3);
        let n = ((s >> 5) & 0xFFFF) as usize;
        let bytes = n * width.unit();
        let off = ((s >> 21) << 3) as usize;
        // Placement is checked at every reference (each has its own limit),
        // the content of a long string only once.
        if off < HEADER_LEN || off + bytes > limit {
            self.r.decode(s, limit)?;
        }
        if bytes > RECHECK_STR_BYTES {
            if !self.long_strings.insert(s) {
                return Ok(());
            }
        } else if self.recent_strs[recent_index(s, self.recent_bits)] == s {
            // The same slot names the same units at the same width: their
            // content was checked when the slot was last met.
            return Ok(());
        }
        let units = &self.r.buf()[off..off + bytes];
        crate::reader::check_units(width, units, off)?;
        if !is_canonical_width(width, units) {
            return Err(FormatError::at(off, "string is not stored at its smallest width"));
        }
        if bytes <= RECHECK_STR_BYTES {
            self.recent_strs[recent_index(s, self.recent_bits)] = s;
        }
        Ok(())
    }

    // An arm's `if first_visit(..)` marks the container visited: as a match
    // guard it would fall through to the next arms when it is false.
    #[allow(clippy::collapsible_match)]
    fn check(&mut self, slot: u64, limit: usize) -> Result<()> {
        if self.check_leaf(slot, limit)? {
            return Ok(());
        }
        let tag = slot & TAG_MASK;
        let value = self.r.decode(slot, limit)?;
        if tag == TAG_OBJ
            && matches!(value, Value::Int(_) | Value::Float(_) | Value::Complex(..))
            && self.r.word(slot as usize)? >> 8 != 0
        {
            return Err(FormatError::at(slot as usize, "number object has a non-zero length field"));
        }
        match value {
            Value::Str(s) => {
                if tag == TAG_OBJ
                    && s.len * s.width.unit() > RECHECK_STR_BYTES
                    && self.shareable.test_and_set(slot as usize / 8)
                {
                    return Ok(());
                }
                // decode() proved ASCII strings ASCII, which is their canonical width.
                if !is_canonical_width(s.width, s.units()) {
                    return Err(FormatError::new(format!(
                        "string at slot 0x{slot:016x} is not stored at its smallest width"
                    )));
                }
            }
            Value::Int(i) if tag == TAG_OBJ && make_int_slot(i).is_some() => {
                return Err(FormatError::at(slot as usize, "int64 object holds a value that belongs in an INT slot"));
            }
            Value::BigInt(b) => {
                // (Measured on the slice: a copy to trim was an allocation
                // per big int.)
                if crate::hash::minimal_twos_complement(b).len() != b.len() || b.len() <= 8 {
                    return Err(FormatError::at(slot as usize, "big int object is not minimal"));
                }
            }
            Value::List(seq) | Value::Tuple(seq) => {
                if seq.len > 0 && self.first_visit(slot, seq.start, tag != TAG_OBJ)? {
                    if self.r.cyclic() && matches!(value, Value::Tuple(_)) {
                        self.tuples.push(seq);
                    }
                    self.push_slots(seq.pos, seq.len, seq.start)?;
                }
            }
            Value::Set(t) | Value::FrozenSet(t) => {
                if self.first_visit(slot, t.start, false)? {
                    self.check_table(t)?;
                    self.push_slots(t.pos, t.len, t.start)?;
                }
            }
            Value::Dict(d) => {
                if self.first_visit(slot, d.start, false)? {
                    // Shapes are shared by design, whatever the SHARED flag says.
                    if !self.shareable.test_and_set(d.shape.start / 8) {
                        self.check_table(d.shape)?;
                        self.push_slots(d.shape.pos, d.shape.len, d.shape.start)?;
                    }
                    if d.ids != 0 {
                        let buf = self.r.buf();
                        crate::id_dict::check_ids_distinct(&buf[d.ids..d.ids + d.len], &buf[d.ids + d.len..d.values])
                            .map_err(|m| FormatError::at(d.start, m))?;
                    }
                    self.push_slots(d.values, d.len, d.start)?;
                }
            }
            Value::NumList(l) => {
                if self.first_visit(slot, l.start, false)? && l.int32 && l.len % 2 == 1 {
                    // An odd INT32_LIST's last word ends in 4 bytes of padding.
                    let buf = self.r.buf();
                    if buf.get(l.end()..l.end() + 4).is_none_or(|pad| pad.iter().any(|&b| b != 0)) {
                        return Err(FormatError::at(l.start, "32-bit int list has non-zero padding"));
                    }
                }
            }
            Value::Column(c) => {
                if self.first_visit(slot, c.start, false)? {
                    self.check_column(c)?;
                }
            }
            Value::Ext(e) if e.kind == KIND_FRACTION => {
                let f = crate::fraction::decode(&e).map_err(|m| FormatError::at(e.start, m))?;
                crate::fraction::check_lowest_terms(&f).map_err(|m| FormatError::at(e.start, m))?;
            }
            Value::Extern(x) => {
                self.first_extern.get_or_insert(x.start);
            }
            Value::NdArray(a) => {
                if a.dtype.contains('U') && !a.data.is_empty() {
                    self.text_arrays.push(a.start);
                }
                let t = ArrayType { dtype: a.dtype.to_string(), flags: a.flags & ND_DESCR, itemsize: a.itemsize };
                self.dtypes.insert(t);
            }
            Value::Record(rec) => {
                // Enum members are immutable singletons: shared by design.
                let member = rec.ty.flavor == FLAVOR_ENUM || rec.ty.flavor == FLAVOR_ENUM_MIXIN;
                let first = if member {
                    !self.shareable.test_and_set(rec.start / 8)
                } else {
                    self.first_visit(slot, rec.start, false)?
                };
                if first {
                    // Types, like shapes, are shared by design.
                    if !self.shareable.test_and_set(rec.ty.start / 8) {
                        let r = self.r;
                        r.type_name(rec.ty)?;
                        if member && !enum_fields(&r, rec)? {
                            return Err(FormatError::at(
                                rec.ty.start,
                                "an enum member's TYPE does not have exactly the fields name and value",
                            ));
                        }
                        self.check(rec.ty.name, rec.ty.start)?;
                        for i in 0..rec.len {
                            if !matches!(r.field_name(rec.ty, i)?, Value::Str(_)) {
                                return Err(FormatError::at(rec.ty.start, "record field name is not a string"));
                            }
                        }
                        self.check_table(rec.ty.fields)?;
                        self.push_slots(rec.ty.fields.pos, rec.len, rec.ty.start)?;
                    }
                    self.push_slots(rec.values, rec.len, rec.start)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A TABLE's columns are list-likes of its length, a LIST_COLUMN's
    /// offsets cut its child, a STR_COLUMN's strings are canonical; what
    /// they reference is queued.
    fn check_column(&mut self, c: Column) -> Result<()> {
        let r = self.r;
        match c.kind {
            ColumnKind::Rows { shape, cols, keyed } => {
                if !self.shareable.test_and_set(shape.start / 8) {
                    self.check_table(shape)?;
                    self.push_slots(shape.pos, shape.len, shape.start)?;
                }
                if keyed != 0 {
                    check_key_lists(&r, keyed, shape.len, c.len)?;
                }
                for i in 0..shape.len {
                    let col = r.table_column(c.start, cols, i)?;
                    if r.list_len(&col) != Some(c.len) || matches!(col, Value::Tuple(_)) {
                        return Err(FormatError::at(cols + 8 * i, "table column is not a list as long as its table"));
                    }
                    self.stack.push(Work::Slot(r.word(cols + 8 * i)?, c.start));
                }
            }
            ColumnKind::Strs { width, offs, units, total } => {
                if read_u32(r.buf(), offs) != 0 || read_u32(r.buf(), offs + 4 * c.len) as usize != total {
                    return Err(FormatError::at(offs, "string column offsets do not run from 0 to its unit count"));
                }
                let mut prev = 0;
                for i in 0..c.len {
                    let end = read_u32(r.buf(), offs + 4 * (i + 1)) as usize;
                    if end < prev || end > total {
                        return Err(FormatError::at(
                            offs + 4 * i,
                            "string column offsets decrease or run past its units",
                        ));
                    }
                    let u = width.unit();
                    let data = &r.buf()[units + prev * u..units + end * u];
                    crate::reader::check_units(width, data, units + prev * u)?;
                    if !is_canonical_width(width, data) {
                        return Err(FormatError::at(
                            units + prev * u,
                            "string column holds a string not at its smallest width",
                        ));
                    }
                    prev = end;
                }
            }
            ColumnKind::Lists { offs, child } => {
                if read_u32(r.buf(), offs) != 0 || read_u32(r.buf(), offs + 4 * c.len) as usize != child.len() {
                    return Err(FormatError::at(offs, "list column offsets do not run from 0 to its child's length"));
                }
                for i in 0..c.len {
                    if read_u32(r.buf(), offs + 4 * (i + 1)) < read_u32(r.buf(), offs + 4 * i) {
                        return Err(FormatError::at(offs + 4 * i, "list column offsets decrease"));
                    }
                }
                self.stack.push(Work::Slot(r.word(c.start + 8)?, c.start));
            }
            ColumnKind::Slots32 { cells } => {
                for i in 0..c.len {
                    if !crate::columns::is_slot32_cell(read_u32(r.buf(), cells + 4 * i)) {
                        return Err(FormatError::at(
                            cells + 4 * i,
                            "small-scalar column cell is no int or constant slot",
                        ));
                    }
                }
                if c.len % 2 == 1 && read_u32(r.buf(), cells + 4 * c.len) != 0 {
                    return Err(FormatError::at(c.start, "small-scalar column has non-zero padding"));
                }
            }
            // Every code names a string slot of the dictionary, which is
            // then checked as any list is.
            ColumnKind::Codes { dict, cells } => {
                for i in 0..dict.len {
                    if !matches!(r.seq_slot(dict, i)? & TAG_MASK, TAG_SSTR | TAG_STR) {
                        return Err(FormatError::at(
                            dict.pos + 8 * i,
                            "string-code column dictionary item is no string slot",
                        ));
                    }
                }
                for i in 0..c.len {
                    if read_u32(r.buf(), cells + 4 * i) as usize >= dict.len {
                        return Err(FormatError::at(
                            cells + 4 * i,
                            "string-code column code names no string of its dictionary",
                        ));
                    }
                }
                if c.len % 2 == 1 && read_u32(r.buf(), cells + 4 * c.len) != 0 {
                    return Err(FormatError::at(c.start, "string-code column has non-zero padding"));
                }
                self.stack.push(Work::Slot(r.word(c.start + 8)?, c.start));
            }
        }
        Ok(())
    }

    fn check_table(&mut self, t: Table) -> Result<()> {
        check_table_with(&self.r, t, &mut self.table_hashes, &mut self.key_hashes)
    }
}

/// A KEYED_TABLE's key lists (key-list word at `word`) over a shape of `k`
/// keys, for `n` rows: offsets from 0 to the id count, each list's ids
/// keys of the shape and distinct, each row byte a list or None, and the
/// padding zero. (A reader checks a row's list and ids on every read.)
pub(crate) fn check_key_lists(r: &Reader<'_>, word: usize, k: usize, n: usize) -> Result<()> {
    use crate::columns::{KeyLists, NONE_ROW};
    let buf = r.buf();
    let lists =
        KeyLists::at(word, r.word(word)?).ok_or_else(|| FormatError::at(word, "keyed table has no key list"))?;
    let off = |t: usize| lists.offset(buf, t);
    if off(0) != 0 || off(lists.lists) != lists.ids_total {
        return Err(FormatError::at(lists.offs, "keyed table key-list offsets do not run from 0 to its id count"));
    }
    let zero = |from: usize, to: usize| buf[from..to].iter().all(|&b| b == 0);
    if !zero(lists.offs + 2 * (lists.lists + 1), lists.ids)
        || !zero(lists.ids + lists.ids_total, lists.rows)
        || !zero(lists.rows + n, lists.rows + pad8(n))
    {
        return Err(FormatError::at(word, "keyed table has non-zero padding"));
    }
    if let Some(t) = (0..lists.lists).find(|&t| off(t) > off(t + 1)) {
        return Err(FormatError::at(lists.offs + 2 * t, "keyed table key-list offsets decrease"));
    }
    for t in 0..lists.lists {
        let (a, e) = (off(t), off(t + 1));
        let ids = &buf[lists.ids + a..lists.ids + e];
        crate::id_dict::check_ids_in_table(ids, k).map_err(|m| FormatError::at(lists.ids + a, m))?;
        crate::id_dict::check_ids_distinct(ids, &[]).map_err(|m| FormatError::at(lists.ids + a, m))?;
    }
    if let Some(i) = buf[lists.rows..lists.rows + n].iter().position(|&b| b != NONE_ROW && b as usize >= lists.lists) {
        return Err(FormatError::at(lists.rows + i, "keyed table row names no key list of its table"));
    }
    Ok(())
}

/// Entries of `Verifier::key_hashes`, a direct-mapped table.
const KEY_HASHES_BITS: u32 = 10;

/// A set's elements or a shape's keys are hashable and distinct, and the
/// index finds each at its place. Views of unverified regions run it once
/// per table before they trust a lookup that finds nothing.
pub fn check_table(r: &Reader<'_>, t: Table) -> Result<()> {
    check_table_with(r, t, &mut Vec::new(), &mut [])
}

/// `check_table`, with `hashes` as scratch space and `key_hashes` (empty
/// for none) remembering the hash of string keys by slot word: a STR slot
/// names its units by place, length and width, an inline one holds them,
/// so equal words hash alike. Dicts of many shapes over few key names hash
/// each name once.
fn check_table_with(r: &Reader<'_>, t: Table, hashes: &mut Vec<u64>, key_hashes: &mut [(u64, u64)]) -> Result<()> {
    {
        let cap = index_cap(t.len);
        hashes.clear();
        for i in 0..t.len {
            let item = r.table_item(t, i)?;
            // Lookups compare strings by their stored form: a key stored
            // otherwise than a writer stores it is listed but never found.
            let slot = r.word(t.pos + 8 * i)?;
            if slot & TAG_MASK == TAG_SSTR {
                let len = ((slot >> 3) & 7) as usize;
                let b = slot.to_le_bytes();
                if b[0] & 0xC0 != 0 || b[1 + len..].iter().any(|&c| c != 0) {
                    return Err(FormatError::at(
                        t.pos + 8 * i,
                        "set or dict key is an inline string with non-zero padding",
                    ));
                }
            }
            if let Value::Str(s) = item {
                if !is_canonical_width(s.width, s.units()) {
                    return Err(FormatError::at(
                        t.start,
                        "set or dict key is a string not stored at its smallest width",
                    ));
                }
            }
            let h = match slot & TAG_MASK {
                TAG_STR | TAG_SSTR if !key_hashes.is_empty() => {
                    let at = crate::hash::place_of(slot, KEY_HASHES_BITS);
                    // An empty entry's word, 0, is an INT slot: never a string's.
                    match key_hashes[at] {
                        (word, h) if word == slot => h,
                        _ => {
                            let h = hash_value(r, item, 0)?;
                            key_hashes[at] = (slot, h);
                            h
                        }
                    }
                }
                _ => hash_value(r, item, 0)?,
            };
            hashes.push(h);
        }
        if cap == 0 {
            for i in 0..t.len {
                for j in 0..i {
                    if hashes[i] == hashes[j] && values_eq(r, r.table_item(t, i)?, r, r.table_item(t, j)?)? {
                        return Err(FormatError::at(t.start, "set or dict holds the same key twice"));
                    }
                }
            }
            return Ok(());
        }
        let used = (0..cap).filter(|&p| r.index_entry(t, p) != 0).count();
        if used != t.len {
            return Err(FormatError::at(t.index_pos(), "hash index has the wrong number of entries"));
        }
        let mask = cap - 1;
        for (i, &h) in hashes.iter().enumerate() {
            let mut p = (h as usize) & mask;
            let mut found = false;
            for _ in 0..cap {
                let e = r.index_entry(t, p) as usize;
                if e == 0 || e > t.len {
                    break;
                }
                if e - 1 == i {
                    found = true;
                    break;
                }
                if hashes[e - 1] == h && values_eq(r, r.table_item(t, i)?, r, r.table_item(t, e - 1)?)? {
                    return Err(FormatError::at(t.start, "set or dict holds the same key twice"));
                }
                p = (p + 1) & mask;
            }
            if !found {
                return Err(FormatError::at(t.index_pos(), "hash index does not lead to every entry"));
            }
        }
        Ok(())
    }
}
