//! `bale.Region`: a handle on a region's bytes plus its root slot.
//!
//! Every handle belongs to a lineage: the region it was made from and
//! everything appended to it since. Handles of one lineage agree on every
//! byte below their length, so a view of one can be referenced by offset
//! from data appended through another (CNF's SHORTCUT rule).

use std::ffi::c_int;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bale_core::format::*;
use bale_core::{Reader, Value};
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::format_error;
use crate::storage::{buffer_ptr, Storage};
use crate::views::value_to_py;

/// The end of a lineage: where its next bytes go.
struct Tail {
    storage: Arc<Storage>,
    used: usize,
}

pub struct Lineage {
    tail: Mutex<Tail>,
    /// Dict shapes and record types earlier appends of this process wrote
    /// into the lineage, by content: later appends refer to them instead of
    /// writing them again (a store's values, put one by one, share one
    /// shape per key sequence as the values of one `compact` do).
    memo: Mutex<AppendMemo>,
    /// Nonzero while an append builds its bytes (with the GIL, which a
    /// finalizer run by the GC may still hand to another thread): the
    /// fork generation of the process that began it, plus one. A mark
    /// left by an older generation was set by a thread that the fork did
    /// not copy into this process: no append is running.
    appending: AtomicU64,
}

impl Lineage {
    /// The lineage of a region whose first `len` bytes of `storage` are
    /// written: no append under way, nothing in the memo.
    fn starting(storage: &Arc<Storage>, len: usize) -> Arc<Lineage> {
        Arc::new(Lineage {
            tail: Mutex::new(Tail { storage: storage.clone(), used: len }),
            memo: Mutex::default(),
            appending: AtomicU64::new(0),
        })
    }
}

#[derive(Default)]
struct AppendMemo {
    shapes: rustc_hash::FxHashMap<Box<[u8]>, u64>,
    types: rustc_hash::FxHashMap<String, u64>,
}

/// Past this many shapes (or record types) the memo starts over: data whose
/// every dict has keys of its own must not make it grow without bound.
const APPEND_MEMO_MAX: usize = 4096;

/// How many times this process's ancestry has forked since bale was loaded:
/// incremented in the child of every `fork()` (a `pthread_atfork` handler,
/// installed before the first append).
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    // Async-signal-safe: one atomic add.
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

fn install_fork_handler() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Safety: the handler only touches an atomic. On failure (ENOMEM)
        // a fork during an append leaves the child unable to append to
        // that region, as before: an error, never a crash.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
}

/// An append in progress on a lineage: its new bytes go at `at`.
pub struct AppendSlot<'a> {
    lineage: &'a Lineage,
    pub at: usize,
    /// What this append stored in `appending`.
    mark: u64,
}

