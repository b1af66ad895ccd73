//! JSON text parsed into a flat tree, read as Python's `json.loads` reads
//! it, for the JSON source of the encoder (`json_source.rs`).
//!
//! `jiter` reads the text; the tree holds what `json.loads` would make of
//! it: ints of any size, floats as Python's `float()` reads them (and the
//! `NaN`, `Infinity` and `-Infinity` that `json.loads` accepts), strings as
//! code units of the narrowest width (as CPython stores them), and objects
//! as dicts: a key given twice keeps its first place and its last value.
//!
//! The tree is flat (nodes, the children of each array one after another,
//! the entries of each object one after another) and built without
//! recursion, so any depth of nesting parses in bounded stack.
//!
//! Object keys are interned: equal keys are one key id, as `json.loads`
//! makes equal keys one object (its scanner's memo). The JSON source relies
//! on that to write the bytes the compactor writes for `json.loads`' result.
//!
//! What this parser refuses, `json.loads` may still accept (a lone
//! surrogate escape, a byte order mark, an int longer than the digit
//! limit): [`JsonInputError::python_may_read`] says so, and the caller
//! then goes through `json.loads` instead.

use std::collections::HashMap;

use jiter::{Jiter, JiterError, Peek};
use rustc_hash::FxBuildHasher;

use crate::format::Width;
use crate::hash::hash_str_units;

/// A string's code units in [`JsonDoc::units`].
#[derive(Clone, Copy, Debug)]
pub struct StrAt {
    pub start: usize,
    /// Bytes of code units.
    pub len: usize,
    pub width: Width,
}

/// One parsed value.
#[derive(Clone, Copy, Debug)]
pub enum JsonNode {
    Null,
    Bool(bool),
    Int(i64),
    /// An int outside i64: two's-complement little-endian bytes in
    /// [`JsonDoc::big_ints`].
    BigInt {
        start: usize,
        len: usize,
    },
    Float(f64),
    Str(StrAt),
    /// Its items are `JsonDoc::items[start..start + len]`.
    Array {
        start: usize,
        len: usize,
    },
    /// Its entries are `JsonDoc::entries[start..start + len]`.
    Object {
        start: usize,
        len: usize,
    },
}

/// An object key: its code units, and its key hash (`hash_str_units`).
#[derive(Clone, Copy, Debug)]
pub struct Key {
    pub str: StrAt,
    pub hash: u64,
}

/// A parsed JSON text.
#[derive(Default, Debug)]
pub struct JsonDoc {
    pub nodes: Vec<JsonNode>,
    /// The items of every array (node indexes), each array's together.
    pub items: Vec<u32>,
    /// The entries of every object (key id, value node), each object's together.
    pub entries: Vec<(u32, u32)>,
    /// The distinct keys, by key id.
    pub keys: Vec<Key>,
    /// Code units of every string and key.
    pub units: Vec<u8>,
    pub big_ints: Vec<u8>,
    pub root: u32,
}

/// Why a text was not parsed.
#[derive(Debug)]
pub struct JsonInputError {
    pub message: String,
    /// Whether `json.loads` could still read the text (this parser is
    /// stricter in a few places: see the module's notes); false for a text
    /// that no JSON reader accepts either (a caller then may still ask
    /// `json.loads`, for its message).
    pub python_may_read: bool,
}

impl std::fmt::Display for JsonInputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JsonInputError {}

impl From<JiterError> for Box<JsonInputError> {
    fn from(e: JiterError) -> Self {
        // jiter refuses lone surrogates, which `json.loads` accepts.
        Box::new(JsonInputError { message: e.to_string(), python_may_read: true })
    }
}

// Boxed: a `Result` of two words comes back in registers. A wider one came
// back through memory, and reading its tag stalled on every value.
type Result<T> = std::result::Result<T, Box<JsonInputError>>;

/// A container being parsed: where its children start on the scratch stacks.
enum Open {
    Array { base: usize },
    Object { base: usize, key: u32 },
}

/// What reading a value did.
enum Step {
    /// It was a leaf, or an empty container: its node.
    Done(u32),
    /// It opened a container, whose first child starts at this peek.
    Opened(Peek),
}

/// The widest code point in `s` (0 for ASCII text, told at once).
#[inline]
fn max_char(s: &str) -> u32 {
    if s.is_ascii() {
        return 0;
    }
    s.chars().map(|c| c as u32).max().unwrap_or(0)
}

