//! Prints the value stored in a region file as Python-like text.
//!
//! ```text
//! cargo run -p bale-core --example read_region -- data.bale
//! cargo run -p bale-core --example read_region -- --no-verify data.bale
//! ```
//!
//! The file may come from Python (`region.save("data.bale")`) or be one of
//! the golden vectors in `tests/vectors/`. The region is verified first
//! (checksum and structure) unless `--no-verify` is given; reading is
//! bounds-checked either way. The printer is iterative, so deeply nested
//! values print without recursion.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use bale_core::{FormatError, Reader, Region, Str, Value};

/// Pending output: a value to print or a piece of punctuation.
enum Item<'a> {
    Owned(String),
    Value(Value<'a>),
    Text(&'static str),
}

fn main() -> ExitCode {
    let mut verify = true;
    let mut path = None;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--no-verify" => verify = false,
            "-h" | "--help" => {
                println!("usage: read_region [--no-verify] FILE");
                return ExitCode::SUCCESS;
            }
            _ if path.is_none() => path = Some(arg),
            _ => {
                eprintln!("usage: read_region [--no-verify] FILE");
                return ExitCode::from(2);
            }
        }
    }
    let Some(path) = path else {
        eprintln!("usage: read_region [--no-verify] FILE");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let region = if verify { Region::new_verified(&bytes) } else { Region::new(&bytes) };
    let region = match region {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: not a valid bale region: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let printed = region.root().map_err(Error::Format).and_then(|root| print_value(&region.reader, root, &mut out));
    let printed = printed.and_then(|()| writeln!(out).and_then(|()| out.flush()).map_err(Error::Io));
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is not an error worth reporting.
        Err(Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Error::Io(e)) => {
            eprintln!("writing output: {e}");
            ExitCode::FAILURE
        }
        Err(Error::Format(e)) => {
            let _ = out.flush();
            eprintln!("\n{path}: malformed region: {e}");
            ExitCode::FAILURE
        }
    }
}

enum Error {
    Io(io::Error),
    Format(FormatError),
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<FormatError> for Error {
    fn from(e: FormatError) -> Self {
        Error::Format(e)
    }
}

/// Prints `root` with an explicit stack (no recursion).
fn print_value<'a>(r: &Reader<'a>, root: Value<'a>, out: &mut impl Write) -> Result<(), Error> {
    let mut stack = vec![Item::Value(root)];
    while let Some(item) = stack.pop() {
        let v = match item {
            Item::Text(t) => {
                out.write_all(t.as_bytes())?;
                continue;
            }
            Item::Owned(t) => {
                out.write_all(t.as_bytes())?;
                continue;
            }
            Item::Value(v) => v,
        };
        match v {
            Value::None => out.write_all(b"None")?,
            Value::Bool(b) => out.write_all(if b { b"True" } else { b"False" })?,
            Value::Int(i) => write!(out, "{i}")?,
            Value::BigInt(le) => out.write_all(bigint_decimal(le).as_bytes())?,
            Value::Float(f) => out.write_all(float_text(f).as_bytes())?,
            Value::Complex(re, im) => write!(out, "complex({}, {})", float_text(re), float_text(im))?,
            Value::Str(s) => out.write_all(str_repr(&s).as_bytes())?,
            Value::Bytes(b) => out.write_all(bytes_repr(b).as_bytes())?,
            Value::List(seq) | Value::Tuple(seq) => {
                let tuple = matches!(v, Value::Tuple(_));
                out.write_all(if tuple { b"(" } else { b"[" })?;
                stack.push(Item::Text(match (tuple, seq.len) {
                    (true, 1) => ",)",
                    (true, _) => ")",
                    _ => "]",
                }));
                for i in (0..seq.len).rev() {
                    stack.push(Item::Value(r.seq_item(seq, i)?));
                    if i > 0 {
                        stack.push(Item::Text(", "));
                    }
                }
            }
            Value::Set(t) | Value::FrozenSet(t) => {
                let frozen = matches!(v, Value::FrozenSet(_));
                if t.len == 0 {
                    out.write_all(if frozen { b"frozenset()" } else { b"set()" })?;
                    continue;
                }
                out.write_all(if frozen { b"frozenset({" } else { b"{" })?;
                stack.push(Item::Text(if frozen { "})" } else { "}" }));
                for i in (0..t.len).rev() {
                    stack.push(Item::Value(r.table_item(t, i)?));
                    if i > 0 {
                        stack.push(Item::Text(", "));
                    }
                }
            }
            Value::NumList(l) => {
                out.write_all(b"[")?;
                for i in 0..l.len {
                    if i > 0 {
                        out.write_all(b", ")?;
                    }
                    match r.num_item(l, i)? {
                        Value::Float(f) => out.write_all(float_text(f).as_bytes())?,
                        Value::Int(i) => write!(out, "{i}")?,
                        other => write!(out, "{other:?}")?,
                    }
                }
                out.write_all(b"]")?;
            }
            Value::Column(c) => {
                out.write_all(b"[")?;
                stack.push(Item::Text("]"));
                for i in (0..c.len).rev() {
                    stack.push(Item::Value(r.column_item(c, i)?));
                    if i > 0 {
                        stack.push(Item::Text(", "));
                    }
                }
            }
            Value::Pair(a, b) => write!(out, "({a}, {b})")?,
            Value::Ext(e) => write!(out, "<{} object>", bale_core::typed::kind_name(e.kind))?,
            Value::NdArray(a) => write!(out, "<ndarray of {} bytes, dtype {}>", a.data.len(), a.dtype)?,
            Value::Record(rec) => {
                out.write_all(r.type_name(rec.ty)?.to_string_lossy().as_bytes())?;
                out.write_all(b"(")?;
                stack.push(Item::Text(")"));
                for i in (0..rec.len).rev() {
                    stack.push(Item::Value(r.record_value(rec, i)?));
                    let name = match r.field_name(rec.ty, i)? {
                        Value::Str(s) => s.to_string_lossy(),
                        _ => "?".into(),
                    };
                    stack.push(Item::Owned(format!("{}{name}=", if i > 0 { ", " } else { "" })));
                }
            }
            Value::Dict(d) => {
                out.write_all(b"{")?;
                stack.push(Item::Text("}"));
                for i in (0..d.len).rev() {
                    stack.push(Item::Value(r.dict_value(d, i)?));
                    stack.push(Item::Text(": "));
                    stack.push(Item::Value(r.dict_key(d, i)?));
                    if i > 0 {
                        stack.push(Item::Text(", "));
                    }
                }
            }
            // Only a store can follow it: print what it names.
            Value::Extern(x) => {
                out.write_all(format!("<segment {} bytes 0..{}, slot 0x{:x}>", x.segment, x.end, x.slot).as_bytes())?
            }
        }
    }
    Ok(())
}

