//! Constants and slot encoding of format version 1 (see `docs/FORMAT.md`).

/// `"BALE\r\n\x1a\n"`: the CR/LF/EOF bytes catch text-mode mangling.
pub const MAGIC: [u8; 8] = *b"BALE\r\n\x1a\n";
pub const VERSION: u32 = 1;
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;
pub const HEADER_LEN: usize = 64;

pub const OFF_MAGIC: usize = 0;
pub const OFF_VERSION: usize = 8;
pub const OFF_BOM: usize = 12;
pub const OFF_TOTAL_LEN: usize = 16;
pub const OFF_ROOT: usize = 24;
pub const OFF_CHECKSUM: usize = 32;
pub const OFF_FLAGS: usize = 40;
pub const OFF_RESERVED: usize = 44;

/// Header flag: containers may be referenced more than once.
pub const FLAG_SHARED: u32 = 1;
/// Header flag: references may point forward, so values may contain
/// themselves (requires `FLAG_SHARED`).
pub const FLAG_CYCLIC: u32 = 2;
pub const KNOWN_FLAGS: u32 = FLAG_SHARED | FLAG_CYCLIC;

pub const TAG_OBJ: u64 = 0;
pub const TAG_INT: u64 = 1;
pub const TAG_CONST: u64 = 2;
pub const TAG_SSTR: u64 = 3;
pub const TAG_STR: u64 = 4;
pub const TAG_LIST: u64 = 5;
pub const TAG_TUPLE: u64 = 6;
pub const TAG_MASK: u64 = 7;
/// Tag 7: a 2-tuple of two small ints held in the slot itself.
pub const TAG_PAIR: u64 = 7;
/// Range of each int of a PAIR slot (29-bit two's complement).
pub const PAIR_MIN: i64 = -(1 << 28);
pub const PAIR_MAX: i64 = (1 << 28) - 1;
const PAIR_FIELD: u64 = (1 << 29) - 1;

pub const CONST_NONE: u64 = 0;
pub const CONST_FALSE: u64 = 1;
pub const CONST_TRUE: u64 = 2;

pub const SLOT_NONE: u64 = (CONST_NONE << 3) | TAG_CONST;
pub const SLOT_FALSE: u64 = (CONST_FALSE << 3) | TAG_CONST;
pub const SLOT_TRUE: u64 = (CONST_TRUE << 3) | TAG_CONST;
pub const SLOT_EMPTY_LIST: u64 = TAG_LIST;
pub const SLOT_EMPTY_TUPLE: u64 = TAG_TUPLE;

pub const INT_MIN: i64 = -(1 << 60);
pub const INT_MAX: i64 = (1 << 60) - 1;
/// Longest ASCII string stored inline in a slot.
pub const SSTR_MAX: usize = 7;
/// Longest string (in code points) or sequence a headerless slot can describe.
pub const SHORT_MAX: usize = 0xFFFF;
/// Largest offset a headerless STR slot can hold (43 bits of `offset >> 3`).
pub const STR_SLOT_MAX_OFFSET: usize = ((1u64 << 43) - 1) as usize * 8;
/// Largest offset a headerless LIST/TUPLE slot can hold (45 bits of `offset >> 3`).
pub const SEQ_SLOT_MAX_OFFSET: usize = ((1u64 << 45) - 1) as usize * 8;

