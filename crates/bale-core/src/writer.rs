//! Building regions: children first, so every reference points backwards.

use crate::format::*;
use crate::hash;

/// Appends objects to a growing region and returns the slot of each.
///
/// The caller writes children before their container (it needs their
/// slots), which is what makes every reference point backwards.
pub struct Builder {
    buf: Vec<u8>,
    /// Offset of `buf[0]` in the region: 0, or the length of the region
    /// this builder continues (its bytes live elsewhere).
    base: usize,
    flags: u32,
    index_scratch: Vec<u32>,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

/// Sequences up to this long are written inline where they close (`Builder::seq`).
const SHORT_SEQ: usize = 3;

/// The first capacity of a builder whose size is not known ahead (a
/// compaction, when no kept buffer is at hand: `spare_buffer.rs` in the
/// binding says why large ones are kept).
pub const FIRST_CAPACITY: usize = 64 << 10;

/// The header of an INT_LIST or (`float`) FLOAT_LIST of `n` numbers.
#[inline(always)]
fn num_list_header(float: bool, n: usize) -> u64 {
    header_word(if float { KIND_FLOAT_LIST } else { KIND_INT_LIST }, n as u64)
}

impl Builder {
    pub fn new() -> Builder {
        Builder::with_capacity(4096)
    }
    /// A builder writing into `buf` (emptied first), whose capacity is kept.
    pub fn in_buffer(mut buf: Vec<u8>) -> Builder {
        buf.clear();
        buf.resize(HEADER_LEN, 0);
        Builder { buf, base: 0, flags: 0, index_scratch: Vec::new() }
    }
    pub fn with_capacity(cap: usize) -> Builder {
        let mut buf = Vec::with_capacity(cap.max(HEADER_LEN));
        buf.resize(HEADER_LEN, 0);
        Builder { buf, base: 0, flags: 0, index_scratch: Vec::new() }
    }
    /// Continues a region of `base` bytes (a multiple of 8) that lives
    /// elsewhere: offsets start at `base`, slots may refer to the existing
    /// bytes, and only the new bytes are kept here (see `new_bytes`).
    pub fn continuing(base: usize, cap: usize) -> Builder {
        assert!(
            base.is_multiple_of(8) && base >= HEADER_LEN,
            "a region's length is a multiple of 8 and at least its header"
        );
        Builder { buf: Vec::with_capacity(cap), base, flags: 0, index_scratch: Vec::new() }
    }
    /// The bytes written so far (a valid prefix to read with `Reader`,
    /// for a builder that does not continue another region).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
    /// The bytes this builder added, which belong at offset `base()`.
    pub fn new_bytes(&self) -> &[u8] {
        &self.buf
    }
    pub fn base(&self) -> usize {
        self.base
    }
    /// The region's length so far, and the offset of the next object.
    #[inline]
    pub fn len(&self) -> usize {
        self.base + self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == HEADER_LEN
    }
    pub fn set_flags(&mut self, flags: u32) {
        self.flags |= flags;
    }

    #[inline]
    fn put(&mut self, w: u64) {
        self.buf.extend_from_slice(&w.to_le_bytes());
    }
    /// Appends slots in one copy (slots are stored little-endian).
    #[inline]
    fn put_slots(&mut self, slots: &[u64]) {
        let len = self.buf.len();
        self.buf.reserve(slots.len() * 8);
        // SAFETY: `reserve` made room for the bytes written before `set_len`.
        unsafe {
            let dst = self.buf.as_mut_ptr().add(len);
            // Containers are mostly small: stores of a known count, not the
            // memcpy call LLVM makes of a loop.
            match *slots {
                [a] => (dst as *mut u64).write_unaligned(a.to_le()),
                [a, b] => {
                    (dst as *mut u64).write_unaligned(a.to_le());
                    (dst.add(8) as *mut u64).write_unaligned(b.to_le());
                }
                [a, b, c] => {
                    (dst as *mut u64).write_unaligned(a.to_le());
                    (dst.add(8) as *mut u64).write_unaligned(b.to_le());
                    (dst.add(16) as *mut u64).write_unaligned(c.to_le());
                }
                _ => {
                    for (i, &s) in slots.iter().enumerate() {
                        (dst.add(8 * i) as *mut u64).write_unaligned(s.to_le());
                    }
                }
            }
            self.buf.set_len(len + slots.len() * 8);
        }
    }
    #[inline]
    fn put_padded(&mut self, data: &[u8]) {
        // One reservation and one copy: the padding is the zero word
        // written first under the data's last word (strings are mostly
        // short: two calls for the copy and the padding cost more than
        // the copy itself).
        let padded = pad8(data.len());
        let len = self.buf.len();
        self.buf.reserve(padded);
        // SAFETY: `reserve` made room for the `padded` bytes written
        // before `set_len`; `data` is a separate slice (`&mut self` holds
        // the buffer), so the copy does not overlap.
        unsafe {
            let dst = self.buf.as_mut_ptr().add(len);
            if padded >= 8 {
                (dst.add(padded - 8) as *mut u64).write_unaligned(0);
            }
            copy_short(data, dst);
            self.buf.set_len(len + padded);
        }
    }

