//! Records streamed into a `bale.Writer` gathered by column, so that a
//! streamed list of records is stored as a TABLE as `compact` stores one.
//!
//! A TABLE's columns are each one list-like object of all the rows (the
//! format has no way to chain several tables into one flat list), so the
//! writer gathers every column's data as raw numbers, code units and
//! offsets in *streams* that spill to an unnamed temporary file beside the
//! output in chunks of `CHUNK` bytes: memory holds one chunk per stream,
//! not the columns. Closing copies each column from its streams into the
//! file, then writes the TABLE. Rows that do not fit (another key sequence,
//! values other than None, bools, ints and floats of 64 bits, strs and
//! lists of those) end the table: the rows gathered so far are read back
//! and written row by row, as are all later items.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::ptr::addr_of_mut;

use bale_core::format::{Width, SLOT_EMPTY_LIST, SLOT_FALSE, SLOT_NONE, SLOT_TRUE};
use bale_core::json_doc::{JsonDoc, JsonNode};
use bale_core::layout::TABLE_MAX_KEYS;
use bale_core::streamed::{self, Sink};
use bale_core::Builder;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::ffi::pylist;
use crate::ffi::pyunicode::str_units;
use crate::files::Pending;

/// Bytes a stream holds in memory before they go to the spill file.
pub const CHUNK: usize = 256 << 10;

/// Where full chunks of every stream go: an unnamed temporary file in the
/// output's directory, made at the first full chunk. Where the file
/// system has no unnamed files, a named one is removed at once (its
/// descriptor keeps it): a killed writer leaves nothing behind.
pub struct Spill {
    target: std::path::PathBuf,
    file: Option<(File, Pending)>,
    end: u64,
}

fn spill_file(target: &Path) -> io::Result<(File, Pending)> {
    let (file, pending) = crate::files::create(target, "columns")?;
    if let Some(named) = pending.named_path() {
        std::fs::remove_file(named)?;
    }
    Ok((file, pending))
}

impl Spill {
    pub fn new(target: &Path) -> Spill {
        Spill { target: target.to_path_buf(), file: None, end: 0 }
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        if self.file.is_none() {
            self.file = Some(spill_file(&self.target)?);
        }
        let (file, _) = self.file.as_ref().unwrap();
        let at = self.end;
        file.write_all_at(bytes, at)?;
        self.end += bytes.len() as u64;
        Ok(at)
    }

    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        self.file.as_ref().expect("spilled").0.read_exact_at(buf, at)
    }
}

/// Bytes appended in order: full chunks in the spill file, the rest here.
#[derive(Default)]
struct Stream {
    chunks: Vec<u64>,
    tail: Vec<u8>,
}

impl Stream {
    fn len(&self) -> u64 {
        (self.chunks.len() * CHUNK + self.tail.len()) as u64
    }

    fn push(&mut self, sp: &mut Spill, mut bytes: &[u8]) -> io::Result<()> {
        while self.tail.len() + bytes.len() >= CHUNK {
            let take = CHUNK - self.tail.len();
            self.tail.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            self.chunks.push(sp.append(&self.tail)?);
            self.tail.clear();
        }
        self.tail.extend_from_slice(bytes);
        Ok(())
    }

    fn push_u64(&mut self, sp: &mut Spill, v: u64) -> io::Result<()> {
        self.push(sp, &v.to_le_bytes())
    }

    fn read_at(&self, sp: &Spill, mut at: u64, mut out: &mut [u8]) -> io::Result<()> {
        while !out.is_empty() {
            let (c, o) = ((at / CHUNK as u64) as usize, (at % CHUNK as u64) as usize);
            let n = out.len().min(CHUNK - o);
            let (now, rest) = out.split_at_mut(n);
            if c < self.chunks.len() {
                sp.read_at(now, self.chunks[c] + o as u64)?;
            } else {
                now.copy_from_slice(&self.tail[o..o + n]);
            }
            out = rest;
            at += n as u64;
        }
        Ok(())
    }

