//! Python objects to a region, in one iterative pass through the C-API:
//! the compactor is a source of the core's encoder (`bale_core::encoder`),
//! whose `Walk` holds the open containers (the compactor's `Cursor`s) and
//! writes each container once its children are written.
//!
//! Children are written before their container. Strings met again by
//! identity, and dict key sequences met again, are written once. With
//! `share`, every container met again is written once too, and a container
//! met again inside itself becomes a forward reference (a cyclic region).
//! Views of other regions are copied region to region; views of the region
//! being appended to are referenced where they are.

use std::fmt::Write;
use std::ptr::addr_of_mut;

use bale_core::encoder::{Container, Frame, Source, Walk, NO_IDENTITY};
use bale_core::format::{
    make_int_slot, make_pair_slot, make_seq_slot, make_sstr_slot, Width, FLAG_CYCLIC, FLAG_SHARED, FLAVOR_ENUM,
    FLAVOR_ENUM_MIXIN, FLAVOR_NAMEDTUPLE, SHORT_MAX, SLOT_EMPTY_LIST, SLOT_EMPTY_TUPLE, SLOT_FALSE, SLOT_NONE,
    SLOT_TRUE, TAG_LIST, TAG_TUPLE,
};
use bale_core::hash::{
    frozenset_hash, hash_bigint, hash_bytes, hash_complex, hash_f64, hash_i64, hash_str_units, mix, TupleHasher,
    MAX_KEY_DEPTH, SEED_NONE,
};
use bale_core::id_dict::{Ids, KeyTable, ID_DICT_MARK, ID_DICT_MAX_KEYS};
use bale_core::{Builder, Transplant};
use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::errors::CompactError;
use crate::ffi::pylong::int_value;
use crate::ffi::pyunicode::str_units;
use crate::ffi::{pybytes, pydict, pyfloat, pylist, pytuple};
use crate::region::Region;
use crate::thawing::thaw_value;
use crate::typed::{classify, scalar_parts, ArrayParts, Handler};
use crate::views::{check_expansion_of, view_parts, Items, Node};
use bale_core::columns::is_slice;
pub(crate) use bale_core::layout::SMALL_LEAF_SEQ;
use bale_core::layout::{inline_str, key_signature, SHAPE_CACHE_MAX_KEYS, TABLE_MIN_ROWS};

/// Path depth up to which cycle checks scan the path instead of a hash set.
const LINEAR_PATH: usize = 32;

/// Starts loading the header of `obj`: walking a graph is bound by these misses.
#[inline(always)]
pub(crate) fn prefetch(obj: *mut PyObject) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch(obj as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = obj;
}

/// How far ahead of the element being visited its siblings are prefetched.
pub(crate) const PREFETCH_AHEAD: usize = 4;

/// How far ahead of a string being written the place a string has in the
/// map of shared strings is loaded (`Note [Prefetched places of shared
/// strings]`): only its address is needed, so farther than the objects.
pub(crate) const SHARED_STR_AHEAD: usize = 8;

/// Where the compactor is in an open container (see `bale_core::encoder`),
/// and how the container is written.
#[derive(Clone, Copy)]
pub enum Cursor {
    /// `seen`: `python_runs` when a list's length was last known to be
    /// `len` (see `Compactor::resume`).
    Seq { obj: *mut PyObject, tuple: bool, len: usize, next: usize, seen: u64 },
    Dict {
        obj: *mut PyObject,
        /// Its `collections` class word (`bale_core::dict_class`).
        class: u64,
        shape: u64,
        items: usize,
        len: usize,
        next: usize,
        seen: u64,
    },
    /// A record: `items` holds (field name, value) pairs, the values owned
    /// from `refs` on in `record_refs` when they had to be fetched.
    Record { obj: *mut PyObject, ty: u64, items: usize, refs: usize, len: usize, next: usize, member: bool },
}

/// Where a cached key sequence sits in `Compactor::shape_keys`, and its shape.
#[derive(Clone, Copy)]
struct ShapeEntry {
    start: usize,
    len: usize,
    slot: u64,
}

/// The item array of an exact list or tuple.
#[inline(always)]
pub(crate) unsafe fn seq_items(obj: *mut PyObject, tuple: bool) -> *mut *mut PyObject {
    if tuple {
        pytuple::items_ptr(obj)
    } else {
        pylist::items_ptr(obj)
    }
}

impl Cursor {
    fn obj(&self) -> *mut PyObject {
        match *self {
            Cursor::Seq { obj, .. } | Cursor::Dict { obj, .. } | Cursor::Record { obj, .. } => obj,
        }
    }
    /// Lists and dicts: the containers a cycle must pass through.
    fn mutable(&self) -> bool {
        !matches!(self, Cursor::Seq { tuple: true, .. })
    }
}

/// How a frame reaches its current element, for error paths.
enum Step<'py> {
    Index(usize),
    Key(Bound<'py, PyAny>),
    Field(Bound<'py, PyAny>),
}

/// Why a dict key or set element could not be stored: a Python error, or
/// a refusal whose reason the caller prefixes with the path it knows.
enum KeyFailure {
    Python(PyErr),
    Refused(String),
}

impl From<PyErr> for KeyFailure {
    fn from(e: PyErr) -> Self {
        KeyFailure::Python(e)
    }
}

type KeyResult<T> = Result<T, KeyFailure>;

pub struct Compactor<'py> {
    py: Python<'py>,
    pub builder: Builder,
    /// The open containers, their children's slots, and (with sharing,
    /// `Walk::shares`: each object written once, cycles allowed) what was
    /// written by address: the core's walk (`bale_core::encoder`).
    pub(crate) walk: Walk<Cursor>,
    /// The region an append adds to: its views are referenced, not copied.
    target: Option<Py<Region>>,
    /// Copies made from views of other regions, by region.
    transplants: FxHashMap<usize, (Py<Region>, Transplant)>,
    /// Appending to a store's segment: what may be referenced in its other
    /// segments (`store_segments::ExternTarget`).
    pub externs: Option<crate::store_segments::ExternTarget>,
    /// Header flags the result needs.
    flags: u32,
    /// Shapes of string keys by content, kept across compactions by a
    /// streaming writer (whose items die between compactions, so pointers
    /// cannot identify their keys).
    pub shapes_by_content: Option<FxHashMap<Box<[u8]>, u64>>,
    /// Record types by content (name, flavor, fields), kept across
    /// compactions by a streaming writer like `shapes_by_content`.
    pub types_by_content: Option<FxHashMap<String, u64>>,
    strings: crate::address_map::AddressMap,
    /// Strings the tables being written will still write as slots: a map
    /// of shared strings that must grow grows towards room for them
    /// (`Note [Prefetched places of shared strings]`).
    pub(crate) strings_ahead: usize,
    /// A table's keys and a block of its rows' values, kept for the next
    /// (`Compactor::table`).
    pub(crate) table_keys: Vec<*mut PyObject>,
    pub(crate) table_block: Vec<*mut PyObject>,
    /// Shapes written, by their dicts' key pointers: each cached key
    /// sequence sits in `shape_keys`, one after another, and `shapes` maps
    /// its hash to where it is and its slot. (A map of boxed slices
    /// allocated and freed one per shape cost a tenth of compacting dicts
    /// whose key sequences are each their own.)
    shapes: FxHashMap<u64, ShapeEntry>,
    shape_keys: Vec<usize>,
    /// Which dicts become ID_DICTs, and their key table.
    key_table: KeyTable,
    /// The ids of the open ID_DICTs, innermost last.
    open_ids: Vec<Ids>,
    /// Key address -> its id in `key_table` (the key pinned, as in `shapes`).
    key_ids: FxHashMap<usize, u8>,
    /// The key pointers and shape of the last dict entered.
    last_shape: Option<(Vec<usize>, u64)>,
    keepalive: Vec<Py<PyAny>>,
    /// Frames (a cursor and where its children's slots start) a tuple tree
    /// hands over to the frame loop (kept for its capacity).
    pub(crate) handover: Vec<(Cursor, usize)>,
    /// Whether tuples are written by `tuple_tree` (off only in a test).
    pub(crate) tuple_trees: bool,
    deep_path: FxHashSet<usize>,
    pub(crate) items: Vec<(*mut PyObject, *mut PyObject)>,
    pub(crate) key_ptrs: Vec<usize>,
    /// How each non-built-in type met is stored, by type pointer.
    handlers: FxHashMap<usize, Handler>,
    /// Field values fetched for records being written.
    record_refs: Vec<Py<PyAny>>,
    /// Enum members written, by address: one copy each, whatever `share` says.
    members: FxHashMap<usize, u64>,
    /// Whether numpy data was written (its alignment needs aligned memory).
    pub wrote_arrays: bool,
    /// Whether a view of a region this process did not write was copied:
    /// its encodings are copied as they are, checked or not, so the result
    /// is not known to be consistent either (see `Region::written_here`).
    pub copied_unchecked: bool,
    /// How error messages name the value given to `run` (`root`; the
    /// writer names its items `root[3]`, `root['key']`).
    root_name: String,
    /// Addresses a cache names, used since Python code last ran (see
    /// `Note [Python code during compaction]`).
    pending: Vec<*mut PyObject>,
    /// References owned until the compaction ends: what caches name once
    /// Python code has run, and last references the walk let go of.
    pins: Vec<Py<PyAny>>,
    /// References taken before Python code runs to the containers being
    /// walked (by depth) and to their entries still to visit (by index in
    /// `items`), let go of when their frame closes.
    frame_pins: Vec<(usize, *mut PyObject)>,
    /// The bytes of the last int outside i64 (one buffer for all of them).
    int_scratch: Vec<u8>,
    item_pins: Vec<(usize, *mut PyObject)>,
    /// `items[..items_pinned]` and `frames[..frames_pinned]` are pinned.
    items_pinned: usize,
    frames_pinned: usize,
    /// Containers whose keys or elements are being stored before their
    /// frame exists (a dict's shape, a set's elements).
    entering: Vec<*mut PyObject>,
    /// How many steps of Python code have run (decisions that Python code
    /// can invalidate are remade when it changes).
    python_runs: u64,
}

