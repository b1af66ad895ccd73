//! `bale.memoryview_of`: zero-copy, read-only access to a stored `bytes`
//! value. Reading `view[key]` copies the bytes into a new `bytes` object
//! (so `==`, hashing and the type stay those of `bytes`); this opt-in
//! returns a `memoryview` over the region's own memory instead.

use std::os::raw::c_int;

use bale_core::{Reader, Value};
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyKeyError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::format_error;
use crate::region::Region;
use crate::storage::buffer_ptr;
use crate::views::{index_arg, view_parts, Items};

/// The exporter behind a `memoryview_of` memoryview: `len` bytes at `start`
/// in the region, which it keeps alive (and with it the memory) for as long
/// as the memoryview, or anything sliced from it, lives.
#[pyclass(frozen, module = "bale._bale", name = "StoredBytes")]
pub struct StoredBytes {
    region: Py<Region>,
    start: usize,
    len: usize,
}

#[pymethods]
impl StoredBytes {
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("bale regions are read-only"));
        }
        let me = slf.get();
        let bytes = &me.region.get().buf()[me.start..me.start + me.len];
        let rc = ffi::PyBuffer_FillInfo(view, slf.as_ptr(), buffer_ptr(bytes), me.len as ffi::Py_ssize_t, 1, flags);
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}

/// The value at `key` in the container `v`.
fn item<'a>(
    py: Python<'_>,
    region: &Region,
    r: &Reader<'a>,
    v: Value<'a>,
    key: &Bound<'_, PyAny>,
) -> PyResult<Value<'a>> {
    let seq = match v {
        Value::List(s) | Value::Tuple(s) => Some(Items::Slots(s)),
        Value::Column(c) => Some(Items::Column(c)),
        _ => None,
    };
    if let Some(seq) = seq {
        let i = index_arg(key, seq.len(), if matches!(v, Value::Tuple(_)) { "tuple" } else { "list" })?;
        return seq.get(r, i).map_err(format_error);
    }
    match v {
        Value::Pair(a, b) => Ok(Value::Int(if index_arg(key, 2, "tuple")? == 0 { a } else { b })),
        Value::NumList(l) => r.num_item(l, index_arg(key, l.len, "list")?).map_err(format_error),
        Value::Dict(d) => match crate::views::find_in_dict(region, d, key)? {
            Some(i) => crate::rows::dict_value(py, region, r, d, i).map_err(format_error),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        },
        Value::Record(rec) => {
            let name =
                key.cast::<PyString>().map_err(|_| PyTypeError::new_err("a record's field is named by a str"))?;
            let (width, units) = unsafe { crate::ffi::pyunicode::str_units(name.as_ptr()) };
            match r.find_str(rec.ty.fields, width, units).map_err(format_error)? {
                Some(i) => r.record_value(rec, i).map_err(format_error),
                None => {
                    region.check_index_once(rec.ty.fields)?;
                    let tname = r.type_name(rec.ty).map_err(format_error)?.to_string_lossy();
                    Err(PyAttributeError::new_err(format!("'{tname}' record has no field '{name}'")))
                }
            }
        }
        _ => Err(PyTypeError::new_err(format!("memoryview_of: {} has no items", kind(&v)))),
    }
}

/// What `v` is, with its article ("an int", "a list"), for messages.
fn kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::Int(_) | Value::BigInt(_) => "an int",
        Value::Float(_) => "a float",
        Value::Complex(..) => "a complex",
        Value::Str(_) => "a str",
        Value::Bytes(_) => "a bytes",
        Value::List(_) | Value::Column(_) | Value::NumList(_) => "a list",
        Value::Tuple(_) | Value::Pair(..) => "a tuple",
        Value::Set(_) => "a set",
        Value::FrozenSet(_) => "a frozenset",
        Value::Dict(_) => "a dict",
        Value::Ext(_) => "a typed scalar",
        Value::NdArray(_) => "a numpy array",
        Value::Record(_) => "a record",
        Value::Extern(_) => "a dict or a list in another segment",
    }
}

/// A read-only `memoryview` over the `bytes` value stored at
/// `container[key]` (a list or tuple index, a dict key, a record's field
/// name), or over the region's root when `container` is a `Region` and no
/// key is given, without copying. The memoryview keeps the region's memory
/// alive; it equals the bytes, but is not hashable and is not `bytes`.
#[pyfunction]
#[pyo3(signature = (container, key = None))]
pub fn memoryview_of<'py>(
    py: Python<'py>,
    container: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (region, start, len) = {
        let (region, value) = if let Ok(reg) = container.cast::<Region>() {
            reg.get().check_open()?;
            (reg.clone().unbind(), None)
        } else if let Some((region, node)) = view_parts(container) {
            (region, Some(node))
        } else {
            return Err(PyTypeError::new_err(format!(
                "memoryview_of takes a bale view or Region, not {}",
                container.get_type().name()?
            )));
        };
        let reg = region.get();
        let r = reg.reader();
        let mut v = match value {
            Some(node) => node.value(),
            None => reg.root_value()?,
        };
        if let Some(key) = key {
            v = item(py, reg, &r, v, key)?;
        } else if value.is_some() {
            return Err(PyTypeError::new_err("memoryview_of(view, key): a view needs the key of its bytes value"));
        }
        let Value::Bytes(b) = v else {
            return Err(PyTypeError::new_err(format!("memoryview_of: the value is {}, not bytes", kind(&v))));
        };
        let start = b.as_ptr() as usize - reg.buf().as_ptr() as usize;
        (region.clone_ref(py), start, b.len())
    };
    let exporter = Bound::new(py, StoredBytes { region, start, len })?;
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyMemoryView_FromObject(exporter.as_ptr())) }
}
