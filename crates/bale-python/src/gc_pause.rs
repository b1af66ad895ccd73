//! Pausing CPython's cyclic garbage collector while bale builds or walks
//! objects, shared by every walk in the process.
//!
//! Note [One pause for all walks]
//! `compact` and `thaw` turn the collector off while they run: `compact`
//! because the collector's finalizers are Python code that could free what
//! its walk holds borrowed (`Note [Python code during compaction]`), `thaw`
//! because every object it builds is reachable, so collecting would only
//! waste time. Walks overlap: two threads may each be inside one (the GIL
//! passes between them whenever Python code runs), and a walk may start
//! another (a record's class rebuilt by `thaw` may compact). If each walk
//! restored the state it found, the first to finish would turn the
//! collector back on under the others. So the pauses are counted: the first
//! remembers whether the collector was on, and only the last one out turns
//! it back on. All of this happens with the GIL held (the module declares
//! that it needs the GIL), so plain cells suffice.

use std::cell::Cell;

use pyo3::ffi;

struct Pauses {
    /// Walks in progress.
    count: Cell<usize>,
    /// Whether the collector was on when the first of them began.
    was_enabled: Cell<bool>,
}

// Safety: only touched with the GIL held (see the Note).
unsafe impl Sync for Pauses {}

static PAUSES: Pauses = Pauses { count: Cell::new(0), was_enabled: Cell::new(false) };

/// The collector stays off while a `GcPause` lives.
pub struct GcPause(());

impl GcPause {
    /// # Safety
    /// The GIL must be held, here and where the pause is dropped.
    pub unsafe fn begin() -> GcPause {
        let was = ffi::PyGC_Disable() != 0;
        if PAUSES.count.get() == 0 {
            PAUSES.was_enabled.set(was);
        }
        PAUSES.count.set(PAUSES.count.get() + 1);
        GcPause(())
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        let left = PAUSES.count.get() - 1;
        PAUSES.count.set(left);
        if left == 0 && PAUSES.was_enabled.get() {
            unsafe { ffi::PyGC_Enable() };
        }
    }
}
