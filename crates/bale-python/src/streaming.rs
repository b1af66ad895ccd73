//! `bale.Writer`: a region built on disk item by item.
//!
//! Each item is compacted on its own, with offsets of where it lands in the
//! file, and written out at once: memory holds one item plus a slot per
//! item (and, for a dict root, its keys). Dict key sequences are shared
//! across items by content. Closing writes the root container, then the
//! header with the checksum of the whole file, fsyncs and moves the file
//! into place; until then nothing exists at the path, and a process killed
//! before leaves no file behind (see `files.rs`).
//!
//! A list root of records (dicts of one key sequence whose values are
//! scalars or lists of scalars) is gathered by column instead and written
//! as a TABLE on closing, as `compact` stores such a list (see
//! `stream_table.rs`): memory then holds the columns' data, about the
//! size of the table in the file, not the records.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use bale_core::format::{HEADER_LEN, OFF_CHECKSUM, SLOT_EMPTY_LIST};
use bale_core::{header_bytes, Builder, ChecksumStream};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rustc_hash::FxHashMap;

use bale_core::json_doc::{JsonDoc, JsonParser};
use bale_core::json_source::JsonSource;
use bale_core::streamed::Sink;

use crate::compactor::Compactor;
use crate::errors::os_error;
use crate::files::Pending;
use crate::json_input;
use crate::stream_table::Table;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Root {
    Unset,
    List,
    Dict,
}

struct Open {
    file: BufWriter<File>,
    pending: Pending,
    pos: usize,
    root: Root,
    /// Slots of the list items, or of the dict values.
    slots: Vec<u64>,
    keys: Vec<u64>,
    hashes: Vec<u64>,
    shapes: FxHashMap<Box<[u8]>, u64>,
    types: FxHashMap<String, u64>,
    flags: u32,
    /// The records of a list root gathered by column, while they fit.
    table: Option<Table>,
    /// Set once the items are not (or no longer) gathered as a table.
    no_table: bool,
    /// The root, once the table is written.
    table_root: Option<u64>,
}

/// Builds a region file item by item: `append(value)` for a list root,
/// `w[key] = value` for a dict root. Use as a context manager: leaving the
/// block by an exception removes the partial file.
#[pyclass(module = "bale", name = "Writer")]
pub struct Writer {
    path: PathBuf,
    state: Option<Open>,
    key_index: Py<PyDict>,
    done: bool,
    /// Parses the text `append_json` and `set_json` are given.
    json: JsonParser,
}

impl Writer {
    fn open_state(&mut self) -> PyResult<&mut Open> {
        match self.state.as_mut() {
            Some(s) => Ok(s),
            None => {
                Err(PyValueError::new_err(if self.done { "the writer is closed" } else { "the writer was aborted" }))
            }
        }
    }

    /// Compacts `value` at the end of the file; returns its slot. Errors
    /// name the value `name` (its place in the root: `root[3]`, `root['k']`).
    fn put(&mut self, py: Python<'_>, value: &Bound<'_, PyAny>, name: String) -> PyResult<u64> {
        let st = self.open_state()?;
        let mut c = Compactor::new(py, 0).at_offset(st.pos).named(name);
        c.shapes_by_content = Some(std::mem::take(&mut st.shapes));
        c.types_by_content = Some(std::mem::take(&mut st.types));
        let result = c.run(value);
        st.shapes = c.shapes_by_content.take().unwrap_or_default();
        st.types = c.types_by_content.take().unwrap_or_default();
        if result.is_err() {
            // Nothing of a failed item is written: forget what it made.
            let pos = st.pos as u64;
            st.shapes.retain(|_, &mut s| s < pos);
            st.types.retain(|_, &mut s| s < pos);
        }
        let slot = result?;
        st.flags |= c.flags();
        let written = write_bytes(st, c.builder.new_bytes());
        self.abort_on_error(written)?;
        Ok(slot)
    }

