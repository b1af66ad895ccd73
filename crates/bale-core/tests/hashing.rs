//! The key hash and Python equality of stored values (FORMAT.md, *Key hash*).

use bale_core::format::*;
use bale_core::hash::{self, hash_value};
use bale_core::{lookup_str, values_eq, Builder, Reader, Region, Value};

/// The splitmix64 finalizer, written out again from FORMAT.md.
fn spec_mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

fn xxh3(b: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(b, seed)
}

/// A finished region holding a tuple of the given slots; returns the bytes.
fn region(f: impl FnOnce(&mut Builder) -> Vec<u64>) -> Vec<u8> {
    let mut b = Builder::new();
    let slots = f(&mut b);
    let root = b.seq(true, &slots);
    let bytes = b.finish(root);
    Region::new_verified(&bytes).unwrap();
    bytes
}

/// The elements of the root tuple.
fn items(bytes: &[u8]) -> (Reader<'_>, Vec<Value<'_>>) {
    let region = Region::new(bytes).unwrap();
    let r = region.reader;
    let seq = match region.root().unwrap() {
        Value::Tuple(s) | Value::List(s) => s,
        other => panic!("{other:?}"),
    };
    (r, (0..seq.len).map(|i| r.seq_item(seq, i).unwrap()).collect())
}

fn h(r: &Reader<'_>, v: Value<'_>) -> u64 {
    hash_value(r, v, 0).unwrap()
}

fn eq(r: &Reader<'_>, a: Value<'_>, b: Value<'_>) -> bool {
    values_eq(r, a, r, b).unwrap()
}

/// All values pairwise equal and hashing alike.
fn assert_all_equal(r: &Reader<'_>, vals: &[Value<'_>]) {
    for (i, &a) in vals.iter().enumerate() {
        for (j, &b) in vals.iter().enumerate() {
            assert!(eq(r, a, b), "values {i} ({a:?}) and {j} ({b:?}) should be equal");
            assert_eq!(h(r, a), h(r, b), "values {i} and {j} should hash alike");
        }
    }
}

#[test]
fn spec_formulas_for_scalars() {
    let bytes = region(|b| {
        vec![
            SLOT_NONE,
            b.int(5),
            b.int(-7),
            b.int(i64::MIN),
            b.float(0.5),
            b.float(f64::NAN),
            b.str_utf8("abc"),
            b.str_utf8("été"),
            b.str_utf8("€"),
            b.str_utf8("😀"),
            b.bytes_obj(b"raw"),
            b.complex(0.5, 2.0),
        ]
    });
    let (r, v) = items(&bytes);
    assert_eq!(h(&r, v[0]), spec_mix(0x6e6f6e65));
    assert_eq!(h(&r, v[1]), spec_mix(5u64 ^ 0x696e7465676572));
    assert_eq!(h(&r, v[2]), spec_mix((-7i64) as u64 ^ 0x696e7465676572));
    assert_eq!(h(&r, v[3]), spec_mix(i64::MIN as u64 ^ 0x696e7465676572));
    assert_eq!(h(&r, v[4]), spec_mix(0.5f64.to_bits() ^ 0x666c6f6174));
    assert_eq!(h(&r, v[5]), spec_mix(f64::NAN.to_bits() ^ 0x666c6f6174));
    assert_eq!(h(&r, v[6]), xxh3(b"abc", 0x737472));
    assert_eq!(h(&r, v[7]), xxh3(&[0xE9, b't', 0xE9], 0x737472));
    assert_eq!(h(&r, v[8]), xxh3(&0x20ACu16.to_le_bytes(), 0x737472));
    assert_eq!(h(&r, v[9]), xxh3(&0x1F600u32.to_le_bytes(), 0x737472));
    assert_eq!(h(&r, v[10]), xxh3(b"raw", 0x6279746573));
    let hre = spec_mix(0.5f64.to_bits() ^ 0x666c6f6174);
    let him = spec_mix(2u64 ^ 0x696e7465676572);
    assert_eq!(h(&r, v[11]), spec_mix(hre ^ spec_mix(him ^ 0x636f6d706c6578)));
}

#[test]
fn one_equals_one_point_oh_equals_true_equals_complex() {
    let bytes = region(|b| vec![b.int(1), b.float(1.0), SLOT_TRUE, b.complex(1.0, 0.0), b.complex(1.0, -0.0)]);
    let (r, v) = items(&bytes);
    assert_all_equal(&r, &v);
    assert_eq!(h(&r, v[0]), hash::hash_i64(1));
    assert_eq!(h(&r, v[0]), spec_mix(1 ^ 0x696e7465676572));
}

