//! `bale.column`: one field of every record of a list, in one native pass.

use bale_core::columns::is_slice;
use bale_core::{Column, ColumnKind, Reader, Value};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::format_error;
use crate::views::{find_in, value_to_py, view_parts, Items, Node};

enum Numbers {
    Ints(Vec<i64>),
    Floats(Vec<f64>),
}

/// Field `key` of every dict in a list or tuple view: a numpy array when
/// every value is an int (int64) or every value is a number (float64), and
/// numpy is installed; a list of values otherwise.
#[pyfunction]
pub fn column(py: Python<'_>, records: &Bound<'_, PyAny>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let Some((region, node)) = view_parts(records) else {
        return Err(PyTypeError::new_err(format!(
            "column() takes a list or tuple view of a region, not {}",
            records.get_type().name()?
        )));
    };
    let seq = match node {
        Node::List(s) | Node::Tuple(s) => s,
        _ => return Err(PyTypeError::new_err("column() takes a list or tuple view (of dicts)")),
    };
    let reg = region.get();
    let r: Reader<'_> = reg.reader();
    let mut values: Vec<Value<'_>> = Vec::with_capacity(seq.len());
    // A ROWS_COLUMN's slice of a table (some of its rows) is read row by
    // row, and so is a KEYED_TABLE (its rows lack keys, or are None).
    let table = match seq {
        Items::Column(c @ Column { kind: ColumnKind::Rows { shape, cols, keyed: 0 }, start, first: 0, len })
            if !is_slice(&Value::Column(c)) =>
        {
            Some((shape, cols, start, len))
        }
        _ => None,
    };
    if let Some((shape, cols, start, len)) = table {
        // A table holds the field as a column already.
        let at = find_in(reg, shape, key)?.ok_or_else(|| missing(0, key))?;
        let col = r.table_column(start, cols, at).map_err(format_error)?;
        if r.list_len(&col) != Some(len) {
            return Err(format_error(bale_core::FormatError::at(
                cols + 8 * at,
                "table column is not a list as long as its table",
            )));
        }
        for i in 0..len {
            values.push(r.list_item(col, i).map_err(format_error)?);
        }
    } else {
        // Where the key sits in each shape met so far (records mostly share one).
        let mut last_shape: Option<(usize, usize)> = None;
        for i in 0..seq.len() {
            let d = match seq.get(&r, i).map_err(format_error)? {
                Value::Dict(d) => d,
                Value::Extern(_) => return column_through_views(py, records, key),
                _ => return Err(PyTypeError::new_err(format!("column(): item {i} is not a dict"))),
            };
            // The key's index in the shape; an ID_DICT's place of it is its own.
            let in_shape = match last_shape {
                Some((shape, at)) if shape == d.shape.start => at,
                _ => {
                    let at = find_in(reg, d.shape, key)?.ok_or_else(|| missing(i, key))?;
                    last_shape = Some((d.shape.start, at));
                    at
                }
            };
            let at = r.dict_place(d, Some(in_shape)).ok_or_else(|| missing(i, key))?;
            values.push(r.dict_value(d, at).map_err(format_error)?);
        }
    }
    if let Some(nums) = numbers(&values) {
        if let Some(array) = to_numpy(py, nums)? {
            return Ok(array);
        }
    }
    let out = PyList::empty(py);
    for &v in &values {
        out.append(value_to_py(py, &region, &v)?)?;
    }
    Ok(out.into_any().unbind())
}

/// `column` of a store's list whose items reference dicts in other
/// segments: each item read through its view (rare, and never in the hot
/// path above), with the same result.
#[cold]
fn column_through_views(py: Python<'_>, records: &Bound<'_, PyAny>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let n = records.len()?;
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        let item = records.get_item(i)?;
        if item.cast::<crate::views::DictView>().is_err() {
            return Err(PyTypeError::new_err(format!("column(): item {i} is not a dict")));
        }
        match item.get_item(key) {
            Ok(v) => values.push(v),
            Err(e) if e.is_instance_of::<PyKeyError>(py) => return Err(missing(i, key)),
            Err(e) => return Err(e),
        }
    }
    let mut ints = Vec::with_capacity(n);
    let mut floats: Option<Vec<f64>> = None;
    let mut all_numbers = true;
    for v in &values {
        if v.is_exact_instance_of::<pyo3::types::PyInt>() {
            let Ok(i) = v.extract::<i64>() else {
                all_numbers = false;
                break;
            };
            match &mut floats {
                Some(f) => f.push(i as f64),
                None => ints.push(i),
            }
        } else if v.is_exact_instance_of::<pyo3::types::PyFloat>() {
            let f = floats.get_or_insert_with(|| ints.iter().map(|&i| i as f64).collect());
            f.push(v.extract::<f64>()?);
        } else {
            all_numbers = false;
            break;
        }
    }
    if all_numbers {
        let nums = match floats {
            Some(f) => Numbers::Floats(f),
            None => Numbers::Ints(ints),
        };
        if let Some(array) = to_numpy(py, nums)? {
            return Ok(array);
        }
    }
    Ok(PyList::new(py, values)?.into_any().unbind())
}

fn missing(i: usize, key: &Bound<'_, PyAny>) -> PyErr {
    PyKeyError::new_err(format!(
        "column(): item {i} has no key {}",
        key.repr().map(|r| r.to_string()).unwrap_or_default()
    ))
}

/// The values as numbers, if they all are ints (in i64) or all numbers.
fn numbers(values: &[Value<'_>]) -> Option<Numbers> {
    let mut ints = Vec::with_capacity(values.len());
    let mut floats: Option<Vec<f64>> = None;
    for v in values {
        match *v {
            Value::Int(i) => match &mut floats {
                Some(f) => f.push(i as f64),
                None => ints.push(i),
            },
            Value::Float(x) => {
                let f = floats.get_or_insert_with(|| ints.iter().map(|&i| i as f64).collect());
                f.push(x);
            }
            _ => return None,
        }
    }
    Some(match floats {
        Some(f) => Numbers::Floats(f),
        None => Numbers::Ints(ints),
    })
}

/// A numpy array of the numbers; `None` when numpy is not installed.
fn to_numpy(py: Python<'_>, nums: Numbers) -> PyResult<Option<Py<PyAny>>> {
    let Ok(np) = py.import("numpy") else {
        return Ok(None);
    };
    let (n, dtype, bytes): (usize, &str, Vec<u8>) = match nums {
        Numbers::Ints(v) => (v.len(), "int64", v.iter().flat_map(|x| x.to_ne_bytes()).collect()),
        Numbers::Floats(v) => (v.len(), "float64", v.iter().flat_map(|x| x.to_ne_bytes()).collect()),
    };
    let array = np.call_method1(pyo3::intern!(py, "empty"), (n, dtype))?;
    // Fill the new array through its buffer: one copy, no Python objects.
    unsafe {
        let mut view: ffi::Py_buffer = std::mem::zeroed();
        if ffi::PyObject_GetBuffer(array.as_ptr(), &mut view, ffi::PyBUF_WRITABLE | ffi::PyBUF_C_CONTIGUOUS) != 0 {
            return Err(PyErr::fetch(py));
        }
        if view.len as usize == bytes.len() {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), view.buf as *mut u8, bytes.len());
        }
        ffi::PyBuffer_Release(&mut view);
    }
    Ok(Some(array.unbind()))
}
