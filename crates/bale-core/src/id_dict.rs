//! ID_DICT (0x23): a dict whose keys are named by one-byte ids into a
//! SHAPE shared by many dicts, its *key table*.
//!
//! Layout (FORMAT.md, *Dicts of ids*): the header's `len` field is the key
//! table's offset / 8, as a DICT's is its shape's. The payload is the key
//! count n (one byte), the n ids (one byte each: key i is key `ids[i]` of
//! the table), zero bytes up to a word, then n value slots.
//!
//! Why: a DICT names its keys by a SHAPE, which many dicts share when they
//! have the same key sequence. Dicts that each have a sequence of their own
//! (a few of thirty keys, in any order) then each pay a SHAPE of their own:
//! a header, a slot per key and a hash index, written by the compactor,
//! read by thaw and checked by verify, about 64 bytes for 5 keys. An
//! ID_DICT pays one word of ids for up to seven keys instead, and its keys
//! are made, hashed and checked once per table.
//!
//! This module holds the layout and the writers' policy ([`KeyTable`]):
//! which dicts become ID_DICTs and the key table they name. The reader
//! (`Reader::decode`), verification (`verify.rs`) and the builder
//! (`Builder::id_dict`) read and write it through the functions here.

use rustc_hash::FxHashMap as HashMap;

use crate::format::Width;
use crate::writer::Builder;

/// A writer keeps the first this many new key sequences as SHAPEs (most
/// data has a few shapes, each shared by many dicts); dicts with a key
/// sequence not met before become ID_DICTs after that.
pub const ID_DICT_AFTER_SHAPES: usize = 32;

/// The most keys a writer puts in an ID_DICT: the count and the ids then
/// fit two words. (A reader accepts up to 255.)
pub const ID_DICT_MAX_KEYS: usize = 15;

/// The most keys in a key table: an id is one byte.
pub const KEY_TABLE_MAX_KEYS: usize = 256;

/// Set in a source's shape word for a dict written as an ID_DICT (shapes
/// are 8-aligned): the word is then its key table's offset, and the
/// source keeps the ids aside while the dict is open.
pub const ID_DICT_MARK: u64 = 1;

/// The key count and ids of an ID_DICT, as its payload starts: byte 0 the
/// count, then the ids, then zeros.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ids(pub [u8; 1 + ID_DICT_MAX_KEYS]);

impl Ids {
    pub fn len(&self) -> usize {
        self.0[0] as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The payload words before the value slots.
    pub fn words(&self) -> [u64; 2] {
        [u64::from_le_bytes(self.0[..8].try_into().unwrap()), u64::from_le_bytes(self.0[8..].try_into().unwrap())]
    }
}

/// Bytes of an ID_DICT's count and ids, padded to a word, for `n` keys.
#[inline(always)]
pub fn ids_bytes(n: usize) -> usize {
    (1 + n + 7) & !7
}

/// Checks what a reader checks on every read of an ID_DICT whose ids are
/// `ids`, over a key table of `table_len` keys: each id names a key of
/// the table (so a key read is always a key of the table).
#[inline]
pub fn check_ids_in_table(ids: &[u8], table_len: usize) -> Result<(), &'static str> {
    if ids.iter().any(|&id| id as usize >= table_len) {
        return Err("dict key id is beyond its key table");
    }
    Ok(())
}

/// Checks what `verify` adds: no id twice (a dict's keys are distinct),
/// and zero padding after the ids (`padding`).
pub fn check_ids_distinct(ids: &[u8], padding: &[u8]) -> Result<(), &'static str> {
    let mut seen = [0u64; 4];
    for &id in ids {
        let (w, b) = ((id >> 6) as usize, 1u64 << (id & 63));
        if seen[w] & b != 0 {
            return Err("dict names one key id twice");
        }
        seen[w] |= b;
    }
    if padding.iter().any(|&b| b != 0) {
        return Err("dict key ids are followed by nonzero padding");
    }
    Ok(())
}

