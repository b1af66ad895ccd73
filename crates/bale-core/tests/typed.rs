//! Typed kinds written with `Builder` and read back: records and their
//! types, number lists, numpy arrays, typed scalars; and the refusals that
//! keep malformed ones out.

use bale_core::format::*;
use bale_core::hash::hash_str_units;
use bale_core::typed::{pack_date, Date};
use bale_core::{verify_report, Builder, Region, Value};

fn record_region(flavor: u64) -> Vec<u8> {
    let mut b = Builder::new();
    let name = b.str_utf8("shop.Order");
    let fields = [b.str_utf8("id"), b.str_utf8("items")];
    let hashes = [hash_str_units(b"id"), hash_str_units(b"items")];
    let ty = b.rec_type(flavor, name, &fields, &hashes);
    let items = b.num_list(true, &[1.5f64.to_bits(), (-2.0f64).to_bits()]);
    let r1 = b.record(ty, &[make_int_slot(7).unwrap(), items]);
    let r2 = b.record(ty, &[make_int_slot(8).unwrap(), SLOT_NONE]);
    let root = b.seq(false, &[r1, r2]);
    b.finish(root)
}

#[test]
fn records_share_one_type_and_find_fields_by_name() {
    let bytes = record_region(FLAVOR_DATACLASS);
    let region = Region::new_verified(&bytes).unwrap();
    let r = region.reader;
    let Value::List(list) = region.root().unwrap() else { panic!("a list") };
    let (Value::Record(a), Value::Record(b)) = (r.seq_item(list, 0).unwrap(), r.seq_item(list, 1).unwrap()) else {
        panic!("records")
    };
    assert_eq!(a.ty, b.ty);
    assert_eq!(r.type_name(a.ty).unwrap().to_string_lossy(), "shop.Order");
    let i = r.find_str(a.ty.fields, Width::Ascii, b"items").unwrap().unwrap();
    let Value::NumList(items) = r.record_value(a, i).unwrap() else { panic!("a number list") };
    assert!(items.float && items.len == 2);
    assert!(matches!(r.num_item(items, 1).unwrap(), Value::Float(f) if f == -2.0));
    assert!(r.find_str(a.ty.fields, Width::Ascii, b"nope").unwrap().is_none());
    let stats = bale_core::stats::region_stats(&r, region.header.root).unwrap();
    assert_eq!(stats.types.len(), 1);
    assert_eq!((stats.types[0].count, &stats.types[0].fields[..]), (2, &["id".to_string(), "items".to_string()][..]));
}

#[test]
fn an_unknown_flavor_is_refused() {
    let bytes = record_region(FLAVOR_MAX + 1);
    let e = Region::new_verified(&bytes).unwrap_err();
    assert!(e.message.contains("flavor"), "{e}");
}

#[test]
fn arrays_are_aligned_and_their_sizes_agree() {
    let mut b = Builder::new();
    let s = b.str_utf8("x"); // pushes the array data off 64 alignment first
    let data: Vec<u8> = (0..24u8).collect();
    let a = b.ndarray(&data, 4, 0, &[2, 3], "<i4");
    let root = b.seq(true, &[s, a]);
    let bytes = b.finish(root);
    let region = Region::new(&bytes).unwrap();
    let report = verify_report(&region).unwrap();
    assert_eq!(report.array_types.len(), 1);
    assert_eq!(report.array_types[0].dtype, "<i4");
    let Value::Tuple(t) = region.root().unwrap() else { panic!("a tuple") };
    let Value::NdArray(arr) = region.reader.seq_item(t, 1).unwrap() else { panic!("an array") };
    assert_eq!(arr.data_off % 64, 0);
    assert_eq!(arr.data, &data[..]);
    assert_eq!((arr.ndim(), arr.dim(0), arr.dim(1)), (2, 2, 3));

    // A shape that does not match the byte count is refused.
    let mut b = Builder::new();
    let a = b.ndarray(&data, 8, 0, &[2, 3], "<i8");
    let bytes = b.finish(a);
    let e = Region::new_verified(&bytes).unwrap_err();
    assert!(e.message.contains("byte count"), "{e}");
}

