//! JSON text straight from a region, without building any value in between.
//!
//! The text is that of Python's `json.dumps(v, allow_nan=False,
//! ensure_ascii=False, separators=(",", ":"))`, byte for byte: None, bools,
//! ints (any size), finite floats (as `float.__repr__` writes them: `1e+16`,
//! `1e-05`, `100.0`), strings, lists and tuples (arrays), dicts (objects).
//! Dict keys that are ints, finite floats, bools or None become strings as
//! `json.dumps` makes them. What JSON cannot hold is an error naming where it
//! is: NaN and the infinities (as values and as keys, which `json.dumps`
//! writes as "NaN", "Infinity" only when `allow_nan` is on), bytes, complex
//! numbers, sets, non-scalar keys, lone surrogates in strings, and values
//! that contain themselves.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::columns::Column;
use crate::error::FormatError;
use crate::format::{FLAVOR_ENUM_MIXIN, FLAVOR_NAMEDTUPLE};
use crate::format::{TAG_INT, TAG_MASK};
use crate::hash::spend;
use crate::reader::{Dict, Reader, Seq, Str, Value};

/// Why a value has no JSON text: the path to it (like `root[3]["a"]`) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub path: String,
    pub reason: String,
    /// The bytes themselves are malformed (rather than valid but not JSON).
    pub malformed: bool,
    /// The value holds a reference to another segment of a store, which
    /// only the store can read (the caller may convert the value it reads).
    pub needs_store: bool,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for JsonError {}

enum Step {
    Array { items: Items, next: usize },
    Dict { dict: Dict, next: usize },
}

/// The items of a JSON array: slots (lists, tuples, NamedTuples) or a column.
#[derive(Clone, Copy)]
enum Items {
    Slots(Seq),
    Column(Column),
}

impl Items {
    fn len(&self) -> usize {
        match self {
            Items::Slots(seq) => seq.len,
            Items::Column(col) => col.len,
        }
    }
    /// What marks the array as being written, for values that contain themselves.
    fn key(&self) -> (usize, usize) {
        match self {
            Items::Slots(seq) => (seq.pos, seq.len),
            // A slice of a column's child has its owner's start: an odd
            // key, which no object's (a multiple of 8) meets, so that a
            // column's first item is not taken for the column itself.
            Items::Column(col) if crate::columns::is_slice(&Value::Column(*col)) => (col.start | 1, col.first),
            Items::Column(col) => (col.start, col.first),
        }
    }
}

/// Appends the JSON text of `v` to `out`.
pub fn to_json(r: &Reader<'_>, v: Value<'_>, out: &mut Vec<u8>) -> std::result::Result<(), JsonError> {
    let mut w = JsonWriter {
        r,
        stack: Vec::new(),
        on_path: HashSet::new(),
        steps: crate::hash::step_budget(r.buf().len()) + (1 << 24),
    };
    w.run(v, out)
}

struct JsonWriter<'r, 'a> {
    r: &'r Reader<'a>,
    stack: Vec<Step>,
    /// Containers being written (only needed when the region may be cyclic).
    on_path: HashSet<(usize, usize)>,
    steps: usize,
}