/// A writer's key table and its policy: after [`ID_DICT_AFTER_SHAPES`]
/// SHAPEs written for dicts, a dict of 1 to [`ID_DICT_MAX_KEYS`] string
/// keys whose key sequence was not met before is written as an ID_DICT
/// over the current key table. A key the table lacks is added: the table
/// is written anew with it (ids of the keys it had stay the same), before
/// the dict that needs it. Dicts with other keys, or when the table is
/// full, get a SHAPE as before.
///
/// Every source uses this one policy, fed keys in the same order, so that
/// equal values give equal bytes whatever they are read from (the JSON
/// source's tests compare its bytes with the compactor's).
#[derive(Default)]
pub struct KeyTable {
    shapes_written: usize,
    /// Offset of the key table as last written; 0 before the first.
    offset: u64,
    /// Whether keys were added since it was written.
    stale: bool,
    slots: Vec<u64>,
    hashes: Vec<u64>,
    /// Key text (`text_of`) -> id.
    ids: HashMap<Box<[u8]>, u8>,
    /// Scratch: the text of the key being looked up.
    text: Vec<u8>,
}

/// What a source answers for a key the table lacks: its slot and hash
/// (the slot written in the region being built).
pub type NewKey = (u64, u64);

impl KeyTable {
    /// A SHAPE was written for a dict's new key sequence.
    #[inline]
    pub fn shape_written(&mut self) {
        self.shapes_written += 1;
    }

    /// Whether a dict of `n` keys with a key sequence met for the first
    /// time is to be written as an ID_DICT (if its keys allow).
    #[inline]
    pub fn wants(&self, n: usize) -> bool {
        self.shapes_written >= ID_DICT_AFTER_SHAPES && (1..=ID_DICT_MAX_KEYS).contains(&n)
    }

    /// The ids of `keys` (each a string key: its width and code units) in
    /// the key table, adding those it lacks through `new_key` (asked with
    /// the key's place in `keys`). `None` when there are more keys than an
    /// ID_DICT holds, or the table has no room for them: nothing is added
    /// then. Write the table (`table`) before the dict that uses the ids.
    pub fn ids_of<'k, E>(
        &mut self,
        keys: impl Iterator<Item = (Width, &'k [u8])> + Clone,
        mut new_key: impl FnMut(usize) -> Result<NewKey, E>,
    ) -> Result<Option<Ids>, E> {
        let mut ids = Ids::default();
        let mut count = 0;
        let mut missing = 0;
        for (w, units) in keys.clone() {
            count += 1;
            if !self.ids.contains_key(text_of(&mut self.text, w, units)) {
                missing += 1;
            }
        }
        if count > ID_DICT_MAX_KEYS || self.slots.len() + missing > KEY_TABLE_MAX_KEYS {
            return Ok(None);
        }
        for (i, (w, units)) in keys.enumerate() {
            let id = match self.ids.get(text_of(&mut self.text, w, units)) {
                Some(&id) => id,
                None => {
                    let (slot, hash) = new_key(i)?;
                    let id = self.slots.len() as u8;
                    self.slots.push(slot);
                    self.hashes.push(hash);
                    self.ids.insert(self.text.clone().into_boxed_slice(), id);
                    self.stale = true;
                    id
                }
            };
            ids.0[1 + i] = id;
        }
        ids.0[0] = count as u8;
        Ok(Some(ids))
    }

    /// The key table's offset, written now if keys were added since it
    /// was last written (the ids of the keys it had stay the same).
    pub fn table(&mut self, dst: &mut Builder) -> u64 {
        if self.stale {
            self.offset = dst.shape(&self.slots, &self.hashes);
            self.stale = false;
        }
        self.offset
    }
}