/// What `view_slot` made of a value.
enum ViewSlot {
    NotAView,
    Slot(u64),
    /// A native copy of the view (kept alive by `keepalive`), to visit
    /// as any value: the view holds what only its store can read.
    Native(*mut PyObject),
}

// Note [Python code during compaction]
// The compactor reads the input through borrowed pointers (list items,
// `PyDict_Next` entries) and remembers objects by address (strings met
// again, dict key sequences, the `share=True` identities, enum members, type
// handlers). Both are sound only while every object they name stays alive
// and in place, which holds as long as no Python code runs: the compactor
// holds the GIL and pauses the cyclic GC (whose finalizers are Python code).
// A few steps do run Python code: a registered `get=`, a field read through
// `getattr` (a property), classifying a type, the parts of a typed scalar
// (a tzinfo's `utcoffset`), thawing a view met as a key. Each goes through
// `Compactor::python`, which first takes a reference to every address used
// since the last such step (`pending`) and to every dict entry still to be
// visited, keeping them alive until the compaction ends, so no address can
// be reused for another object while a cache still names it. After the step
// it checks that the lists and dicts being walked kept their lengths, and
// raises `CompactError` naming the place ("changed size during compaction")
// if not. Lists are read live, item by item, so a list changed in place
// gives its new items, never freed memory.

impl Drop for Compactor<'_> {
    fn drop(&mut self) {
        for (_, p) in self.frame_pins.drain(..).chain(self.item_pins.drain(..)) {
            unsafe { ffi::Py_DecRef(p) };
        }
        crate::spare_buffer::give_string_map(std::mem::take(&mut self.strings));
    }
}

fn type_name(obj: *mut PyObject) -> String {
    unsafe {
        let tp = ffi::Py_TYPE(obj);
        std::ffi::CStr::from_ptr((*tp).tp_name).to_string_lossy().into_owned()
    }
}

impl<'py> Compactor<'py> {
    /// A compactor writing a fresh region into the buffer a dropped region
    /// left (`spare_buffer`), or a new one.
    pub fn reusing(py: Python<'py>) -> Self {
        let mut c = Compactor::new(py, 0);
        c.builder = crate::spare_buffer::builder(bale_core::writer::FIRST_CAPACITY);
        c
    }

    pub fn new(py: Python<'py>, capacity: usize) -> Self {
        Compactor {
            py,
            builder: Builder::with_capacity(capacity),
            walk: Walk::new(false),
            target: None,
            transplants: FxHashMap::default(),
            externs: None,
            flags: 0,
            shapes_by_content: None,
            types_by_content: None,
            strings: crate::spare_buffer::take_string_map(),
            strings_ahead: 0,
            table_keys: Vec::new(),
            table_block: Vec::new(),
            shapes: FxHashMap::default(),
            shape_keys: Vec::new(),
            key_table: KeyTable::default(),
            open_ids: Vec::new(),
            key_ids: FxHashMap::default(),
            last_shape: None,
            keepalive: Vec::new(),
            handover: Vec::new(),
            tuple_trees: true,
            root_name: String::from("root"),
            deep_path: FxHashSet::default(),
            items: Vec::new(),
            key_ptrs: Vec::new(),
            handlers: FxHashMap::default(),
            record_refs: Vec::new(),
            members: FxHashMap::default(),
            wrote_arrays: false,
            copied_unchecked: false,
            pending: Vec::new(),
            pins: Vec::new(),
            frame_pins: Vec::new(),
            int_scratch: Vec::new(),
            item_pins: Vec::new(),
            items_pinned: 0,
            frames_pinned: 0,
            entering: Vec::new(),
            python_runs: 0,
        }
    }

    /// Notes that a cache or a frame uses `obj`'s address (see `Note [Python code during compaction]`).
    #[inline(always)]
    fn remember(&mut self, obj: *mut PyObject) {
        self.pending.push(obj);
    }

    /// Owns, until the compaction ends, an object whose address a cache
    /// keeps (the cache may outlive every other reference to it).
    fn own(&mut self, obj: *mut PyObject) {
        self.pins.push(unsafe { Bound::from_borrowed_ptr(self.py, obj) }.unbind());
    }

    /// Lets go of an owned reference without ever running Python code: a
    /// last reference (whose release would run finalizers and weakref
    /// callbacks) is kept until the compaction ends.
    unsafe fn release(&mut self, obj: *mut PyObject) {
        release_into(self.py, obj, &mut self.pins);
    }

    /// Before Python code runs: owns each address cached since the last
    /// step, each container being walked or entered, and each dict entry
    /// still to visit. The one-entry cache of the last key sequence is
    /// dropped instead.
    unsafe fn pin(&mut self) {
        self.last_shape = None;
        for i in 0..self.pending.len() {
            self.own(self.pending[i]);
        }
        self.pending.clear();
        for i in 0..self.entering.len() {
            self.own(self.entering[i]);
        }
        for depth in self.frames_pinned..self.walk.depth() {
            let cursor = self.walk.frames()[depth].cursor;
            let obj = cursor.obj();
            ffi::Py_IncRef(obj);
            self.frame_pins.push((depth, obj));
            // Python code may now reach it again (see `check_cycle`).
            if depth >= LINEAR_PATH && cursor.mutable() {
                self.deep_path.insert(obj as usize);
            }
        }
        self.frames_pinned = self.walk.depth();
        for i in self.items_pinned..self.items.len() {
            // A table's shape is found with keys only (null values).
            let (k, v) = self.items[i];
            for p in [k, v] {
                if !p.is_null() {
                    ffi::Py_IncRef(p);
                    self.item_pins.push((i, p));
                }
            }
        }
        self.items_pinned = self.items.len();
    }

    pub(crate) fn truncate_items(&mut self, len: usize) {
        self.items.truncate(len);
        self.items_pinned = self.items_pinned.min(len);
        unsafe { release_from(self.py, &mut self.item_pins, len, &mut self.pins) };
    }

    /// Runs `step`, which may run Python code, with `obj` (the value being
    /// visited) and everything the compactor names by address kept alive;
    /// then checks that no list or dict being walked changed its length.
    pub(crate) unsafe fn python<T>(
        &mut self,
        obj: *mut PyObject,
        step: impl FnOnce(&mut Self) -> PyResult<T>,
    ) -> PyResult<T> {
        self.pin();
        self.python_runs += 1;
        ffi::Py_IncRef(obj);
        let out = step(self);
        self.release(obj);
        // The code may have turned the collector back on (`gc.enable()`).
        ffi::PyGC_Disable();
        out
    }

    /// Before the top frame reads its next element (or ends): if Python code
    /// has run since its list's or dict's length was last known, checks that
    /// the length is still the one the walk entered it with, and raises
    /// `CompactError` naming the place if not. Checked here, as each frame
    /// resumes, rather than for every open frame after each step of Python
    /// code: that was O(depth) a step, quadratic for deep data whose every
    /// level runs Python code (frozen dataclasses).
    #[inline]
    unsafe fn resume(&mut self) -> PyResult<()> {
        let runs = self.python_runs;
        // Most compactions run no Python code: no frame to read.
        if runs == 0 {
            return Ok(());
        }
        let depth = self.walk.depth() - 1;
        let changed = match &mut self.walk.frames_mut()[depth].cursor {
            Cursor::Seq { seen, .. } | Cursor::Dict { seen, .. } if *seen == runs => return Ok(()),
            Cursor::Seq { obj, tuple: false, len, seen, .. } => {
                *seen = runs;
                (pylist::len(*obj) != *len).then_some("list")
            }
            Cursor::Dict { obj, len, seen, .. } => {
                *seen = runs;
                (ffi::PyDict_Size(*obj) as usize != *len).then_some("dict")
            }
            _ => None,
        };
        match changed {
            Some(kind) => Err(CompactError::new_err(format!(
                "{}: {kind} changed size during compaction (by code that compaction ran)",
                self.path_to(depth)
            ))),
            None => Ok(()),
        }
    }

    /// Preserves identity: an object reached several times is written once
    /// (the region gets the SHARED flag), and cycles are allowed.
    pub fn share(mut self, share: bool) -> Self {
        self.walk = Walk::new(share);
        if share {
            self.flags |= FLAG_SHARED;
        }
        self
    }

    /// Builds bytes to append to `target`'s lineage at offset `at`.
    pub fn appending(mut self, target: Py<Region>, at: usize) -> Self {
        self.builder = Builder::continuing(at, 1 << 12);
        self.target = Some(target);
        self
    }

    /// Builds bytes that will lie at offset `at` of a region being written
    /// elsewhere (a streaming writer's file).
    pub fn at_offset(mut self, at: usize) -> Self {
        self.builder = Builder::continuing(at, 1 << 12);
        self
    }

    /// Names the value given to `run` in error messages (`root[3]` for
    /// a writer's fourth item) instead of `root`.
    pub fn named(mut self, name: String) -> Self {
        self.root_name = name;
        self
    }

    /// Slot and key hash of a dict key (for a writer's dict root).
    pub fn run_key(&mut self, key: &Bound<'py, PyAny>) -> PyResult<(u64, u64)> {
        unsafe { self.key(key.as_ptr(), 0) }
            .map_err(|f| self.key_failure(f, format!(": key {}", self.repr(key.as_ptr()))))
    }