pub const KIND_STR_ASCII: u8 = 0x01;
pub const KIND_STR_LATIN1: u8 = 0x02;
pub const KIND_STR_UCS2: u8 = 0x03;
pub const KIND_STR_UCS4: u8 = 0x04;
pub const KIND_BYTES: u8 = 0x05;
pub const KIND_INT64: u8 = 0x06;
pub const KIND_BIGINT: u8 = 0x07;
pub const KIND_FLOAT: u8 = 0x08;
pub const KIND_COMPLEX: u8 = 0x09;
pub const KIND_LIST: u8 = 0x0A;
pub const KIND_TUPLE: u8 = 0x0B;
pub const KIND_SET: u8 = 0x0C;
pub const KIND_FROZENSET: u8 = 0x0D;
pub const KIND_DICT: u8 = 0x0E;
pub const KIND_SHAPE: u8 = 0x0F;
/// Typed scalars: byte strings of a fixed meaning, without references (see `typed`).
pub const KIND_DATE: u8 = 0x10;
pub const KIND_TIME: u8 = 0x11;
pub const KIND_DATETIME: u8 = 0x12;
pub const KIND_TIMEDELTA: u8 = 0x13;
pub const KIND_DECIMAL: u8 = 0x14;
pub const KIND_UUID: u8 = 0x15;
pub const KIND_RANGE: u8 = 0x16;
pub const KIND_ARRAY: u8 = 0x17;
/// A numpy array or scalar: dtype, shape and a reference to 64-aligned data.
pub const KIND_NDARRAY: u8 = 0x18;
/// Lists of numbers stored as raw little-endian i64 / f64 values.
pub const KIND_INT_LIST: u8 = 0x19;
pub const KIND_FLOAT_LIST: u8 = 0x1A;
/// A record (dataclass, NamedTuple, registered class, enum member) and its type.
pub const KIND_RECORD: u8 = 0x1B;
pub const KIND_TYPE: u8 = 0x1C;
/// Columnar layouts of lists (see `columns`): a list of same-shape dicts
/// stored as one column per key, a list of strings stored as one run of
/// code units, and a list of lists stored as one child list cut by offsets.
pub const KIND_TABLE: u8 = 0x1D;
pub const KIND_STR_COLUMN: u8 = 0x1E;
pub const KIND_LIST_COLUMN: u8 = 0x1F;
/// More typed scalars (see `fraction` and `path`).
pub const KIND_FRACTION: u8 = 0x20;
pub const KIND_PATH: u8 = 0x21;
/// A dict of a `collections` class (see `dict_class`).
pub const KIND_DICT_CLASS: u8 = 0x22;
/// A dict whose keys are one-byte ids into a shared SHAPE (see `id_dict`).
pub const KIND_ID_DICT: u8 = 0x23;
/// A reference to a value in another segment of a store (see `extern_ref`).
pub const KIND_EXTERN: u8 = 0x24;
/// A LIST_COLUMN whose child is a TABLE: a column of lists of dicts of one
/// key sequence, their items the rows of one table (see `columns`). A kind
/// of its own so that a reader that predates it names it and refuses it.
pub const KIND_ROWS_COLUMN: u8 = 0x25;
/// A TABLE whose rows name their keys (key lists by id), or are None (see `columns`).
pub const KIND_KEYED_TABLE: u8 = 0x26;
/// A list of ints stored as raw little-endian i32 (see `num_list`): a
/// table's column of ints that all fit 32 bits, in half an INT_LIST's bytes.
pub const KIND_INT32_LIST: u8 = 0x27;
/// A list of None, bools and small ints, each the low 4 bytes of its slot
/// (see `columns`): a table's column of them, in half a LIST's bytes.
pub const KIND_SLOT32_COLUMN: u8 = 0x28;
/// A list of strings, each a 4-byte code into a list of distinct strings
/// (see `columns`): a table's column of repeated strings, in half a LIST's
/// bytes.
pub const KIND_STR_CODE_COLUMN: u8 = 0x29;

/// Flavors of a record type: how a reader rebuilds its instances.
pub const FLAVOR_DATACLASS: u64 = 1;
pub const FLAVOR_NAMEDTUPLE: u64 = 2;
pub const FLAVOR_REGISTERED: u64 = 3;
/// An enum member, fields `name` and `value`.
pub const FLAVOR_ENUM: u64 = 4;
/// An enum member that is also an int or str (IntEnum, StrEnum, IntFlag).
pub const FLAVOR_ENUM_MIXIN: u64 = 5;
pub const FLAVOR_MAX: u64 = 5;

/// Words of a TYPE object before its field-name slots: flavor, name.
pub const TYPE_PREFIX_WORDS: usize = 2;

/// NDARRAY flags.
pub const ND_FORTRAN: u32 = 1;
pub const ND_SCALAR: u32 = 2;
/// The dtype text is a Python literal of `dtype.descr` (structured dtypes).
pub const ND_DESCR: u32 = 4;
pub const ND_KNOWN: u32 = ND_FORTRAN | ND_SCALAR | ND_DESCR;
/// Alignment of array data, as offsets from the region start.
pub const ND_ALIGN: usize = 64;
pub const ND_MAX_DIMS: usize = 64;
/// Payload bytes of an NDARRAY before its extents: data offset, byte
/// count, item size, dimensions and flags.
pub const ND_FIXED_BYTES: usize = 32;

/// Containers with more entries than this carry a hash index.
pub const INDEX_MIN_ENTRIES: usize = 9;

/// Largest `len` field of an object header (56 bits).
pub const MAX_OBJ_LEN: u64 = (1 << 56) - 1;

/// Code-unit width of a string, as CPython stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    Ascii = 0,
    Latin1 = 1,
    Ucs2 = 2,
    Ucs4 = 3,
}

impl Width {
    pub fn from_code(code: u64) -> Width {
        match code & 3 {
            0 => Width::Ascii,
            1 => Width::Latin1,
            2 => Width::Ucs2,
            _ => Width::Ucs4,
        }
    }
    /// The width CPython uses for a string whose largest code point is `max`.
    pub fn for_max(max: u32) -> Width {
        if max < 0x80 {
            Width::Ascii
        } else if max < 0x100 {
            Width::Latin1
        } else if max < 0x10000 {
            Width::Ucs2
        } else {
            Width::Ucs4
        }
    }
    /// Bytes per code unit.
    pub fn unit(self) -> usize {
        match self {
            Width::Ascii | Width::Latin1 => 1,
            Width::Ucs2 => 2,
            Width::Ucs4 => 4,
        }
    }
    pub fn kind(self) -> u8 {
        match self {
            Width::Ascii => KIND_STR_ASCII,
            Width::Latin1 => KIND_STR_LATIN1,
            Width::Ucs2 => KIND_STR_UCS2,
            Width::Ucs4 => KIND_STR_UCS4,
        }
    }
}

