//! Views of lists stored as raw numbers: a read-only Sequence of ints or
//! floats that also exports its items through the buffer protocol, so
//! `memoryview(view)` and `numpy.asarray(view)` read them in place.

use std::os::raw::c_int;

use bale_core::NumList;
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyBufferError, PyIndexError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice};

use crate::convert::{owned, scalar};
use crate::errors::format_error;
use crate::region::Region;
use crate::views::view_parts;

#[pyclass(frozen, module = "bale", name = "NumberListView", sequence)]
pub struct NumberListView {
    pub region: Py<Region>,
    pub list: NumList,
}

static FORMAT_INT: &std::ffi::CStr = c"q";
static FORMAT_INT32: &std::ffi::CStr = c"i";
static FORMAT_FLOAT: &std::ffi::CStr = c"d";

impl NumberListView {
    fn item(&self, py: Python<'_>, i: usize) -> PyResult<Py<PyAny>> {
        let v = self.region.get().reader().num_item(self.list, i).map_err(format_error)?;
        unsafe { owned(py, scalar(py, &v).expect("numbers are scalars")?) }
    }

    /// The items as a new list of Python numbers.
    fn native<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = (0..self.list.len).map(|i| self.item(py, i)).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }
}

#[pymethods]
impl NumberListView {
    fn __len__(&self) -> usize {
        self.list.len
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Ok(slice) = key.cast::<PySlice>() {
            let ind = slice.indices(self.list.len as isize)?;
            let mut items = Vec::with_capacity(ind.slicelength);
            let mut i = ind.start;
            for _ in 0..ind.slicelength {
                items.push(self.item(py, i as usize)?);
                i += ind.step;
            }
            return Ok(PyList::new(py, items)?.into_any().unbind());
        }
        let i: isize = key.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "list indices must be integers or slices, not {}",
                key.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        let n = self.list.len as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(PyIndexError::new_err("list index out of range"));
        }
        self.item(py, j as usize)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.native(py)?.try_iter()?.into_any().unbind())
    }

    fn __reversed__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let l = self.native(py)?;
        l.reverse()?;
        Ok(l.try_iter()?.into_any().unbind())
    }

    fn __contains__(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.native(py)?.contains(x)
    }

    #[pyo3(signature = (value, start = 0, stop = isize::MAX, /))]
    fn index(&self, py: Python<'_>, value: &Bound<'_, PyAny>, start: isize, stop: isize) -> PyResult<Py<PyAny>> {
        Ok(self.native(py)?.call_method1(pyo3::intern!(py, "index"), (value, start, stop))?.unbind())
    }

    #[pyo3(signature = (value, /))]
    fn count(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Ok(self.native(py)?.call_method1(pyo3::intern!(py, "count"), (value,))?.unbind())
    }

    /// The items as a list of Python numbers.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.native(py)
    }

    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let other = match view_parts(other) {
            Some((region, node)) if matches!(node, crate::views::Node::List(_) | crate::views::Node::NumList(_)) => {
                crate::thawing::thaw_value(py, region.get(), node.value())?.into_bound(py)
            }
            Some(_) => return Ok(py.NotImplemented()),
            None if other.is_instance_of::<PyList>() => other.clone(),
            None => return Ok(py.NotImplemented()),
        };
        Ok(self.native(py)?.as_any().rich_compare(other, op)?.unbind())
    }

    fn __hash__(&self) -> PyResult<isize> {
        Err(PyTypeError::new_err("unhashable type: 'NumberListView'"))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.native(py)?.repr()?.to_string())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let py = slf.py();
        let bale = py.import("bale")?;
        let region = bale.getattr(pyo3::intern!(py, "compact"))?.call1((slf,))?;
        Ok((bale.getattr(pyo3::intern!(py, "_root_of"))?, (region,)))
    }

    /// `view + [3]`: a native list of the numbers, as `list + list` gives.
    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::views::concat(py, self.native(py)?.into_any(), other, false, false)
    }
    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::views::concat(py, self.native(py)?.into_any(), other, false, true)
    }
    fn __mul__(&self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::views::repeat(py, || Ok(self.native(py)?.into_any()), n)
    }
    fn __rmul__(&self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::views::repeat(py, || Ok(self.native(py)?.into_any()), n)
    }
    fn __setitem__(&self, _key: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(crate::views::read_only(format_args!("NumberListView does not support item assignment"), false))
    }
    fn __delitem__(&self, _key: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(crate::views::read_only(format_args!("NumberListView does not support item deletion"), false))
    }
    fn __setattr__(&self, name: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(crate::views::read_only(format_args!("cannot set attribute {} of a NumberListView", name.repr()?), true))
    }
    fn __delattr__(&self, name: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(crate::views::read_only(format_args!("cannot delete attribute {} of a NumberListView", name.repr()?), true))
    }

    /// The items in place: `q` (int64), `i` (int32, an INT32_LIST's) or `d` (float64), native order (regions are little-endian, as are the hosts that read them).
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("bale regions are read-only"));
        }
        let me = slf.get();
        let buf = me.region.get().buf();
        let (pos, len, size) = (me.list.pos, me.list.len, me.list.item_bytes());
        let bytes = &buf[pos..me.list.end()];
        let v = &mut *view;
        v.obj = slf.clone().into_any().into_ptr();
        v.buf = bytes.as_ptr() as *mut std::ffi::c_void;
        v.len = (size * len) as ffi::Py_ssize_t;
        v.readonly = 1;
        v.itemsize = size as ffi::Py_ssize_t;
        v.format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
            (match (me.list.float, me.list.int32) {
                (true, _) => FORMAT_FLOAT,
                (false, true) => FORMAT_INT32,
                (false, false) => FORMAT_INT,
            })
            .as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        v.ndim = 1;
        // Shape and strides live in the view's internal slot (two words).
        let dims = Box::into_raw(Box::new([len as ffi::Py_ssize_t, size as ffi::Py_ssize_t]));
        v.internal = dims as *mut std::ffi::c_void;
        v.shape =
            if flags & ffi::PyBUF_ND == ffi::PyBUF_ND { dims as *mut ffi::Py_ssize_t } else { std::ptr::null_mut() };
        v.strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            (dims as *mut ffi::Py_ssize_t).add(1)
        } else {
            std::ptr::null_mut()
        };
        v.suboffsets = std::ptr::null_mut();
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        let v = &mut *view;
        if !v.internal.is_null() {
            drop(Box::from_raw(v.internal as *mut [ffi::Py_ssize_t; 2]));
            v.internal = std::ptr::null_mut();
        }
    }
}
