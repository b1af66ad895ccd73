//! Golden vectors: `tests/vectors/NAME.bale` pin the bytes of format version 1.
//!
//! Each vector is a Python value, described here once (as `Py`), written
//! with `Builder` in the order the Python compactor uses (children first,
//! elements in order; for a dict its keys, then its shape, then its values,
//! then the dict; strings written where first met and reused after).
//!
//! The files, `vectors.json` (names and Python literals, for the Python test
//! suite) and `README.md` are produced by
//!
//! ```text
//! cargo test -p bale-core --test golden -- --ignored regenerate
//! ```
//!
//! and the ordinary tests check that the files still match, byte for byte.

use std::collections::HashMap;
use std::path::PathBuf;

use bale_core::dict_class;
use bale_core::format::*;
use bale_core::hash::{self, TupleHasher};
use bale_core::id_dict::{Ids, KeyTable};
use bale_core::typed::{encode_delta, encode_moment, pack_date, Clock, Date, Delta, Moment, Tz};
use bale_core::{encode, Builder, Container, FormatError, Reader, Region, Source, Value, Walk};

/// A Python value.
#[derive(Clone, Debug)]
enum Py {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Complex(f64, f64),
    Str(Vec<u32>),
    Bytes(Vec<u8>),
    List(Vec<Py>),
    Tuple(Vec<Py>),
    Dict(Vec<(Py, Py)>),
    /// A dict of a `collections` class: its class word and its items.
    ClassDict(u64, Vec<(Py, Py)>),
    Set(Vec<Py>),
    FrozenSet(Vec<Py>),
    /// A typed scalar: its kind, header field and payload, and its Python expression.
    Ext(u8, u64, Vec<u8>, String),
}

fn ext(kind: u8, aux: u64, payload: Vec<u8>, expr: &str) -> Py {
    Py::Ext(kind, aux, payload, expr.to_string())
}

fn moment(kind: u8, date: Option<(u16, u8, u8)>, clock: (u8, u8, u8, u32), fold: bool, tz: Tz<'_>, expr: &str) -> Py {
    let m = Moment {
        date: date.map(|(year, month, day)| Date { year, month, day }),
        clock: Clock { hour: clock.0, minute: clock.1, second: clock.2, micro: clock.3 },
        fold,
        tz,
    };
    let (aux, payload) = encode_moment(&m);
    ext(kind, aux, payload, expr)
}

/// Typed scalars, one of each kind without references.
fn typed() -> Py {
    let mut range = Vec::new();
    for w in [3i64, 100, 7] {
        range.extend_from_slice(&w.to_le_bytes());
    }
    let mut arr = vec![b'd', 8, 0, 0, 0, 0, 0, 0];
    arr.extend_from_slice(&1.5f64.to_le_bytes());
    let uuid: Vec<u8> = (0..16u8).map(|k| k * 17).collect();
    list(vec![
        ext(KIND_DATE, pack_date(Date { year: 2024, month: 2, day: 29 }), vec![], "date(2024, 2, 29)"),
        moment(
            KIND_DATETIME,
            Some((2021, 11, 7)),
            (1, 30, 0, 5),
            true,
            Tz::Naive,
            "datetime(2021, 11, 7, 1, 30, 0, 5, fold=1)",
        ),
        moment(
            KIND_DATETIME,
            Some((2020, 1, 1)),
            (12, 0, 0, 0),
            false,
            Tz::Fixed { offset_us: -3 * 3_600_000_000, name: Some("BRT") },
            "datetime(2020, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=-3), 'BRT'))",
        ),
        moment(
            KIND_DATETIME,
            Some((2021, 10, 31)),
            (2, 30, 0, 0),
            true,
            Tz::Zone("Europe/Paris"),
            "datetime(2021, 10, 31, 2, 30, fold=1, tzinfo=ZoneInfo('Europe/Paris'))",
        ),
        moment(KIND_TIME, None, (23, 59, 59, 999_999), false, Tz::Naive, "time(23, 59, 59, 999999)"),
        ext(
            KIND_TIMEDELTA,
            0,
            encode_delta(Delta { days: -3, seconds: 5, micros: 7 }),
            "timedelta(days=-3, seconds=5, microseconds=7)",
        ),
        ext(KIND_DECIMAL, 8, b"-1.23E+5".to_vec(), "Decimal('-1.23E+5')"),
        ext(KIND_UUID, 0, uuid, "UUID('00112233-4455-6677-8899-aabbccddeeff')"),
        ext(KIND_RANGE, 0, range, "range(3, 100, 7)"),
        ext(KIND_ARRAY, 8, arr, "array('d', [1.5])"),
        dict(vec![(
            ext(KIND_DATE, pack_date(Date { year: 2000, month: 1, day: 1 }), vec![], "date(2000, 1, 1)"),
            s("a date key"),
        )]),
    ])
}

/// Fractions and paths (kinds 0x20 and 0x21), as values and as keys.
fn fractions_paths() -> Py {
    let int = |v: i128| hash::minimal_twos_complement(&v.to_le_bytes()).to_vec();
    let frac = |n: i128, d: i128, expr: &str| {
        let (aux, p) = bale_core::fraction::encode(&int(n), &int(d));
        ext(KIND_FRACTION, aux, p, expr)
    };
    let path = |class: u64, text: &str, expr: &str| {
        let (aux, p) = bale_core::path::encode(class, text.as_bytes());
        ext(KIND_PATH, aux, p, expr)
    };
    list(vec![
        frac(1, 2, "Fraction(1, 2)"),
        frac(-7, 3, "Fraction(-7, 3)"),
        frac(1 << 70, 3, "Fraction(2**70, 3)"),
        frac(5, 1, "Fraction(5)"),
        path(bale_core::path::PURE_POSIX, "/a/b", "PurePosixPath('/a/b')"),
        path(bale_core::path::POSIX, "x", "PosixPath('x')"),
        path(bale_core::path::PURE_WINDOWS, "C:\\Users", "PureWindowsPath('C:/Users')"),
        dict(vec![
            (frac(1, 4, "Fraction(1, 4)"), s("a quarter")),
            (path(bale_core::path::PURE_POSIX, "k", "PurePosixPath('k')"), i(1)),
        ]),
    ])
}

/// Dicts of the `collections` classes (kind 0x22).
fn dict_classes() -> Py {
    use dict_class::{class_word, COUNTER, DEFAULT, ORDERED};
    list(vec![
        Py::ClassDict(class_word(ORDERED, 0), vec![(s("b"), i(1)), (s("a"), i(2))]),
        Py::ClassDict(class_word(COUNTER, 0), vec![(s("x"), i(3)), (i(7), i(1))]),
        Py::ClassDict(class_word(DEFAULT, 1), vec![(s("k"), list(vec![i(1)]))]),
        Py::ClassDict(class_word(DEFAULT, 0), vec![]),
        Py::ClassDict(class_word(ORDERED, 0), vec![]),
    ])
}

