//! The segments of a store as the references between them see them
//! (STORE.md, *References between segments*).
//!
//! A value in one segment may hold an EXTERN object (`bale_core::extern_ref`)
//! naming a value in another. Reading one needs that segment's bytes, so
//! every handle a store makes on a segment carries a [`Place`]: its segment
//! and the store's [`Segments`], the committed (or, in a writer, appended)
//! bytes of every segment of the snapshot it was read in.
//!
//! The registry holds storages and lengths, never Python objects: handles
//! hold the registry, so a registry holding handles would make cycles that
//! nothing collects (regions are not tracked by the GC).
//!
//! A store makes a registry per snapshot, holding exactly that snapshot's
//! segments, and hands its handles over to it (`Region._placed`): views of
//! an old snapshot keep its segments mapped, as LMDB keeps pages for open
//! readers, and nothing else does. Registries of one *family* agree on
//! every byte they hold; a store starts a new family when bytes it handed
//! out stop being the store's: another store at its path, or a batch given
//! up (its appends never reached a commit, and the next ones overwrite
//! them). A writer references only views of its own family.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bale_core::format::{FLAG_CYCLIC, FLAG_SHARED};
use bale_core::transplant::ExternPolicy;
use bale_core::{Builder, Extern};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rustc_hash::FxHashMap;

use crate::region::{Lineage, Region};
use crate::storage::Storage;
use crate::views::Node;

/// The bytes of each segment: the storage a handle reads them from, how
/// many of them the snapshot (or the writer's batch) holds, and the lineage
/// they belong to (a handle made on them joins it, so that an append
/// through it can never write where the store's appends write).
pub struct Segments {
    family: u64,
    bytes: Mutex<FxHashMap<u32, Registered>>,
}

/// One segment's entry in a registry.
pub type Registered = (Arc<Storage>, usize, Arc<Lineage>);

static NEXT_FAMILY: AtomicU64 = AtomicU64::new(1);

impl Segments {
    fn of_family(family: u64) -> Segments {
        Segments { family, bytes: Mutex::default() }
    }

    pub fn family(&self) -> u64 {
        self.family
    }

    pub fn same_family(&self, other: &Segments) -> bool {
        self.family == other.family
    }

    /// Records that segment `seg` holds the first `len` bytes of `storage`
    /// (a newer mapping or an append: a longer run of the same bytes).
    pub fn register(&self, seg: u32, storage: &Arc<Storage>, len: usize, lineage: &Arc<Lineage>) {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner()).insert(seg, (storage.clone(), len, lineage.clone()));
    }

    /// Segment `seg`'s storage, length and lineage, if this registry holds it.
    pub fn get(&self, seg: u32) -> Option<Registered> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner()).get(&seg).cloned()
    }
}

/// Where a store's handle reads: segment `segment` of `segments`. Its
/// first `store_len` bytes are the store's (committed, or appended by the
/// store's batch); bytes appended to it by hand past them never are.
#[derive(Clone)]
pub struct Place {
    pub segment: u32,
    pub segments: Arc<Segments>,
    pub store_len: usize,
}

/// Store support: one registry (`Segments`), made by `Store` and handed to
/// `_open_segment` and `Region._placed`.
#[pyclass(frozen, module = "bale._bale", name = "_Segments")]
pub struct SegmentsHandle(pub Arc<Segments>);

#[pymethods]
impl SegmentsHandle {
    /// An empty registry of a new family.
    #[new]
    fn new() -> Self {
        SegmentsHandle(Arc::new(Segments::of_family(NEXT_FAMILY.fetch_add(1, Ordering::Relaxed))))
    }

    /// An empty registry of this one's family (the next snapshot's).
    fn successor(&self) -> Self {
        SegmentsHandle(Arc::new(Segments::of_family(self.0.family)))
    }
}

/// What an append to a store's segment may reference in the store's other
/// segments, and what it did reference (`Region._store_append`).
pub struct ExternTarget {
    /// The segment appended to, and where the append starts in it (set by
    /// `append_to`).
    pub own: u32,
    pub at: u64,
    /// The writer's registry: a view read through a registry of another
    /// family may hold bytes the store no longer has (a batch given up),
    /// so it is copied.
    pub segments: Arc<Segments>,
    /// The segments of the writer's transaction that may be referenced
    /// (a dict keyed by segment id): a referenced segment must have a row,
    /// so that its file stays.
    pub allowed: Py<PyDict>,
    /// The other segments referenced so far.
    pub kept: std::collections::BTreeSet<u32>,
    /// The EXTERNs written, by what they name: a view met again is
    /// referenced by the same object (a value written once).
    written: FxHashMap<(u32, u64, u32, u64), u64>,
}

impl ExternTarget {
    pub fn new(own: u32, segments: Arc<Segments>, allowed: Py<PyDict>) -> ExternTarget {
        ExternTarget { own, at: 0, segments, allowed, kept: Default::default(), written: Default::default() }
    }

    /// Where `reg` lies, when it is a handle of this store as the writer
    /// sees it, and all its bytes are the store's.
    fn same_store<'r>(&self, reg: &'r Region) -> Option<&'r Place> {
        reg.place().filter(|p| p.segments.same_family(&self.segments) && reg.buf().len() <= p.store_len)
    }

    /// The slot that references the view (`node` at `slot` of `reg`)
    /// where it is stored, and the header flags that needs: a plain slot
    /// for a value of the segment appended to (below the append), an
    /// EXTERN for a dict or list of another segment of the transaction.
    /// `None`: it must be copied.
    pub fn reference(
        &mut self,
        py: Python<'_>,
        reg: &Region,
        node: Node,
        slot: u64,
        builder: &mut Builder,
    ) -> Option<(u64, u32)> {
        let place = self.same_store(reg)?;
        let end = reg.buf().len() as u64;
        if place.segment == self.own {
            // Another handle on this segment: its bytes below `end` are the
            // destination's, as one lineage's handles agree.
            return (end <= self.at).then_some((slot, FLAG_SHARED | (reg.flags() & FLAG_CYCLIC)));
        }
        // Tuples, sets and records are copied: a reference is never hashed.
        if !matches!(node, Node::Dict(_) | Node::List(_) | Node::NumList(_)) {
            return None;
        }
        // The segment must have a row, as long as the view: its bytes stay.
        let row = self.allowed.bind(py).get_item(place.segment).ok().flatten()?;
        let length: u64 = row.getattr(pyo3::intern!(py, "length")).ok()?.extract().ok()?;
        if end > length {
            return None;
        }
        let segment = place.segment;
        self.kept.insert(segment);
        let flags = reg.flags();
        if let Some(&at) = self.written.get(&(segment, end, flags, slot)) {
            return Some((at, FLAG_SHARED));
        }
        let at = builder.extern_ref(&Extern { start: 0, segment, end, flags, slot });
        self.written.insert((segment, end, flags, slot), at);
        Some((at, 0))
    }

    /// How a copy from `reg` treats its references (`ExternPolicy`): kept,
    /// when `reg` is a handle of this store as the writer sees it.
    pub fn policy_for(&self, py: Python<'_>, reg: &Region) -> Option<ExternPolicy> {
        self.same_store(reg)?;
        let allowed = self.allowed.bind(py).keys().iter().filter_map(|k| k.extract::<u32>().ok()).collect();
        Some(ExternPolicy { own: self.own, own_end: self.at, allowed, ..ExternPolicy::default() })
    }
}