fn float_text(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{f:?}")
    }
}

/// A string literal in the style of Python's `repr`.
fn str_repr(s: &Str<'_>) -> String {
    let cps: Vec<u32> = (0..s.len).map(|i| s.char_at(i)).collect();
    let has_single = cps.contains(&('\'' as u32));
    let has_double = cps.contains(&('"' as u32));
    let quote = if has_single && !has_double { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len + 2);
    out.push(quote);
    for c in cps {
        match c {
            0x5C => out.push_str("\\\\"),
            0x09 => out.push_str("\\t"),
            0x0A => out.push_str("\\n"),
            0x0D => out.push_str("\\r"),
            _ if c == quote as u32 => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7E => out.push(c as u8 as char),
            0..=0xA0 | 0xAD => out.push_str(&format!("\\x{c:02x}")),
            _ => match char::from_u32(c) {
                // Surrogates are not chars; everything else prints as itself.
                Some(ch) => out.push(ch),
                _ if c <= 0xFFFF => out.push_str(&format!("\\u{c:04x}")),
                _ => out.push_str(&format!("\\U{c:08x}")),
            },
        }
    }
    out.push(quote);
    out
}

/// A bytes literal in the style of Python's `repr`.
fn bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') { '"' } else { '\'' };
    let mut out = String::from("b");
    out.push(quote);
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            _ if c as char == quote => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7E => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push(quote);
    out
}

/// Decimal text of a two's-complement little-endian integer of any length.
fn bigint_decimal(le: &[u8]) -> String {
    let negative = le.last().is_some_and(|&b| b & 0x80 != 0);
    // Magnitude, little-endian bytes.
    let mut mag: Vec<u8> = le.to_vec();
    if negative {
        let mut carry = 1u16;
        for b in mag.iter_mut() {
            let v = (!*b) as u16 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
    }
    // Base-2^32 limbs, most significant first, divided repeatedly by 10^9.
    let mut limbs: Vec<u32> =
        mag.chunks(4).rev().map(|c| c.iter().rev().fold(0u32, |acc, &b| (acc << 8) | b as u32)).collect();
    let mut chunks = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem = 0u64;
        for l in limbs.iter_mut() {
            let cur = (rem << 32) | *l as u64;
            *l = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
        while limbs.first() == Some(&0) {
            limbs.remove(0);
        }
    }
    let mut out = String::from(if negative { "-" } else { "" });
    match chunks.split_last() {
        None => out.push('0'),
        Some((top, rest)) => {
            out.push_str(&top.to_string());
            for c in rest.iter().rev() {
                out.push_str(&format!("{c:09}"));
            }
        }
    }
    out
}