    /// The other segments of the store that the bytes written reference.
    pub fn extern_segments(&self) -> std::collections::BTreeSet<u32> {
        let mut all = self.externs.as_ref().map(|e| e.kept.clone()).unwrap_or_default();
        for (_, t) in self.transplants.values() {
            if let Some(p) = t.externs() {
                all.extend(p.kept.iter().copied());
            }
        }
        all
    }

    /// The header flags the result needs (SHARED, CYCLIC).
    pub fn flags(&self) -> u32 {
        self.flags | if self.walk.made_cycles() { FLAG_CYCLIC | FLAG_SHARED } else { 0 }
    }

    /// The bytes of a fresh region whose root is `root`, the slot `run`
    /// gave: the builder's, with the header's flags and checksum written.
    pub fn region_bytes(&mut self, root: u64) -> Vec<u8> {
        let mut bytes = self.region_bytes_unsummed(root);
        bale_core::fill_checksum(&mut bytes);
        bytes
    }

    /// `region_bytes` with the checksum field left zero, for a storage
    /// that writes it later (`Storage::owned_unsummed`).
    pub fn region_bytes_unsummed(&mut self, root: u64) -> Vec<u8> {
        let mut builder = std::mem::take(&mut self.builder);
        builder.set_flags(self.flags());
        builder.finish_unsummed(root)
    }

    /// Compacts `root` and returns its slot.
    pub fn run(&mut self, root: &Bound<'py, PyAny>) -> PyResult<u64> {
        // The cyclic GC stays off: its finalizers are Python code that could
        // free what the walk holds borrowed (`Note [Python code during compaction]`).
        unsafe {
            let _pause = crate::gc_pause::GcPause::begin();
            self.remember(root.as_ptr());
            self.walk(root)
        }
    }

    unsafe fn walk(&mut self, root: &Bound<'py, PyAny>) -> PyResult<u64> {
        bale_core::encode(self, root.as_ptr())
    }

    /// The next element of the innermost open container (`None`: it has
    /// no more), its siblings a few ahead prefetched. The scalar leaves
    /// before it in a list, tuple or dict are written here (see
    /// `leaf_run`).
    #[inline(always)]
    unsafe fn next_element(&mut self) -> PyResult<Option<*mut PyObject>> {
        self.resume()?;
        match *self.walk.top().expect("an open container") {
            Cursor::Seq { obj, tuple, len, next, .. } => {
                let items = seq_items(obj, tuple);
                let i = self.leaf_run(next, len, |i| *items.add(i))?;
                if i == len {
                    return Ok(None);
                }
                Ok(Some(*items.add(i)))
            }
            Cursor::Dict { items, len, next, .. } => {
                // `leaf_slot` never grows `self.items` (only the openers do):
                // the pointer stays valid through the run.
                let values = self.items.as_ptr().add(items);
                let i = self.leaf_run(next, len, |i| (*values.add(i)).1)?;
                if i == len {
                    return Ok(None);
                }
                Ok(Some(self.items[items + i].1))
            }
            Cursor::Record { items, len, ref mut next, .. } => {
                if *next == len {
                    return Ok(None);
                }
                let i = *next;
                *next += 1;
                Ok(Some(self.items[items + i].1))
            }
        }
    }

    /// Writes the elements from `from` of the innermost open list, tuple or
    /// dict (`len` of them, `item(i)` the i-th) for as long as they are
    /// scalar leaves, pushing their slots where the encoder pushes a
    /// visited child's; returns the index of the first that is not (or
    /// `len`), and leaves the cursor past it. The encoder's loop costs
    /// about 10 ns an element (`next_child`, `visit`, the push): a row of
    /// strings spent more there than on its bytes. No Python code runs
    /// for these leaves, so the container cannot change under the run.
    /// With `share`, every element goes through `visit`, which remembers
    /// objects by address.
    #[inline(always)]
    unsafe fn leaf_run(&mut self, from: usize, len: usize, item: impl Fn(usize) -> *mut PyObject) -> PyResult<usize> {
        let mut i = from;
        // A last element alone gains nothing from a run (`visit` writes a
        // leaf as cheaply), and a list of one container, level after level
        // of nested lists, paid for testing it twice.
        if !self.walk.shares() && i + 1 < len {
            while i < len {
                if i + PREFETCH_AHEAD < len {
                    prefetch(item(i + PREFETCH_AHEAD));
                }
                // Note [Prefetched places of shared strings], for a list of them.
                if i + SHARED_STR_AHEAD < len && self.strings.is_large() {
                    self.strings.prefetch(item(i + SHARED_STR_AHEAD) as usize);
                }
                match self.leaf_slot(item(i)) {
                    Ok(Some(slot)) => self.walk.slots.push(slot),
                    Ok(None) => break,
                    Err(e) => {
                        self.set_next(i + 1);
                        return Err(e);
                    }
                }
                i += 1;
            }
        } else if i + PREFETCH_AHEAD < len {
            prefetch(item(i + PREFETCH_AHEAD));
        }
        self.set_next((i + 1).min(len));
        Ok(i)
    }

    /// Moves the cursor of the innermost open list, tuple or dict (the
    /// containers `leaf_run` reads) to element `to`.
    #[inline(always)]
    fn set_next(&mut self, to: usize) {
        if let Some(Cursor::Seq { next, .. } | Cursor::Dict { next, .. }) = self.walk.top() {
            *next = to;
        }
    }

    /// The slot of a scalar leaf (an exact str, int or float, None, True or
    /// False), written as `visit` writes it (`visit` calls this); `None`
    /// for anything else.
    #[inline(always)]
    pub(crate) unsafe fn leaf_slot(&mut self, obj: *mut PyObject) -> PyResult<Option<u64>> {
        let tp = ffi::Py_TYPE(obj);
        if tp == addr_of_mut!(ffi::PyUnicode_Type) {
            return Ok(Some(self.str_slot(obj)));
        }
        if tp == addr_of_mut!(ffi::PyLong_Type) {
            if let Some(v) = int_value(obj) {
                return Ok(Some(self.builder.int(v)));
            }
            // Up to 120 bits, from its digits without a byte vector.
            if let Some(v) = crate::ffi::pylong::int_i128(obj) {
                return Ok(Some(self.builder.int_i128(v)));
            }
            // No key hash: a value, not a key.
            return Ok(Some(self.big_int_slot(obj, false)?.0));
        }
        if tp == addr_of_mut!(ffi::PyFloat_Type) {
            return Ok(Some(self.builder.float(pyfloat::value(obj))));
        }
        if obj == ffi::Py_None() {
            return Ok(Some(SLOT_NONE));
        }
        if obj == ffi::Py_True() {
            return Ok(Some(SLOT_TRUE));
        }
        if obj == ffi::Py_False() {
            return Ok(Some(SLOT_FALSE));
        }
        Ok(None)
    }

    /// The container of `cursor` was written as `slot` (remembered by
    /// address if `kept`) and its frame is gone: lets go of what it held.
    fn closed_container(&mut self, cursor: Cursor, slot: u64, kept: bool) {
        match cursor {
            Cursor::Seq { .. } => {}
            Cursor::Dict { items, shape, .. } => {
                self.truncate_items(items);
                if shape & ID_DICT_MARK != 0 {
                    self.open_ids.pop();
                }
            }
            Cursor::Record { obj, items, refs, member, .. } => {
                self.truncate_items(items);
                // Values fetched by Python code may be temporaries.
                while self.record_refs.len() > refs {
                    let v = self.record_refs.pop().expect("longer than refs");
                    unsafe { self.release(v.into_ptr()) };
                }
                // Enum members are singletons: each is written once.
                if member {
                    self.members.insert(obj as usize, slot);
                    self.own(obj);
                }
            }
        }
        if kept {
            // The walk remembers it by address: keep that address its own.
            self.own(cursor.obj());
        }
        let depth = self.walk.depth();
        self.frames_pinned = self.frames_pinned.min(depth);
        unsafe { release_from(self.py, &mut self.frame_pins, depth, &mut self.pins) };
        // Most deep containers are held once and never enter the set: a
        // probe of the empty set at every close cost lists nested 50 deep 6%.
        if depth >= LINEAR_PATH && cursor.mutable() && !self.deep_path.is_empty() {
            self.deep_path.remove(&(cursor.obj() as usize));
        }
    }

    // Note [Cursors built in place]
    // A cursor built by the caller and handed to an out-of-line function
    // is written with 8-byte stores and read back with 16-byte loads by
    // the frame's push: each such load waits for the stores to retire (a
    // failed store forward), which cost nested records a sixth of their
    // compaction time. So each kind of container has its own opener taking
    // the cursor's fields in registers, and the cursor is built where the
    // frame is pushed. Dicts' and records' openers are out of line; the
    // list's is inlined into `seq_value`, where the fields are in registers
    // too: its call was a tenth of what a level of nested lists cost.

    /// Opens a list or tuple (`Note [Cursors built in place]`).
    #[inline(always)]
    pub(crate) fn open_seq(&mut self, obj: *mut PyObject, tuple: bool, len: usize, seen: u64) {
        let base = self.walk.slots.len();
        self.push_frame_at(Cursor::Seq { obj, tuple, len, next: 0, seen }, base);
    }

    /// Opens a dict whose entries are `items[items..items + len]`.
    #[inline(never)]
    fn open_dict(&mut self, obj: *mut PyObject, class: u64, shape: u64, items: usize, len: usize, seen: u64) {
        let base = self.walk.slots.len();
        self.push_frame_at(Cursor::Dict { obj, class, shape, items, len, next: 0, seen }, base);
    }

    /// Opens a record whose fields are `items[items..items + len]`.
    #[inline(never)]
    fn open_record(&mut self, obj: *mut PyObject, ty: u64, items: usize, refs: usize, len: usize, member: bool) {
        let base = self.walk.slots.len();
        self.push_frame_at(Cursor::Record { obj, ty, items, refs, len, next: 0, member }, base);
    }