#[test]
fn zero_and_negative_zero() {
    let bytes =
        region(|b| vec![b.int(0), b.float(0.0), b.float(-0.0), SLOT_FALSE, b.complex(-0.0, 0.0), b.complex(0.0, -0.0)]);
    let (r, v) = items(&bytes);
    assert_all_equal(&r, &v);
    assert_eq!(h(&r, v[2]), spec_mix(0x696e7465676572));
}

#[test]
fn two_to_the_63_as_bigint_equals_the_float() {
    let mut le = vec![0u8; 9];
    le[7] = 0x80;
    let bytes =
        region(|b| vec![b.int_bytes(&le), b.float(9223372036854775808.0), b.complex(9223372036854775808.0, 0.0)]);
    let (r, v) = items(&bytes);
    assert!(matches!(v[0], Value::BigInt(x) if x == &le[..]));
    assert_all_equal(&r, &v);
    assert_eq!(h(&r, v[0]), xxh3(&le, 0x62696769));
}

#[test]
fn big_and_edge_ints_against_floats() {
    let two64 = {
        let mut x = vec![0u8; 9];
        x[8] = 1;
        x
    };
    let minus_two64 = {
        let mut x = vec![0u8; 9];
        x[8] = 0xFF;
        x
    };
    let two63_plus_1 = {
        let mut x = vec![0u8; 9];
        x[0] = 1;
        x[7] = 0x80;
        x
    };
    let bytes = region(|b| {
        vec![
            b.int_bytes(&two64),                           // 0
            b.float(18446744073709551616.0),               // 1
            b.int_bytes(&minus_two64),                     // 2
            b.float(-18446744073709551616.0),              // 3
            b.int(i64::MIN),                               // 4: INT64 object
            b.float(-9223372036854775808.0),               // 5
            b.int_bytes(&two63_plus_1),                    // 6
            b.float(9223372036854775808.0),                // 7
            b.int(INT_MAX + 1),                            // 8: 2^60 as INT64
            b.float(1152921504606846976.0),                // 9
            b.float(1e300),                                // 10
            b.int_bytes(&hash::float_to_int_bytes(1e300)), // 11
            b.float(f64::INFINITY),                        // 12
            b.float(f64::NAN),                             // 13
        ]
    });
    let (r, v) = items(&bytes);
    assert_all_equal(&r, &v[0..2]);
    assert_all_equal(&r, &v[2..4]);
    assert_all_equal(&r, &v[4..6]);
    assert_all_equal(&r, &v[8..10]);
    assert_all_equal(&r, &v[10..12]);
    // 2^63 + 1 is not the float 2^63 (which it rounds to).
    assert!(!eq(&r, v[6], v[7]));
    assert_ne!(h(&r, v[6]), h(&r, v[7]));
    // Inf and NaN are not integers; NaN is not even equal to itself.
    assert!(!eq(&r, v[12], v[0]));
    assert!(eq(&r, v[12], v[12]));
    assert!(!eq(&r, v[13], v[13]));
    assert_eq!(h(&r, v[13]), h(&r, v[13]));
    // BigInts compare by their bytes.
    assert!(!eq(&r, v[0], v[2]));
    assert!(!eq(&r, v[0], v[6]));
}

#[test]
fn strings_bytes_and_cross_type_inequality() {
    let bytes = region(|b| {
        vec![
            b.str_utf8("1"),
            b.int(1),
            b.bytes_obj(b"1"),
            b.str_utf8("abc"),
            b.bytes_obj(b"abc"),
            b.str_utf8("hello world"),
            SLOT_NONE,
            SLOT_FALSE,
            b.str_utf8(""),
            SLOT_EMPTY_TUPLE,
        ]
    });
    let (r, v) = items(&bytes);
    for i in 0..v.len() {
        for j in 0..v.len() {
            if i != j {
                assert!(!eq(&r, v[i], v[j]), "{:?} != {:?}", v[i], v[j]);
            }
        }
    }
    // The same string in two regions, stored inline and as a slot.
    let other = region(|b| vec![b.str_utf8("hello world"), b.str_utf8("abc")]);
    let (r2, w) = items(&other);
    assert!(values_eq(&r, v[5], &r2, w[0]).unwrap());
    assert!(values_eq(&r, v[3], &r2, w[1]).unwrap());
    assert_eq!(h(&r, v[5]), h(&r2, w[0]));
}

