//! Verification: header errors, checksum, structural rules on hand-forged
//! regions, and mutation loops that must never panic or hang.

use bale_core::format::*;
use bale_core::hash::{self, hash_value};
use bale_core::verify::verify_structure;
use bale_core::{compute_checksum, lookup_str, values_eq, Builder, FormatError, Reader, Region, Value};

// ----------------------------------------------------------------- helpers

fn put(b: &mut [u8], off: usize, w: u64) {
    b[off..off + 8].copy_from_slice(&w.to_le_bytes());
}

fn get(b: &[u8], off: usize) -> u64 {
    read_u64(b, off)
}

fn fix_checksum(b: &mut [u8]) {
    let s = compute_checksum(b);
    put(b, OFF_CHECKSUM, s);
}

fn fix_len(b: &mut [u8]) {
    let n = b.len() as u64;
    put(b, OFF_TOTAL_LEN, n);
}

/// Offset of the payload of a STR, LIST or TUPLE slot, or of an object.
fn slot_off(slot: u64) -> usize {
    match slot & TAG_MASK {
        TAG_STR => ((slot >> 21) << 3) as usize,
        TAG_LIST | TAG_TUPLE => ((slot >> 19) << 3) as usize,
        TAG_OBJ => slot as usize,
        _ => panic!("slot 0x{slot:x} has no offset"),
    }
}

/// A region from raw words placed at offset 64 (header filled in, checksummed).
fn raw_region(body: &[u64], root: u64, flags: u32) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_LEN];
    for w in body {
        b.extend_from_slice(&w.to_le_bytes());
    }
    b[0..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&BYTE_ORDER_MARK.to_le_bytes());
    fix_len(&mut b);
    put(&mut b, OFF_ROOT, root);
    b[40..44].copy_from_slice(&flags.to_le_bytes());
    fix_checksum(&mut b);
    b
}

fn key_hash(b: &Builder, slot: u64) -> u64 {
    let r = Reader::new(b.bytes());
    hash_value(&r, r.decode(slot, b.len()).unwrap(), 0).unwrap()
}

fn hashes_of(b: &Builder, slots: &[u64]) -> Vec<u64> {
    slots.iter().map(|&s| key_hash(b, s)).collect()
}

fn header_err(bytes: &[u8]) -> FormatError {
    match Region::new(bytes) {
        Ok(_) => panic!("header accepted"),
        Err(e) => {
            // Verification reports the same error.
            assert_eq!(Region::new_verified(bytes).unwrap_err(), e);
            e
        }
    }
}

fn assert_msg(e: &FormatError, needles: &[&str]) {
    let text = e.to_string().to_lowercase();
    for n in needles {
        assert!(text.contains(&n.to_lowercase()), "error {text:?} should mention {n:?}");
    }
}

/// A structurally invalid region with a correct checksum: only the
/// structural check may refuse it, with a message naming `needle`.
fn refuse(bytes: &[u8], needles: &[&str]) -> FormatError {
    let region = Region::new(bytes).expect("the header is fine");
    assert_eq!(compute_checksum(bytes), region.header.checksum, "the checksum is fine");
    let e = match verify_structure(&region) {
        Ok(_) => panic!("structure accepted; expected an error mentioning {needles:?}"),
        Err(e) => e,
    };
    assert_msg(&e, needles);
    assert_eq!(Region::new_verified(bytes).unwrap_err(), e);
    // A full unverified read must not panic either.
    let _ = walk(&region, 1 << 20, false);
    e
}

fn accept(bytes: &[u8]) {
    if let Err(e) = Region::new_verified(bytes) {
        panic!("region refused: {e}");
    }
    let region = Region::new(bytes).unwrap();
    walk(&region, usize::MAX, true).unwrap();
}

fn finish_fixed(b: Builder, root: u64) -> Vec<u8> {
    b.finish(root)
}

// ------------------------------------------------------------------ walker

/// Decodes everything reachable from the root, iteratively (references
/// point backwards, so this terminates). With `strict` (a verified region)
/// every element and key must also be found again through its hash.
/// Stops quietly after `budget` values (shared containers may expand
/// exponentially). Returns the number of values visited.
fn walk(region: &Region<'_>, budget: usize, strict: bool) -> Result<usize, FormatError> {
    let r = region.reader;
    let mut stack = vec![region.root()?];
    let mut steps = 0usize;
    while let Some(v) = stack.pop() {
        steps += 1;
        if steps > budget {
            return Ok(steps);
        }
        let hashable = hash_value(&r, v, 0);
        match v {
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Complex(..) => {
                hashable?;
            }
            Value::BigInt(b) => {
                assert!(!b.is_empty());
                hashable?;
            }
            Value::Bytes(_) => {
                hashable?;
            }
            Value::Str(s) => {
                let text = s.to_string_lossy();
                assert_eq!(text.chars().count(), s.len);
                assert_eq!(s.units().len(), s.len * s.width.unit());
                hashable?;
            }
            Value::List(seq) | Value::Tuple(seq) => {
                if matches!(v, Value::List(_)) && seq.len > 0 {
                    assert!(hashable.is_err(), "a list is unhashable");
                }
                for i in 0..seq.len {
                    stack.push(r.seq_item(seq, i)?);
                }
            }
            Value::Column(c) => {
                assert!(hashable.is_err(), "a columnar list is unhashable");
                for i in 0..c.len {
                    stack.push(r.column_item(c, i)?);
                }
            }
            Value::Set(t) | Value::FrozenSet(t) => {
                for i in 0..t.len {
                    let e = r.table_item(t, i)?;
                    stack.push(e);
                    let eh = hash_value(&r, e, 0);
                    if strict {
                        let eh = eh?;
                        if values_eq(&r, e, &r, e)? {
                            assert_eq!(r.find(t, eh, |c| values_eq(&r, e, &r, c))?, Some(i), "element {i}");
                        }
                    } else if let Ok(eh) = eh {
                        r.find(t, eh, |c| values_eq(&r, e, &r, c))?;
                    }
                }
            }
            Value::Dict(d) => {
                for i in 0..d.len {
                    let k = r.dict_key(d, i)?;
                    let val = r.dict_value(d, i)?;
                    stack.push(k);
                    stack.push(val);
                    if let Value::Str(s) = k {
                        let found = r.find_str(d.shape, s.width, s.units())?;
                        if strict {
                            assert_eq!(found, Some(r.dict_key_index(d, i)), "find_str of key {i}");
                        }
                        let text = s.to_string_lossy();
                        let looked = lookup_str(&r, d, &text)?;
                        let lossless = (0..s.len).all(|j| char::from_u32(s.char_at(j)).is_some());
                        if strict && lossless {
                            assert!(looked.is_some(), "lookup_str of key {text:?}");
                        }
                    }
                    if let Ok(kh) = hash_value(&r, k, 0) {
                        let found = r.find(d.shape, kh, |c| values_eq(&r, k, &r, c))?;
                        if strict && values_eq(&r, k, &r, k)? {
                            assert_eq!(found, Some(r.dict_key_index(d, i)), "key {i} by hash");
                        }
                    } else if strict {
                        panic!("unhashable key in a verified region");
                    }
                }
            }
            Value::Pair(..) => {
                hashable?;
            }
            Value::Ext(e) => {
                if bale_core::typed::hashable_ext(&e) {
                    hashable?;
                } else {
                    assert!(hashable.is_err());
                }
            }
            Value::NdArray(a) => {
                assert_eq!(a.data_off % 64, 0);
                assert!(a.data_off + a.data.len() <= a.start || a.data.is_empty());
            }
            Value::NumList(l) => {
                for i in 0..l.len {
                    stack.push(r.num_item(l, i)?);
                }
            }
            Value::Record(rec) => {
                r.type_name(rec.ty)?;
                for i in 0..rec.len {
                    let name = r.field_name(rec.ty, i)?;
                    if let Value::Str(s) = name {
                        let found = r.find_str(rec.ty.fields, s.width, s.units())?;
                        if strict {
                            assert_eq!(found, Some(i), "field {i}");
                        }
                    }
                    stack.push(r.record_value(rec, i)?);
                }
            }
            Value::Extern(_) => assert!(hashable.is_err(), "an EXTERN hashed"),
        }
    }
    Ok(steps)
}

// ---------------------------------------------------------- sample regions

/// A bit of everything, small enough to mutate exhaustively.
fn kitchen_sink() -> Vec<u8> {
    let mut b = Builder::new();
    let i64obj = b.int(INT_MAX + 1);
    let big = b.int_bytes(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0]);
    let f = b.float(-0.0);
    let c = b.complex(1.5, -2.0);
    let s_ascii = b.str_utf8("abcdefgh");
    let s_latin = b.str_utf8("café");
    let s_ucs2 = b.str_utf8("€1");
    let s_ucs4 = b.str_utf8("😀");
    let by = b.bytes_obj(b"\x00\xffxyz");
    let one = b.int(1);
    let sstr = b.str_utf8("k");
    let inner = b.seq(true, &[one, sstr]);
    let nested = b.seq(false, &[inner, SLOT_EMPTY_LIST, SLOT_NONE]);
    let ka = b.str_utf8("a");
    let kb = b.str_utf8("bb");
    let kc = b.str_utf8("a long key");
    let keys = [ka, kb, kc];
    let hs = hashes_of(&b, &keys);
    let shape = b.shape(&keys, &hs);
    let d1 = b.dict(shape, &[one, SLOT_TRUE, f]);
    let d2 = b.dict(shape, &[SLOT_FALSE, s_latin, SLOT_EMPTY_TUPLE]);
    let set_elems: Vec<u64> = (0..10).map(|i| b.int(i * 3)).collect();
    let hs = hashes_of(&b, &set_elems);
    let set = b.set(false, &set_elems, &hs);
    let t2 = b.seq(true, &[one, one]);
    let fz_elems = [t2, sstr, big];
    let hs = hashes_of(&b, &fz_elems);
    let fz = b.set(true, &fz_elems, &hs);
    let root = b.seq(
        true,
        &[i64obj, big, f, c, s_ascii, s_latin, s_ucs2, s_ucs4, by, nested, d1, d2, set, fz, SLOT_EMPTY_LIST],
    );
    b.finish(root)
}

/// A dict with an indexed shape and indexed set values.
fn indexed_dict() -> Vec<u8> {
    let mut b = Builder::new();
    let keys: Vec<u64> = (0..12).map(|i| b.str_utf8(&format!("key{i}"))).collect();
    let hs = hashes_of(&b, &keys);
    let shape = b.shape(&keys, &hs);
    let mut vals = Vec::new();
    for i in 0..12 {
        vals.push(match i % 3 {
            0 => b.int(i),
            1 => b.str_utf8(&format!("value number {i}")),
            _ => b.float(i as f64 / 4.0),
        });
    }
    let d = b.dict(shape, &vals);
    b.finish(d)
}

/// A region with the SHARED flag and shared containers.
fn shared_region() -> Vec<u8> {
    let mut b = Builder::new();
    b.set_flags(FLAG_SHARED);
    let one = b.int(1);
    let s = b.str_utf8("shared!!");
    let l = b.seq(false, &[one, s]);
    let l2 = b.seq(false, &[l, l]);
    let fz_elems = [one, s];
    let hs = hashes_of(&b, &fz_elems);
    let fz = b.set(true, &fz_elems, &hs);
    let root = b.seq(false, &[l2, l2, l, fz, fz]);
    b.finish(root)
}

#[test]
fn sample_regions_are_valid() {
    for bytes in [kitchen_sink(), indexed_dict(), shared_region()] {
        accept(&bytes);
    }
}

// ------------------------------------------------------------------ header

fn valid() -> Vec<u8> {
    let mut b = Builder::new();
    let s = b.str_utf8("a header test");
    let root = b.seq(false, &[s]);
    b.finish(root)
}

#[test]
fn header_too_short() {
    for n in [0usize, 1, 8, 63] {
        let e = header_err(&valid()[..n.min(63)]);
        assert_msg(&e, &["too short"]);
    }
}

#[test]
fn header_bad_magic() {
    for i in 0..8 {
        let mut b = valid();
        b[i] ^= 0x20;
        let e = header_err(&b);
        assert_msg(&e, &["magic"]);
        assert_eq!(e.offset, Some(0));
    }
    // Text-mode mangling: CRLF turned into LF.
    let mut b = valid();
    b.remove(5);
    b.push(0);
    assert_msg(&header_err(&b), &["magic"]);
}

#[test]
fn header_big_endian_byte_order() {
    let mut b = valid();
    b[12..16].copy_from_slice(&[1, 2, 3, 4]);
    let e = header_err(&b);
    assert_msg(&e, &["big-endian"]);
    assert_eq!(e.offset, Some(OFF_BOM));
    let mut b = valid();
    b[12..16].copy_from_slice(&[4, 3, 2, 2]);
    assert_msg(&header_err(&b), &["byte-order"]);
}

