//! Lists of records written by column (TABLE, STR_COLUMN, LIST_COLUMN).
//!
//! A list of dicts that all have the same keys, in the same order, and
//! whose values are scalars or lists of scalars (the shape of JSON records,
//! CSV rows and most datasets) is written as one column per key. A record
//! then costs no dict header and no slot in the list; ints and floats are
//! raw numbers, distinct strings are one run of code units, and lists are
//! cut from one child list by offsets. Anything else (nested dicts, other
//! types, views) is written row by row as before, so the rules of the
//! general path (cycles, paths in errors, sharing) never meet a table.

use std::ptr::addr_of_mut;

use bale_core::format::{Width, SLOT_EMPTY_LIST, SLOT_FALSE, SLOT_NONE, SLOT_TRUE};
use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;

use crate::compactor::Compactor;
use crate::strings::str_units;

/// Lists with fewer dicts than this are written row by row.
pub const TABLE_MIN_ROWS: usize = 4;
/// Records with more keys than this are written row by row.
const TABLE_MAX_KEYS: usize = 64;

#[inline(always)]
unsafe fn is_scalar(obj: *mut PyObject) -> bool {
    let tp = ffi::Py_TYPE(obj);
    tp == addr_of_mut!(ffi::PyUnicode_Type)
        || tp == addr_of_mut!(ffi::PyLong_Type)
        || tp == addr_of_mut!(ffi::PyFloat_Type)
        || obj == ffi::Py_None()
        || obj == ffi::Py_True()
        || obj == ffi::Py_False()
}

/// A scalar, or an exact list of scalars.
#[inline]
unsafe fn is_cell(obj: *mut PyObject) -> bool {
    if is_scalar(obj) {
        return true;
    }
    if ffi::Py_TYPE(obj) != addr_of_mut!(ffi::PyList_Type) {
        return false;
    }
    let items = (*(obj as *mut ffi::PyListObject)).ob_item;
    (0..ffi::Py_SIZE(obj) as usize).all(|i| is_scalar(*items.add(i)))
}

/// Whether two dict keys are the same key: the same object, or two str
/// objects with the same content (records parsed one by one do not share
/// their key objects).
#[inline]
unsafe fn same_key(a: *mut PyObject, b: *mut PyObject) -> bool {
    if a == b {
        return true;
    }
    let str_type = addr_of_mut!(ffi::PyUnicode_Type);
    if ffi::Py_TYPE(a) != str_type || ffi::Py_TYPE(b) != str_type {
        return false;
    }
    let (wa, ua) = str_units(a);
    let (wb, ub) = str_units(b);
    wa == wb && ua == ub
}

impl<'py> Compactor<'py> {
    /// Writes `rows` as a TABLE when they are dicts of one key sequence
    /// whose values are all cells; `None`, having written nothing, otherwise.
    pub(crate) unsafe fn table(&mut self, rows: *mut *mut PyObject, n: usize) -> PyResult<Option<u64>> {
        let dict_type = addr_of_mut!(ffi::PyDict_Type);
        let first = *rows;
        if ffi::Py_TYPE(first) != dict_type {
            return Ok(None);
        }
        let k = ffi::PyDict_Size(first) as usize;
        if k == 0 || k > TABLE_MAX_KEYS || n > u32::MAX as usize {
            return Ok(None);
        }
        let mut keys: Vec<*mut PyObject> = Vec::with_capacity(k);
        let mut columns: Vec<Vec<*mut PyObject>> = (0..k).map(|_| Vec::with_capacity(n)).collect();
        for i in 0..n {
            let row = *rows.add(i);
            if ffi::Py_TYPE(row) != dict_type || ffi::PyDict_Size(row) as usize != k {
                return Ok(None);
            }
            let mut pos: ffi::Py_ssize_t = 0;
            let mut key: *mut PyObject = std::ptr::null_mut();
            let mut value: *mut PyObject = std::ptr::null_mut();
            let mut j = 0;
            while ffi::PyDict_Next(row, &mut pos, &mut key, &mut value) != 0 {
                if i == 0 {
                    keys.push(key);
                } else if !same_key(key, keys[j]) {
                    return Ok(None);
                }
                if !is_cell(value) {
                    return Ok(None);
                }
                columns[j].push(value);
                j += 1;
            }
        }
        // The shape comes from the first row's keys, as for a dict.
        let items = self.items.len();
        self.key_ptrs.clear();
        for &key in &keys {
            self.items.push((key, std::ptr::null_mut()));
            self.key_ptrs.push(key as usize);
        }
        let shape = self.shape_of(items, k);
        self.items.truncate(items);
        let shape = shape?;
        let mut cols = Vec::with_capacity(k);
        for column in &columns {
            cols.push(self.column(column)?);
        }
        Ok(Some(self.builder.table_object(n, shape, &cols)))
    }