    /// A string given as CPython code units of `width` (which must be the
    /// smallest width for the content). Inlined where it is called: the
    /// calls (two with the binding's own) were a third of what writing a
    /// 45-character string cost (`benchmarks/sweep_profiles.md`, the
    /// amazon corpus).
    #[inline(always)]
    pub fn str_units(&mut self, width: Width, units: &[u8]) -> u64 {
        let n = units.len() >> width.unit().trailing_zeros();
        if width == Width::Ascii && n <= SSTR_MAX {
            return make_sstr_slot(units);
        }
        let off = self.len();
        if n <= SHORT_MAX && off <= STR_SLOT_MAX_OFFSET {
            self.put_padded(units);
            return make_str_slot(width, n, off);
        }
        self.long_str(width, n, units)
    }

    /// A string whose slot cannot hold its length or offset: a header first.
    #[inline(never)]
    fn long_str(&mut self, width: Width, n: usize, units: &[u8]) -> u64 {
        let off = self.len();
        self.put(header_word(width.kind(), n as u64));
        self.put_padded(units);
        off as u64
    }

    /// A string given as Rust UTF-8 (converted to the canonical width).
    pub fn str_utf8(&mut self, s: &str) -> u64 {
        let max = s.chars().map(|c| c as u32).max().unwrap_or(0);
        let units: Vec<u8> = if max < 0x100 {
            s.chars().map(|c| c as u8).collect()
        } else if max < 0x10000 {
            s.chars().flat_map(|c| (c as u16).to_le_bytes()).collect()
        } else {
            s.chars().flat_map(|c| (c as u32).to_le_bytes()).collect()
        };
        self.str_units(Width::for_max(max), &units)
    }