#[test]
fn header_version() {
    let mut b = valid();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    let e = header_err(&b);
    assert_msg(&e, &["version 2", "version 1"]);
    assert_eq!(e.offset, Some(OFF_VERSION));
    for v in [0u32, 3, 0xFFFF_FFFF] {
        let mut b = valid();
        b[8..12].copy_from_slice(&v.to_le_bytes());
        assert_msg(&header_err(&b), &["version", &v.to_string()]);
    }
}

#[test]
fn header_total_len() {
    // The field disagrees with the buffer.
    for delta in [8i64, -8, 1, 1 << 40] {
        let mut b = valid();
        let n = (b.len() as i64 + delta) as u64;
        put(&mut b, OFF_TOTAL_LEN, n);
        let e = header_err(&b);
        assert_msg(&e, &["bytes"]);
        assert_eq!(e.offset, Some(OFF_TOTAL_LEN));
    }
    // Trailing bytes after a region are refused.
    for extra in [1usize, 7, 8, 64] {
        let mut b = valid();
        b.resize(b.len() + extra, 0);
        let e = header_err(&b);
        assert_eq!(e.offset, Some(OFF_TOTAL_LEN));
        assert_msg(&e, &[&format!("{}", b.len())]);
    }
    // A length that is not a multiple of 8.
    let mut b = valid();
    b.extend_from_slice(&[0, 0, 0, 0]);
    fix_len(&mut b);
    assert_msg(&header_err(&b), &["multiple of 8"]);
}

#[test]
fn header_flags_and_reserved() {
    // 2 is CYCLIC, which is refused without SHARED (1).
    for flag in [2u32, 4, 0x100, 0x8000_0000, 7] {
        let mut b = valid();
        b[40..44].copy_from_slice(&flag.to_le_bytes());
        let e = header_err(&b);
        assert_msg(&e, &["flags"]);
        assert_eq!(e.offset, Some(OFF_FLAGS));
    }
    for i in OFF_RESERVED..HEADER_LEN {
        let mut b = valid();
        b[i] = 1;
        let e = header_err(&b);
        assert_msg(&e, &["reserved"]);
        assert_eq!(e.offset, Some(OFF_RESERVED));
    }
    // SHARED alone, and SHARED with CYCLIC, are fine.
    for flags in [1u8, 3] {
        let mut b = valid();
        b[40] = flags;
        fix_checksum(&mut b);
        accept(&b);
    }
}

#[test]
fn header_checks_in_order() {
    // magic before byte order before version before length before flags.
    let mut b = valid();
    b[0] = b'X';
    b[12..16].copy_from_slice(&[1, 2, 3, 4]);
    b[8] = 9;
    b.push(0);
    assert_msg(&header_err(&b), &["magic"]);
    b[0] = b'B';
    assert_msg(&header_err(&b), &["big-endian"]);
    b[12..16].copy_from_slice(&[4, 3, 2, 1]);
    assert_msg(&header_err(&b), &["version 9"]);
    b[8] = 1;
    b[40] = 2;
    assert_eq!(header_err(&b).offset, Some(OFF_TOTAL_LEN));
    b.pop();
    assert_eq!(header_err(&b).offset, Some(OFF_FLAGS));
    b[40] = 0;
    b[63] = 1;
    assert_eq!(header_err(&b).offset, Some(OFF_RESERVED));
}

#[test]
fn error_display_names_the_offset() {
    let mut b = valid();
    b[8] = 2;
    let e = header_err(&b);
    assert!(e.to_string().ends_with("(at byte 8)"), "{e}");
}

// ---------------------------------------------------------------- checksum

#[test]
fn checksum_mismatch() {
    let good = valid();
    // A padding byte: structurally still fine, only the checksum notices.
    let mut b = good.clone();
    // "a header test" is 13 bytes at offset 64, padded to 16.
    assert_eq!(&b[64..77], b"a header test");
    b[78] = 0x55;
    let region = Region::new(&b).unwrap();
    assert!(verify_structure(&region).is_ok());
    let e = Region::new_verified(&b).unwrap_err();
    assert_msg(&e, &["checksum"]);
    assert_eq!(e.offset, Some(OFF_CHECKSUM));
    // Unverified reading still works.
    walk(&region, usize::MAX, false).unwrap();
    // Changing the checksum field itself.
    let mut b = good.clone();
    b[33] ^= 1;
    assert_msg(&Region::new_verified(&b).unwrap_err(), &["checksum"]);
    // Changing the string's content.
    let mut b = good.clone();
    b[64] = b'A';
    assert_msg(&Region::new_verified(&b).unwrap_err(), &["checksum"]);
    assert!(verify_structure(&Region::new(&b).unwrap()).is_ok());
}

#[test]
fn checksum_is_xxh3_with_field_zeroed() {
    let b = valid();
    let mut z = b.clone();
    put(&mut z, OFF_CHECKSUM, 0);
    assert_eq!(get(&b, OFF_CHECKSUM), xxhash_rust::xxh3::xxh3_64(&z));
}

// --------------------------------------------------- structural: references

#[test]
fn forward_reference_to_an_object() {
    let mut b = Builder::new();
    let placeholder = b.int(0);
    let l = b.seq(false, &[placeholder]);
    let f = b.float(1.0);
    let mut bytes = finish_fixed(b, l);
    put(&mut bytes, slot_off(l), f);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
    // The unverified reader refuses it as well.
    let region = Region::new(&bytes).unwrap();
    let seq = match region.root().unwrap() {
        Value::List(s) => s,
        other => panic!("{other:?}"),
    };
    assert!(region.reader.seq_item(seq, 0).is_err());
}

#[test]
fn forward_reference_to_a_string_and_a_sequence() {
    for kind in 0..3 {
        let mut b = Builder::new();
        let placeholder = b.int(0);
        let l = b.seq(false, &[placeholder]);
        let target = match kind {
            0 => b.str_utf8("a string written later"),
            1 => {
                let x = b.int(5);
                b.seq(false, &[x])
            }
            _ => b.bytes_obj(b"bytes"),
        };
        let root = b.seq(false, &[l]);
        let mut bytes = finish_fixed(b, root);
        put(&mut bytes, slot_off(l), target);
        fix_checksum(&mut bytes);
        refuse(&bytes, &["before"]);
    }
}

#[test]
fn self_references() {
    // A headerless list whose element is itself.
    let mut b = Builder::new();
    let l = b.seq(false, &[SLOT_NONE]);
    let mut bytes = finish_fixed(b, l);
    put(&mut bytes, slot_off(l), l);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
    // A dict whose value is itself.
    let mut b = Builder::new();
    let k = b.str_utf8("k");
    let shape = b.shape(&[k], &[hash::hash_str_units(b"k")]);
    let d = b.dict(shape, &[SLOT_NONE]);
    let mut bytes = finish_fixed(b, d);
    put(&mut bytes, d as usize + 8, d);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
    // A set whose element is itself.
    let mut b = Builder::new();
    let s = b.set(true, &[SLOT_NONE], &[hash::mix(hash::SEED_NONE)]);
    let mut bytes = finish_fixed(b, s);
    put(&mut bytes, s as usize + 8, s);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
}

#[test]
fn dict_shape_after_the_dict() {
    let mut b = Builder::new();
    let k = b.str_utf8("k");
    let shape = b.shape(&[k], &[hash::hash_str_units(b"k")]);
    let d = b.dict(shape, &[SLOT_NONE]);
    let shape2 = b.shape(&[k], &[hash::hash_str_units(b"k")]);
    let root = b.seq(false, &[d]);
    let mut bytes = finish_fixed(b, root);
    put(&mut bytes, d as usize, header_word(KIND_DICT, shape2 >> 3));
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
    // The shape at the dict's own offset.
    put(&mut bytes, d as usize, header_word(KIND_DICT, d >> 3));
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
}

#[test]
fn references_into_the_header() {
    for root in [0u64, 8, 24, 32, 56] {
        let bytes = raw_region(&[0], root, 0);
        refuse(&bytes, &["header"]);
    }
    // STR and LIST slots with a payload in the header.
    let str_slot = TAG_STR | (8 << 5) | ((16u64 >> 3) << 21);
    refuse(&raw_region(&[0], str_slot, 0), &["header"]);
    let list_slot = make_seq_slot(TAG_LIST, 1, 8);
    refuse(&raw_region(&[0], list_slot, 0), &["header"]);
    // An element pointing into the header.
    let list_slot = make_seq_slot(TAG_LIST, 1, 64);
    refuse(&raw_region(&[40], list_slot, 0), &["header"]);
    // A dict whose shape is in the header.
    refuse(&raw_region(&[header_word(KIND_DICT, 2)], 64, 0), &["header"]);
}

#[test]
fn out_of_range_offsets() {
    let body = [header_word(KIND_FLOAT, 0), 0];
    let len = (HEADER_LEN + 16) as u64;
    for root in [len, len + 8, 1 << 40, u64::MAX - 7, (1 << 63) | 64] {
        refuse(&raw_region(&body, root, 0), &["before"]);
    }
    // An object whose header fits but whose payload runs past the end.
    refuse(&raw_region(&[header_word(KIND_COMPLEX, 0), 0], 64, 0), &["before"]);
    refuse(&raw_region(&[header_word(KIND_BYTES, 12), 0], 64, 0), &["before"]);
    refuse(&raw_region(&[header_word(KIND_BYTES, 100), 0], 64, 0), &["length"]);
    refuse(&raw_region(&[header_word(KIND_BYTES, MAX_OBJ_LEN), 0], 64, 0), &["length"]);
    refuse(&raw_region(&[header_word(KIND_STR_UCS4, 5), 0, 0], 64, 0), &["before"]);
    refuse(&raw_region(&[header_word(KIND_LIST, 3), 1, 1], 64, 0), &["before"]);
    refuse(&raw_region(&[header_word(KIND_SET, 1 << 40)], 64, 0), &["length"]);
    // STR and LIST slots past the end.
    let str_slot = TAG_STR | (9 << 5) | ((64u64 >> 3) << 21);
    refuse(&raw_region(&[0], str_slot, 0), &["before"]);
    let str_slot = TAG_STR | (1 << 5) | (((1u64 << 43) - 1) << 21);
    refuse(&raw_region(&[0], str_slot, 0), &["before"]);
    let list_slot = make_seq_slot(TAG_LIST, 0xFFFF, 64);
    refuse(&raw_region(&[1], list_slot, 0), &["before"]);
    let list_slot = TAG_TUPLE | (1 << 3) | (u64::MAX >> 19 << 19);
    refuse(&raw_region(&[1], list_slot, 0), &["before"]);
}

// ------------------------------------------------------ structural: slots

#[test]
fn invalid_tag_and_constants() {
    // Tag 7 is a PAIR slot: valid with its three top bits zero.
    accept(&raw_region(&[], 7, 0));
    refuse(&raw_region(&[], u64::MAX, 0), &["pair slot"]);
    refuse(&raw_region(&[], 7 | 1 << 61, 0), &["pair slot"]);
    let in_list = make_seq_slot(TAG_LIST, 2, 64);
    accept(&raw_region(&[SLOT_NONE, 0xF], in_list, 0));
    refuse(&raw_region(&[SLOT_NONE, 0xF | 1 << 63], in_list, 0), &["pair slot"]);
    for c in [3u64, 4, 1000, u64::MAX >> 3] {
        let slot = (c << 3) | TAG_CONST;
        refuse(&raw_region(&[], slot, 0), &["constant"]);
        refuse(&raw_region(&[SLOT_TRUE, slot], in_list, 0), &["constant"]);
    }
    // The three constants are fine.
    accept(&raw_region(&[SLOT_NONE, SLOT_TRUE, SLOT_FALSE], make_seq_slot(TAG_TUPLE, 3, 64), 0));
}

#[test]
fn unknown_object_kinds() {
    for kind in [0x00u8, 0x2A, 0x7F, 0xFF] {
        let bytes = raw_region(&[header_word(kind, 0), 0], 64, 0);
        refuse(&bytes, &["kind"]);
        // Also as a list element.
        let bytes = raw_region(&[header_word(kind, 0), 0, 64], make_seq_slot(TAG_LIST, 1, 80), 0);
        refuse(&bytes, &["kind"]);
    }
    // A SHAPE is not a value.
    let mut b = Builder::new();
    let shape = b.shape(&[SLOT_NONE], &[hash::mix(hash::SEED_NONE)]);
    let bytes = finish_fixed(b, shape);
    refuse(&bytes, &["shape"]);
}

/// An INT32_LIST of `items` at offset 64 (its last word's padding `pad`).
fn int32_list_words(items: &[i32], pad: u32) -> Vec<u64> {
    let mut words = vec![header_word(KIND_INT32_LIST, items.len() as u64)];
    for pair in items.chunks(2) {
        let hi = pair.get(1).map_or(pad, |&v| v as u32);
        words.push(pair[0] as u32 as u64 | (hi as u64) << 32);
    }
    words
}