#[test]
fn long_string_object_hashes_like_its_units() {
    let s: String = "x".repeat(70_000);
    let bytes = region(|b| vec![b.str_utf8(&s)]);
    let (r, v) = items(&bytes);
    assert_eq!(h(&r, v[0]), xxh3(s.as_bytes(), 0x737472));
}

#[test]
fn tuples() {
    let bytes = region(|b| {
        let one = b.int(1);
        let a = b.str_utf8("a");
        let t1 = b.seq(true, &[one, a]); // (1, "a")
        let f1 = b.float(1.0);
        let a2 = b.str_utf8("a");
        let t2 = b.seq(true, &[f1, a2]); // (1.0, "a")
        let t3 = b.seq(true, &[a, one]); // ("a", 1)
        let t4 = b.seq(true, &[one]); // (1,)
        let inner = b.seq(true, &[one, a]);
        let t5 = b.seq(true, &[inner, SLOT_EMPTY_TUPLE]); // ((1, "a"), ())
        let l = b.seq(false, &[one, a]); // [1, "a"]
        vec![t1, t2, t3, t4, SLOT_EMPTY_TUPLE, t5, l]
    });
    let (r, v) = items(&bytes);
    assert_all_equal(&r, &v[0..2]);
    assert!(!eq(&r, v[0], v[2]));
    assert_ne!(h(&r, v[0]), h(&r, v[2]), "tuple hash depends on order");
    assert!(!eq(&r, v[0], v[3]));
    // A list is never equal to a tuple, and is unhashable.
    assert!(!eq(&r, v[0], v[6]));
    assert!(hash_value(&r, v[6], 0).is_err());

    // The FORMAT.md fold, written out.
    let fold = |hs: &[u64]| {
        let mut x = 0x7475706c65u64;
        for &e in hs {
            x = spec_mix(x ^ e).wrapping_add(1);
        }
        spec_mix(x ^ hs.len() as u64)
    };
    let h1 = hash::hash_i64(1);
    let ha = xxh3(b"a", 0x737472);
    assert_eq!(h(&r, v[0]), fold(&[h1, ha]));
    assert_eq!(h(&r, v[3]), fold(&[h1]));
    assert_eq!(h(&r, v[4]), fold(&[]));
    assert_eq!(h(&r, v[5]), fold(&[fold(&[h1, ha]), fold(&[])]));
}

#[test]
fn big_tuple_object_form_hashes_like_the_fold() {
    let n = 70_000usize;
    let bytes = region(|b| {
        let slots: Vec<u64> = (0..n).map(|i| b.int(i as i64)).collect();
        let big = b.seq(true, &slots);
        assert_eq!(big & TAG_MASK, TAG_OBJ);
        let slots2: Vec<u64> = (0..n).map(|i| b.float(i as f64)).collect();
        let big2 = b.seq(true, &slots2);
        vec![big, big2]
    });
    let (r, v) = items(&bytes);
    let mut t = hash::TupleHasher::new();
    for i in 0..n {
        t.add(hash::hash_i64(i as i64));
    }
    assert_eq!(h(&r, v[0]), t.finish(n));
    assert_all_equal(&r, &v);
}

fn int_set(b: &mut Builder, frozen: bool, elems: &[i64]) -> u64 {
    let slots: Vec<u64> = elems.iter().map(|&e| b.int(e)).collect();
    let hashes: Vec<u64> = elems.iter().map(|&e| hash::hash_i64(e)).collect();
    b.set(frozen, &slots, &hashes)
}