    pub fn bytes_obj(&mut self, b: &[u8]) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_BYTES, b.len() as u64));
        self.put_padded(b);
        off as u64
    }

    pub fn int(&mut self, v: i64) -> u64 {
        if let Some(s) = make_int_slot(v) {
            return s;
        }
        let off = self.len();
        self.put(header_word(KIND_INT64, 0));
        self.put(v as u64);
        off as u64
    }

    /// An integer of up to 128 bits: the bytes `int_bytes` writes for it,
    /// without a byte vector (ints of 64 to 120 bits read from their
    /// digits: `ffi/pylong.rs`).
    pub fn int_i128(&mut self, v: i128) -> u64 {
        if let Ok(v) = i64::try_from(v) {
            return self.int(v);
        }
        // Its minimal length, 9 to 16 bytes, padded to two words with zeros.
        let n = hash::twos_complement_len(v);
        let kept = if n == 16 { u128::MAX } else { (1u128 << (8 * n)) - 1 };
        let w = v as u128 & kept;
        let off = self.len();
        self.put(header_word(KIND_BIGINT, n as u64));
        self.put(w as u64);
        self.put((w >> 64) as u64);
        off as u64
    }

    /// An integer as two's-complement little-endian bytes of any length.
    pub fn int_bytes(&mut self, le: &[u8]) -> u64 {
        let b = hash::minimal_twos_complement(le);
        if let Some(v) = hash::twos_complement_i64(b) {
            return self.int(v);
        }
        let off = self.len();
        self.put(header_word(KIND_BIGINT, b.len() as u64));
        self.put_padded(b);
        off as u64
    }

    pub fn float(&mut self, f: f64) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_FLOAT, 0));
        self.put(f.to_bits());
        off as u64
    }

    pub fn complex(&mut self, re: f64, im: f64) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_COMPLEX, 0));
        self.put(re.to_bits());
        self.put(im.to_bits());
        off as u64
    }

    /// A list (`tuple == false`) or tuple of already written slots.
    #[inline]
    pub fn seq(&mut self, tuple: bool, slots: &[u64]) -> u64 {
        let n = slots.len();
        let tag = if tuple { TAG_TUPLE } else { TAG_LIST };
        if n == 0 {
            return tag;
        }
        // Short ones where they are closed: the call was a sixth of
        // compacting lists nested 500 deep (one element each).
        let off = self.len();
        if n <= SHORT_SEQ && off <= SEQ_SLOT_MAX_OFFSET {
            self.put_slots(slots);
            return make_seq_slot(tag, n, off);
        }
        self.long_seq(tuple, slots)
    }

    #[inline(never)]
    fn long_seq(&mut self, tuple: bool, slots: &[u64]) -> u64 {
        let n = slots.len();
        let tag = if tuple { TAG_TUPLE } else { TAG_LIST };
        let off = self.len();
        self.buf.reserve(8 * n + 8);
        let slot = if n <= SHORT_MAX && off <= SEQ_SLOT_MAX_OFFSET {
            make_seq_slot(tag, n, off)
        } else {
            self.put(header_word(if tuple { KIND_TUPLE } else { KIND_LIST }, n as u64));
            off as u64
        };
        self.put_slots(slots);
        slot
    }

    /// An empty list with an address (so that references to it can be told
    /// apart from references to other empty lists).
    pub fn empty_list_object(&mut self) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_LIST, 0));
        off as u64
    }

    fn table(&mut self, kind: u8, slots: &[u64], hashes: &[u64]) -> usize {
        self.table_with_prefix(kind, &[], slots, hashes)
    }

    /// A table object whose entries follow `prefix` words.
    fn table_with_prefix(&mut self, kind: u8, prefix: &[u64], slots: &[u64], hashes: &[u64]) -> usize {
        let n = slots.len();
        let cap = index_cap(n);
        let off = self.len();
        self.buf.reserve(8 + 8 * prefix.len() + 8 * n + 4 * cap + 8);
        self.put(header_word(kind, n as u64));
        self.put_slots(prefix);
        self.put_slots(slots);
        if cap > 0 {
            let mask = cap - 1;
            let mut table = std::mem::take(&mut self.index_scratch);
            table.clear();
            table.resize(cap, 0);
            for (i, &h) in hashes.iter().enumerate() {
                let mut p = (h as usize) & mask;
                while table[p] != 0 {
                    p = (p + 1) & mask;
                }
                table[p] = i as u32 + 1;
            }
            for &e in &table {
                self.buf.extend_from_slice(&e.to_le_bytes());
            }
            let pad = pad8(self.buf.len()) - self.buf.len();
            self.buf.extend_from_slice(&[0u8; 8][..pad]);
            self.index_scratch = table;
        }
        off
    }

    /// A set or frozenset; `slots` must be distinct under Python equality,
    /// `hashes[i]` the key hash of `slots[i]`.
    pub fn set(&mut self, frozen: bool, slots: &[u64], hashes: &[u64]) -> u64 {
        self.table(if frozen { KIND_FROZENSET } else { KIND_SET }, slots, hashes) as u64
    }

    /// A shape (a dict's key sequence and index); returns its offset.
    pub fn shape(&mut self, keys: &[u64], hashes: &[u64]) -> u64 {
        self.table(KIND_SHAPE, keys, hashes) as u64
    }

    /// A dict whose keys are those of the shape at `shape` (with `values.len()` keys).
    pub fn dict(&mut self, shape: u64, values: &[u64]) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_DICT, shape >> 3));
        self.put_slots(values);
        off as u64
    }

    /// An ID_DICT: key i is key `ids` i of the key table (a SHAPE) at `table`.
    pub fn id_dict(&mut self, table: u64, ids: &crate::id_dict::Ids, values: &[u64]) -> u64 {
        debug_assert_eq!(ids.len(), values.len());
        let off = self.len();
        self.put(header_word(KIND_ID_DICT, table >> 3));
        let words = ids.words();
        self.put(words[0]);
        if crate::id_dict::ids_bytes(ids.len()) > 8 {
            self.put(words[1]);
        }
        self.put_slots(values);
        off as u64
    }

    /// A dict of the `collections` class `class` (a `dict_class` word; a
    /// plain DICT for `dict_class::PLAIN`).
    pub fn dict_of_class(&mut self, class: u64, shape: u64, values: &[u64]) -> u64 {
        if class == crate::dict_class::PLAIN {
            return self.dict(shape, values);
        }
        let off = self.len();
        self.put(header_word(KIND_DICT_CLASS, shape >> 3));
        self.put(class);
        self.put_slots(values);
        off as u64
    }

    /// A TABLE of `rows` dicts with the keys of the shape at `shape`: one
    /// column slot per key, each a list-like of `rows` items written before.
    pub fn table_object(&mut self, rows: usize, shape: u64, cols: &[u64]) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_TABLE, rows as u64));
        self.put(shape);
        self.put_slots(cols);
        off as u64
    }

    /// A KEYED_TABLE of `row_lists.len()` rows over the key table at
    /// `shape`: its column slots (each a list-like of as many items, written
    /// before), then its key lists (`key_lists`, each the ids of its keys in
    /// the key table, in the row's order; 1 to 254 lists of up to 255 ids),
    /// then one byte per row, the index of its key list or
    /// `columns::NONE_ROW` for a None.
    pub fn keyed_table_object(&mut self, shape: u64, cols: &[u64], key_lists: &[&[u8]], row_lists: &[u8]) -> u64 {
        let off = self.len();
        let ids: Vec<u8> = key_lists.concat();
        self.put(header_word(KIND_KEYED_TABLE, row_lists.len() as u64));
        self.put(shape);
        self.put_slots(cols);
        self.put(key_lists.len() as u64 | (ids.len() as u64) << 16);
        let mut offsets = Vec::with_capacity(2 * (key_lists.len() + 1));
        let mut at = 0u16;
        offsets.extend_from_slice(&at.to_le_bytes());
        for list in key_lists {
            at += list.len() as u16;
            offsets.extend_from_slice(&at.to_le_bytes());
        }
        self.put_padded(&offsets);
        self.put_padded(&ids);
        self.put_padded(row_lists);
        off as u64
    }

    /// A STR_COLUMN: string i is `units[offsets[i]..offsets[i+1]]` (in code
    /// units of `width`, the smallest width of every string in it).
    pub fn str_column(&mut self, width: Width, offsets: &[u32], units: &[u8]) -> u64 {
        let off = self.len();
        let n = offsets.len() - 1;
        self.put(header_word(KIND_STR_COLUMN, n as u64));
        self.put(width as u64 | ((units.len() / width.unit()) as u64) << 8);
        self.put_offsets(offsets);
        self.put_padded(units);
        off as u64
    }

    /// A LIST_COLUMN: list i is items `offsets[i]..offsets[i+1]` of the
    /// list-like at `child` (a list, number list or string column).
    pub fn list_column(&mut self, child: u64, offsets: &[u32]) -> u64 {
        self.cut_column(KIND_LIST_COLUMN, child, offsets)
    }

    /// A ROWS_COLUMN: list i is rows `offsets[i]..offsets[i+1]` of the
    /// TABLE at `child` (a LIST_COLUMN's layout under a kind of its own).
    pub fn rows_column(&mut self, child: u64, offsets: &[u32]) -> u64 {
        self.cut_column(KIND_ROWS_COLUMN, child, offsets)
    }

    fn cut_column(&mut self, kind: u8, child: u64, offsets: &[u32]) -> u64 {
        let off = self.len();
        self.put(header_word(kind, (offsets.len() - 1) as u64));
        self.put(child);
        self.put_offsets(offsets);
        off as u64
    }

    fn put_offsets(&mut self, offsets: &[u32]) {
        self.buf.reserve(4 * offsets.len() + 4);
        #[cfg(target_endian = "little")]
        {
            // SAFETY: u32 has no padding; on a little-endian host its bytes
            // are the stored form (one copy, not an append per offset).
            let bytes = unsafe { std::slice::from_raw_parts(offsets.as_ptr() as *const u8, 4 * offsets.len()) };
            self.buf.extend_from_slice(bytes);
        }
        #[cfg(not(target_endian = "little"))]
        for o in offsets {
            self.buf.extend_from_slice(&o.to_le_bytes());
        }
        if offsets.len() % 2 == 1 {
            self.buf.extend_from_slice(&[0u8; 4]);
        }
    }

    /// Makes room for `extra` more bytes at once (before a large write).
    pub fn reserve(&mut self, extra: usize) {
        self.buf.reserve(extra);
    }

    /// The buffer's room not yet written (where the next bytes go), as an
    /// address and a length, for a caller that advises the memory system.
    pub fn spare_room(&mut self) -> (*const u8, usize) {
        let spare = self.buf.spare_capacity_mut();
        (spare.as_ptr().cast(), spare.len())
    }

    /// A typed scalar (see `typed`): header field `aux`, then `payload`.
    pub fn ext(&mut self, kind: u8, aux: u64, payload: &[u8]) -> u64 {
        let off = self.len();
        self.put(header_word(kind, aux));
        self.put_padded(payload);
        off as u64
    }

    /// A list of ints (raw i64) or, with `float`, of floats (f64 bits).
    pub fn num_list(&mut self, float: bool, words: &[u64]) -> u64 {
        let off = self.len();
        self.put(num_list_header(float, words.len()));
        self.put_slots(words);
        off as u64
    }

    /// An INT32_LIST of `words`, i64 bit patterns that each fit 32 bits
    /// (`num_list::all_fit_int32`).
    pub fn int32_list(&mut self, words: &[u64]) -> u64 {
        let off = self.len();
        self.put(crate::num_list::header(false, true, words.len()));
        crate::num_list::put_int32_payload(&mut self.buf, words);
        off as u64
    }

    /// An INT32_LIST of `words` when they all fit 32 bits, else an INT_LIST:
    /// a table's column of ints, as every writer stores one.
    pub fn int_column(&mut self, words: &[u64]) -> u64 {
        if crate::num_list::all_fit_int32(words) {
            self.int32_list(words)
        } else {
            self.num_list(false, words)
        }
    }

    /// A SLOT32_COLUMN of `cells` (each `columns::is_slot32_cell`).
    pub fn slot32_column(&mut self, cells: &[u32]) -> u64 {
        self.slot32_cells(cells.len(), cells.iter().copied())
    }

    /// A SLOT32_COLUMN of the `n` cells `cells` yields.
    fn slot32_cells(&mut self, n: usize, cells: impl Iterator<Item = u32>) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_SLOT32_COLUMN, n as u64));
        put_u32s(&mut self.buf, n, cells.inspect(|&cell| debug_assert!(crate::columns::is_slot32_cell(cell))));
        off as u64
    }

    /// A table's own column written as slots: a SLOT32_COLUMN when each
    /// slot is None, a bool or an INT slot of an int within 28 bits
    /// (`columns::slot32_cell`), a STR_CODE_COLUMN when each is a string
    /// slot and that is smaller (`str_codes`), else a LIST, as every
    /// writer stores one.
    pub fn slot_column(&mut self, slots: &[u64]) -> u64 {
        // Checked first, then written with no vector between (a cell is its
        // slot's low half).
        if !slots.is_empty() && slots.iter().all(|&s| crate::columns::slot32_cell(s).is_some()) {
            self.slot32_cells(slots.len(), slots.iter().map(|&s| s as u32))
        } else {
            self.str_slot_column(slots)
        }
    }

    /// A STR_CODE_COLUMN of `codes`, each the index of a slot of `dict`
    /// (string slots, not empty), whose list is written first.
    pub fn str_code_column(&mut self, dict: &[u64], codes: &[u32]) -> u64 {
        debug_assert!(!dict.is_empty());
        debug_assert!(dict.iter().all(|&s| matches!(s & TAG_MASK, TAG_SSTR | TAG_STR)));
        debug_assert!(codes.iter().all(|&c| (c as usize) < dict.len()));
        let dict_slot = self.seq(false, dict);
        let off = self.len();
        self.put(header_word(KIND_STR_CODE_COLUMN, codes.len() as u64));
        self.put(dict_slot);
        put_u32s(&mut self.buf, codes.len(), codes.iter().copied());
        off as u64
    }

    /// A table's own column of string slots (each SSTR or STR): a
    /// STR_CODE_COLUMN when that takes fewer bytes than a LIST of them
    /// (most of them repeat: tags, categories), else a LIST, as every
    /// writer stores one.
    pub fn str_slot_column(&mut self, slots: &[u64]) -> u64 {
        match str_codes(slots) {
            Some((dict, codes)) => self.str_code_column(&dict, &codes),
            None => self.seq(false, slots),
        }
    }

    /// `num_list` of the `n` words `word(0)`, `word(1)`, ..., each stored in
    /// place as it comes, with no vector between: the list of a point or a
    /// pair of coordinates, read from its objects. `None`, with nothing
    /// written, as soon as `word` gives none.
    #[inline(always)]
    pub fn num_list_from(&mut self, float: bool, n: usize, mut word: impl FnMut(usize) -> Option<u64>) -> Option<u64> {
        let off = self.len();
        let at = self.buf.len();
        self.buf.reserve(8 * (n + 1));
        // SAFETY: `reserve` made room for the 8 * (n + 1) bytes written
        // before `set_len`; an early return leaves the length as it was.
        unsafe {
            let dst = self.buf.as_mut_ptr().add(at);
            for i in 0..n {
                (dst.add(8 * (i + 1)) as *mut u64).write_unaligned(word(i)?.to_le());
            }
            (dst as *mut u64).write_unaligned(num_list_header(float, n).to_le());
            self.buf.set_len(at + 8 * (n + 1));
        }
        Some(off as u64)
    }

    /// Zero bytes up to the next multiple of `align` (a power of two).
    fn align_to(&mut self, align: usize) {
        let pad = (align - self.len() % align) % align;
        self.buf.resize(self.buf.len() + pad, 0);
    }

    /// A numpy array: `data` (C- or, with `ND_FORTRAN`, F-order) written
    /// 64-byte aligned, then its object.
    pub fn ndarray(&mut self, data: &[u8], itemsize: u64, flags: u32, shape: &[u64], dtype: &str) -> u64 {
        let data_off = if data.is_empty() {
            0
        } else {
            self.align_to(ND_ALIGN);
            let at = self.len();
            self.put_padded(data);
            at
        };
        let off = self.len();
        let payload = ND_FIXED_BYTES + 8 * shape.len() + dtype.len();
        self.put(header_word(KIND_NDARRAY, payload as u64));
        self.put(data_off as u64);
        self.put(data.len() as u64);
        self.put(itemsize);
        self.put(shape.len() as u64 | (flags as u64) << 32);
        self.put_slots(shape);
        self.put_padded(dtype.as_bytes());
        off as u64
    }

    /// A record type: `flavor`, the slot of its qualified name, and its
    /// field names (`hashes` their key hashes); returns its offset.
    pub fn rec_type(&mut self, flavor: u64, name: u64, fields: &[u64], hashes: &[u64]) -> u64 {
        self.table_with_prefix(KIND_TYPE, &[flavor, name], fields, hashes) as u64
    }

    /// An EXTERN object naming `x`'s target (its `start` is ignored).
    pub fn extern_ref(&mut self, x: &crate::extern_ref::Extern) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_EXTERN, 0));
        for w in crate::extern_ref::words(x) {
            self.put(w);
        }
        off as u64
    }

    /// A record of the type at `ty`, one value per field.
    pub fn record(&mut self, ty: u64, values: &[u64]) -> u64 {
        let off = self.len();
        self.put(header_word(KIND_RECORD, ty >> 3));
        self.put_slots(values);
        off as u64
    }

    /// Overwrites the slot word at `pos`, which this builder wrote.
    pub fn patch(&mut self, pos: usize, slot: u64) {
        let i = pos - self.base;
        self.buf[i..i + 8].copy_from_slice(&slot.to_le_bytes());
    }

    /// Where the element slots start of a non-empty list, tuple or dict
    /// whose slot this builder returned.
    pub fn slots_pos(&self, slot: u64) -> usize {
        if slot & TAG_MASK == TAG_OBJ {
            // A DICT_CLASS holds its class word before its value slots.
            let at = slot as usize - self.base;
            slot as usize
                + match self.buf[at] {
                    KIND_DICT_CLASS => 16,
                    KIND_ID_DICT => 8 + crate::id_dict::ids_bytes(self.buf[at + 8] as usize),
                    _ => 8,
                }
        } else {
            ((slot >> 19) << 3) as usize
        }
    }

    /// The bytes without a header: for scratch values read with `Reader`
    /// only, or the new bytes of a continuing builder.
    pub fn into_raw(self) -> Vec<u8> {
        self.buf
    }

    /// Writes the header and checksum and returns the region's bytes.
    pub fn finish(self, root: u64) -> Vec<u8> {
        let mut b = self.finish_unsummed(root);
        crate::reader::fill_checksum(&mut b);
        b
    }

    /// Writes the header with its checksum field zero, and returns the
    /// region's bytes: for a region whose checksum `fill_checksum` writes
    /// later, when its bytes are first read as bytes (the checksum is
    /// half of the cost of compacting long strings; a region used in place
    /// in the process that made it never needs it).
    pub fn finish_unsummed(mut self, root: u64) -> Vec<u8> {
        assert_eq!(self.base, 0, "a continuing builder has no header to finish");
        let total = self.buf.len() as u64;
        let b = &mut self.buf;
        b[OFF_MAGIC..OFF_MAGIC + 8].copy_from_slice(&MAGIC);
        b[OFF_VERSION..OFF_VERSION + 4].copy_from_slice(&VERSION.to_le_bytes());
        b[OFF_BOM..OFF_BOM + 4].copy_from_slice(&BYTE_ORDER_MARK.to_le_bytes());
        b[OFF_TOTAL_LEN..OFF_TOTAL_LEN + 8].copy_from_slice(&total.to_le_bytes());
        b[OFF_ROOT..OFF_ROOT + 8].copy_from_slice(&root.to_le_bytes());
        b[OFF_FLAGS..OFF_FLAGS + 4].copy_from_slice(&self.flags.to_le_bytes());
        b[OFF_CHECKSUM..OFF_CHECKSUM + 8].fill(0);
        self.buf
    }
}

