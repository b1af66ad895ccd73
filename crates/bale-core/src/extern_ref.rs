//! EXTERN (0x24): a reference from a value in one segment of a store to a
//! value in another segment of the same store (STORE.md, *References
//! between segments*).
//!
//! Layout (FORMAT.md, *References to other segments*): a header word whose
//! `len` field is 0, then four words: the segment's file id, the `end` and
//! the `flags` of the region in that segment that holds the value (as an
//! index entry names them), and the value's slot in that region.
//!
//! Why: a stored value built from views of values in other segments (other
//! labels, or its label's older, full segments) references their data
//! instead of copying it. The region format has no notion of a file, so the
//! object only names its target; the store resolves it, and keeps the
//! target's segment while any segment that references it is kept.
//!
//! Outside a store an EXTERN cannot be read: readers refuse it by name. It
//! is never a dict key or set element, and a writer makes one only for a
//! dict or list, so hashing one is refused as Python refuses to hash those.

use crate::error::FormatError;
use crate::format::{FLAG_CYCLIC, FLAG_SHARED, HEADER_LEN};

/// Bytes of an EXTERN object: its header and four words.
pub const EXTERN_BYTES: usize = 40;

/// The most segments a store names (file ids are below 2^32).
pub const MAX_SEGMENT: u64 = u32::MAX as u64;

/// A decoded EXTERN object: the value at `slot` of the region made of
/// segment `segment`'s bytes `[0, end)` with header flags `flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Extern {
    /// Where the object lies in its own region.
    pub start: usize,
    pub segment: u32,
    pub end: u64,
    pub flags: u32,
    pub slot: u64,
}

/// Checks the payload words of an EXTERN (its `len` field is checked by the
/// caller) and decodes them.
pub fn decode(start: usize, words: [u64; 4]) -> std::result::Result<Extern, String> {
    let [segment, end, flags, slot] = words;
    if segment >= MAX_SEGMENT {
        return Err(format!("reference to another segment names segment {segment}, past 2^32 - 2"));
    }
    if end % 8 != 0 || end < HEADER_LEN as u64 {
        return Err(format!("reference to another segment ends at {end}: not a multiple of 8 of at least 64"));
    }
    if flags & !u64::from(FLAG_SHARED | FLAG_CYCLIC) != 0
        || (flags & u64::from(FLAG_CYCLIC) != 0 && flags & u64::from(FLAG_SHARED) == 0)
    {
        return Err(format!("reference to another segment has flags 0x{flags:x}: only SHARED, and CYCLIC with it"));
    }
    Ok(Extern { start, segment: segment as u32, end, flags: flags as u32, slot })
}

/// The payload words of `x`, as `Builder::extern_ref` writes them.
pub fn words(x: &Extern) -> [u64; 4] {
    [u64::from(x.segment), x.end, u64::from(x.flags), x.slot]
}

/// The error of a reader that meets an EXTERN where no store can resolve it.
pub fn unresolved(x: &Extern) -> FormatError {
    FormatError::at(
        x.start,
        format!("a reference to a value in segment {} of a store (read it through the store that holds it)", x.segment),
    )
}

/// The error of hashing one: its target is a dict or a list.
pub fn unhashable(x: &Extern) -> FormatError {
    FormatError::at(x.start, "a reference to another segment is not hashable (it names a dict or a list)")
}
