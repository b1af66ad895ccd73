//! `bale._bale`: the extension module behind the `bale` package.

mod address_map;
mod alloc;
mod attached;
mod bytes_view;
mod column;
mod compactor;
mod convert;
mod dict_values;
mod errors;
mod fastslots;
mod ffi;
mod files;
mod gc_pause;
mod info;
mod json;
mod json_input;
mod json_stream;
mod number_list;
mod reader_locks;
mod record_view;
mod region;
mod rows;
mod scan_floor;
mod spare_buffer;
mod storage;
mod store_index;
mod store_segments;
mod stream_table;
mod streaming;
mod tables;
mod thawing;
mod tuple_trees;
mod typed;
mod views;

use std::path::PathBuf;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

use crate::errors::{format_error, os_error, CompactError, FormatError};
use crate::region::Region;
use crate::storage::{ExportedBuffer, Storage};
use crate::views::{untracked, view_parts};

/// A deep, immutable copy of `obj` in a fresh region.
#[pyfunction]
#[pyo3(signature = (obj, *, share = false))]
fn compact(py: Python<'_>, obj: &Bound<'_, PyAny>, share: bool) -> PyResult<Py<Region>> {
    let mut c = compactor::Compactor::reusing(py).share(share);
    let root = c.run(obj)?;
    // The checksum is written when the bytes are first read as bytes (Note
    // [The checksum written late] in storage.rs).
    let bytes = c.region_bytes_unsummed(root);
    let checked = |r: Region| if c.copied_unchecked { r } else { r.written_here() };
    if c.wrote_arrays {
        let (storage, len) = Storage::owned_aligned_unsummed(bytes).map_err(|e| PyOSError::new_err(e.to_string()))?;
        return new_region(py, checked(Region::adopt_prefix(py, storage, len, false)?));
    }
    new_region(py, checked(Region::adopt(py, Storage::owned_unsummed(bytes), false)?))
}

pub(crate) fn new_region(py: Python<'_>, region: Region) -> PyResult<Py<Region>> {
    Ok(untracked(Py::new(py, region)?))
}

/// The region a view lives in, as a handle whose root is that view's
/// value (for a table row or list-column slice, which have no place of
/// their own, a copy appended to the region); `None` for anything that is
/// not a view.
#[pyfunction]
fn region_of(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Option<Py<Region>>> {
    match view_parts(value) {
        Some((region, node)) => match compactor::node_slot(node) {
            Some(slot) => Ok(Some(new_region(py, region.get().with_root(slot))?)),
            // A table row or list-column slice has no place of its own: the
            // handle is rooted at a copy appended to the same region.
            None => Ok(Some(
                region.bind(py).call_method1(pyo3::intern!(py, "append"), (value,))?.cast_into::<Region>()?.unbind(),
            )),
        },
        None => Ok(None),
    }
}

/// Native Python objects from a view (deep); anything else is returned as
/// is. Records are rebuilt with the classes in `types`, else those this
/// process registered or compacted.
#[pyfunction]
#[pyo3(signature = (value, *, types = None))]
fn thaw(py: Python<'_>, value: &Bound<'_, PyAny>, types: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let types = match types {
        None => None,
        Some(t) => {
            let t = pyo3::types::PyTuple::new(py, t.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
            for cls in t.iter() {
                if !cls.is_instance_of::<pyo3::types::PyType>() {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "thaw(types=...) takes classes, got {}",
                        cls.repr()?
                    )));
                }
            }
            Some(t.unbind())
        }
    };
    if let Ok(region) = value.cast::<Region>() {
        // A region thaws as its root, as `to_json` reads it, rather than
        // passing through like a native value.
        let reg = region.get().check_open()?;
        return thawing::thaw_with_types(py, reg, reg.root_value()?, types);
    }
    match view_parts(value) {
        Some((region, node)) => thawing::thaw_with_types(py, region.get(), node.value(), types),
        None => Ok(value.clone().unbind()),
    }
}

