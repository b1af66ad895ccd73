//! Round trips: regions built with `Builder` for every kind of value read
//! back exactly (`Region::new` + `Reader`) and pass full verification.

use bale_core::format::*;
use bale_core::hash::hash_value;
use bale_core::{lookup_str, Builder, Reader, Region, Str, Value};

/// Builds a region with `f` (which returns the root slot) and checks that
/// it verifies.
fn build(f: impl FnOnce(&mut Builder) -> u64) -> Vec<u8> {
    let mut b = Builder::new();
    let root = f(&mut b);
    let bytes = b.finish(root);
    assert_eq!(bytes.len() % 8, 0);
    if let Err(e) = Region::new_verified(&bytes) {
        panic!("built region does not verify: {e}");
    }
    bytes
}

fn root_of(bytes: &[u8]) -> (Reader<'_>, Value<'_>) {
    let region = Region::new(bytes).unwrap();
    (region.reader, region.root().unwrap())
}

fn seq_of(v: Value<'_>) -> bale_core::Seq {
    match v {
        Value::List(s) | Value::Tuple(s) => s,
        other => panic!("expected a list or tuple, got {other:?}"),
    }
}

fn int_of(v: Value<'_>) -> i64 {
    match v {
        Value::Int(i) => i,
        other => panic!("expected an int, got {other:?}"),
    }
}

fn str_of<'a>(v: Value<'a>) -> Str<'a> {
    match v {
        Value::Str(s) => s,
        other => panic!("expected a str, got {other:?}"),
    }
}

/// Code points to (canonical width, code units), as CPython stores them.
fn units_of(cps: &[u32]) -> (Width, Vec<u8>) {
    let max = cps.iter().copied().max().unwrap_or(0);
    if max < 0x80 {
        (Width::Ascii, cps.iter().map(|&c| c as u8).collect())
    } else if max < 0x100 {
        (Width::Latin1, cps.iter().map(|&c| c as u8).collect())
    } else if max < 0x10000 {
        (Width::Ucs2, cps.iter().flat_map(|&c| (c as u16).to_le_bytes()).collect())
    } else {
        (Width::Ucs4, cps.iter().flat_map(|&c| c.to_le_bytes()).collect())
    }
}

fn cps_of(s: &str) -> Vec<u32> {
    s.chars().map(|c| c as u32).collect()
}

fn check_str(s: Str<'_>, cps: &[u32]) {
    let (w, units) = units_of(cps);
    assert_eq!(s.width, w, "width of a string of {} code points", cps.len());
    assert_eq!(s.len, cps.len());
    assert_eq!(s.units(), &units[..]);
    for (i, &c) in cps.iter().enumerate() {
        assert_eq!(s.char_at(i), c, "code point {i}");
    }
}

// ---------------------------------------------------------------- integers

const INT_CASES: &[i64] = &[
    0,
    1,
    -1,
    42,
    -42,
    INT_MAX,
    INT_MIN,
    INT_MAX + 1,
    INT_MIN - 1,
    INT_MAX + 12345,
    INT_MIN - 12345,
    i64::MAX,
    i64::MIN,
    i64::MAX - 1,
    i64::MIN + 1,
];

#[test]
fn int_range_edges() {
    assert_eq!(INT_MIN, -(1i64 << 60));
    assert_eq!(INT_MAX, (1i64 << 60) - 1);
    for &v in INT_CASES {
        let mut slot_seen = 0;
        let bytes = build(|b| {
            slot_seen = b.int(v);
            slot_seen
        });
        let inline = (INT_MIN..=INT_MAX).contains(&v);
        if inline {
            assert_eq!(slot_seen & TAG_MASK, TAG_INT, "{v} is an INT slot");
            assert_eq!(bytes.len(), HEADER_LEN, "an INT slot needs no object");
            assert_eq!(((slot_seen as i64) >> 3), v);
        } else {
            assert_eq!(slot_seen & TAG_MASK, TAG_OBJ, "{v} is an INT64 object");
            let off = slot_seen as usize;
            assert_eq!(read_u64(&bytes, off), header_word(KIND_INT64, 0));
            assert_eq!(read_u64(&bytes, off + 8) as i64, v);
            assert_eq!(bytes.len(), HEADER_LEN + 16);
        }
        let (_, root) = root_of(&bytes);
        assert_eq!(int_of(root), v);
    }
}