/// References to containers whose slot is not known yet because they are
/// still being written (a value reached again from inside itself). A
/// placeholder slot (tag 7 with its top bit set, which no valid slot has) stands in; once the container
/// is written every placeholder for it is overwritten with its slot. The
/// region then holds forward references and needs `FLAG_CYCLIC`.
///
/// Targets are numbered by the depth of the container on the writer's
/// stack: a deeper container always finishes first, so a number is never
/// reused while placeholders for it are pending.
/// Set in placeholder slots (a PAIR slot, also tag 7, never has it).
const PLACEHOLDER_MARK: u64 = 1 << 63;

#[derive(Default)]
pub struct ForwardRefs {
    pending: Vec<Vec<usize>>,
    made: bool,
}

impl ForwardRefs {
    /// The stand-in for the container at stack depth `target`.
    pub fn placeholder(&mut self, target: usize) -> u64 {
        self.made = true;
        PLACEHOLDER_MARK | ((target as u64) << 3) | TAG_MASK
    }
    /// Whether any placeholder was handed out (the region is cyclic).
    pub fn made(&self) -> bool {
        self.made
    }
    /// Records where the placeholders among `slots` landed, `slots` having
    /// just been written as the elements of the container `slot`.
    pub fn note(&mut self, b: &Builder, slot: u64, slots: &[u64]) {
        if !self.made {
            return;
        }
        let mut pos = None;
        for (i, &s) in slots.iter().enumerate() {
            if s & TAG_MASK == TAG_MASK && s & PLACEHOLDER_MARK != 0 {
                let at = *pos.get_or_insert_with(|| b.slots_pos(slot));
                let target = ((s & !PLACEHOLDER_MARK) >> 3) as usize;
                if self.pending.len() <= target {
                    self.pending.resize_with(target + 1, Vec::new);
                }
                self.pending[target].push(at + 8 * i);
            }
        }
    }
    /// Fills the placeholders for the container at depth `target`, now
    /// written with slot `slot`.
    pub fn resolve(&mut self, b: &mut Builder, target: usize, slot: u64) {
        if let Some(list) = self.pending.get_mut(target) {
            for pos in list.drain(..) {
                b.patch(pos, slot);
            }
        }
    }
}

