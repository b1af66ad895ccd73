//! Tuples of tuples and scalars (trees, nested points) written by
//! recursion instead of the compactor's frames.
//!
//! The frame loop pays on every node for what some container may need:
//! sharing, cycle checks, records, the path of an error. A tree of tuples
//! needs none of it while it holds only tuples and scalars. When a tuple
//! holds anything else, the tuples being written become frames and the
//! frame loop goes on from that element; either way the bytes written, and
//! their order, are those of the frame loop.

use std::ptr::addr_of_mut;

use bale_core::format::{SLOT_EMPTY_TUPLE, SLOT_FALSE, SLOT_NONE, SLOT_TRUE};
use pyo3::ffi::{self, PyObject};

use crate::compactor::{prefetch, seq_items, Compactor, Cursor, PREFETCH_AHEAD, SMALL_LEAF_SEQ};
use crate::ffi::pylong::int_value;
use crate::ffi::pytuple;

/// Nesting the recursion reaches before it hands deeper tuples to frames.
const MAX_DEPTH: usize = 64;

impl<'py> Compactor<'py> {
    /// Writes the exact tuple `obj` of `len` >= 1 items (without `share`):
    /// its slot, or `None` after pushing the frames the frame loop goes on
    /// from.
    pub(crate) unsafe fn tuple_tree(&mut self, obj: *mut PyObject, len: usize) -> Option<u64> {
        let mut handover = std::mem::take(&mut self.handover);
        let slot = self.tuple_level(obj, len, 0, &mut handover);
        if slot.is_none() {
            // Gathered innermost first; the frame stack wants the outermost first.
            while let Some((f, base)) = handover.pop() {
                self.push_frame_at(f, base);
            }
        }
        self.handover = handover;
        slot
    }

    /// One tuple of the recursion. On handing over, its frame (and those
    /// of the tuples it is inside, as the recursion unwinds) is added to
    /// `handover`, with its element slots left on `self.walk.slots`.
    unsafe fn tuple_level(
        &mut self,
        obj: *mut PyObject,
        len: usize,
        depth: usize,
        handover: &mut Vec<(Cursor, usize)>,
    ) -> Option<u64> {
        let tuple_type = addr_of_mut!(ffi::PyTuple_Type);
        let items = seq_items(obj, true);
        let base = self.walk.slots.len();
        for i in 0..len.min(PREFETCH_AHEAD) {
            prefetch(*items.add(i));
        }
        for i in 0..len {
            if i + PREFETCH_AHEAD < len {
                prefetch(*items.add(i + PREFETCH_AHEAD));
            }
            let item = *items.add(i);
            let tp = ffi::Py_TYPE(item);
            let slot = if tp == addr_of_mut!(ffi::PyLong_Type) {
                // An int beyond 64 bits is the frame loop's (it may fail).
                int_value(item).map(|v| self.builder.int(v))
            } else if tp == tuple_type {
                let n = pytuple::len(item);
                if n == 0 {
                    Some(SLOT_EMPTY_TUPLE)
                } else if let Some(s) =
                    if n <= SMALL_LEAF_SEQ { self.small_leaf_seq(seq_items(item, true), n, true) } else { None }
                {
                    Some(s)
                } else if depth + 1 < MAX_DEPTH {
                    let inner = self.tuple_level(item, n, depth + 1, handover);
                    if inner.is_none() {
                        // The element is under way: the frame loop resumes after it.
                        handover.push((Cursor::Seq { obj, tuple: true, len, next: i + 1, seen: 0 }, base));
                        return None;
                    }
                    inner
                } else {
                    None
                }
            } else if tp == addr_of_mut!(ffi::PyUnicode_Type) {
                Some(self.str_slot(item))
            } else if tp == addr_of_mut!(ffi::PyFloat_Type) {
                Some(self.builder.float(crate::ffi::pyfloat::value(item)))
            } else if item == ffi::Py_None() {
                Some(SLOT_NONE)
            } else if item == ffi::Py_True() {
                Some(SLOT_TRUE)
            } else if item == ffi::Py_False() {
                Some(SLOT_FALSE)
            } else {
                None
            };
            let Some(slot) = slot else {
                // The frame loop visits this element next.
                handover.push((Cursor::Seq { obj, tuple: true, len, next: i, seen: 0 }, base));
                return None;
            };
            self.walk.slots.push(slot);
        }
        let slot = self.builder.seq(true, &self.walk.slots[base..]);
        self.walk.slots.truncate(base);
        Some(slot)
    }
}
