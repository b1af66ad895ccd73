//! A store index file's lookup table (`docs/STORE.md`, *The lookup
//! table*): what follows the index region in its file. Open addressing
//! over 32-byte buckets, each holding what a get needs (the key's hash and
//! slot, and its entry), so that a get reads one bucket where the region's
//! dict reads a hash slot, a key slot, a value slot and an entry tuple,
//! one after the other: at a million keys each of those is a cache and
//! TLB miss.
//!
//! Layout, all words little-endian u64:
//!
//! * header (32 bytes): the magic `BALEIDXT`, the number of buckets, the
//!   number of entries, the XXH3-64 of the buckets' bytes;
//! * buckets: word 1 is the key's slot in the region (0: an empty
//!   bucket), word 2 the entry's end below its flags (`end | flags << 48`),
//!   word 3 its root; word 0 holds the segment in its low 32 bits
//!   (`u32::MAX` for a deleted key's None entry) and, in its top 32 bits,
//!   those of the key's hash XOR `bucket_check` of the bucket's other
//!   fields.
//!
//! A key hashing to `h` starts at bucket `(h * buckets) >> 64` (of the
//! 128-bit product) and probes forward, wrapping, until an empty bucket.
//! A bucket matches when its top 32 bits are those of `h ^ check`: a
//! damaged bucket then matches no key (but for a chance of 2^-32), so
//! damage reads as a key not found, which makes the store check the whole
//! table (`Region::check_index_table_once`) rather than give a wrong entry.

use crate::error::{FormatError, Result};
use crate::format::read_u64;

pub const MAGIC: [u8; 8] = *b"BALEIDXT";
pub const HEADER_LEN: usize = 32;
pub const BUCKET_LEN: usize = 32;
/// The segment of a None entry (a deleted key).
pub const DELETED: u32 = u32::MAX;
const END_BITS: u32 = 48;

/// An index entry: `(segment, end, root, flags)` (see `docs/STORE.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub segment: u32,
    pub end: u64,
    pub root: u64,
    pub flags: u32,
}

/// What a bucket holds for one key: its hash, its slot in the region, and
/// its entry (None for a deleted key).
pub type Item = (u64, u64, Option<Entry>);

/// Buckets for `entries` keys: a load of at most 3/4.
pub fn buckets_for(entries: usize) -> usize {
    entries + entries / 3 + 1
}

/// A check of a bucket's fields (its segment, key slot, end and flags
/// word, root), mixed into its hash bits (`mix`: the key hash's
/// splitmix64 finalizer, FORMAT.md *Key hash*).
#[inline]
fn bucket_check(segment: u32, slot: u64, end_flags: u64, root: u64) -> u64 {
    use crate::hash::mix;
    mix(slot ^ mix(end_flags ^ mix(root ^ segment as u64)))
}

#[inline]
fn home(hash: u64, buckets: usize) -> usize {
    ((hash as u128 * buckets as u128) >> 64) as usize
}

/// The table of `items` (key hash, key slot, entry or None), or None when
/// one does not fit a bucket (a key slot of 0, a segment of `u32::MAX`, an
/// end of 2^48 or more, flags of 2^16 or more): the file then has no table
/// and gets read the region's dict.
pub fn build(items: &[Item]) -> Option<Vec<u8>> {
    let n = buckets_for(items.len());
    let mut buckets = vec![0u8; n * BUCKET_LEN];
    for &(hash, slot, entry) in items {
        let (segment, end, root, flags) = match entry {
            Some(e) => (e.segment, e.end, e.root, e.flags),
            None => (DELETED, 0, 0, 0),
        };
        if slot == 0 || (entry.is_some() && segment == DELETED) || end >> END_BITS != 0 || flags >> 16 != 0 {
            return None;
        }
        let mut p = home(hash, n);
        while read_u64(&buckets, p * BUCKET_LEN + 8) != 0 {
            p = if p + 1 == n { 0 } else { p + 1 };
        }
        let end_flags = end | (flags as u64) << END_BITS;
        let check = bucket_check(segment, slot, end_flags, root);
        let words = [(hash ^ check) & !0xFFFF_FFFF | segment as u64, slot, end_flags, root];
        for (i, w) in words.iter().enumerate() {
            buckets[p * BUCKET_LEN + 8 * i..][..8].copy_from_slice(&w.to_le_bytes());
        }
    }
    let mut out = Vec::with_capacity(HEADER_LEN + buckets.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.extend_from_slice(&(items.len() as u64).to_le_bytes());
    out.extend_from_slice(&crate::xxh3_64(&buckets).to_le_bytes());
    out.extend_from_slice(&buckets);
    Some(out)
}

/// A parsed table: its header checked against its size (O(1)); the
/// buckets are read, bounds-checked, as gets need them.
#[derive(Clone, Copy, Debug)]
pub struct Table<'a> {
    buckets: &'a [u8],
    n: usize,
    entries: usize,
    sum: u64,
}