    /// Writes a parsed JSON text at the end of the file, as `put` writes
    /// what `json.loads` makes of it; returns its slot.
    fn put_json(&mut self, doc: &JsonDoc) -> PyResult<u64> {
        let st = self.open_state()?;
        let mut source = JsonSource::new(doc, Builder::continuing(st.pos, 1 << 12));
        source.shapes_by_content = Some(std::mem::take(&mut st.shapes));
        let slot = source.run();
        st.shapes = source.shapes_by_content.take().unwrap_or_default();
        let written = write_bytes(st, source.builder.new_bytes());
        self.abort_on_error(written)?;
        Ok(slot)
    }

    /// A write that failed part-way leaves the file out of step with what
    /// the writer knows: the writer is aborted (nothing is left at the
    /// path, later calls say so), and the error names the path.
    fn abort_on_error(&mut self, written: std::io::Result<()>) -> PyResult<()> {
        written.map_err(|e| {
            self.abort_file();
            os_error(e, &self.path)
        })
    }

    fn root(&mut self, want: Root) -> PyResult<()> {
        let st = self.open_state()?;
        match st.root {
            Root::Unset => st.root = want,
            r if r == want => {}
            Root::List => {
                return Err(PyTypeError::new_err("this writer's root is a list: use append(), not w[key] = value"))
            }
            Root::Dict => {
                return Err(PyTypeError::new_err("this writer's root is a dict: use w[key] = value, not append()"))
            }
        }
        Ok(())
    }

    /// Writes the rows gathered as a table row by row (the table is given
    /// up); later items are written row by row too.
    fn give_up_table(&mut self, py: Python<'_>) -> PyResult<()> {
        let st = self.open_state()?;
        st.no_table = true;
        let Some(table) = st.table.take() else { return Ok(()) };
        for i in 0..table.rows {
            let row = table.row(py, i)?;
            let slot = self.put(py, row.as_any(), format!("root[{i}]"))?;
            self.open_state()?.slots.push(slot);
        }
        Ok(())
    }

    /// Writes the gathered table: its keys and shape, each column, then
    /// the TABLE, which becomes the root. Too few rows for a table (as
    /// `compact` counts), or offsets beyond u32: written row by row.
    fn write_table(&mut self, py: Python<'_>) -> PyResult<()> {
        let st = self.open_state()?;
        let Some(table) = st.table.take() else { return Ok(()) };
        if table.rows < bale_core::layout::TABLE_MIN_ROWS || !table.writable() {
            st.table = Some(table);
            return self.give_up_table(py);
        }
        let mut c = Compactor::new(py, 0).at_offset(st.pos);
        let mut keys = Vec::with_capacity(table.keys.len());
        let mut hashes = Vec::with_capacity(table.keys.len());
        for key in &table.keys {
            let (slot, hash) = c.run_key(key.bind(py))?;
            keys.push(slot);
            hashes.push(hash);
        }
        let rows = table.rows;
        let result = (|| -> std::io::Result<u64> {
            write_bytes(st, c.builder.new_bytes())?;
            let mut b = Builder::continuing(st.pos, 64 + 16 * keys.len());
            let shape = b.shape(&keys, &hashes);
            write_bytes(st, b.new_bytes())?;
            // The columns are copied without the GIL (other threads run).
            let cols = py.detach(|| table.write_columns(&mut *st))?;
            let mut b = Builder::continuing(st.pos, 16 + 8 * cols.len());
            let root = b.table_object(rows, shape, &cols);
            write_bytes(st, b.new_bytes())?;
            Ok(root)
        })();
        match result {
            Ok(root) => {
                self.open_state()?.table_root = Some(root);
                Ok(())
            }
            Err(e) => {
                self.abort_file();
                Err(os_error(e, &self.path))
            }
        }
    }

    fn abort_file(&mut self) {
        if let Some(st) = self.state.take() {
            // Buffered bytes are dropped, not written: in a forked child the
            // descriptor (and its offset) is the parent's too. An unnamed
            // file goes with its descriptor; a named one is removed (by the
            // process that made it).
            let (file, _unwritten) = st.file.into_parts();
            drop(file);
            drop(st.pending);
        }
    }

