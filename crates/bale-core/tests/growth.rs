//! Appending (continuing builders), cycles (forward references under
//! FLAG_CYCLIC) and native copies between regions (`Transplant`).

use bale_core::format::*;
use bale_core::verify::verify_structure;
use bale_core::{compute_checksum, values_eq, Builder, ForwardRefs, Reader, Region, Transplant, Value};

fn key_hashes(b: &Builder, slots: &[u64]) -> Vec<u64> {
    let r = Reader::new(b.bytes());
    slots.iter().map(|&s| bale_core::hash::hash_value(&r, r.decode(s, b.len()).unwrap(), 0).unwrap()).collect()
}

/// `{"name": <s>, "tags": [1, 2]}` records in a list, sharing one shape.
fn records(b: &mut Builder, n: usize) -> u64 {
    let keys = [b.str_utf8("name"), b.str_utf8("tags")];
    let hashes = key_hashes(b, &keys);
    let shape = b.shape(&keys, &hashes);
    let mut items = Vec::new();
    for i in 0..n {
        let name = b.str_utf8(&format!("record number {i}"));
        let tags = b.seq(false, &[make_int_slot(1).unwrap(), make_int_slot(i as i64).unwrap()]);
        items.push(b.dict(shape, &[name, tags]));
    }
    b.seq(false, &items)
}