#[inline]
pub fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

/// Number of u32 entries of the hash index for `n` entries (0 when none).
#[inline]
pub fn index_cap(n: usize) -> usize {
    if n < INDEX_MIN_ENTRIES {
        0
    } else {
        (2 * n).next_power_of_two().max(32)
    }
}

#[inline]
pub fn make_int_slot(v: i64) -> Option<u64> {
    if (INT_MIN..=INT_MAX).contains(&v) {
        Some(((v << 3) as u64) | TAG_INT)
    } else {
        None
    }
}

#[inline]
pub fn make_str_slot(width: Width, nchars: usize, offset: usize) -> u64 {
    debug_assert!(nchars <= SHORT_MAX && offset.is_multiple_of(8) && offset <= STR_SLOT_MAX_OFFSET);
    TAG_STR | ((width as u64) << 3) | ((nchars as u64) << 5) | (((offset >> 3) as u64) << 21)
}

#[inline]
pub fn make_seq_slot(tag: u64, len: usize, offset: usize) -> u64 {
    debug_assert!(len <= SHORT_MAX && offset.is_multiple_of(8) && offset <= SEQ_SLOT_MAX_OFFSET);
    tag | ((len as u64) << 3) | (((offset >> 3) as u64) << 19)
}

/// The PAIR slot of the tuple `(a, b)`, when both fit in 29 bits.
#[inline]
pub fn make_pair_slot(a: i64, b: i64) -> Option<u64> {
    if (PAIR_MIN..=PAIR_MAX).contains(&a) && (PAIR_MIN..=PAIR_MAX).contains(&b) {
        Some(TAG_PAIR | ((a as u64) & PAIR_FIELD) << 3 | ((b as u64) & PAIR_FIELD) << 32)
    } else {
        None
    }
}

/// The two ints of a PAIR slot; `None` when its three top bits are not zero.
#[inline]
pub fn pair_of(slot: u64) -> Option<(i64, i64)> {
    if slot >> 61 != 0 {
        return None;
    }
    // Sign-extend each 29-bit field.
    let a = (((slot >> 3) & PAIR_FIELD) << 35) as i64 >> 35;
    let b = (((slot >> 32) & PAIR_FIELD) << 35) as i64 >> 35;
    Some((a, b))
}

/// Inline ASCII string slot; `s` must be ASCII and at most 7 bytes.
#[inline]
pub fn make_sstr_slot(s: &[u8]) -> u64 {
    debug_assert!(s.len() <= SSTR_MAX);
    let n = s.len();
    // The bytes as a little-endian number, from two loads that may overlap
    // (no copy of a variable length: this runs for every short string).
    let units = if n >= 4 {
        let lo = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as u64;
        let hi = u32::from_le_bytes([s[n - 4], s[n - 3], s[n - 2], s[n - 1]]) as u64;
        lo | hi << (8 * (n - 4))
    } else if n >= 2 {
        let lo = u16::from_le_bytes([s[0], s[1]]) as u64;
        let hi = u16::from_le_bytes([s[n - 2], s[n - 1]]) as u64;
        lo | hi << (8 * (n - 2))
    } else if n == 1 {
        s[0] as u64
    } else {
        0
    };
    (TAG_SSTR | (n as u64) << 3) | units << 8
}

#[inline]
pub fn header_word(kind: u8, len: u64) -> u64 {
    (len << 8) | kind as u64
}

#[inline]
pub fn read_u64(buf: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(buf[off..off + 8].try_into().unwrap())
}

#[inline]
pub fn read_u32(buf: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(buf[off..off + 4].try_into().unwrap())
}

/// Appends the first `n` of `items` as little-endian u32s, zero-padded to
/// a word: the payload of an INT32_LIST, the cells of a SLOT32_COLUMN, the
/// codes of a STR_CODE_COLUMN.
#[inline]
pub fn put_u32s(out: &mut Vec<u8>, n: usize, items: impl Iterator<Item = u32>) {
    let at = out.len();
    out.resize(at + pad8(4 * n), 0);
    for (place, item) in out[at..].chunks_exact_mut(4).zip(items) {
        place.copy_from_slice(&item.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sstr_slot_is_tag_length_then_the_bytes_in_order() {
        let text = b"abcdefg";
        for n in 0..=SSTR_MAX {
            let mut want = [0u8; 8];
            want[0] = TAG_SSTR as u8 | (n as u8) << 3;
            want[1..1 + n].copy_from_slice(&text[..n]);
            assert_eq!(make_sstr_slot(&text[..n]).to_le_bytes(), want, "length {n}");
        }
    }
}