/// Where a table lies in its file's bytes (after the region).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub start: usize,
    pub len: usize,
}

impl<'a> Table<'a> {
    /// The table in `bytes`, all of what follows the region in its file.
    pub fn parse(bytes: &'a [u8]) -> Result<Table<'a>> {
        if bytes.len() < HEADER_LEN || bytes[..8] != MAGIC {
            return Err(FormatError::new("the bytes after the index region are not a lookup table (magic)"));
        }
        let n = read_u64(bytes, 8);
        let entries = read_u64(bytes, 16);
        let want = (n as u128) * BUCKET_LEN as u128 + HEADER_LEN as u128;
        if want != bytes.len() as u128 || n == 0 || entries >= n {
            return Err(FormatError::new(format!(
                "lookup table of {n} buckets for {entries} entries does not fill its {} bytes",
                bytes.len()
            )));
        }
        Ok(Table { buckets: &bytes[HEADER_LEN..], n: n as usize, entries: entries as usize, sum: read_u64(bytes, 24) })
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    /// The entry of the key hashing to `hash` whose slot `is_key` accepts
    /// (asked only of buckets with the hash's top 32 bits): `Some(None)`
    /// for a deleted key, `None` for one the table does not hold.
    #[inline]
    pub fn find(&self, hash: u64, is_key: impl FnMut(u64) -> Result<bool>) -> Result<Option<Option<Entry>>> {
        self.find_then(hash, |_, _| {}, is_key)
    }

    /// The bucket where the search for `hash` starts: a get prefetches it
    /// in every level before it looks in the first (the delta's lookup then
    /// overlaps the index files' misses).
    pub fn home_bucket(&self, hash: u64) -> &'a [u8] {
        &self.buckets[home(hash, self.n) * BUCKET_LEN..][..BUCKET_LEN]
    }

    /// `find`, calling `candidate(segment, root)` for a bucket whose hash
    /// bits match before its key is compared: a get prefetches the value's
    /// root there, so that its miss overlaps the key's.
    pub fn find_then(
        &self,
        hash: u64,
        mut candidate: impl FnMut(u32, u64),
        mut is_key: impl FnMut(u64) -> Result<bool>,
    ) -> Result<Option<Option<Entry>>> {
        let mut p = home(hash, self.n);
        for _ in 0..self.n {
            let b = &self.buckets[p * BUCKET_LEN..][..BUCKET_LEN];
            let slot = read_u64(b, 8);
            if slot == 0 {
                return Ok(None);
            }
            let (w0, w2, root) = (read_u64(b, 0), read_u64(b, 16), read_u64(b, 24));
            let segment = w0 as u32;
            if (w0 ^ hash ^ bucket_check(segment, slot, w2, root)) >> 32 == 0 && {
                candidate(segment, root);
                is_key(slot)?
            } {
                if segment == DELETED {
                    return Ok(Some(None));
                }
                let end = w2 & ((1 << END_BITS) - 1);
                return Ok(Some(Some(Entry { segment, end, root, flags: (w2 >> END_BITS) as u32 })));
            }
            p = if p + 1 == self.n { 0 } else { p + 1 };
        }
        Ok(None)
    }

    /// Checks that exactly `entries` buckets are used and that each used
    /// bucket's check holds for the hash `hash_of` gives its key slot (a
    /// damaged bucket fails it): one pass over the buckets, for the first
    /// lookup that finds nothing (see the module's comment).
    pub fn check_buckets(&self, mut hash_of: impl FnMut(u64) -> Result<u64>) -> Result<()> {
        let mut used = 0;
        for p in 0..self.n {
            let b = &self.buckets[p * BUCKET_LEN..][..BUCKET_LEN];
            let slot = read_u64(b, 8);
            if slot == 0 {
                continue;
            }
            used += 1;
            let (w0, w2, root) = (read_u64(b, 0), read_u64(b, 16), read_u64(b, 24));
            let hash = hash_of(slot)?;
            if (w0 ^ hash ^ bucket_check(w0 as u32, slot, w2, root)) >> 32 != 0 {
                return Err(FormatError::new(format!("lookup table bucket {p} does not match its key")));
            }
        }
        if used != self.entries {
            return Err(FormatError::new(format!("lookup table has {used} used buckets for {} entries", self.entries)));
        }
        Ok(())
    }

    /// Checks the buckets' checksum and that exactly `entries` buckets are
    /// used (`Store.verify`; a get reads only the buckets it probes).
    pub fn check(&self) -> Result<()> {
        if crate::xxh3_64(self.buckets) != self.sum {
            return Err(FormatError::new("lookup table checksum mismatch"));
        }
        let used = (0..self.n).filter(|&p| read_u64(self.buckets, p * BUCKET_LEN + 8) != 0).count();
        if used != self.entries {
            return Err(FormatError::new(format!("lookup table has {used} used buckets for {} entries", self.entries)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: u64) -> Vec<Item> {
        (0..n)
            .map(|i| {
                let hash = crate::hash::hash_bytes(&i.to_le_bytes());
                let entry = (i % 7 != 3).then_some(Entry {
                    segment: i as u32 % 5,
                    end: 64 + 8 * i,
                    root: i << 3,
                    flags: (i % 3) as u32,
                });
                (hash, (0x100 + (i << 8)) | 4, entry)
            })
            .collect()
    }

    #[test]
    fn every_key_is_found_with_its_entry_and_no_other() {
        for n in [0u64, 1, 2, 3, 100, 5000] {
            let items = items(n);
            let bytes = build(&items).unwrap();
            let t = Table::parse(&bytes).unwrap();
            t.check().unwrap();
            let hashes: std::collections::HashMap<u64, u64> = items.iter().map(|&(h, s, _)| (s, h)).collect();
            t.check_buckets(|s| Ok(hashes[&s])).unwrap();
            assert_eq!(t.entries(), n as usize);
            for &(hash, slot, entry) in &items {
                assert_eq!(t.find(hash, |s| Ok(s == slot)).unwrap(), Some(entry));
                // Same hash, another key: not found.
                assert_eq!(t.find(hash, |s| Ok(s == slot + 1)).unwrap(), None);
            }
            assert_eq!(t.find(12345, |_| Ok(false)).unwrap(), None);
            // `find_then` names each candidate's segment and root before its
            // key is compared: the found key's among them, and only buckets
            // whose hash bits match.
            for &(hash, slot, entry) in items.iter().take(50) {
                let mut seen = Vec::new();
                let found = t.find_then(hash, |seg, root| seen.push((seg, root)), |s| Ok(s == slot)).unwrap();
                assert_eq!(found, Some(entry));
                let (seg, root) = entry.map_or((DELETED, 0), |e| (e.segment, e.root));
                assert_eq!(seen.last(), Some(&(seg, root)));
                assert!(seen.len() <= 2, "{seen:?}");
            }
        }
    }

    #[test]
    fn entries_that_do_not_fit_a_bucket_give_no_table() {
        let e = Entry { segment: 1, end: 1 << 48, root: 8, flags: 0 };
        assert!(build(&[(1, 4, Some(e))]).is_none());
        assert!(build(&[(1, 4, Some(Entry { end: 64, flags: 1 << 16, ..e }))]).is_none());
        assert!(build(&[(1, 4, Some(Entry { end: 64, segment: DELETED, ..e }))]).is_none());
        assert!(build(&[(1, 0, None)]).is_none());
    }

    #[test]
    fn damaged_tables_are_refused_or_read_within_bounds() {
        let items = items(300);
        let good = build(&items).unwrap();
        assert!(Table::parse(&good[..good.len() - 8]).is_err());
        assert!(Table::parse(&good[1..]).is_err());
        let mut bad = good.clone();
        bad[8] ^= 1; // bucket count
        assert!(Table::parse(&bad).is_err());
        // Any flipped bucket byte: the checksum says so, and lookups stay in bounds.
        let mut rng = 0x1234_5678_u64;
        for _ in 0..500 {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let mut bad = good.clone();
            let at = HEADER_LEN + (rng >> 33) as usize % (good.len() - HEADER_LEN);
            bad[at] ^= 1 << (rng % 8);
            let t = Table::parse(&bad).unwrap();
            assert!(t.check().is_err());
            // Damage to a used bucket, or a slot that makes an empty one
            // used, fails the bucket check (garbage in an empty bucket's
            // other words is read by nothing).
            let hashes: std::collections::HashMap<u64, u64> = items.iter().map(|&(h, s, _)| (s, h)).collect();
            let slot_at = HEADER_LEN + (at - HEADER_LEN) / BUCKET_LEN * BUCKET_LEN + 8;
            if read_u64(&good, slot_at) != 0 || read_u64(&bad, slot_at) != 0 {
                let known = |s| hashes.get(&s).copied().ok_or_else(|| FormatError::new("no such key"));
                assert!(t.check_buckets(known).is_err(), "flip at {at} passed the bucket check");
            }
            // A damaged bucket matches no key: every key gives its own
            // entry or is not found (never another entry).
            for &(hash, slot, entry) in &items {
                let got = t.find(hash, |s| Ok(s == slot)).unwrap();
                assert!(got.is_none() || got == Some(entry), "{got:?} for {entry:?}");
            }
        }
        // A full table (no empty bucket) ends its probe.
        let mut full = good.clone();
        for p in 0..buckets_for(300) {
            let at = HEADER_LEN + p * BUCKET_LEN + 8;
            full[at..at + 8].copy_from_slice(&7u64.to_le_bytes());
        }
        assert_eq!(Table::parse(&full).unwrap().find(99, |_| Ok(false)).unwrap(), None);
    }
}