    fn u64_at(&self, sp: &Spill, i: u64) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.read_at(sp, 8 * i, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Its bytes in order.
    fn reader<'a>(&'a self, sp: &'a Spill) -> BufReader<StreamReader<'a>> {
        BufReader::with_capacity(1 << 16, StreamReader { stream: self, sp, at: 0 })
    }
}

struct StreamReader<'a> {
    stream: &'a Stream,
    sp: &'a Spill,
    at: u64,
}

impl Read for StreamReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.stream.len() - self.at).min(buf.len() as u64) as usize;
        self.stream.read_at(self.sp, self.at, &mut buf[..n])?;
        self.at += n as u64;
        Ok(n)
    }
}

/// A scalar read back from a column.
enum Cell {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Width, Vec<u8>),
}

/// What a scalar is, read once from the Python object.
enum Scalar<'a> {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Width, &'a [u8]),
}

unsafe fn scalar<'a>(obj: *mut ffi::PyObject) -> Option<Scalar<'a>> {
    let tp = ffi::Py_TYPE(obj);
    if tp == addr_of_mut!(ffi::PyUnicode_Type) {
        let (w, u) = str_units(obj);
        return Some(Scalar::Str(w, u));
    }
    if tp == addr_of_mut!(ffi::PyLong_Type) {
        let mut overflow = 0;
        let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
        if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
            ffi::PyErr_Clear();
            return None;
        }
        return Some(Scalar::Int(v));
    }
    if tp == addr_of_mut!(ffi::PyFloat_Type) {
        return Some(Scalar::Float(crate::ffi::pyfloat::value(obj)));
    }
    if obj == ffi::Py_None() {
        return Some(Scalar::None);
    }
    if obj == ffi::Py_True() {
        return Some(Scalar::Bool(true));
    }
    if obj == ffi::Py_False() {
        return Some(Scalar::Bool(false));
    }
    None
}

/// What a JSON value is as a scalar, as `scalar` reads what `json.loads`
/// makes of it (`None`: no scalar, or an int outside i64).
fn json_scalar<'a>(doc: &'a JsonDoc, node: JsonNode) -> Option<Scalar<'a>> {
    Some(match node {
        JsonNode::Null => Scalar::None,
        JsonNode::Bool(b) => Scalar::Bool(b),
        JsonNode::Int(v) => Scalar::Int(v),
        JsonNode::Float(f) => Scalar::Float(f),
        JsonNode::Str(s) => Scalar::Str(s.width, doc.str_units(s)),
        JsonNode::BigInt { .. } | JsonNode::Array { .. } | JsonNode::Object { .. } => return None,
    })
}

/// What the scalars of a column (or the items of its lists) have in common.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Empty,
    Ints,
    Floats,
    /// Strings all of one width (a STR_COLUMN holds no other).
    Strs(Width),
    Mixed,
}

/// The scalars of a column: `data` holds i64 words (Ints), binary64 bit
/// patterns (Floats), code units (Strs) or encoded cells (Mixed: a tag
/// byte, then 8 bytes of a number, or a width byte and a string's units);
/// `offs` the u64 offsets `0..=n` of the strings (in units) or cells (in
/// bytes).
struct Scalars {
    kind: Kind,
    /// With `Kind::Ints`: every int fits 32 bits (a table's own column of
    /// them is then an INT32_LIST, as `compact` writes it).
    int32: bool,
    n: u64,
    data: Stream,
    offs: Stream,
}

impl Scalars {
    fn new() -> Scalars {
        Scalars { kind: Kind::Empty, int32: true, n: 0, data: Stream::default(), offs: Stream::default() }
    }