#[test]
fn int32_lists_read_sign_extended_and_verify() {
    for items in [&[][..], &[7], &[-1, i32::MAX, i32::MIN], &[0, -5, 6, 1 << 30]] {
        let bytes = raw_region(&int32_list_words(items, 0), 64, 0);
        accept(&bytes);
        let region = Region::new_verified(&bytes).unwrap();
        let Value::NumList(l) = region.root().unwrap() else { panic!("not a number list") };
        assert!(l.int32 && !l.float && l.len == items.len());
        let read: Vec<i64> = (0..l.len)
            .map(|i| match region.reader.num_item(l, i).unwrap() {
                Value::Int(v) => v,
                _ => panic!("item {i} is not an int"),
            })
            .collect();
        assert_eq!(read, items.iter().map(|&v| v as i64).collect::<Vec<i64>>());
        // Written by the builder, byte for byte the same list.
        let mut b = Builder::new();
        let words: Vec<u64> = items.iter().map(|&v| v as i64 as u64).collect();
        let root = b.int32_list(&words);
        assert_eq!(finish_fixed(b, root), bytes);
    }
}

#[test]
fn int32_lists_with_padding_or_length_wrong() {
    // An odd list's last 4 bytes are padding, and must be zero.
    refuse(&raw_region(&int32_list_words(&[1, 2, 3], 9), 64, 0), &["padding"]);
    // A length past the region (three items need two words).
    let mut words = int32_list_words(&[1, 2, 3], 0);
    words.pop();
    refuse(&raw_region(&words, 64, 0), &["number list"]);
    // As a table column, its length must be the table's.
    let mut b = Builder::new();
    let shape = b.shape(&[make_sstr_slot(b"a")], &[hash::hash_str_units(b"a")]);
    let col = b.int32_list(&[1, 2, 3]);
    let root = b.table_object(2, shape, &[col]);
    refuse(&finish_fixed(b, root), &["column"]);
}

/// A SLOT32_COLUMN of `cells` at offset 64 (its last word's padding `pad`).
fn slot32_words(cells: &[u32], pad: u32) -> Vec<u64> {
    let mut words = vec![header_word(KIND_SLOT32_COLUMN, cells.len() as u64)];
    for pair in cells.chunks(2) {
        words.push(pair[0] as u64 | (pair.get(1).copied().unwrap_or(pad) as u64) << 32);
    }
    words
}

#[test]
fn slot32_columns_read_their_slots_and_verify() {
    let int = |v: i64| make_int_slot(v).unwrap() as u32;
    let cells = [SLOT_NONE as u32, SLOT_TRUE as u32, SLOT_FALSE as u32, int((1 << 28) - 1), int(-(1 << 28)), int(0)];
    for n in [1, 2, 5, 6] {
        let bytes = raw_region(&slot32_words(&cells[..n], 0), 64, 0);
        accept(&bytes);
        let region = Region::new_verified(&bytes).unwrap();
        let root = region.root().unwrap();
        assert_eq!(region.reader.list_len(&root), Some(n));
        let want = [
            Value::None,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int((1 << 28) - 1),
            Value::Int(-(1 << 28)),
            Value::Int(0),
        ];
        for (i, w) in want.iter().enumerate().take(n) {
            let got = region.reader.list_item(root, i).unwrap();
            assert_eq!(format!("{got:?}"), format!("{w:?}"), "cell {i}");
        }
        let mut b = Builder::new();
        let slots: Vec<u64> = cells[..n].iter().map(|&c| c as i32 as i64 as u64).collect();
        let col = b.slot_column(&slots);
        assert_eq!(finish_fixed(b, col), bytes, "the builder writes the same column");
    }
    // A slot no cell can hold (an int past 28 bits, a string) makes a LIST.
    let mut b = Builder::new();
    let list = b.slot_column(&[SLOT_NONE, make_int_slot(1 << 28).unwrap()]);
    let bytes = finish_fixed(b, list);
    assert!(matches!(Region::new_verified(&bytes).unwrap().root().unwrap(), Value::List(_)));
}

#[test]
fn slot32_columns_with_bad_cells_padding_or_length() {
    // Cells that sign-extend to no INT or constant slot: a string, a pair,
    // an unknown constant, an object reference (tag 0), a list.
    for cell in [TAG_SSTR as u32 | 8, TAG_PAIR as u32, (3 << 3) | TAG_CONST as u32, 64, TAG_LIST as u32] {
        refuse(&raw_region(&slot32_words(&[SLOT_NONE as u32, cell], 0), 64, 0), &["small-scalar column cell"]);
    }
    refuse(&raw_region(&slot32_words(&[SLOT_TRUE as u32], 5), 64, 0), &["padding"]);
    let mut words = slot32_words(&[SLOT_TRUE as u32; 3], 0);
    words.pop();
    refuse(&raw_region(&words, 64, 0), &["small-scalar column"]);
    // As a list column's child: refused (only lists, numbers and strings are children).
    let mut b = Builder::new();
    let child = b.slot32_column(&[SLOT_NONE as u32, SLOT_TRUE as u32]);
    let col = b.list_column(child, &[0, 1, 2]);
    refuse(&finish_fixed(b, col), &["child"]);
}

/// A STR_CODE_COLUMN at offset 64 + 8 * dict.len(), after its dictionary
/// `dict` (slots at 64), its dictionary slot `dict_slot` (the LIST slot of
/// those when `None`) and the last word's padding `pad`.
fn code_words(dict: &[u64], dict_slot: Option<u64>, codes: &[u32], pad: u32) -> (Vec<u64>, u64) {
    let mut words = dict.to_vec();
    let at = 64 + 8 * dict.len() as u64;
    words.push(header_word(KIND_STR_CODE_COLUMN, codes.len() as u64));
    words.push(dict_slot.unwrap_or_else(|| make_seq_slot(TAG_LIST, dict.len(), 64)));
    for pair in codes.chunks(2) {
        words.push(pair[0] as u64 | (pair.get(1).copied().unwrap_or(pad) as u64) << 32);
    }
    (words, at)
}

/// A region of `words` whose root is at `root`, read without verifying:
/// item `i` of the root list.
fn unverified_item(bytes: &[u8], i: usize) -> Result<String, FormatError> {
    let region = Region::new(bytes).unwrap();
    let root = region.root()?;
    region.reader.list_item(root, i).map(|v| format!("{v:?}"))
}

#[test]
fn str_code_columns_read_their_strings_and_verify() {
    let (a, b_, c) = (make_sstr_slot(b"a"), make_sstr_slot(b"bb"), make_sstr_slot(b"ccc"));
    let codes = [2u32, 0, 0, 1, 2, 2, 0];
    for n in [1, 2, 6, 7] {
        let (words, at) = code_words(&[a, b_, c], None, &codes[..n], 0);
        let bytes = raw_region(&words, at, 0);
        accept(&bytes);
        let region = Region::new_verified(&bytes).unwrap();
        let root = region.root().unwrap();
        assert_eq!(region.reader.list_len(&root), Some(n));
        let want = ["ccc", "a", "a", "bb", "ccc", "ccc", "a"];
        for (i, w) in want.iter().enumerate().take(n) {
            match region.reader.list_item(root, i).unwrap() {
                Value::Str(s) => assert_eq!(s.to_string_lossy(), *w, "item {i}"),
                v => panic!("item {i} is {v:?}"),
            }
        }
    }
    // The builder writes a column of repeated string slots as codes, in
    // order of first use, and the same bytes as the layout above.
    let mut b = Builder::new();
    let slots: Vec<u64> = [0, 1, 0, 0, 1, 1, 0, 0, 0, 1].iter().map(|&i| [a, b_][i]).collect();
    let col = b.slot_column(&slots);
    let bytes = finish_fixed(b, col);
    let (words, at) = code_words(&[a, b_], None, &[0, 1, 0, 0, 1, 1, 0, 0, 0, 1], 0);
    assert_eq!(bytes, raw_region(&words, at, 0));
    // Stored strings (STR slots) too, and the dictionary as a LIST object
    // when it is long.
    let mut b = Builder::new();
    let words: Vec<u64> = (0..300).map(|i| b.str_units(Width::Ascii, format!("word {i}").as_bytes())).collect();
    let slots: Vec<u64> = (0..1000).map(|i| words[i * 7 % 300]).collect();
    let col = b.slot_column(&slots);
    let bytes = finish_fixed(b, col);
    let region = Region::new_verified(&bytes).unwrap();
    let root = region.root().unwrap();
    assert!(matches!(root, Value::Column(bale_core::Column { kind: bale_core::ColumnKind::Codes { .. }, .. })));
    for i in [0, 1, 299, 999] {
        match region.reader.list_item(root, i).unwrap() {
            Value::Str(s) => assert_eq!(s.to_string_lossy(), format!("word {}", i * 7 % 300)),
            v => panic!("item {i} is {v:?}"),
        }
    }
    // Distinct strings, or too few rows, stay a LIST; so does a column with
    // anything but strings.
    for slots in
        [vec![a, b_, c, make_sstr_slot(b"d")], vec![a, a, a], vec![a, a, a, a, a, a, make_int_slot(1).unwrap()]]
    {
        let mut b = Builder::new();
        let col = b.slot_column(&slots);
        let bytes = finish_fixed(b, col);
        assert!(matches!(Region::new_verified(&bytes).unwrap().root().unwrap(), Value::List(_)), "{slots:?}");
    }
}

#[test]
fn str_code_columns_with_bad_codes_dictionaries_padding_or_length() {
    let (a, b_) = (make_sstr_slot(b"a"), make_sstr_slot(b"bb"));
    // A code past the dictionary: refused by verify and by the read itself.
    let (words, at) = code_words(&[a, b_], None, &[0, 2], 0);
    let bytes = raw_region(&words, at, 0);
    refuse(&bytes, &["code names no string"]);
    assert!(unverified_item(&bytes, 0).is_ok());
    assert!(unverified_item(&bytes, 1).unwrap_err().to_string().contains("code names no string"));
    // A dictionary item that is no string slot: an int, a list (read once
    // for each code, it would expand the region past the readers' budget),
    // an object.
    for item in [make_int_slot(5).unwrap(), make_seq_slot(TAG_LIST, 1, 64), 64] {
        let (words, at) = code_words(&[a, item], None, &[0, 1], 0);
        let bytes = raw_region(&words, at, 0);
        refuse(&bytes, &["dictionary item is no string"]);
        assert!(unverified_item(&bytes, 1).unwrap_err().to_string().contains("no string slot"));
    }
    // Padding after an odd count.
    let (words, at) = code_words(&[a, b_], None, &[1], 7);
    refuse(&raw_region(&words, at, 0), &["padding"]);
    // A count past the region.
    let (mut words, at) = code_words(&[a, b_], None, &[1, 0, 1], 0);
    words.pop();
    refuse(&raw_region(&words, at, 0), &["string-code column"]);
    // A dictionary slot that is no non-empty list lying before the column:
    // an int, the empty list, a tuple, an object that is no LIST (the
    // column itself, which a chain of columns would recurse through), a
    // list running past the column's start.
    let column_itself = 64 + 16;
    for (slot, needle) in [
        (make_int_slot(1).unwrap(), "dictionary"),
        (TAG_LIST, "dictionary"),
        (make_seq_slot(TAG_TUPLE, 2, 64), "dictionary"),
        (column_itself, "dictionary"),
        (64, "dictionary"),
        (make_seq_slot(TAG_LIST, 3, 64), "does not lie before"),
    ] {
        let (words, at) = code_words(&[a, b_], Some(slot), &[0, 1], 0);
        refuse(&raw_region(&words, at, 0), &[needle]);
    }
    // A LIST object as dictionary is fine.
    let mut words = vec![header_word(KIND_LIST, 2), a, b_];
    words.push(header_word(KIND_STR_CODE_COLUMN, 2));
    words.push(64);
    words.push(1); // codes 1 and 0
    accept(&raw_region(&words, 88, 0));
    // As a list column's child: refused.
    let mut b = Builder::new();
    let child = b.str_code_column(&[a, b_], &[0, 1, 1]);
    let col = b.list_column(child, &[0, 1, 3]);
    refuse(&finish_fixed(b, col), &["child"]);
    // As a table column, its length must be the table's.
    let mut b = Builder::new();
    let shape = b.shape(&[make_sstr_slot(b"k")], &[hash::hash_str_units(b"k")]);
    let col = b.str_code_column(&[a, b_], &[0, 1, 1]);
    let root = b.table_object(2, shape, &[col]);
    refuse(&finish_fixed(b, root), &["column"]);
}

#[test]
fn empty_sequence_slot_with_an_offset() {
    for tag in [TAG_LIST, TAG_TUPLE] {
        let slot = tag | (8u64 << 19);
        refuse(&raw_region(&[], slot, 0), &["empty"]);
        refuse(&raw_region(&[slot], make_seq_slot(TAG_LIST, 1, 64), 0), &["empty"]);
    }
}

