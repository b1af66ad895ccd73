//! Reading a JSON file one top-level element at a time.
//!
//! `serde_json` parses the file incrementally (from a buffered reader, so
//! memory holds one element's text, not the file); each element of a
//! top-level array, or each value of a top-level object, is handed to a
//! Python callback as its JSON text as soon as it is parsed. The caller
//! writes it on (`bale.Writer.append_json`), so memory stays bounded by the
//! largest element. Any
//! other top-level value is handed over whole.

use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::errors::os_error;

/// What the top level was, and how many elements were handed over.
struct Walk<'a, 'py> {
    py: Python<'py>,
    on_item: &'a Bound<'py, PyAny>,
    on_entry: &'a Bound<'py, PyAny>,
    count: usize,
    kind: &'static str,
    /// An exception raised by a callback: it stops the parse and is
    /// raised as it is.
    failed: Option<PyErr>,
}

impl<'a, 'py> Walk<'a, 'py> {
    fn call<E: de::Error>(&mut self, f: &Bound<'py, PyAny>, args: impl pyo3::call::PyCallArgs<'py>) -> Result<(), E> {
        match f.call1(args) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.failed = Some(e);
                Err(E::custom("stopped by the callback"))
            }
        }
    }
}

impl<'de, 'a, 'py> DeserializeSeed<'de> for &mut Walk<'a, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a, 'py> Visitor<'de> for &mut Walk<'a, 'py> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.kind = "array";
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            // Bytes: a copy, where a str would decode the UTF-8 again.
            let text = pyo3::types::PyBytes::new(self.py, raw.get().as_bytes());
            drop(raw);
            let f = self.on_item.clone();
            self.call(&f, (text,))?;
            self.count += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.kind = "object";
        while let Some(key) = map.next_key::<String>()? {
            let raw = map.next_value::<Box<RawValue>>()?;
            let text = pyo3::types::PyBytes::new(self.py, raw.get().as_bytes());
            drop(raw);
            let f = self.on_entry.clone();
            self.call(&f, (key, text))?;
            self.count += 1;
        }
        Ok(())
    }

    // Any other top-level value (a scalar) is read again whole afterwards.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Reads the JSON file at `path` incrementally: for a top-level array,
/// calls `on_item(text)` with the JSON text (UTF-8 bytes) of each element
/// in turn; for a top-level object, `on_entry(key, text)` for each member;
/// for any other value, `on_value(text)` once with the whole text (a str). Returns
/// `(kind, count)`: `"array"`, `"object"` or `"value"`, and the number of
/// elements handed over. Malformed JSON raises `ValueError` naming the
/// file, the line, column and byte offset, and the element's index (or
/// key); an exception raised by a callback propagates unchanged.
#[pyfunction]
pub fn stream_json<'py>(
    py: Python<'py>,
    path: PathBuf,
    on_item: Bound<'py, PyAny>,
    on_entry: Bound<'py, PyAny>,
    on_value: Bound<'py, PyAny>,
) -> PyResult<(&'static str, usize)> {
    let open = || -> PyResult<BufReader<File>> {
        let file = File::open(&path).map_err(|e| os_error(e, &path))?;
        Ok(BufReader::with_capacity(1 << 20, file))
    };
    let mut walk = Walk { py, on_item: &on_item, on_entry: &on_entry, count: 0, kind: "value", failed: None };
    let mut de = serde_json::Deserializer::from_reader(open()?);
    let parsed = (&mut walk).deserialize(&mut de).and_then(|()| de.end());
    if let Some(e) = walk.failed.take() {
        return Err(e);
    }
    match parsed {
        Ok(()) if walk.kind != "value" => Ok((walk.kind, walk.count)),
        Ok(()) => {
            // A scalar at the top: small enough to read whole.
            let mut text = String::new();
            let mut r = open()?;
            r.read_to_string(&mut text).map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    PyValueError::new_err(format!("{}: not UTF-8 text", path.display()))
                } else {
                    os_error(e, &path)
                }
            })?;
            on_value.call1((text,))?;
            Ok(("value", 1))
        }
        Err(e) => Err(malformed(&path, &e, walk.kind, walk.count)),
    }
}

fn malformed(path: &std::path::Path, e: &serde_json::Error, kind: &str, count: usize) -> PyErr {
    let mut text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    if let Some(t) = text.strip_suffix(&suffix) {
        text = t.to_string();
    }
    let place = match kind {
        "array" => format!(", in element {count} of the top-level array"),
        "object" => format!(", in member {count} of the top-level object"),
        _ => String::new(),
    };
    PyValueError::new_err(format!(
        "{}: line {} column {}{}: malformed JSON ({})",
        path.display(),
        e.line(),
        e.column(),
        place,
        text
    ))
}