    fn cell(&self, sp: &Spill, i: u64) -> io::Result<Cell> {
        let word = |sp| self.data.u64_at(sp, i);
        Ok(match self.kind {
            Kind::Empty => unreachable!("no items"),
            Kind::Ints => Cell::Int(word(sp)? as i64),
            Kind::Floats => Cell::Float(f64::from_bits(word(sp)?)),
            Kind::Strs(w) => {
                let (a, b) = (self.offs.u64_at(sp, i)?, self.offs.u64_at(sp, i + 1)?);
                let unit = w.unit() as u64;
                let mut u = vec![0u8; ((b - a) * unit) as usize];
                self.data.read_at(sp, a * unit, &mut u)?;
                Cell::Str(w, u)
            }
            Kind::Mixed => {
                let (a, b) = (self.offs.u64_at(sp, i)?, self.offs.u64_at(sp, i + 1)?);
                let mut c = vec![0u8; (b - a) as usize];
                self.data.read_at(sp, a, &mut c)?;
                let num = || u64::from_le_bytes(c[1..9].try_into().unwrap());
                match c[0] {
                    0 => Cell::None,
                    1 => Cell::Bool(false),
                    2 => Cell::Bool(true),
                    3 => Cell::Int(num() as i64),
                    4 => Cell::Float(f64::from_bits(num())),
                    _ => Cell::Str(Width::from_code(c[1] as u64), c[2..].to_vec()),
                }
            }
        })
    }

    fn push_cell(&mut self, sp: &mut Spill, s: &Scalar<'_>) -> io::Result<()> {
        let mut c = [0u8; 9];
        let bytes: &[u8] = match *s {
            Scalar::None => &[0],
            Scalar::Bool(b) => &[1 + b as u8],
            Scalar::Int(x) => {
                c[0] = 3;
                c[1..].copy_from_slice(&x.to_le_bytes());
                &c
            }
            Scalar::Float(f) => {
                c[0] = 4;
                c[1..].copy_from_slice(&f.to_bits().to_le_bytes());
                &c
            }
            Scalar::Str(w, u) => {
                self.data.push(sp, &[5, w as u8])?;
                u
            }
        };
        self.data.push(sp, bytes)?;
        self.offs.push_u64(sp, self.data.len())
    }

    /// Turns the scalars so far into cells (a column meets a second kind).
    fn make_mixed(&mut self, sp: &mut Spill) -> io::Result<()> {
        let mut m = Scalars { kind: Kind::Mixed, int32: false, n: 0, data: Stream::default(), offs: Stream::default() };
        m.offs.push_u64(sp, 0)?;
        for i in 0..self.n {
            let s = match self.cell(sp, i)? {
                Cell::None => m.push_cell(sp, &Scalar::None),
                Cell::Bool(b) => m.push_cell(sp, &Scalar::Bool(b)),
                Cell::Int(x) => m.push_cell(sp, &Scalar::Int(x)),
                Cell::Float(f) => m.push_cell(sp, &Scalar::Float(f)),
                Cell::Str(w, u) => m.push_cell(sp, &Scalar::Str(w, &u)),
            };
            s?;
            m.n += 1;
        }
        *self = m;
        Ok(())
    }

    fn push(&mut self, sp: &mut Spill, s: Scalar<'_>) -> io::Result<()> {
        match (self.kind, &s) {
            (Kind::Empty, Scalar::Int(_)) => self.kind = Kind::Ints,
            (Kind::Empty, Scalar::Float(_)) => self.kind = Kind::Floats,
            (Kind::Empty, Scalar::Str(w, _)) => {
                self.kind = Kind::Strs(*w);
                self.offs.push_u64(sp, 0)?;
            }
            (Kind::Empty, _) => {
                self.kind = Kind::Mixed;
                self.offs.push_u64(sp, 0)?;
            }
            (Kind::Ints, Scalar::Int(_)) | (Kind::Floats, Scalar::Float(_)) | (Kind::Mixed, _) => {}
            (Kind::Strs(w), Scalar::Str(v, _)) if w == *v => {}
            _ => self.make_mixed(sp)?,
        }
        match (self.kind, s) {
            (Kind::Ints, Scalar::Int(x)) => {
                self.int32 &= bale_core::num_list::fits_int32(x);
                self.data.push_u64(sp, x as u64)?
            }
            (Kind::Floats, Scalar::Float(f)) => self.data.push_u64(sp, f.to_bits())?,
            (Kind::Strs(w), Scalar::Str(_, u)) => {
                self.data.push(sp, u)?;
                self.offs.push_u64(sp, self.data.len() / w.unit() as u64)?;
            }
            (_, s) => self.push_cell(sp, &s)?,
        }
        self.n += 1;
        Ok(())
    }

