//! `AddressMap`: the strings a compaction has written, by the address of
//! their object, to their slots (`Compactor::strings`).
//!
//! Every string with more than one reference goes through it. `hashbrown`
//! (behind `std`'s `HashMap`), used before, gives no way to start loading
//! a key's bucket before the key is looked up; here a key's place is its
//! address hashed, so callers load places ahead (`prefetch`), and a map
//! that must grow asks how many keys are coming (`get_or_insert_with`'s
//! `ahead`) to grow once towards them (`Note [Prefetched places of shared
//! strings]` in `tables.rs`).
//!
//! Open addressing with linear probing, at most half full; a key and its
//! value share one 16-byte place, so a lookup reads one line. Addresses
//! are never 0 (an empty place). Keys are never removed one by one:
//! `clear` empties the places listed in `filled`, so a kept map costs a
//! small compaction only what that compaction filled.

/// The first table: 64 places.
const FIRST_BITS: u32 = 6;

/// Tables of more places than this are "large" (`is_large`).
const LARGE_PLACES: usize = 1 << 16;

/// The most a table grows at once, with keys announced ahead.
const GROWTH_MAX: usize = 32;

/// How many keys ahead `grow` loads the places it will write.
const PLACES_AHEAD: usize = 8;

pub struct AddressMap {
    places: Box<[(usize, u64)]>,
    /// `log2(places.len())`.
    bits: u32,
    /// The places in use (to clear and to grow). `u32` is enough: a table
    /// of 2^32 places would take 64 GiB.
    filled: Vec<u32>,
}

impl Default for AddressMap {
    fn default() -> Self {
        AddressMap::with_bits(FIRST_BITS)
    }
}

#[inline(always)]
fn prefetch(place: &(usize, u64)) {
    crate::compactor::prefetch(place as *const (usize, u64) as *mut pyo3::ffi::PyObject);
}

impl AddressMap {
    fn with_bits(bits: u32) -> AddressMap {
        AddressMap { places: vec![(0, 0); 1 << bits].into_boxed_slice(), bits, filled: Vec::new() }
    }

    /// Keys held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.filled.len()
    }

    /// Places in the table (twice the keys it holds before growing).
    pub fn capacity(&self) -> usize {
        self.places.len()
    }

    /// Whether the table is past what the caches hold (1 MiB): its lookups
    /// then wait for memory unless their places are loaded ahead.
    #[inline(always)]
    pub fn is_large(&self) -> bool {
        self.places.len() > LARGE_PLACES
    }

    #[inline(always)]
    fn home(&self, key: usize) -> usize {
        bale_core::hash::place_of(key as u64, self.bits)
    }

    /// Starts loading the line where `key` would be found.
    #[inline(always)]
    pub fn prefetch(&self, key: usize) {
        prefetch(&self.places[self.home(key)]);
    }

    /// The value of `key`; when it has none, `make()`'s, inserted. When the
    /// map must grow, it grows towards room for `ahead()` more keys too (the
    /// caller knows that many may follow), `GROWTH_MAX` times at most.
    #[inline(always)]
    pub fn get_or_insert_with(&mut self, key: usize, ahead: impl FnOnce() -> usize, make: impl FnOnce() -> u64) -> u64 {
        debug_assert!(key != 0, "address 0 marks an empty place");
        let mask = self.places.len() - 1;
        let mut at = self.home(key);
        loop {
            let place = self.places[at];
            if place.0 == key {
                return place.1;
            }
            if place.0 == 0 {
                break;
            }
            at = (at + 1) & mask;
        }
        let value = make();
        self.places[at] = (key, value);
        self.filled.push(at as u32);
        if self.filled.len() * 2 > self.places.len() {
            // Room for the keys announced, but at most 32 times the table:
            // a column of repeated words announces every row, and most of
            // them are met again, not new.
            let needed = self.filled.len().saturating_add(ahead()).saturating_mul(2).next_power_of_two();
            self.grow(needed.clamp(self.places.len() * 2, self.places.len() * GROWTH_MAX));
        }
        value
    }

    /// Moves every key into a table of `size` places (a power of two).
    #[inline(never)]
    fn grow(&mut self, size: usize) {
        let old = std::mem::replace(self, AddressMap::with_bits(size.trailing_zeros()));
        self.filled.reserve(old.filled.len());
        let mask = size - 1;
        // The old table is read in order (at least half of it is filled);
        // the new homes, in no order, are loaded a few keys ahead.
        let keys: Vec<(usize, u64)> = old.places.iter().copied().filter(|p| p.0 != 0).collect();
        for (i, &(key, value)) in keys.iter().enumerate() {
            if let Some(&(next, _)) = keys.get(i + PLACES_AHEAD) {
                prefetch(&self.places[self.home(next)]);
            }
            let mut to = self.home(key);
            while self.places[to].0 != 0 {
                to = (to + 1) & mask;
            }
            self.places[to] = (key, value);
            self.filled.push(to as u32);
        }
    }

    /// Empties the map, keeping its table.
    pub fn clear(&mut self) {
        for &at in &self.filled {
            self.places[at as usize] = (0, 0);
        }
        self.filled.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::AddressMap;
    use std::collections::HashMap;

    /// Keys 16 bytes apart (as objects are), and keys near the top of the
    /// address space, whose homes wrap around the table's end.
    fn keys(n: usize) -> Vec<usize> {
        (1..=n).map(|i| i * 16).chain((1..=n).map(|i| usize::MAX - i * 16)).collect()
    }

    #[test]
    fn finds_what_it_was_given_through_growth_and_clearing() {
        let mut map = AddressMap::default();
        for (round, ahead) in [0, 1, 100_000].into_iter().enumerate() {
            let mut model = HashMap::new();
            for (i, &k) in keys(5_000).iter().enumerate() {
                let v = (i as u64) << 8 | round as u64;
                assert_eq!(map.get_or_insert_with(k, || ahead, || v), *model.entry(k).or_insert(v));
                // Met again: the first value, and `make` not called.
                assert_eq!(map.get_or_insert_with(k, || ahead, || unreachable!()), model[&k]);
            }
            assert_eq!(map.len(), model.len());
            assert!(map.len() * 2 <= map.capacity());
            map.clear();
            assert_eq!(map.len(), 0);
            assert!(map.places.iter().all(|p| p.0 == 0), "cleared places are empty");
        }
    }

    #[test]
    fn grows_towards_the_keys_announced_32_times_at_most() {
        let mut map = AddressMap::default();
        let mut capacities = vec![];
        for k in 1..=10_000usize {
            map.get_or_insert_with(k * 64, || 10_000 - k, || k as u64);
            if capacities.last() != Some(&map.capacity()) {
                capacities.push(map.capacity());
            }
        }
        // 64 places, then towards room for the 10,000 announced, growing
        // 32 times at most at once (2,048 places), then to 32,768.
        assert_eq!(capacities, [64, 2_048, 32_768]);
        assert!((1..=10_000usize).all(|k| map.get_or_insert_with(k * 64, || 0, || 0) == k as u64));
    }
}