/// Adopts any buffer-protocol object as a region, without copying.
#[pyfunction]
#[pyo3(signature = (buffer, *, verify = false))]
fn load(py: Python<'_>, buffer: &Bound<'_, PyAny>, verify: bool) -> PyResult<Py<Region>> {
    let exported = ExportedBuffer::new(buffer)?;
    new_region(py, Region::adopt(py, Storage::exported(exported), verify)?)
}

/// Opens `path` for reading if it is a regular file. Without blocking: a
/// FIFO would wait for a writer (in a retry loop no signal ends), and a
/// device would map something else than a file's bytes.
fn open_regular(path: &std::path::Path) -> PyResult<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| os_error(e, path))?;
    let meta = file.metadata().map_err(|e| os_error(e, path))?;
    if meta.is_dir() {
        return Err(os_error(std::io::Error::from_raw_os_error(libc::EISDIR), path));
    }
    if !meta.is_file() {
        return Err(FormatError::new_err(format!("{}: not a regular file", path.display())));
    }
    Ok(file)
}

/// Memory-maps the region file at `path` (read-only, shared, O(1)).
#[pyfunction]
#[pyo3(signature = (path, *, verify = false))]
fn open(py: Python<'_>, path: PathBuf, verify: bool) -> PyResult<Py<Region>> {
    new_region(py, open_mapped(py, &path, verify, memmap2::Advice::Normal)?)
}

/// A `FormatError` about `path`'s bytes, its message prefixed with the path.
fn in_file(py: Python<'_>, path: &std::path::Path, e: PyErr) -> PyErr {
    if e.is_instance_of::<FormatError>(py) {
        FormatError::new_err(format!("{}: {}", path.display(), e.value(py)))
    } else {
        e
    }
}

/// Store support: `open` of an index file, read by hash probes: the kernel
/// reads no pages around the ones a lookup touches. The bytes after the
/// region, if any, are its lookup table (`store_index.rs`): checked in
/// O(1) here, in full with `verify`.
#[pyfunction]
#[pyo3(signature = (path, verify = false))]
fn _open_index(py: Python<'_>, path: PathBuf, verify: bool) -> PyResult<Py<Region>> {
    let named = |e: PyErr| in_file(py, &path, e);
    let file = open_regular(&path)?;
    let size = file.metadata().map_err(|e| os_error(e, &path))?.len() as usize;
    if size < bale_core::format::HEADER_LEN {
        return Err(FormatError::new_err(format!(
            "{}: index file of {size} bytes has no region header",
            path.display()
        )));
    }
    // Safety: read-only; index files are written whole and never rewritten (see save).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| os_error(e, &path))?;
    fault_in_header(&map, memmap2::Advice::Random);
    let len = bale_core::announced_length(&map[..bale_core::format::HEADER_LEN]).map_err(|e| named(format_error(e)))?;
    let len = usize::try_from(len).ok().filter(|&n| n <= size).ok_or_else(|| {
        FormatError::new_err(format!("{}: the index region announces {len} bytes; the file has {size}", path.display()))
    })?;
    let table = (len < size).then(|| bale_core::index_table::Place { start: len, len: size - len });
    if let Some(place) = table {
        bale_core::index_table::Table::parse(&map[place.start..]).map_err(|e| named(format_error(e)))?;
    }
    let mut region = Region::adopt_prefix(py, Storage::mapped(map, file), len, verify).map_err(named)?;
    if let Some(place) = table {
        region = region.with_index_table(place);
    }
    let region = new_region(py, region)?;
    if verify && table.is_some() {
        store_index::check_table(region.get()).map_err(named)?;
    }
    Ok(region)
}

fn open_mapped(py: Python<'_>, path: &std::path::Path, verify: bool, advice: memmap2::Advice) -> PyResult<Region> {
    let file = open_regular(path)?;
    let meta = file.metadata().map_err(|e| os_error(e, path))?;
    let len = meta.len();
    let storage = if len == 0 {
        Storage::owned(Vec::new())
    } else {
        // Safety: the map is read-only; the file is only ever replaced by rename (see save).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| os_error(e, path))?;
        fault_in_header(&map, advice);
        Storage::mapped(map, file)
    };
    Region::adopt(py, storage, verify).map_err(|e| in_file(py, path, e))
}