#[test]
fn typed_scalars_are_checked() {
    let mut b = Builder::new();
    let ok = b.ext(KIND_DATE, pack_date(Date { year: 2024, month: 2, day: 29 }), &[]);
    let bytes = b.finish(ok);
    Region::new_verified(&bytes).unwrap();
    let mut b = Builder::new();
    let bad = b.ext(KIND_DATE, pack_date(Date { year: 2023, month: 2, day: 29 }), &[]);
    let bytes = b.finish(bad);
    let e = Region::new_verified(&bytes).unwrap_err();
    assert!(e.message.contains("invalid date"), "{e}");

    for (text, good) in [("-1.5E+3", true), ("1e5", false), ("NaN", true), ("", false)] {
        let mut b = Builder::new();
        let d = b.ext(KIND_DECIMAL, text.len() as u64, text.as_bytes());
        assert_eq!(Region::new_verified(&b.finish(d)).is_ok(), good, "{text:?}");
    }

    // Timedeltas, UUIDs and ranges have a length field of 0 (it is hashed and compared).
    let mut range = Vec::new();
    for x in [0i64, 10, 1] {
        range.extend_from_slice(&x.to_le_bytes());
    }
    for (kind, payload) in [(KIND_TIMEDELTA, vec![0u8; 16]), (KIND_UUID, vec![7u8; 16]), (KIND_RANGE, range)] {
        for (aux, good) in [(0u64, true), (5, false)] {
            let mut b = Builder::new();
            let v = b.ext(kind, aux, &payload);
            let bytes = b.finish(v);
            match Region::new_verified(&bytes) {
                Ok(_) => assert!(good, "kind 0x{kind:02x} with length field {aux} accepted"),
                Err(e) => {
                    assert!(!good, "kind 0x{kind:02x}: {e}");
                    assert!(e.message.contains("length field"), "{e}");
                }
            }
        }
    }
}

/// A region whose root is a set of the given fractions and floats (keys, so
/// verification compares them), each given as (numerator, denominator).
fn fraction_set(fractions: &[(i128, i128)], floats: &[f64]) -> Vec<u8> {
    let int = |v: i128| bale_core::hash::minimal_twos_complement(&v.to_le_bytes()).to_vec();
    let mut b = Builder::new();
    let (mut slots, mut hashes) = (Vec::new(), Vec::new());
    for &(n, d) in fractions {
        let (aux, p) = bale_core::fraction::encode(&int(n), &int(d));
        let e = bale_core::Ext { kind: KIND_FRACTION, start: 0, aux, payload: &p };
        slots.push(b.ext(KIND_FRACTION, aux, &p));
        hashes.push(bale_core::hash::hash_ext(&e));
    }
    for &f in floats {
        slots.push(b.float(f));
        hashes.push(bale_core::hash::hash_f64(f));
    }
    let root = b.set(true, &slots, &hashes);
    b.finish(root)
}

#[test]
fn fractions_are_numbers_among_keys() {
    // Fraction(1, 2) and 0.5 are one key to Python: a set of both is invalid.
    assert!(Region::new_verified(&fraction_set(&[(1, 2), (1, 3), (7, 1)], &[0.25, 7.5])).is_ok());
    let err = Region::new_verified(&fraction_set(&[(1, 2)], &[0.5])).unwrap_err();
    assert!(err.message.contains("same key twice"), "{err}");
    let err = Region::new_verified(&fraction_set(&[(7, 1)], &[7.0])).unwrap_err();
    assert!(err.message.contains("same key twice"), "{err}");
}

#[test]
fn fractions_not_in_lowest_terms_fail_verification_only() {
    let bytes = fraction_set(&[(2, 4)], &[]);
    let err = Region::new_verified(&bytes).unwrap_err();
    assert!(err.message.contains("lowest terms"), "{err}");
    // Reading does not run the gcd (see Note [Fraction keys and the coprime check]).
    assert!(Region::new(&bytes).unwrap().root().is_ok());
}

#[test]
fn posix_paths_must_be_normal_and_windows_paths_are_not_keys() {
    let region = |class: u64, text: &str| {
        let mut b = Builder::new();
        let (aux, p) = bale_core::path::encode(class, text.as_bytes());
        let root = b.ext(KIND_PATH, aux, &p);
        b.finish(root)
    };
    assert!(Region::new_verified(&region(bale_core::path::POSIX, "/a/b")).is_ok());
    assert!(Region::new_verified(&region(bale_core::path::PURE_WINDOWS, "a//b")).is_ok());
    let err = Region::new(&region(bale_core::path::PURE_POSIX, "a//b")).unwrap().root().unwrap_err();
    assert!(err.message.contains("normal form"), "{err}");
    let p = bale_core::path::encode(bale_core::path::PURE_WINDOWS, b"A").1;
    let e = bale_core::Ext { kind: KIND_PATH, start: 0, aux: bale_core::path::PURE_WINDOWS | 1 << 8, payload: &p };
    assert!(!bale_core::typed::hashable_ext(&e));
}
