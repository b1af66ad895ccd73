//! `bale.to_json`: JSON text straight from a region (see `bale_core::json`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::compactor::compact_scratch;
use crate::errors::FormatError;
use crate::region::Region;
use crate::views::view_parts;

/// The JSON text of a view, a region's root, or any value bale can compact:
/// the bytes of `json.dumps(value, allow_nan=False, ensure_ascii=False,
/// separators=(",", ":")).encode()` (floats as `repr` writes them). Raises
/// ValueError naming the place of what JSON cannot hold (NaN and infinities
/// as values or keys, bytes, sets, values that contain themselves).
#[pyfunction]
pub fn to_json<'py>(py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    let result = if let Ok(region) = value.cast::<Region>() {
        let reg = region.get().check_open()?;
        let r = reg.reader();
        let root = reg.root_value()?;
        py.detach(|| bale_core::json::to_json(&r, root, &mut out))
    } else if let Some((region, node)) = view_parts(value) {
        let reg = region.get();
        let r = reg.reader();
        py.detach(|| bale_core::json::to_json(&r, node.value(), &mut out))
    } else {
        let (bytes, slot) = compact_scratch(py, value)?;
        let r = bale_core::Reader::new(&bytes);
        let v = r.decode(slot, bytes.len()).map_err(crate::errors::format_error)?;
        bale_core::json::to_json(&r, v, &mut out)
    };
    match result {
        Err(e) if e.needs_store => {
            // References to other segments of a store: the value as read
            // through them (a native copy), then its JSON.
            // (Counted first: JSON writes a value named many times in full.)
            let native = match value.cast::<Region>() {
                Ok(region) => {
                    let reg = region.get();
                    crate::views::check_expansion_of(reg, reg.root_value()?)?;
                    crate::thawing::thaw_value(py, reg, reg.root_value()?)?
                }
                Err(_) => match view_parts(value) {
                    Some((region, node)) => {
                        crate::views::check_expansion_of(region.get(), node.value())?;
                        crate::thawing::thaw_value(py, region.get(), node.value())?
                    }
                    None => return Err(FormatError::new_err(e.to_string())),
                },
            };
            to_json(py, native.bind(py))
        }
        Ok(()) => Ok(PyBytes::new(py, &out)),
        Err(e) if e.malformed => Err(FormatError::new_err(e.to_string())),
        Err(e) => Err(PyValueError::new_err(e.to_string())),
    }
}