/// Appends `s`'s code units at `width` to `units`.
fn push_units(units: &mut Vec<u8>, s: &str, width: Width) {
    match width {
        Width::Ascii => units.extend_from_slice(s.as_bytes()),
        Width::Latin1 => units.extend(s.chars().map(|c| c as u8)),
        Width::Ucs2 => s.chars().for_each(|c| units.extend_from_slice(&(c as u16).to_le_bytes())),
        Width::Ucs4 => s.chars().for_each(|c| units.extend_from_slice(&(c as u32).to_le_bytes())),
    }
}

/// A JSON parser whose buffers are kept from one text to the next: a
/// streaming writer parses one element at a time, and allocating the tree
/// afresh for each cost a fifth of converting JSON Lines.
#[derive(Default)]
pub struct JsonParser {
    doc: JsonDoc,
    /// Key id by the FxHash of the key's UTF-8 text (see `key_id`).
    key_ids: HashMap<u64, u32, FxBuildHasher>,
    /// Keys whose text's hash another key has (checked by text).
    collided: HashMap<Box<str>, u32, FxBuildHasher>,
    /// The UTF-8 text of each key id, one after another.
    key_text: Vec<u8>,
    key_text_at: Vec<(usize, usize)>,
    /// The children of the open arrays and objects, innermost last.
    items: Vec<u32>,
    entries: Vec<(u32, u32)>,
    /// Per key id, the object and place it was last seen at (duplicates).
    key_seen: Vec<(u32, u32)>,
    objects: u32,
    max_int_digits: usize,
    stack: Vec<Open>,
}

impl JsonParser {
    fn str_at(&mut self, s: &str) -> StrAt {
        let width = Width::for_max(max_char(s));
        let start = self.doc.units.len();
        push_units(&mut self.doc.units, s, width);
        StrAt { start, len: self.doc.units.len() - start, width }
    }

    /// The id of key `s`, the same for equal keys. Looked up by the hash of
    /// its text, then checked against the text (no allocation per key).
    fn key_id(&mut self, s: &str) -> u32 {
        let h = {
            let mut hasher = rustc_hash::FxHasher::default();
            std::hash::Hasher::write(&mut hasher, s.as_bytes());
            std::hash::Hasher::finish(&hasher)
        };
        let found = self.key_ids.get(&h).copied();
        if let Some(id) = found {
            let (at, len) = self.key_text_at[id as usize];
            if &self.key_text[at..at + len] == s.as_bytes() {
                return id;
            }
            // Two texts of one hash: the later ones are found by text.
            if let Some(&id) = self.collided.get(s) {
                return id;
            }
        }
        let str = self.str_at(s);
        let hash = hash_str_units(&self.doc.units[str.start..str.start + str.len]);
        let id = self.doc.keys.len() as u32;
        self.doc.keys.push(Key { str, hash });
        self.key_seen.push((u32::MAX, 0));
        self.key_text_at.push((self.key_text.len(), s.len()));
        self.key_text.extend_from_slice(s.as_bytes());
        if found.is_some() {
            self.collided.insert(s.into(), id);
        } else {
            self.key_ids.insert(h, id);
        }
        id
    }

    fn push(&mut self, node: JsonNode) -> u32 {
        self.doc.nodes.push(node);
        (self.doc.nodes.len() - 1) as u32
    }

