//! A store's get in one call (see `python/bale/_store.py` and
//! `docs/STORE.md`): the key is looked up in the index levels, newest
//! first; the first entry found decides; its segment's handle gives the
//! value. In Python this was five calls and a tuple view per get.

use bale_core::Value;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{format_error, FormatError};
use crate::views::{find_in, value_to_py, DictView};

/// An index entry's field as a u64 (a root slot above 2^63 is stored as a
/// BIGINT of nine bytes).
fn entry_field(v: Value<'_>, what: &str) -> PyResult<u64> {
    match v {
        Value::Int(i) if i >= 0 => Ok(i as u64),
        Value::BigInt(b) if b.len() == 9 && b[8] == 0 => Ok(u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))),
        other => Err(FormatError::new_err(format!("index entry's {what} is not a u64: {other:?}"))),
    }
}

/// The index of `key` in level `dict`. A `str` key (every key a store
/// writes is a `str` or `bytes`) is probed slot by slot, and the value slot
/// of each candidate is read as the hash index names it, and its entry
/// prefetched, so that their misses overlap the key's own (a get from a
/// large index is bound by these misses); other keys go through the views'
/// lookup.
fn find_key(reg: &crate::region::Region, dict: bale_core::Dict, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if unsafe { pyo3::ffi::PyUnicode_CheckExact(key.as_ptr()) } == 0 {
        return find_in(reg, dict.shape, key);
    }
    let r = reg.reader();
    let (width, units) = unsafe { crate::strings::str_units(key.as_ptr()) };
    let buf = reg.buf();
    let prefetch_entry = |i: usize| {
        // The value slot is read now, beside the key slot the probe reads
        // next (two independent misses), and the entry it points to is
        // prefetched while the key's units are compared.
        let at = dict.values + 8 * i;
        if let Some(b) = buf.get(at..at + 8) {
            if let Some(target) = bale_core::Reader::slot_target(u64::from_le_bytes(b.try_into().expect("8 bytes"))) {
                crate::compactor::prefetch(buf.as_ptr().wrapping_add(target) as *mut _);
            }
        }
    };
    let found = r.find_str_then(dict.shape, width, units, prefetch_entry).map_err(format_error)?;
    if found.is_none() {
        reg.check_index_once(dict.shape)?;
    }
    Ok(found)
}

/// The value stored under `key`: `sources` are the index levels (dict
/// views, newest first) whose values are `(segment, end, root, flags)`
/// entries or None (deleted); `handles` maps each live segment to a handle
/// on it. Returns `missing` when the key is absent, deleted, or its
/// segment is not live (dropped): an entry found decides, older levels are
/// not consulted.
#[pyfunction]
#[pyo3(signature = (key, sources, handles, missing, value = true))]
pub fn _store_get(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    sources: &Bound<'_, PyTuple>,
    handles: &Bound<'_, PyDict>,
    missing: &Bound<'_, PyAny>,
    value: bool,
) -> PyResult<Py<PyAny>> {
    for source in sources.iter() {
        let view = source.cast::<DictView>()?.get();
        let reg = view.region.get();
        if view.dict.row.is_some() {
            return Err(FormatError::new_err("a store's index level is a table row, not a dict"));
        }
        let Some(i) = find_key(reg, view.dict, key)? else { continue };
        let r = reg.reader();
        let entry = match r.dict_value(view.dict, i).map_err(format_error)? {
            Value::None => return Ok(missing.clone().unbind()),
            Value::Tuple(seq) if seq.len == 4 => seq,
            other => return Err(FormatError::new_err(format!("index entry of key {key} is not a 4-tuple: {other:?}"))),
        };
        let mut fields = [0u64; 4];
        for (k, (slot, what)) in fields.iter_mut().zip(["segment", "end", "root", "flags"]).enumerate() {
            *slot = entry_field(r.seq_item(entry, k).map_err(format_error)?, what)?;
        }
        let [seg, end, root, flags] = fields;
        let Some(handle) = handles.get_item(seg)? else {
            return Ok(missing.clone().unbind());
        };
        if !value {
            // `k in s` reads the index alone, as in a batch
            // (`Store._live_entry`): a live entry is enough; the value's
            // bytes are read, and checked, by a get.
            return Ok(pyo3::types::PyBool::new(py, true).to_owned().into_any().unbind());
        }
        let segment_py = handle.cast::<crate::region::Region>()?;
        let segment = segment_py.get();
        // The value's root is read after the checks below: its miss
        // overlaps them.
        if let Some(target) = bale_core::Reader::slot_target(root) {
            crate::compactor::prefetch(segment.buf().as_ptr().wrapping_add(target) as *mut _);
        }
        let (Ok(end), Ok(flags)) = (usize::try_from(end), u32::try_from(flags)) else {
            return Err(FormatError::new_err(format!(
                "index entry of key {key}: end {end} or flags {flags} out of range"
            )));
        };
        if flags == segment.flags()
            && end >= bale_core::format::HEADER_LEN
            && end.is_multiple_of(8)
            && end <= segment.buf().len()
        {
            // The value reads through the segment's own handle: the root
            // checked against the value's end as `value_handle` would, and
            // every slot below it against its container, as in any region;
            // no handle object per get. (Other flags need a handle of their
            // own: they change how slots are read.)
            let root_value = segment.check_open()?.reader().decode(root, end).map_err(format_error)?;
            return value_to_py(py, &segment_py.clone().unbind(), &root_value);
        }
        let value = segment.value_handle(end, root, flags)?;
        let region = crate::new_region(py, value)?;
        let root_value = region.get().root_value()?;
        return value_to_py(py, &region, &root_value);
    }
    Ok(missing.clone().unbind())
}
