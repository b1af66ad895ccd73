//! A store's get in one call (see `python/bale/_store.py` and
//! `docs/STORE.md`): the key is looked up in the index levels, newest
//! first; the first entry found decides; its segment's handle gives the
//! value. In Python this was five calls and a tuple view per get.

use bale_core::index_table::{Entry, Item, Table};
use bale_core::{Dict, Value};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{format_error, FormatError};
use crate::region::Region;
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
    let (width, units) = unsafe { crate::ffi::pyunicode::str_units(key.as_ptr()) };
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

/// Entry `i` of an index level: `(segment, end, root, flags)`, or None (deleted).
fn entry_of(reg: &Region, dict: Dict, i: usize, key: &dyn std::fmt::Display) -> PyResult<Option<Entry>> {
    let r = reg.reader();
    let entry = match r.dict_value(dict, i).map_err(format_error)? {
        Value::None => return Ok(None),
        Value::Tuple(seq) if seq.len == 4 => seq,
        other => return Err(FormatError::new_err(format!("index entry of key {key} is not a 4-tuple: {other:?}"))),
    };
    let mut fields = [0u64; 4];
    for (k, (slot, what)) in fields.iter_mut().zip(["segment", "end", "root", "flags"]).enumerate() {
        *slot = entry_field(r.seq_item(entry, k).map_err(format_error)?, what)?;
    }
    let [segment, end, root, flags] = fields;
    let (Ok(segment), Ok(flags)) = (u32::try_from(segment), u32::try_from(flags)) else {
        return Err(FormatError::new_err(format!(
            "index entry of key {key}: segment {segment} or flags {flags} out of range"
        )));
    };
    Ok(Some(Entry { segment, end, root, flags }))
}

/// `key` (an exact `str` or `bytes`) in the lookup table of an index level: one
/// bucket read for the hash, the key's units compared with those the
/// bucket's key slot names (in the level's region, read as its dict reads
/// it). `Some(None)` for a deleted key; `None` when the level lacks it.
fn find_in_table(
    reg: &Region,
    dict: Dict,
    table: &Table<'_>,
    key: &TableKey<'_>,
    candidate: impl FnMut(u32, u64),
) -> PyResult<Option<Option<Entry>>> {
    let r = reg.reader();
    let limit = dict.shape.start;
    table
        .find_then(key.hash, candidate, |slot| {
            Ok(match (key.text, r.decode(slot, limit)?) {
                (KeyText::Str(width, units), Value::Str(s)) => s.width == width && s.units() == units,
                (KeyText::Bytes(bytes), Value::Bytes(b)) => b == bytes,
                _ => false,
            })
        })
        .map_err(format_error)
}

/// A key looked up in lookup tables: an exact `str` or `bytes` (a subclass
/// may define its own equality: it goes through the dict), read and hashed
/// once for every level.
struct TableKey<'k> {
    text: KeyText<'k>,
    hash: u64,
}

#[derive(Clone, Copy)]
enum KeyText<'k> {
    Str(bale_core::format::Width, &'k [u8]),
    Bytes(&'k [u8]),
}

impl<'k> TableKey<'k> {
    fn of(key: &'k Bound<'_, PyAny>) -> Option<TableKey<'k>> {
        if unsafe { pyo3::ffi::PyUnicode_CheckExact(key.as_ptr()) } != 0 {
            let (width, units) = unsafe { crate::ffi::pyunicode::str_units(key.as_ptr()) };
            return Some(TableKey { text: KeyText::Str(width, units), hash: bale_core::hash::hash_str_units(units) });
        }
        let bytes = key.cast_exact::<pyo3::types::PyBytes>().ok()?.as_bytes();
        Some(TableKey { text: KeyText::Bytes(bytes), hash: bale_core::hash::hash_bytes(bytes) })
    }
}

/// The dict of an index level, and for each of its keys (str or bytes)
/// the key's hash, its slot and its entry: what its lookup table holds.
fn level_items(reg: &Region) -> PyResult<(Dict, Vec<Item>)> {
    let Value::Dict(dict) = reg.root_value()? else {
        return Err(FormatError::new_err("a store's index level is not a dict"));
    };
    if dict.ids != 0 {
        return Err(FormatError::new_err("a store's index level is a dict of key ids, which a store never writes"));
    }
    let r = reg.reader();
    let mut items = Vec::with_capacity(dict.len);
    for i in 0..dict.len {
        let k = r.dict_key(dict, i).map_err(format_error)?;
        if !matches!(k, Value::Str(_) | Value::Bytes(_)) {
            return Err(FormatError::new_err(format!("index key {k:?} is not a str or bytes")));
        }
        let hash = bale_core::hash::hash_value(&r, k, 0).map_err(format_error)?;
        let slot = r.word(dict.shape.pos + 8 * i).map_err(format_error)?;
        items.push((hash, slot, entry_of(reg, dict, i, &i)?));
    }
    Ok((dict, items))
}

