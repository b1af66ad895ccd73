//! Records streamed into a `bale.Writer` gathered by column, so that a
//! streamed list of records is stored as a TABLE as `compact` stores one.
//!
//! A TABLE's columns are each one list-like object of all the rows (the
//! format has no way to chain several tables into one flat list), so the
//! writer gathers every column's data as raw numbers, code units and
//! offsets (about the bytes the column will take in the file, far less
//! than the records as Python objects) and writes the columns, then the
//! TABLE, when it is closed. Rows that do not fit (another key sequence,
//! values other than None, bools, ints and floats of 64 bits, strs and
//! lists of those) end the table: the rows gathered so far are written
//! row by row, as are all later items.

use bale_core::format::{Width, SLOT_EMPTY_LIST, SLOT_FALSE, SLOT_NONE, SLOT_TRUE};
use bale_core::Builder;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ptr::addr_of_mut;

use crate::strings::str_units;

/// Records with more keys than this are written row by row (as `compact`).
pub const MAX_KEYS: usize = 64;

/// A scalar of a column that holds several kinds.
enum Cell {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Width, Box<[u8]>),
}

/// The scalars of a column (or the items of its lists), by what they have
/// in common so far.
enum Scalars {
    Empty,
    Ints(Vec<u64>),
    Floats(Vec<u64>),
    /// Strings all of one width (a STR_COLUMN holds no other): code
    /// units; string i is units `offs[i]..offs[i+1]`.
    Strs { width: Width, units: Vec<u8>, offs: Vec<u64> },
    Mixed(Vec<Cell>),
}

/// What a scalar is, read once.
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
        return Some(Scalar::Float(ffi::PyFloat_AS_DOUBLE(obj)));
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

impl Scalars {
    fn len(&self) -> usize {
        match self {
            Scalars::Empty => 0,
            Scalars::Ints(v) | Scalars::Floats(v) => v.len(),
            Scalars::Strs { offs, .. } => offs.len() - 1,
            Scalars::Mixed(v) => v.len(),
        }
    }

    fn cell(&self, i: usize) -> Cell {
        match self {
            Scalars::Empty => unreachable!("no items"),
            Scalars::Ints(v) => Cell::Int(v[i] as i64),
            Scalars::Floats(v) => Cell::Float(f64::from_bits(v[i])),
            Scalars::Strs { width, units, offs } => {
                let unit = width.unit();
                Cell::Str(*width, units[offs[i] as usize * unit..offs[i + 1] as usize * unit].into())
            }
            Scalars::Mixed(v) => match &v[i] {
                Cell::None => Cell::None,
                Cell::Bool(b) => Cell::Bool(*b),
                Cell::Int(x) => Cell::Int(*x),
                Cell::Float(f) => Cell::Float(*f),
                Cell::Str(w, u) => Cell::Str(*w, u.clone()),
            },
        }
    }

    fn into_mixed(&mut self) -> &mut Vec<Cell> {
        if !matches!(self, Scalars::Mixed(_)) {
            let cells = (0..self.len()).map(|i| self.cell(i)).collect();
            *self = Scalars::Mixed(cells);
        }
        match self {
            Scalars::Mixed(v) => v,
            _ => unreachable!(),
        }
    }

    fn push(&mut self, s: Scalar<'_>) {
        match (&mut *self, s) {
            (Scalars::Empty, Scalar::Int(v)) => *self = Scalars::Ints(vec![v as u64]),
            (Scalars::Empty, Scalar::Float(f)) => *self = Scalars::Floats(vec![f.to_bits()]),
            (Scalars::Empty, Scalar::Str(w, u)) => {
                *self = Scalars::Strs { width: w, units: u.to_vec(), offs: vec![0, (u.len() / w.unit()) as u64] }
            }
            (Scalars::Ints(v), Scalar::Int(x)) => v.push(x as u64),
            (Scalars::Floats(v), Scalar::Float(f)) => v.push(f.to_bits()),
            (Scalars::Strs { width, units, offs }, Scalar::Str(w, u)) if w == *width => {
                units.extend_from_slice(u);
                offs.push((units.len() / w.unit()) as u64);
            }
            (_, s) => {
                let cell = match s {
                    Scalar::None => Cell::None,
                    Scalar::Bool(b) => Cell::Bool(b),
                    Scalar::Int(x) => Cell::Int(x),
                    Scalar::Float(f) => Cell::Float(f),
                    Scalar::Str(w, u) => Cell::Str(w, u.into()),
                };
                self.into_mixed().push(cell);
            }
        }
    }