    /// Opens the container of `f`, whose children's slots start at `base`.
    #[inline(always)]
    pub(crate) fn push_frame_at(&mut self, f: Cursor, base: usize) {
        // An object held by one reference is reached once: only others can
        // be met again, so only they are remembered.
        let shared = unsafe { ffi::Py_REFCNT(f.obj()) } > 1;
        let identity = if self.walk.shares() && shared { f.obj() as u64 } else { NO_IDENTITY };
        if self.walk.depth() >= LINEAR_PATH && f.mutable() && shared {
            self.deep_path.insert(f.obj() as usize);
        }
        self.walk.open_at(f, identity, base);
    }

    /// The path of the value being visited, like `root['users'][3]`.
    fn path(&self) -> String {
        self.path_to(self.walk.depth())
    }

    /// The path of the container of frame `depth`, with the middle of
    /// long paths elided.
    fn path_to(&self, depth: usize) -> String {
        let steps = self.steps(&self.walk.frames()[..depth]);
        let mut s = self.root_name.clone();
        let n = steps.len();
        for (depth, step) in steps.iter().enumerate() {
            if n > 24 && depth == 12 {
                let _ = write!(s, "...<{} levels>...", n - 24);
            }
            if n > 24 && (12..n - 12).contains(&depth) {
                continue;
            }
            s.push_str(&self.step_text(step));
        }
        s
    }