impl Drop for AppendSlot<'_> {
    fn drop(&mut self) {
        // Only our own mark: after a fork in the middle of this append,
        // another append of the child may have taken the lineage over.
        let _ = self.lineage.appending.compare_exchange(self.mark, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
}

/// A compact region: one immutable, position-independent buffer.
///
/// A context manager: leaving `with` (or `close()`) stops reads through the
/// handle; the memory is released when the handle and every view,
/// memoryview and numpy array taken from it are gone.
#[pyclass(frozen, module = "bale", name = "Region")]
pub struct Region {
    storage: Arc<Storage>,
    len: usize,
    root: u64,
    flags: u32,
    lineage: Arc<Lineage>,
    /// Made by `append`: the header at the start of the storage is that of
    /// the lineage's first handle, not this one's.
    grown: bool,
    /// For grown handles, this handle as one contiguous region with its own
    /// header, made when a buffer is first exported.
    standalone: OnceLock<Box<[u8]>>,
    /// Unique among all handles ever made in this process: what caches of
    /// decoded data are keyed by (an address may be reused, an id is not).
    id: u64,
    /// Written by this process into memory only it writes: every hash index
    /// is consistent.
    trusted: bool,
    /// Otherwise, the tables (by start) whose index has been checked since
    /// a lookup in them found nothing (see `Region::check_index_once`).
    checked_indexes: Mutex<rustc_hash::FxHashSet<usize>>,
    /// The last index `check_index_once` found checked (`usize::MAX`:
    /// none yet): a lookup that misses the same dict again and again (a
    /// store's delta, at every get of an older key) then takes no lock.
    last_checked_index: std::sync::atomic::AtomicUsize,
    /// Set by `close()`: this handle's own methods (and the module
    /// functions given this handle) refuse to read. Views, buffers and
    /// arrays taken before hold the handle itself (`Py<Region>`), so they
    /// keep reading, and the memory lives until the last of them is gone.
    closed: AtomicBool,
    /// A store index file's lookup table, in the storage after the region
    /// (`store_index.rs`); set by `_open_index` only.
    index_table: Option<bale_core::index_table::Place>,
    /// A store's handle on a segment (and the handles made from it): the
    /// segment and the store's other segments, which EXTERN objects name.
    place: Option<crate::store_segments::Place>,
    /// For a store's handle: whether its value holds references to other
    /// segments (found once, by `check_exportable`).
    holds_externs: OnceLock<bool>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn new_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl Region {
    /// A new handle (a fresh id, open, no index checked yet).
    #[allow(clippy::too_many_arguments)]
    fn handle(
        storage: Arc<Storage>,
        len: usize,
        root: u64,
        flags: u32,
        lineage: Arc<Lineage>,
        grown: bool,
        trusted: bool,
    ) -> Region {
        Region {
            storage,
            len,
            root,
            flags,
            lineage,
            grown,
            standalone: OnceLock::new(),
            id: new_id(),
            trusted,
            checked_indexes: Mutex::default(),
            last_checked_index: std::sync::atomic::AtomicUsize::new(usize::MAX),
            closed: AtomicBool::new(false),
            index_table: None,
            place: None,
            holds_externs: OnceLock::new(),
        }
    }

    /// Refuses to hand out this handle's bytes alone (a buffer, `bytes`,
    /// a saved file, a pickle) when its value holds references to other
    /// segments of its store: no reader outside the store could read them.
    pub fn check_exportable(&self) -> PyResult<()> {
        if self.place.is_none() {
            return Ok(());
        }
        let holds = *self.holds_externs.get_or_init(|| {
            // Damaged: the reader that reads it says so.
            self.extern_segments().is_ok_and(|segments| !segments.is_empty())
        });
        if holds {
            return Err(PyValueError::new_err(
                "this store value references values in other segments of its store, which its bytes alone \
                 cannot reach: bale.compact(view) copies it with what it references",
            ));
        }
        Ok(())
    }

    /// The other segments of its store whose values this handle's value
    /// references (its EXTERN objects), ascending.
    pub fn extern_segments(&self) -> bale_core::Result<std::collections::BTreeSet<u32>> {
        bale_core::stats::region_stats(&self.reader(), self.root).map(|st| st.extern_segments())
    }

    /// What the value's EXTERN objects name: `(segment, end, flags, slot)`.
    pub fn extern_targets(&self) -> bale_core::Result<std::collections::BTreeSet<(u32, u64, u32, u64)>> {
        bale_core::stats::region_stats(&self.reader(), self.root).map(|st| st.externs)
    }

    /// This handle as one of a store's, on segment `place.segment`.
    pub fn placed(mut self, place: Option<crate::store_segments::Place>) -> Region {
        self.place = place;
        self
    }

    /// Registers this handle's bytes as segment `place.segment`'s.
    pub fn register_in(&self, place: &crate::store_segments::Place) {
        place.segments.register(place.segment, &self.storage, self.len, &self.lineage);
    }

    /// This handle, just appended by the store (`_store_append`): all its
    /// bytes are the store's, and its registry now holds them.
    fn stored_by_store(mut self) -> Region {
        if let Some(place) = &mut self.place {
            place.store_len = self.len;
        }
        if let Some(place) = &self.place {
            self.register_in(place);
        }
        self
    }

    pub fn place(&self) -> Option<&crate::store_segments::Place> {
        self.place.as_ref()
    }

    /// The value an EXTERN object of this handle names, as a handle whose
    /// root it is: read from the bytes the store registered for its
    /// segment. Only a dict or a list can be named (what writers make).
    pub fn resolve_extern(&self, x: &bale_core::Extern) -> PyResult<Region> {
        let Some(place) = &self.place else {
            return Err(format_error(bale_core::extern_ref::unresolved(x)));
        };
        let fail = |what: String| {
            crate::errors::FormatError::new_err(format!(
                "at byte {} of store segment {}: {what}",
                x.start, place.segment
            ))
        };
        if x.segment == place.segment {
            return Err(fail(format!("a reference to another segment names its own segment {}", x.segment)));
        }
        let Some((storage, len, lineage)) = place.segments.get(x.segment) else {
            return Err(fail(format!(
                "a reference names segment {}, which is not a segment of this store's snapshot (or one its row does not list)",
                x.segment
            )));
        };
        if x.end as usize > len {
            return Err(fail(format!(
                "a reference names bytes up to {} of segment {}, which holds {len}",
                x.end, x.segment
            )));
        }
        // The segment's own lineage: an append through this handle goes
        // after every byte of it, never over bytes the store wrote.
        let target = Region::handle(storage, x.end as usize, x.slot, x.flags, lineage, true, false).placed(Some(
            crate::store_segments::Place {
                segment: x.segment,
                segments: place.segments.clone(),
                store_len: x.end as usize,
            },
        ));
        match target.root_value()? {
            Value::Dict(_) | Value::List(_) | Value::Column(_) | Value::NumList(_) => Ok(target),
            _ => Err(fail(format!("a reference to segment {} names a value that is not a dict or a list", x.segment))),
        }
    }

    /// This handle with the lookup table at `place` of its storage (an
    /// index file's bytes after its region; checked by the caller).
    pub fn with_index_table(mut self, place: bale_core::index_table::Place) -> Region {
        self.index_table = Some(place);
        self
    }

    /// The lookup table of a store index file opened with one.
    pub fn index_table(&self) -> Option<bale_core::index_table::Table<'_>> {
        let place = self.index_table?;
        let bytes = self.storage.all().get(place.start..place.start + place.len)?;
        bale_core::index_table::Table::parse(bytes).ok()
    }

    /// Adopts `storage` after checking its header (O(1)), or everything when `verify`.
    pub fn adopt(py: Python<'_>, storage: Storage, verify: bool) -> PyResult<Region> {
        let len = storage.all().len();
        Region::adopt_prefix(py, storage, len, verify)
    }

    /// Adopts the region in the first `len` bytes of `storage`.
    pub fn adopt_prefix(py: Python<'_>, storage: Storage, len: usize, verify: bool) -> PyResult<Region> {
        let header = bale_core::parse_header(storage.prefix(len)).map_err(format_error)?;
        let storage = Arc::new(storage);
        let lineage = Lineage::starting(&storage, len);
        // Not trusted: verified bytes are not enough, as a buffer, a mapped
        // file or a shared segment can change after the check.
        let region = Region::handle(storage, len, header.root, header.flags, lineage, false, false);
        if verify {
            region.verify(py)?;
        }
        Ok(region)
    }

    /// `Err(ValueError("region is closed"))` once `close()` was called:
    /// every new read through the handle itself goes through this check.
    pub fn check_open(&self) -> PyResult<&Self> {
        if self.closed.load(Ordering::Acquire) {
            return Err(PyValueError::new_err("region is closed"));
        }
        Ok(self)
    }

    /// Marks a region this process wrote: its indexes need no check.
    pub fn written_here(mut self) -> Region {
        self.trusted = true;
        self
    }

    /// Whether this region was written here (see `written_here`).
    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    /// Before a lookup that found nothing in `table` is believed, in a
    /// region neither written here nor verified: checks once that the
    /// table's keys are stored canonically and its hash index leads to
    /// every key (O(n), then O(1) for the region's lifetime). Without it,
    /// damaged bytes can list a key that a lookup of the same key does not
    /// find.
    pub fn check_index_once(&self, table: bale_core::Table) -> PyResult<()> {
        if self.trusted {
            return Ok(());
        }
        use std::sync::atomic::Ordering;
        if self.last_checked_index.load(Ordering::Acquire) == table.start {
            return Ok(());
        }
        let mut checked = self.checked_indexes.lock().unwrap_or_else(|e| e.into_inner());
        if !checked.contains(&table.start) {
            bale_core::verify::check_table(&self.reader(), table).map_err(format_error)?;
            checked.insert(table.start);
        }
        self.last_checked_index.store(table.start, Ordering::Release);
        Ok(())
    }

    /// Runs `check`, a full check of this index file's lookup table, the
    /// first time a lookup in the table finds nothing (as
    /// `check_index_once` does for a dict's hash index): damaged bytes then
    /// raise `FormatError` rather than leave a stored key unfound.
    pub fn check_index_table_once(&self, check: impl FnOnce() -> PyResult<()>) -> PyResult<()> {
        let Some(place) = self.index_table else { return Ok(()) };
        let mut checked = self.checked_indexes.lock().unwrap_or_else(|e| e.into_inner());
        // Keyed by the table's start: past the region, so no dict's.
        if checked.contains(&place.start) {
            return Ok(());
        }
        check()?;
        checked.insert(place.start);
        Ok(())
    }

    /// The bytes this handle reads (for a grown handle, the header at its
    /// start is not its own: see `contiguous`).
    #[inline]
    pub fn buf(&self) -> &[u8] {
        self.storage.prefix(self.len)
    }
    #[inline]
    pub fn reader(&self) -> Reader<'_> {
        Reader::with_flags(self.buf(), self.flags)
    }
    pub fn is_shared(&self) -> bool {
        self.flags & FLAG_SHARED != 0
    }
    pub fn is_cyclic(&self) -> bool {
        self.flags & FLAG_CYCLIC != 0
    }
    pub fn flags(&self) -> u32 {
        self.flags
    }
    pub fn root_slot(&self) -> u64 {
        self.root
    }
    pub fn root_value(&self) -> PyResult<Value<'_>> {
        self.reader().decode(self.root, self.buf().len()).map_err(format_error)
    }
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn same_lineage(&self, other: &Region) -> bool {
        Arc::ptr_eq(&self.lineage, &other.lineage)
    }

    /// Another handle on the same bytes with `root` as its root.
    pub fn with_root(&self, root: u64) -> Region {
        let grown = self.grown || root != self.root;
        Region::handle(self.storage.clone(), self.len, root, self.flags, self.lineage.clone(), grown, self.trusted)
            .placed(self.place.clone())
    }

    /// A store segment (see `python/bale/_store.py`): the first `len` bytes
    /// of `storage` are a region's first 64 bytes (the segment's empty
    /// first handle) followed by everything appended to it since. The
    /// handle's root is that first handle's root; `_handle` makes handles
    /// on the values appended.
    pub fn segment(storage: Storage, len: usize) -> Result<Region, bale_core::FormatError> {
        if len < HEADER_LEN || !len.is_multiple_of(8) || len > storage.all().len() {
            return Err(bale_core::FormatError::new(format!(
                "segment length {len} is not a multiple of 8 of at least {HEADER_LEN} within its {} bytes",
                storage.all().len()
            )));
        }
        let header = bale_core::parse_header(storage.prefix(HEADER_LEN))?;
        let storage = Arc::new(storage);
        let lineage = Lineage::starting(&storage, len);
        Ok(Region::handle(storage, len, header.root, header.flags, lineage, true, false))
    }

    /// A handle of this lineage on its first `len` bytes with root slot
    /// `root` and `flags`, as a store's index entry names a value. The root
    /// is decoded once here; a damaged entry raises FormatError.
    pub fn value_handle(&self, len: usize, root: u64, flags: u32) -> PyResult<Region> {
        self.check_open()?;
        if len < HEADER_LEN || !len.is_multiple_of(8) || len > self.len {
            return Err(crate::errors::FormatError::new_err(format!(
                "value length {len} is not a multiple of 8 between {HEADER_LEN} and the segment's {} bytes",
                self.len
            )));
        }
        if flags & !(FLAG_SHARED | FLAG_CYCLIC) != 0 || (flags & FLAG_CYCLIC != 0 && flags & FLAG_SHARED == 0) {
            return Err(crate::errors::FormatError::new_err(format!(
                "value flags 0x{flags:x} are not valid region flags"
            )));
        }
        let handle = Region::handle(self.storage.clone(), len, root, flags, self.lineage.clone(), true, false)
            .placed(self.place.clone());
        handle.root_value()?;
        Ok(handle)
    }

    /// Starts an append: the new bytes are to be built to start at the
    /// returned slot's `at`, and handed to `finish_append`.
    pub fn begin_append(&self) -> PyResult<AppendSlot<'_>> {
        install_fork_handler();
        let mark = FORK_GENERATION.load(Ordering::Relaxed) + 1;
        let mut seen = 0;
        while let Err(now) = self.lineage.appending.compare_exchange(seen, mark, Ordering::AcqRel, Ordering::Acquire) {
            if now == mark {
                return Err(PyRuntimeError::new_err(
                    "another thread is appending to this region; appends to one region must not overlap",
                ));
            }
            // Free, or marked before a fork by a thread this process does not have.
            seen = now;
        }
        let at = self.lineage.tail.lock().unwrap_or_else(|p| p.into_inner()).used;
        Ok(AppendSlot { lineage: &self.lineage, at, mark })
    }

    /// Appends `bytes` (built to start at `slot.at`) and returns a handle
    /// on the result with root `root`.
    pub fn finish_append(&self, slot: AppendSlot<'_>, bytes: &[u8], root: u64, flags: u32) -> PyResult<Region> {
        let at = slot.at;
        let mut tail = self.lineage.tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.used != at || self.lineage.appending.load(Ordering::Acquire) != slot.mark {
            // Another append took the lineage over (possible only after a
            // fork in the middle of this one): writing at `at` would change
            // bytes that handles already read.
            return Err(PyRuntimeError::new_err(
                "the region was appended to while this append ran (a fork during the append?); nothing was appended",
            ));
        }
        if !tail.storage.has_room(at, bytes.len()) {
            // Out of room: continue in a new reservation. The old storage
            // stays alive and unchanged for the handles and views using it.
            let fresh = tail
                .storage
                .grown(at, bytes.len())
                .map_err(|e| PyMemoryError::new_err(format!("cannot reserve memory to append to a region: {e}")))?;
            tail.storage = Arc::new(fresh);
        }
        // Safety: there is room; every handle ends at or before `at`; the lock excludes other writers.
        unsafe { tail.storage.write(at, bytes) };
        tail.used = at + bytes.len();
        // Not trusted: appends may copy tables from views of unverified regions.
        Ok(Region::handle(tail.storage.clone(), tail.used, root, flags, self.lineage.clone(), true, false)
            .placed(self.place.clone()))
    }

    /// The header this handle has as a standalone region.
    fn own_header(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&self.buf()[..HEADER_LEN]);
        h[OFF_TOTAL_LEN..OFF_TOTAL_LEN + 8].copy_from_slice(&(self.len as u64).to_le_bytes());
        h[OFF_ROOT..OFF_ROOT + 8].copy_from_slice(&self.root.to_le_bytes());
        h[OFF_FLAGS..OFF_FLAGS + 4].copy_from_slice(&self.flags.to_le_bytes());
        let sum = bale_core::compute_checksum_split(&h, &self.buf()[HEADER_LEN..]);
        h[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
        h
    }

    /// This handle as one contiguous region with its own header: the
    /// storage itself for a handle made by compact, load or open; a copy,
    /// made once, for a handle made by append.
    pub fn contiguous(&self) -> &[u8] {
        if !self.grown {
            self.storage.ensure_checksum();
            return self.buf();
        }
        self.standalone.get_or_init(|| {
            let mut v = Vec::with_capacity(self.len);
            v.extend_from_slice(&self.own_header());
            v.extend_from_slice(&self.buf()[HEADER_LEN..]);
            v.into_boxed_slice()
        })
    }

    /// Writes the standalone form of this handle to `out`.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        if self.grown && self.standalone.get().is_none() {
            out.write_all(&self.own_header())?;
            out.write_all(&self.buf()[HEADER_LEN..])
        } else {
            out.write_all(self.contiguous())
        }
    }
}