    /// Writes the scalars as one list-like object; returns its slot.
    fn write(self, b: &mut Builder) -> u64 {
        match self {
            Scalars::Empty => SLOT_EMPTY_LIST,
            Scalars::Ints(v) => b.num_list(false, &v),
            Scalars::Floats(v) => b.num_list(true, &v),
            // A STR_COLUMN when its offsets fit u32; else slots.
            Scalars::Strs { width, units, offs } if offs.last().is_some_and(|&u| u <= u32::MAX as u64) => {
                let offs: Vec<u32> = offs.into_iter().map(|o| o as u32).collect();
                b.str_column(width, &offs, &units)
            }
            s => {
                let slots: Vec<u64> = (0..s.len()).map(|i| s.cell(i).slot(b)).collect();
                b.seq(false, &slots)
            }
        }
    }
}

impl Cell {
    fn slot(self, b: &mut Builder) -> u64 {
        match self {
            Cell::None => SLOT_NONE,
            Cell::Bool(true) => SLOT_TRUE,
            Cell::Bool(false) => SLOT_FALSE,
            Cell::Int(x) => b.int(x),
            Cell::Float(f) => b.float(f),
            Cell::Str(w, u) => b.str_units(w, &u),
        }
    }

    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        unsafe {
            let p = match self {
                Cell::None => return Ok(py.None()),
                Cell::Bool(b) => return Ok(pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind()),
                Cell::Int(x) => ffi::PyLong_FromLongLong(x),
                Cell::Float(f) => ffi::PyFloat_FromDouble(f),
                Cell::Str(w, u) => {
                    let unit = w.unit();
                    ffi::PyUnicode_FromKindAndData(unit as i32, u.as_ptr() as *const std::ffi::c_void, (u.len() / unit) as ffi::Py_ssize_t)
                }
            };
            Bound::from_owned_ptr_or_err(py, p).map(Bound::unbind)
        }
    }
}

/// One column: scalars, or lists of scalars (`offs` into the items).
enum Column {
    Unset,
    Scalars(Scalars),
    Lists { offs: Vec<u64>, items: Scalars },
}

impl Column {
    /// Adds one cell; false (perhaps with some of its items added) when it
    /// does not fit.
    unsafe fn push(&mut self, obj: *mut ffi::PyObject) -> bool {
        let is_list = ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyList_Type);
        if let Column::Unset = self {
            *self = if is_list { Column::Lists { offs: vec![0], items: Scalars::Empty } } else { Column::Scalars(Scalars::Empty) };
        }
        match self {
            Column::Scalars(s) if !is_list => match scalar(obj) {
                Some(v) => {
                    s.push(v);
                    true
                }
                None => false,
            },
            Column::Lists { offs, items } if is_list => {
                let n = ffi::Py_SIZE(obj) as usize;
                for i in 0..n {
                    match scalar(ffi::PyList_GET_ITEM(obj, i as ffi::Py_ssize_t)) {
                        Some(v) => items.push(v),
                        None => return false,
                    }
                }
                offs.push(offs.last().unwrap() + n as u64);
                true
            }
            _ => false,
        }
    }

    fn to_py(&self, py: Python<'_>, i: usize) -> PyResult<Py<PyAny>> {
        match self {
            Column::Unset => unreachable!("a column of rows"),
            Column::Scalars(s) => s.cell(i).to_py(py),
            Column::Lists { offs, items } => {
                let list = pyo3::types::PyList::empty(py);
                for j in offs[i]..offs[i + 1] {
                    list.append(items.cell(j as usize).to_py(py)?)?;
                }
                Ok(list.into_any().unbind())
            }
        }
    }

    fn write(self, b: &mut Builder) -> Option<u64> {
        match self {
            Column::Unset => None,
            Column::Scalars(s) => Some(s.write(b)),
            Column::Lists { offs, items } => {
                if *offs.last().unwrap() > u32::MAX as u64 {
                    return None;
                }
                let child = items.write(b);
                let offs: Vec<u32> = offs.into_iter().map(|o| o as u32).collect();
                Some(b.list_column(child, &offs))
            }
        }
    }
}