    /// How each of `frames` reaches its current element. Keys are owned
    /// before any is rendered: a key's `__repr__` is Python code, which
    /// must not be able to free the keys rendered after it.
    fn steps(&self, frames: &[Frame<Cursor>]) -> Vec<Step<'py>> {
        frames
            .iter()
            .map(|f| match f.cursor {
                Cursor::Seq { next, .. } => Step::Index(next - 1),
                Cursor::Dict { items, next, .. } => {
                    Step::Key(unsafe { Bound::from_borrowed_ptr(self.py, self.items[items + next - 1].0) })
                }
                Cursor::Record { items, next, .. } => {
                    Step::Field(unsafe { Bound::from_borrowed_ptr(self.py, self.items[items + next - 1].0) })
                }
            })
            .collect()
    }

    fn step_text(&self, step: &Step<'py>) -> String {
        match step {
            Step::Index(i) => format!("[{i}]"),
            Step::Key(k) => format!("[{}]", self.repr(k.as_ptr())),
            Step::Field(f) => format!(".{f}"),
        }
    }

    fn repr(&self, obj: *mut PyObject) -> String {
        unsafe { Bound::from_borrowed_ptr(self.py, obj) }
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| format!("<{}>", type_name(obj)))
    }

    fn cannot(&self, obj: *mut PyObject, suffix: &str) -> PyErr {
        CompactError::new_err(format!("{}{}: cannot compact {}", self.path(), suffix, type_name(obj)))
    }

    /// Refuses a list or dict met again while it is open (without
    /// sharing, which writes a forward reference instead). The common
    /// answers, inlined at every opener: sharing, or one reference.
    #[inline(always)]
    unsafe fn check_cycle(&self, obj: *mut PyObject) -> PyResult<()> {
        // A container met again while open is referenced by its parent in
        // the path and by the container met now: one held by a single
        // reference is not open (deep lists built by `x = [x]` are all
        // such). Frames pushed with one reference enter `deep_path` when
        // `pin` takes one more, before Python code could add another.
        if self.walk.shares() || ffi::Py_REFCNT(obj) == 1 {
            return Ok(());
        }
        self.check_cycle_on_path(obj)
    }

    /// `check_cycle` for an object held more than once: is it on the path?
    #[inline(never)]
    unsafe fn check_cycle_on_path(&self, obj: *mut PyObject) -> PyResult<()> {
        let frames = self.walk.frames();
        let depth = frames.len();
        let linear = frames[..depth.min(LINEAR_PATH)].iter().position(|f| f.cursor.obj() == obj);
        let found = linear.or_else(|| {
            if depth > LINEAR_PATH && self.deep_path.contains(&(obj as usize)) {
                frames.iter().position(|f| f.cursor.obj() == obj)
            } else {
                None
            }
        });
        if let Some(at) = found {
            let mut ancestor = self.root_name.clone();
            for step in &self.steps(&frames[..at]) {
                ancestor.push_str(&self.step_text(step));
                if ancestor.len() > 200 {
                    ancestor.push_str("...");
                    break;
                }
            }
            return Err(CompactError::new_err(format!(
                "{}: cannot compact a cycle: this {} is its own ancestor {}",
                self.path(),
                type_name(obj),
                ancestor
            )));
        }
        Ok(())
    }

    /// The slot of an exact str: inline, written, or (held more than once)
    /// the one its first occurrence was written as. Inlined into the leaf
    /// loop; the lookup of shared strings is out of line.
    #[inline(always)]
    pub(crate) unsafe fn str_slot(&mut self, obj: *mut PyObject) -> u64 {
        let (w, units) = str_units(obj);
        if inline_str(w, units.len()) {
            return make_sstr_slot(units);
        }
        // Each occurrence in the input holds a reference, so a string with
        // one reference occurs once: only shared ones go through the cache.
        if ffi::Py_REFCNT(obj) == 1 {
            return self.builder.str_units(w, units);
        }
        self.shared_str_slot(obj, w, units)
    }

    #[inline(never)]
    unsafe fn shared_str_slot(&mut self, obj: *mut PyObject, w: Width, units: &[u8]) -> u64 {
        // One probe for the lookup and the insertion.
        let (builder, pending, walk, table_strings) =
            (&mut self.builder, &mut self.pending, &self.walk, self.strings_ahead);
        // Asked only when the map must grow: the strings a table announced,
        // and the elements left in the innermost open container (a list of
        // strings, counted from where its run of leaves began).
        let ahead = || {
            table_strings
                + match walk.top_ref() {
                    Some(Cursor::Seq { len, next, .. } | Cursor::Dict { len, next, .. }) => len.saturating_sub(*next),
                    _ => 0,
                }
        };
        self.strings.get_or_insert_with(obj as usize, ahead, || {
            // Its address is kept: see `Note [Python code during compaction]`.
            pending.push(obj);
            builder.str_units(w, units)
        })
    }

    /// Starts loading where the map of shared strings would hold `obj`
    /// (`Note [Prefetched places of shared strings]`).
    #[inline(always)]
    pub(crate) fn prefetch_shared_str(&self, obj: *mut PyObject) {
        self.strings.prefetch(obj as usize);
    }

    /// The slot of an int outside i64, and its key hash if `hash`.
    unsafe fn big_int_slot(&mut self, obj: *mut PyObject, hash: bool) -> PyResult<(u64, u64)> {
        let mut b = std::mem::take(&mut self.int_scratch);
        let out = crate::ffi::pylong::big_int_bytes(self.py, obj, &mut b)
            .map(|()| (self.builder.int_bytes(&b), if hash { hash_bigint(&b) } else { 0 }));
        self.int_scratch = b;
        out
    }

    /// Slot and key hash of an exact int.
    pub(crate) unsafe fn int_slot(&mut self, obj: *mut PyObject) -> PyResult<(u64, u64)> {
        if let Some(v) = int_value(obj) {
            return Ok((self.builder.int(v), hash_i64(v)));
        }
        self.big_int_slot(obj, true)
    }

    /// An exact list or tuple: its slot when it is written whole (empty, a
    /// table, a row of numbers, a short row of leaves, a tree of tuples),
    /// else None after opening its frame. Inlined where it is called: in
    /// `visit`, and before it in the walk's loop for every list and tuple
    /// when nothing is shared (`Source::visit`). The call to `visit`, its
    /// frame and its result through memory were a fifth of what a level of
    /// nested lists cost above the core walk's own
    /// (`examples/walk_floor.rs`), and a fifth to a quarter of compacting
    /// lists of short rows of numbers (canada.json, points).
    #[inline(always)]
    unsafe fn seq_value(&mut self, obj: *mut PyObject, tuple: bool) -> PyResult<Option<u64>> {
        let len = if tuple { pytuple::len(obj) } else { pylist::len(obj) };
        if len == 0 {
            if self.walk.shares() && !tuple && ffi::Py_REFCNT(obj) > 1 {
                // An empty list may be shared and later mutated after
                // thaw: it needs a place of its own to be one object.
                let slot = self.builder.empty_list_object();
                self.walk.keep(obj as u64, slot);
                self.own(obj);
                return Ok(Some(slot));
            }
            return Ok(Some(if tuple { SLOT_EMPTY_TUPLE } else { SLOT_EMPTY_LIST }));
        }
        let items = seq_items(obj, tuple);
        if !tuple && len >= TABLE_MIN_ROWS && !self.walk.shares() {
            if let Some(slot) = self.table(items, len)? {
                return Ok(Some(slot));
            }
        }
        // A list or dict first is neither a row of numbers nor a leaf
        // (the tests below would each read its type to find that):
        // lists of lists, level after level, go straight to a frame.
        let first = ffi::Py_TYPE(*items);
        let leafless = first == addr_of_mut!(ffi::PyList_Type) || first == addr_of_mut!(ffi::PyDict_Type);
        if !tuple && !leafless {
            if let Some(slot) = self.number_list(items, len) {
                if self.walk.shares() && ffi::Py_REFCNT(obj) > 1 {
                    self.walk.keep(obj as u64, slot);
                    self.own(obj);
                }
                return Ok(Some(slot));
            }
        }
        // Scalar leaves need no cycle check; a shared one must go through
        // the frame path, which remembers it.
        if len <= SMALL_LEAF_SEQ && !leafless && !(self.walk.shares() && ffi::Py_REFCNT(obj) > 1) {
            if let Some(slot) = self.small_leaf_seq(items, len, tuple) {
                return Ok(Some(slot));
            }
        }
        if tuple && !self.walk.shares() && self.tuple_trees {
            return Ok(self.tuple_tree(obj, len));
        }
        // Every cycle passes through a list or dict, so tuples need no check.
        if !tuple {
            self.check_cycle(obj)?;
        }
        for i in 0..len.min(PREFETCH_AHEAD) {
            prefetch(*items.add(i));
        }
        let seen = self.python_runs;
        self.open_seq(obj, tuple, len, seen);
        Ok(None)
    }

    /// Visits one value: returns its slot, or None after pushing a frame for a container.
    pub(crate) unsafe fn visit(&mut self, obj: *mut PyObject) -> PyResult<Option<u64>> {
        let tp = ffi::Py_TYPE(obj);
        if self.walk.shares() && ffi::Py_REFCNT(obj) > 1 {
            if let Some(s) = self.walk.written(obj as u64) {
                return Ok(Some(s));
            }
            if let Some(depth) = self.walk.open_depth(obj as u64) {
                if matches!(self.walk.frames()[depth].cursor, Cursor::Record { .. }) {
                    // A record is built from its fields, so it cannot be among them.
                    return Err(CompactError::new_err(format!(
                        "{}: cannot compact a cycle through a {} instance (a record cannot contain itself)",
                        self.path(),
                        type_name(obj)
                    )));
                }
                return Ok(Some(self.walk.forward_to(depth)));
            }
        }
        // Containers first: a scalar leaf reaches `visit` only outside a run
        // (`leaf_run`), which has already found that this element is not one.
        if tp == addr_of_mut!(ffi::PyDict_Type) {
            self.enter_dict(obj, bale_core::dict_class::PLAIN, None)?;
            return Ok(None);
        }
        if tp == addr_of_mut!(ffi::PyList_Type) || tp == addr_of_mut!(ffi::PyTuple_Type) {
            return self.seq_value(obj, tp == addr_of_mut!(ffi::PyTuple_Type));
        }
        if let Some(slot) = self.leaf_slot(obj)? {
            return Ok(Some(slot));
        }
        if tp == addr_of_mut!(ffi::PyBytes_Type) {
            return Ok(Some(self.builder.bytes_obj(pybytes::data(obj))));
        }
        if tp == addr_of_mut!(ffi::PyByteArray_Type) {
            let n = ffi::PyByteArray_Size(obj) as usize;
            let p = ffi::PyByteArray_AsString(obj) as *const u8;
            let data = if n == 0 { &[][..] } else { std::slice::from_raw_parts(p, n) };
            return Ok(Some(self.builder.bytes_obj(data)));
        }
        if tp == addr_of_mut!(ffi::PyComplex_Type) {
            return Ok(Some(self.builder.complex(ffi::PyComplex_RealAsDouble(obj), ffi::PyComplex_ImagAsDouble(obj))));
        }
        if tp == addr_of_mut!(ffi::PySet_Type) || tp == addr_of_mut!(ffi::PyFrozenSet_Type) {
            let slot = self.set_slot(obj, tp == addr_of_mut!(ffi::PyFrozenSet_Type))?;
            if self.walk.shares() && ffi::Py_REFCNT(obj) > 1 {
                self.walk.keep(obj as u64, slot);
                self.own(obj);
            }
            return Ok(Some(slot));
        }
        match self.view_slot(obj)? {
            ViewSlot::Slot(slot) => return Ok(Some(slot)),
            ViewSlot::Native(native) => return self.visit(native),
            ViewSlot::NotAView => {}
        }
        self.typed(obj, tp)
    }

    /// The handler of a type not built in, classified once per compaction.
    unsafe fn handler(&mut self, tp: *mut ffi::PyTypeObject) -> PyResult<&mut Handler> {
        let key = tp as usize;
        if !self.handlers.contains_key(&key) {
            // Classifying reads the type's attributes: Python code may run.
            let h = self.python(tp as *mut PyObject, |c| classify(c.py, tp))?;
            self.handlers.insert(key, h);
        }
        Ok(self.handlers.get_mut(&key).expect("just inserted"))
    }

    /// Typed scalars, numpy values and records; an error for anything else.
    unsafe fn typed(&mut self, obj: *mut PyObject, tp: *mut ffi::PyTypeObject) -> PyResult<Option<u64>> {
        let py = self.py;
        let bound = Bound::from_borrowed_ptr(py, obj);
        let handler = self.handler(tp)?;
        match handler {
            Handler::Unsupported => Err(self.cannot(obj, "")),
            Handler::Record(_) => {
                if let Some(&s) = self.members.get(&(obj as usize)) {
                    return Ok(Some(s));
                }
                self.enter_record(obj, tp)?;
                Ok(None)
            }
            Handler::DictClass(class) => {
                let class = *class;
                let (word, ordered) = self
                    .python(obj, |_| crate::typed::dict_class_parts(py, &bound, class))
                    .map_err(|e| self.annotate(e))?;
                self.enter_dict(obj, word, ordered)?;
                Ok(None)
            }
            Handler::NdArray { scalar } => {
                let scalar = *scalar;
                let parts = self.python(obj, |_| ArrayParts::new(py, &bound, scalar)).map_err(|e| self.annotate(e))?;
                self.wrote_arrays = true;
                self.builder.reserve(parts.data().len() + 128 + parts.dtype.len());
                Ok(Some(self.builder.ndarray(parts.data(), parts.itemsize, parts.flags, &parts.shape, &parts.dtype)))
            }
            h => {
                let h = scalar_handler(h);
                let (kind, aux, payload) =
                    self.python(obj, |_| scalar_parts(py, &h, &bound)).map_err(|e| self.annotate(e))?;
                Ok(Some(self.builder.ext(kind, aux, &payload)))
            }
        }
    }

    /// A CompactError raised below gets the path of the value in front.
    fn annotate(&self, e: PyErr) -> PyErr {
        if e.is_instance_of::<CompactError>(self.py) {
            CompactError::new_err(format!("{}: {}", self.path(), e.value(self.py)))
        } else {
            e
        }
    }

    /// Starts writing a record: its type (once), then a frame over its fields.
    unsafe fn enter_record(&mut self, obj: *mut PyObject, tp: *mut ffi::PyTypeObject) -> PyResult<()> {
        self.check_cycle(obj)?;
        let py = self.py;
        let runs = self.python_runs;
        let Handler::Record(info) = self.handler(tp)? else { unreachable!("a record handler") };
        // Plain attributes (slots) are read without Python code, so without
        // pinning (`Note [Python code during compaction]`). Python code can
        // change a class: the answer holds until it runs.
        let plain = info.getter.is_none()
            && match info.plain_attrs {
                Some((at, answer)) if at == runs => answer,
                _ => {
                    let answer = crate::ffi::pytype::attrs_run_no_python(tp, &info.attrs);
                    info.plain_attrs = Some((runs, answer));
                    answer
                }
            };
        let (flavor, getter) = (info.flavor, info.getter.as_ref().map(|g| g.clone_ref(py)));
        let name = info.name.clone();
        let fields: Vec<*mut PyObject> = info.fields.iter().map(|f| f.as_ptr()).collect();
        let attrs: Vec<*mut PyObject> = info.attrs.iter().map(|f| f.as_ptr()).collect();
        let type_slot = info.type_slot;
        // A streaming writer finds types written by earlier items by content.
        let signature = self.types_by_content.as_ref().map(|_| {
            let mut sig = format!("{name}\0{flavor}");
            for &f in &fields {
                sig.push('\0');
                sig.push_str(&Bound::from_borrowed_ptr(py, f).to_string());
            }
            sig
        });
        let known_type = match (&self.types_by_content, &signature) {
            (Some(map), Some(sig)) => map.get(sig).copied(),
            _ => None,
        };
        let cached_type = type_slot.or(known_type);
        let ty = match cached_type {
            Some(t) => t,
            None => {
                let name_slot = self.builder.str_utf8(&name);
                let mut slots = Vec::with_capacity(fields.len());
                let mut hashes = Vec::with_capacity(fields.len());
                for &f in &fields {
                    let (_, units) = str_units(f);
                    hashes.push(hash_str_units(units));
                    slots.push(self.str_slot(f));
                }
                let t = self.builder.rec_type(flavor, name_slot, &slots, &hashes);
                if let Handler::Record(info) = self.handler(tp)? {
                    info.type_slot = Some(t);
                }
                if let (Some(map), Some(sig)) = (&mut self.types_by_content, signature) {
                    map.insert(sig, t);
                }
                t
            }
        };
        let n = fields.len();
        let items = self.items.len();
        let refs = self.record_refs.len();
        if flavor == FLAVOR_NAMEDTUPLE && getter.is_none() {
            // NamedTuple items are borrowed from the tuple, which the frame keeps.
            if pytuple::len(obj) != n {
                return Err(CompactError::new_err(format!(
                    "{}: {} has {} items for {} fields",
                    self.path(),
                    type_name(obj),
                    pytuple::len(obj),
                    n
                )));
            }
            for (i, &f) in fields.iter().enumerate() {
                self.items.push((f, pytuple::item(obj, i)));
            }
        } else if let Some(g) = getter {
            let values: Vec<Bound<'_, PyAny>> = self.python(obj, |_| {
                let values = g.bind(py).call1((Bound::from_borrowed_ptr(py, obj),))?;
                values.try_iter()?.collect::<PyResult<_>>()
            })?;
            if values.len() != n {
                return Err(CompactError::new_err(format!(
                    "{}: the registered get() of {} gave {} values for {} fields",
                    self.path(),
                    type_name(obj),
                    values.len(),
                    n
                )));
            }
            for (v, &f) in values.into_iter().zip(&fields) {
                self.items.push((f, v.as_ptr()));
                self.record_refs.push(v.unbind());
            }
        } else {
            // All fields in one step: each value is owned (in `record_refs`)
            // as soon as it is read, so the reads need no pinning between them.
            let read_all = |c: &mut Self| -> PyResult<()> {
                for (&a, &f) in attrs.iter().zip(&fields) {
                    let v = Bound::from_owned_ptr_or_err(py, ffi::PyObject_GetAttr(obj, a)).map_err(|e| {
                        if e.is_instance_of::<CompactError>(py) {
                            return e;
                        }
                        CompactError::new_err(format!(
                            "{}: cannot read field {} of {}: {}",
                            c.path(),
                            Bound::from_borrowed_ptr(py, f),
                            type_name(obj),
                            e.value(py)
                        ))
                    })?;
                    c.items.push((f, v.as_ptr()));
                    c.record_refs.push(v.unbind());
                }
                Ok(())
            };
            if plain {
                read_all(self)?
            } else {
                self.python(obj, read_all)?
            }
        }
        // Enum members are singletons: each is written once (see `closed_container`).
        let member = flavor == FLAVOR_ENUM || flavor == FLAVOR_ENUM_MIXIN;
        self.open_record(obj, ty, items, refs, n, member);
        Ok(())
    }

    /// A list whose items are all exact floats, or all exact ints that fit
    /// in 64 bits, written as raw numbers; `None` (nothing written) otherwise.
    #[inline]
    pub(crate) unsafe fn number_list(&mut self, items: *mut *mut PyObject, len: usize) -> Option<u64> {
        let float_type = addr_of_mut!(ffi::PyFloat_Type);
        let int_type = addr_of_mut!(ffi::PyLong_Type);
        let first = ffi::Py_TYPE(*items);
        if first != float_type && first != int_type {
            return None;
        }
        // Each number stored where it belongs as it is read: through a
        // vector, two words just stored were loaded back as one 16-byte
        // word, which waited on both stores (a third of compacting
        // canada.json's coordinate pairs, `perf`).
        let float = first == float_type;
        self.builder.num_list_from(float, len, |i| {
            let item = *items.add(i);
            if ffi::Py_TYPE(item) != first {
                None
            } else if float {
                Some(pyfloat::value(item).to_bits())
            } else {
                int_value(item).map(|v| v as u64)
            }
        })
    }

    /// A short list or tuple of scalars (ints that fit a slot, floats,
    /// strings, None, bools: the leaves of trees, points, tags) written at
    /// once, without a frame; `None`, having written nothing, when an item
    /// is anything else.
    #[inline]
    pub(crate) unsafe fn small_leaf_seq(&mut self, items: *mut *mut PyObject, len: usize, tuple: bool) -> Option<u64> {
        let mut slots = [0u64; SMALL_LEAF_SEQ];
        // The ints that need an object (beyond the INT slot, within 64 bits),
        // read once: the pair test and the object both use them.
        let mut ints = [0i64; SMALL_LEAF_SEQ];
        let int_type = addr_of_mut!(ffi::PyLong_Type);
        // Classify first, so that nothing is written for a list that is no leaf.
        let mut deferred = 0u32;
        let mut all_ints = true;
        for (i, slot) in slots.iter_mut().enumerate().take(len) {
            let item = *items.add(i);
            let tp = ffi::Py_TYPE(item);
            all_ints &= tp == int_type;
            *slot = if tp == int_type {
                let v = int_value(item)?;
                ints[i] = v;
                match make_int_slot(v) {
                    Some(s) => s,
                    None => {
                        deferred |= 1 << i;
                        0
                    }
                }
            } else if item == ffi::Py_None() {
                SLOT_NONE
            } else if item == ffi::Py_True() {
                SLOT_TRUE
            } else if item == ffi::Py_False() {
                SLOT_FALSE
            } else if tp == addr_of_mut!(ffi::PyUnicode_Type) || tp == addr_of_mut!(ffi::PyFloat_Type) {
                deferred |= 1 << i;
                0
            } else if tp == addr_of_mut!(ffi::PyTuple_Type) && pytuple::len(item) == 2 && !self.walk.shares() {
                // A pair of small ints (a tree's leaf level) is a slot too,
                // so the level above needs no frame either.
                let pair = seq_items(item, true);
                pair_slot(*pair, *pair.add(1))?
            } else {
                return None;
            };
        }
        if tuple && len == 2 && all_ints {
            if let Some(slot) = make_pair_slot(ints[0], ints[1]) {
                return Some(slot);
            }
        }
        for (i, slot) in slots.iter_mut().enumerate().take(len) {
            if deferred & (1 << i) != 0 {
                let item = *items.add(i);
                let tp = ffi::Py_TYPE(item);
                *slot = if tp == int_type {
                    self.builder.int(ints[i])
                } else if tp == addr_of_mut!(ffi::PyUnicode_Type) {
                    self.str_slot(item)
                } else {
                    self.builder.float(pyfloat::value(item))
                };
            }
        }
        Some(self.builder.seq(tuple, &slots[..len]))
    }

    /// The slot of a view met in the input: where it is, when it lives in
    /// the region being appended to (or in the same segment of the store);
    /// a reference to it, when it lives in another segment of the store
    /// appended to; else a native copy from its region.
    unsafe fn view_slot(&mut self, obj: *mut PyObject) -> PyResult<ViewSlot> {
        let bound = Bound::from_borrowed_ptr(self.py, obj);
        let Some((region, node)) = view_parts(&bound) else {
            return Ok(ViewSlot::NotAView);
        };
        let reg = region.get();
        let slot = node_slot(node);
        if let (Some(target), Some(slot)) = (&self.target, slot) {
            if target.get().same_lineage(reg) {
                // Handles of one lineage agree on every byte below their
                // length, and the append starts past all of them.
                self.flags |= FLAG_SHARED | (reg.flags() & FLAG_CYCLIC);
                return Ok(ViewSlot::Slot(slot));
            }
        }
        if let (Some(externs), Some(slot)) = (&mut self.externs, slot) {
            if let Some((out, flags)) = externs.reference(self.py, reg, node, slot, &mut self.builder) {
                self.flags |= flags;
                return Ok(ViewSlot::Slot(out));
            }
        }
        self.copied_unchecked |= !reg.is_trusted();
        let key = region.as_ptr() as usize;
        let share = self.walk.shares();
        let (externs, py) = (&self.externs, self.py);
        let (_, t) = self.transplants.entry(key).or_insert_with(|| {
            let t = Transplant::new(&reg.reader(), share, reg.is_shared());
            let policy = externs.as_ref().and_then(|e| e.policy_for(py, reg));
            (
                region.clone_ref(self.py),
                match policy {
                    Some(p) => t.with_externs(p),
                    None => t,
                },
            )
        });
        let r = reg.reader();
        let out = match slot {
            Some(slot) => t.copy(&r, &mut self.builder, slot, r.buf().len()),
            None => t.copy_value(&r, &mut self.builder, node.value()),
        };
        let out = match out {
            Ok(out) => out,
            Err(_) if t.met_extern() => {
                // It holds references to other segments of its store, which
                // the destination cannot hold: copy it as read through them.
                // (The partial copy's bytes stay, unreferenced; what earlier
                // copies from this region referenced stays referenced.)
                if let (Some(e), Some(p)) = (&mut self.externs, t.externs()) {
                    e.kept.extend(p.kept.iter().copied());
                }
                self.transplants.remove(&key);
                let native = self.python(obj, |c| c.thaw_view(obj))?.expect("a view");
                return Ok(ViewSlot::Native(native));
            }
            Err(e) => return Err(crate::errors::format_error(e)),
        };
        self.flags |= t.flags();
        Ok(ViewSlot::Slot(out))
    }

    /// A view met in the input is copied through its native form (kept alive
    /// so that identity caches stay valid).
    unsafe fn thaw_view(&mut self, obj: *mut PyObject) -> PyResult<Option<*mut PyObject>> {
        let bound = Bound::from_borrowed_ptr(self.py, obj);
        match view_parts(&bound) {
            Some((region, node)) => {
                let reg = region.get();
                check_expansion_of(reg, node.value())?;
                let native = thaw_value(self.py, reg, node.value())?;
                let p = native.as_ptr();
                self.keepalive.push(native);
                Ok(Some(p))
            }
            None => Ok(None),
        }
    }

    unsafe fn set_slot(&mut self, obj: *mut PyObject, frozen: bool) -> PyResult<u64> {
        self.entering.push(obj);
        let elements = self.elements(obj, 0);
        self.entering.pop();
        let (slots, hashes) = elements.map_err(|f| self.key_failure(f, "{...}".to_string()))?;
        Ok(self.builder.set(frozen, &slots, &hashes))
    }

    /// Slots and key hashes of the elements of a set or frozenset.
    unsafe fn elements(&mut self, obj: *mut PyObject, depth: usize) -> KeyResult<(Vec<u64>, Vec<u64>)> {
        let it = Bound::from_owned_ptr_or_err(self.py, ffi::PyObject_GetIter(obj))?;
        let mut slots = Vec::new();
        let mut hashes = Vec::new();
        loop {
            let e = ffi::PyIter_Next(it.as_ptr());
            if e.is_null() {
                if let Some(err) = PyErr::take(self.py) {
                    if err.is_instance_of::<pyo3::exceptions::PyRuntimeError>(self.py) {
                        // "Set changed size during iteration": by code compaction ran.
                        return Err(KeyFailure::Refused(
                            "set changed size during compaction (by code that compaction ran)".into(),
                        ));
                    }
                    return Err(err.into());
                }
                break;
            }
            let stored = self.key(e, depth);
            // The set may have let go of `e` meanwhile: never free it here.
            self.release(e);
            let (s, h) = stored?;
            slots.push(s);
            hashes.push(h);
        }
        Ok((slots, hashes))
    }

    /// The error for a failed key: refusals get the current path and `part`
    /// (the key or set-element marker) in front of their reason.
    fn key_failure(&self, failure: KeyFailure, part: String) -> PyErr {
        match failure {
            KeyFailure::Python(e) => e,
            KeyFailure::Refused(reason) => CompactError::new_err(format!("{}{}: {}", self.path(), part, reason)),
        }
    }

    /// Slot and key hash of a hashable value (dict key or set element).
    unsafe fn key(&mut self, obj: *mut PyObject, depth: usize) -> KeyResult<(u64, u64)> {
        if depth > MAX_KEY_DEPTH {
            return Err(KeyFailure::Refused(format!("key nested too deeply (limit {MAX_KEY_DEPTH})")));
        }
        let tp = ffi::Py_TYPE(obj);
        if tp == addr_of_mut!(ffi::PyUnicode_Type) {
            let (_, units) = str_units(obj);
            let h = hash_str_units(units);
            return Ok((self.str_slot(obj), h));
        }
        if tp == addr_of_mut!(ffi::PyLong_Type) {
            return Ok(self.int_slot(obj)?);
        }
        if obj == ffi::Py_None() {
            return Ok((SLOT_NONE, mix(SEED_NONE)));
        }
        if obj == ffi::Py_True() {
            return Ok((SLOT_TRUE, hash_i64(1)));
        }
        if obj == ffi::Py_False() {
            return Ok((SLOT_FALSE, hash_i64(0)));
        }
        if tp == addr_of_mut!(ffi::PyFloat_Type) {
            let f = pyfloat::value(obj);
            return Ok((self.builder.float(f), hash_f64(f)));
        }
        if tp == addr_of_mut!(ffi::PyTuple_Type) {
            let n = pytuple::len(obj);
            let mut slots = Vec::with_capacity(n);
            let mut h = TupleHasher::new();
            for i in 0..n {
                let (s, eh) = self.key(pytuple::item(obj, i), depth + 1)?;
                slots.push(s);
                h.add(eh);
            }
            return Ok((self.builder.seq(true, &slots), h.finish(n)));
        }
        if tp == addr_of_mut!(ffi::PyBytes_Type) {
            let b = pybytes::data(obj);
            return Ok((self.builder.bytes_obj(b), hash_bytes(b)));
        }
        if tp == addr_of_mut!(ffi::PyComplex_Type) {
            let (re, im) = (ffi::PyComplex_RealAsDouble(obj), ffi::PyComplex_ImagAsDouble(obj));
            return Ok((self.builder.complex(re, im), hash_complex(re, im)));
        }
        if tp == addr_of_mut!(ffi::PyFrozenSet_Type) {
            let (slots, hashes) = self.elements(obj, depth + 1)?;
            let sum = hashes.iter().fold(0u64, |acc, &h| acc.wrapping_add(mix(h)));
            return Ok((self.builder.set(true, &slots, &hashes), frozenset_hash(sum, slots.len())));
        }
        // Thawing a view met as a key may rebuild records: Python code.
        if let Some(native) = self.python(obj, |c| c.thaw_view(obj))? {
            return self.key(native, depth);
        }
        let py = self.py;
        let h = self.handler(tp)?;
        if matches!(
            h,
            Handler::Date
                | Handler::Time
                | Handler::DateTime
                | Handler::Delta
                | Handler::Uuid
                | Handler::Fraction
                | Handler::Path(_)
        ) {
            let h = scalar_handler(h);
            let (kind, aux, payload) =
                self.python(obj, |_| scalar_parts(py, &h, &Bound::from_borrowed_ptr(py, obj)))?;
            let e = bale_core::Ext { kind, start: 0, aux, payload: &payload };
            if !bale_core::typed::hashable_ext(&e) {
                return Err(KeyFailure::Refused(match h {
                    Handler::Fraction => format!(
                        "a Fraction whose numerator or denominator takes more than {} bytes cannot be a dict key or set element in a region (store it as a value)",
                        bale_core::fraction::KEY_PART_BYTES
                    ),
                    Handler::Path(_) => format!(
                        "a {} cannot be a dict key or set element in a region (Windows paths compare ignoring case; store it as a value, or key by str(path).lower())",
                        type_name(obj)
                    ),
                    _ => format!(
                        "an aware {} cannot be a dict key or set element in a region (store it as a value, or use its UTC form)",
                        type_name(obj)
                    ),
                }));
            }
            let hash = bale_core::hash::hash_ext(&e);
            return Ok((self.builder.ext(kind, aux, &payload), hash));
        }
        if !matches!(h, Handler::Unsupported) {
            return Err(KeyFailure::Refused(format!(
                "a {} cannot be a dict key or set element in a region",
                type_name(obj)
            )));
        }
        Err(KeyFailure::Refused(format!("cannot compact {}", type_name(obj))))
    }

    /// The shape of the keys in `self.items[items..items + n]`, whose
    /// pointers are in `self.key_ptrs`: found again, or written.
    pub(crate) unsafe fn shape_of(&mut self, items: usize, n: usize) -> PyResult<u64> {
        self.dict_keys(items, n, false)
    }

    /// How the keys in `self.items[items..items + n]` are written: a SHAPE
    /// found again or written, or (`ids_allowed`, and marked by
    /// `ID_DICT_MARK`) the key table of an ID_DICT whose ids are pushed on
    /// `open_ids` (see `bale_core::id_dict::KeyTable`).
    unsafe fn dict_keys(&mut self, items: usize, n: usize, ids_allowed: bool) -> PyResult<u64> {
        // Records in a list mostly repeat the previous one's keys.
        let key_hash = {
            let mut h = rustc_hash::FxHasher::default();
            std::hash::Hash::hash_slice(&self.key_ptrs, &mut h);
            std::hash::Hasher::finish(&h)
        };
        let cached = match &self.last_shape {
            Some((keys, s)) if *keys == self.key_ptrs => Some(*s),
            _ => self.shapes.get(&key_hash).and_then(|e| {
                let keys = &self.shape_keys[e.start..][..e.len];
                (keys == &self.key_ptrs[..]).then_some(e.slot)
            }),
        };
        let signature = match (&self.shapes_by_content, cached) {
            (Some(_), None) => content_signature(&self.items[items..]),
            _ => None,
        };
        let by_content = signature.as_ref().and_then(|sig| self.shapes_by_content.as_ref()?.get(sig).copied());
        let shape = match cached.or(by_content) {
            Some(s) => s,
            None => {
                if ids_allowed && self.key_table.wants(n) {
                    if let Some(table) = self.key_ids(items, n)? {
                        return Ok(table | ID_DICT_MARK);
                    }
                }
                self.key_table.shape_written();
                let mut slots = Vec::with_capacity(n);
                let mut hashes = Vec::with_capacity(n);
                for i in 0..n {
                    let key = self.items[items + i].0;
                    let (s, h) =
                        self.key(key, 0).map_err(|f| self.key_failure(f, format!(": key {}", self.repr(key))))?;
                    slots.push(s);
                    hashes.push(h);
                }
                let s = self.builder.shape(&slots, &hashes);
                // Another sequence with the same hash keeps its place (this
                // one is then written again if met again: never a wrong shape).
                if n <= SHAPE_CACHE_MAX_KEYS && !self.shapes.contains_key(&key_hash) {
                    let start = self.shape_keys.len();
                    self.shape_keys.extend_from_slice(&self.key_ptrs);
                    self.shapes.insert(key_hash, ShapeEntry { start, len: n, slot: s });
                    self.pending.extend(self.key_ptrs.iter().map(|&k| k as *mut PyObject));
                }
                if let (Some(map), Some(sig)) = (&mut self.shapes_by_content, signature) {
                    map.insert(sig, s);
                }
                s
            }
        };
        if n <= SHAPE_CACHE_MAX_KEYS {
            match &mut self.last_shape {
                Some((keys, s)) => {
                    if *keys != self.key_ptrs {
                        keys.clone_from(&self.key_ptrs);
                    }
                    *s = shape;
                }
                None => self.last_shape = Some((self.key_ptrs.clone(), shape)),
            }
        }
        Ok(shape)
    }

    /// The key table for an ID_DICT of the str keys in `self.items[items..
    /// items + n]` (whose pointers are in `key_ptrs`), its ids pushed on
    /// `open_ids`; `None` when a key is not an exact str or the table is full.
    unsafe fn key_ids(&mut self, items: usize, n: usize) -> PyResult<Option<u64>> {
        let str_type = addr_of_mut!(ffi::PyUnicode_Type);
        if !self.items[items..items + n].iter().all(|&(k, _)| ffi::Py_TYPE(k) == str_type) {
            return Ok(None);
        }
        // Keys met before are found by address (pinned like the shape cache's).
        if n <= ID_DICT_MAX_KEYS {
            let mut ids = Ids::default();
            let known = self.key_ptrs.iter().enumerate().all(|(i, k)| match self.key_ids.get(k) {
                Some(&id) => {
                    ids.0[1 + i] = id;
                    true
                }
                None => false,
            });
            if known {
                ids.0[0] = n as u8;
                self.open_ids.push(ids);
                return Ok(Some(self.key_table.table(&mut self.builder)));
            }
        }
        let ptrs = std::mem::take(&mut self.key_ptrs);
        let mut table = std::mem::take(&mut self.key_table);
        // Exact str keys: `key` runs no Python code and cannot fail.
        let found = table.ids_of(ptrs.iter().map(|&k| str_units(k as *mut PyObject)), |i| {
            let key = ptrs[i] as *mut PyObject;
            self.key(key, 0).map_err(|f| self.key_failure(f, format!(": key {}", self.repr(key))))
        });
        let out = match found {
            Ok(Some(ids)) => {
                for (i, &k) in ptrs.iter().enumerate() {
                    if self.key_ids.insert(k, ids.0[1 + i]).is_none() {
                        self.pending.push(k as *mut PyObject);
                    }
                }
                self.open_ids.push(ids);
                Ok(Some(table.table(&mut self.builder)))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        self.key_table = table;
        self.key_ptrs = ptrs;
        out
    }

    /// Starts writing a dict (of the `collections` class `class`): its
    /// shape, then a frame over its values. `ordered` is an `OrderedDict`'s
    /// list of items in its order, which then replaces the dict's storage
    /// order.
    unsafe fn enter_dict(&mut self, obj: *mut PyObject, class: u64, ordered: Option<Py<PyAny>>) -> PyResult<()> {
        self.check_cycle(obj)?;
        let mut n = ffi::PyDict_Size(obj) as usize;
        let items = self.items.len();
        self.key_ptrs.clear();
        if let Some(list) = ordered {
            // Owned to the end: items are read through borrowed pointers.
            let l = list.as_ptr();
            n = pylist::len(l);
            for i in 0..n {
                let pair = pylist::item(l, i);
                if ffi::PyTuple_CheckExact(pair) == 0 || pytuple::len(pair) != 2 {
                    self.truncate_items(items);
                    return Err(CompactError::new_err(format!("{}: OrderedDict items are not pairs", self.path())));
                }
                let (k, v) = (pytuple::item(pair, 0), pytuple::item(pair, 1));
                self.items.push((k, v));
                self.key_ptrs.push(k as usize);
            }
            self.pins.push(list);
        } else {
            // An exact dict's entry table read directly where its layout is
            // known (`ffi::pydict::pairs`), else `PyDict_Next`.
            let direct = if ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyDict_Type) { pydict::pairs(obj, n) } else { None };
            if let Some(pairs) = direct {
                for (i, &[k, v]) in pairs.iter().enumerate() {
                    if i < PREFETCH_AHEAD {
                        prefetch(v);
                    }
                    self.items.push((k, v));
                    self.key_ptrs.push(k as usize);
                }
            } else {
                let mut pos: ffi::Py_ssize_t = 0;
                let mut k: *mut PyObject = std::ptr::null_mut();
                let mut v: *mut PyObject = std::ptr::null_mut();
                while ffi::PyDict_Next(obj, &mut pos, &mut k, &mut v) != 0 {
                    if self.items.len() - items < PREFETCH_AHEAD {
                        prefetch(v);
                    }
                    self.items.push((k, v));
                    self.key_ptrs.push(k as usize);
                }
            }
        }
        // Storing a key may run Python code before the dict has a frame.
        self.entering.push(obj);
        let shape = self.dict_keys(items, n, class == bale_core::dict_class::PLAIN);
        self.entering.pop();
        let shape = shape?;
        let seen = self.python_runs;
        self.open_dict(obj, class, shape, items, n, seen);
        Ok(())
    }
}