#[pymethods]
impl Region {
    /// The root value: a read-only view for containers, a plain value for scalars.
    #[getter]
    fn root(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let r = slf.get().check_open()?;
        let v = r.root_value()?;
        value_to_py(slf.py(), slf.as_unbound(), &v)
    }

    /// Size of the region in bytes (equals `len(bytes(region))`).
    #[getter]
    fn nbytes(&self) -> usize {
        self.len
    }

    /// The region's type table: `(qualified name, kind, field names,
    /// records)` for each record type its root reaches, in the order first
    /// met. Walks the region (O(n)).
    fn types<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let r = self.check_open()?.reader();
        let root = self.root;
        let types = py.detach(|| bale_core::stats::record_types(&r, root)).map_err(format_error)?;
        crate::info::types_list(py, &types)
    }

    /// Full check of structure and checksum; raises FormatError.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let buf = self.check_open()?.contiguous();
        let report = py
            .detach(|| bale_core::Region::new(buf).and_then(|r| bale_core::verify_report(&r)))
            .map_err(format_error)?;
        if let (Some(at), None) = (report.first_extern, &self.place) {
            // Valid bytes, but nothing here can read them (FORMAT.md).
            return Err(format_error(bale_core::FormatError::at(
                at,
                "a reference to a value in another segment of a store: only that store reads this value",
            )));
        }
        crate::typed::check_arrays(py, &bale_core::Reader::with_flags(buf, self.flags), &report)
    }

    /// Writes the region to `path` atomically: the file appears there
    /// complete (fsynced) or not at all, and a process killed while saving
    /// leaves no temporary file behind (see `files.rs`).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        self.check_open()?;
        self.check_exportable()?;
        py.detach(|| {
            let (mut file, pending) = crate::files::create(&path, "tmp")?;
            self.write_to(&mut file)?;
            pending.persist(&file)
        })
        .map_err(|e| crate::errors::os_error(e, &path))
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.check_open()?;
        self.check_exportable()?;
        if !self.grown || self.standalone.get().is_some() {
            return Ok(PyBytes::new(py, self.contiguous()));
        }
        let header = self.own_header();
        PyBytes::new_with(py, self.len, |out| {
            out[..HEADER_LEN].copy_from_slice(&header);
            out[HEADER_LEN..].copy_from_slice(&self.buf()[HEADER_LEN..]);
            Ok(())
        })
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("bale regions are read-only"));
        }
        let me = slf.get().check_open()?;
        me.check_exportable()?;
        let buf = me.contiguous();
        let rc = ffi::PyBuffer_FillInfo(view, slf.as_ptr(), buffer_ptr(buf), buf.len() as ffi::Py_ssize_t, 1, flags);
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    /// Pickle protocol 5 ships the region's memory as one out-of-band
    /// buffer (no copy; the receiver adopts it with `bale.load`, O(1));
    /// older protocols ship it in-band as bytes.
    fn __reduce_ex__<'py>(
        slf: &Bound<'py, Self>,
        protocol: i32,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let py = slf.py();
        slf.get().check_open()?.check_exportable()?;
        let load = py.import("bale")?.getattr(pyo3::intern!(py, "load"))?;
        let payload = if protocol >= 5 {
            py.import("pickle")?.getattr(pyo3::intern!(py, "PickleBuffer"))?.call1((slf,))?
        } else {
            Region::__bytes__(slf.get(), py)?.into_any()
        };
        Ok((load, (payload,)))
    }

    /// Copies `obj` into this region's memory and returns a handle whose
    /// root is the copy. Views of this region inside `obj` are referenced
    /// where they are; views of other regions are copied natively. This
    /// handle, its views and buffers stay valid.
    #[pyo3(signature = (obj, *, share = false))]
    fn append(slf: &Bound<'_, Self>, obj: &Bound<'_, PyAny>, share: bool) -> PyResult<Py<Region>> {
        Ok(append_to(slf, obj, share, None)?.0)
    }

    /// Store support: `append` to a handle of a store's segment, where
    /// views of the store's other segments that are keys of `allowed` (the
    /// writer's transaction's segment table) and were read through
    /// `segments` are referenced instead of copied. Returns the grown
    /// handle and the ids of the other segments its new bytes reference
    /// (`None` when there are none: the common case makes no list).
    #[pyo3(signature = (obj, segments, allowed, *, share = false))]
    fn _store_append(
        slf: &Bound<'_, Self>,
        obj: &Bound<'_, PyAny>,
        segments: PyRef<'_, crate::store_segments::SegmentsHandle>,
        allowed: Bound<'_, pyo3::types::PyDict>,
        share: bool,
    ) -> PyResult<(Py<Region>, Option<Vec<u32>>)> {
        let me = slf.get();
        let Some(place) = me.place() else {
            return Err(PyValueError::new_err("_store_append: not a handle of a store's segment"));
        };
        let target = crate::store_segments::ExternTarget::new(place.segment, segments.0.clone(), allowed.unbind());
        let (grown, kept) = append_to(slf, obj, share, Some(target))?;
        Ok((grown, (!kept.is_empty()).then(|| kept.into_iter().collect())))
    }

    /// Store support: where the lineage's next append goes (past this
    /// handle's end when another handle of the lineage was appended to).
    #[getter]
    fn _tail(&self) -> usize {
        self.lineage.tail.lock().unwrap_or_else(|p| p.into_inner()).used
    }

    /// Store support: `(nbytes, root slot, flags)`, what `_handle` takes
    /// to make this handle again.
    #[getter]
    fn _layout(&self) -> (usize, u64, u32) {
        (self.len, self.root, self.flags)
    }

    /// Store support: this handle (same bytes, same lineage) as segment
    /// `segment` of the registry `segments`, which now holds its bytes.
    fn _placed(
        &self,
        py: Python<'_>,
        segments: PyRef<'_, crate::store_segments::SegmentsHandle>,
        segment: u32,
    ) -> PyResult<Py<Region>> {
        let store_len = self.place.as_ref().map_or(self.len, |p| p.store_len.min(self.len));
        let place = crate::store_segments::Place { segment, segments: segments.0.clone(), store_len };
        self.register_in(&place);
        let h = Region::handle(
            self.storage.clone(),
            self.len,
            self.root,
            self.flags,
            self.lineage.clone(),
            self.grown,
            self.trusted,
        )
        .placed(Some(place));
        crate::new_region(py, h)
    }

    /// Store support: a handle of this lineage on its first `len` bytes,
    /// with root slot `root` and `flags` (as `_layout` gave them). The
    /// root is decoded once here; a damaged one raises FormatError.
    fn _handle(&self, py: Python<'_>, len: usize, root: u64, flags: u32) -> PyResult<Py<Region>> {
        crate::new_region(py, self.value_handle(len, root, flags)?)
    }

    /// Store support: the value of slot `slot` read through this handle
    /// (views of one handle are one source to `append`, which keeps the
    /// sharing among them when it copies them).
    fn _value_at(slf: &Bound<'_, Self>, slot: u64) -> PyResult<Py<PyAny>> {
        let r = slf.get().check_open()?;
        let v = r.reader().decode(slot, r.len).map_err(format_error)?;
        value_to_py(slf.py(), slf.as_unbound(), &v)
    }

    /// Store support: bytes `start..end` of this handle (`end <= nbytes`),
    /// which an append wrote past the previous handle's end.
    fn _span<'py>(&self, py: Python<'py>, start: usize, end: usize) -> PyResult<Bound<'py, PyBytes>> {
        self.check_open()?;
        if start > end || end > self.len {
            return Err(PyValueError::new_err(format!(
                "span {start}..{end} is not within the region's {} bytes",
                self.len
            )));
        }
        if start < HEADER_LEN {
            self.storage.ensure_checksum();
        }
        Ok(PyBytes::new(py, &self.buf()[start..end]))
    }

    /// Store support: the slots of the root tuple's items (each one is a
    /// root for `_handle`).
    fn _item_slots(&self) -> PyResult<Vec<u64>> {
        let r = self.check_open()?.reader();
        match self.root_value()? {
            Value::Tuple(seq) => (0..seq.len).map(|i| r.seq_slot(seq, i).map_err(format_error)).collect(),
            _ => Err(PyValueError::new_err("the root is not a tuple stored as a tuple")),
        }
    }

    /// A fresh region holding only what this handle's root reaches (the
    /// copying collection for a region grown by many appends).
    fn compacted(&self, py: Python<'_>) -> PyResult<Py<Region>> {
        let r = self.check_open()?.reader();
        let mut t = bale_core::Transplant::new(&r, false, self.is_shared());
        // The copy is at most as large as the source (plus a little when a shared
        // string is evicted from the copy cache and copied again).
        let mut b = crate::spare_buffer::builder(self.len + self.len / 16);
        let root = py.detach(|| t.copy(&r, &mut b, self.root, self.len)).map_err(format_error)?;
        b.set_flags(t.flags());
        let copy = Region::adopt(py, Storage::owned(b.finish(root)), false)?;
        // A copy is as consistent as what it was copied from.
        crate::new_region(py, if self.trusted { copy.written_here() } else { copy })
    }

    /// Refuses new reads through this handle: `root`, buffers, `bytes()`,
    /// `save`, `append`, pickling ... raise `ValueError: region is closed`
    /// (`nbytes` and `closed` still answer). Views, memoryviews and numpy
    /// arrays taken before keep working: they hold the handle, and the
    /// memory (the file mapping, the loaded buffer, the shared-memory
    /// segment's mapping) is released when the last of them and the handle
    /// itself are gone, never before. Closing twice is allowed.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Whether `close()` was called on this handle.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().check_open()?;
        Ok(slf)
    }

    /// Closes the handle (see `close`); exceptions propagate.
    fn __exit__(
        &self,
        exc_type: Option<&Bound<'_, PyAny>>,
        exc: Option<&Bound<'_, PyAny>>,
        tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        let _ = (exc_type, exc, tb);
        self.close();
        false
    }

    /// Regions are immutable: a copy is the region itself.
    fn __copy__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __deepcopy__<'py>(slf: Bound<'py, Self>, _memo: &Bound<'py, PyAny>) -> Bound<'py, Self> {
        slf
    }

    fn __repr__(&self) -> String {
        if self.closed.load(Ordering::Acquire) {
            return format!("<bale.Region {} bytes, closed>", self.len);
        }
        let what = match self.root_value() {
            Ok(Value::List(s)) => format!("list of {}", s.len),
            Ok(Value::NumList(l)) => format!("list of {}", l.len),
            Ok(Value::Column(c)) => format!("list of {}", c.len),
            Ok(Value::Tuple(s)) => format!("tuple of {}", s.len),
            Ok(Value::Dict(d)) => format!("dict of {}", d.len),
            Ok(Value::Set(t)) => format!("set of {}", t.len),
            Ok(Value::FrozenSet(t)) => format!("frozenset of {}", t.len),
            Ok(_) => "scalar".to_string(),
            Err(_) => "malformed".to_string(),
        };
        format!("<bale.Region {} bytes, root: {}>", self.len, what)
    }
}

