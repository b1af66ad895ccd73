//! JSON output: each kind, escaping, big ints, errors with paths.

use bale_core::format::*;
use bale_core::json::{bigint_decimal, to_json};
use bale_core::{Builder, Region};

fn json_of(f: impl FnOnce(&mut Builder) -> u64) -> Result<String, String> {
    let mut b = Builder::new();
    let root = f(&mut b);
    let bytes = b.finish(root);
    let region = Region::new_verified(&bytes).unwrap();
    let mut out = Vec::new();
    to_json(&region.reader, region.root().unwrap(), &mut out).map_err(|e| e.to_string())?;
    Ok(String::from_utf8(out).unwrap())
}

fn hashes(b: &Builder, keys: &[u64]) -> Vec<u64> {
    let r = bale_core::Reader::new(b.bytes());
    keys.iter().map(|&k| bale_core::hash::hash_value(&r, r.decode(k, b.len()).unwrap(), 0).unwrap()).collect()
}

#[test]
fn scalars_and_containers() {
    let s = json_of(|b| {
        let items = [
            SLOT_NONE,
            SLOT_TRUE,
            SLOT_FALSE,
            make_int_slot(-42).unwrap(),
            b.int(i64::MIN),
            b.float(0.1),
            b.float(1e16),
            b.float(-0.0),
            b.str_utf8("caf\u{e9} \u{1F600} \"q\" \\ \n\t\u{1}"),
            SLOT_EMPTY_LIST,
            SLOT_EMPTY_TUPLE,
        ];
        b.seq(false, &items)
    })
    .unwrap();
    assert_eq!(s, "[null,true,false,-42,-9223372036854775808,0.1,1e+16,-0.0,\"caf\u{e9} \u{1F600} \\\"q\\\" \\\\ \\n\\t\\u0001\",[],[]]");
}

#[test]
fn dicts_with_every_scalar_key_kind() {
    let s = json_of(|b| {
        let keys = [b.str_utf8("name"), make_int_slot(7).unwrap(), SLOT_TRUE, SLOT_NONE, b.float(2.5)];
        let h = hashes(b, &keys);
        let shape = b.shape(&keys, &h);
        let vals = [
            b.str_utf8("x"),
            make_int_slot(1).unwrap(),
            make_int_slot(2).unwrap(),
            make_int_slot(3).unwrap(),
            make_int_slot(4).unwrap(),
        ];
        b.dict(shape, &vals)
    })
    .unwrap();
    assert_eq!(s, r#"{"name":"x","7":1,"true":2,"null":3,"2.5":4}"#);
}

#[test]
fn what_json_cannot_hold_is_named_with_its_path() {
    let e = json_of(|b| {
        let inner = [b.float(f64::NAN)];
        let list = b.seq(false, &inner);
        let keys = [b.str_utf8("values")];
        let h = hashes(b, &keys);
        let shape = b.shape(&keys, &h);
        let d = b.dict(shape, &[list]);
        b.seq(false, &[SLOT_NONE, d])
    })
    .unwrap_err();
    assert!(e.starts_with("root[1][\"values\"][0]: NaN has no JSON form"), "{e}");
    let e = json_of(|b| b.bytes_obj(b"x")).unwrap_err();
    assert!(e.contains("bytes"), "{e}");
    let e = json_of(|b| b.str_units(Width::Ucs2, &0xD800u16.to_le_bytes())).unwrap_err();
    assert!(e.contains("surrogate U+D800"), "{e}");
    let e = json_of(|b| b.set(false, &[], &[])).unwrap_err();
    assert!(e.contains("set"), "{e}");
}

#[test]
fn big_ints_in_decimal() {
    let le = |v: i128| {
        let mut b = v.to_le_bytes().to_vec();
        bale_core::hash::minimize_twos_complement(&mut b);
        b
    };
    for v in [
        0i128,
        1,
        -1,
        255,
        -256,
        i64::MAX as i128 + 1,
        i64::MIN as i128 - 1,
        10i128.pow(30),
        -(10i128.pow(37)) - 12345,
        i128::MIN,
        i128::MAX,
    ] {
        assert_eq!(bigint_decimal(&le(v)), v.to_string());
    }
    let s = json_of(|b| b.int_bytes(&le(10i128.pow(30)))).unwrap();
    assert_eq!(s, "1000000000000000000000000000000");
}

#[test]
fn floats_as_python_repr_writes_them() {
    // Pairs taken from CPython's repr(float).
    let cases: &[(f64, &str)] = &[
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (1e-7, "1e-07"),
        (1e-5, "1e-05"),
        (0.0001, "0.0001"),
        (0.00012345, "0.00012345"),
        (100.0, "100.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.5, "1.5"),
        (-2.5e-300, "-2.5e-300"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789012345678.0, "1.2345678901234568e+17"),
        (1234567890123456.7, "1234567890123456.8"),
        (9999999999999998.0, "9999999999999998.0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e100, "1e+100"),
    ];
    for &(f, want) in cases {
        let mut out = Vec::new();
        bale_core::json::float_repr(f, &mut out);
        assert_eq!(std::str::from_utf8(&out).unwrap(), want, "{f:e}");
    }
}
