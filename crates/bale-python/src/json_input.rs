//! `bale.compact_json`: JSON text to a region through the core's JSON
//! source (`bale_core::json_source`), with no Python object made, and the
//! text a caller hands to `Writer.append_json` / `Writer.set_json`.
//!
//! The result is the region `compact(json.loads(text))` gives, byte for
//! byte. Where the core's parser refuses a text (malformed JSON, and the
//! few things `json.loads` reads that it does not: lone surrogate escapes,
//! a byte order mark, UTF-16 or UTF-32 bytes, an int beyond the digit
//! limit), the text goes through `json.loads` instead, which reads it or
//! raises its own error (`json.JSONDecodeError` with line and column).

use bale_core::json_doc::{JsonDoc, JsonParser};
use bale_core::json_source::JsonSource;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};

use crate::region::Region;
use crate::storage::Storage;

/// `sys.get_int_max_str_digits` (`None` on a Python without it), found once.
static INT_DIGITS: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();

/// Texts shorter than this are parsed with the GIL held: letting it go and
/// taking it back costs more than parsing a short record.
const DETACH_MIN_BYTES: usize = 64 << 10;

/// `sys.get_int_max_str_digits()`, asked at each call since a program may
/// change it (0: no limit, or a Python without one).
fn max_int_digits(py: Python<'_>) -> PyResult<usize> {
    let f = INT_DIGITS.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import(pyo3::intern!(py, "sys"))?
            .getattr(pyo3::intern!(py, "get_int_max_str_digits"))
            .ok()
            .map(Bound::unbind))
    })?;
    match f {
        Some(f) => f.bind(py).call0()?.extract(),
        None => Ok(0),
    }
}

/// `json.loads(text)`.
pub fn loads<'py>(py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    py.import(pyo3::intern!(py, "json"))?.call_method1(pyo3::intern!(py, "loads"), (text,))
}

/// `text` parsed by the core with `parser` (without the GIL for a long
/// text), or `None` when it is to go through `json.loads` (see the
/// module's notes).
pub fn parse_text<'p>(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    parser: &'p mut JsonParser,
) -> PyResult<Option<&'p JsonDoc>> {
    let digits = max_int_digits(py)?;
    let bytes: &[u8] = if let Ok(b) = text.cast::<PyBytes>() {
        b.as_bytes()
    } else if let Ok(s) = text.cast::<PyString>() {
        match s.to_str() {
            Ok(s) => s.as_bytes(),
            // Lone surrogates have no UTF-8: `json.loads` reads them.
            Err(_) => return Ok(None),
        }
    } else {
        // A bytearray or memoryview is read by `json.loads` (or refused there).
        return Ok(None);
    };
    let parsed = if bytes.len() < DETACH_MIN_BYTES {
        parser.parse(bytes, digits)
    } else {
        py.detach(|| parser.parse(bytes, digits))
    };
    Ok(parsed.ok())
}

/// A region of JSON text: `compact(json.loads(text))`, made without Python
/// objects where the core reads the text.
#[pyfunction]
pub fn compact_json(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Py<Region>> {
    let mut parser = JsonParser::default();
    let Some(doc) = parse_text(py, text, &mut parser)? else {
        return crate::compact(py, &loads(py, text)?, false);
    };
    let write = || {
        let mut source = JsonSource::new(doc, crate::spare_buffer::builder(bale_core::writer::FIRST_CAPACITY));
        let root = source.run();
        // The checksum is written when the bytes are first read as bytes
        // (Note [The checksum written late] in storage.rs), as `compact`'s.
        source.builder.finish_unsummed(root)
    };
    let bytes = if doc.nodes.len() < DETACH_MIN_BYTES / 16 { write() } else { py.detach(write) };
    crate::new_region(py, Region::adopt(py, Storage::owned_unsummed(bytes), false)?.written_here())
}