// The compactor is a source of the core's walk: Python objects, read
// through the C-API and the `ffi` layer.
impl Source for Compactor<'_> {
    type Node = *mut PyObject;
    type Cursor = Cursor;
    type Error = PyErr;

    #[inline(always)]
    fn parts(&mut self) -> (&mut Walk<Cursor>, &mut Builder) {
        (&mut self.walk, &mut self.builder)
    }

    #[inline(always)]
    fn visit(&mut self, obj: *mut PyObject) -> PyResult<Option<u64>> {
        // SAFETY: `obj` is alive (`Note [Python code during compaction]`).
        unsafe {
            // Containers as `visit` takes them, without the call (see
            // `seq_value`); with sharing, `visit` first looks the object up.
            if !self.walk.shares() {
                let tp = ffi::Py_TYPE(obj);
                if tp == addr_of_mut!(ffi::PyDict_Type) {
                    self.enter_dict(obj, bale_core::dict_class::PLAIN, None)?;
                    return Ok(None);
                }
                if tp == addr_of_mut!(ffi::PyList_Type) || tp == addr_of_mut!(ffi::PyTuple_Type) {
                    return self.seq_value(obj, tp == addr_of_mut!(ffi::PyTuple_Type));
                }
            }
            Compactor::visit(self, obj)
        }
    }

    #[inline(always)]
    fn next_child(&mut self) -> PyResult<Option<*mut PyObject>> {
        // SAFETY: the open containers are alive and their items read live.
        unsafe { self.next_element() }
    }

    #[inline(always)]
    fn container(&self, cursor: &Cursor) -> PyResult<Container> {
        Ok(match *cursor {
            Cursor::Seq { tuple, .. } => Container::Seq { tuple },
            Cursor::Dict { shape, .. } if shape & ID_DICT_MARK != 0 => {
                // The innermost open ID_DICT's ids are the last pushed.
                Container::IdDict {
                    table: shape & !ID_DICT_MARK,
                    ids: *self.open_ids.last().expect("pushed when opened"),
                }
            }
            Cursor::Dict { class, shape, .. } => Container::Dict { class, shape },
            Cursor::Record { ty, .. } => Container::Record { ty },
        })
    }

    #[inline(always)]
    fn closed(&mut self, cursor: Cursor, slot: u64, kept: bool) {
        self.closed_container(cursor, slot, kept);
    }
}