    /// One column: lists of scalars as a LIST_COLUMN, scalars as a number
    /// list, a string column or a list of slots.
    unsafe fn column(&mut self, values: &[*mut PyObject]) -> PyResult<u64> {
        let list_type = addr_of_mut!(ffi::PyList_Type);
        if values.iter().all(|&v| ffi::Py_TYPE(v) == list_type) {
            let mut flat: Vec<*mut PyObject> = Vec::new();
            let mut offsets: Vec<u32> = Vec::with_capacity(values.len() + 1);
            offsets.push(0);
            for &v in values {
                let items = (*(v as *mut ffi::PyListObject)).ob_item;
                for i in 0..ffi::Py_SIZE(v) as usize {
                    flat.push(*items.add(i));
                }
                if flat.len() > u32::MAX as usize {
                    return self.slot_column(values);
                }
                offsets.push(flat.len() as u32);
            }
            let child = if flat.is_empty() { SLOT_EMPTY_LIST } else { self.scalar_column(&mut flat)? };
            return Ok(self.builder.list_column(child, &offsets));
        }
        if values.iter().all(|&v| is_scalar(v)) {
            let mut values = values.to_vec();
            return self.scalar_column(&mut values);
        }
        self.slot_column(values)
    }

    /// Scalars: raw numbers, a string column when that is smaller than
    /// slots, else slots.
    unsafe fn scalar_column(&mut self, values: &mut [*mut PyObject]) -> PyResult<u64> {
        if let Some(slot) = self.number_list(values.as_mut_ptr(), values.len()) {
            return Ok(slot);
        }
        if let Some(slot) = self.str_column(values) {
            return Ok(slot);
        }
        self.slot_column(values)
    }

    /// Strings of one width as a STR_COLUMN, when it takes fewer bytes
    /// than slots would (short ASCII strings fit their slot, and a string
    /// held elsewhere too is most likely repeated, so stored once).
    unsafe fn str_column(&mut self, values: &[*mut PyObject]) -> Option<u64> {
        let str_type = addr_of_mut!(ffi::PyUnicode_Type);
        let mut width = None;
        let (mut units, mut as_slots) = (0usize, 0usize);
        for &v in values {
            if ffi::Py_TYPE(v) != str_type {
                return None;
            }
            let (w, u) = str_units(v);
            if *width.get_or_insert(w) != w {
                return None;
            }
            units += u.len();
            as_slots += 8;
            if !(w == Width::Ascii && u.len() <= 7) && ffi::Py_REFCNT(v) == 1 {
                as_slots += (u.len() + 7) & !7;
            }
        }
        let width = width?;
        if 4 * values.len() + units >= as_slots || units / width.unit() > u32::MAX as usize {
            return None;
        }
        let mut offsets = Vec::with_capacity(values.len() + 1);
        let mut data = Vec::with_capacity(units);
        offsets.push(0u32);
        for &v in values {
            data.extend_from_slice(str_units(v).1);
            offsets.push((data.len() / width.unit()) as u32);
        }
        Some(self.builder.str_column(width, &offsets, &data))
    }

    /// Cells as a list of slots (lists of scalars as lists).
    unsafe fn slot_column(&mut self, values: &[*mut PyObject]) -> PyResult<u64> {
        let mut slots = Vec::with_capacity(values.len());
        for &v in values {
            let slot = if ffi::Py_TYPE(v) == addr_of_mut!(ffi::PyList_Type) {
                let len = ffi::Py_SIZE(v) as usize;
                let items = (*(v as *mut ffi::PyListObject)).ob_item;
                match if len == 0 { None } else { self.number_list(items, len) } {
                    Some(s) => s,
                    None => {
                        let mut inner = Vec::with_capacity(len);
                        for i in 0..len {
                            inner.push(self.scalar_slot(*items.add(i))?);
                        }
                        self.builder.seq(false, &inner)
                    }
                }
            } else {
                self.scalar_slot(v)?
            };
            slots.push(slot);
        }
        Ok(self.builder.seq(false, &slots))
    }

    #[inline]
    unsafe fn scalar_slot(&mut self, v: *mut PyObject) -> PyResult<u64> {
        let tp = ffi::Py_TYPE(v);
        Ok(if tp == addr_of_mut!(ffi::PyUnicode_Type) {
            self.str_slot(v)
        } else if tp == addr_of_mut!(ffi::PyLong_Type) {
            self.int_slot(v)?.0
        } else if tp == addr_of_mut!(ffi::PyFloat_Type) {
            self.builder.float(ffi::PyFloat_AS_DOUBLE(v))
        } else if v == ffi::Py_None() {
            SLOT_NONE
        } else if v == ffi::Py_True() {
            SLOT_TRUE
        } else if v == ffi::Py_False() {
            SLOT_FALSE
        } else {
            unreachable!("cells hold scalars only")
        })
    }
}