/// `Region.append`, with references to other segments of a store when
/// `externs` is given; also returns the segments referenced.
fn append_to(
    slf: &Bound<'_, Region>,
    obj: &Bound<'_, PyAny>,
    share: bool,
    externs: Option<crate::store_segments::ExternTarget>,
) -> PyResult<(Py<Region>, std::collections::BTreeSet<u32>)> {
    let py = slf.py();
    let me = slf.get().check_open()?;
    let slot = me.begin_append()?;
    let at = slot.at;
    let mut c = crate::compactor::Compactor::new(py, 0).share(share).appending(slf.clone().unbind(), at);
    c.externs = externs.map(|mut e| {
        e.at = at as u64;
        e
    });
    // The memo is taken out for the append (which `begin_append` made
    // this thread's alone) and put back after it, with what it wrote
    // if the append succeeded, as it was if not: an entry must never
    // name bytes the lineage does not hold.
    let memo = std::mem::take(&mut *me.lineage.memo.lock().unwrap_or_else(|p| p.into_inner()));
    c.shapes_by_content = Some(memo.shapes);
    c.types_by_content = Some(memo.types);
    let by_store = c.externs.is_some();
    let grown = c.run(obj).and_then(|root| {
        // References to data already in the lineage set SHARED (and CYCLIC
        // when that data is cyclic); new data alone is a tree unless shared.
        let flags = c.flags();
        me.finish_append(slot, c.builder.new_bytes(), root, flags)
    });
    // Only the store's appends are the store's bytes (a hand append through
    // a store's handle never reaches a commit).
    let grown = if by_store { grown.map(Region::stored_by_store) } else { grown };
    let mut memo = AppendMemo {
        shapes: c.shapes_by_content.take().unwrap_or_default(),
        types: c.types_by_content.take().unwrap_or_default(),
    };
    if grown.is_err() {
        memo.shapes.retain(|_, &mut s| (s as usize) < at);
        memo.types.retain(|_, &mut s| (s as usize) < at);
    }
    if memo.shapes.len() > APPEND_MEMO_MAX {
        memo.shapes.clear();
    }
    if memo.types.len() > APPEND_MEMO_MAX {
        memo.types.clear();
    }
    *me.lineage.memo.lock().unwrap_or_else(|p| p.into_inner()) = memo;
    let kept = c.extern_segments();
    Ok((crate::new_region(py, grown?)?, kept))
}