/// Faults in the page of a mapping's header alone, then leaves `advice` on
/// the mapping: by default the kernel reads megabytes around a first fault,
/// and an O(1) open (of a region, of each file of a store) would read them
/// on a cold cache.
fn fault_in_header(map: &memmap2::Mmap, advice: memmap2::Advice) {
    let _ = map.advise(memmap2::Advice::Random);
    let _ = std::hint::black_box(map.first().copied());
    let _ = map.advise(advice);
}

/// Store support: maps the first `length` bytes of the store segment file
/// at `path` (read-only, shared) as a segment handle (`Region::segment`).
/// `keep_file`: keep its descriptor, for appends to map the file again
/// (a writer's open segments); otherwise it is closed once mapped.
/// `place`: the store's registry and the segment's id; the handle's values
/// resolve references to other segments through it, and the registry now
/// holds these bytes for the segment.
#[pyfunction]
#[pyo3(signature = (path, length, keep_file = true, place = None))]
fn _open_segment(
    py: Python<'_>,
    path: PathBuf,
    length: usize,
    keep_file: bool,
    place: Option<(PyRef<'_, store_segments::SegmentsHandle>, u32)>,
) -> PyResult<Py<Region>> {
    let file = open_regular(&path)?;
    let size = file.metadata().map_err(|e| os_error(e, &path))?.len();
    if size < length as u64 {
        return Err(FormatError::new_err(format!(
            "{}: segment file has {size} bytes; the store's commit says it has {length}",
            path.display()
        )));
    }
    // Safety: read-only; a segment's bytes below a committed length are
    // never written again (appends go past it, reclaim unlinks).
    let map = unsafe { memmap2::MmapOptions::new().len(length).map(&file) }.map_err(|e| os_error(e, &path))?;
    fault_in_header(&map, memmap2::Advice::Normal);
    let storage = if keep_file { Storage::mapped(map, file) } else { Storage::mapped_alone(map) };
    let region =
        Region::segment(storage, length).map_err(|e| FormatError::new_err(format!("{}: {}", path.display(), e)))?;
    let region = match place {
        Some((segments, segment)) => {
            let place = store_segments::Place { segment, segments: segments.0.clone(), store_len: length };
            region.register_in(&place);
            region.placed(Some(place))
        }
        None => region,
    };
    new_region(py, region)
}

/// Store support: XXH3-64 (seed 0) of `data`.
#[pyfunction]
fn _xxh3(data: &[u8]) -> u64 {
    bale_core::xxh3_64(data)
}

/// Checks a region's 64-byte header and returns the region's total length.
#[pyfunction]
fn announced_length(head: &[u8]) -> PyResult<u64> {
    bale_core::announced_length(head).map_err(format_error)
}

/// Panics, for the test that a Rust panic still becomes a Python exception:
/// the unwinder is linked in statically (see build.rs), not loaded from libgcc_s.
#[pyfunction]
fn _panic_for_test() {
    panic!("bale: deliberate panic (unwinding self-test)");
}

/// The region bytes `compact(obj)` gives, written with the frame loop
/// alone: for the test that the tuple-tree recursion writes the same bytes.
#[pyfunction]
fn _compact_by_frames<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let mut c = compactor::Compactor::new(py, bale_core::writer::FIRST_CAPACITY);
    c.tuple_trees = false;
    let root = c.run(obj)?;
    Ok(pyo3::types::PyBytes::new(py, &c.region_bytes(root)))
}