fn s(x: &str) -> Py {
    Py::Str(x.chars().map(|c| c as u32).collect())
}
fn i(x: i128) -> Py {
    Py::Int(x)
}
fn f(x: f64) -> Py {
    Py::Float(x)
}
fn list(v: Vec<Py>) -> Py {
    Py::List(v)
}
fn tuple(v: Vec<Py>) -> Py {
    Py::Tuple(v)
}
fn dict(v: Vec<(Py, Py)>) -> Py {
    Py::Dict(v)
}

/// A table's own column of slots: a SLOT32_COLUMN when every slot is None,
/// a bool or an INT slot whose value fits 28 bits (its low 4 bytes, which
/// sign-extend back to it), else a LIST. Written here from the rule, not
/// through `Builder::slot_column`.
fn table_slots(b: &mut Builder, slots: &[u64]) -> u64 {
    let small = |s: u64| {
        let fits = (s as i64) >= i32::MIN as i64 && (s as i64) <= i32::MAX as i64;
        fits && (s & TAG_MASK == TAG_INT || matches!(s, SLOT_NONE | SLOT_FALSE | SLOT_TRUE))
    };
    if !slots.is_empty() && slots.iter().all(|&s| small(s)) {
        let cells: Vec<u32> = slots.iter().map(|&s| s as u32).collect();
        return b.slot32_column(&cells);
    }
    // Every slot a string's (inline or stored), and the distinct ones few
    // enough that a STR_CODE_COLUMN (the dictionary's header and slots, the
    // column's header and slot, 4 bytes a code) is smaller than a LIST
    // (its header and slots), and the first 1024 (of a column at least
    // that long) not all distinct: codes, in order of first use.
    if slots.iter().all(|&s| matches!(s & TAG_MASK, TAG_SSTR | TAG_STR)) {
        let mut dict: Vec<u64> = Vec::new();
        let codes: Vec<u32> = slots
            .iter()
            .map(|s| match dict.iter().position(|d| d == s) {
                Some(code) => code as u32,
                None => {
                    dict.push(*s);
                    (dict.len() - 1) as u32
                }
            })
            .collect();
        let n = slots.len();
        let mut first = slots[..n.min(1024)].to_vec();
        first.sort_unstable();
        first.dedup();
        let few_first = n < 1024 || first.len() < 1024;
        if few_first && 8 + 8 * dict.len() + 16 + pad8(4 * n) < 8 + 8 * n {
            return b.str_code_column(&dict, &codes);
        }
    }
    b.seq(false, slots)
}

/// The vectors: (name, value). Set elements are small non-negative ints
/// (or single elements), listed in the order CPython iterates them.
/// Dicts that name their keys by ids (kind 0x23): 32 key sequences get a
/// SHAPE each, then dicts with a new sequence are ID_DICTs over a key table
/// that grows as keys are met (a key longer than a slot, a Latin-1 key).
fn id_dicts() -> Py {
    let mut dicts: Vec<Py> = (0..32).map(|k| dict(vec![(s(&format!("k{k}")), i(k))])).collect();
    dicts.push(dict(vec![(s("k1"), i(1)), (s("k0"), Py::None)]));
    dicts.push(dict(vec![(s("k0"), f(0.5)), (s("a key longer than a slot"), s("v")), (s("k1"), Py::Bool(true))]));
    dicts.push(dict(vec![(s("caf\u{e9}"), list(vec![i(1)])), (s("a key longer than a slot"), i(2))]));
    dicts.push(dict(vec![(s("k0"), dict(vec![(s("k1"), i(3)), (s("k2"), i(4))]))]));
    list(dicts)
}