#[test]
fn sstr_non_ascii_and_padding() {
    let good = make_sstr_slot(b"ab");
    let in_list = make_seq_slot(TAG_LIST, 1, 64);
    accept(&raw_region(&[good], in_list, 0));
    accept(&raw_region(&[], good, 0));
    // A high byte among the characters.
    let high = good | (0xC3 << 16);
    refuse(&raw_region(&[high], in_list, 0), &["inline string"]);
    refuse(&raw_region(&[], high, 0), &["inline string", "ascii"]);
    // Non-zero padding after the characters (byte 3 onwards).
    for byte in 3..8 {
        let padded = good | (0x61u64 << (8 * byte));
        refuse(&raw_region(&[padded], in_list, 0), &["inline string"]);
        refuse(&raw_region(&[], padded, 0), &["padding"]);
    }
    // Bits 6..7 of the first byte are padding as well.
    for bits in [0x40u64, 0x80, 0xC0] {
        refuse(&raw_region(&[good | bits], in_list, 0), &["inline string"]);
        refuse(&raw_region(&[], good | bits, 0), &["padding"]);
    }
    // Length 0 with a stray byte.
    let e = make_sstr_slot(b"") | (0x20 << 8);
    refuse(&raw_region(&[e], in_list, 0), &["inline string"]);
}

/// A list of `n` slots of every kind, in turns when `mixed` (ints, the
/// constants, inline strings, pairs, strings, floats, empty and nested
/// lists), else ints only; and where its slots start.
fn long_list(n: usize, mixed: bool) -> (Vec<u8>, usize) {
    let mut b = Builder::new();
    let mut slots = Vec::with_capacity(n);
    for i in 0..n {
        let slot = match if mixed { i % 9 } else { 0 } {
            0 => make_int_slot(i as i64).unwrap(),
            1 => SLOT_NONE,
            2 => SLOT_TRUE,
            3 => make_sstr_slot(b"ab"),
            4 => make_pair_slot(i as i64, -1).unwrap(),
            5 => {
                let latin1: Vec<u8> = format!("caf\u{e9} {i}").chars().map(|c| c as u8).collect();
                b.str_units(Width::Latin1, &latin1)
            }
            6 => b.float(i as f64 + 0.5),
            7 => SLOT_EMPTY_LIST,
            _ => {
                let item = b.float(-(i as f64));
                b.seq(false, &[item])
            }
        };
        slots.push(slot);
    }
    let root = b.seq(false, &slots);
    let pos = b.slots_pos(root);
    (b.finish(root), pos)
}

#[test]
fn a_bad_slot_anywhere_in_a_long_list_is_refused_by_its_rule() {
    // Note [Slots checked in blocks]: a run of slots is checked 64 at a
    // time, mixed blocks with the leaves' rules computed together, others
    // slot by slot; each bad leaf must be found wherever it falls (either
    // side of a block's end, in either kind of block) with its own message.
    let bad: [(u64, &[&str]); 6] = [
        (make_sstr_slot(b"ab") | (0xC3 << 16), &["inline string", "ascii"]),
        (make_sstr_slot(b"ab") | (0x61u64 << 40), &["inline string", "padding"]),
        (make_sstr_slot(b"ab") | 0x40, &["inline string", "padding"]),
        ((3 << 3) | TAG_CONST, &["constant"]),
        (make_pair_slot(1, 2).unwrap() | 1 << 62, &["pair slot"]),
        (TAG_TUPLE | (8u64 << 19), &["empty sequence"]),
    ];
    for mixed in [true, false] {
        let (good, pos) = long_list(300, mixed);
        accept(&good);
        for at in [0, 1, 2, 62, 63, 64, 65, 127, 128, 150, 191, 192, 299] {
            for (slot, needles) in &bad {
                let mut bytes = good.clone();
                put(&mut bytes, pos + 8 * at, *slot);
                fix_checksum(&mut bytes);
                refuse(&bytes, needles);
            }
        }
    }
}

#[test]
fn the_first_bad_slot_of_a_long_list_is_the_one_reported() {
    let constant = (3 << 3) | TAG_CONST;
    let pair = make_pair_slot(1, 2).unwrap() | 1 << 62;
    for mixed in [true, false] {
        let (good, pos) = long_list(300, mixed);
        for (first, second) in [(70, 100), (100, 70), (64, 65), (65, 64), (10, 250)] {
            let mut bytes = good.clone();
            put(&mut bytes, pos + 8 * first, constant);
            put(&mut bytes, pos + 8 * second, pair);
            fix_checksum(&mut bytes);
            refuse(&bytes, &[if first < second { "constant" } else { "pair slot" }]);
        }
    }
    // A bad string before a bad leaf of the same block: slot 77 holds
    // "café 77" in Latin-1, retagged as ASCII, which its "é" breaks.
    let (good, pos) = long_list(300, true);
    let str_slot = get(&good, pos + 8 * 77);
    assert_eq!(str_slot & TAG_MASK, TAG_STR, "slot 77 of the mixed list is a string");
    let mut bytes = good.clone();
    put(&mut bytes, pos + 8 * 77, str_slot & !(0b11 << 3));
    put(&mut bytes, pos + 8 * 80, constant);
    fix_checksum(&mut bytes);
    let e = refuse(&bytes, &[]);
    assert!(!e.to_string().contains("constant"), "the string at slot 77 comes first: {e}");
}

// ---------------------------------------------------- structural: strings

#[test]
fn ascii_string_with_a_high_byte() {
    // STR slot.
    let mut b = Builder::new();
    let s = b.str_utf8("abcdefgh");
    let root = b.seq(false, &[s]);
    let mut bytes = finish_fixed(b, root);
    bytes[slot_off(s) + 3] = 0xC3;
    fix_checksum(&mut bytes);
    refuse(&bytes, &["non-ascii"]);
    // STR slot as the root.
    let mut b = Builder::new();
    let s = b.str_utf8("abcdefgh");
    let mut bytes = finish_fixed(b, s);
    bytes[slot_off(s)] = 0x80;
    fix_checksum(&mut bytes);
    refuse(&bytes, &["non-ascii"]);
    // STR_ASCII object.
    let word = u64::from_le_bytes(*b"ab\xffd\0\0\0\0");
    refuse(&raw_region(&[header_word(KIND_STR_ASCII, 4), word], 64, 0), &["non-ascii"]);
    // A valid short object string is fine (strings may be objects).
    let word = u64::from_le_bytes(*b"abcd\0\0\0\0");
    accept(&raw_region(&[header_word(KIND_STR_ASCII, 4), word], 64, 0));
}

#[test]
fn ucs4_above_0x10ffff() {
    for bad in [0x110000u32, 0xFFFF_FFFF, 0x8000_0000] {
        let mut units = Vec::new();
        for c in [0x1F600u32, bad, 0x41] {
            units.extend_from_slice(&c.to_le_bytes());
        }
        let mut b = Builder::new();
        let s = b.str_units(Width::Ucs4, &units);
        let root = b.seq(true, &[s]);
        let bytes = finish_fixed(b, root);
        refuse(&bytes, &["10ffff"]);
        // As the root slot.
        let mut b = Builder::new();
        let s = b.str_units(Width::Ucs4, &units);
        refuse(&finish_fixed(b, s), &["10ffff"]);
        // As an object.
        let w0 = 0x1F600u64 | ((bad as u64) << 32);
        refuse(&raw_region(&[header_word(KIND_STR_UCS4, 2), w0], 64, 0), &["10ffff"]);
    }
    // 0x10FFFF itself is fine.
    let mut b = Builder::new();
    let s = b.str_units(Width::Ucs4, &0x10FFFFu32.to_le_bytes());
    accept(&finish_fixed(b, s));
}

#[test]
fn non_canonical_width() {
    let cases: Vec<(Width, Vec<u8>)> = vec![
        (Width::Latin1, b"abcdefgh".to_vec()),
        (Width::Latin1, b"abc".to_vec()),
        (Width::Ucs2, [0x41u16, 0x42].iter().flat_map(|c| c.to_le_bytes()).collect()),
        (Width::Ucs2, [0xE9u16, 0x42].iter().flat_map(|c| c.to_le_bytes()).collect()),
        (Width::Ucs4, [0x41u32].iter().flat_map(|c| c.to_le_bytes()).collect()),
        (Width::Ucs4, [0xFFu32].iter().flat_map(|c| c.to_le_bytes()).collect()),
        (Width::Ucs4, [0x20ACu32, 0xFFFF].iter().flat_map(|c| c.to_le_bytes()).collect()),
    ];
    for (w, units) in &cases {
        let mut b = Builder::new();
        let s = b.str_units(*w, units);
        let root = b.seq(false, &[s]);
        refuse(&finish_fixed(b, root), &["smallest width"]);
        let mut b = Builder::new();
        let s = b.str_units(*w, units);
        refuse(&finish_fixed(b, s), &["smallest width"]);
        // Object form.
        let n = units.len() / w.unit();
        let mut body = vec![header_word(w.kind(), n as u64)];
        let mut padded = units.clone();
        padded.resize(pad8(units.len()), 0);
        body.extend(padded.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())));
        refuse(&raw_region(&body, 64, 0), &["smallest width"]);
    }
    // Canonical ones pass.
    for (w, units) in [
        (Width::Latin1, vec![0xE9u8]),
        (Width::Ucs2, 0x100u16.to_le_bytes().to_vec()),
        (Width::Ucs4, 0x10000u32.to_le_bytes().to_vec()),
    ] {
        let mut b = Builder::new();
        let s = b.str_units(w, &units);
        accept(&finish_fixed(b, s));
    }
}

// ---------------------------------------------------- structural: numbers

#[test]
fn non_minimal_big_ints() {
    // 2^72 takes 10 bytes; forge its bytes into non-minimal encodings.
    let mut le = vec![0u8; 10];
    le[9] = 1;
    let forgeries: Vec<Vec<u8>> = vec![
        {
            let mut x = vec![0u8; 10];
            x[8] = 1; // 2^64 in 10 bytes (minimal: 9)
            x
        },
        vec![0u8; 10],  // 0
        vec![0xFF; 10], // -1
        {
            let mut x = vec![0xFFu8; 10];
            x[8] = 0x80; // -2^71... in 10 bytes, minimal 9
            x
        },
        {
            let mut x = vec![0u8; 10];
            x[0] = 5; // 5
            x
        },
    ];
    for forged in forgeries {
        let mut b = Builder::new();
        let big = b.int_bytes(&le);
        let root = b.seq(false, &[big]);
        let mut bytes = finish_fixed(b, root);
        assert_eq!(get(&bytes, big as usize), header_word(KIND_BIGINT, 10));
        bytes[big as usize + 8..big as usize + 18].copy_from_slice(&forged);
        fix_checksum(&mut bytes);
        refuse(&bytes, &["not minimal"]);
    }
    // 9-byte encodings of values that fit in i64.
    for v in [0i64, -1, i64::MAX, i64::MIN] {
        let mut x = v.to_le_bytes().to_vec();
        x.push(if v < 0 { 0xFF } else { 0 });
        let words = [u64::from_le_bytes(x[..8].try_into().unwrap()), x[8] as u64];
        refuse(&raw_region(&[header_word(KIND_BIGINT, 9), words[0], words[1]], 64, 0), &["not minimal"]);
    }
    // Shorter than 9 bytes, and empty.
    refuse(&raw_region(&[header_word(KIND_BIGINT, 3), 0x7F_FFFF], 64, 0), &["not minimal"]);
    refuse(&raw_region(&[header_word(KIND_BIGINT, 0)], 64, 0), &["no bytes"]);
    // The minimal 9-byte 2^63 is fine.
    accept(&raw_region(&[header_word(KIND_BIGINT, 9), 1 << 63, 0], 64, 0));
}

#[test]
fn int64_holding_a_slot_range_value() {
    for v in [0i64, 5, -5, INT_MAX, INT_MIN] {
        let mut b = Builder::new();
        let o = b.int(i64::MAX);
        let root = b.seq(false, &[o]);
        let mut bytes = finish_fixed(b, root);
        put(&mut bytes, o as usize + 8, v as u64);
        fix_checksum(&mut bytes);
        refuse(&bytes, &["int slot"]);
        refuse(&raw_region(&[header_word(KIND_INT64, 0), v as u64], 64, 0), &["int slot"]);
    }
    for v in [INT_MAX + 1, INT_MIN - 1, i64::MAX, i64::MIN] {
        accept(&raw_region(&[header_word(KIND_INT64, 0), v as u64], 64, 0));
    }
}

// ------------------------------------------------------ structural: dicts

#[test]
fn dict_shape_is_not_a_shape() {
    let mut b = Builder::new();
    let one = b.int(1);
    let set = b.set(false, &[one], &[hash::hash_i64(1)]);
    let list = b.seq(false, &[one]);
    let f = b.float(1.0);
    let k = b.str_utf8("k");
    let shape = b.shape(&[k], &[hash::hash_str_units(b"k")]);
    let d = b.dict(shape, &[SLOT_NONE]);
    let base = finish_fixed(b, d);
    for target in [set, slot_off(list) as u64, f] {
        let mut bytes = base.clone();
        put(&mut bytes, d as usize, header_word(KIND_DICT, target >> 3));
        fix_checksum(&mut bytes);
        refuse(&bytes, &["shape"]);
    }
    // A dict whose shape is another dict.
    let mut b = Builder::new();
    let shape = b.shape(&[], &[]);
    let d0 = b.dict(shape, &[]);
    let d = b.dict(shape, &[]);
    let mut bytes = finish_fixed(b, d);
    put(&mut bytes, d as usize, header_word(KIND_DICT, d0 >> 3));
    fix_checksum(&mut bytes);
    refuse(&bytes, &["shape"]);
}