    fn finish(&mut self) -> PyResult<()> {
        let mut st = match self.state.take() {
            Some(st) => st,
            None => return Ok(()),
        };
        let path = self.path.clone();
        let result = (move || -> std::io::Result<()> {
            let mut b = Builder::continuing(st.pos, 8 * st.slots.len() + 64);
            let root = match st.root {
                _ if st.table_root.is_some() => st.table_root.unwrap(),
                Root::Unset => SLOT_EMPTY_LIST,
                Root::List => b.seq(false, &st.slots),
                Root::Dict => {
                    let shape = b.shape(&st.keys, &st.hashes);
                    b.dict(shape, &st.slots)
                }
            };
            write_bytes(&mut st, b.new_bytes())?;
            let total = st.pos as u64;
            let mut header = header_bytes(total, root, st.flags);
            let mut file = st.file.into_inner().map_err(|e| e.into_error())?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(&header)?;
            // The checksum covers the header and everything after it.
            let mut sum = ChecksumStream::new(&header);
            file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                sum.update(&buf[..n]);
            }
            header[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.finish().to_le_bytes());
            file.seek(SeekFrom::Start(OFF_CHECKSUM as u64))?;
            file.write_all(&header[OFF_CHECKSUM..OFF_CHECKSUM + 8])?;
            st.pending.persist(&file)
        })();
        self.done = true;
        result.map_err(|e| os_error(e, &path))
    }
}

impl Sink for Open {
    fn pos(&self) -> usize {
        self.pos
    }
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        write_bytes(self, bytes)
    }
}

fn write_bytes(st: &mut Open, bytes: &[u8]) -> std::io::Result<()> {
    st.file.write_all(bytes)?;
    st.pos += bytes.len();
    Ok(())
}

/// An item to write: a Python value, or a parsed JSON text.
enum Item<'a, 'py> {
    Value(&'a Bound<'py, PyAny>),
    Json(&'a JsonDoc),
}

impl Writer {
    fn append_item(&mut self, py: Python<'_>, item: Item<'_, '_>) -> PyResult<()> {
        self.root(Root::List)?;
        let path = self.path.clone();
        let st = self.open_state()?;
        if !st.no_table {
            if st.table.is_none() {
                let table = match item {
                    Item::Value(value) => Table::for_first(value, &path),
                    Item::Json(doc) => Table::for_first_json(py, doc, doc.node(doc.root), &path)?,
                };
                match table {
                    Some(table) => st.table = Some(table),
                    None => st.no_table = true,
                }
            }
            if let Some(table) = st.table.as_mut() {
                let pushed = match item {
                    Item::Value(value) => table.push(value),
                    Item::Json(doc) => table.push_json(doc, doc.node(doc.root)),
                };
                if let Err(e) = pushed {
                    self.abort_file();
                    return Err(os_error(e, &self.path));
                }
                if pushed.unwrap() {
                    return Ok(());
                }
                self.give_up_table(py)?;
            }
        }
        let slot = match item {
            Item::Value(value) => {
                let name = format!("root[{}]", self.open_state()?.slots.len());
                self.put(py, value, name)?
            }
            Item::Json(doc) => self.put_json(doc)?,
        };
        self.open_state()?.slots.push(slot);
        Ok(())
    }