#[test]
fn ints_in_a_list() {
    let bytes = build(|b| {
        let slots: Vec<u64> = INT_CASES.iter().map(|&v| b.int(v)).collect();
        b.seq(false, &slots)
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    assert_eq!(seq.len, INT_CASES.len());
    for (i, &v) in INT_CASES.iter().enumerate() {
        assert_eq!(int_of(r.seq_item(seq, i).unwrap()), v);
    }
}

fn le_i128(v: i128) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn minimal(mut b: Vec<u8>) -> Vec<u8> {
    bale_core::hash::minimize_twos_complement(&mut b);
    b
}

#[test]
fn big_ints() {
    // (input bytes, expected reading)
    enum Want {
        Int(i64),
        Big(Vec<u8>),
    }
    let big_cases: Vec<i128> = vec![
        1 << 63,
        -(1 << 63) - 1,
        (1 << 63) + 1,
        1 << 64,
        -(1 << 64),
        (1 << 64) - 1,
        1 << 100,
        -(1 << 100),
        i128::MAX,
        i128::MIN,
        12345678901234567890123456789,
    ];
    let mut cases: Vec<(Vec<u8>, Want)> = Vec::new();
    for v in big_cases {
        let m = minimal(le_i128(v));
        assert!(m.len() >= 9, "{v} needs more than 8 bytes");
        cases.push((le_i128(v), Want::Big(m)));
    }
    // Wider than 128 bits: 2^200 and -2^200 + 1.
    let mut wide = vec![0u8; 26];
    wide[25] = 1;
    cases.push((wide.clone(), Want::Big(wide)));
    let mut wide_neg = vec![0u8; 26];
    wide_neg[0] = 1;
    wide_neg[25] = 0xFF;
    cases.push((wide_neg.clone(), Want::Big(wide_neg)));
    // Inputs that minimize to at most 8 bytes become INT slots or INT64 objects.
    for v in [0i64, 5, -5, 127, 128, -128, -129, INT_MAX, INT_MIN, INT_MAX + 1, INT_MIN - 1, i64::MAX, i64::MIN] {
        cases.push((le_i128(v as i128), Want::Int(v)));
        let mut padded = (v as i128).to_le_bytes().to_vec();
        padded.extend_from_slice(&[if v < 0 { 0xFF } else { 0 }; 7]);
        cases.push((padded, Want::Int(v)));
        cases.push((minimal(le_i128(v as i128)), Want::Int(v)));
    }
    cases.push((vec![], Want::Int(0)));
    cases.push((vec![0xFF], Want::Int(-1)));
    cases.push((vec![0xFF; 30], Want::Int(-1)));
    cases.push((vec![0; 30], Want::Int(0)));

    let mut slots = Vec::new();
    let bytes = build(|b| {
        for (input, _) in &cases {
            slots.push(b.int_bytes(input));
        }
        b.seq(true, &slots)
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    assert!(matches!(root, Value::Tuple(_)));
    for (i, (input, want)) in cases.iter().enumerate() {
        let v = r.seq_item(seq, i).unwrap();
        match (want, v) {
            (Want::Int(w), Value::Int(got)) => {
                assert_eq!(*w, got, "input {input:02x?}");
                let inline = (INT_MIN..=INT_MAX).contains(w);
                assert_eq!(slots[i] & TAG_MASK == TAG_INT, inline, "slot kind of {w}");
            }
            (Want::Big(w), Value::BigInt(got)) => {
                assert_eq!(&w[..], got, "input {input:02x?}");
                assert_eq!(read_u64(&bytes, slots[i] as usize) & 0xFF, KIND_BIGINT as u64);
            }
            (_, got) => panic!("input {input:02x?} read back as {got:?}"),
        }
    }
}

// ------------------------------------------------------------------ floats

#[test]
fn floats_bit_exact() {
    let cases: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7FF0_0000_0000_0001), // signalling NaN
        f64::from_bits(0xFFF8_DEAD_BEEF_0001), // NaN with a payload
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::from_bits(1), // smallest subnormal
        f64::MAX,
        f64::MIN,
        9223372036854775808.0,
        1e300,
    ];
    let bytes = build(|b| {
        let slots: Vec<u64> = cases.iter().map(|&f| b.float(f)).collect();
        b.seq(false, &slots)
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    for (i, f) in cases.iter().enumerate() {
        match r.seq_item(seq, i).unwrap() {
            Value::Float(g) => assert_eq!(g.to_bits(), f.to_bits(), "float {i}"),
            other => panic!("{other:?}"),
        }
    }
    // A float root.
    let bytes = build(|b| b.float(-0.0));
    match root_of(&bytes).1 {
        Value::Float(g) => assert_eq!(g.to_bits(), (-0.0f64).to_bits()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn complex_bit_exact() {
    let cases: Vec<(f64, f64)> = vec![
        (1.0, 0.0),
        (1.0, -0.0),
        (-0.0, -0.0),
        (1.5, -2.0),
        (f64::NAN, f64::INFINITY),
        (f64::from_bits(0x7FF0_0000_0000_0001), f64::NEG_INFINITY),
        (f64::MAX, f64::from_bits(1)),
    ];
    let bytes = build(|b| {
        let slots: Vec<u64> = cases.iter().map(|&(re, im)| b.complex(re, im)).collect();
        b.seq(true, &slots)
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    for (i, (re, im)) in cases.iter().enumerate() {
        match r.seq_item(seq, i).unwrap() {
            Value::Complex(a, b) => {
                assert_eq!(a.to_bits(), re.to_bits());
                assert_eq!(b.to_bits(), im.to_bits());
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn none_and_bools() {
    for (slot, check) in [(SLOT_NONE, 0), (SLOT_FALSE, 1), (SLOT_TRUE, 2)] {
        let bytes = build(|_| slot);
        assert_eq!(bytes.len(), HEADER_LEN);
        match (check, root_of(&bytes).1) {
            (0, Value::None) | (1, Value::Bool(false)) | (2, Value::Bool(true)) => {}
            (_, other) => panic!("{other:?}"),
        }
    }
}

// ----------------------------------------------------------------- strings

#[test]
fn short_strings_and_widths() {
    let cases: Vec<(Vec<u32>, u64)> = vec![
        (vec![], TAG_SSTR),
        (cps_of("a"), TAG_SSTR),
        (cps_of("abcdefg"), TAG_SSTR),
        (cps_of("abcdefgh"), TAG_STR),
        (cps_of("hello world, this is longer"), TAG_STR),
        (vec![0], TAG_SSTR),
        (vec![0x7F; 7], TAG_SSTR),
        (vec![0x80], TAG_STR),
        (cps_of("café"), TAG_STR),
        (vec![0xFF], TAG_STR),
        (cps_of("é"), TAG_STR),
        (cps_of("€"), TAG_STR),
        (cps_of("日本語のテキスト"), TAG_STR),
        (vec![0xD800], TAG_STR), // a lone surrogate is a UCS-2 code point
        (vec![0x41, 0xDFFF, 0x42], TAG_STR),
        (vec![0xFFFF], TAG_STR),
        (vec![0x10000], TAG_STR),
        (vec![0x10FFFF], TAG_STR),
        (cps_of("smile 😀 please"), TAG_STR),
    ];
    let mut slots = Vec::new();
    let bytes = build(|b| {
        for (cps, _) in &cases {
            let (w, units) = units_of(cps);
            slots.push(b.str_units(w, &units));
        }
        b.seq(false, &slots)
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    for (i, (cps, tag)) in cases.iter().enumerate() {
        assert_eq!(slots[i] & TAG_MASK, *tag, "slot of string {i}");
        let s = str_of(r.seq_item(seq, i).unwrap());
        check_str(s, cps);
        if tag == &TAG_STR {
            assert_eq!((slots[i] >> 3) & 3, units_of(cps).0 as u64, "width code");
            assert_eq!((slots[i] >> 5) & 0xFFFF, cps.len() as u64, "length");
        }
    }
    // str_utf8 agrees with str_units for every string Rust can hold.
    for (cps, _) in &cases {
        if let Some(s) = cps.iter().map(|&c| char::from_u32(c)).collect::<Option<String>>() {
            let mut b1 = Builder::new();
            let s1 = b1.str_utf8(&s);
            let mut b2 = Builder::new();
            let (w, u) = units_of(cps);
            let s2 = b2.str_units(w, &u);
            assert_eq!(s1, s2);
            assert_eq!(b1.finish(s1), b2.finish(s2));
            let bytes = build(|b| b.str_utf8(&s));
            assert_eq!(str_of(root_of(&bytes).1).to_string_lossy(), s);
        }
    }
}

#[test]
fn sstr_layout() {
    let slot = make_sstr_slot(b"abc");
    assert_eq!(slot.to_le_bytes(), [0x1B, b'a', b'b', b'c', 0, 0, 0, 0]);
    let bytes = build(|b| b.str_utf8("abc"));
    assert_eq!(read_u64(&bytes, OFF_ROOT), slot);
}

#[test]
fn long_strings_object_form() {
    // 65535 code points fit a STR slot; 65536 and more need an object.
    let n_cases = [65535usize, 65536, 70001];
    type Maker = Box<dyn Fn(usize) -> u32>;
    let makers: Vec<(&str, Maker)> = vec![
        ("ascii", Box::new(|i| b'a' as u32 + (i % 26) as u32)),
        ("latin1", Box::new(|i| if i % 7 == 3 { 0xE9 } else { b'x' as u32 })),
        ("ucs2", Box::new(|i| if i % 5 == 0 { 0x20AC } else { 0x41 + (i % 3) as u32 })),
        ("ucs4", Box::new(|i| if i == 17 { 0x1F600 } else { 0x3042 })),
    ];
    for (name, f) in &makers {
        for &n in &n_cases {
            let cps: Vec<u32> = (0..n).map(f).collect();
            let (w, units) = units_of(&cps);
            let mut slot = 0;
            let bytes = build(|b| {
                slot = b.str_units(w, &units);
                slot
            });
            if n <= SHORT_MAX {
                assert_eq!(slot & TAG_MASK, TAG_STR, "{name} {n}");
            } else {
                assert_eq!(slot & TAG_MASK, TAG_OBJ, "{name} {n}");
                let head = read_u64(&bytes, slot as usize);
                assert_eq!(head, header_word(w.kind(), n as u64));
            }
            let s = str_of(root_of(&bytes).1);
            check_str(s, &cps);
        }
    }
}

#[test]
fn bytes_values() {
    let cases: Vec<Vec<u8>> = vec![
        vec![],
        vec![0],
        vec![0xFF; 7],
        (0..8).collect(),
        (0..9).collect(),
        (0..=255).collect(),
        vec![0xAB; 100_000],
    ];
    let bytes = build(|b| {
        let slots: Vec<u64> = cases.iter().map(|c| b.bytes_obj(c)).collect();
        b.seq(false, &slots)
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    for (i, c) in cases.iter().enumerate() {
        match r.seq_item(seq, i).unwrap() {
            Value::Bytes(got) => assert_eq!(got, &c[..]),
            other => panic!("{other:?}"),
        }
    }
}

// ------------------------------------------------------- lists and tuples

#[test]
fn sequences_of_every_length_class() {
    for tuple in [false, true] {
        for n in [0usize, 1, 2, 65535, 65536, 100_000] {
            let mut slot = 0;
            let bytes = build(|b| {
                // Mixed elements: ints, and a string every 1000th.
                let mut slots = Vec::with_capacity(n);
                for i in 0..n {
                    slots.push(if i % 1000 == 1 { b.str_utf8(&format!("element {i}")) } else { b.int(i as i64) });
                }
                slot = b.seq(tuple, &slots);
                slot
            });
            let tag = if tuple { TAG_TUPLE } else { TAG_LIST };
            if n == 0 {
                assert_eq!(slot, tag, "the empty sequence slot");
            } else if n <= SHORT_MAX {
                assert_eq!(slot & TAG_MASK, tag);
                assert_eq!((slot >> 3) & 0xFFFF, n as u64);
            } else {
                assert_eq!(slot & TAG_MASK, TAG_OBJ);
                let kind = if tuple { KIND_TUPLE } else { KIND_LIST };
                assert_eq!(read_u64(&bytes, slot as usize), header_word(kind, n as u64));
            }
            let (r, root) = root_of(&bytes);
            match (tuple, root) {
                (false, Value::List(_)) | (true, Value::Tuple(_)) => {}
                (_, other) => panic!("{other:?}"),
            }
            let seq = seq_of(root);
            assert_eq!(seq.len, n);
            for i in 0..n {
                let v = r.seq_item(seq, i).unwrap();
                if i % 1000 == 1 {
                    assert_eq!(str_of(v).to_string_lossy(), format!("element {i}"));
                } else {
                    assert_eq!(int_of(v), i as i64);
                }
            }
        }
    }
}

#[test]
fn nested_sequences() {
    // [[1, [2, (3,)]], (), [], ("x", [None])]
    let bytes = build(|b| {
        let three = b.int(3);
        let t3 = b.seq(true, &[three]);
        let two = b.int(2);
        let l2 = b.seq(false, &[two, t3]);
        let one = b.int(1);
        let l1 = b.seq(false, &[one, l2]);
        let x = b.str_utf8("x");
        let ln = b.seq(false, &[SLOT_NONE]);
        let tx = b.seq(true, &[x, ln]);
        b.seq(false, &[l1, SLOT_EMPTY_TUPLE, SLOT_EMPTY_LIST, tx])
    });
    let (r, root) = root_of(&bytes);
    let top = seq_of(root);
    assert_eq!(top.len, 4);
    let l1 = seq_of(r.seq_item(top, 0).unwrap());
    assert_eq!(int_of(r.seq_item(l1, 0).unwrap()), 1);
    let l2 = seq_of(r.seq_item(l1, 1).unwrap());
    assert_eq!(int_of(r.seq_item(l2, 0).unwrap()), 2);
    let t3 = r.seq_item(l2, 1).unwrap();
    assert!(matches!(t3, Value::Tuple(_)));
    assert_eq!(int_of(r.seq_item(seq_of(t3), 0).unwrap()), 3);
    assert!(matches!(r.seq_item(top, 1).unwrap(), Value::Tuple(s) if s.len == 0));
    assert!(matches!(r.seq_item(top, 2).unwrap(), Value::List(s) if s.len == 0));
    let tx = seq_of(r.seq_item(top, 3).unwrap());
    assert_eq!(str_of(r.seq_item(tx, 0).unwrap()).to_string_lossy(), "x");
    let ln = seq_of(r.seq_item(tx, 1).unwrap());
    assert!(matches!(r.seq_item(ln, 0).unwrap(), Value::None));
}

#[test]
fn nesting_100k_deep() {
    const DEPTH: usize = 100_000;
    // Alternating list, dict {"k": ...} and tuple levels; all dicts share one shape.
    let bytes = build(|b| {
        let k = b.str_utf8("k");
        let shape = b.shape(&[k], &[bale_core::hash::hash_str_units(b"k")]);
        let mut slot = b.int(42);
        for level in 0..DEPTH {
            slot = match level % 3 {
                0 => b.seq(false, &[slot]),
                1 => b.dict(shape, &[slot]),
                _ => b.seq(true, &[slot]),
            };
        }
        slot
    });
    let (r, mut v) = root_of(&bytes);
    for level in (0..DEPTH).rev() {
        v = match (level % 3, v) {
            (0, Value::List(s)) | (2, Value::Tuple(s)) => {
                assert_eq!(s.len, 1);
                r.seq_item(s, 0).unwrap()
            }
            (1, Value::Dict(d)) => {
                assert_eq!(d.len, 1);
                assert_eq!(str_of(r.dict_key(d, 0).unwrap()).to_string_lossy(), "k");
                lookup_str(&r, d, "k").unwrap().unwrap()
            }
            (_, other) => panic!("level {level}: {other:?}"),
        };
    }
    assert_eq!(int_of(v), 42);
}

// ------------------------------------------------- sets, shapes and dicts

/// Key slots and hashes for `n` assorted hashable values.
fn hashable_elements(b: &mut Builder, n: usize) -> (Vec<u64>, Vec<u64>) {
    let mut slots = Vec::new();
    for i in 0..n {
        let s = match i % 5 {
            0 => b.int(i as i64 * 1_000_003),
            1 => b.str_utf8(&format!("s{i}")),
            2 => b.str_utf8(&format!("longer string number {i}")),
            3 => b.float(i as f64 + 0.5),
            _ => {
                let x = b.int(i as i64);
                let y = b.str_utf8("t");
                b.seq(true, &[x, y])
            }
        };
        slots.push(s);
    }
    let r = Reader::new(b.bytes());
    let hashes = slots.iter().map(|&s| hash_value(&r, r.decode(s, b.len()).unwrap(), 0).unwrap()).collect();
    (slots, hashes)
}

#[test]
fn sets_and_frozensets() {
    for frozen in [false, true] {
        for n in [0usize, 1, 2, 8, 9, 16, 17, 100, 1000] {
            let mut set_slot = 0;
            let bytes = build(|b| {
                let (slots, hashes) = hashable_elements(b, n);
                set_slot = b.set(frozen, &slots, &hashes);
                set_slot
            });
            let head = read_u64(&bytes, set_slot as usize);
            assert_eq!(head, header_word(if frozen { KIND_FROZENSET } else { KIND_SET }, n as u64));
            let expected_size = 8 + pad8(8 * n + 4 * index_cap(n));
            assert_eq!(bytes.len() - set_slot as usize, expected_size, "set of {n}: index present iff n > 8");
            assert_eq!(index_cap(n) > 0, n > 8);
            let (r, root) = root_of(&bytes);
            let t = match (frozen, root) {
                (false, Value::Set(t)) | (true, Value::FrozenSet(t)) => t,
                (_, other) => panic!("{other:?}"),
            };
            assert_eq!(t.len, n);
            // Every element reads back and is found by hash.
            let mut other = Builder::new();
            let (want_slots, _) = hashable_elements(&mut other, n);
            let ob = other.into_raw();
            let or = Reader::new(&ob);
            for (i, &ws) in want_slots.iter().enumerate() {
                let got = r.table_item(t, i).unwrap();
                let want = or.decode(ws, ob.len()).unwrap();
                assert!(bale_core::values_eq(&r, got, &or, want).unwrap(), "element {i}");
                let h = hash_value(&or, want, 0).unwrap();
                let pos = r.find(t, h, |c| bale_core::values_eq(&or, want, &r, c)).unwrap();
                assert_eq!(pos, Some(i));
            }
            // Absent values are not found.
            let absent = [-1i64, 7, 1_000_002];
            for a in absent {
                let h = bale_core::hash::hash_i64(a);
                let pos = r.find(t, h, |c| Ok(matches!(c, Value::Int(x) if x == a))).unwrap();
                assert_eq!(pos, None, "{a} absent");
            }
        }
    }
}

#[test]
fn dicts_sharing_a_shape() {
    for nkeys in [0usize, 1, 3, 8, 9, 40] {
        let names: Vec<String> = (0..nkeys)
            .map(|i| match i % 4 {
                0 => format!("k{i}"),
                1 => format!("key number {i}"),
                2 => format!("clé{i}"),
                _ => format!("ключ{i}"),
            })
            .collect();
        let mut dict_slots = Vec::new();
        let mut shape_off = 0;
        let bytes = build(|b| {
            let keys: Vec<u64> = names.iter().map(|k| b.str_utf8(k)).collect();
            let r = Reader::new(b.bytes());
            let hashes: Vec<u64> =
                keys.iter().map(|&s| hash_value(&r, r.decode(s, b.len()).unwrap(), 0).unwrap()).collect();
            shape_off = b.shape(&keys, &hashes);
            for d in 0..5 {
                let vals: Vec<u64> = (0..nkeys).map(|i| b.int((d * 1000 + i) as i64)).collect();
                dict_slots.push(b.dict(shape_off, &vals));
            }
            b.seq(false, &dict_slots)
        });
        // The shape is written once; each dict costs a header plus its values.
        for (d, &ds) in dict_slots.iter().enumerate() {
            assert_eq!(read_u64(&bytes, ds as usize), header_word(KIND_DICT, shape_off >> 3));
            if d > 0 {
                assert_eq!(ds - dict_slots[d - 1], 8 + 8 * nkeys as u64);
            }
        }
        let (r, root) = root_of(&bytes);
        let list = seq_of(root);
        assert_eq!(list.len, 5);
        for d in 0..5 {
            let dict = match r.seq_item(list, d).unwrap() {
                Value::Dict(x) => x,
                other => panic!("{other:?}"),
            };
            assert_eq!(dict.len, nkeys);
            assert_eq!(dict.shape.start, shape_off as usize);
            for (i, name) in names.iter().enumerate() {
                assert_eq!(str_of(r.dict_key(dict, i).unwrap()).to_string_lossy(), *name);
                assert_eq!(int_of(r.dict_value(dict, i).unwrap()), (d * 1000 + i) as i64);
                assert_eq!(int_of(lookup_str(&r, dict, name).unwrap().unwrap()), (d * 1000 + i) as i64);
                let cps = cps_of(name);
                let (w, units) = units_of(&cps);
                assert_eq!(r.find_str(dict.shape, w, &units).unwrap(), Some(i));
            }
            for absent in ["", "k", "zz", "key number", "k1 ", "clé", "ключ"] {
                assert!(lookup_str(&r, dict, absent).unwrap().is_none(), "{absent:?} absent");
                let (w, units) = units_of(&cps_of(absent));
                assert_eq!(r.find_str(dict.shape, w, &units).unwrap(), None);
            }
        }
    }
}

#[test]
fn dict_with_mixed_keys_and_values() {
    // {1: "one", 2.5: b"x", None: [1, 2], (1, "a"): {"inner": True}, "": 0.0, "long key here": -1}
    let bytes = build(|b| {
        let k_int = b.int(1);
        let k_float = b.float(2.5);
        let a = b.str_utf8("a");
        let k_tuple = b.seq(true, &[k_int, a]);
        let k_empty = b.str_utf8("");
        let k_long = b.str_utf8("long key here");
        let keys = [k_int, k_float, SLOT_NONE, k_tuple, k_empty, k_long];
        let r = Reader::new(b.bytes());
        let hashes: Vec<u64> =
            keys.iter().map(|&s| hash_value(&r, r.decode(s, b.len()).unwrap(), 0).unwrap()).collect();
        let shape = b.shape(&keys, &hashes);
        let v0 = b.str_utf8("one");
        let v1 = b.bytes_obj(b"x");
        let one = b.int(1);
        let two = b.int(2);
        let v2 = b.seq(false, &[one, two]);
        let inner_k = b.str_utf8("inner");
        let inner_shape = b.shape(&[inner_k], &[bale_core::hash::hash_str_units(b"inner")]);
        let v3 = b.dict(inner_shape, &[SLOT_TRUE]);
        let v4 = b.float(0.0);
        let v5 = b.int(-1);
        b.dict(shape, &[v0, v1, v2, v3, v4, v5])
    });
    let (r, root) = root_of(&bytes);
    let d = match root {
        Value::Dict(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(d.len, 6);
    assert_eq!(int_of(r.dict_key(d, 0).unwrap()), 1);
    assert!(matches!(r.dict_key(d, 1).unwrap(), Value::Float(f) if f == 2.5));
    assert!(matches!(r.dict_key(d, 2).unwrap(), Value::None));
    assert!(matches!(r.dict_key(d, 3).unwrap(), Value::Tuple(s) if s.len == 2));
    match lookup_str(&r, d, "").unwrap().unwrap() {
        Value::Float(f) => assert_eq!(f.to_bits(), 0),
        other => panic!("{other:?}"),
    }
    assert!(matches!(lookup_str(&r, d, "long key here").unwrap().unwrap(), Value::Int(-1)));
    assert!(lookup_str(&r, d, "one").unwrap().is_none());
    assert!(matches!(r.dict_value(d, 1).unwrap(), Value::Bytes(b"x")));
    let inner = match r.dict_value(d, 3).unwrap() {
        Value::Dict(x) => x,
        other => panic!("{other:?}"),
    };
    assert!(matches!(lookup_str(&r, inner, "inner").unwrap(), Some(Value::Bool(true))));
    match r.dict_value(d, 4).unwrap() {
        Value::Float(f) => assert_eq!(f.to_bits(), 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn empty_containers() {
    let bytes = build(|b| {
        let shape = b.shape(&[], &[]);
        let d = b.dict(shape, &[]);
        let s = b.set(false, &[], &[]);
        let f = b.set(true, &[], &[]);
        let e = b.str_utf8("");
        let by = b.bytes_obj(b"");
        b.seq(false, &[SLOT_EMPTY_LIST, SLOT_EMPTY_TUPLE, d, s, f, e, by])
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    assert!(matches!(r.seq_item(seq, 0).unwrap(), Value::List(s) if s.len == 0));
    assert!(matches!(r.seq_item(seq, 1).unwrap(), Value::Tuple(s) if s.len == 0));
    match r.seq_item(seq, 2).unwrap() {
        Value::Dict(d) => {
            assert_eq!(d.len, 0);
            assert!(lookup_str(&r, d, "a").unwrap().is_none());
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(r.seq_item(seq, 3).unwrap(), Value::Set(t) if t.len == 0));
    assert!(matches!(r.seq_item(seq, 4).unwrap(), Value::FrozenSet(t) if t.len == 0));
    assert_eq!(str_of(r.seq_item(seq, 5).unwrap()).len, 0);
    assert!(matches!(r.seq_item(seq, 6).unwrap(), Value::Bytes(b) if b.is_empty()));
}

#[test]
fn shared_containers_with_flag() {
    // One list referenced three times, one dict twice: valid with SHARED.
    let mut b = Builder::new();
    b.set_flags(FLAG_SHARED);
    let one = b.int(1);
    let l = b.seq(false, &[one, one]);
    let k = b.str_utf8("k");
    let shape = b.shape(&[k], &[bale_core::hash::hash_str_units(b"k")]);
    let d = b.dict(shape, &[l]);
    let root = b.seq(true, &[l, l, d, d, l]);
    let bytes = b.finish(root);
    let region = Region::new_verified(&bytes).unwrap();
    assert!(region.shared());
    let r = region.reader;
    let top = seq_of(region.root().unwrap());
    for i in [0, 1, 4] {
        let s = seq_of(r.seq_item(top, i).unwrap());
        assert_eq!(int_of(r.seq_item(s, 1).unwrap()), 1);
    }
    for i in [2, 3] {
        match r.seq_item(top, i).unwrap() {
            Value::Dict(d) => assert!(matches!(lookup_str(&r, d, "k").unwrap(), Some(Value::List(_)))),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn region_read_at_an_unaligned_address() {
    let bytes = build(|b| {
        let s = b.str_utf8("unaligned reading");
        let f = b.float(1.25);
        b.seq(false, &[s, f])
    });
    let mut shifted = vec![0u8; bytes.len() + 3];
    shifted[3..].copy_from_slice(&bytes);
    let view = &shifted[3..];
    let region = Region::new_verified(view).unwrap();
    let seq = seq_of(region.root().unwrap());
    assert_eq!(str_of(region.reader.seq_item(seq, 0).unwrap()).to_string_lossy(), "unaligned reading");
    assert!(matches!(region.reader.seq_item(seq, 1).unwrap(), Value::Float(f) if f == 1.25));
}

#[test]
fn header_fields_of_a_built_region() {
    let bytes = build(|b| b.int(7));
    assert_eq!(&bytes[0..8], b"BALE\r\n\x1a\n");
    assert_eq!(&bytes[8..12], &[1, 0, 0, 0]);
    assert_eq!(&bytes[12..16], &[4, 3, 2, 1]);
    assert_eq!(read_u64(&bytes, OFF_TOTAL_LEN), 64);
    assert_eq!(read_u64(&bytes, OFF_ROOT), (7 << 3) | 1);
    assert_eq!(read_u64(&bytes, OFF_CHECKSUM), bale_core::compute_checksum(&bytes));
    assert!(bytes[40..64].iter().all(|&b| b == 0));
    let h = bale_core::parse_header(&bytes).unwrap();
    assert_eq!(h.version, 1);
    assert_eq!(h.total_len, 64);
    assert_eq!(h.flags, 0);
}

#[test]
fn stored_str_place_names_what_decode_reads_and_checks_the_same_limit() {
    let mut slots = Vec::new();
    let bytes = build(|b| {
        slots = vec![b.str_utf8("a string longer than seven"), b.str_utf8("é and € and \u{1F600}"), b.int(3)];
        b.seq(false, &slots)
    });
    let (r, root) = root_of(&bytes);
    let seq = seq_of(root);
    for (i, &slot) in slots.iter().enumerate() {
        let place = r.stored_str_place(slot, seq.start).unwrap();
        match r.decode(slot, seq.start).unwrap() {
            Value::Str(s) => {
                let (at, len) = s.stored_at().expect("stored out of line");
                assert_eq!(place, Some((at, len << 2 | s.width as usize)), "slot {i}");
            }
            _ => assert_eq!(place, None, "slot {i}"),
        }
        // From a container that starts before the units: refused, as decode refuses it.
        if place.is_some() {
            assert!(r.stored_str_place(slot, HEADER_LEN).is_err());
            assert!(r.decode(slot, HEADER_LEN).is_err());
        }
    }
}