/// Copies `data` to `dst` (which has room for it rounded up to 8 bytes).
/// Up to 64 bytes, two overlapping fixed-size loads and stores: most
/// strings are that short, and the call to `memcpy` with its dispatch on
/// the length cost more than the copy.
///
/// # Safety
/// `dst` is valid for `pad8(data.len())` bytes and does not overlap `data`.
#[inline(always)]
unsafe fn copy_short(data: &[u8], dst: *mut u8) {
    let (src, n) = (data.as_ptr(), data.len());
    // Each pair reads and writes only within `[0, n)`: the second chunk
    // ends at the last byte.
    unsafe fn pair<const W: usize>(src: *const u8, dst: *mut u8, n: usize) {
        let a = (src as *const [u8; W]).read_unaligned();
        let b = (src.add(n - W) as *const [u8; W]).read_unaligned();
        (dst as *mut [u8; W]).write_unaligned(a);
        (dst.add(n - W) as *mut [u8; W]).write_unaligned(b);
    }
    match n {
        0 => {}
        1..=3 => {
            *dst = *src;
            *dst.add(n / 2) = *src.add(n / 2);
            *dst.add(n - 1) = *src.add(n - 1);
        }
        4..=7 => pair::<4>(src, dst, n),
        8..=16 => pair::<8>(src, dst, n),
        17..=32 => pair::<16>(src, dst, n),
        33..=64 => pair::<32>(src, dst, n),
        _ => std::ptr::copy_nonoverlapping(src, dst, n),
    }
}

