//! Large write buffers backed by huge pages where the kernel allows it.
//!
//! Compacting a million records writes some hundred megabytes of fresh
//! memory (the region, and the columns gathered before it). With 4 KiB
//! pages every 4 KiB first touched is a page fault, and those faults cost
//! a quarter of the compaction. Linux's transparent huge pages, asked for
//! with `madvise(MADV_HUGEPAGE)` (the default policy on most systems is
//! "madvise"), back such a buffer with 2 MiB pages: 512 times fewer faults.
//! Elsewhere, or when the kernel says no, nothing changes.

/// Buffers smaller than this are left alone: they would not hold one
/// aligned huge page, and small ones are reused from the heap anyway.
const MIN_ADVISED: usize = 4 << 20;

/// Asks for huge pages over the aligned part of `[ptr, ptr + len)`, memory
/// not yet written (the advice only affects pages not yet faulted in).
pub fn advise(ptr: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if len < MIN_ADVISED {
            return;
        }
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) & !(HUGE - 1);
        if end > start {
            // Advice only: on failure (no THP support) the pages stay small.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// A vector with room for `cap` items, advised when large.
pub fn vec_with_capacity<T>(cap: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(cap);
    advise_spare(&mut v);
    v
}

/// Advises the room of `v` not yet written.
pub fn advise_spare<T>(v: &mut Vec<T>) {
    let spare = v.spare_capacity_mut();
    advise(spare.as_ptr().cast(), std::mem::size_of_val(spare));
}