/// The rows of a streamed list, gathered by column.
pub struct Table {
    pub keys: Vec<Py<PyAny>>,
    columns: Vec<Column>,
    pub rows: usize,
}

/// Whether two keys have the same content (both exact strs).
unsafe fn same_key(a: *mut ffi::PyObject, b: *mut ffi::PyObject) -> bool {
    a == b || (ffi::Py_TYPE(b) == addr_of_mut!(ffi::PyUnicode_Type) && str_units(a) == str_units(b))
}

impl Table {
    /// A table for records like `first` (a dict of 1 to 64 str keys), or
    /// `None`.
    pub fn for_first(first: &Bound<'_, PyAny>) -> Option<Table> {
        let d = first.cast_exact::<PyDict>().ok()?;
        let k = d.len();
        if k == 0 || k > MAX_KEYS {
            return None;
        }
        let keys: Vec<Py<PyAny>> = d.keys().iter().map(|k| k.unbind()).collect();
        let str_type = addr_of_mut!(ffi::PyUnicode_Type);
        if !keys.iter().all(|k| unsafe { ffi::Py_TYPE(k.as_ptr()) } == str_type) {
            return None;
        }
        Some(Table { keys, columns: (0..k).map(|_| Column::Unset).collect(), rows: 0 })
    }

    /// Adds a row; false when it does not fit (the table must then be
    /// given up: its columns may hold part of the row).
    pub fn push(&mut self, value: &Bound<'_, PyAny>) -> bool {
        let Ok(d) = value.cast_exact::<PyDict>() else { return false };
        if d.len() != self.keys.len() {
            return false;
        }
        // Keys first, then values: a row that fails on its keys adds nothing.
        for ((key, _), want) in d.iter().zip(&self.keys) {
            if !unsafe { same_key(want.as_ptr(), key.as_ptr()) } {
                return false;
            }
        }
        for ((_, v), col) in d.iter().zip(self.columns.iter_mut()) {
            if !unsafe { col.push(v.as_ptr()) } {
                return false;
            }
        }
        self.rows += 1;
        true
    }

    /// Row `i` as a new dict.
    pub fn row<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (key, col) in self.keys.iter().zip(&self.columns) {
            d.set_item(key.bind(py), col.to_py(py, i)?)?;
        }
        Ok(d)
    }

    /// Whether the columns can be written (offsets fit u32).
    pub fn writable(&self) -> bool {
        self.rows <= u32::MAX as usize
            && self.columns.iter().all(|c| match c {
                Column::Lists { offs, .. } => *offs.last().unwrap() <= u32::MAX as u64,
                _ => true,
            })
    }

    /// Writes the columns one at a time through `emit` (each with a
    /// builder continuing at `pos()`); returns their slots.
    pub fn write_columns(self, mut emit: impl FnMut(&mut dyn FnMut(&mut Builder) -> u64) -> std::io::Result<u64>) -> std::io::Result<Vec<u64>> {
        let mut slots = Vec::with_capacity(self.columns.len());
        for col in self.columns {
            let mut col = Some(col);
            slots.push(emit(&mut |b| col.take().unwrap().write(b).expect("checked by writable()"))?);
        }
        Ok(slots)
    }
}
