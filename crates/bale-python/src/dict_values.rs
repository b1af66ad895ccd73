//! `DictView.values()`: a values view made in Rust. The `collections.abc`
//! class it replaces costs a Python `__init__` per call and a Python
//! `__iter__` per loop, several times the read of a small dict's values;
//! this one is registered as a `ValuesView` (`bale/__init__.py`).

use bale_core::Dict;
use pyo3::prelude::*;

use crate::alloc::{fast_new, new_object};
use crate::region::Region;
use crate::views::{DictIterator, DictView};

#[pyclass(frozen, module = "bale")]
pub struct DictValues {
    pub(crate) region: Py<Region>,
    dict: Dict,
}

impl DictValues {
    pub fn of(py: Python<'_>, view: &DictView) -> PyResult<Py<DictValues>> {
        new_object(py, DictValues { region: view.region.clone_ref(py), dict: view.dict })
    }

    pub(crate) fn iter(&self, py: Python<'_>) -> PyResult<Py<DictIterator>> {
        DictIterator::new(py, &self.region, self.dict, crate::views::DictPart::Values)
    }
}

#[pymethods]
impl DictValues {
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<DictIterator>> {
        self.iter(py)
    }
    fn __len__(&self) -> usize {
        self.dict.len
    }
    /// As `ValuesView`: a value identical or equal to `x`.
    fn __contains__(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<bool> {
        for v in self.iter(py)?.bind(py).try_iter()? {
            let v = v?;
            if v.is(x) || v.eq(x)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let values: Vec<Bound<'_, PyAny>> = self.iter(py)?.bind(py).try_iter()?.collect::<PyResult<_>>()?;
        Ok(format!("dict_values({})", pyo3::types::PyList::new(py, values)?.repr()?))
    }
    /// The dict view these are the values of (as `ValuesView._mapping`).
    #[getter]
    fn _mapping(&self, py: Python<'_>) -> PyResult<Py<DictView>> {
        new_object(py, DictView { region: self.region.clone_ref(py), dict: self.dict })
    }
}

/// Whether `new_object` may build this class in place (see `alloc`).
pub fn layout_check(py: Python<'_>, region: &Py<Region>, dict: Dict) -> PyResult<bool> {
    crate::alloc::layout_matches(py, DictValues { region: region.clone_ref(py), dict })
}

fast_new!(DictValues);