#[test]
fn shape_length_mismatch() {
    // Shape with two keys directly followed by its dict.
    let build = || {
        let mut b = Builder::new();
        let ka = b.str_utf8("a");
        let kb = b.str_utf8("b");
        let keys = [ka, kb];
        let hs = hashes_of(&b, &keys);
        let shape = b.shape(&keys, &hs);
        let d = b.dict(shape, &[SLOT_TRUE, SLOT_FALSE]);
        (finish_fixed(b, d), shape as usize)
    };
    let (base, shape) = build();
    accept(&base);
    // The shape claims a third key: it now overlaps its dict.
    let mut bytes = base.clone();
    put(&mut bytes, shape, header_word(KIND_SHAPE, 3));
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
    // Claims far more keys than the region holds.
    for n in [100u64, 1 << 30, MAX_OBJ_LEN] {
        let mut bytes = base.clone();
        put(&mut bytes, shape, header_word(KIND_SHAPE, n));
        fix_checksum(&mut bytes);
        refuse(&bytes, &[]);
    }
    // A dict at the end of the region whose values would run past the end.
    let mut b = Builder::new();
    let ka = b.str_utf8("a");
    let shape = b.shape(&[ka], &[hash::hash_str_units(b"a")]);
    let d = b.dict(shape, &[SLOT_NONE]);
    let mut bytes = finish_fixed(b, d);
    // Keep the header word, drop the value word: the dict needs 16 bytes.
    bytes.truncate(bytes.len() - 8);
    fix_len(&mut bytes);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
}

// ------------------------------------------------- structural: hash tables

fn forged_set(n: usize, frozen: bool, dup: Option<(usize, usize)>) -> (Vec<u8>, usize) {
    let mut b = Builder::new();
    let mut slots: Vec<u64> = (0..n).map(|i| b.int(i as i64 * 10)).collect();
    if let Some((i, j)) = dup {
        slots[i] = slots[j];
    }
    let hs = hashes_of(&b, &slots);
    let s = b.set(frozen, &slots, &hs);
    (finish_fixed(b, s), s as usize)
}

#[test]
fn duplicate_set_elements_small() {
    let (bytes, _) = forged_set(5, false, Some((4, 1)));
    refuse(&bytes, &["twice"]);
    // 1 and 1.0, 1 and True, (1, 2) and (1.0, 2), None twice: equal across types.
    for case in 0..4 {
        let mut b = Builder::new();
        let one = b.int(1);
        let one_f = b.float(1.0);
        let two = b.int(2);
        let t1 = b.seq(true, &[one, two]);
        let t2 = b.seq(true, &[one_f, two]);
        let elems = match case {
            0 => vec![one, one_f],
            1 => vec![one, SLOT_TRUE],
            2 => vec![t1, two, t2],
            _ => vec![SLOT_NONE, SLOT_NONE],
        };
        let hs = hashes_of(&b, &elems);
        let s = b.set(true, &elems, &hs);
        refuse(&finish_fixed(b, s), &["twice"]);
    }
    // Two NaNs are distinct (NaN != NaN): accepted.
    let mut b = Builder::new();
    let n1 = b.float(f64::NAN);
    let n2 = b.float(f64::NAN);
    let hs = hashes_of(&b, &[n1, n2]);
    let s = b.set(false, &[n1, n2], &hs);
    accept(&finish_fixed(b, s));
}

#[test]
fn duplicate_set_elements_indexed() {
    for (i, j) in [(11, 3), (3, 11), (0, 1), (15, 0)] {
        let (bytes, _) = forged_set(16, true, Some((i, j)));
        refuse(&bytes, &["twice"]);
    }
    // Equal across types in an index: 7 and 7.0.
    let mut b = Builder::new();
    let mut slots: Vec<u64> = (0..12).map(|i| b.int(i)).collect();
    slots.push(b.float(7.0));
    let hs = hashes_of(&b, &slots);
    let s = b.set(false, &slots, &hs);
    refuse(&finish_fixed(b, s), &["twice"]);
}

#[test]
fn duplicate_shape_keys() {
    for n in [2usize, 12] {
        let mut b = Builder::new();
        let mut keys: Vec<u64> = (0..n).map(|i| b.str_utf8(&format!("key {i}"))).collect();
        keys[n - 1] = keys[0];
        let hs = hashes_of(&b, &keys);
        let shape = b.shape(&keys, &hs);
        let vals = vec![SLOT_NONE; n];
        let d = b.dict(shape, &vals);
        refuse(&finish_fixed(b, d), &["twice"]);
    }
    // Equal strings stored separately.
    let mut b = Builder::new();
    let k1 = b.str_utf8("the same key");
    let k2 = b.str_utf8("the same key");
    let hs = hashes_of(&b, &[k1, k2]);
    let shape = b.shape(&[k1, k2], &hs);
    let d = b.dict(shape, &[SLOT_NONE, SLOT_NONE]);
    refuse(&finish_fixed(b, d), &["twice"]);
}

#[test]
fn duplicate_keys_in_a_later_shape_over_the_same_key_strings() {
    // The verifier remembers the hash of each string key slot it met: many
    // shapes over the same words pass, and a later shape naming one word
    // twice is still refused. Stored and inline keys, small and indexed shapes.
    for n in [3usize, 12] {
        for dup in [false, true] {
            let mut b = Builder::new();
            let keys: Vec<u64> = (0..n)
                .map(|i| {
                    if i % 2 == 0 {
                        b.str_utf8(&format!("long key name {i}"))
                    } else {
                        make_sstr_slot(format!("k{i}").as_bytes())
                    }
                })
                .collect();
            let mut dicts = Vec::new();
            for rot in 0..n {
                let mut ks = keys.clone();
                ks.rotate_left(rot);
                if dup && rot == n - 1 {
                    ks[n - 1] = ks[0];
                }
                let hs = hashes_of(&b, &ks);
                let shape = b.shape(&ks, &hs);
                dicts.push(b.dict(shape, &vec![SLOT_NONE; n]));
            }
            let root = b.seq(false, &dicts);
            let bytes = finish_fixed(b, root);
            if dup {
                refuse(&bytes, &["twice"]);
            } else {
                accept(&bytes);
            }
        }
    }
}

#[test]
fn unhashable_elements_and_keys() {
    for case in 0..5 {
        let mut b = Builder::new();
        let one = b.int(1);
        let l = b.seq(false, &[one]);
        let s = b.set(false, &[one], &[hash::hash_i64(1)]);
        let shape = b.shape(&[], &[]);
        let d = b.dict(shape, &[]);
        let l2 = b.seq(false, &[one]);
        let t = b.seq(true, &[one, l2]);
        let bad = [l, s, d, t, SLOT_EMPTY_LIST][case];
        // In a frozenset (the hashes given to the builder do not matter).
        let fz = b.set(true, &[one, bad], &[0, 0]);
        let root = b.seq(false, &[fz]);
        refuse(&finish_fixed(b, root), &["unhashable"]);
    }
    // As a dict key.
    let mut b = Builder::new();
    let one = b.int(1);
    let l = b.seq(false, &[one]);
    let shape = b.shape(&[l], &[0]);
    let d = b.dict(shape, &[SLOT_NONE]);
    refuse(&finish_fixed(b, d), &["unhashable"]);
}

fn index_of(set: usize, n: usize) -> (usize, usize) {
    (set + 8 + 8 * n, index_cap(n))
}

fn entry(bytes: &[u8], ipos: usize, p: usize) -> u32 {
    read_u32(bytes, ipos + 4 * p)
}

fn set_entry(bytes: &mut [u8], ipos: usize, p: usize, e: u32) {
    bytes[ipos + 4 * p..ipos + 4 * p + 4].copy_from_slice(&e.to_le_bytes());
}

#[test]
fn corrupt_index() {
    let n = 12;
    let (base, set) = forged_set(n, false, None);
    accept(&base);
    let (ipos, cap) = index_of(set, n);
    assert_eq!(cap, 32);
    let used: Vec<usize> = (0..cap).filter(|&p| entry(&base, ipos, p) != 0).collect();
    let empty: Vec<usize> = (0..cap).filter(|&p| entry(&base, ipos, p) == 0).collect();
    assert_eq!(used.len(), n);

    // Wrong count: one entry cleared, or one extra entry.
    for &p in &used {
        let mut b = base.clone();
        set_entry(&mut b, ipos, p, 0);
        fix_checksum(&mut b);
        refuse(&b, &["wrong number"]);
    }
    for &p in empty.iter().take(5) {
        let mut b = base.clone();
        set_entry(&mut b, ipos, p, 1);
        fix_checksum(&mut b);
        refuse(&b, &["index"]);
    }
    // Entry out of range (count unchanged).
    for bad in [n as u32 + 1, 1000, u32::MAX] {
        let mut b = base.clone();
        set_entry(&mut b, ipos, used[3], bad);
        fix_checksum(&mut b);
        refuse(&b, &["index"]);
    }
    // An element moved off its probe path: unreachable.
    for &to in empty.iter().take(6) {
        let mut b = base.clone();
        let e = entry(&b, ipos, used[0]);
        set_entry(&mut b, ipos, used[0], 0);
        set_entry(&mut b, ipos, to, e);
        fix_checksum(&mut b);
        refuse(&b, &["does not lead"]);
    }
    // Two entries for one element, none for another.
    let mut b = base.clone();
    let e0 = entry(&b, ipos, used[0]);
    set_entry(&mut b, ipos, used[1], e0);
    fix_checksum(&mut b);
    refuse(&b, &["index"]);
    // The same corruption in a shape's index.
    let mut bld = Builder::new();
    let keys: Vec<u64> = (0..n).map(|i| bld.str_utf8(&format!("k{i}"))).collect();
    let hs = hashes_of(&bld, &keys);
    let shape = bld.shape(&keys, &hs) as usize;
    let d = bld.dict(shape as u64, &vec![SLOT_NONE; n]);
    let base = finish_fixed(bld, d);
    accept(&base);
    let (ipos, cap) = index_of(shape, n);
    let p = (0..cap).find(|&p| entry(&base, ipos, p) != 0).unwrap();
    let mut b = base.clone();
    set_entry(&mut b, ipos, p, 0);
    fix_checksum(&mut b);
    refuse(&b, &["wrong number"]);
}

#[test]
fn index_built_from_wrong_hashes() {
    // A writer that used the wrong hash function leaves elements unreachable.
    let mut b = Builder::new();
    let slots: Vec<u64> = (0..12).map(|i| b.int(i)).collect();
    let wrong: Vec<u64> = (0..12).map(|i| i as u64 * 7 + 3).collect();
    let s = b.set(true, &slots, &wrong);
    refuse(&finish_fixed(b, s), &["does not lead"]);
}

// ------------------------------------------------------- structural: sharing

#[test]
fn container_referenced_twice() {
    // (name, builder of the shared container)
    type Make = fn(&mut Builder) -> u64;
    let makers: Vec<(&str, Make)> = vec![
        ("list", |b| {
            let x = b.int(1);
            b.seq(false, &[x, x])
        }),
        ("tuple", |b| {
            let x = b.int(1);
            b.seq(true, &[x])
        }),
        ("dict", |b| {
            let k = b.str_utf8("k");
            let shape = b.shape(&[k], &[hash::hash_str_units(b"k")]);
            b.dict(shape, &[SLOT_NONE])
        }),
        ("set", |b| {
            let x = b.int(1);
            b.set(false, &[x], &[hash::hash_i64(1)])
        }),
        ("frozenset", |b| {
            let x = b.int(1);
            b.set(true, &[x], &[hash::hash_i64(1)])
        }),
    ];
    for (name, make) in makers {
        for layout in 0..3 {
            for shared in [false, true] {
                let mut b = Builder::new();
                if shared {
                    b.set_flags(FLAG_SHARED);
                }
                let c = make(&mut b);
                let root = match layout {
                    // [c, c]
                    0 => b.seq(false, &[c, c]),
                    // [[c], (c,)]
                    1 => {
                        let a = b.seq(false, &[c]);
                        let t = b.seq(true, &[c]);
                        b.seq(false, &[a, t])
                    }
                    // {"x": c, "y": [c]}
                    _ => {
                        let kx = b.str_utf8("x");
                        let ky = b.str_utf8("y");
                        let hs = hashes_of(&b, &[kx, ky]);
                        let shape = b.shape(&[kx, ky], &hs);
                        let l = b.seq(false, &[c]);
                        b.dict(shape, &[c, l])
                    }
                };
                let bytes = finish_fixed(b, root);
                if shared {
                    accept(&bytes);
                } else {
                    let e = refuse(&bytes, &["twice", "shared"]);
                    assert!(e.offset.is_some(), "{name}: {e}");
                }
            }
        }
    }
}