#[test]
fn frozensets_are_order_independent() {
    let big: Vec<i64> = (0..30).map(|i| i * 7919 - 100).collect();
    let mut big_rev = big.clone();
    big_rev.reverse();
    let bytes = region(|b| {
        vec![
            int_set(b, true, &[1, 2, 3]),  // 0
            int_set(b, true, &[3, 1, 2]),  // 1
            int_set(b, false, &[2, 3, 1]), // 2: a set equals a frozenset
            int_set(b, true, &[1, 2, 4]),  // 3
            int_set(b, true, &[1, 2]),     // 4
            int_set(b, true, &big),        // 5
            int_set(b, true, &big_rev),    // 6
            int_set(b, true, &[]),         // 7
            int_set(b, false, &big_rev),   // 8
        ]
    });
    let (r, v) = items(&bytes);
    assert!(eq(&r, v[0], v[1]));
    assert_eq!(h(&r, v[0]), h(&r, v[1]));
    assert!(eq(&r, v[0], v[2]));
    assert!(hash_value(&r, v[2], 0).is_err(), "a set is unhashable");
    assert!(!eq(&r, v[0], v[3]));
    assert_ne!(h(&r, v[0]), h(&r, v[3]));
    assert!(!eq(&r, v[0], v[4]));
    assert!(eq(&r, v[5], v[6]));
    assert_eq!(h(&r, v[5]), h(&r, v[6]));
    assert!(eq(&r, v[5], v[8]));
    assert!(!eq(&r, v[5], v[0]));
    // The FORMAT.md fold, written out.
    let fs = |elems: &[i64]| {
        let s = elems.iter().fold(0u64, |acc, &e| acc.wrapping_add(spec_mix(hash::hash_i64(e))));
        spec_mix(s ^ 0x66726f7a656e ^ elems.len() as u64)
    };
    assert_eq!(h(&r, v[0]), fs(&[1, 2, 3]));
    assert_eq!(h(&r, v[5]), fs(&big));
    assert_eq!(h(&r, v[7]), fs(&[]));
}

#[test]
fn frozenset_equality_honours_numeric_equality() {
    // frozenset({1, 2.0}) == frozenset({1.0, True + 1})
    let bytes = region(|b| {
        let one = b.int(1);
        let two_f = b.float(2.0);
        let s1 = b.set(true, &[one, two_f], &[hash::hash_i64(1), hash::hash_f64(2.0)]);
        let one_f = b.float(1.0);
        let two = b.int(2);
        let s2 = b.set(true, &[two, one_f], &[hash::hash_i64(2), hash::hash_f64(1.0)]);
        vec![s1, s2]
    });
    let (r, v) = items(&bytes);
    assert_all_equal(&r, &v);
}

#[test]
fn dicts_compare_by_keys_and_values() {
    let bytes = region(|b| {
        let ka = b.str_utf8("a");
        let kb = b.str_utf8("b");
        let ha = hash::hash_str_units(b"a");
        let hb = hash::hash_str_units(b"b");
        let s_ab = b.shape(&[ka, kb], &[ha, hb]);
        let s_ba = b.shape(&[kb, ka], &[hb, ha]);
        let one = b.int(1);
        let two = b.int(2);
        let d1 = b.dict(s_ab, &[one, two]); // {"a": 1, "b": 2}
        let d2 = b.dict(s_ba, &[two, one]); // {"b": 2, "a": 1}
        let one_f = b.float(1.0);
        let d3 = b.dict(s_ab, &[one_f, two]); // {"a": 1.0, "b": 2}
        let d4 = b.dict(s_ab, &[two, one]); // {"a": 2, "b": 1}
        vec![d1, d2, d3, d4]
    });
    let (r, v) = items(&bytes);
    assert_all_equal_eq_only(&r, &v[0..3]);
    assert!(!eq(&r, v[0], v[3]));
    assert!(hash_value(&r, v[0], 0).is_err(), "a dict is unhashable");
}

fn assert_all_equal_eq_only(r: &Reader<'_>, vals: &[Value<'_>]) {
    for &a in vals {
        for &b in vals {
            assert!(eq(r, a, b));
        }
    }
}

/// A dict `{key_i: i}` for the given keys.
fn str_dict(keys: &[String]) -> Vec<u8> {
    let mut b = Builder::new();
    let slots: Vec<u64> = keys.iter().map(|k| b.str_utf8(k)).collect();
    let r = Reader::new(b.bytes());
    let hashes: Vec<u64> = slots.iter().map(|&s| hash_value(&r, r.decode(s, b.len()).unwrap(), 0).unwrap()).collect();
    let shape = b.shape(&slots, &hashes);
    let vals: Vec<u64> = (0..keys.len()).map(|i| b.int(i as i64)).collect();
    let d = b.dict(shape, &vals);
    let bytes = b.finish(d);
    Region::new_verified(&bytes).unwrap();
    bytes
}

fn keys_for(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 6 {
            0 => format!("{i}"),
            1 => format!("name_{i}"),
            2 => format!("a rather long key {i}"),
            3 => format!("ü{i}"),
            4 => format!("ж{i}"),
            _ => format!("🔑{i}"),
        })
        .collect()
}