/// Which readings of CPython's private layouts this process checked and
/// uses (diagnostics; each falls back to the public API when off).
#[pyfunction]
fn _layout_checks(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let checks = pyo3::types::PyDict::new(py);
    checks.set_item("fast_paths_switched_off", ffi::switched_off())?;
    checks.set_item("ints", ffi::pylong::fast_path_enabled())?;
    checks.set_item("views", alloc::fast_path_enabled())?;
    checks.set_item("dict_entries", ffi::pydict::layout_checked())?;
    checks.set_item("type_reads", ffi::pytype::fast_path_enabled())?;
    Ok(checks)
}

#[pymodule(gil_used = true)]
fn _bale(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CompactError", py.get_type::<CompactError>())?;
    m.add("FormatError", py.get_type::<FormatError>())?;
    m.add("ThawError", py.get_type::<errors::ThawError>())?;
    m.add_class::<record_view::RecordView>()?;
    m.add_class::<number_list::NumberListView>()?;
    m.add("FORMAT_VERSION", bale_core::format::VERSION)?;
    m.add_class::<Region>()?;
    m.add_class::<views::ListView>()?;
    m.add_class::<views::TupleView>()?;
    m.add_class::<views::DictView>()?;
    m.add_class::<dict_values::DictValues>()?;
    m.add_class::<views::SetView>()?;
    m.add_class::<views::FrozenSetView>()?;
    m.add_function(wrap_pyfunction!(compact, m)?)?;
    m.add_function(wrap_pyfunction!(json_input::compact_json, m)?)?;
    m.add_function(wrap_pyfunction!(thaw, m)?)?;
    m.add_function(wrap_pyfunction!(region_of, m)?)?;
    m.add_function(wrap_pyfunction!(json::to_json, m)?)?;
    m.add_function(wrap_pyfunction!(bytes_view::memoryview_of, m)?)?;
    m.add_function(wrap_pyfunction!(column::column, m)?)?;
    m.add_function(wrap_pyfunction!(info::region_stats, m)?)?;
    m.add_function(wrap_pyfunction!(info::_extern_segments, m)?)?;
    m.add_function(wrap_pyfunction!(info::_extern_targets, m)?)?;
    m.add_class::<streaming::Writer>()?;
    m.add_function(wrap_pyfunction!(json_stream::stream_json, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(announced_length, m)?)?;
    m.add_function(wrap_pyfunction!(_open_segment, m)?)?;
    m.add_function(wrap_pyfunction!(reader_locks::_reader_lock, m)?)?;
    m.add_function(wrap_pyfunction!(reader_locks::_oldest_reader, m)?)?;
    m.add_function(wrap_pyfunction!(_open_index, m)?)?;
    m.add_function(wrap_pyfunction!(store_index::_save_index, m)?)?;
    m.add_function(wrap_pyfunction!(_xxh3, m)?)?;
    m.add_function(wrap_pyfunction!(scan_floor::_read_every_value, m)?)?;
    m.add_function(wrap_pyfunction!(store_index::_store_get, m)?)?;
    m.add_class::<store_index::StoreReads>()?;
    m.add_class::<store_segments::SegmentsHandle>()?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(_layout_checks, m)?)?;
    m.add_function(wrap_pyfunction!(_compact_by_frames, m)?)?;
    m.add("HEADER_LEN", bale_core::format::HEADER_LEN)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    if ffi::switched_off() {
        // Every reading of private layouts stays off: the public C-API paths
        // alone (so that a test run can cover them).
        return Ok(());
    }
    let bits: u32 = py
        .import("sys")?
        .getattr(pyo3::intern!(py, "int_info"))?
        .getattr(pyo3::intern!(py, "bits_per_digit"))?
        .extract()?;
    ffi::pylong::enable_fast_path(py, bits)?;
    ffi::pydict::check_layout(py)?;
    ffi::pytype::enable_fast_path();
    // Check the object layout the fast view allocation relies on.
    let probe = new_region(
        py,
        Region::adopt(py, Storage::owned(bale_core::Builder::new().finish(bale_core::format::SLOT_NONE)), false)?,
    )?;
    alloc::enable_fast_path(views::layout_check(py, &probe)?);
    if alloc::fast_path_enabled() {
        fastslots::install(py);
    }
    Ok(())
}