#[test]
fn object_form_list_referenced_twice() {
    // Object-form LIST of 2 (legal, if unusual) referenced twice.
    let body = [header_word(KIND_LIST, 2), SLOT_NONE, SLOT_TRUE, 64, 64];
    let root = make_seq_slot(TAG_TUPLE, 2, 88);
    refuse(&raw_region(&body, root, 0), &["twice"]);
    accept(&raw_region(&body, root, FLAG_SHARED));
}

#[test]
fn leaves_and_shapes_may_be_referenced_twice() {
    let mut b = Builder::new();
    let s = b.str_utf8("a string shared by reference");
    let f = b.float(2.5);
    let big = b.int_bytes(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let by = b.bytes_obj(b"bytes");
    let i = b.int(i64::MAX);
    let c = b.complex(1.0, 2.0);
    let long: Vec<u8> = vec![b'z'; 70_000];
    let long_s = b.str_units(Width::Ascii, &long);
    let k = b.str_utf8("key");
    let shape = b.shape(&[k], &[hash::hash_str_units(b"key")]);
    let d1 = b.dict(shape, &[s]);
    let d2 = b.dict(shape, &[f]);
    let hs = hashes_of(&b, &[s, f, big, by, i, c, long_s]);
    let fz = b.set(true, &[s, f, big, by, i, c, long_s], &hs);
    let root = b.seq(false, &[s, s, f, f, big, big, by, by, i, i, c, c, long_s, long_s, d1, d2, fz]);
    accept(&finish_fixed(b, root));
}

#[test]
fn long_string_referenced_forward_after_a_valid_reference() {
    // Verification remembers long strings it has checked; a second
    // reference from a container *before* the string must still be refused.
    let mut b = Builder::new();
    let placeholder = b.int(0);
    let early = b.seq(false, &[placeholder]);
    let long = b.str_utf8(&"L".repeat(300));
    let root = b.seq(false, &[long, early]);
    let mut bytes = finish_fixed(b, root);
    put(&mut bytes, slot_off(early), long);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
    // Same with the early reference visited first.
    let mut b = Builder::new();
    let placeholder = b.int(0);
    let early = b.seq(false, &[placeholder]);
    let long = b.str_utf8(&"L".repeat(300));
    let root = b.seq(false, &[early, long]);
    let mut bytes = finish_fixed(b, root);
    put(&mut bytes, slot_off(early), long);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["before"]);
}

#[test]
fn fixed_size_objects_with_a_length_field() {
    // INT64, FLOAT and COMPLEX have len 0 (FORMAT.md's table).
    for (kind, words) in
        [(KIND_FLOAT, vec![0x3FF0_0000_0000_0000u64]), (KIND_INT64, vec![i64::MAX as u64]), (KIND_COMPLEX, vec![0, 0])]
    {
        let mut body = vec![header_word(kind, 0)];
        body.extend(&words);
        accept(&raw_region(&body, 64, 0));
        let mut body = vec![header_word(kind, 1)];
        body.extend(&words);
        refuse(&raw_region(&body, 64, 0), &["length"]);
    }
}

#[test]
fn deep_equal_frozensets_in_one_set() {
    // Two equal frozensets nested just under the key depth limit in one set:
    // verification compares them (they hash alike) and must report the
    // duplicate. Comparison recurses once per nesting level of sets; the
    // limit keeps that within a 1 MB thread stack, even in debug builds.
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let mut b = Builder::new();
            let make = |b: &mut Builder| {
                let mut slot = b.int(0);
                for _ in 0..bale_core::hash::MAX_KEY_DEPTH - 10 {
                    let h = key_hash(b, slot);
                    slot = b.set(true, &[slot], &[h]);
                }
                slot
            };
            let x = make(&mut b);
            let y = make(&mut b);
            let hs = hashes_of(&b, &[x, y]);
            let s = b.set(false, &[x, y], &hs);
            let bytes = b.finish(s);
            let e = Region::new_verified(&bytes).unwrap_err();
            assert_msg(&e, &["twice"]);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn keys_nested_too_deeply() {
    // A tuple key nested deeper than the hash depth limit cannot be verified.
    let mut b = Builder::new();
    let mut slot = b.int(0);
    for _ in 0..(hash::MAX_KEY_DEPTH + 5) {
        slot = b.seq(true, &[slot]);
    }
    let s = b.set(true, &[slot], &[0]);
    refuse(&finish_fixed(b, s), &["deep"]);
}

// --------------------------------------------------------- mutation loops

/// Runs every check on one (possibly broken) buffer. Verified regions must
/// read completely. Returns whether the buffer verified.
fn exercise(bytes: &[u8]) -> bool {
    let region = match Region::new(bytes) {
        Ok(r) => r,
        Err(_) => return false,
    };
    let verified = bale_core::verify(&region).is_ok();
    let structural = verify_structure(&region).is_ok();
    if verified {
        assert!(structural);
        if let Err(e) = walk(&region, 1 << 16, true) {
            panic!("a verified region fails to read: {e}");
        }
    } else {
        let _ = walk(&region, 1 << 16, false);
    }
    verified
}

fn exercise_reporting(bytes: &[u8], what: &dyn Fn() -> String) -> bool {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exercise(bytes))) {
        Ok(verified) => verified,
        Err(_) => panic!("panic while reading a mutated region: {}", what()),
    }
}

/// Every single-byte value at every offset (checksum recomputed so that the
/// structural checks run). Returns (mutations, mutations that still verify).
fn exhaustive_bytes(base: &[u8]) -> (usize, usize) {
    let mut count = 0;
    let mut still_valid = 0;
    let mut b = base.to_vec();
    for off in 0..base.len() {
        for v in 0..=255u8 {
            if v == base[off] {
                continue;
            }
            b[off] = v;
            if !(OFF_CHECKSUM..OFF_CHECKSUM + 8).contains(&off) {
                fix_checksum(&mut b);
            }
            if exercise_reporting(&b, &|| format!("byte {off} set to 0x{v:02x}")) {
                still_valid += 1;
            }
            count += 1;
        }
        b.copy_from_slice(base);
    }
    (count, still_valid)
}

#[test]
fn every_single_byte_mutation_kitchen_sink() {
    let base = kitchen_sink();
    assert!(base.len() < 1200, "keep the exhaustive region small ({} bytes)", base.len());
    let (n, valid) = exhaustive_bytes(&base);
    assert!(n > 100_000);
    // Many changes (numbers, characters, padding-free values) leave a valid
    // region, which must then read completely: make sure that path ran.
    assert!(valid > 1000, "only {valid} of {n} mutations verified");
}

#[test]
fn every_single_byte_mutation_indexed_and_shared() {
    for base in [indexed_dict(), shared_region()] {
        let (n, valid) = exhaustive_bytes(&base);
        assert!(valid > 100, "only {valid} of {n} mutations verified");
    }
}

/// xorshift64*: a small deterministic generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A plausible-looking slot or header word referring into `len` bytes.
fn interesting_word(rng: &mut Rng, len: usize) -> u64 {
    let off = (rng.below(len / 8 + 2) * 8) as u64;
    match rng.below(12) {
        0 => rng.next(),
        1 => off,
        2 => TAG_STR | (rng.next() & 0x18) | ((rng.below(40) as u64) << 5) | ((off >> 3) << 21),
        3 => make_seq_slot(if rng.below(2) == 0 { TAG_LIST } else { TAG_TUPLE }, rng.below(8), off as usize),
        4 => header_word(1 + rng.below(15) as u8, rng.below(20) as u64),
        5 => header_word(KIND_DICT, off >> 3),
        6 => header_word(rng.below(256) as u8, rng.next() >> 8),
        7 => ((rng.below(6) as u64) << 3) | TAG_CONST,
        8 => make_sstr_slot(&[b'a'; 7][..rng.below(8)]) ^ (rng.next() & 0xFF00_0000_0000_0000),
        9 => 1u64 << rng.below(64),
        10 => (rng.next() & !7) | rng.below(8) as u64,
        _ => rng.next() & 0xFFFF_FFFF,
    }
}

fn random_mutations(base: &[u8], seed: u64, rounds: usize) {
    let mut rng = Rng(seed);
    for round in 0..rounds {
        let mut b = base.to_vec();
        let mut log = Vec::new();
        let edits = 1 + rng.below(3);
        for _ in 0..edits {
            let op = if b.len() / 8 <= 8 { 5 } else { rng.below(6) };
            match op {
                0 => {
                    let off = rng.below(b.len());
                    let v = rng.next() as u8;
                    b[off] = v;
                    log.push(format!("byte {off}=0x{v:02x}"));
                }
                1 | 2 => {
                    // An aligned word somewhere in the data (or the root slot).
                    let words = b.len() / 8;
                    let w = if rng.below(5) == 0 { OFF_ROOT / 8 } else { 8 + rng.below(words - 8) };
                    let v = interesting_word(&mut rng, b.len());
                    put(&mut b, w * 8, v);
                    log.push(format!("word {}=0x{v:016x}", w * 8));
                }
                3 => {
                    // Copy one word over another.
                    let words = b.len() / 8;
                    let (from, to) = (8 + rng.below(words - 8), 8 + rng.below(words - 8));
                    let v = get(&b, from * 8);
                    put(&mut b, to * 8, v);
                    log.push(format!("word {} copied to {}", from * 8, to * 8));
                }
                4 => {
                    // Truncate, keeping the header consistent.
                    let words = b.len() / 8;
                    let keep = 8 + rng.below(words - 8 + 1);
                    b.truncate(keep * 8);
                    fix_len(&mut b);
                    log.push(format!("truncated to {}", keep * 8));
                }
                _ => {
                    // Append random words.
                    let extra = 1 + rng.below(4);
                    for _ in 0..extra {
                        let v = interesting_word(&mut rng, b.len());
                        b.extend_from_slice(&v.to_le_bytes());
                    }
                    fix_len(&mut b);
                    log.push(format!("appended {extra} words"));
                }
            }
        }
        if rng.below(10) != 0 {
            fix_checksum(&mut b);
        }
        exercise_reporting(&b, &|| format!("seed {seed} round {round}: {}", log.join(", ")));
    }
}

#[test]
fn random_mutations_of_sample_regions() {
    let bases = [kitchen_sink(), indexed_dict(), shared_region()];
    for (i, base) in bases.iter().enumerate() {
        random_mutations(base, 0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1), 15_000);
    }
}

#[test]
fn random_mutations_of_a_larger_region() {
    // Long strings (> 256 bytes, remembered by the verifier), object-form
    // strings and a 70000-element list are too big to mutate exhaustively.
    let mut b = Builder::new();
    let long = b.str_utf8(&"long string ".repeat(40));
    let obj = b.str_units(Width::Ascii, &vec![b'o'; 65_536]);
    let ints: Vec<u64> = (0..70_000).map(|i| if i % 9 == 0 { long } else { b.int(i) }).collect();
    let big_list = b.seq(false, &ints);
    let root = b.seq(true, &[long, obj, big_list, long]);
    let base = b.finish(root);
    accept(&base);
    let mut rng = Rng(12345);
    for round in 0..300 {
        let mut m = base.clone();
        let words = m.len() / 8;
        // Aim at the interesting parts: the tail (list header, root tuple) and the front.
        let w = if rng.below(2) == 0 { words - 1 - rng.below(12) } else { 8 + rng.below(80) };
        let v = interesting_word(&mut rng, m.len());
        put(&mut m, w * 8, v);
        fix_checksum(&mut m);
        exercise_reporting(&m, &|| format!("round {round}: word {} = 0x{v:016x}", w * 8));
    }
}

/// Regions of 4 MB and more with a list root are verified as two halves on
/// two threads; these check that path specifically.
mod parallel_walk {
    use bale_core::{Builder, Region};

    fn big_records(share_across_halves: bool) -> Vec<u8> {
        let mut b = Builder::new();
        let key_a = b.str_utf8("name");
        let key_b = b.str_utf8("a key longer than seven");
        let hashes =
            [bale_core::hash::hash_str_units(b"name"), bale_core::hash::hash_str_units(b"a key longer than seven")];
        let shape = b.shape(&[key_a, key_b], &hashes);
        // One long string referenced by every record: shareable by design.
        let long = b.str_utf8(&"x".repeat(300));
        let mut records = Vec::new();
        let mut first_list = 0;
        for i in 0..100_000i64 {
            let n = b.int(i);
            let list = b.seq(false, &[n, long]);
            if i == 0 {
                first_list = list;
            }
            // The last record reuses the first record's list: a container
            // reached from both halves of the root.
            let list = if share_across_halves && i == 99_999 { first_list } else { list };
            records.push(b.dict(shape, &[long, list]));
        }
        let root = b.seq(false, &records);
        let bytes = b.finish(root);
        assert!(bytes.len() >= 4 << 20, "region must take the parallel path");
        bytes
    }

    #[test]
    fn valid_large_region_with_shared_shape_and_strings_verifies() {
        let bytes = big_records(false);
        Region::new_verified(&bytes).unwrap();
    }