fn vectors() -> Vec<(&'static str, Py)> {
    vec![
        ("none", Py::None),
        ("constants", list(vec![Py::None, Py::Bool(true), Py::Bool(false)])),
        (
            "ints",
            list(vec![
                i(0),
                i(1),
                i(-1),
                i(7),
                i((1 << 60) - 1),
                i(-(1 << 60)),
                i(1 << 60),
                i(-(1 << 60) - 1),
                i(i64::MAX as i128),
                i(i64::MIN as i128),
            ]),
        ),
        (
            "bigints",
            list(vec![i(1 << 63), i(-(1 << 63) - 1), i(1 << 64), i(-(1 << 100)), i((1 << 120) + 12345), i(i128::MIN)]),
        ),
        (
            "floats",
            list(vec![
                f(0.0),
                f(-0.0),
                f(1.5),
                f(-2.25),
                f(0.1),
                f(1e300),
                f(5e-324),
                f(f64::INFINITY),
                f(f64::NEG_INFINITY),
                f(f64::NAN),
            ]),
        ),
        (
            "complex",
            list(vec![
                Py::Complex(1.5, -2.0),
                Py::Complex(0.0, 1.0),
                Py::Complex(-0.0, -0.0),
                Py::Complex(f64::INFINITY, f64::NAN),
            ]),
        ),
        (
            "strings",
            list(vec![
                s(""),
                s("a"),
                s("abcdefg"),
                s("abcdefgh"),
                s("hello, world"),
                s("caf\u{e9}"),
                s("\u{ff}"),
                s("\u{20ac}99"),
                s("\u{65e5}\u{672c}\u{8a9e}"),
                Py::Str(vec![0xD800]),
                s("\u{1F600} smile"),
                s("tab\there \"quoted\" \\"),
            ]),
        ),
        (
            "bytes",
            list(vec![
                Py::Bytes(vec![]),
                Py::Bytes(vec![0, 0xFF]),
                Py::Bytes(b"hello bytes!".to_vec()),
                Py::Bytes(b"exactly8".to_vec()),
            ]),
        ),
        (
            "nested",
            list(vec![
                list(vec![i(1), list(vec![i(2), list(vec![i(3), list(vec![])])])]),
                tuple(vec![i(1), tuple(vec![f(2.5), tuple(vec![])]), s("x")]),
                tuple(vec![]),
                list(vec![list(vec![list(vec![])])]),
                tuple(vec![s("one")]),
            ]),
        ),
        ("deep", (0..20).fold(Py::None, |inner, _| list(vec![inner]))),
        // The example of FORMAT.md.
        ("dict_small", dict(vec![(s("a"), list(vec![i(1), s("hello world")])), (s("b"), Py::None)])),
        (
            "dict_large",
            dict(
                (0..12)
                    .map(|k| {
                        let v = match k % 4 {
                            0 => i(k),
                            1 => f(k as f64 + 0.5),
                            2 => s(&format!("value {k}")),
                            _ => Py::None,
                        };
                        (s(&format!("k{k}")), v)
                    })
                    .collect(),
            ),
        ),
        (
            "dict_keys",
            dict(vec![
                (i(1), s("one")),
                (f(2.5), s("two and a half")),
                (Py::None, i(0)),
                (tuple(vec![i(1), s("x")]), list(vec![])),
                (Py::Bytes(b"k".to_vec()), Py::Bool(true)),
                (s("\u{e9}t\u{e9}"), i(1)),
                (Py::Bool(false), s("f")),
            ]),
        ),
        (
            "nested_dicts",
            dict(vec![
                (s("p"), dict(vec![(s("x"), i(1)), (s("y"), i(2))])),
                (s("q"), dict(vec![(s("y"), i(3)), (s("x"), i(4))])),
                (s("r"), dict(vec![(s("x"), i(5)), (s("y"), i(6))])),
            ]),
        ),
        (
            "records",
            list(vec![
                dict(vec![(s("id"), i(1)), (s("name"), s("alice")), (s("score"), f(9.5))]),
                dict(vec![(s("id"), i(2)), (s("name"), s("bob")), (s("score"), f(7.25))]),
                dict(vec![(s("id"), i(3)), (s("name"), s("carol")), (s("score"), f(8.0))]),
            ]),
        ),
        ("set_small", Py::Set(vec![i(1), i(2), i(3)])),
        ("set_large", Py::Set((0..12).map(i).collect())),
        (
            "frozensets",
            list(vec![
                Py::FrozenSet(vec![i(1), i(2), i(3)]),
                Py::FrozenSet(vec![]),
                Py::Set(vec![tuple(vec![i(1), s("a")])]),
                Py::Set(vec![Py::FrozenSet(vec![i(4)])]),
                Py::FrozenSet((0..10).map(|k| i(k * 3)).collect()),
            ]),
        ),
        ("typed", typed()),
        ("fractions_paths", fractions_paths()),
        ("dict_classes", dict_classes()),
        ("id_dicts", id_dicts()),
        (
            "pairs",
            list(vec![
                tuple(vec![i(1), i(2)]),
                tuple(vec![i(-(1 << 28)), i((1 << 28) - 1)]),
                tuple(vec![i(1 << 28), i(0)]),
                tuple(vec![i(1), s("x")]),
                dict(vec![(tuple(vec![i(3), i(4)]), tuple(vec![i(5), i(-6)]))]),
            ]),
        ),
        (
            // Records holding lists of dicts (one empty), whose dicts hold
            // lists of dicts (empty first): a TABLE whose column is a
            // ROWS_COLUMN over a TABLE, whose column is one again.
            "rows_columns",
            list(
                (0..4)
                    .map(|k| {
                        let line = |t: i128| {
                            dict(vec![
                                (s("sku"), s(["x", "y"][t as usize])),
                                (s("qty"), i(t + k)),
                                (s("parts"), list((0..t).map(|p| dict(vec![(s("pn"), i(10 * k + p))])).collect())),
                            ])
                        };
                        dict(vec![(s("id"), i(k)), (s("lines"), list((0..k % 3).map(line).collect()))])
                    })
                    .collect(),
            ),
        ),
        (
            // A TABLE's columns of None, bools and ints that fit an INT slot
            // in 32 bits (28-bit values, their edges included): SLOT32_COLUMNs
            // (five rows: the last cell padded); one int past 28 bits: a LIST.
            "table_small_scalars",
            list(
                (0..5)
                    .map(|k: i128| {
                        dict(vec![
                            (s("flag"), if k % 2 == 0 { Py::Bool(true) } else { Py::Bool(false) }),
                            (s("opt"), if k % 3 == 0 { Py::None } else { i(k * 7) }),
                            (
                                s("edge"),
                                [i((1 << 28) - 1), i(-(1 << 28)), Py::None, Py::Bool(true), i(0)][k as usize].clone(),
                            ),
                            (s("none"), Py::None),
                            (s("past"), if k == 4 { i(1 << 28) } else { Py::None }),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            // A TABLE's columns of repeated strings: STR_CODE_COLUMNs (codes
            // into the distinct strings, in order of first use; 17 rows, the
            // last code padded) of inline strings, and of stored ones of two
            // widths; distinct strings of 2-3 characters: a STR_COLUMN; 16
            // distinct inline strings among 17 rows: a LIST (codes would
            // take more bytes).
            "table_repeated_strings",
            list(
                (0..17)
                    .map(|k: usize| {
                        dict(vec![
                            (s("color"), s(["green", "yellow", "purple"][k % 3])),
                            (s("city"), s(["Reykjav\u{ed}k", "a city named twice"][k / 9])),
                            (s("code"), s(&format!("c{k}"))),
                            (s("word"), s(&format!("w{:06}", k % 16))),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            // A TABLE's columns of ints: an INT32_LIST when every int fits 32
            // bits (the edges of i32 included), else an INT_LIST.
            "table_int_widths",
            list(
                (0..4)
                    .map(|k: i128| {
                        dict(vec![
                            (s("low"), i(-(1 << 31) + k)),
                            (s("high"), i((1 << 31) - 1 - k)),
                            (s("past"), i((1 << 31) - 2 + k)),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            // Four records of one key sequence, scalars and lists of scalars: a TABLE.
            "table",
            list(
                (0..4)
                    .map(|k| {
                        dict(vec![
                            (s("id"), i(k)),
                            (s("code"), s(["a", "bc", "def", ""][k as usize])),
                            (s("tags"), list((0..k).map(|t| s(["red", "green"][(t % 2) as usize])).collect())),
                            (s("pts"), list((0..k % 3).map(|t| i(t * 10)).collect())),
                            (s("misc"), if k % 2 == 0 { Py::None } else { f(k as f64 / 4.0) }),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            "number_lists",
            list(vec![
                list(vec![i(1), i(-2), i(i64::MAX as i128)]),
                list(vec![f(0.5), f(-0.0)]),
                list(vec![i(1), f(1.0)]),
            ]),
        ),
        (
            "empty",
            list(vec![
                list(vec![]),
                tuple(vec![]),
                dict(vec![]),
                Py::Set(vec![]),
                Py::FrozenSet(vec![]),
                s(""),
                Py::Bytes(vec![]),
            ]),
        ),
    ]
}

// ------------------------------------------------------------ Python text

fn py_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x:?}")
    }
}

fn py_str(cps: &[u32]) -> String {
    let mut out = String::from("\"");
    for &c in cps {
        match c {
            0x5C => out.push_str("\\\\"),
            0x22 => out.push_str("\\\""),
            0x09 => out.push_str("\\t"),
            0x0A => out.push_str("\\n"),
            0x20..=0x7E => out.push(char::from_u32(c).unwrap()),
            0..=0xFF => out.push_str(&format!("\\x{c:02x}")),
            0x100..=0xFFFF => out.push_str(&format!("\\u{c:04x}")),
            _ => out.push_str(&format!("\\U{c:08x}")),
        }
    }
    out.push('"');
    out
}

fn py_bytes(b: &[u8]) -> String {
    let mut out = String::from("b\"");
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7E => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

fn join(v: &[Py]) -> String {
    v.iter().map(py).collect::<Vec<_>>().join(", ")
}

/// A Python expression for the value (`inf` and `nan` are `math.inf`, `math.nan`).
fn py(v: &Py) -> String {
    match v {
        Py::None => "None".into(),
        Py::Bool(b) => if *b { "True" } else { "False" }.into(),
        Py::Int(x) => x.to_string(),
        Py::Float(x) => py_float(*x),
        Py::Complex(re, im) => format!("complex({}, {})", py_float(*re), py_float(*im)),
        Py::Str(cps) => py_str(cps),
        Py::Bytes(b) => py_bytes(b),
        Py::List(v) => format!("[{}]", join(v)),
        Py::Tuple(v) if v.len() == 1 => format!("({},)", py(&v[0])),
        Py::Tuple(v) => format!("({})", join(v)),
        Py::Dict(kv) => {
            format!("{{{}}}", kv.iter().map(|(k, v)| format!("{}: {}", py(k), py(v))).collect::<Vec<_>>().join(", "))
        }
        Py::ClassDict(word, kv) => {
            let items = kv.iter().map(|(k, v)| format!("({}, {})", py(k), py(v))).collect::<Vec<_>>().join(", ");
            match word & 0xFF {
                dict_class::DEFAULT => format!("defaultdict({}, [{items}])", dict_class::factory_name(*word)),
                dict_class::COUNTER => format!("Counter({})", py(&Py::Dict(kv.clone()))),
                _ => format!("{}([{items}])", dict_class::class_name(*word)),
            }
        }
        Py::Set(v) if v.is_empty() => "set()".into(),
        Py::Set(v) => format!("{{{}}}", join(v)),
        Py::FrozenSet(v) if v.is_empty() => "frozenset()".into(),
        Py::FrozenSet(v) => format!("frozenset({{{}}})", join(v)),
        Py::Ext(.., expr) => expr.clone(),
    }
}

// --------------------------------------------------------------- writing

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

fn int_le(x: i128) -> Vec<u8> {
    let mut b = x.to_le_bytes().to_vec();
    hash::minimize_twos_complement(&mut b);
    b
}

/// Writes values the way the Python compactor does: a `Source` of the
/// core's encoder (`bale_core::encoder`), which walks the containers and
/// writes each after its children.
#[derive(Default)]
struct Writer {
    strings: HashMap<Vec<u32>, u64>,
    shapes: HashMap<String, u64>,
    /// Which dicts become ID_DICTs, and their key table (`id_dict::KeyTable`).
    key_table: KeyTable,
}

/// Where a list, tuple or dict being written is among its children, and
/// how it is written.
enum Cursor<'p> {
    Items {
        items: &'p [Py],
        tuple: bool,
        next: usize,
    },
    Values {
        kv: &'p [(Py, Py)],
        class: u64,
        shape: u64,
        next: usize,
    },
    /// A plain dict written as an ID_DICT over the key table at `table`.
    IdValues {
        kv: &'p [(Py, Py)],
        table: u64,
        ids: Ids,
        next: usize,
    },
}

/// One walk over the model: the values it reaches live for `'p`.
struct Model<'w, 'p> {
    w: &'w mut Writer,
    b: &'w mut Builder,
    walk: Walk<Cursor<'p>>,
}

impl<'p> Source for Model<'_, 'p> {
    type Node = &'p Py;
    type Cursor = Cursor<'p>;
    type Error = FormatError;

    fn parts(&mut self) -> (&mut Walk<Cursor<'p>>, &mut Builder) {
        (&mut self.walk, self.b)
    }

    fn visit(&mut self, v: &'p Py) -> Result<Option<u64>, FormatError> {
        let b = &mut *self.b;
        if let Some(slot) = self.w.table(b, v) {
            return Ok(Some(slot));
        }
        let open = match v {
            // Lists of only floats, or only ints that fit in 64 bits, are number lists.
            Py::List(items) if !items.is_empty() && items.iter().all(|x| matches!(x, Py::Float(_))) => {
                let words: Vec<u64> =
                    items.iter().map(|x| if let Py::Float(f) = x { f.to_bits() } else { 0 }).collect();
                return Ok(Some(b.num_list(true, &words)));
            }
            Py::List(items)
                if !items.is_empty() && items.iter().all(|x| matches!(x, Py::Int(n) if i64::try_from(*n).is_ok())) =>
            {
                let words: Vec<u64> =
                    items.iter().map(|x| if let Py::Int(n) = x { *n as i64 as u64 } else { 0 }).collect();
                return Ok(Some(b.num_list(false, &words)));
            }
            // A 2-tuple of ints that fit in 29 bits each is a PAIR slot.
            Py::Tuple(items) if matches!(&items[..], [Py::Int(a), Py::Int(b)] if make_pair_slot(*a as i64, *b as i64).is_some() && i64::try_from(*a).is_ok() && i64::try_from(*b).is_ok()) =>
            {
                let [Py::Int(x), Py::Int(y)] = &items[..] else { unreachable!() };
                return Ok(Some(make_pair_slot(*x as i64, *y as i64).unwrap()));
            }
            Py::List(items) => Cursor::Items { items, tuple: false, next: 0 },
            Py::Tuple(items) => Cursor::Items { items, tuple: true, next: 0 },
            Py::Dict(kv) => match self.w.dict_keys(b, kv) {
                Ok(shape) => Cursor::Values { kv, class: dict_class::PLAIN, shape, next: 0 },
                Err((table, ids)) => Cursor::IdValues { kv, table, ids, next: 0 },
            },
            Py::ClassDict(word, kv) => Cursor::Values { kv, class: *word, shape: self.w.shape(b, kv), next: 0 },
            Py::Set(items) => {
                let (slots, hashes): (Vec<u64>, Vec<u64>) = items.iter().map(|x| self.w.key(b, x)).unzip();
                return Ok(Some(b.set(false, &slots, &hashes)));
            }
            other => return Ok(Some(self.w.key(b, other).0)),
        };
        self.walk.open(open, bale_core::encoder::NO_IDENTITY);
        Ok(None)
    }

    fn next_child(&mut self) -> Result<Option<&'p Py>, FormatError> {
        Ok(match self.walk.top().expect("an open container") {
            Cursor::Items { items, next, .. } => {
                *next += 1;
                items.get(*next - 1)
            }
            Cursor::Values { kv, next, .. } | Cursor::IdValues { kv, next, .. } => {
                *next += 1;
                kv.get(*next - 1).map(|(_, v)| v)
            }
        })
    }

    fn container(&self, cursor: &Cursor<'p>) -> Result<Container, FormatError> {
        Ok(match *cursor {
            Cursor::Items { tuple, .. } => Container::Seq { tuple },
            Cursor::Values { class, shape, .. } => Container::Dict { class, shape },
            Cursor::IdValues { table, ids, .. } => Container::IdDict { table, ids },
        })
    }
}

impl Writer {
    /// Writes `v` (and what it holds) and returns its slot.
    fn value(&mut self, b: &mut Builder, v: &Py) -> u64 {
        let mut model = Model { w: self, b, walk: Walk::new(false) };
        encode(&mut model, v).expect("the model's values are valid")
    }

    fn str_slot(&mut self, b: &mut Builder, cps: &[u32]) -> u64 {
        let (w, units) = units_of(cps);
        if w == Width::Ascii && cps.len() <= SSTR_MAX {
            return make_sstr_slot(&units);
        }
        if let Some(&slot) = self.strings.get(cps) {
            return slot;
        }
        let slot = b.str_units(w, &units);
        self.strings.insert(cps.to_vec(), slot);
        slot
    }

    fn int_slot(&mut self, b: &mut Builder, x: i128) -> (u64, u64) {
        match i64::try_from(x) {
            Ok(v) => (b.int(v), hash::hash_i64(v)),
            Err(_) => {
                let le = int_le(x);
                (b.int_bytes(&le), hash::hash_bigint(&le))
            }
        }
    }

    /// A list of at least 4 dicts of one key sequence whose values are
    /// scalars, lists of scalars or lists of dicts that make a table
    /// themselves, written by column as the compactor does.
    fn table(&mut self, b: &mut Builder, v: &Py) -> Option<u64> {
        let Py::List(rows) = v else { return None };
        let rows: Vec<&Py> = rows.iter().collect();
        if rows.len() < 4 || !makes_table(&rows) {
            return None;
        }
        Some(self.table_of(b, &rows))
    }

    /// Writes `rows` (which `makes_table`) as a TABLE: the shape, the
    /// columns in key order, the TABLE object.
    fn table_of(&mut self, b: &mut Builder, rows: &[&Py]) -> u64 {
        let Py::Dict(first) = rows[0] else { unreachable!() };
        let keys: Vec<String> = first.iter().map(|(k, _)| py(k)).collect();
        let cache_key: String = keys.join("\u{0}");
        let shape = match self.shapes.get(&cache_key) {
            Some(&shape) => shape,
            None => {
                let (slots, hashes): (Vec<u64>, Vec<u64>) = first.iter().map(|(k, _)| self.key(b, k)).unzip();
                let shape = b.shape(&slots, &hashes);
                self.key_table.shape_written();
                self.shapes.insert(cache_key, shape);
                shape
            }
        };
        let cols: Vec<u64> = (0..keys.len())
            .map(|j| {
                let values: Vec<&Py> =
                    rows.iter().map(|r| if let Py::Dict(kv) = r { &kv[j].1 } else { unreachable!() }).collect();
                self.column(b, &values)
            })
            .collect();
        b.table_object(rows.len(), shape, &cols)
    }

    fn column(&mut self, b: &mut Builder, values: &[&Py]) -> u64 {
        if values.iter().all(|x| matches!(x, Py::List(_))) {
            let mut flat: Vec<&Py> = Vec::new();
            let mut offsets = vec![0u32];
            for x in values {
                if let Py::List(l) = x {
                    flat.extend(l.iter());
                }
                offsets.push(flat.len() as u32);
            }
            // Lists of dicts: a ROWS_COLUMN over the table of all of them.
            if matches!(flat.first(), Some(Py::Dict(_))) {
                let table = self.table_of(b, &flat);
                return b.rows_column(table, &offsets);
            }
            let child = if flat.is_empty() { SLOT_EMPTY_LIST } else { self.scalar_column(b, &flat, false) };
            return b.list_column(child, &offsets);
        }
        // A table's own column of ints that all fit 32 bits: an INT32_LIST.
        if values.iter().all(|x| matches!(x, Py::Int(n) if i32::try_from(*n).is_ok())) {
            let words: Vec<u64> =
                values.iter().map(|x| if let Py::Int(n) = x { *n as i64 as u64 } else { 0 }).collect();
            return b.int32_list(&words);
        }
        if values.iter().all(|x| !matches!(x, Py::List(_))) {
            return self.scalar_column(b, values, true);
        }
        let slots: Vec<u64> = values.iter().map(|x| self.value(b, x)).collect();
        table_slots(b, &slots)
    }

    /// Raw numbers; strings of one width as a STR_COLUMN when smaller than
    /// slots (a string not inline counted as stored once per occurrence);
    /// else slots.
    fn scalar_column(&mut self, b: &mut Builder, values: &[&Py], own: bool) -> u64 {
        let as_list = Py::List(values.iter().map(|x| (*x).clone()).collect());
        let numbers = values.iter().all(|x| matches!(x, Py::Float(_)))
            || values.iter().all(|x| matches!(x, Py::Int(n) if i64::try_from(*n).is_ok()));
        if numbers {
            return self.value(b, &as_list);
        }
        let strs: Option<Vec<(Width, Vec<u8>, usize)>> = values
            .iter()
            .map(|x| {
                if let Py::Str(cps) = x {
                    let (w, u) = units_of(cps);
                    Some((w, u, cps.len()))
                } else {
                    None
                }
            })
            .collect();
        if let Some(strs) = strs {
            let width = strs[0].0;
            let units: usize = strs.iter().map(|s| s.1.len()).sum();
            let as_slots: usize = strs
                .iter()
                .map(|(w, u, n)| 8 + if *w == Width::Ascii && *n <= SSTR_MAX { 0 } else { pad8(u.len()) })
                .sum();
            if strs.iter().all(|s| s.0 == width) && 4 * strs.len() + units < as_slots {
                let mut offsets = vec![0u32];
                let mut data = Vec::new();
                for (_, u, _) in &strs {
                    data.extend_from_slice(u);
                    offsets.push((data.len() / width.unit()) as u32);
                }
                return b.str_column(width, &offsets, &data);
            }
        }
        let slots: Vec<u64> = values.iter().map(|x| self.value(b, x)).collect();
        if own {
            table_slots(b, &slots)
        } else {
            b.seq(false, &slots)
        }
    }

    /// The shape of a plain dict's keys (`Ok`), or the key table and ids of
    /// an ID_DICT (`Err`): a key sequence met for the first time after 32
    /// shapes, of 1 to 15 str keys, as the compactor decides.
    fn dict_keys(&mut self, b: &mut Builder, kv: &[(Py, Py)]) -> Result<u64, (u64, Ids)> {
        let cache_key: String = kv.iter().map(|(k, _)| py(k)).collect::<Vec<_>>().join("\u{0}");
        if let Some(&shape) = self.shapes.get(&cache_key) {
            return Ok(shape);
        }
        if self.key_table.wants(kv.len()) && kv.iter().all(|(k, _)| matches!(k, Py::Str(_))) {
            let texts: Vec<(Width, Vec<u8>)> =
                kv.iter().map(|(k, _)| if let Py::Str(cps) = k { units_of(cps) } else { unreachable!() }).collect();
            let mut table = std::mem::take(&mut self.key_table);
            let ids = table.ids_of::<()>(texts.iter().map(|(w, u)| (*w, &u[..])), |i| Ok(self.key(b, &kv[i].0)));
            let out = ids.expect("no error").map(|ids| (table.table(b), ids));
            self.key_table = table;
            if let Some(found) = out {
                return Err(found);
            }
        }
        Ok(self.shape(b, kv))
    }

    /// The shape of a dict's keys: written once per key sequence (of at most 64 keys).
    fn shape(&mut self, b: &mut Builder, kv: &[(Py, Py)]) -> u64 {
        let cache_key: String = kv.iter().map(|(k, _)| py(k)).collect::<Vec<_>>().join("\u{0}");
        if let Some(&shape) = self.shapes.get(&cache_key) {
            return shape;
        }
        let (slots, hashes): (Vec<u64>, Vec<u64>) = kv.iter().map(|(k, _)| self.key(b, k)).unzip();
        let shape = b.shape(&slots, &hashes);
        self.key_table.shape_written();
        if kv.len() <= 64 {
            self.shapes.insert(cache_key, shape);
        }
        shape
    }

    /// Slot and key hash of a hashable value.
    fn key(&mut self, b: &mut Builder, v: &Py) -> (u64, u64) {
        match v {
            Py::None => (SLOT_NONE, hash::mix(hash::SEED_NONE)),
            Py::Bool(b) => (if *b { SLOT_TRUE } else { SLOT_FALSE }, hash::hash_i64(*b as i64)),
            Py::Int(x) => self.int_slot(b, *x),
            Py::Float(x) => (b.float(*x), hash::hash_f64(*x)),
            Py::Complex(re, im) => (b.complex(*re, *im), hash::hash_complex(*re, *im)),
            Py::Str(cps) => {
                let h = hash::hash_str_units(&units_of(cps).1);
                (self.str_slot(b, cps), h)
            }
            Py::Bytes(bytes) => (b.bytes_obj(bytes), hash::hash_bytes(bytes)),
            Py::Tuple(items) => {
                let mut th = TupleHasher::new();
                let mut slots = Vec::new();
                for x in items {
                    let (slot, h) = self.key(b, x);
                    slots.push(slot);
                    th.add(h);
                }
                (b.seq(true, &slots), th.finish(items.len()))
            }
            Py::FrozenSet(items) => {
                let (slots, hashes): (Vec<u64>, Vec<u64>) = items.iter().map(|x| self.key(b, x)).unzip();
                let sum = hashes.iter().fold(0u64, |acc, &h| acc.wrapping_add(hash::mix(h)));
                (b.set(true, &slots, &hashes), hash::frozenset_hash(sum, items.len()))
            }
            Py::Ext(kind, aux, payload, _) => {
                let e = bale_core::Ext { kind: *kind, start: 0, aux: *aux, payload };
                (b.ext(*kind, *aux, payload), hash::hash_ext(&e))
            }
            Py::List(_) | Py::Dict(_) | Py::ClassDict(..) | Py::Set(_) => panic!("unhashable key {v:?}"),
        }
    }
}

/// Whether `rows` are dicts of one key sequence (1 to 64 keys) whose values
/// columns hold: in each column, scalars, lists of scalars, or lists of
/// dicts that make a table again (the compactor's rule, but for the nesting
/// limit, which no vector reaches).
fn makes_table(rows: &[&Py]) -> bool {
    let scalar = |x: &Py| matches!(x, Py::None | Py::Bool(_) | Py::Int(_) | Py::Float(_) | Py::Str(_));
    let Some(Py::Dict(first)) = rows.first() else { return false };
    if first.is_empty() || first.len() > 64 {
        return false;
    }
    let keys: Vec<String> = first.iter().map(|(k, _)| py(k)).collect();
    for row in rows {
        let Py::Dict(kv) = row else { return false };
        if kv.iter().map(|(k, _)| py(k)).collect::<Vec<_>>() != keys {
            return false;
        }
    }
    (0..keys.len()).all(|j| {
        let cells: Vec<&Py> =
            rows.iter().map(|r| if let Py::Dict(kv) = r { &kv[j].1 } else { unreachable!() }).collect();
        let items: Vec<&Py> =
            cells.iter().flat_map(|c| if let Py::List(l) = c { l.iter().collect() } else { vec![] }).collect();
        let lists = cells.iter().all(|c| matches!(c, Py::List(_)));
        if lists && matches!(items.first(), Some(Py::Dict(_))) {
            return makes_table(&items);
        }
        cells.iter().all(|c| scalar(c) || matches!(c, Py::List(l) if l.iter().all(scalar)))
    })
}

fn build(v: &Py) -> Vec<u8> {
    let mut b = Builder::new();
    let root = Writer::default().value(&mut b, v);
    b.finish(root)
}

// ------------------------------------------------------------- checking

/// The stored value is exactly `want` (same types, floats by bit pattern).
fn check(r: &Reader<'_>, got: Value<'_>, want: &Py, path: &str) {
    match (want, got) {
        (Py::None, Value::None) => {}
        (Py::Bool(a), Value::Bool(b)) => assert_eq!(*a, b, "{path}"),
        (Py::Int(a), Value::Int(b)) => assert_eq!(*a, b as i128, "{path}"),
        (Py::Int(a), Value::BigInt(b)) => {
            assert!(i64::try_from(*a).is_err(), "{path}: a BigInt must be outside i64");
            assert_eq!(int_le(*a), b, "{path}");
        }
        (Py::Float(a), Value::Float(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{path}"),
        (Py::Complex(a, b), Value::Complex(c, d)) => {
            assert_eq!((a.to_bits(), b.to_bits()), (c.to_bits(), d.to_bits()), "{path}")
        }
        (Py::Str(cps), Value::Str(st)) => {
            let (w, units) = units_of(cps);
            assert_eq!(st.width, w, "{path}");
            assert_eq!(st.len, cps.len(), "{path}");
            assert_eq!(st.units(), &units[..], "{path}");
        }
        (Py::Bytes(a), Value::Bytes(b)) => assert_eq!(&a[..], b, "{path}"),
        (Py::List(items), Value::List(seq)) | (Py::Tuple(items), Value::Tuple(seq)) => {
            assert_eq!(seq.len, items.len(), "{path}");
            for (k, x) in items.iter().enumerate() {
                check(r, r.seq_item(seq, k).unwrap(), x, &format!("{path}[{k}]"));
            }
        }
        (Py::Dict(kv), Value::Dict(d)) | (Py::ClassDict(_, kv), Value::Dict(d)) => {
            let word = if let Py::ClassDict(word, _) = want { *word } else { dict_class::PLAIN };
            assert_eq!((d.len, d.class), (kv.len(), word), "{path}");
            for (k, (kw, vw)) in kv.iter().enumerate() {
                check(r, r.dict_key(d, k).unwrap(), kw, &format!("{path}.key{k}"));
                check(r, r.dict_value(d, k).unwrap(), vw, &format!("{path}[{}]", py(kw)));
            }
        }
        (Py::Set(items), Value::Set(t)) | (Py::FrozenSet(items), Value::FrozenSet(t)) => {
            assert_eq!(t.len, items.len(), "{path}");
            for (k, x) in items.iter().enumerate() {
                check(r, r.table_item(t, k).unwrap(), x, &format!("{path}{{{k}}}"));
            }
        }
        (Py::Tuple(items), Value::Pair(a, b)) => {
            assert!(matches!(&items[..], [Py::Int(x), Py::Int(y)] if *x == a as i128 && *y == b as i128), "{path}");
        }
        (Py::List(items), Value::Column(c)) => {
            assert_eq!(c.len, items.len(), "{path}");
            for (k, x) in items.iter().enumerate() {
                check(r, r.column_item(c, k).unwrap(), x, &format!("{path}[{k}]"));
            }
        }
        (Py::List(items), Value::NumList(l)) => {
            assert_eq!(l.len, items.len(), "{path}");
            for (k, x) in items.iter().enumerate() {
                check(r, r.num_item(l, k).unwrap(), x, &format!("{path}[{k}]"));
            }
        }
        (Py::Ext(kind, aux, payload, _), Value::Ext(e)) => {
            assert_eq!((*kind, *aux, &payload[..]), (e.kind, e.aux, e.payload), "{path}");
        }
        (want, got) => panic!("{path}: expected {}, found {got:?}", py(want)),
    }
}

// ---------------------------------------------------------------- files

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

fn json_escape(x: &str) -> String {
    let mut out = String::new();
    for c in x.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7E => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn vectors_json() -> String {
    let entries: Vec<String> = vectors()
        .iter()
        .map(|(name, v)| format!("  {{\"name\": \"{}\", \"python\": \"{}\"}}", name, json_escape(&py(v))))
        .collect();
    format!("[\n{}\n]\n", entries.join(",\n"))
}

fn readme() -> String {
    let mut out = String::from(
        "# Golden vectors\n\
         \n\
         Each `NAME.bale` file is a complete region (format version 1, see\n\
         `docs/FORMAT.md`) holding one Python value. They pin the byte format: any\n\
         writer given the same value in the same order must produce exactly these\n\
         bytes, and any reader must read them back as that value.\n\
         \n\
         **How they were produced.** The values are described once in\n\
         `crates/bale-core/tests/golden.rs` and written with the core crate's\n\
         `Builder`, in the order the Python compactor uses: children before their\n\
         container, elements in order; for a dict its keys (each key's slot, in\n\
         order), then its shape, then its values in order, then the dict; a dict\n\
         whose key sequence was met before reuses that shape; once 32 shapes are\n\
         written, a dict of 1 to 15 str keys whose sequence is new is an ID_DICT\n\
         over the key table (`bale_core::id_dict::KeyTable`); a string is written\n\
         where it is first met and referenced again after. Regenerate with\n\
         \n\
         ```\n\
         cargo test -p bale-core --test golden -- --ignored regenerate\n\
         ```\n\
         \n\
         `cargo test -p bale-core --test golden` checks that the files, this README\n\
         and `vectors.json` still match the generator, byte for byte, and decodes\n\
         every file. `vectors.json` lists each vector's name and its value as a\n\
         Python expression, evaluated by `tests/unit/test_golden.py` with `inf` and `nan`\n\
         bound to `math.inf` and `math.nan`; `bale.compact(value)` must give the\n\
         file's bytes. Set elements are small non-negative ints (or a single\n\
         element), so CPython iterates them in the order written here.\n\
         \n\
         `read_only/` holds regions that readers must read but that bale's writers\n\
         do not make yet (a KEYED_TABLE), each built by hand in `golden.rs`\n\
         (`read_only_vectors`), with their values in `read_only/vectors.json`;\n\
         `tests/unit/test_keyed_tables.py` reads them.\n\
         \n\
         Print any of them with\n\
         `cargo run -p bale-core --example read_region -- tests/vectors/NAME.bale`.\n\
         \n\
         | file | bytes | Python value |\n\
         | --- | --- | --- |\n",
    );
    for (name, v) in vectors() {
        let size = build(&v).len();
        out.push_str(&format!("| `{name}.bale` | {size} | `{}` |\n", py(&v).replace('|', "\\|")));
    }
    out
}

#[test]
#[ignore]
fn regenerate_golden_vectors() {
    let dir = vectors_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for (name, v) in vectors() {
        std::fs::write(dir.join(format!("{name}.bale")), build(&v)).unwrap();
    }
    std::fs::write(dir.join("vectors.json"), vectors_json()).unwrap();
    std::fs::write(dir.join("README.md"), readme()).unwrap();
}

#[test]
fn golden_vectors_match_the_builder() {
    for (name, v) in vectors() {
        let path = vectors_dir().join(format!("{name}.bale"));
        let file = std::fs::read(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (regenerate the vectors, see tests/vectors/README.md)", path.display())
        });
        // ID_DICTs come after 32 shapes: that vector is larger.
        let limit = if name == "id_dicts" { 2048 } else { 1024 };
        assert!(file.len() < limit, "{name} is {} bytes: keep vectors small", file.len());
        assert!(build(&v) == file, "{name}.bale differs from what the Builder writes for {}", py(&v));
    }
}

#[test]
fn golden_vectors_read_back() {
    for (name, v) in vectors() {
        let file = std::fs::read(vectors_dir().join(format!("{name}.bale"))).unwrap();
        let region = Region::new_verified(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(region.header.flags, 0);
        check(&region.reader, region.root().unwrap(), &v, name);
    }
}

#[test]
fn manifest_and_readme_are_current() {
    let json = std::fs::read_to_string(vectors_dir().join("vectors.json")).unwrap();
    assert_eq!(json, vectors_json(), "tests/vectors/vectors.json is stale");
    let md = std::fs::read_to_string(vectors_dir().join("README.md")).unwrap();
    assert_eq!(md, readme(), "tests/vectors/README.md is stale");
    // Exactly the listed vectors are in the directory.
    let mut files: Vec<String> = std::fs::read_dir(vectors_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bale"))
        .collect();
    files.sort();
    let mut names: Vec<String> = vectors().iter().map(|(n, _)| format!("{n}.bale")).collect();
    names.sort();
    assert_eq!(files, names);
}

#[test]
fn sets_in_vectors_are_in_cpython_order() {
    // CPython iterates a set of small non-negative ints in increasing order;
    // other elements only appear alone.
    fn walk(v: &Py) {
        match v {
            Py::Set(items) | Py::FrozenSet(items) => {
                if items.len() > 1 {
                    let ints: Vec<i128> = items
                        .iter()
                        .map(|x| match x {
                            Py::Int(k) if (0..256).contains(k) => *k,
                            other => panic!("set element {other:?} with siblings"),
                        })
                        .collect();
                    assert!(ints.windows(2).all(|w| w[0] < w[1]), "{ints:?}");
                }
                items.iter().for_each(walk);
            }
            Py::List(items) | Py::Tuple(items) => items.iter().for_each(walk),
            Py::Dict(kv) | Py::ClassDict(_, kv) => kv.iter().for_each(|(k, v)| {
                walk(k);
                walk(v)
            }),
            _ => {}
        }
    }
    for (_, v) in vectors() {
        walk(&v);
    }
}

/// The hex dump of FORMAT.md's example is the `dict_small` vector.
#[test]
fn format_md_example_is_dict_small() {
    let doc = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/FORMAT.md")).unwrap();
    let start = doc.find("## Example").expect("FORMAT.md has an example");
    let mut dump = vec![None; 0x90];
    let mut lines_seen = 0;
    for line in doc[start..].lines() {
        let mut parts = line.split_whitespace();
        let Some(off) = parts.next().filter(|p| p.len() == 3).and_then(|p| usize::from_str_radix(p, 16).ok()) else {
            continue;
        };
        let bytes: Vec<u8> =
            parts.take(8).map_while(|p| u8::from_str_radix(p, 16).ok().filter(|_| p.len() == 2)).collect();
        if bytes.len() == 8 {
            for (k, b) in bytes.into_iter().enumerate() {
                dump[off + k] = Some(b);
            }
            lines_seen += 1;
        }
    }
    assert!(lines_seen >= 15, "parsed {lines_seen} lines of the example");
    let (_, v) = vectors().into_iter().find(|(n, _)| *n == "dict_small").unwrap();
    let built = build(&v);
    assert_eq!(built.len(), 0x90);
    for (off, want) in dump.iter().enumerate() {
        match want {
            Some(b) => assert_eq!(built[off], *b, "byte 0x{off:02x} of the FORMAT.md example"),
            None => assert!((0x28..0x40).contains(&off) && built[off] == 0, "byte 0x{off:02x} not in the dump"),
        }
    }
}

// ------------------------------------------------- vectors only for readers

/// Regions that readers of version 1 must read but that bale's writers do
/// not make (yet): each is built here by hand, and `tests/vectors/read_only/`
/// holds its file and `vectors.json` its value, for the Python suite.
fn read_only_vectors() -> Vec<(&'static str, Vec<u8>, Py)> {
    vec![
        ("keyed_table", keyed_table_vector(), keyed_table_value()),
        ("table_of_int64_columns", table_of_int64_columns_vector(), table_of_int64_columns_value()),
    ]
}

/// A TABLE whose columns of small ints are INT_LISTs, as bale wrote them
/// before a table's column of ints that fit 32 bits became an INT32_LIST:
/// still valid, and read the same.
fn table_of_int64_columns_value() -> Py {
    list((0..4).map(|k| dict(vec![(s("id"), i(k - 1)), (s("n"), i(1000 * k))])).collect())
}

fn table_of_int64_columns_vector() -> Vec<u8> {
    let mut b = Builder::new();
    let ids = b.num_list(false, &[-1i64 as u64, 0, 1, 2]);
    let ns = b.num_list(false, &[0, 1000, 2000, 3000]);
    let slots = [b.str_utf8("id"), b.str_utf8("n")];
    let hashes = [hash::hash_str_units(b"id"), hash::hash_str_units(b"n")];
    let shape = b.shape(&slots, &hashes);
    let table = b.table_object(4, shape, &[ids, ns]);
    b.finish(table)
}

/// A KEYED_TABLE (kind 0x26): rows of their own keys and orders, a None
/// row, a row of no key; a column of dicts that is a keyed table itself
/// (its rows for cells a row lacks have no key), and a ROWS_COLUMN over a
/// keyed table with a None row.
fn keyed_table_value() -> Py {
    let login = |x: &str| (s("login"), s(x));
    list(vec![
        dict(vec![
            (s("id"), i(1)),
            (s("name"), s("a")),
            (s("tags"), list(vec![dict(vec![(s("t"), s("x"))]), Py::None])),
        ]),
        Py::None,
        dict(vec![(s("org"), dict(vec![login("o")])), (s("id"), i(3))]),
        dict(vec![]),
        dict(vec![(s("id"), i(5)), (s("name"), s("é")), (s("org"), dict(vec![login("p"), (s("url"), Py::None)]))]),
    ])
}

fn keyed_table_vector() -> Vec<u8> {
    let mut b = Builder::new();
    let shape = |b: &mut Builder, keys: &[&str]| {
        let slots: Vec<u64> = keys.iter().map(|k| b.str_utf8(k)).collect();
        let hashes: Vec<u64> = keys.iter().map(|k| hash::hash_str_units(k.as_bytes())).collect();
        b.shape(&slots, &hashes)
    };
    let ids = b.num_list(false, &[1, 0, 3, 0, 5]);
    let (a, e) = (b.str_utf8("a"), b.str_utf8("é"));
    let names = b.seq(false, &[a, SLOT_NONE, SLOT_NONE, SLOT_NONE, e]);
    // The org column: a keyed table of five rows, those of rows lacking it of no key.
    let org_keys = shape(&mut b, &["login", "url"]);
    let (o, p) = (b.str_utf8("o"), b.str_utf8("p"));
    let logins = b.seq(false, &[SLOT_NONE, SLOT_NONE, o, SLOT_NONE, p]);
    let urls = b.seq(false, &[SLOT_NONE; 5]);
    let orgs = b.keyed_table_object(org_keys, &[logins, urls], &[&[], &[0], &[0, 1]], &[0, 0, 1, 0, 2]);
    // The tags column: the first row's list of a dict and a None, the others empty.
    let t_keys = shape(&mut b, &["t"]);
    let x = b.str_utf8("x");
    let ts = b.seq(false, &[x, SLOT_NONE]);
    let tag_rows = b.keyed_table_object(t_keys, &[ts], &[&[0]], &[0, 0xFF]);
    let tags = b.rows_column(tag_rows, &[0, 2, 2, 2, 2, 2]);
    let keys = shape(&mut b, &["id", "name", "org", "tags"]);
    let table = b.keyed_table_object(
        keys,
        &[ids, names, orgs, tags],
        &[&[0, 1, 3], &[2, 0], &[], &[0, 1, 2]],
        &[0, 0xFF, 1, 2, 3],
    );
    b.finish(table)
}

fn read_only_dir() -> PathBuf {
    vectors_dir().join("read_only")
}

fn read_only_json() -> String {
    let entries: Vec<String> = read_only_vectors()
        .iter()
        .map(|(name, _, v)| format!("  {{\"name\": \"{}\", \"python\": \"{}\"}}", name, json_escape(&py(v))))
        .collect();
    format!("[\n{}\n]\n", entries.join(",\n"))
}

#[test]
#[ignore]
fn regenerate_read_only_vectors() {
    let dir = read_only_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes, _) in read_only_vectors() {
        std::fs::write(dir.join(format!("{name}.bale")), bytes).unwrap();
    }
    std::fs::write(dir.join("vectors.json"), read_only_json()).unwrap();
}

#[test]
fn read_only_vectors_match_and_read_back() {
    let json = std::fs::read_to_string(read_only_dir().join("vectors.json")).unwrap();
    assert_eq!(json, read_only_json(), "tests/vectors/read_only/vectors.json is stale");
    for (name, bytes, v) in read_only_vectors() {
        let file = std::fs::read(read_only_dir().join(format!("{name}.bale"))).unwrap();
        assert!(file == bytes, "read_only/{name}.bale differs from what is built for it (regenerate)");
        let region = Region::new_verified(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        check(&region.reader, region.root().unwrap(), &v, name);
    }
}