    /// A number from its JSON text (which jiter has checked), as
    /// `json.loads` reads it; returns its node. (It pushes the node itself:
    /// a `JsonNode` returned through memory was copied with overlapping
    /// loads, stalling store forwarding on every number.)
    fn number(&mut self, text: &[u8]) -> Result<u32> {
        let (negative, digits) = match text.strip_prefix(b"-") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if digits.iter().all(u8::is_ascii_digit) {
            if digits.len() <= 18 {
                let v = digits.iter().fold(0i64, |v, &d| v * 10 + (d - b'0') as i64);
                return Ok(self.push(JsonNode::Int(if negative { -v } else { v })));
            }
            if digits.len() > self.max_int_digits {
                return Err(Box::new(JsonInputError {
                    message: format!(
                        "an int of {} digits: more than the limit of {}",
                        digits.len(),
                        self.max_int_digits
                    ),
                    python_may_read: true,
                }));
            }
            let le = decimal_twos_complement(digits, negative);
            if let Some(v) = crate::hash::twos_complement_i64(crate::hash::minimal_twos_complement(&le)) {
                return Ok(self.push(JsonNode::Int(v)));
            }
            let start = self.doc.big_ints.len();
            self.doc.big_ints.extend_from_slice(&le);
            return Ok(self.push(JsonNode::BigInt { start, len: le.len() }));
        }
        // `json.loads` reads NaN, Infinity and -Infinity (not -NaN).
        let special = match text {
            b"NaN" => Some(f64::NAN),
            b"Infinity" => Some(f64::INFINITY),
            b"-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        };
        if let Some(f) = special {
            return Ok(self.push(JsonNode::Float(f)));
        }
        // Correctly rounded, as Python's `float()` (`1e400` is inf).
        match lexical_parse_float::FromLexical::from_lexical(text) {
            Ok(f) => Ok(self.push(JsonNode::Float(f))),
            Err(_) => Err(Box::new(JsonInputError { message: "a malformed number".into(), python_may_read: false })),
        }
    }

    /// Reads the value that starts at `peek`.
    fn value(&mut self, j: &mut Jiter<'_>, peek: Peek, stack: &mut Vec<Open>) -> Result<Step> {
        let node = match peek {
            Peek::Null => {
                j.known_null()?;
                JsonNode::Null
            }
            Peek::True | Peek::False => JsonNode::Bool(j.known_bool(peek)?),
            Peek::String => {
                let s = j.known_str()?;
                JsonNode::Str(self.str_at(s))
            }
            Peek::Array => match j.known_array()? {
                None => JsonNode::Array { start: self.doc.items.len(), len: 0 },
                Some(first) => {
                    stack.push(Open::Array { base: self.items.len() });
                    return Ok(Step::Opened(first));
                }
            },
            Peek::Object => match j.known_object()? {
                None => JsonNode::Object { start: self.doc.entries.len(), len: 0 },
                Some(k) => {
                    let key = self.key_id(k);
                    stack.push(Open::Object { base: self.entries.len(), key });
                    return Ok(Step::Opened(j.peek()?));
                }
            },
            _ => {
                let text = j.known_number_bytes(peek)?;
                return Ok(Step::Done(self.number(text)?));
            }
        };
        Ok(Step::Done(self.push(node)))
    }

    fn close_array(&mut self, base: usize) -> u32 {
        let start = self.doc.items.len();
        self.doc.items.extend(self.items.drain(base..));
        self.push(JsonNode::Array { start, len: self.doc.items.len() - start })
    }

    /// Closes an object: a key given twice keeps its first place and takes
    /// its last value, as in the dict `json.loads` builds.
    fn close_object(&mut self, base: usize) -> u32 {
        let object = self.objects;
        self.objects = self.objects.wrapping_add(1);
        let start = self.doc.entries.len();
        for i in base..self.entries.len() {
            let (key, value) = self.entries[i];
            let seen = &mut self.key_seen[key as usize];
            if seen.0 == object {
                self.doc.entries[seen.1 as usize].1 = value;
            } else {
                *seen = (object, self.doc.entries.len() as u32);
                self.doc.entries.push((key, value));
            }
        }
        self.entries.truncate(base);
        self.push(JsonNode::Object { start, len: self.doc.entries.len() - start })
    }
}

/// The two's-complement little-endian bytes of the decimal `digits`
/// (negated if `negative`).
fn decimal_twos_complement(digits: &[u8], negative: bool) -> Vec<u8> {
    // Base 2^32 limbs, least significant first, fed nine digits at a time.
    let mut limbs: Vec<u32> = vec![0];
    for chunk in digits.chunks(9) {
        let mut mul = 1u64;
        let mut add = 0u64;
        for &d in chunk {
            mul *= 10;
            add = add * 10 + (d - b'0') as u64;
        }
        let mut carry = add;
        for limb in limbs.iter_mut() {
            let v = *limb as u64 * mul + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            limbs.push(carry as u32);
        }
    }
    let mut le: Vec<u8> = limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
    le.push(0); // room for the sign bit
    if negative {
        let mut carry = 1u16;
        for b in le.iter_mut() {
            let v = (!*b) as u16 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
    }
    le
}

/// Parses `text` as `json.loads` would. `max_int_digits`: the most digits
/// an int may have (`sys.get_int_max_str_digits()`; 0 for no limit).
pub fn parse(text: &[u8], max_int_digits: usize) -> std::result::Result<JsonDoc, JsonInputError> {
    let mut p = JsonParser::default();
    p.parse(text, max_int_digits)?;
    Ok(p.doc)
}

impl JsonParser {
    /// Parses `text` as `json.loads` would (see [`parse`]), into buffers
    /// kept from the text before.
    pub fn parse(&mut self, text: &[u8], max_int_digits: usize) -> std::result::Result<&JsonDoc, JsonInputError> {
        self.clear(max_int_digits);
        match self.parse_boxed(text) {
            Ok(()) => Ok(&self.doc),
            Err(e) => Err(*e),
        }
    }

    fn clear(&mut self, max_int_digits: usize) {
        self.doc.clear();
        self.key_ids.clear();
        self.collided.clear();
        self.key_text.clear();
        self.key_text_at.clear();
        self.items.clear();
        self.entries.clear();
        self.key_seen.clear();
        self.objects = 0;
        self.stack.clear();
        self.max_int_digits = if max_int_digits == 0 { usize::MAX } else { max_int_digits };
    }

    fn parse_boxed(&mut self, text: &[u8]) -> Result<()> {
        let mut j = Jiter::new(text).with_allow_inf_nan();
        let mut stack = std::mem::take(&mut self.stack);
        let result = self.values(&mut j, &mut stack);
        self.stack = stack;
        result?;
        j.finish()?;
        if self.doc.nodes.len() > u32::MAX as usize {
            return Err(Box::new(JsonInputError { message: "more than 2^32 values".into(), python_may_read: true }));
        }
        Ok(())
    }

    /// Reads the text's one value, containers without recursion.
    fn values(&mut self, j: &mut Jiter<'_>, stack: &mut Vec<Open>) -> Result<()> {
        let p = self;
        let mut peek = j.peek()?;
        'values: loop {
            let mut done = match p.value(j, peek, stack)? {
                Step::Done(node) => node,
                Step::Opened(first) => {
                    peek = first;
                    continue;
                }
            };
            // A value is complete: hand it to its container, and close each
            // container that has no more children.
            loop {
                match stack.last_mut() {
                    None => {
                        p.doc.root = done;
                        return Ok(());
                    }
                    Some(Open::Array { base }) => {
                        let base = *base;
                        p.items.push(done);
                        match j.array_step()? {
                            Some(next) => {
                                peek = next;
                                continue 'values;
                            }
                            None => {
                                stack.pop();
                                done = p.close_array(base);
                            }
                        }
                    }
                    Some(Open::Object { base, key }) => {
                        let base = *base;
                        p.entries.push((*key, done));
                        match j.next_key()? {
                            Some(k) => {
                                *key = p.key_id(k);
                                peek = j.peek()?;
                                continue 'values;
                            }
                            None => {
                                stack.pop();
                                done = p.close_object(base);
                            }
                        }
                    }
                }
            }
        }
    }
}

impl JsonDoc {
    /// Empties the tree, keeping its buffers.
    fn clear(&mut self) {
        self.nodes.clear();
        self.items.clear();
        self.entries.clear();
        self.keys.clear();
        self.units.clear();
        self.big_ints.clear();
        self.root = 0;
    }