impl<'r, 'a> JsonWriter<'r, 'a> {
    fn run(&mut self, v: Value<'a>, out: &mut Vec<u8>) -> std::result::Result<(), JsonError> {
        self.value(v, out).map_err(|e| self.error(e))?;
        while let Some(top) = self.stack.last() {
            // Write the items of the top container until one is a container
            // itself (pushed: the loop goes on with it) or there are no more.
            let depth = self.stack.len();
            let finished = match *top {
                Step::Array { items, next } => {
                    let mut i = next;
                    while i < items.len() {
                        let at = Some(i);
                        let item = match items {
                            Items::Slots(seq) => {
                                let slot =
                                    self.r.seq_slot(seq, i).map_err(|e| self.error_at(Fail::Malformed(e), at))?;
                                if slot & TAG_MASK == TAG_INT {
                                    // The commonest leaf of numeric arrays, without a decode.
                                    if i > 0 {
                                        out.push(b',');
                                    }
                                    out.extend_from_slice(itoa::Buffer::new().format((slot as i64) >> 3).as_bytes());
                                    i += 1;
                                    continue;
                                }
                                self.r.decode(slot, seq.start)
                            }
                            Items::Column(col) => self.r.column_item(col, i),
                        };
                        let item = item.map_err(|e| self.error_at(Fail::Malformed(e), at))?;
                        if i > 0 {
                            out.push(b',');
                        }
                        i += 1;
                        self.value(item, out).map_err(|e| self.error_at(e, at))?;
                        if self.stack.len() > depth {
                            break;
                        }
                    }
                    if let Step::Array { next, .. } = &mut self.stack[depth - 1] {
                        *next = i;
                    }
                    i == items.len() && self.stack.len() == depth
                }
                Step::Dict { dict, next } => {
                    let mut i = next;
                    while i < dict.len {
                        let at = Some(i);
                        let k = self.r.dict_key(dict, i).map_err(|e| self.error_at(Fail::Malformed(e), at))?;
                        let v = self.r.dict_value(dict, i).map_err(|e| self.error_at(Fail::Malformed(e), at))?;
                        if i > 0 {
                            out.push(b',');
                        }
                        i += 1;
                        self.key(k, out).map_err(|e| self.error_at(e, at))?;
                        out.push(b':');
                        self.value(v, out).map_err(|e| self.error_at(e, at))?;
                        if self.stack.len() > depth {
                            break;
                        }
                    }
                    if let Step::Dict { next, .. } = &mut self.stack[depth - 1] {
                        *next = i;
                    }
                    i == dict.len && self.stack.len() == depth
                }
            };
            if finished {
                let done = self.stack.pop().expect("a step");
                let (close, key) = match done {
                    Step::Array { items, .. } => (b']', items.key()),
                    Step::Dict { dict, .. } => (b'}', dict_key(&dict)),
                };
                if self.r.cyclic() {
                    self.on_path.remove(&key);
                }
                out.push(close);
            }
        }
        Ok(())
    }

    /// The error for item `item` of the top container (or at the top itself).
    fn error_at(&mut self, fail: Fail, item: Option<usize>) -> JsonError {
        if let Some(i) = item {
            match self.stack.last_mut() {
                Some(Step::Array { next, .. }) | Some(Step::Dict { next, .. }) => *next = i + 1,
                None => {}
            }
        }
        self.error(fail)
    }

    /// The error, with the path of the value being written.
    fn error(&self, fail: Fail) -> JsonError {
        let mut path = String::from("root");
        for s in &self.stack {
            match *s {
                Step::Array { next, .. } => {
                    let _ = write!(path, "[{}]", next - 1);
                }
                Step::Dict { dict, next } => {
                    let key = self.r.dict_key(dict, next - 1).ok();
                    match key {
                        Some(Value::Str(s)) => {
                            let _ = write!(path, "[{:?}]", s.to_string_lossy());
                        }
                        Some(k) => {
                            let _ = write!(path, "[{}]", short_repr(&k));
                        }
                        None => path.push_str("[?]"),
                    }
                }
            }
        }
        let mut fail = fail;
        while let Fail::Item(i, inner) = fail {
            let _ = write!(path, "[{i}]");
            fail = *inner;
        }
        match fail {
            Fail::Malformed(e) => JsonError { path, reason: e.to_string(), malformed: true, needs_store: false },
            Fail::NotJson(reason) => JsonError { path, reason, malformed: false, needs_store: false },
            Fail::Extern(e) => JsonError { path, reason: e.to_string(), malformed: false, needs_store: true },
            Fail::Item(..) => unreachable!("unwrapped above"),
        }
    }

