//! EXTERN (0x24), a reference to a value in another segment of a store:
//! its bytes (it has no golden vector, as `compact()` never writes one),
//! the checks on its fields, and what the readers that cannot follow it do.

use bale_core::format::*;
use bale_core::json::to_json;
use bale_core::stats::region_stats;
use bale_core::transplant::ExternPolicy;
use bale_core::{values_eq, Builder, Extern, Reader, Region, Transplant, Value};

fn target() -> Extern {
    Extern { start: 0, segment: 7, end: 4096, flags: FLAG_SHARED, slot: 0x1234_5678 }
}

/// A region whose root is a list of `[1, EXTERN]`.
fn region_with_extern(x: &Extern) -> (Vec<u8>, usize) {
    let mut b = Builder::new();
    let at = b.extern_ref(x) as usize;
    let one = b.int(1);
    let root = b.seq(false, &[one, at as u64]);
    (b.finish(root), at)
}

#[test]
fn its_bytes_are_a_header_and_four_words() {
    let (bytes, at) = region_with_extern(&target());
    let words: Vec<u64> =
        (0..5).map(|i| u64::from_le_bytes(bytes[at + 8 * i..at + 8 * i + 8].try_into().unwrap())).collect();
    assert_eq!(words, vec![u64::from(KIND_EXTERN), 7, 4096, u64::from(FLAG_SHARED), 0x1234_5678]);
}

#[test]
fn it_decodes_and_verifies() {
    let (bytes, at) = region_with_extern(&target());
    let region = Region::new_verified(&bytes).expect("a valid region");
    // Valid, and reported: a reader outside a store refuses to read it.
    assert_eq!(bale_core::verify_report(&region).unwrap().first_extern, Some(at));
    let Value::List(list) = region.root().unwrap() else { panic!("a list") };
    match region.reader.seq_item(list, 1).unwrap() {
        Value::Extern(x) => assert_eq!(x, Extern { start: at, ..target() }),
        other => panic!("{other:?}"),
    }
    let st = region_stats(&region.reader, region.header.root).unwrap();
    assert_eq!(st.extern_segments().into_iter().collect::<Vec<_>>(), vec![7]);
    assert_eq!(st.kinds["references to other segments"].count, 1);
}

/// The region with word `i` of the EXTERN (0: its header) set to `w`.
fn damaged(i: usize, w: u64) -> Vec<u8> {
    let (mut bytes, at) = region_with_extern(&target());
    bytes[at + 8 * i..at + 8 * i + 8].copy_from_slice(&w.to_le_bytes());
    bale_core::fill_checksum(&mut bytes);
    bytes
}

#[test]
fn bad_fields_are_refused_by_name() {
    let cases = [
        (0, u64::from(KIND_EXTERN) | 1 << 8, "non-zero length"),
        (1, u64::from(u32::MAX), "past 2^32 - 2"),
        (2, 4100, "not a multiple of 8"),
        (2, 56, "of at least 64"),
        (3, 4, "flags 0x4"),
        (3, u64::from(FLAG_CYCLIC), "flags 0x2"),
    ];
    for (i, w, message) in cases {
        let bytes = damaged(i, w);
        let err = Region::new_verified(&bytes).expect_err(message);
        assert!(err.to_string().contains(message), "{message}: {err}");
        let region = Region::new(&bytes).unwrap();
        let Value::List(list) = region.root().unwrap() else { panic!("a list") };
        let err = region.reader.seq_item(list, 1).expect_err(message);
        assert!(err.to_string().contains(message), "{message}: {err}");
    }
}

#[test]
fn readers_without_a_store_refuse_it_or_leave_it_to_their_caller() {
    let (bytes, _) = region_with_extern(&target());
    let r = Reader::new(&bytes);
    let region = Region::new(&bytes).unwrap();
    let root = region.root().unwrap();
    // Equality is decided by whoever can read what it names (the same
    // bytes in another buffer: not the same place).
    let twin = bytes.clone();
    let (r2, root2) = (Reader::new(&twin), Region::new(&twin).unwrap().root().unwrap());
    assert_eq!(values_eq(&r, root, &r2, root2).ok(), None);
    assert!(bale_core::equality::compare(&r, root, &r2, root2).unwrap().is_none());
    // JSON: an error that says the store is needed.
    let mut out = Vec::new();
    let err = to_json(&r, root, &mut out).unwrap_err();
    assert!(err.needs_store && !err.malformed, "{err}");
    assert!(err.reason.contains("segment 7 of a store"), "{err}");
    // Hashing: a dict or list is not hashable.
    let Value::List(list) = root else { panic!("a list") };
    let x = r.seq_item(list, 1).unwrap();
    let err = bale_core::hash::hash_value(&r, x, 0).unwrap_err();
    assert!(err.to_string().contains("not hashable"), "{err}");
}

#[test]
fn a_copy_keeps_it_only_under_a_policy_that_allows_its_segment() {
    let (bytes, _) = region_with_extern(&target());
    let r = Reader::new(&bytes);
    let root = Region::new(&bytes).unwrap().header.root;
    // No policy: refused, and the copy says why.
    let mut t = Transplant::new(&r, false, false);
    let mut out = Builder::new();
    assert!(t.copy(&r, &mut out, root, bytes.len()).is_err());
    assert!(t.met_extern());
    // Allowed: copied as it is, its segment reported.
    let policy = ExternPolicy { own: 3, own_end: 64, allowed: [7].into_iter().collect(), ..ExternPolicy::default() };
    let mut t = Transplant::new(&r, false, false).with_externs(policy);
    let mut out = Builder::new();
    let slot = t.copy(&r, &mut out, root, bytes.len()).unwrap();
    assert_eq!(t.externs().unwrap().kept.iter().copied().collect::<Vec<_>>(), vec![7]);
    let copied = out.finish(slot);
    let c = Region::new_verified(&copied).unwrap();
    let Value::List(list) = c.root().unwrap() else { panic!("a list") };
    assert!(matches!(c.reader.seq_item(list, 1).unwrap(), Value::Extern(x) if x.segment == 7 && x.slot == 0x1234_5678));
    // Naming the destination's own segment, below where the copy goes: a
    // plain reference, and the copy needs SHARED.
    let policy = ExternPolicy { own: 7, own_end: 4096, ..ExternPolicy::default() };
    let mut t = Transplant::new(&r, false, false).with_externs(policy);
    let mut out = Builder::new();
    let slot = t.copy(&r, &mut out, root, bytes.len()).unwrap();
    assert_eq!(t.flags() & FLAG_SHARED, FLAG_SHARED);
    let raw = out.finish(slot);
    let c = Reader::new(&raw);
    let Value::List(list) = c.decode(slot, raw.len()).unwrap() else { panic!("a list") };
    assert_eq!(c.seq_slot(list, 1).unwrap(), 0x1234_5678);
    // Its own segment past where the copy goes, or a segment not allowed: refused.
    for policy in [
        ExternPolicy { own: 7, own_end: 4088, ..ExternPolicy::default() },
        ExternPolicy { own: 3, own_end: 64, allowed: [8].into_iter().collect(), ..ExternPolicy::default() },
    ] {
        let mut t = Transplant::new(&r, false, false).with_externs(policy);
        assert!(t.copy(&r, &mut Builder::new(), root, bytes.len()).is_err());
        assert!(t.met_extern());
    }
}