    #[inline]
    pub fn node(&self, i: u32) -> JsonNode {
        self.nodes[i as usize]
    }

    #[inline]
    pub fn str_units(&self, s: StrAt) -> &[u8] {
        &self.units[s.start..s.start + s.len]
    }

    #[inline]
    pub fn array_items(&self, start: usize, len: usize) -> &[u32] {
        &self.items[start..start + len]
    }

    #[inline]
    pub fn object_entries(&self, start: usize, len: usize) -> &[(u32, u32)] {
        &self.entries[start..start + len]
    }

    pub fn big_int(&self, start: usize, len: usize) -> &[u8] {
        &self.big_ints[start..start + len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> JsonDoc {
        parse(text.as_bytes(), 4300).unwrap()
    }

    #[test]
    fn a_key_given_twice_keeps_its_first_place_and_its_last_value() {
        let d = doc(r#"{"a": 1, "b": 2, "a": 3}"#);
        let JsonNode::Object { start, len } = d.node(d.root) else { panic!() };
        let e = d.object_entries(start, len);
        assert_eq!(e.len(), 2);
        assert!(matches!(d.node(e[0].1), JsonNode::Int(3)));
        assert_eq!(d.str_units(d.keys[e[0].0 as usize].str), b"a");
    }

    #[test]
    fn equal_keys_are_one_key_id() {
        let d = doc(r#"[{"k": 1}, {"k": 2, "m": {"k": 3}}]"#);
        assert_eq!(d.keys.len(), 2);
    }

    #[test]
    fn numbers_are_read_as_python_reads_them() {
        let d = doc("[-0, -0.0, 1e400, NaN, -Infinity, 123456789012345678901234567890, -9223372036854775808, 1E2]");
        let JsonNode::Array { start, len } = d.node(d.root) else { panic!() };
        let v: Vec<JsonNode> = d.array_items(start, len).iter().map(|&i| d.node(i)).collect();
        assert!(matches!(v[0], JsonNode::Int(0)));
        assert!(matches!(v[1], JsonNode::Float(f) if f == 0.0 && f.is_sign_negative()));
        assert!(matches!(v[2], JsonNode::Float(f) if f == f64::INFINITY));
        assert!(matches!(v[3], JsonNode::Float(f) if f.is_nan()));
        assert!(matches!(v[4], JsonNode::Float(f) if f == f64::NEG_INFINITY));
        let JsonNode::BigInt { start, len } = v[5] else { panic!("{:?}", v[5]) };
        let want = 123456789012345678901234567890u128.to_le_bytes();
        assert_eq!(crate::hash::minimal_twos_complement(d.big_int(start, len)), &want[..13]);
        assert!(matches!(v[6], JsonNode::Int(i64::MIN)));
        assert!(matches!(v[7], JsonNode::Float(f) if f == 100.0));
    }

    #[test]
    fn a_negative_big_int_is_twos_complement() {
        let d = doc("-340282366920938463463374607431768211456");
        let JsonNode::BigInt { start, len } = d.node(d.root) else { panic!() };
        let b = crate::hash::minimal_twos_complement(d.big_int(start, len));
        // -2^128: sixteen zero bytes, then 0xFF.
        assert_eq!(b.len(), 17);
        assert!(b[..16].iter().all(|&x| x == 0) && b[16] == 0xFF);
    }

    #[test]
    fn strings_take_the_narrowest_width() {
        let d = doc(r#"["abc", "caf\u00e9", "\u20ac", "\ud83d\ude00"]"#);
        let JsonNode::Array { start, len } = d.node(d.root) else { panic!() };
        let widths: Vec<Width> = d
            .array_items(start, len)
            .iter()
            .map(|&i| match d.node(i) {
                JsonNode::Str(s) => s.width,
                _ => panic!(),
            })
            .collect();
        assert_eq!(widths, [Width::Ascii, Width::Latin1, Width::Ucs2, Width::Ucs4]);
    }

    #[test]
    fn a_parser_used_again_reads_each_text_as_a_fresh_one() {
        let mut p = JsonParser::default();
        for text in [r#"{"a": 1, "b": [2, "x"]}"#, r#"[{"b": 1}, {"c": 2, "b": 3}]"#, "7", r#"{"a": {"a": 1}}"#] {
            let reused = format!("{:?}", p.parse(text.as_bytes(), 0).unwrap());
            assert_eq!(reused, format!("{:?}", parse(text.as_bytes(), 0).unwrap()), "{text}");
        }
    }

    #[test]
    fn keys_whose_texts_hash_alike_stay_apart() {
        let mut p = JsonParser::default();
        p.clear(0);
        let a = p.key_id("a");
        // Make "b" collide with "a": its hash now names a's id.
        let mut hasher = rustc_hash::FxHasher::default();
        std::hash::Hasher::write(&mut hasher, b"b");
        p.key_ids.insert(std::hash::Hasher::finish(&hasher), a);
        let b = p.key_id("b");
        assert_ne!(a, b);
        assert_eq!(p.key_id("b"), b);
        assert_eq!(p.key_id("a"), a);
        assert_eq!(p.doc.str_units(p.doc.keys[b as usize].str), b"b");
    }

    #[test]
    fn deep_nesting_parses_without_recursion() {
        let text = "[".repeat(200_000) + &"]".repeat(200_000);
        assert_eq!(parse(text.as_bytes(), 0).unwrap().nodes.len(), 200_000);
    }

    #[test]
    fn what_python_may_still_read_is_said() {
        assert!(parse(br#""\ud800""#, 0).unwrap_err().python_may_read);
        assert!(parse(b"1234567890123456789012", 20).unwrap_err().python_may_read);
        assert!(parse(b"[1,]", 0).is_err());
        assert!(parse(b"-NaN", 0).is_err());
    }
}