    fn set_item(&mut self, py: Python<'_>, key: &Bound<'_, PyAny>, item: Item<'_, '_>) -> PyResult<()> {
        self.root(Root::Dict)?;
        let index = self.key_index.clone_ref(py).into_bound(py);
        if index.contains(key)? {
            return Err(PyKeyError::new_err(format!(
                "{}: key {} was already written (a streamed dict takes each key once)",
                self.path.display(),
                key.repr()?
            )));
        }
        let st = self.open_state()?;
        let mut c = Compactor::new(py, 0).at_offset(st.pos);
        let (kslot, khash) = c.run_key(key)?;
        let written = write_bytes(st, c.builder.new_bytes());
        self.abort_on_error(written)?;
        let vslot = match item {
            Item::Value(value) => self.put(py, value, format!("root[{}]", key.repr()?))?,
            Item::Json(doc) => self.put_json(doc)?,
        };
        let st = self.open_state()?;
        st.keys.push(kslot);
        st.hashes.push(khash);
        st.slots.push(vslot);
        index.set_item(key, st.slots.len())?;
        Ok(())
    }
}

#[pymethods]
impl Writer {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        if path.file_name().is_none() {
            return Err(PyValueError::new_err(format!("{}: not a file path", path.display())));
        }
        let (file, pending) = crate::files::create(&path, "partial").map_err(|e| os_error(e, &path))?;
        let mut file = BufWriter::with_capacity(1 << 20, file);
        // Room for the header, written last.
        file.write_all(&[0u8; HEADER_LEN]).map_err(|e| os_error(e, &path))?;
        Ok(Writer {
            path,
            state: Some(Open {
                file,
                pending,
                pos: HEADER_LEN,
                root: Root::Unset,
                slots: Vec::new(),
                keys: Vec::new(),
                hashes: Vec::new(),
                shapes: FxHashMap::default(),
                types: FxHashMap::default(),
                flags: 0,
                table: None,
                no_table: false,
                table_root: None,
            }),
            key_index: PyDict::new(py).unbind(),
            done: false,
            json: JsonParser::default(),
        })
    }

    /// Adds `value` as the next item of a list root.
    fn append(&mut self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.append_item(py, Item::Value(value))
    }

    /// Adds the value of the JSON text `text` (str or bytes) as the next
    /// item of a list root: `append(json.loads(text))`, written byte for
    /// byte alike, with no Python object made where bale's parser reads
    /// the text (else through `json.loads`, which raises its own errors).
    fn append_json(&mut self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<()> {
        self.root(Root::List)?;
        // The parser's buffers serve every item (taken out while in use).
        let mut parser = std::mem::take(&mut self.json);
        let result = match json_input::parse_text(py, text, &mut parser) {
            Ok(Some(doc)) => self.append_item(py, Item::Json(doc)),
            Ok(None) => json_input::loads(py, text).and_then(|v| self.append_item(py, Item::Value(&v))),
            Err(e) => Err(e),
        };
        self.json = parser;
        result
    }

    /// Adds `key: value` to a dict root (each key once).
    fn __setitem__(&mut self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_item(py, key, Item::Value(value))
    }

    /// Adds `key` with the value of the JSON text `text` to a dict root:
    /// `w[key] = json.loads(text)`, as `append_json` is to `append`.
    fn set_json(&mut self, py: Python<'_>, key: &Bound<'_, PyAny>, text: &Bound<'_, PyAny>) -> PyResult<()> {
        self.root(Root::Dict)?;
        let mut parser = std::mem::take(&mut self.json);
        let result = match json_input::parse_text(py, text, &mut parser) {
            Ok(Some(doc)) => self.set_item(py, key, Item::Json(doc)),
            Ok(None) => json_input::loads(py, text).and_then(|v| self.set_item(py, key, Item::Value(&v))),
            Err(e) => Err(e),
        };
        self.json = parser;
        result
    }

    /// Items written so far.
    fn __len__(&self) -> usize {
        self.state.as_ref().map_or(0, |s| s.slots.len() + s.table.as_ref().map_or(0, |t| t.rows))
    }

    /// Bytes written so far.
    #[getter]
    fn nbytes(&self) -> usize {
        self.state.as_ref().map_or(0, |s| s.pos)
    }

    /// Finishes the file and moves it into place (atomically).
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.state.is_some() {
            self.write_table(py)?;
        }
        py.detach(|| self.finish())
    }

    /// Discards everything written: nothing is left at the path.
    fn abort(&mut self) {
        self.abort_file();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some() {
            self.abort_file();
        } else {
            self.close(py)?;
        }
        Ok(false)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Never closed: leave nothing behind.
        self.abort_file();
    }
}