    #[test]
    fn container_reached_from_both_halves_is_refused_without_shared_flag() {
        let bytes = big_records(true);
        let e = Region::new_verified(&bytes).unwrap_err();
        assert!(e.message.contains("referenced twice"), "{e}");
    }
}

/// A table of three rows: an int column, a string column, a list column
/// over a string column. Returns the builder's bytes and the offsets of the
/// string column and the list column.
fn table_region(tamper: impl FnOnce(&mut Vec<u8>, usize, usize)) -> Vec<u8> {
    let mut b = Builder::new();
    let k1 = b.str_utf8("id");
    let k2 = b.str_utf8("name");
    let k3 = b.str_utf8("tags");
    let shape = b.shape(
        &[k1, k2, k3],
        &[hash::hash_str_units(b"id"), hash::hash_str_units(b"name"), hash::hash_str_units(b"tags")],
    );
    let ids = b.num_list(false, &[1, 2, 3]);
    let names = b.str_column(Width::Ascii, &[0, 3, 3, 8], b"annbobby");
    let tag_strs = b.str_column(
        Width::Latin1,
        &[0, 2, 3],
        "\u{e9}\u{e9}\u{e8}".chars().map(|c| c as u8).collect::<Vec<_>>().as_slice(),
    );
    let tags = b.list_column(tag_strs, &[0, 0, 1, 2]);
    let table = b.table_object(3, shape, &[ids, names, tags]);
    let mut bytes = b.finish(table);
    tamper(&mut bytes, names as usize, tags as usize);
    let sum = compute_checksum(&bytes);
    bytes[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
    bytes
}

#[test]
fn tables_read_and_verify() {
    let bytes = table_region(|_, _, _| {});
    let region = Region::new_verified(&bytes).unwrap();
    let r = region.reader;
    let Value::Column(rows) = region.root().unwrap() else { panic!("a table reads as a column") };
    assert_eq!(rows.len, 3);
    let Value::Dict(row) = r.column_item(rows, 2).unwrap() else { panic!("rows are dicts") };
    assert!(matches!(r.dict_value(row, 0).unwrap(), Value::Int(3)));
    assert!(matches!(r.dict_value(row, 1).unwrap(), Value::Str(s) if s.units() == b"bobby"));
    let Value::Column(tags) = r.dict_value(row, 2).unwrap() else { panic!("a slice of a string column") };
    assert_eq!(tags.len, 1);
    assert!(matches!(r.column_item(tags, 0).unwrap(), Value::Str(s) if s.units() == [0xe8]));
    let Value::Dict(row0) = r.column_item(rows, 0).unwrap() else { panic!() };
    assert!(matches!(r.dict_value(row0, 2).unwrap(), Value::List(s) if s.len == 0));
    walk(&region, 1 << 20, true).unwrap();
}

#[test]
fn tables_with_bad_columns_are_refused() {
    // String offsets that decrease (the middle one past the end of the units).
    let bytes = table_region(|b, names, _| b[names + 16 + 4..names + 16 + 8].copy_from_slice(&9u32.to_le_bytes()));
    refuse(&bytes, &["string column"]);
    // A list column whose last offset is not its child's length.
    let bytes = table_region(|b, _, tags| b[tags + 16 + 12..tags + 16 + 16].copy_from_slice(&7u32.to_le_bytes()));
    refuse(&bytes, &["list column offsets"]);
    // A table with more rows than its columns hold.
    let bytes = table_region(|b, _, _| {
        let root = u64::from_le_bytes(b[OFF_ROOT..OFF_ROOT + 8].try_into().unwrap()) as usize;
        b[root..root + 8].copy_from_slice(&header_word(KIND_TABLE, 4).to_le_bytes());
    });
    refuse(&bytes, &["column"]);
    // A Latin-1 string column holding an ASCII-only string (not its smallest width).
    let bytes = table_region(|b, _, tags| {
        let child = u64::from_le_bytes(b[tags + 8..tags + 16].try_into().unwrap()) as usize;
        b[child + 16 + 16 + 2] = b'a';
    });
    refuse(&bytes, &["smallest width"]);
}

/// A table of three rows whose column "user" is itself a TABLE of three
/// rows (FORMAT.md lets a column be any list-like value of as many items,
/// a TABLE included; bale's writers make none yet). `inner_rows` is the
/// inner table's row count.
fn nested_table_region(inner_rows: u64) -> Vec<u8> {
    let mut b = Builder::new();
    let key = |b: &mut Builder, k: &str| (b.str_utf8(k), hash::hash_str_units(k.as_bytes()));
    let (ka, ha) = key(&mut b, "a");
    let (kb, hb) = key(&mut b, "b");
    let inner_shape = b.shape(&[ka, kb], &[ha, hb]);
    let a = b.num_list(false, &[10, 20, 30]);
    let names = b.str_column(Width::Ascii, &[0, 3, 3, 8], b"annbobby");
    let inner = b.table_object(inner_rows as usize, inner_shape, &[a, names]);
    let (kid, hid) = key(&mut b, "id");
    let (kuser, huser) = key(&mut b, "user");
    let outer_shape = b.shape(&[kid, kuser], &[hid, huser]);
    let ids = b.num_list(false, &[1, 2, 3]);
    let table = b.table_object(3, outer_shape, &[ids, inner]);
    let mut bytes = b.finish(table);
    let sum = compute_checksum(&bytes);
    bytes[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
    bytes
}

#[test]
fn a_column_that_is_a_table_reads_as_rows_of_dicts() {
    let bytes = nested_table_region(3);
    let region = Region::new_verified(&bytes).unwrap();
    let r = region.reader;
    let Value::Column(rows) = region.root().unwrap() else { panic!("a table reads as a column") };
    let Value::Dict(row) = r.column_item(rows, 2).unwrap() else { panic!("rows are dicts") };
    assert!(matches!(r.dict_value(row, 0).unwrap(), Value::Int(3)));
    let Value::Dict(user) = r.dict_value(row, 1).unwrap() else { panic!("a row of the inner table") };
    assert!(matches!(r.dict_value(user, 0).unwrap(), Value::Int(30)));
    assert!(matches!(r.dict_value(user, 1).unwrap(), Value::Str(s) if s.units() == b"bobby"));
    walk(&region, 1 << 20, true).unwrap();
    // tests/unit/test_tables.py holds these bytes, read by the binding.
    assert_eq!(bytes.len(), 280);
}

#[test]
fn a_column_table_shorter_than_its_table_is_refused() {
    refuse(&nested_table_region(2), &["column"]);
}

#[test]
fn inline_string_slots_every_byte_checked() {
    for n in 0..=SSTR_MAX {
        let text: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
        let good = make_sstr_slot(&text);
        accept(&raw_region(&[], good, 0));
        // Each character byte with its top bit set: not ASCII.
        for i in 0..n {
            refuse(&raw_region(&[], good | 0x80 << (8 * (1 + i)), 0), &["inline string", "not ascii"]);
        }
        // Each byte past the characters, and the spare bits of byte 0: padding.
        for i in n..SSTR_MAX {
            for bit in [0x01u64, 0x80] {
                refuse(&raw_region(&[], good | bit << (8 * (1 + i)), 0), &["inline string", "padding"]);
            }
        }
        for bit in [0x40u64, 0x80] {
            refuse(&raw_region(&[], good | bit, 0), &["inline string", "padding"]);
        }
    }
}

// ------------------------------------------------------------------ ID_DICT

/// A key table of `a`, `b`, `c` and an ID_DICT of its keys 2 and 0; the
/// region, the dict's offset.
fn id_dict_region() -> (Vec<u8>, usize) {
    let mut b = Builder::new();
    let keys: Vec<u64> = ["a", "b", "c"].iter().map(|k| b.str_utf8(k)).collect();
    let hashes: Vec<u64> = ["a", "b", "c"].iter().map(|k| hash::hash_str_units(k.as_bytes())).collect();
    let table = b.shape(&keys, &hashes);
    let mut ids = bale_core::id_dict::Ids::default();
    ids.0[..3].copy_from_slice(&[2, 2, 0]);
    let d = b.id_dict(table, &ids, &[SLOT_TRUE, SLOT_NONE]);
    let root = b.seq(false, &[d]);
    (finish_fixed(b, root), d as usize)
}

#[test]
fn an_id_dict_reads_its_keys_through_its_table() {
    let (bytes, d) = id_dict_region();
    let region = Region::new_verified(&bytes).unwrap();
    let r = &region.reader;
    let Value::List(items) = region.root().unwrap() else { panic!("a list") };
    let Value::Dict(dict) = r.seq_item(items, 0).unwrap() else { panic!("a dict") };
    assert_eq!((dict.start, dict.len, dict.ids), (d, 2, d + 9));
    assert!(matches!(r.dict_key(dict, 0).unwrap(), Value::Str(s) if s.units() == b"c"));
    assert!(matches!(r.dict_key(dict, 1).unwrap(), Value::Str(s) if s.units() == b"a"));
    assert!(matches!(lookup_str(r, dict, "a").unwrap(), Some(Value::None)));
    assert!(matches!(lookup_str(r, dict, "c").unwrap(), Some(Value::Bool(true))));
    // A key of the table the dict lacks.
    assert!(lookup_str(r, dict, "b").unwrap().is_none());
}

#[test]
fn an_id_dict_with_a_bad_id_is_refused() {
    let (good, d) = id_dict_region();
    // An id beyond the table: refused on every read.
    let mut bytes = good.clone();
    bytes[d + 10] = 3;
    fix_checksum(&mut bytes);
    refuse(&bytes, &["beyond its key table"]);
    let region = Region::new(&bytes).unwrap();
    assert!(region.reader.decode(d as u64, bytes.len()).is_err());
    // An id twice, and nonzero padding: refused by verification.
    let mut bytes = good.clone();
    bytes[d + 10] = 2;
    fix_checksum(&mut bytes);
    refuse(&bytes, &["twice"]);
    let mut bytes = good.clone();
    bytes[d + 15] = 9;
    fix_checksum(&mut bytes);
    refuse(&bytes, &["padding"]);
    // A count whose values run past the dict's referrer.
    let mut bytes = good.clone();
    bytes[d + 8] = 200;
    fix_checksum(&mut bytes);
    refuse(&bytes, &["dict object"]);
    // A table that is not a SHAPE before the dict.
    let mut bytes = good;
    put(&mut bytes, d, header_word(KIND_ID_DICT, d as u64 >> 3));
    fix_checksum(&mut bytes);
    refuse(&bytes, &["shape"]);
}

#[test]
fn list_columns_whose_child_is_a_list_column_are_refused_without_recursing() {
    // In a cyclic region `extent` lets a reference point anywhere, and
    // decoding a LIST_COLUMN decodes its child first: a column that was
    // its own child recursed until the stack overflowed (`fuzz-binding`,
    // through an unverified view's index; the Python replay is
    // tests/adversarial/regressions/issue21-*). It and a chain of columns
    // must each give a FormatError, cyclic or not.
    let build = |depth: usize| {
        let mut b = Builder::new();
        let list = b.seq(false, &[SLOT_NONE, SLOT_NONE]);
        let mut col = b.list_column(list, &[0, 1, 2]);
        let first = col;
        for _ in 1..depth {
            col = b.list_column(col, &[0, 1, 2]);
        }
        (b, first, col)
    };
    // Sets `flags` too, then checks that both reads refuse `root`.
    let refused = |mut bytes: Vec<u8>, root: u64, flags: u32| {
        let f = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) | flags;
        bytes[40..44].copy_from_slice(&f.to_le_bytes());
        fix_checksum(&mut bytes);
        let region = Region::new(&bytes).unwrap();
        assert!(region.reader.decode(root, bytes.len()).is_err(), "flags {flags:#x}");
        refuse(&bytes, &["list column child"]);
    };
    for flags in [0, FLAG_SHARED | FLAG_CYCLIC] {
        // The first column made its own child.
        let (b, first, _) = build(1);
        let mut bytes = finish_fixed(b, first);
        put(&mut bytes, first as usize + 8, first);
        refused(bytes, first, flags);
        // 20,000 columns, each the child of the next: refused at the top,
        // at once, not after decoding the chain.
        let (b, _, top) = build(20_000);
        refused(finish_fixed(b, top), top, flags);
    }
}

/// A TABLE of 3 rows {"id", "l"} whose column "l" is a ROWS_COLUMN over a
/// TABLE of 3 rows {"k"}, cut [0, 2), [2, 2), [2, 3): rows 0 and 2 hold
/// lists of 2 and 1 dicts, row 1 an empty list. Returns the bytes, the
/// ROWS_COLUMN's offset and the inner TABLE's.
fn rows_column_region() -> (Vec<u8>, usize, usize) {
    let mut b = Builder::new();
    let key = |b: &mut Builder, k: &str| (b.str_utf8(k), hash::hash_str_units(k.as_bytes()));
    let (kk, hk) = key(&mut b, "k");
    let inner_shape = b.shape(&[kk], &[hk]);
    let ks = b.num_list(false, &[10, 11, 12]);
    let inner = b.table_object(3, inner_shape, &[ks]);
    let rows = b.rows_column(inner, &[0, 2, 2, 3]);
    let (kid, hid) = key(&mut b, "id");
    let (kl, hl) = key(&mut b, "l");
    let shape = b.shape(&[kid, kl], &[hid, hl]);
    let ids = b.num_list(false, &[0, 1, 2]);
    let table = b.table_object(3, shape, &[ids, rows]);
    (b.finish(table), rows as usize, inner as usize)
}

#[test]
fn rows_columns_read_as_lists_of_the_rows_of_their_table() {
    let (bytes, _, inner) = rows_column_region();
    let region = Region::new_verified(&bytes).unwrap();
    let r = region.reader;
    let Value::Column(outer) = region.root().unwrap() else { panic!("a table") };
    let Value::Dict(row0) = r.column_item(outer, 0).unwrap() else { panic!("a row") };
    let Value::Column(list) = r.dict_value(row0, 1).unwrap() else { panic!("a slice of the inner table") };
    assert_eq!((list.first, list.len), (0, 2));
    assert!(bale_core::columns::is_slice(&Value::Column(list)));
    let Value::Dict(d) = r.column_item(list, 1).unwrap() else { panic!("rows are dicts") };
    // A row read through a slice is the row of the table itself.
    assert_eq!((d.start, d.row), (inner, Some(1)));
    assert!(matches!(r.dict_value(d, 0).unwrap(), Value::Int(11)));
    let Value::Dict(row1) = r.column_item(outer, 1).unwrap() else { panic!() };
    assert!(matches!(r.dict_value(row1, 1).unwrap(), Value::List(s) if s.len == 0));
    let Value::Dict(row2) = r.column_item(outer, 2).unwrap() else { panic!() };
    let Value::Column(last) = r.dict_value(row2, 1).unwrap() else { panic!() };
    assert_eq!((last.first, last.len), (2, 1));
    let Value::Dict(d) = r.column_item(last, 0).unwrap() else { panic!() };
    assert!(matches!(r.dict_value(d, 0).unwrap(), Value::Int(12)));
    walk(&region, 1 << 20, true).unwrap();
}

#[test]
fn rows_columns_over_anything_but_a_table_and_list_columns_over_a_table_are_refused() {
    // A ROWS_COLUMN whose child is a list of three None.
    let mut b = Builder::new();
    let list = b.seq(false, &[SLOT_NONE, SLOT_NONE, SLOT_NONE]);
    let col = b.rows_column(list, &[0, 2, 3]);
    refuse(&finish_fixed(b, col), &["rows column child is not a table"]);
    // A ROWS_COLUMN over the empty list slot.
    let mut b = Builder::new();
    let col = b.rows_column(SLOT_EMPTY_LIST, &[0, 0]);
    refuse(&finish_fixed(b, col), &["rows column child is not a table"]);
    // A LIST_COLUMN over a TABLE (what a ROWS_COLUMN replaces).
    let (mut bytes, rows, _) = rows_column_region();
    bytes[rows] = KIND_LIST_COLUMN;
    fix_checksum(&mut bytes);
    refuse(&bytes, &["list column child is not a list, number list or string column"]);
    // A ROWS_COLUMN over a ROWS_COLUMN (over a table): refused at once.
    let (bytes, rows, _) = rows_column_region();
    refuse(&with_rows_column(&bytes, rows, &[0, 1, 3]), &["rows column child is not a table"]);
}

/// `bytes` with a ROWS_COLUMN over the object at `child` appended, cut by
/// `offsets`, as its root.
fn with_rows_column(bytes: &[u8], child: usize, offsets: &[u32]) -> Vec<u8> {
    let mut b = Builder::continuing(bytes.len(), 64);
    let top = b.rows_column(child as u64, offsets);
    let mut more = bytes.to_vec();
    more.extend_from_slice(&b.into_raw());
    put(&mut more, OFF_ROOT, top);
    let total = more.len() as u64;
    put(&mut more, OFF_TOTAL_LEN, total);
    fix_checksum(&mut more);
    more
}

#[test]
fn rows_columns_with_bad_offsets_or_a_child_after_them_are_refused() {
    // The last offset is not the child table's row count.
    let (mut bytes, rows, _) = rows_column_region();
    bytes[rows + 16 + 12..rows + 16 + 16].copy_from_slice(&2u32.to_le_bytes());
    fix_checksum(&mut bytes);
    refuse(&bytes, &["list column offsets"]);
    // Offsets that decrease.
    let (mut bytes, rows, _) = rows_column_region();
    bytes[rows + 16 + 4..rows + 16 + 8].copy_from_slice(&3u32.to_le_bytes());
    fix_checksum(&mut bytes);
    refuse(&bytes, &["offsets"]);
    // The child slot pointing at the column itself.
    let (mut bytes, rows, _) = rows_column_region();
    put(&mut bytes, rows + 8, rows as u64);
    fix_checksum(&mut bytes);
    refuse(&bytes, &["child does not lie before its column"]);
}

/// A KEYED_TABLE of four rows over the keys id, name, org: `{id: 1, name:
/// "a"}`, None, `{org: "x", id: 3}` (its own key order), `{}`. Returns the
/// region, the table's offset and the place of its key-list word.
fn keyed_table_region() -> (Vec<u8>, usize, usize) {
    let mut b = Builder::new();
    let key = |b: &mut Builder, k: &str| (b.str_utf8(k), hash::hash_str_units(k.as_bytes()));
    let (kid, hid) = key(&mut b, "id");
    let (kname, hname) = key(&mut b, "name");
    let (korg, horg) = key(&mut b, "org");
    let shape = b.shape(&[kid, kname, korg], &[hid, hname, horg]);
    let ids = b.num_list(false, &[1, 0, 3, 0]);
    let a = b.str_utf8("a");
    let names = b.seq(false, &[a, SLOT_NONE, SLOT_NONE, SLOT_NONE]);
    let x = b.str_utf8("x");
    let orgs = b.seq(false, &[SLOT_NONE, SLOT_NONE, x, SLOT_NONE]);
    let table = b.keyed_table_object(shape, &[ids, names, orgs], &[&[0, 1], &[2, 0], &[]], &[0, 0xFF, 1, 2]);
    (b.finish(table), table as usize, table as usize + 16 + 3 * 8)
}

fn key_text(r: &Reader<'_>, d: bale_core::reader::Dict, i: usize) -> String {
    let Value::Str(s) = r.dict_key(d, i).unwrap() else { panic!("a string key") };
    s.to_string_lossy()
}

#[test]
fn keyed_table_rows_are_dicts_of_their_own_keys_or_none() {
    let (bytes, table, _) = keyed_table_region();
    let region = Region::new_verified(&bytes).unwrap();
    let r = region.reader;
    let Value::Column(t) = region.root().unwrap() else { panic!("a table") };
    assert_eq!(t.len, 4);
    let Value::Dict(row0) = r.column_item(t, 0).unwrap() else { panic!("a row") };
    assert_eq!((row0.len, row0.start, row0.row), (2, table, Some(0)));
    assert_eq!((key_text(&r, row0, 0), key_text(&r, row0, 1)), ("id".into(), "name".into()));
    assert!(matches!(r.dict_value(row0, 0).unwrap(), Value::Int(1)));
    assert!(matches!(r.dict_value(row0, 1).unwrap(), Value::Str(s) if s.to_string_lossy() == "a"));
    // A key of the table that the row lacks is not found in it.
    let found = |d, k: &str| lookup_str(&r, d, k).unwrap().is_some();
    assert!(found(row0, "name") && !found(row0, "org"));
    assert!(matches!(r.column_item(t, 1).unwrap(), Value::None));
    let Value::Dict(row2) = r.column_item(t, 2).unwrap() else { panic!("a row") };
    assert_eq!((key_text(&r, row2, 0), key_text(&r, row2, 1)), ("org".into(), "id".into()));
    assert!(matches!(r.dict_value(row2, 0).unwrap(), Value::Str(s) if s.to_string_lossy() == "x"));
    assert!(matches!(r.dict_value(row2, 1).unwrap(), Value::Int(3)));
    assert!(found(row2, "org") && !found(row2, "name"));
    let Value::Dict(row3) = r.column_item(t, 3).unwrap() else { panic!("a row") };
    assert_eq!(row3.len, 0);
    walk(&region, 1 << 20, true).unwrap();
    // Rows of one key list are equal dicts whatever the table; a row is not
    // equal to one with another key set.
    assert!(values_eq(&r, Value::Dict(row0), &r, Value::Dict(row0)).unwrap());
    assert!(!values_eq(&r, Value::Dict(row0), &r, Value::Dict(row2)).unwrap());
}

#[test]
fn rows_columns_over_a_keyed_table_read_its_rows() {
    let (bytes, table, _) = keyed_table_region();
    let more = with_rows_column(&bytes, table, &[0, 3, 4]);
    let region = Region::new_verified(&more).unwrap();
    let r = region.reader;
    let Value::Column(c) = region.root().unwrap() else { panic!("a column") };
    let Value::Column(first) = r.column_item(c, 0).unwrap() else { panic!("a slice") };
    assert_eq!(first.len, 3);
    assert!(matches!(r.column_item(first, 1).unwrap(), Value::None));
    let Value::Column(last) = r.column_item(c, 1).unwrap() else { panic!("a slice") };
    assert!(matches!(r.column_item(last, 0).unwrap(), Value::Dict(d) if d.len == 0));
    walk(&region, 1 << 20, true).unwrap();
}

#[test]
fn keyed_tables_with_bad_key_lists_or_row_bytes_are_refused() {
    let (bytes, _, word) = keyed_table_region();
    let lists = word + 8;
    let ids = lists + 8;
    let rows = ids + 8;
    let forge = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        f(&mut b);
        fix_checksum(&mut b);
        b
    };
    // A row naming a key list the table does not have (3 lists: 0..=2).
    refuse(&forge(&|b| b[rows + 1] = 3), &["row names no key list"]);
    // An id beyond the key table (3 keys).
    refuse(&forge(&|b| b[ids] = 3), &["beyond its key table"]);
    // One key twice in a list.
    refuse(&forge(&|b| b[ids + 1] = 0), &["one key id twice"]);
    // Offsets that decrease, or do not end at the id count.
    refuse(&forge(&|b| b[lists + 2] = 5), &["key-list offsets"]);
    refuse(&forge(&|b| b[lists + 6] = 3), &["key-list offsets"]);
    // A reserved bit of the key-list word, or no key list at all.
    refuse(&forge(&|b| b[word + 1] = 1), &["key-list word"]);
    refuse(&forge(&|b| b[word] = 0), &["key-list word"]);
    // Padding after the row bytes.
    refuse(&forge(&|b| b[rows + 5] = 1), &["non-zero padding"]);
    // A reader refuses a bad row or id on every read, verified or not.
    for bad in [forge(&|b| b[rows + 1] = 3), forge(&|b| b[ids] = 3)] {
        let region = Region::new(&bad).unwrap();
        let Value::Column(t) = region.root().unwrap() else { panic!("a table") };
        let e = (0..4).find_map(|i| region.reader.column_item(t, i).err()).expect("a refused row");
        assert!(e.to_string().contains("keyed table") || e.to_string().contains("key table"), "{e}");
    }
}