/// Lets go of an owned reference without running Python code: a last
/// reference goes to `kept` (released when the compaction ends).
unsafe fn release_into(py: Python<'_>, obj: *mut PyObject, kept: &mut Vec<Py<PyAny>>) {
    if ffi::Py_REFCNT(obj) > 1 {
        ffi::Py_DecRef(obj);
    } else {
        kept.push(Bound::from_owned_ptr(py, obj).unbind());
    }
}

/// Lets go (as `release_into` does) of the pins of `stack` taken at a depth
/// or index of `from` or more: their frame or entries are gone.
unsafe fn release_from(
    py: Python<'_>,
    stack: &mut Vec<(usize, *mut PyObject)>,
    from: usize,
    kept: &mut Vec<Py<PyAny>>,
) {
    while let Some(&(at, p)) = stack.last() {
        if at < from {
            break;
        }
        stack.pop();
        release_into(py, p, kept);
    }
}

/// A copy of a scalar type's handler (they hold no data), so that its
/// parts can be read while the compactor runs Python code.
fn scalar_handler(h: &Handler) -> Handler {
    match h {
        Handler::Date => Handler::Date,
        Handler::Time => Handler::Time,
        Handler::DateTime => Handler::DateTime,
        Handler::Delta => Handler::Delta,
        Handler::Decimal => Handler::Decimal,
        Handler::Uuid => Handler::Uuid,
        Handler::Range => Handler::Range,
        Handler::Array => Handler::Array,
        Handler::NdArray { scalar } => Handler::NdArray { scalar: *scalar },
        Handler::Fraction => Handler::Fraction,
        Handler::Path(class) => Handler::Path(*class),
        Handler::DictClass(_) | Handler::Record(_) | Handler::Unsupported => Handler::Unsupported,
    }
}