    fn value(&mut self, v: Value<'a>, out: &mut Vec<u8>) -> std::result::Result<(), Fail> {
        spend(&mut self.steps).map_err(Fail::Malformed)?;
        match v {
            Value::None => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
            Value::BigInt(b) => out.extend_from_slice(bigint_decimal(b).as_bytes()),
            Value::Float(f) => float(f, out)?,
            Value::Str(s) => string(&s, out)?,
            Value::Pair(a, b) => {
                out.push(b'[');
                out.extend_from_slice(itoa::Buffer::new().format(a).as_bytes());
                out.push(b',');
                out.extend_from_slice(itoa::Buffer::new().format(b).as_bytes());
                out.push(b']');
            }
            Value::List(seq) | Value::Tuple(seq) => self.open_array(Items::Slots(seq), out)?,
            Value::Dict(dict) => {
                self.enter(dict_key(&dict))?;
                out.push(b'{');
                self.stack.push(Step::Dict { dict, next: 0 });
            }
            Value::Column(col) => self.open_array(Items::Column(col), out)?,
            Value::Bytes(_) => return Err(Fail::NotJson("bytes have no JSON form".into())),
            Value::Complex(..) => return Err(Fail::NotJson("a complex number has no JSON form".into())),
            Value::Set(_) | Value::FrozenSet(_) => return Err(Fail::NotJson("a set has no JSON form".into())),
            Value::NumList(l) => {
                out.push(b'[');
                for i in 0..l.len {
                    if i > 0 {
                        out.push(b',');
                    }
                    match self.r.num_item(l, i).map_err(Fail::Malformed)? {
                        Value::Float(f) => {
                            float(f, out).map_err(|e| Fail::Item(i, Box::new(e)))?;
                        }
                        Value::Int(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
                        _ => unreachable!("number lists hold numbers"),
                    }
                }
                out.push(b']');
            }
            // A NamedTuple is an array to json.dumps; its value slots read
            // like a tuple's (at `values`, referring below `start`).
            Value::Record(rec) if rec.ty.flavor == FLAVOR_NAMEDTUPLE => {
                self.open_array(Items::Slots(Seq { start: rec.start, pos: rec.values, len: rec.len }), out)?;
            }
            // IntEnum and StrEnum members are ints and strs to json.dumps.
            Value::Record(rec) if rec.ty.flavor == FLAVOR_ENUM_MIXIN && rec.len == 2 => {
                let v = self.r.record_value(rec, 1).map_err(Fail::Malformed)?;
                self.value(v, out)?;
            }
            Value::Extern(x) => return Err(Fail::Extern(crate::extern_ref::unresolved(&x))),
            other => return Err(Fail::NotJson(format!("a {} has no JSON form", self.type_label(&other)))),
        }
        Ok(())
    }

    /// The Python type of a value without a JSON form, by name for records.
    fn type_label(&self, v: &Value<'a>) -> String {
        match v {
            Value::Record(rec) => match self.r.type_name(rec.ty) {
                Ok(s) => s.to_string_lossy(),
                Err(_) => "record".into(),
            },
            other => kind_name(other).into(),
        }
    }

    fn open_array(&mut self, items: Items, out: &mut Vec<u8>) -> std::result::Result<(), Fail> {
        self.enter(items.key())?;
        out.push(b'[');
        self.stack.push(Step::Array { items, next: 0 });
        Ok(())
    }

    fn enter(&mut self, key: (usize, usize)) -> std::result::Result<(), Fail> {
        if self.r.cyclic() && !self.on_path.insert(key) {
            return Err(Fail::NotJson("the value contains itself (JSON cannot express a cycle)".into()));
        }
        Ok(())
    }

    /// A dict key: strings as they are; ints, finite floats, bools and None
    /// as `json.dumps` writes them, in quotes.
    fn key(&mut self, k: Value<'a>, out: &mut Vec<u8>) -> std::result::Result<(), Fail> {
        match k {
            Value::Str(s) => string(&s, out),
            Value::None | Value::Bool(_) | Value::Int(_) | Value::BigInt(_) => {
                out.push(b'"');
                self.value(k, out)?;
                out.push(b'"');
                Ok(())
            }
            Value::Float(f) => {
                if !f.is_finite() {
                    return Err(Fail::NotJson(format!(
                        "the float key {} has no JSON form (json.dumps writes it only with allow_nan, as a string that does not read back as a float)",
                        py_float_repr(f)
                    )));
                }
                out.push(b'"');
                float(f, out)?;
                out.push(b'"');
                Ok(())
            }
            other => Err(Fail::NotJson(format!("a dict key of kind {} has no JSON form", kind_name(&other)))),
        }
    }
}

enum Fail {
    Malformed(FormatError),
    NotJson(String),
    /// A reference to another segment (`JsonError::needs_store`).
    Extern(FormatError),
    /// The failure of item `i` of a number list (not on the stack).
    Item(usize, Box<Fail>),
}

fn float(f: f64, out: &mut Vec<u8>) -> std::result::Result<(), Fail> {
    if !f.is_finite() {
        return Err(Fail::NotJson(format!("{f} has no JSON form (JSON numbers are finite)")));
    }
    float_repr(f, out);
    Ok(())
}

/// Appends Python's `repr(f)` of a finite float (what `json.dumps` writes):
/// the shortest digits that read back as `f`, positional when the decimal
/// exponent `e` (f = d.ddd × 10^e) is in -4 <= e < 16, else `d.ddde±XX`
/// with at least two exponent digits.
pub fn float_repr(f: f64, out: &mut Vec<u8>) {
    debug_assert!(f.is_finite());
    let mut b = ryu::Buffer::new();
    let text = b.format_finite(f).as_bytes();
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (mantissa, exp) = match text.iter().position(|&c| c == b'e') {
        Some(i) => {
            let (sign, digits) = match text[i + 1] {
                b'-' => (-1, &text[i + 2..]),
                _ => (1, &text[i + 1..]),
            };
            (&text[..i], sign * digits.iter().fold(0i32, |n, &d| n * 10 + (d - b'0') as i32))
        }
        None => (text, 0),
    };
    // The digits without the point, and `point`: how many come before it.
    let mut digits = [0u8; 40];
    let mut n = 0;
    let mut point = None;
    for &c in mantissa {
        if c == b'.' {
            point = Some(n);
        } else {
            digits[n] = c;
            n += 1;
        }
    }
    let mut point = point.unwrap_or(n) as i32 + exp;
    // Strip leading zeros (moving the point) and trailing zeros.
    let lead = digits[..n].iter().take_while(|&&c| c == b'0').count();
    let digits = &digits[lead..n];
    point -= lead as i32;
    let digits = &digits[..digits.iter().rposition(|&c| c != b'0').map_or(0, |i| i + 1)];
    if negative {
        out.push(b'-');
    }
    if digits.is_empty() {
        out.extend_from_slice(b"0.0");
        return;
    }
    // `point` is Python's decpt: f = 0.DIGITS × 10^point.
    if point <= -4 || point > 16 {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = point - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        let e = e.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(e).as_bytes());
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-point) as usize));
        out.extend_from_slice(digits);
    } else if point as usize >= digits.len() {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', point as usize - digits.len()));
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    }
}

