//! `bale._bale.region_stats`: what a region holds, for `bale info`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::errors::format_error;
use crate::region::Region;
use crate::thawing::thaw_value;

/// `{"kinds": {kind: (count, bytes)}, "shapes": [(uses, keys), ...]}`, the
/// shapes most used first (at most `top`).
#[pyfunction]
#[pyo3(signature = (region, top = 5))]
pub fn region_stats<'py>(py: Python<'py>, region: &Bound<'py, Region>, top: usize) -> PyResult<Bound<'py, PyDict>> {
    let reg = region.get().check_open()?;
    let r = reg.reader();
    let root = reg.root_slot();
    let r = &r;
    let st = py.detach(|| bale_core::stats::region_stats(r, root)).map_err(format_error)?;
    let out = PyDict::new(py);
    let kinds = PyDict::new(py);
    for (k, v) in &st.kinds {
        kinds.set_item(*k, (v.count, v.bytes))?;
    }
    out.set_item("kinds", kinds)?;
    out.set_item("slots", st.slots)?;
    let mut shapes: Vec<(usize, u64)> = st.shapes.into_iter().collect();
    shapes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let list = PyList::empty(py);
    for &(off, uses) in shapes.iter().take(top) {
        let keys = shape_keys(py, reg, off)?;
        list.append(PyTuple::new(py, [uses.into_pyobject(py)?.into_any(), keys])?)?;
    }
    out.set_item("shapes", list)?;
    out.set_item("distinct_shapes", shapes.len())?;
    out.set_item("types", types_list(py, &st.types)?)?;
    Ok(out)
}

/// Store support: the other segments whose values the region's value
/// references (its EXTERN objects), ascending.
#[pyfunction]
pub fn _extern_segments(py: Python<'_>, region: &Bound<'_, Region>) -> PyResult<Vec<u32>> {
    let reg = region.get().check_open()?;
    let segments = py.detach(|| reg.extern_segments()).map_err(format_error)?;
    Ok(segments.into_iter().collect())
}

/// Store support: what the region's value references in other segments,
/// `(segment, end, flags, slot)` of each EXTERN object, ascending; for
/// `Store.verify`, which follows them.
#[pyfunction]
pub fn _extern_targets(py: Python<'_>, region: &Bound<'_, Region>) -> PyResult<Vec<(u32, u64, u32, u64)>> {
    let reg = region.get().check_open()?;
    let targets = py.detach(|| reg.extern_targets()).map_err(format_error)?;
    Ok(targets.into_iter().collect())
}

/// `[(qualified name, flavor, field names, records), ...]`, in the order first met.
pub fn types_list<'py>(py: Python<'py>, types: &[bale_core::stats::TypeInfo]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for t in types {
        let flavor = py.import("bale._types")?.getattr(pyo3::intern!(py, "flavor_name"))?.call1((t.flavor,))?;
        list.append((t.name.as_str(), flavor, PyTuple::new(py, &t.fields)?, t.count))?;
    }
    Ok(list)
}

/// The keys of the shape at `off`, as Python values.
fn shape_keys<'py>(py: Python<'py>, reg: &Region, off: usize) -> PyResult<Bound<'py, PyAny>> {
    let r = reg.reader();
    let head = r.word(off).map_err(format_error)?;
    let n = (head >> 8) as usize;
    let keys = PyList::empty(py);
    for i in 0..n {
        let slot = r.word(off + 8 + 8 * i).map_err(format_error)?;
        let v = r.decode(slot, off).map_err(format_error)?;
        keys.append(thaw_value(py, reg, v)?)?;
    }
    Ok(keys.into_any())
}