    /// Writes the scalars as one list-like object (a table's own column,
    /// `column`, of ints that all fit 32 bits as an INT32_LIST, of None,
    /// bools and small ints as a SLOT32_COLUMN); returns its slot.
    fn write(self, sp: &mut Spill, out: &mut dyn Sink, column: bool) -> io::Result<u64> {
        match self.kind {
            Kind::Empty => return Ok(SLOT_EMPTY_LIST),
            Kind::Ints if column && self.int32 => {
                return streamed::int32_list(out, self.n, &mut self.data.reader(sp));
            }
            Kind::Ints | Kind::Floats => {
                return streamed::num_list(out, self.kind == Kind::Floats, self.n, &mut self.data.reader(sp));
            }
            // A STR_COLUMN while its offsets fit u32; else slots.
            Kind::Strs(w) if streamed::str_column_fits(w, self.data.len()) => {
                let (mut offsets, mut units) = (self.offs.reader(sp), self.data.reader(sp));
                return streamed::str_column(out, w, self.n, &mut offsets, &mut units, self.data.len());
            }
            _ => {}
        }
        // Slots: the strings and numbers they reference first, then a LIST
        // (a table's own column of None, bools and small ints, which
        // reference nothing: a SLOT32_COLUMN, as `compact` writes it).
        let mut slots = Stream::default();
        let mut b = Builder::continuing(out.pos(), 1 << 20);
        let mut small = column;
        for i in 0..self.n {
            let slot = match self.cell(sp, i)? {
                Cell::None => SLOT_NONE,
                Cell::Bool(true) => SLOT_TRUE,
                Cell::Bool(false) => SLOT_FALSE,
                Cell::Int(x) => b.int(x),
                Cell::Float(f) => b.float(f),
                Cell::Str(w, u) => b.str_units(w, &u),
            };
            slots.push_u64(sp, slot)?;
            small &= bale_core::columns::slot32_cell(slot).is_some();
            if b.new_bytes().len() >= 1 << 20 {
                out.put(b.new_bytes())?;
                b = Builder::continuing(out.pos(), 1 << 20);
            }
        }
        out.put(b.new_bytes())?;
        if small && self.n > 0 {
            return streamed::slot32_column(out, self.n, &mut slots.reader(sp));
        }
        streamed::list(out, self.n, &mut slots.reader(sp))
    }
}

impl Cell {
    fn into_object(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unsafe {
            let p = match self {
                Cell::None => return Ok(py.None()),
                Cell::Bool(b) => return Ok(pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind()),
                Cell::Int(x) => ffi::PyLong_FromLongLong(x),
                Cell::Float(f) => ffi::PyFloat_FromDouble(f),
                Cell::Str(w, u) => {
                    let unit = w.unit();
                    ffi::PyUnicode_FromKindAndData(
                        unit as i32,
                        u.as_ptr() as *const std::ffi::c_void,
                        (u.len() / unit) as ffi::Py_ssize_t,
                    )
                }
            };
            Bound::from_owned_ptr_or_err(py, p).map(Bound::unbind)
        }
    }
}

/// One column: scalars, or lists of scalars (`offs`, n + 1 u64 offsets
/// into the items).
enum Column {
    Unset,
    Scalars(Scalars),
    Lists { offs: Stream, items: Scalars },
}