fn region_with(bytes: &mut Vec<u8>, len: usize, root: u64, flags: u32) {
    bytes.truncate(len);
    bytes[OFF_TOTAL_LEN..OFF_TOTAL_LEN + 8].copy_from_slice(&(len as u64).to_le_bytes());
    bytes[OFF_ROOT..OFF_ROOT + 8].copy_from_slice(&root.to_le_bytes());
    bytes[OFF_FLAGS..OFF_FLAGS + 4].copy_from_slice(&flags.to_le_bytes());
    let sum = compute_checksum(bytes);
    bytes[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn continuing_builder_references_the_existing_region() {
    let mut b = Builder::new();
    let old_root = records(&mut b, 3);
    let mut bytes = b.finish(old_root);
    let base = bytes.len();

    let mut more = Builder::continuing(base, 64);
    let label = more.str_utf8("a label longer than seven");
    let root = more.seq(true, &[label, old_root]);
    assert!(more.new_bytes().len() < 64, "only the new tuple and string were written");
    bytes.extend_from_slice(more.new_bytes());
    let len = bytes.len();
    region_with(&mut bytes, len, root, FLAG_SHARED);

    let region = Region::new_verified(&bytes).unwrap();
    let Value::Tuple(t) = region.root().unwrap() else { panic!("tuple root") };
    let Value::List(old) = region.reader.seq_item(t, 1).unwrap() else { panic!("old list") };
    assert_eq!(old.len, 3);
    assert_eq!(old.start, (old_root >> 19 << 3) as usize, "the old list is referenced where it is");
}

#[test]
#[should_panic(expected = "multiple of 8")]
fn continuing_builder_needs_an_aligned_base() {
    Builder::continuing(70, 0);
}

/// `l = []; l.append(l); root = [l, 5]`, written with a placeholder.
fn self_containing_list(flags: u32) -> Vec<u8> {
    let mut b = Builder::new();
    let mut fwd = ForwardRefs::default();
    // Depth 0: the outer list; depth 1: `l`, which meets itself.
    let inner_slots = [fwd.placeholder(1)];
    let inner = b.seq(false, &inner_slots);
    fwd.note(&b, inner, &inner_slots);
    fwd.resolve(&mut b, 1, inner);
    let outer_slots = [inner, make_int_slot(5).unwrap()];
    let outer = b.seq(false, &outer_slots);
    fwd.note(&b, outer, &outer_slots);
    fwd.resolve(&mut b, 0, outer);
    assert!(fwd.made());
    b.set_flags(flags);
    b.finish(outer)
}

#[test]
fn a_list_containing_itself_needs_the_cyclic_flag() {
    let ok = self_containing_list(FLAG_SHARED | FLAG_CYCLIC);
    let region = Region::new_verified(&ok).unwrap();
    let Value::List(outer) = region.root().unwrap() else { panic!() };
    let Value::List(l) = region.reader.seq_item(outer, 0).unwrap() else { panic!() };
    let Value::List(again) = region.reader.seq_item(l, 0).unwrap() else { panic!() };
    assert_eq!(l, again, "the element of l is l");

    // The same bytes without CYCLIC: the reference to itself is refused.
    let refused = self_containing_list(FLAG_SHARED);
    let region = Region::new(&refused).unwrap();
    assert!(verify_structure(&region).is_err());
    let Value::List(outer) = region.root().unwrap() else { panic!() };
    let Value::List(l) = region.reader.seq_item(outer, 0).unwrap() else { panic!() };
    let e = region.reader.seq_item(l, 0).unwrap_err();
    assert!(e.to_string().contains("before its referrer"), "{e}");
}

#[test]
fn cyclic_equality_is_bounded() {
    let bytes = self_containing_list(FLAG_SHARED | FLAG_CYCLIC);
    let region = Region::new(&bytes).unwrap();
    let Value::List(outer) = region.root().unwrap() else { panic!() };
    let l = region.reader.seq_item(outer, 0).unwrap();
    let other = self_containing_list(FLAG_SHARED | FLAG_CYCLIC);
    let other_region = Region::new(&other).unwrap();
    let Value::List(o) = other_region.root().unwrap() else { panic!() };
    let ol = other_region.reader.seq_item(o, 0).unwrap();
    // Comparing two distinct cyclic values ends (with an error), never hangs.
    assert!(values_eq(&region.reader, l, &other_region.reader, ol).is_err());
}

#[test]
fn transplant_copies_a_value_with_one_shape() {
    let mut b = Builder::new();
    let root = records(&mut b, 50);
    let src_bytes = b.finish(root);
    let src = Region::new_verified(&src_bytes).unwrap();

    let mut dst = Builder::new();
    let mut t = Transplant::new(&src.reader, false, false);
    let copied = t.copy(&src.reader, &mut dst, root, src_bytes.len()).unwrap();
    assert!(!t.made_shared() && !t.made_cycles());
    let out = dst.finish(copied);
    assert_eq!(out.len(), src_bytes.len(), "same content, same size: the shape is copied once");
    let copy = Region::new_verified(&out).unwrap();
    assert!(values_eq(&src.reader, src.root().unwrap(), &copy.reader, copy.root().unwrap()).unwrap());
}

#[test]
fn transplant_into_a_continuing_builder_keeps_offsets_consistent() {
    let mut b = Builder::new();
    let root = records(&mut b, 4);
    let src_bytes = b.finish(root);
    let src = Region::new(&src_bytes).unwrap();

    let mut base = Builder::new();
    let base_root = base.str_utf8("the region being appended to");
    let mut bytes = base.finish(base_root);
    let mut more = Builder::continuing(bytes.len(), 0);
    let mut t = Transplant::new(&src.reader, false, false);
    let copied = t.copy(&src.reader, &mut more, root, src_bytes.len()).unwrap();
    let new_root = more.seq(true, &[base_root, copied]);
    bytes.extend_from_slice(more.new_bytes());
    let len = bytes.len();
    region_with(&mut bytes, len, new_root, 0);
    let grown = Region::new_verified(&bytes).unwrap();
    let Value::Tuple(t2) = grown.root().unwrap() else { panic!() };
    let second = grown.reader.seq_item(t2, 1).unwrap();
    assert!(values_eq(&src.reader, src.root().unwrap(), &grown.reader, second).unwrap());
}

#[test]
fn transplant_keeps_sharing_and_cycles() {
    // A cyclic source: copying it gives a cyclic, equally shaped copy.
    let src_bytes = self_containing_list(FLAG_SHARED | FLAG_CYCLIC);
    let src = Region::new_verified(&src_bytes).unwrap();
    let mut dst = Builder::new();
    let mut t = Transplant::new(&src.reader, false, true);
    let root = t.copy(&src.reader, &mut dst, src.header.root, src_bytes.len()).unwrap();
    assert!(t.made_cycles() && t.made_shared());
    dst.set_flags(FLAG_SHARED | FLAG_CYCLIC);
    let out = dst.finish(root);
    let copy = Region::new_verified(&out).unwrap();
    let Value::List(outer) = copy.root().unwrap() else { panic!() };
    let Value::List(l) = copy.reader.seq_item(outer, 0).unwrap() else { panic!() };
    let Value::List(again) = copy.reader.seq_item(l, 0).unwrap() else { panic!() };
    assert_eq!(l, again);

    // A list referenced twice in a SHARED source stays one list.
    let mut b = Builder::new();
    let inner = b.seq(false, &[make_int_slot(7).unwrap()]);
    let root = b.seq(false, &[inner, inner]);
    b.set_flags(FLAG_SHARED);
    let shared = b.finish(root);
    let src = Region::new_verified(&shared).unwrap();
    let mut dst = Builder::new();
    let mut t = Transplant::new(&src.reader, false, true);
    let copied = t.copy(&src.reader, &mut dst, root, shared.len()).unwrap();
    assert!(t.made_shared());
    let out = dst.finish(copied);
    assert_eq!(out.len(), shared.len());
}

#[test]
fn transplant_of_crafted_sharing_is_bounded() {
    // Each list references the previous one twice: 2^40 leaves if expanded,
    // with no SHARED flag. The copy must stop with an error, quickly.
    let mut b = Builder::new();
    let mut s = b.seq(false, &[make_int_slot(1).unwrap()]);
    for _ in 0..40 {
        s = b.seq(false, &[s, s]);
    }
    let bytes = b.finish(s);
    let src = Region::new(&bytes).unwrap();
    let mut dst = Builder::new();
    let mut t = Transplant::new(&src.reader, false, false);
    assert!(t.copy(&src.reader, &mut dst, s, bytes.len()).is_err());
}

#[test]
fn empty_list_objects_are_valid_and_distinct() {
    let mut b = Builder::new();
    let a = b.empty_list_object();
    let c = b.empty_list_object();
    let root = b.seq(false, &[a, a, c]);
    b.set_flags(FLAG_SHARED);
    let bytes = b.finish(root);
    let region = Region::new_verified(&bytes).unwrap();
    let Value::List(l) = region.root().unwrap() else { panic!() };
    let items: Vec<_> = (0..3)
        .map(|i| match region.reader.seq_item(l, i).unwrap() {
            Value::List(s) => s,
            _ => panic!("a list"),
        })
        .collect();
    assert!(items.iter().all(|s| s.len == 0));
    assert_eq!(items[0], items[1]);
    assert_ne!(items[0], items[2]);
}

#[test]
fn forged_forward_references_never_hang_verification() {
    // Every word of a cyclic region pointed at every other position: verify
    // and a bounded equality must end.
    let base = self_containing_list(FLAG_SHARED | FLAG_CYCLIC);
    let words = base.len() / 8;
    for w in HEADER_LEN / 8..words {
        for target in (HEADER_LEN..base.len()).step_by(8) {
            for slot in [target as u64, make_seq_slot(TAG_LIST, 1, target), make_seq_slot(TAG_TUPLE, 2, target)] {
                let mut b = base.clone();
                b[8 * w..8 * w + 8].copy_from_slice(&slot.to_le_bytes());
                let sum = compute_checksum(&b);
                b[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
                if let Ok(r) = Region::new_verified(&b) {
                    let v = r.root().unwrap();
                    let _ = values_eq(&r.reader, v, &r.reader, v);
                    let _ = bale_core::hash::hash_value(&r.reader, v, 0);
                }
            }
        }
    }
}

#[test]
fn transplant_refuses_a_list_column_whose_offsets_were_damaged_and_copies_on_after() {
    // [[1, 2], [3]] as a LIST_COLUMN over the number list [1, 2, 3].
    let mut b = Builder::new();
    let child = b.num_list(false, &[1, 2, 3]);
    let column = b.list_column(child, &[0, 2, 3]);
    let good = b.str_utf8("a value copied after the failure");
    let root = b.seq(false, &[column, good]);
    let src_bytes = b.finish(root);
    let src = Region::new_verified(&src_bytes).unwrap();
    let Value::List(items) = src.root().unwrap() else { panic!("a list") };
    let column_slot = src.reader.seq_slot(items, 0).unwrap();
    let good_slot = src.reader.seq_slot(items, 1).unwrap();

    // The offsets follow the header word and the child slot.
    let offs = column_slot as usize + 16;
    let mut damaged = src_bytes.clone();
    damaged[offs + 4..offs + 8].copy_from_slice(&5u32.to_le_bytes());
    let bad = Region::new(&damaged).unwrap();

    let mut dst = Builder::new();
    let mut t = Transplant::new(&bad.reader, false, false);
    let err = t.copy(&bad.reader, &mut dst, column_slot, damaged.len()).unwrap_err();
    assert!(err.message.contains("list column offsets"), "{err}");
    assert_eq!(err.offset, Some(offs));
    // The same copy state goes on: the failed walk left no open container.
    let copied = t.copy(&bad.reader, &mut dst, good_slot, damaged.len()).unwrap();
    let out = dst.finish(copied);
    let copy = Region::new_verified(&out).unwrap();
    let Value::Str(s) = copy.root().unwrap() else { panic!("a str") };
    assert_eq!(s.units(), b"a value copied after the failure");

    // The undamaged column copies whole.
    let mut dst = Builder::new();
    let mut t = Transplant::new(&src.reader, false, false);
    let copied = t.copy(&src.reader, &mut dst, column_slot, src_bytes.len()).unwrap();
    let out = dst.finish(copied);
    let copy = Region::new_verified(&out).unwrap();
    let Value::Column(c) = src.reader.decode(column_slot, src_bytes.len()).unwrap() else { panic!("a column") };
    let want = Value::Column(c);
    assert!(values_eq(&src.reader, want, &copy.reader, copy.root().unwrap()).unwrap());
}

#[test]
fn a_copy_that_failed_inside_a_container_leaves_nothing_open() {
    let mut b = Builder::new();
    let inner = b.seq(false, &[SLOT_NONE, SLOT_TRUE]);
    let s = b.str_utf8("a string, damaged below");
    let root = b.seq(false, &[inner, s]);
    let mut bytes = b.finish(root);
    // The root's second slot now points past the end of the region.
    let Value::List(items) = Region::new(&bytes).unwrap().root().unwrap() else { panic!("a list") };
    let at = items.pos + 8;
    bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let src = Region::new(&bytes).unwrap();

    let mut dst = Builder::new();
    let mut t = Transplant::new(&src.reader, false, false);
    assert!(t.copy(&src.reader, &mut dst, root, bytes.len()).is_err());
    // The root list's frame was open when the copy failed; a later copy
    // must not finish it.
    let copied = t.copy(&src.reader, &mut dst, inner, bytes.len()).unwrap();
    let out = dst.finish(copied);
    let copy = Region::new_verified(&out).unwrap();
    let Value::List(l) = copy.root().unwrap() else { panic!("a list") };
    assert_eq!(l.len, 2);
    assert!(matches!(copy.reader.seq_item(l, 0).unwrap(), Value::None));
    assert!(matches!(copy.reader.seq_item(l, 1).unwrap(), Value::Bool(true)));
}

#[test]
fn a_damaged_slot_of_zero_is_refused_not_copied_as_an_empty_cache_entry() {
    // Strings fill the copy's cache of leaves, whose empty entries are
    // (0, 0); a slot damaged to 0 must still be decoded, and refused.
    let mut b = Builder::new();
    let s = b.str_utf8("long enough to be stored");
    let root = b.seq(false, &[s, SLOT_NONE]);
    let mut bytes = b.finish(root);
    let Value::List(items) = Region::new(&bytes).unwrap().root().unwrap() else { panic!("a list") };
    let at = items.pos + 8;
    bytes[at..at + 8].copy_from_slice(&0u64.to_le_bytes());
    let src = Region::new(&bytes).unwrap();
    let mut dst = Builder::new();
    let mut t = Transplant::new(&src.reader, false, false);
    assert!(t.copy(&src.reader, &mut dst, root, bytes.len()).is_err());
}