/// The PAIR slot of a 2-tuple of exact ints that fit in 29 bits each.
#[inline]
unsafe fn pair_slot(a: *mut PyObject, b: *mut PyObject) -> Option<u64> {
    let int_type = addr_of_mut!(ffi::PyLong_Type);
    if ffi::Py_TYPE(a) != int_type || ffi::Py_TYPE(b) != int_type {
        return None;
    }
    make_pair_slot(int_value(a)?, int_value(b)?)
}

/// The keys of a dict as bytes that are equal exactly when the key
/// sequences are (`layout::key_signature`): for dicts whose keys are all
/// strings (others: `None`).
unsafe fn content_signature(items: &[(*mut PyObject, *mut PyObject)]) -> Option<Box<[u8]>> {
    if items.len() > SHAPE_CACHE_MAX_KEYS {
        return None;
    }
    let str_type = addr_of_mut!(ffi::PyUnicode_Type);
    if !items.iter().all(|&(k, _)| ffi::Py_TYPE(k) == str_type) {
        return None;
    }
    Some(key_signature(items.iter().map(|&(k, _)| str_units(k))))
}

/// The slot that refers to a view's container where it is stored; `None`
/// for what has no place of its own (a table's row, a slice of a list
/// column), which must be copied instead.
pub fn node_slot(node: Node) -> Option<u64> {
    if is_slice(&node.value()) {
        return match node {
            Node::List(Items::Slots(s)) if s.len <= SHORT_MAX => Some(make_seq_slot(TAG_LIST, s.len, s.pos)),
            _ => None,
        };
    }
    Some(match node {
        Node::List(Items::Column(c)) | Node::Tuple(Items::Column(c)) => c.start as u64,
        Node::List(Items::Slots(s)) | Node::Tuple(Items::Slots(s)) => {
            let tag = if matches!(node, Node::List(_)) { TAG_LIST } else { TAG_TUPLE };
            if s.len == 0 {
                tag
            } else if s.start == s.pos {
                make_seq_slot(tag, s.len, s.start)
            } else {
                s.start as u64
            }
        }
        Node::Dict(d) if d.row.is_some() => return None,
        Node::Dict(d) => d.start as u64,
        Node::Set(t) | Node::FrozenSet(t) => t.start as u64,
        Node::NumList(l) => l.start as u64,
        Node::Record(r) => r.start as u64,
    })
}

/// Compacts `obj` into a bare buffer (no header) for probes and comparisons.
pub fn compact_scratch(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, u64)> {
    let mut c = Compactor::new(py, 256);
    let slot = c.run(obj)?;
    Ok((std::mem::take(&mut c.builder).into_raw(), slot))
}