/// The lookup table of the index level `region`, or None when an entry
/// does not fit one (see `index_table::build`).
pub fn table_bytes(region: &Region) -> PyResult<Option<Vec<u8>>> {
    Ok(bale_core::index_table::build(&level_items(region)?.1))
}

/// Checks each used bucket of `table` against the key its slot names in
/// the index region (see `Table::check_buckets`).
fn check_buckets(reg: &Region, dict: Dict, table: &Table<'_>) -> PyResult<()> {
    let r = reg.reader();
    table
        .check_buckets(|slot| bale_core::hash::hash_value(&r, r.decode(slot, dict.shape.start)?, 0))
        .map_err(format_error)
}

/// Checks that the lookup table of index file `region` holds exactly the
/// entries of its dict (`Store.verify`, through `_open_index(verify=True)`).
pub fn check_table(reg: &Region) -> PyResult<()> {
    let Some(table) = reg.index_table() else { return Ok(()) };
    table.check().map_err(format_error)?;
    let (dict, items) = level_items(reg)?;
    if table.entries() != dict.len {
        return Err(FormatError::new_err(format!(
            "the lookup table holds {} entries; the index dict has {}",
            table.entries(),
            dict.len
        )));
    }
    for (i, (hash, slot, want)) in items.into_iter().enumerate() {
        let got = table.find(hash, |s| Ok(s == slot)).map_err(format_error)?;
        if got != Some(want) {
            return Err(FormatError::new_err(format!(
                "the lookup table gives {got:?} for index key {i}; the index dict has {want:?}"
            )));
        }
    }
    Ok(())
}

/// Writes index level `region` to `path` (a new file, in full, synced
/// before it is named, as `Region.save` does) with its lookup table after it.
#[pyfunction]
pub fn _save_index(py: Python<'_>, region: &Bound<'_, Region>, path: std::path::PathBuf) -> PyResult<()> {
    let reg = region.get().check_open()?;
    let table = table_bytes(reg)?;
    py.detach(|| {
        use std::io::Write;
        let (mut file, pending) = crate::files::create(&path, "tmp")?;
        reg.write_to(&mut file)?;
        if let Some(t) = &table {
            file.write_all(t)?;
        }
        pending.persist(&file)
    })
    .map_err(|e| crate::errors::os_error(e, &path))
}

/// The value stored under `key`: `sources` are the index levels (dict
/// views, newest first) whose values are `(segment, end, root, flags)`
/// entries or None (deleted); `handles` maps each live segment to a handle
/// on it, or to None while it is not mapped yet (a store maps a segment at
/// its first read): then `mapper(segment)` maps it, and returns its handle
/// or None (not live). Returns `missing` when the key is absent, deleted,
/// or its segment is not live (dropped): an entry found decides, older
/// levels are not consulted.
#[pyfunction]
#[pyo3(signature = (key, sources, handles, missing, value = true, mapper = None))]
pub fn _store_get(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    sources: &Bound<'_, PyTuple>,
    handles: &Bound<'_, PyDict>,
    missing: &Bound<'_, PyAny>,
    value: bool,
    mapper: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    match store_lookup(py, key, sources, handles, value, mapper)? {
        Found::Value(found) => Ok(found),
        Found::Missing => Ok(missing.clone().unbind()),
        Found::Unmapped => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "_store_get: the value's segment is not mapped and no mapper was given",
        )),
    }
}

/// What a lookup found.
enum Found {
    Value(Py<PyAny>),
    /// Absent, deleted, or in a segment that is not live.
    Missing,
    /// In a segment not mapped yet, with no mapper to map it.
    Unmapped,
}