#[test]
fn a_keyed_table_column_shorter_than_its_rows_is_refused() {
    let mut b = Builder::new();
    let (k, h) = (b.str_utf8("k"), hash::hash_str_units(b"k"));
    let shape = b.shape(&[k], &[h]);
    let col = b.num_list(false, &[1, 2]);
    let table = b.keyed_table_object(shape, &[col], &[&[0]], &[0, 0, 0]);
    refuse(&finish_fixed(b, table), &["table column is not a list as long as its table"]);
}

#[test]
fn a_table_of_no_keys_is_refused_whatever_bytes_lie_around_it() {
    // Its rows would take no bytes. A fuzzed region held a TABLE of 268
    // rows over an empty shape, within the readers' budget only thanks to
    // bytes nothing referenced; its copy, without them, no longer fitted
    // its own length, so a verified region copied into an invalid one
    // (fuzz/regressions/table-of-no-keys.bale).
    for keyed in [false, true] {
        let mut b = Builder::new();
        let shape = b.shape(&[], &[]);
        let padding: Vec<u64> = (0..64).map(|i| b.float(i as f64)).collect();
        let _unreferenced = b.seq(false, &padding);
        let table =
            if keyed { b.keyed_table_object(shape, &[], &[&[]], &[0; 20]) } else { b.table_object(20, shape, &[]) };
        let root = b.seq(false, &[table]);
        let bytes = finish_fixed(b, root);
        refuse(&bytes, &["table has no keys"]);
        // And on read, verified or not.
        let region = Region::new(&bytes).unwrap();
        let Value::List(list) = region.root().unwrap() else { panic!("a list") };
        let e = region.reader.seq_item(list, 0).unwrap_err();
        assert!(e.to_string().contains("table has no keys"), "{e}");
    }
}