/// The most distinct strings a STR_CODE_COLUMN of `n` codes may have and
/// still take fewer bytes than a LIST of `n` slots: `8 + 8d + 16 +
/// pad8(4n) < 8 + 8n` (`None` when no d >= 1 does).
pub fn str_codes_max_dict(n: usize) -> Option<usize> {
    let as_list = 8 + 8 * n;
    let fixed = 8 + 16 + pad8(4 * n);
    match as_list.checked_sub(fixed + 1)? / 8 {
        0 => None,
        d => Some(d),
    }
}

/// Cells of a column after which its distinct strings are counted once:
/// all of them distinct, and the column is no STR_CODE_COLUMN
/// (`str_codes`). A column of distinct strings is given up after this many
/// lookups, not half its length; a vocabulary of thousands of words still
/// repeats some among them.
pub const STR_CODES_PROBE: usize = 1024;

/// The dictionary (distinct slots, in order of first use) and codes of a
/// column of string slots, when a STR_CODE_COLUMN of them takes fewer bytes
/// than a LIST: its dictionary's slots (and header) and a 4-byte code a
/// string, against a slot a string. `None` as soon as the distinct slots
/// are too many for that, or the first `STR_CODES_PROBE` (of a column at
/// least that long) are all distinct, or one is no string slot.
pub fn str_codes(slots: &[u64]) -> Option<(Vec<u64>, Vec<u32>)> {
    let mut codes = StrCodes::new(slots.len(), Vec::new());
    for &slot in slots {
        let code = codes.code(slot);
        if !codes.keep(code) {
            return None;
        }
    }
    codes.finish()
}

