//! One freed region buffer, kept for the next compaction.
//!
//! A compaction writes its region into a buffer that becomes the region's
//! storage, so a process that compacts again and again (a service, a
//! benchmark) asks the allocator for a new large block each time. glibc
//! serves those with `mmap` and gives them back with `munmap`, so every
//! page of every new region was faulted in afresh: a third of the time of
//! compacting 200,000 records of two 8-64 character strings (20.8 MB) went
//! to the kernel (`perf`: `exc_page_fault`, the memcg charge, zeroing),
//! 31.7 ms against 18.1 ms with the pages reused. Encoders that return
//! `bytes` get reuse from glibc's heap instead (a freed block below 32 MiB
//! raises its mmap threshold). Here, the buffer of a region dropped last
//! (1 to 64 MiB) is kept and handed to the next compaction: one buffer, so
//! the memory kept is at most what that one region took; and up to 32 MiB
//! of scratch buffers (below). Threads share them (a mutex, never waited
//! on: a busy slot means no reuse this time).

use crate::address_map::AddressMap;
use std::sync::Mutex;

/// Smaller buffers are reused by malloc itself.
const KEEP_MIN: usize = 1 << 20;
/// Larger ones are given back: keeping them would hold too much memory.
const KEEP_MAX: usize = 64 << 20;

static SPARE: Mutex<Option<Vec<u8>>> = Mutex::new(None);

/// Keeps `buf` (a region's buffer, no longer used) if its size qualifies
/// and it is larger than the one kept; otherwise it is freed.
pub fn offer(mut buf: Vec<u8>) {
    if !(KEEP_MIN..=KEEP_MAX).contains(&buf.capacity()) {
        return;
    }
    buf.clear();
    keep_larger(&SPARE, buf, Vec::capacity);
}

/// The buffer kept, if any (empty, with its capacity).
pub fn take() -> Option<Vec<u8>> {
    take_kept(&SPARE)
}

/// Puts `value` in `slot` if the slot is empty or holds a smaller one (by
/// `size`); what is displaced, or `value` itself, is dropped after the lock
/// is let go. Never waits: a busy slot means no keeping this time.
pub fn keep_larger<T>(slot: &Mutex<Option<T>>, value: T, size: impl Fn(&T) -> usize) {
    let displaced = match slot.try_lock() {
        Ok(mut kept) if kept.as_ref().is_none_or(|k| size(k) < size(&value)) => kept.replace(value),
        _ => Some(value),
    };
    drop(displaced);
}

/// What `slot` holds, taken out, unless it is empty or busy.
pub fn take_kept<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.try_lock().ok()?.take()
}

/// A builder for a new region of about `capacity` bytes: in the buffer
/// kept, if any, else a new one.
pub fn builder(capacity: usize) -> bale_core::Builder {
    match take() {
        Some(buf) => {
            let mut b = bale_core::Builder::in_buffer(buf);
            b.reserve(capacity.saturating_sub(b.len()));
            b
        }
        None => bale_core::Builder::with_capacity(capacity),
    }
}

/// Scratch buffers kept between compactions: the code units a table's
/// string column gathers before they are written (as large as the column,
/// and freed right after). glibc maps a block as large as the last one
/// freed afresh (a request equal to its mmap threshold is mapped), so each
/// compaction faulted in its gather buffers again; a few are kept here.
static SCRATCH: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// At most this many scratch buffers are kept, of this many bytes in all.
const SCRATCH_KEPT: usize = 4;
const SCRATCH_BYTES: usize = 32 << 20;

/// An empty scratch buffer (one kept, if any, with its capacity).
pub fn take_scratch() -> Vec<u8> {
    SCRATCH.try_lock().ok().and_then(|mut kept| kept.pop()).unwrap_or_default()
}

/// Keeps `buf` for a later `take_scratch` if its size qualifies, as `offer`.
pub fn give_scratch(mut buf: Vec<u8>) {
    if !(KEEP_MIN..=KEEP_MAX).contains(&buf.capacity()) {
        return;
    }
    buf.clear();
    let dropped = match SCRATCH.try_lock() {
        Ok(mut kept)
            if kept.len() < SCRATCH_KEPT
                && kept.iter().map(Vec::capacity).sum::<usize>() + buf.capacity() <= SCRATCH_BYTES =>
        {
            kept.push(buf);
            None
        }
        _ => Some(buf),
    };
    drop(dropped);
}

/// The map of shared strings by address (`Compactor::strings`) kept
/// between compactions. Data whose strings are also held elsewhere (a
/// second list of the same values, an index) sends every string through
/// it: growing it anew each time was a quarter of compacting the amazon
/// corpus held that way (`perf`). Kept only up to `STRING_MAP_KEPT`
/// places (1 MiB); emptying it visits only the places last filled.
static STRING_MAP: Mutex<Option<AddressMap>> = Mutex::new(None);

/// Largest capacity of a kept string map.
const STRING_MAP_KEPT: usize = 1 << 16;

/// An empty string map: the one kept, if any, with its capacity.
pub fn take_string_map() -> AddressMap {
    take_kept(&STRING_MAP).unwrap_or_default()
}

/// Keeps `map` for a later `take_string_map` if it is not too large.
pub fn give_string_map(mut map: AddressMap) {
    if map.capacity() > STRING_MAP_KEPT {
        return;
    }
    map.clear();
    keep_larger(&STRING_MAP, map, AddressMap::capacity);
}