#[test]
fn lookup_str_small_and_indexed_dicts() {
    for n in [1usize, 2, 5, 8, 9, 10, 31, 64, 500] {
        let keys = keys_for(n);
        let bytes = str_dict(&keys);
        let region = Region::new(&bytes).unwrap();
        let d = match region.root().unwrap() {
            Value::Dict(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(d.len, n);
        for (i, k) in keys.iter().enumerate() {
            match lookup_str(&region.reader, d, k).unwrap() {
                Some(Value::Int(x)) => assert_eq!(x, i as i64, "key {k:?} of {n}"),
                other => panic!("key {k:?} of {n}: {other:?}"),
            }
        }
        for absent in
            ["", "x", "name_", "nam", "a rather long key", "ü", "🔑", "name_100000", "0 ", &format!("{n}0000")]
        {
            assert!(lookup_str(&region.reader, d, absent).unwrap().is_none(), "{absent:?} absent from {n} keys");
        }
    }
}

#[test]
fn lookup_str_long_keys_in_object_form() {
    let mut keys = keys_for(12);
    keys.push("k".repeat(70_000));
    keys.push("é".repeat(65_536));
    let bytes = str_dict(&keys);
    let region = Region::new(&bytes).unwrap();
    let d = match region.root().unwrap() {
        Value::Dict(d) => d,
        other => panic!("{other:?}"),
    };
    assert!(matches!(lookup_str(&region.reader, d, &"k".repeat(70_000)).unwrap(), Some(Value::Int(12))));
    assert!(matches!(lookup_str(&region.reader, d, &"é".repeat(65_536)).unwrap(), Some(Value::Int(13))));
    assert!(lookup_str(&region.reader, d, &"k".repeat(69_999)).unwrap().is_none());
    // Small dict with the same long keys (no index).
    let small = vec!["k".repeat(70_000), "short".to_string()];
    let bytes = str_dict(&small);
    let region = Region::new(&bytes).unwrap();
    let d = match region.root().unwrap() {
        Value::Dict(d) => d,
        other => panic!("{other:?}"),
    };
    assert!(matches!(lookup_str(&region.reader, d, &"k".repeat(70_000)).unwrap(), Some(Value::Int(0))));
    assert!(matches!(lookup_str(&region.reader, d, "short").unwrap(), Some(Value::Int(1))));
    assert!(lookup_str(&region.reader, d, "k").unwrap().is_none());
}

#[test]
fn lookup_str_ignores_non_string_keys() {
    // {1: "a", "1": "b", b"1": "c", 1.5: "d", None: "e", ("1",): "f"} plus 4 more to get an index
    for extra in [0usize, 4] {
        let mut b = Builder::new();
        let mut keys = vec![b.int(1), b.str_utf8("1"), b.bytes_obj(b"1"), b.float(1.5), SLOT_NONE];
        let one_s = b.str_utf8("1");
        keys.push(b.seq(true, &[one_s]));
        for i in 0..extra {
            keys.push(b.int(100 + i as i64));
        }
        let r = Reader::new(b.bytes());
        let hashes: Vec<u64> =
            keys.iter().map(|&s| hash_value(&r, r.decode(s, b.len()).unwrap(), 0).unwrap()).collect();
        let shape = b.shape(&keys, &hashes);
        let vals: Vec<u64> = (0..keys.len()).map(|i| b.int(i as i64)).collect();
        let d = b.dict(shape, &vals);
        let bytes = b.finish(d);
        let region = Region::new_verified(&bytes).unwrap();
        let d = match region.root().unwrap() {
            Value::Dict(d) => d,
            other => panic!("{other:?}"),
        };
        assert!(matches!(lookup_str(&region.reader, d, "1").unwrap(), Some(Value::Int(1))));
        assert!(lookup_str(&region.reader, d, "1.5").unwrap().is_none());
        assert!(lookup_str(&region.reader, d, "None").unwrap().is_none());
    }
}

#[test]
fn hashing_is_stable_across_regions_and_offsets() {
    // The same tuple written at different offsets hashes alike.
    let a = region(|b| {
        let s = b.str_utf8("some string");
        let f = b.float(3.25);
        vec![b.seq(true, &[s, f])]
    });
    let c = region(|b| {
        b.bytes_obj(&[0u8; 100]);
        let s = b.str_utf8("some string");
        let f = b.float(3.25);
        vec![b.seq(true, &[s, f])]
    });
    let (ra, va) = items(&a);
    let (rc, vc) = items(&c);
    assert_eq!(h(&ra, va[0]), h(&rc, vc[0]));
    assert!(values_eq(&ra, va[0], &rc, vc[0]).unwrap());
}

#[test]
fn find_str_and_lookup_str_accept_every_string_form() {
    // FORMAT.md lets a writer store any string as an object, and does not
    // require short ASCII strings inline: keys in those forms are still found.
    fn obj_words(kind: u8, units: &[u8], n: usize) -> Vec<u64> {
        let mut w = vec![header_word(kind, n as u64)];
        let mut p = units.to_vec();
        p.resize(pad8(p.len()), 0);
        w.extend(p.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())));
        w
    }
    for extra_keys in [0usize, 10] {
        // Body: "abc" as a STR slot payload, "xy" as a STR_ASCII object, "é" as a STR_LATIN1 object.
        let mut body: Vec<u64> = vec![u64::from_le_bytes(*b"abc\0\0\0\0\0")];
        let abc_slot = make_str_slot(Width::Ascii, 3, 64);
        let xy_off = 64 + 8 * body.len();
        body.extend(obj_words(KIND_STR_ASCII, b"xy", 2));
        let e_off = 64 + 8 * body.len();
        body.extend(obj_words(KIND_STR_LATIN1, &[0xE9], 1));
        let mut keys = vec![abc_slot, xy_off as u64, e_off as u64, make_sstr_slot(b"inl")];
        let mut hashes = vec![
            hash::hash_str_units(b"abc"),
            hash::hash_str_units(b"xy"),
            hash::hash_str_units(&[0xE9]),
            hash::hash_str_units(b"inl"),
        ];
        for i in 0..extra_keys {
            keys.push(make_int_slot(i as i64).unwrap());
            hashes.push(hash::hash_i64(i as i64));
        }
        let n = keys.len();
        let cap = index_cap(n);
        let shape_off = 64 + 8 * body.len();
        body.push(header_word(KIND_SHAPE, n as u64));
        body.extend(&keys);
        if cap > 0 {
            let mut table = vec![0u32; cap];
            for (i, &h) in hashes.iter().enumerate() {
                let mut p = (h as usize) & (cap - 1);
                while table[p] != 0 {
                    p = (p + 1) & (cap - 1);
                }
                table[p] = i as u32 + 1;
            }
            body.extend(table.chunks(2).map(|c| c[0] as u64 | (c[1] as u64) << 32));
        }
        let dict_off = 64 + 8 * body.len();
        body.push(header_word(KIND_DICT, (shape_off >> 3) as u64));
        body.extend((0..n).map(|i| make_int_slot(100 + i as i64).unwrap()));
        let mut bytes = vec![0u8; 64];
        for w in &body {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        bytes[0..8].copy_from_slice(&MAGIC);
        bytes[8..12].copy_from_slice(&VERSION.to_le_bytes());
        bytes[12..16].copy_from_slice(&BYTE_ORDER_MARK.to_le_bytes());
        let total = bytes.len() as u64;
        bytes[16..24].copy_from_slice(&total.to_le_bytes());
        bytes[24..32].copy_from_slice(&(dict_off as u64).to_le_bytes());
        let sum = bale_core::compute_checksum(&bytes);
        bytes[32..40].copy_from_slice(&sum.to_le_bytes());

        let region = Region::new_verified(&bytes).unwrap();
        let r = region.reader;
        let d = match region.root().unwrap() {
            Value::Dict(d) => d,
            other => panic!("{other:?}"),
        };
        for (i, key) in ["abc", "xy", "é", "inl"].iter().enumerate() {
            assert!(matches!(lookup_str(&r, d, key).unwrap(), Some(Value::Int(v)) if v == 100 + i as i64), "{key}");
            let units: Vec<u8> = key.chars().map(|c| c as u8).collect();
            let w = if key.is_ascii() { Width::Ascii } else { Width::Latin1 };
            assert_eq!(r.find_str(d.shape, w, &units).unwrap(), Some(i), "find_str {key} with {extra_keys} extra keys");
        }
        assert_eq!(r.find_str(d.shape, Width::Ascii, b"ab").unwrap(), None);
        assert!(lookup_str(&r, d, "inl ").unwrap().is_none());
    }
}