/// Python's `repr` of any float: `nan`, `inf`, `-inf`, or as `float_repr`.
fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut out = Vec::new();
    float_repr(f, &mut out);
    String::from_utf8(out).expect("ASCII")
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A JSON string literal: `"`, `\` and control characters escaped, all
/// else as UTF-8.
fn string(s: &Str<'_>, out: &mut Vec<u8>) -> std::result::Result<(), Fail> {
    out.push(b'"');
    let units = s.units();
    if s.width == crate::format::Width::Ascii {
        let mut start = 0;
        for (i, &c) in units.iter().enumerate() {
            if c < 0x20 || c == b'"' || c == b'\\' {
                out.extend_from_slice(&units[start..i]);
                escape(c as u32, out);
                start = i + 1;
            }
        }
        out.extend_from_slice(&units[start..]);
    } else if s.width == crate::format::Width::Latin1 {
        for &b in units {
            if b < 0x20 || b == b'"' || b == b'\\' {
                escape(b as u32, out);
            } else if b < 0x80 {
                out.push(b);
            } else {
                out.extend_from_slice(&[0xC0 | (b >> 6), 0x80 | (b & 0x3F)]);
            }
        }
    } else {
        let unit = s.width.unit();
        for chunk in units.chunks_exact(unit) {
            let c = if unit == 2 {
                u16::from_le_bytes([chunk[0], chunk[1]]) as u32
            } else {
                u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])
            };
            if c < 0x80 {
                if c < 0x20 || c == b'"' as u32 || c == b'\\' as u32 {
                    escape(c, out);
                } else {
                    out.push(c as u8);
                }
                continue;
            }
            match char::from_u32(c) {
                Some(ch) => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                None => {
                    return Err(Fail::NotJson(format!(
                        "string holds the lone surrogate U+{c:04X}, which UTF-8 JSON cannot carry"
                    )))
                }
            }
        }
    }
    out.push(b'"');
    Ok(())
}

fn escape(c: u32, out: &mut Vec<u8>) {
    match c {
        0x22 => out.extend_from_slice(b"\\\""),
        0x5C => out.extend_from_slice(b"\\\\"),
        0x0A => out.extend_from_slice(b"\\n"),
        0x0D => out.extend_from_slice(b"\\r"),
        0x09 => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0C => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize & 15], HEX[c as usize & 15]]),
    }
}

/// Decimal digits of a two's-complement little-endian integer of any size.
pub fn bigint_decimal(le: &[u8]) -> String {
    let negative = le.last().is_some_and(|&b| b & 0x80 != 0);
    // Magnitude as little-endian u32 limbs.
    let mut bytes = le.to_vec();
    if negative {
        let mut carry = 1u16;
        for b in bytes.iter_mut() {
            let v = (!*b) as u16 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
    }
    let mut limbs: Vec<u32> = bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect();
    let mut chunks = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem = 0u64;
        for l in limbs.iter_mut().rev() {
            let cur = (rem << 32) | *l as u64;
            *l = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
    }
    let mut s = String::new();
    if negative {
        s.push('-');
    }
    match chunks.split_last() {
        None => s.push('0'),
        Some((top, rest)) => {
            let _ = write!(s, "{top}");
            for c in rest.iter().rev() {
                let _ = write!(s, "{c:09}");
            }
        }
    }
    s
}

/// The mark of a dict on the current path (rows of one table share its start).
fn dict_key(d: &Dict) -> (usize, usize) {
    (d.start, usize::MAX - d.row.map_or(0, |r| r + 1))
}

fn kind_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::None => "None",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::BigInt(_) => "int",
        Value::Float(_) => "float",
        Value::Complex(..) => "complex",
        Value::Str(_) => "str",
        Value::Bytes(_) => "bytes",
        Value::List(_) => "list",
        Value::Tuple(_) | Value::Pair(..) => "tuple",
        Value::Set(_) => "set",
        Value::FrozenSet(_) => "frozenset",
        Value::Dict(_) => "dict",
        Value::Ext(e) => crate::typed::class_name(e),
        Value::NdArray(_) => "ndarray",
        Value::NumList(_) | Value::Column(_) => "list",
        Value::Record(_) => "record",
        Value::Extern(_) => "reference to another segment",
    }
}

fn short_repr(v: &Value<'_>) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(b) => bigint_decimal(b),
        Value::Float(f) => py_float_repr(*f),
        other => format!("<{}>", kind_name(other)),
    }
}

/// Convenience for callers holding a `Result` from the reader.
pub fn malformed(e: FormatError) -> JsonError {
    JsonError { path: "root".into(), reason: e.to_string(), malformed: true, needs_store: false }
}