/// The codes of a column of string slots, made a cell at a time, as
/// `str_codes` makes them (it is a loop over this), given up as it gives
/// up. A writer that knows a cell's slot met before (the compactor, by the
/// string's address) keeps its code again without `code`.
#[derive(Default)]
pub struct StrCodes {
    ids: rustc_hash::FxHashMap<u64, u32>,
    dict: Vec<u64>,
    codes: Vec<u32>,
    /// The column's length.
    cells: usize,
    max_dict: usize,
    given_up: bool,
}

impl StrCodes {
    /// Codes for a column of `n` strings (none when no STR_CODE_COLUMN of
    /// `n` can be smaller), kept in `spare` (emptied), which grows past
    /// the probe's length only once the probe is passed.
    pub fn new(n: usize, mut spare: Vec<u32>) -> StrCodes {
        let Some(max_dict) = str_codes_max_dict(n) else {
            return StrCodes { given_up: true, ..StrCodes::default() };
        };
        spare.clear();
        spare.reserve(n.min(STR_CODES_PROBE));
        StrCodes { codes: spare, cells: n, max_dict, ..StrCodes::default() }
    }

    /// Whether the column is no STR_CODE_COLUMN.
    #[inline(always)]
    pub fn given_up(&self) -> bool {
        self.given_up
    }

    /// The code of `slot` (the next cell's), a new one when it is met for
    /// the first time; gives up (and returns 0) when it is no string slot
    /// or one distinct slot too many.
    pub fn code(&mut self, slot: u64) -> u32 {
        if self.given_up {
            return 0;
        }
        if !matches!(slot & TAG_MASK, TAG_SSTR | TAG_STR) {
            self.given_up = true;
            return 0;
        }
        let dict = &mut self.dict;
        let code = *self.ids.entry(slot).or_insert_with(|| {
            dict.push(slot);
            (dict.len() - 1) as u32
        });
        if self.dict.len() > self.max_dict {
            self.given_up = true;
        }
        code
    }