/// `_store_get`'s lookup: the value (or `True` when `value` is false). A
/// `FormatError` carries `_bale_place`: the index level (`("level", i)`,
/// `i` counting `sources` from 0) or the segment (`("segment", id)`) whose
/// bytes are wrong, for the store to name the file.
fn store_lookup(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    sources: &Bound<'_, PyTuple>,
    handles: &Bound<'_, PyDict>,
    value: bool,
    mapper: Option<&Bound<'_, PyAny>>,
) -> PyResult<Found> {
    // A candidate bucket's value root is prefetched before its key is
    // compared (two misses in flight rather than one after the other); the
    // segment's handle found for it is kept for the read.
    let mut candidate_handle: Option<(u32, Bound<'_, PyAny>)> = None;
    let prefetch_root = |segment: u32, root: u64| {
        if !value {
            return;
        }
        let Ok(Some(handle)) = handles.get_item(segment) else { return };
        if let (Ok(region), Some(target)) =
            (handle.cast::<crate::region::Region>(), bale_core::Reader::slot_target(root))
        {
            let buf = region.get().buf();
            if target < buf.len() {
                crate::compactor::prefetch(buf.as_ptr().wrapping_add(target) as *mut _);
            }
        }
        candidate_handle = Some((segment, handle));
    };
    let Some(Entry { segment, end, root, flags }) = find_entry(key, sources, prefetch_root)? else {
        return Ok(Found::Missing);
    };
    let mut handle = match candidate_handle {
        Some((seen, handle)) if seen == segment => handle,
        _ => match handles.get_item(segment)? {
            Some(handle) => handle,
            None => return Ok(Found::Missing),
        },
    };
    if !value {
        // `k in s` reads the index alone, as in a batch
        // (`Store._live_entry`): a live entry is enough; the value's
        // bytes are read, and checked, by a get.
        return Ok(Found::Value(pyo3::types::PyBool::new(py, true).to_owned().into_any().unbind()));
    }
    if handle.is_none() {
        let Some(mapper) = mapper else { return Ok(Found::Unmapped) };
        handle = mapper.call1((segment,))?;
        if handle.is_none() {
            return Ok(Found::Missing);
        }
    }
    let segment_py = handle.cast::<crate::region::Region>()?;
    read_value(py, segment_py, end, root, flags)
        .map(Found::Value)
        .map_err(|e| placed(py, e, "segment", segment as usize))
}

/// The entry of `key` in the first level of `sources` that has it
/// (`None` inside: a deleted key); `None` when no level has it.
fn find_entry(
    key: &Bound<'_, PyAny>,
    sources: &Bound<'_, PyTuple>,
    mut candidate: impl FnMut(u32, u64),
) -> PyResult<Option<Entry>> {
    let py = key.py();
    // The key's hash, computed once for every level's lookup table, and the
    // bucket it names in each prefetched before the first level is read:
    // their misses overlap each other and the delta's lookup.
    let table_key = TableKey::of(key);
    if let Some(k) = &table_key {
        for source in sources.iter() {
            // (A source that is not a view is reported by the loop below.)
            if let Some(table) = source.cast::<DictView>().ok().and_then(|v| v.get().region.get().index_table()) {
                crate::compactor::prefetch(table.home_bucket(k.hash).as_ptr() as *mut _);
            }
        }
    }
    for (level, source) in sources.iter().enumerate() {
        let view = source.cast::<DictView>()?.get();
        let reg = view.region.get();
        let found = (|| {
            if view.dict.row.is_some() {
                return Err(FormatError::new_err("a store's index level is a table row, not a dict"));
            }
            if view.dict.ids != 0 {
                // Its lookup table and `find_key` index the keys in order.
                return Err(FormatError::new_err(
                    "a store's index level is a dict of key ids, which a store never writes",
                ));
            }
            let found = match (reg.index_table(), &table_key) {
                (Some(table), Some(k)) => {
                    let found = find_in_table(reg, view.dict, &table, k, &mut candidate)?;
                    if found.is_none() {
                        reg.check_index_table_once(|| check_buckets(reg, view.dict, &table))?;
                    }
                    found
                }
                _ => match find_key(reg, view.dict, key)? {
                    Some(i) => Some(entry_of(reg, view.dict, i, key)?),
                    None => None,
                },
            };
            if let Some(Some(e)) = found {
                if usize::try_from(e.end).is_err() {
                    return Err(FormatError::new_err(format!("index entry of key {key}: end {} out of range", e.end)));
                }
            }
            Ok(found)
        })()
        .map_err(|e| placed(py, e, "level", level))?;
        if let Some(entry) = found {
            return Ok(entry);
        }
    }
    Ok(None)
}

/// The value an entry names in its segment.
fn read_value(
    py: Python<'_>,
    segment_py: &Bound<'_, crate::region::Region>,
    end: u64,
    root: u64,
    flags: u32,
) -> PyResult<Py<PyAny>> {
    let segment = segment_py.get();
    // The value's root is read after the checks below: its miss
    // overlaps them.
    if let Some(target) = bale_core::Reader::slot_target(root) {
        crate::compactor::prefetch(segment.buf().as_ptr().wrapping_add(target) as *mut _);
    }
    let end = end as usize; // checked by `find_entry`
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
    value_to_py(py, &region, &root_value)
}

/// `err` with the file it is about, when it is a `FormatError`.
fn placed(py: Python<'_>, err: PyErr, kind: &str, index: usize) -> PyErr {
    if err.is_instance_of::<FormatError>(py) {
        // Only an attribute of a fresh exception object: setting it cannot
        // fail but for memory, and then the error goes unplaced.
        let _ = err.value(py).setattr(pyo3::intern!(py, "_bale_place"), (kind, index));
    }
    err
}

/// The base class of `bale.Store`: `s[k]` and `k in s` outside a batch in
/// one call into Rust, with no Python frame (a get from a large store
/// spends most of its time on memory misses; the frame was a tenth of it).
///
/// The store sets what the lookup reads (`_set_fast`) whenever its
/// snapshot changes, and clears it while a batch is open or after
/// `close()`; then, and for every error, the class's Python methods
/// decide (`_get_slow`, `_get_default_slow`, `_contains_slow`,
/// `_get_failed`, `_get_missing`, `_check_missing_key`).
#[pyclass(subclass, frozen, module = "bale._bale", name = "_StoreReads")]
pub struct StoreReads {
    /// The index levels, newest first, and the segment handles by id.
    fast: std::sync::Mutex<Option<(Py<PyTuple>, Py<PyDict>)>>,
}

impl StoreReads {
    fn fast(&self, py: Python<'_>) -> Option<(Py<PyTuple>, Py<PyDict>)> {
        // Cloned out of the lock: the lookup may run Python code (a
        // region's exporter, an error's formatting).
        let fast = self.fast.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        fast.as_ref().map(|(sources, handles)| (sources.clone_ref(py), handles.clone_ref(py)))
    }

    /// `store_lookup` of `key` on what the store handed over, or `None`
    /// when it handed nothing, or the value lies in a segment not mapped
    /// yet (the caller then asks the store, which maps it). A
    /// `FormatError` goes to the store's `_get_failed`, which raises it
    /// named after its file.
    fn lookup(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, value: bool) -> Option<PyResult<Option<Py<PyAny>>>> {
        let py = slf.py();
        let (sources, handles) = slf.get().fast(py)?;
        Some(match store_lookup(py, key, sources.bind(py), handles.bind(py), value, None) {
            Err(err) if err.is_instance_of::<FormatError>(py) => {
                slf.call_method1(pyo3::intern!(py, "_get_failed"), (key, err.into_value(py))).map(|_| None)
            }
            Err(err) => Err(err),
            Ok(Found::Value(found)) => Ok(Some(found)),
            Ok(Found::Missing) => Ok(None),
            Ok(Found::Unmapped) => return None,
        })
    }
}

#[pymethods]
impl StoreReads {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        StoreReads { fast: std::sync::Mutex::new(None) }
    }

    /// What gets read without a Python frame: `(sources, handles)` as
    /// `_store_get` takes them, or None to send them to `_get_slow`.
    fn _set_fast(&self, fast: Option<(Py<PyTuple>, Py<PyDict>)>) {
        *self.fast.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = fast;
    }

    fn __getitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match Self::lookup(slf, key, true) {
            None => Ok(slf.call_method1(pyo3::intern!(py, "_get_slow"), (key,))?.unbind()),
            Some(found) => match found? {
                Some(value) => Ok(value),
                None => Ok(slf.call_method1(pyo3::intern!(py, "_get_missing"), (key,))?.unbind()),
            },
        }
    }

    /// `s.get(k, default)`: `s[k]`'s lookup, with `default` for a key
    /// that is absent (a key that is not a str or bytes still raises).
    #[pyo3(signature = (key, default = None))]
    fn get(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let default = default.unwrap_or_else(|| py.None());
        match Self::lookup(slf, key, true) {
            None => Ok(slf.call_method1(pyo3::intern!(py, "_get_default_slow"), (key, default))?.unbind()),
            Some(found) => match found? {
                Some(value) => Ok(value),
                None => {
                    slf.call_method1(pyo3::intern!(py, "_check_missing_key"), (key,))?;
                    Ok(default)
                }
            },
        }
    }

    fn __contains__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        match Self::lookup(slf, key, false) {
            None => slf.call_method1(pyo3::intern!(slf.py(), "_contains_slow"), (key,))?.is_truthy(),
            Some(found) => Ok(found?.is_some()),
        }
    }
}