impl Column {
    /// Adds one cell of a Python row; false (perhaps with some of its
    /// items added) when it does not fit.
    unsafe fn push(&mut self, sp: &mut Spill, obj: *mut ffi::PyObject) -> io::Result<bool> {
        if ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyList_Type) {
            self.push_list(sp, pylist::items(obj).iter().map(|&item| scalar(item)))
        } else {
            self.push_scalar(sp, scalar(obj))
        }
    }

    /// Adds one cell of a JSON row, as `push` adds what `json.loads` makes of it.
    fn push_json(&mut self, sp: &mut Spill, doc: &JsonDoc, node: JsonNode) -> io::Result<bool> {
        match node {
            JsonNode::Array { start, len } => {
                self.push_list(sp, doc.array_items(start, len).iter().map(|&i| json_scalar(doc, doc.node(i))))
            }
            _ => self.push_scalar(sp, json_scalar(doc, node)),
        }
    }

    /// Adds a cell that is a scalar (`None`: something else).
    fn push_scalar(&mut self, sp: &mut Spill, cell: Option<Scalar<'_>>) -> io::Result<bool> {
        if let Column::Unset = self {
            *self = Column::Scalars(Scalars::new());
        }
        match (self, cell) {
            (Column::Scalars(s), Some(v)) => {
                s.push(sp, v)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Adds a cell that is a list of these items (`None`: an item that is no scalar).
    fn push_list<'a>(
        &mut self,
        sp: &mut Spill,
        cell: impl IntoIterator<Item = Option<Scalar<'a>>>,
    ) -> io::Result<bool> {
        if let Column::Unset = self {
            let mut offs = Stream::default();
            offs.push_u64(sp, 0)?;
            *self = Column::Lists { offs, items: Scalars::new() };
        }
        let Column::Lists { offs, items } = self else { return Ok(false) };
        for item in cell {
            match item {
                Some(v) => items.push(sp, v)?,
                None => return Ok(false),
            }
        }
        offs.push_u64(sp, items.n)?;
        Ok(true)
    }

    fn to_py(&self, py: Python<'_>, sp: &Spill, i: u64) -> PyResult<Py<PyAny>> {
        let io = |e: io::Error| crate::errors::os_error(e, &sp.target);
        match self {
            Column::Unset => unreachable!("a column of rows"),
            Column::Scalars(s) => s.cell(sp, i).map_err(io)?.into_object(py),
            Column::Lists { offs, items } => {
                let list = pyo3::types::PyList::empty(py);
                for j in offs.u64_at(sp, i).map_err(io)?..offs.u64_at(sp, i + 1).map_err(io)? {
                    list.append(items.cell(sp, j).map_err(io)?.into_object(py)?)?;
                }
                Ok(list.into_any().unbind())
            }
        }
    }

    fn write(self, sp: &mut Spill, rows: u64, out: &mut dyn Sink) -> io::Result<u64> {
        match self {
            Column::Unset => unreachable!("a column of rows"),
            Column::Scalars(s) => s.write(sp, out, true),
            Column::Lists { offs, items } => {
                let child = items.write(sp, out, false)?;
                streamed::list_column(out, rows, child, &mut offs.reader(sp))
            }
        }
    }
}

/// The rows of a streamed list, gathered by column.
pub struct Table {
    pub keys: Vec<Py<PyAny>>,
    /// The keys' code units (all keys are strs).
    key_units: Vec<(Width, Vec<u8>)>,
    columns: Vec<Column>,
    pub rows: usize,
    sp: Spill,
}

/// Whether two keys have the same content (both exact strs).
unsafe fn same_key(a: *mut ffi::PyObject, b: *mut ffi::PyObject) -> bool {
    a == b || (ffi::Py_TYPE(b) == addr_of_mut!(ffi::PyUnicode_Type) && str_units(a) == str_units(b))
}

impl Table {
    /// A table for records like `first` (a dict of 1 to 64 str keys), or
    /// `None`; its streams spill beside `target`.
    pub fn for_first(first: &Bound<'_, PyAny>, target: &Path) -> Option<Table> {
        let d = first.cast_exact::<PyDict>().ok()?;
        let k = d.len();
        if k == 0 || k > TABLE_MAX_KEYS {
            return None;
        }
        let keys: Vec<Py<PyAny>> = d.keys().iter().map(|k| k.unbind()).collect();
        let str_type = addr_of_mut!(ffi::PyUnicode_Type);
        if !keys.iter().all(|k| unsafe { ffi::Py_TYPE(k.as_ptr()) } == str_type) {
            return None;
        }
        let key_units = keys
            .iter()
            .map(|k| {
                let (w, u) = unsafe { str_units(k.as_ptr()) };
                (w, u.to_vec())
            })
            .collect();
        Some(Table::with_keys(keys, key_units, target))
    }

    /// A table for records like the JSON object `first`, or `None`.
    pub fn for_first_json(py: Python<'_>, doc: &JsonDoc, first: JsonNode, target: &Path) -> PyResult<Option<Table>> {
        let JsonNode::Object { start, len } = first else { return Ok(None) };
        if len == 0 || len > TABLE_MAX_KEYS {
            return Ok(None);
        }
        let mut keys = Vec::with_capacity(len);
        let mut key_units = Vec::with_capacity(len);
        for &(id, _) in doc.object_entries(start, len) {
            let s = doc.keys[id as usize].str;
            let units = doc.str_units(s).to_vec();
            keys.push(Cell::Str(s.width, units.clone()).into_object(py)?);
            key_units.push((s.width, units));
        }
        Ok(Some(Table::with_keys(keys, key_units, target)))
    }

    fn with_keys(keys: Vec<Py<PyAny>>, key_units: Vec<(Width, Vec<u8>)>, target: &Path) -> Table {
        let columns = (0..keys.len()).map(|_| Column::Unset).collect();
        Table { keys, key_units, columns, rows: 0, sp: Spill::new(target) }
    }

    /// Adds a row; false when it does not fit (the table must then be
    /// given up: its columns may hold part of the row).
    pub fn push(&mut self, value: &Bound<'_, PyAny>) -> io::Result<bool> {
        let Ok(d) = value.cast_exact::<PyDict>() else { return Ok(false) };
        if d.len() != self.keys.len() || self.rows >= u32::MAX as usize {
            return Ok(false);
        }
        // Keys first, then values: a row that fails on its keys adds nothing.
        for ((key, _), want) in d.iter().zip(&self.keys) {
            if !unsafe { same_key(want.as_ptr(), key.as_ptr()) } {
                return Ok(false);
            }
        }
        for ((_, v), col) in d.iter().zip(self.columns.iter_mut()) {
            if !unsafe { col.push(&mut self.sp, v.as_ptr())? } {
                return Ok(false);
            }
        }
        self.rows += 1;
        Ok(true)
    }

    /// Adds a JSON row, as `push` adds what `json.loads` makes of it.
    pub fn push_json(&mut self, doc: &JsonDoc, row: JsonNode) -> io::Result<bool> {
        let JsonNode::Object { start, len } = row else { return Ok(false) };
        if len != self.keys.len() || self.rows >= u32::MAX as usize {
            return Ok(false);
        }
        let entries = doc.object_entries(start, len);
        for (&(id, _), (w, units)) in entries.iter().zip(&self.key_units) {
            let s = doc.keys[id as usize].str;
            if s.width != *w || doc.str_units(s) != &units[..] {
                return Ok(false);
            }
        }
        for (&(_, v), col) in entries.iter().zip(self.columns.iter_mut()) {
            if !col.push_json(&mut self.sp, doc, doc.node(v))? {
                return Ok(false);
            }
        }
        self.rows += 1;
        Ok(true)
    }

    /// Row `i` as a new dict.
    pub fn row<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (key, col) in self.keys.iter().zip(&self.columns) {
            d.set_item(key.bind(py), col.to_py(py, &self.sp, i as u64)?)?;
        }
        Ok(d)
    }

    /// Whether the columns can be written (list offsets fit u32).
    pub fn writable(&self) -> bool {
        self.columns.iter().all(|c| match c {
            Column::Lists { items, .. } => items.n <= u32::MAX as u64,
            _ => true,
        })
    }

    /// Writes the columns one after the other; returns their slots.
    pub fn write_columns(self, out: &mut dyn Sink) -> io::Result<Vec<u64>> {
        let Table { columns, rows, mut sp, .. } = self;
        let mut slots = Vec::with_capacity(columns.len());
        for col in columns {
            slots.push(col.write(&mut sp, rows as u64, out)?);
        }
        Ok(slots)
    }
}