/// The text a key is known by in a key table: its width, then its units
/// (as `layout::key_signature` writes one key).
fn text_of<'t>(buf: &'t mut Vec<u8>, w: Width, units: &[u8]) -> &'t [u8] {
    buf.clear();
    buf.push(w as u8);
    buf.extend_from_slice(units);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_take_the_count_byte_and_pad_to_a_word() {
        assert_eq!(ids_bytes(1), 8);
        assert_eq!(ids_bytes(7), 8);
        assert_eq!(ids_bytes(8), 16);
        assert_eq!(ids_bytes(15), 16);
        assert_eq!(ids_bytes(255), 256);
    }

    #[test]
    fn an_id_twice_or_nonzero_padding_is_refused() {
        assert!(check_ids_distinct(&[0, 5, 200, 255], &[0, 0, 0]).is_ok());
        assert!(check_ids_distinct(&[3, 7, 3], &[]).is_err());
        assert!(check_ids_distinct(&[1], &[0, 1]).is_err());
        assert!(check_ids_in_table(&[0, 4], 5).is_ok());
        assert!(check_ids_in_table(&[0, 5], 5).is_err());
    }

    #[test]
    fn the_table_keeps_ids_and_is_written_again_only_when_a_key_is_added() {
        let mut b = Builder::new();
        let mut t = KeyTable::default();
        assert!(!t.wants(3));
        for _ in 0..ID_DICT_AFTER_SHAPES {
            t.shape_written();
        }
        assert!(t.wants(3) && t.wants(ID_DICT_MAX_KEYS) && !t.wants(0) && !t.wants(ID_DICT_MAX_KEYS + 1));
        let key = |s: &'static str| (Width::Ascii, s.as_bytes());
        let slot_of = |b: &mut Builder, s: &str| (b.str_utf8(s), crate::hash::hash_str_units(s.as_bytes()));
        let mut scratch = Builder::new();
        let keys = [key("a"), key("b")];
        let ids = t.ids_of::<()>(keys.iter().copied(), |i| Ok(slot_of(&mut scratch, ["a", "b"][i]))).unwrap().unwrap();
        assert_eq!(&ids.0[..3], &[2, 0, 1]);
        let t1 = t.table(&mut b);
        let keys = [key("b"), key("a")];
        let ids = t.ids_of::<()>(keys.iter().copied(), |_| unreachable!()).unwrap().unwrap();
        assert_eq!((t.table(&mut b), &ids.0[..3]), (t1, &[2u8, 1, 0][..]));
        let keys = [key("c"), key("a")];
        let ids = t.ids_of::<()>(keys.iter().copied(), |_| Ok(slot_of(&mut scratch, "c"))).unwrap().unwrap();
        assert!(t.table(&mut b) > t1);
        assert_eq!(&ids.0[..3], &[2, 2, 0]);
        let sixteen: Vec<String> = (0..ID_DICT_MAX_KEYS + 1).map(|i| format!("k{i}")).collect();
        let keys = sixteen.iter().map(|s| (Width::Ascii, s.as_bytes()));
        assert_eq!(t.ids_of::<()>(keys, |_| unreachable!()).unwrap(), None);
    }

    #[test]
    fn a_full_table_takes_no_more_keys() {
        let mut b = Builder::new();
        let mut t = KeyTable::default();
        let names: Vec<String> = (0..KEY_TABLE_MAX_KEYS + 1).map(|i| format!("k{i}")).collect();
        for chunk in names[..KEY_TABLE_MAX_KEYS].chunks(8) {
            let keys: Vec<(Width, &[u8])> = chunk.iter().map(|s| (Width::Ascii, s.as_bytes())).collect();
            let got = t.ids_of::<()>(keys.iter().copied(), |_| Ok((1, 0))).unwrap();
            assert!(got.is_some());
            t.table(&mut b);
        }
        let keys = [(Width::Ascii, names[KEY_TABLE_MAX_KEYS].as_bytes())];
        assert_eq!(t.ids_of::<()>(keys.iter().copied(), |_| Ok((1, 0))).unwrap(), None);
        // Keys it holds still get ids.
        let keys = [(Width::Ascii, names[255].as_bytes())];
        assert_eq!(t.ids_of::<()>(keys.iter().copied(), |_| Ok((1, 0))).unwrap().unwrap().0[1], 255);
    }
}