    /// Keeps the next cell's code; false when given up before it. At the
    /// probe, gives up (after keeping it) when every cell so far is
    /// distinct.
    #[inline(always)]
    pub fn keep(&mut self, code: u32) -> bool {
        if self.given_up {
            return false;
        }
        self.codes.push(code);
        if self.codes.len() == STR_CODES_PROBE {
            if self.dict.len() == STR_CODES_PROBE {
                self.given_up = true;
            } else {
                self.codes.reserve(self.cells - self.codes.len());
            }
        }
        true
    }

    /// Appends the slots of the cells kept so far to `slots` (once given up,
    /// the writer goes on with slots) and lets go of their codes.
    pub fn slots_so_far(&mut self, slots: &mut Vec<u64>) {
        slots.extend(self.codes.iter().map(|&c| self.dict[c as usize]));
        self.codes = Vec::new();
    }

    /// The dictionary and codes of a column whose every cell was kept, as
    /// `Builder::str_code_column` takes them; `None` if given up.
    pub fn finish(self) -> Option<(Vec<u64>, Vec<u32>)> {
        (!self.given_up && self.codes.len() == self.cells).then_some((self.dict, self.codes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{compute_checksum, fill_checksum};

    #[test]
    fn an_int_of_128_bits_or_less_is_written_as_its_bytes_are() {
        let mut values = vec![0i128, 1, -1, i64::MAX as i128, i64::MIN as i128, i128::MAX, i128::MIN];
        for shift in 60..127 {
            for delta in [-1i128, 0, 1] {
                values.push((1i128 << shift) + delta);
                values.push(-(1i128 << shift) + delta);
            }
        }
        for v in values {
            let (mut a, mut b) = (Builder::new(), Builder::new());
            let (sa, sb) = (a.int_i128(v), b.int_bytes(&v.to_le_bytes()));
            assert_eq!(sa, sb, "{v}");
            assert_eq!(a.buf, b.buf, "{v}");
        }
    }

    #[test]
    fn a_number_list_written_word_by_word_is_the_one_written_at_once() {
        for float in [false, true] {
            for n in [0usize, 1, 2, 3, 4, 7, 100, 5000] {
                let words: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
                let (mut a, mut b) = (Builder::new(), Builder::new());
                a.str_units(Width::Ascii, b"before");
                b.str_units(Width::Ascii, b"before");
                let sa = a.num_list_from(float, n, |i| Some(words[i]));
                assert_eq!(sa, Some(b.num_list(float, &words)), "{float} {n}");
                assert_eq!(a.buf, b.buf, "{float} {n}");
                // Given up at any word: nothing written, the next object where it was.
                for stop in 0..n.min(5) {
                    let before = b.buf.clone();
                    assert_eq!(b.num_list_from(float, n, |i| (i < stop).then(|| words[i])), None);
                    assert_eq!(b.buf, before, "{float} {n} {stop}");
                }
            }
        }
    }

    /// One-shot and streaming XXH3 agree on every length class (XXH3 has
    /// separate paths up to 16, 128, 240 bytes and in 1 KiB blocks), so a
    /// checksum written later is the one `finish` writes at once.
    #[test]
    fn a_checksum_filled_later_is_the_one_finish_writes() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for len in [0usize, 1, 7, 16, 17, 100, 128, 129, 240, 241, 1000, 1024, 5000, 1 << 20] {
            let mut b = Builder::new();
            let units: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    b'a' + (seed >> 59) as u8 % 26
                })
                .collect();
            let root = b.str_units(crate::format::Width::Ascii, &units);
            let mut again = Builder::new();
            let root2 = again.str_units(crate::format::Width::Ascii, &units);
            assert_eq!(root, root2);
            let summed = b.finish(root);
            let mut later = again.finish_unsummed(root);
            assert_eq!(&later[OFF_CHECKSUM..OFF_CHECKSUM + 8], &[0u8; 8]);
            fill_checksum(&mut later);
            assert_eq!(summed, later, "length {len}");
            let stored = u64::from_le_bytes(summed[OFF_CHECKSUM..OFF_CHECKSUM + 8].try_into().unwrap());
            assert_eq!(stored, compute_checksum(&summed), "length {len}");
            crate::reader::Region::new_verified(&summed).unwrap();
        }
    }

    /// Every length a string's copy treats apart (none, 1-3, 4-7, 8-16,
    /// 17-32, 33-64, longer) lands byte for byte, followed by zeros up to
    /// the next 8 bytes, in a buffer whose spare room held other bytes.
    #[test]
    fn padded_copies_land_whole_with_zero_padding() {
        for len in 0..=150usize {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let mut dirty = vec![0xA5u8; 4096];
            dirty.clear();
            let mut b = Builder::in_buffer(dirty);
            b.put(0xFFFF_FFFF_FFFF_FFFF);
            let before = b.len();
            b.put_padded(&data);
            let written = &b.new_bytes()[before..];
            assert_eq!(written.len(), pad8(len), "length {len}");
            assert_eq!(&written[..len], &data[..], "length {len}");
            assert!(written[len..].iter().all(|&x| x == 0), "padding of length {len}");
            assert_eq!(&b.new_bytes()[before - 8..before], &[0xFF; 8], "the word before, length {len}");
        }
    }
}
