//! Bounds-checked, zero-copy reading of regions.
//!
//! Every step checks what it reads: offsets inside the buffer, references
//! pointing strictly backwards (so no traversal can loop), known tags and
//! kinds, valid code points. Unverified bytes can therefore produce a
//! `FormatError`, but never an out-of-bounds read or a hang.

use crate::columns::Column;
use crate::error::{FormatError, Result};
use crate::format::*;
use crate::id_dict;
use crate::typed::{self, Ext};

/// A decoded slot. Containers are cheap handles into the buffer.
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    None,
    Bool(bool),
    Int(i64),
    /// Two's complement, little-endian, minimal; outside the i64 range.
    BigInt(&'a [u8]),
    Float(f64),
    Complex(f64, f64),
    Str(Str<'a>),
    Bytes(&'a [u8]),
    List(Seq),
    Tuple(Seq),
    Set(Table),
    FrozenSet(Table),
    Dict(Dict),
    /// A typed scalar: date, time, datetime, timedelta, Decimal, UUID, range, array.
    Ext(Ext<'a>),
    NdArray(NdArray<'a>),
    /// A list of numbers stored raw (read as a list of ints or floats).
    NumList(NumList),
    Record(Record),
    /// A 2-tuple of two small ints held in its slot (a PAIR slot).
    Pair(i64, i64),
    /// A list stored in columns: a TABLE (its items are dicts), a
    /// STR_COLUMN (strings) or a LIST_COLUMN (lists); see `columns`.
    Column(Column),
    /// A reference to a value in another segment of a store (a dict or a
    /// list there), which only the store can resolve; see `extern_ref`.
    Extern(crate::extern_ref::Extern),
}

pub use crate::num_list::NumList;

/// A record type: flavor, qualified-name slot and field names (a table
/// like a shape's, so fields are found by name through its index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecType {
    pub start: usize,
    pub flavor: u64,
    pub name: u64,
    pub fields: Table,
}

/// A record at `start`: one value slot per field of its type, at `values`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub start: usize,
    pub ty: RecType,
    pub values: usize,
    pub len: usize,
}

/// A numpy array (or scalar, with `ND_SCALAR`): `data` lies at `data_off`,
/// a multiple of 64, before the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdArray<'a> {
    pub start: usize,
    pub data_off: usize,
    pub data: &'a [u8],
    pub itemsize: u64,
    pub flags: u32,
    /// `ndim` little-endian u64 extents.
    pub shape: &'a [u8],
    pub dtype: &'a str,
}

impl NdArray<'_> {
    pub fn ndim(&self) -> usize {
        self.shape.len() / 8
    }
    pub fn dim(&self, i: usize) -> u64 {
        read_u64(self.shape, 8 * i)
    }
}

/// A string in CPython's own representation: `len` code units of `width`.
#[derive(Clone, Copy, Debug)]
pub struct Str<'a> {
    pub width: Width,
    pub len: usize,
    data: StrData<'a>,
}

#[derive(Clone, Copy, Debug)]
enum StrData<'a> {
    Inline([u8; 8]),
    Borrowed(&'a [u8]),
}

impl<'a> Str<'a> {
    /// A string of `len` code units of `width` held in `data`.
    pub(crate) fn borrowed(width: Width, len: usize, data: &'a [u8]) -> Str<'a> {
        Str { width, len, data: StrData::Borrowed(data) }
    }
    /// The code units, `len * width.unit()` bytes, little-endian.
    pub fn units(&self) -> &[u8] {
        match &self.data {
            StrData::Inline(b) => &b[1..1 + self.len],
            StrData::Borrowed(s) => s,
        }
    }
    /// The slot word of a string stored inline in its slot (the slot is
    /// all of it), or None for one stored out of line.
    pub fn inline_slot(&self) -> Option<u64> {
        match &self.data {
            StrData::Inline(b) => Some(u64::from_le_bytes(*b)),
            StrData::Borrowed(_) => None,
        }
    }
    /// Where the code units are stored (their address and byte length),
    /// for a string not held inline in its slot: one stored string has
    /// one place, however many slots reference it.
    pub fn stored_at(&self) -> Option<(usize, usize)> {
        match &self.data {
            StrData::Inline(_) => None,
            StrData::Borrowed(s) => Some((s.as_ptr() as usize, s.len())),
        }
    }
    /// Code point `i`.
    pub fn char_at(&self, i: usize) -> u32 {
        let u = self.units();
        match self.width {
            Width::Ascii | Width::Latin1 => u[i] as u32,
            Width::Ucs2 => u16::from_le_bytes([u[2 * i], u[2 * i + 1]]) as u32,
            Width::Ucs4 => u32::from_le_bytes(u[4 * i..4 * i + 4].try_into().unwrap()),
        }
    }
    /// The string as Rust UTF-8; lone surrogates become U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        (0..self.len).map(|i| char::from_u32(self.char_at(i)).unwrap_or('\u{FFFD}')).collect()
    }
}

/// A list or tuple: `len` slots at `pos`; its references lie before `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seq {
    pub start: usize,
    pub pos: usize,
    pub len: usize,
}

/// A set or frozenset object at `start`: `len` element slots at `pos`, then its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table {
    pub start: usize,
    pub pos: usize,
    pub len: usize,
}

impl Table {
    pub fn index_pos(&self) -> usize {
        self.pos + 8 * self.len
    }
}

/// A dict at `start`: keys in the shape `shape`, value slots at `values`.
/// A row of a TABLE at `start` has `row` set: its values are item `row`
/// of the columns whose slots are at `values` (read them with
/// `Reader::dict_value`). An ID_DICT has `ids` set: the position of its
/// `len` key ids, each the index of its key in `shape`, its key table
/// (see `id_dict`). Read keys with `Reader::dict_key` and find them with
/// `Reader::dict_find_with`, which know both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dict {
    pub start: usize,
    pub shape: Table,
    /// Where its key ids are (an ID_DICT), or 0: key i is key i of `shape`.
    pub ids: usize,
    pub values: usize,
    pub len: usize,
    pub row: Option<usize>,
    /// Its `collections` class word (`dict_class`), `dict_class::PLAIN` for a dict.
    pub class: u64,
}

/// A number stored in an object (see `Reader::number_object`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number<'a> {
    Int(i64),
    /// Minimal two's-complement bytes, little-endian (outside i64).
    Big(&'a [u8]),
    Float(f64),
}

/// The parsed header of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub total_len: u64,
    pub root: u64,
    pub checksum: u64,
    pub flags: u32,
}

/// Checks the header of `buf` (magic, byte order, version, length, reserved bytes).
pub fn parse_header(buf: &[u8]) -> Result<Header> {
    if cfg!(target_endian = "big") {
        return Err(FormatError::new("bale regions are little-endian and this host is big-endian"));
    }
    if buf.len() < HEADER_LEN {
        return Err(FormatError::new(format!(
            "buffer of {} bytes is too short for a region (the header alone is {} bytes)",
            buf.len(),
            HEADER_LEN
        )));
    }
    if buf[OFF_MAGIC..OFF_MAGIC + 8] != MAGIC {
        return Err(FormatError::at(0, "not a bale region (bad magic bytes)"));
    }
    let bom = read_u32(buf, OFF_BOM);
    if bom == BYTE_ORDER_MARK.swap_bytes() {
        return Err(FormatError::at(
            OFF_BOM,
            "region was written in big-endian byte order; this reader supports little-endian regions only",
        ));
    }
    if bom != BYTE_ORDER_MARK {
        return Err(FormatError::at(OFF_BOM, format!("bad byte-order marker 0x{bom:08x}")));
    }
    let version = read_u32(buf, OFF_VERSION);
    if version != VERSION {
        return Err(FormatError::at(
            OFF_VERSION,
            format!("region has format version {version}; this bale reads format version {VERSION}"),
        ));
    }
    let total_len = read_u64(buf, OFF_TOTAL_LEN);
    if total_len != buf.len() as u64 {
        return Err(FormatError::at(
            OFF_TOTAL_LEN,
            format!("header says the region is {} bytes but the buffer has {} bytes", total_len, buf.len()),
        ));
    }
    if !total_len.is_multiple_of(8) {
        return Err(FormatError::at(OFF_TOTAL_LEN, format!("region length {total_len} is not a multiple of 8")));
    }
    let flags = read_u32(buf, OFF_FLAGS);
    if flags & !KNOWN_FLAGS != 0 {
        return Err(FormatError::at(OFF_FLAGS, format!("unknown header flags 0x{flags:08x}")));
    }
    if flags & FLAG_CYCLIC != 0 && flags & FLAG_SHARED == 0 {
        return Err(FormatError::at(OFF_FLAGS, "header flags set CYCLIC without SHARED"));
    }
    if buf[OFF_RESERVED..HEADER_LEN].iter().any(|&b| b != 0) {
        return Err(FormatError::at(OFF_RESERVED, "reserved header bytes are not zero"));
    }
    Ok(Header { version, total_len, root: read_u64(buf, OFF_ROOT), checksum: read_u64(buf, OFF_CHECKSUM), flags })
}

/// The total length a region announces in its first 64 bytes, after checking
/// everything the header alone can tell (for receivers that read a region
/// from a stream and must size their buffer before the rest arrives).
pub fn announced_length(head: &[u8]) -> Result<u64> {
    if head.len() < HEADER_LEN {
        return Err(FormatError::new(format!("a region header is {HEADER_LEN} bytes, got {}", head.len())));
    }
    // Check magic, byte order, version, flags and reserved bytes first, as
    // if the buffer had exactly the announced length, then the length.
    let total = read_u64(head, OFF_TOTAL_LEN);
    let mut probe = [0u8; HEADER_LEN];
    probe.copy_from_slice(&head[..HEADER_LEN]);
    probe[OFF_TOTAL_LEN..OFF_TOTAL_LEN + 8].copy_from_slice(&(HEADER_LEN as u64).to_le_bytes());
    parse_header(&probe)?;
    if total < HEADER_LEN as u64 {
        return Err(FormatError::at(OFF_TOTAL_LEN, format!("region length {total} is shorter than its header")));
    }
    if !total.is_multiple_of(8) {
        return Err(FormatError::at(OFF_TOTAL_LEN, format!("region length {total} is not a multiple of 8")));
    }
    Ok(total)
}

/// The checksum of a region given as its header and the rest, apart
/// (for a region whose header is made anew in front of existing bytes).
pub fn compute_checksum_split(header: &[u8], rest: &[u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&header[..OFF_CHECKSUM]);
    h.update(&[0u8; 8]);
    h.update(&header[OFF_CHECKSUM + 8..HEADER_LEN]);
    h.update(rest);
    h.digest()
}

/// The checksum of a region fed in pieces: its header first, then the rest
/// in order (for regions written to a file piece by piece).
pub struct ChecksumStream(xxhash_rust::xxh3::Xxh3);

impl ChecksumStream {
    pub fn new(header: &[u8]) -> ChecksumStream {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&header[..OFF_CHECKSUM]);
        h.update(&[0u8; 8]);
        h.update(&header[OFF_CHECKSUM + 8..HEADER_LEN]);
        ChecksumStream(h)
    }
    pub fn update(&mut self, rest: &[u8]) {
        self.0.update(rest);
    }
    pub fn finish(&self) -> u64 {
        self.0.digest()
    }
}

/// A region header with the checksum field zero (to fill in once known).
pub fn header_bytes(total_len: u64, root: u64, flags: u32) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[OFF_MAGIC..OFF_MAGIC + 8].copy_from_slice(&MAGIC);
    b[OFF_VERSION..OFF_VERSION + 4].copy_from_slice(&VERSION.to_le_bytes());
    b[OFF_BOM..OFF_BOM + 4].copy_from_slice(&BYTE_ORDER_MARK.to_le_bytes());
    b[OFF_TOTAL_LEN..OFF_TOTAL_LEN + 8].copy_from_slice(&total_len.to_le_bytes());
    b[OFF_ROOT..OFF_ROOT + 8].copy_from_slice(&root.to_le_bytes());
    b[OFF_FLAGS..OFF_FLAGS + 4].copy_from_slice(&flags.to_le_bytes());
    b
}

/// XXH3-64 (seed 0) of any bytes: the checksum a store keeps for each
/// span appended to one of its segments.
pub fn xxh3_64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Writes a whole region's checksum into its header. The field is zeroed
/// first, so the bytes hash in one pass (XXH3's one-shot form, which gives
/// the same value as the streaming one `compute_checksum` uses).
pub fn fill_checksum(buf: &mut [u8]) {
    buf[OFF_CHECKSUM..OFF_CHECKSUM + 8].fill(0);
    let sum = xxh3_64(buf);
    buf[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
}

/// XXH3-64 of the region with its checksum field taken as zero.
pub fn compute_checksum(buf: &[u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&buf[..OFF_CHECKSUM]);
    h.update(&[0u8; 8]);
    h.update(&buf[OFF_CHECKSUM + 8..]);
    h.digest()
}

/// A reader over bytes laid out as a region (a whole region, or the
/// prefix a `Builder` has written so far).
///
/// In an acyclic region every reference must lie before its referrer,
/// which is what bounds every traversal; a cyclic reader (regions with
/// `FLAG_CYCLIC`) accepts references anywhere in the data area, and its
/// callers bound their traversals with visit marks instead.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    cyclic: bool,
}

/// A validated-header region: the entry point for reading.
///
/// ```
/// use bale_core::{Builder, Region, Value};
/// let mut b = Builder::new();
/// let s = b.str_utf8("hello");
/// let root = b.seq(false, &[s, bale_core::format::make_int_slot(7).unwrap()]);
/// let bytes = b.finish(root);
/// let region = Region::new(&bytes).unwrap();
/// match region.root().unwrap() {
///     Value::List(seq) => assert_eq!(seq.len, 2),
///     _ => unreachable!(),
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Region<'a> {
    pub reader: Reader<'a>,
    pub header: Header,
}

impl<'a> Region<'a> {
    /// Checks the header only: O(1).
    pub fn new(buf: &'a [u8]) -> Result<Region<'a>> {
        let header = parse_header(buf)?;
        let cyclic = header.flags & FLAG_CYCLIC != 0;
        Ok(Region { reader: Reader { buf, cyclic }, header })
    }
    /// Checks the header, the checksum and the whole structure: O(n).
    pub fn new_verified(buf: &'a [u8]) -> Result<Region<'a>> {
        let r = Region::new(buf)?;
        crate::verify::verify(&r)?;
        Ok(r)
    }
    pub fn root(&self) -> Result<Value<'a>> {
        self.reader.decode(self.header.root, self.reader.buf.len())
    }
    pub fn bytes(&self) -> &'a [u8] {
        self.reader.buf
    }
    pub fn shared(&self) -> bool {
        self.header.flags & FLAG_SHARED != 0
    }
    pub fn cyclic(&self) -> bool {
        self.header.flags & FLAG_CYCLIC != 0
    }
}

#[inline]
pub(crate) fn bad(offset: usize, msg: &str) -> FormatError {
    FormatError::at(offset, msg)
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, cyclic: false }
    }
    /// A reader for a region with the given header flags.
    pub fn with_flags(buf: &'a [u8], flags: u32) -> Reader<'a> {
        Reader { buf, cyclic: flags & FLAG_CYCLIC != 0 }
    }
    /// Whether references may point forward (see the type's docs).
    pub fn cyclic(&self) -> bool {
        self.cyclic
    }
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    #[inline]
    pub fn word(&self, off: usize) -> Result<u64> {
        match self.buf.get(off..off.wrapping_add(8)) {
            Some(b) => Ok(u64::from_le_bytes(b.try_into().unwrap())),
            None => Err(bad(off, "read past the end of the region")),
        }
    }

    /// Checks that `[off, off+size)` lies inside the data area and, unless
    /// the reader is cyclic, ends at or before `limit`.
    #[inline(always)]
    pub(crate) fn extent(&self, off: usize, size: usize, limit: usize, what: &str) -> Result<()> {
        let limit = if self.cyclic { self.buf.len() } else { limit };
        match off.checked_add(size) {
            Some(end) if off >= HEADER_LEN && end <= limit && end <= self.buf.len() => Ok(()),
            _ => Err(extent_error(off, size, limit, what)),
        }
    }

    /// Where the units of a STR slot found in a container whose extent
    /// starts at `limit` lie: their address in memory and a key of their
    /// byte length and width, checked against the buffer and `limit` as
    /// `decode` checks them but not read (`check_units` is for the caller
    /// that has not checked them before). `None` for any other slot.
    #[inline]
    pub fn stored_str_place(&self, slot: u64, limit: usize) -> Result<Option<(usize, usize)>> {
        if slot & TAG_MASK != TAG_STR {
            return Ok(None);
        }
        let width = Width::from_code(slot >> 3);
        let size = ((slot >> 5) & 0xFFFF) as usize * width.unit();
        let off = ((slot >> 21) << 3) as usize;
        self.extent(off, size, limit, "string")?;
        Ok(Some((self.buf.as_ptr() as usize + off, size << 2 | width as usize)))
    }

    /// The string of a STR `slot` (found in a container whose extent starts
    /// at `limit`), its units checked: what `decode` gives for it, without
    /// the `Value` around it (88 bytes that a caller would copy through
    /// memory: `thaw` of records of long strings spent a fifth of its time
    /// on that copy). The caller has checked that the slot is a STR slot.
    #[inline]
    pub fn stored_str(&self, slot: u64, limit: usize) -> Result<Str<'a>> {
        debug_assert_eq!(slot & TAG_MASK, TAG_STR);
        let width = Width::from_code(slot >> 3);
        let n = ((slot >> 5) & 0xFFFF) as usize;
        let off = ((slot >> 21) << 3) as usize;
        let size = n * width.unit();
        self.extent(off, size, limit, "string")?;
        let data = &self.buf[off..off + size];
        check_units(width, data, off)?;
        Ok(Str { width, len: n, data: StrData::Borrowed(data) })
    }

    /// Decodes `slot`, found in a container whose extent starts at `limit`.
    #[inline]
    pub fn decode(&self, slot: u64, limit: usize) -> Result<Value<'a>> {
        match slot & TAG_MASK {
            TAG_INT => Ok(Value::Int((slot as i64) >> 3)),
            TAG_CONST => match slot >> 3 {
                CONST_NONE => Ok(Value::None),
                CONST_FALSE => Ok(Value::Bool(false)),
                CONST_TRUE => Ok(Value::Bool(true)),
                c => Err(FormatError::new(format!("unknown constant {c} in slot 0x{slot:016x}"))),
            },
            TAG_SSTR => {
                let n = ((slot >> 3) & 7) as usize;
                let b = slot.to_le_bytes();
                if b[1..1 + n].iter().any(|&c| c >= 0x80) {
                    return Err(FormatError::new(format!("inline string slot 0x{slot:016x} is not ASCII")));
                }
                Ok(Value::Str(Str { width: Width::Ascii, len: n, data: StrData::Inline(b) }))
            }
            TAG_STR => Ok(Value::Str(self.stored_str(slot, limit)?)),
            TAG_LIST | TAG_TUPLE => {
                let seq = self.seq_slot_items(slot, limit)?;
                Ok(if slot & TAG_MASK == TAG_LIST { Value::List(seq) } else { Value::Tuple(seq) })
            }
            TAG_OBJ => self.decode_object(slot as usize, limit),
            _ => match pair_of(slot) {
                Some((a, b)) => Ok(Value::Pair(a, b)),
                None => Err(FormatError::new(format!("pair slot 0x{slot:016x} has non-zero top bits"))),
            },
        }
    }

    /// The items of a LIST or TUPLE slot (which the caller has checked it is).
    #[inline]
    pub fn seq_slot_items(&self, slot: u64, limit: usize) -> Result<Seq> {
        let n = ((slot >> 3) & 0xFFFF) as usize;
        let off = ((slot >> 19) << 3) as usize;
        if n == 0 {
            if off != 0 {
                return Err(FormatError::new(format!("empty sequence slot 0x{slot:016x} has an offset")));
            }
        } else {
            self.extent(off, 8 * n, limit, "sequence")?;
        }
        // One place that builds the result (an empty one is all zeros too):
        // built on two paths, it went through memory and stalled thaw's loop.
        Ok(Seq { start: off, pos: off, len: n })
    }

    /// Where the data a slot points to starts (an object, a string's
    /// units, a sequence's items), unchecked: for prefetching only.
    #[inline]
    pub fn slot_target(slot: u64) -> Option<usize> {
        match slot & TAG_MASK {
            TAG_OBJ => Some(slot as usize),
            TAG_STR => Some(((slot >> 21) << 3) as usize),
            TAG_LIST | TAG_TUPLE => Some(((slot >> 19) << 3) as usize),
            _ => None,
        }
    }

    /// The number an OBJ slot holds (an INT64, BIGINT or FLOAT object),
    /// with the checks `decode` makes, or `None` for any other slot. A
    /// `Number` is a third of a `Value`'s size: loops that turn many
    /// numbers into objects (thaw) copy less than through `decode`.
    #[inline]
    pub fn number_object(&self, slot: u64, limit: usize) -> Result<Option<Number<'a>>> {
        if slot & TAG_MASK != TAG_OBJ {
            return Ok(None);
        }
        let off = slot as usize;
        self.extent(off, 8, limit, "object")?;
        let head = self.word(off)?;
        Ok(Some(match (head & 0xFF) as u8 {
            KIND_INT64 => {
                self.extent(off, 16, limit, "int64 object")?;
                Number::Int(self.word(off + 8)? as i64)
            }
            KIND_FLOAT => {
                self.extent(off, 16, limit, "float object")?;
                Number::Float(f64::from_bits(self.word(off + 8)?))
            }
            KIND_BIGINT => {
                let n = head >> 8;
                if n == 0 || n > self.buf.len() as u64 {
                    return Err(bad(off, "big int object length is 0 or does not fit in the region"));
                }
                let n = n as usize;
                self.extent(off, 8 + pad8(n), limit, "big int object")?;
                Number::Big(&self.buf[off + 8..off + 8 + n])
            }
            _ => return Ok(None),
        }))
    }

    /// The plain dict an OBJ slot holds (a DICT or ID_DICT object), read as
    /// `decode` reads it but without a `Value` (88 bytes moved through
    /// memory); `None` for any other slot. For thaw's loop.
    #[inline(always)]
    pub fn dict_object(&self, slot: u64, limit: usize) -> Result<Option<Dict>> {
        if slot & TAG_MASK != TAG_OBJ {
            return Ok(None);
        }
        let off = slot as usize;
        self.extent(off, 8, limit, "object")?;
        let head = self.word(off)?;
        let kind = (head & 0xFF) as u8;
        if kind != KIND_DICT && kind != KIND_ID_DICT {
            return Ok(None);
        }
        if head >> 8 > self.buf.len() as u64 {
            return Err(bad(off, "object length does not fit in the region"));
        }
        self.plain_dict(off, kind, head >> 8, limit).map(Some)
    }

    /// A DICT or ID_DICT object at `off` whose header `decode_object` or
    /// `dict_object` read (`len` bounded by the buffer).
    #[inline(always)]
    fn plain_dict(&self, off: usize, kind: u8, len: u64, limit: usize) -> Result<Dict> {
        let body = off + 8;
        // The header's len field holds the shape's offset / 8.
        let shape = self.shape_at((len as usize) << 3, off)?;
        if kind == KIND_DICT {
            // n comes from the shape.
            let n = shape.len;
            self.extent(off, 8 + 8 * n, limit, "dict object")?;
            return Ok(Dict { start: off, shape, ids: 0, values: body, len: n, row: None, class: 0 });
        }
        self.extent(off, 16, limit, "dict object")?;
        let n = self.buf[body] as usize;
        let at = body + id_dict::ids_bytes(n);
        self.extent(off, at - off + 8 * n, limit, "dict object")?;
        id_dict::check_ids_in_table(&self.buf[body + 1..body + 1 + n], shape.len).map_err(|m| bad(off, m))?;
        Ok(Dict { start: off, shape, ids: body + 1, values: at, len: n, row: None, class: 0 })
    }

    fn decode_object(&self, off: usize, limit: usize) -> Result<Value<'a>> {
        self.extent(off, 8, limit, "object")?;
        let head = self.word(off)?;
        let kind = (head & 0xFF) as u8;
        let len = head >> 8;
        let body = off + 8;
        if typed::is_ext_kind(kind) {
            let size = typed::payload_len(kind, len)
                .map_err(|m| FormatError::at(off, format!("{} object: {m}", typed::kind_name(kind))))?;
            if size > self.buf.len() {
                return Err(bad(off, "object length does not fit in the region"));
            }
            self.extent(off, 8 + pad8(size), limit, typed::kind_name(kind))?;
            let e = Ext { kind, start: off, aux: len, payload: &self.buf[body..body + size] };
            typed::check(&e)?;
            return Ok(Value::Ext(e));
        }
        let too_long = || bad(off, "object length does not fit in the region");
        // Every len is bounded by the buffer before any multiplication can overflow.
        if len > self.buf.len() as u64 {
            return Err(too_long());
        }
        let n = len as usize;
        match kind {
            KIND_STR_ASCII | KIND_STR_LATIN1 | KIND_STR_UCS2 | KIND_STR_UCS4 => {
                let width = Width::from_code((kind - KIND_STR_ASCII) as u64);
                let size = n * width.unit();
                self.extent(off, 8 + pad8(size), limit, "string object")?;
                let data = &self.buf[body..body + size];
                check_units(width, data, body)?;
                Ok(Value::Str(Str { width, len: n, data: StrData::Borrowed(data) }))
            }
            KIND_BYTES => {
                self.extent(off, 8 + pad8(n), limit, "bytes object")?;
                Ok(Value::Bytes(&self.buf[body..body + n]))
            }
            KIND_INT64 => {
                self.extent(off, 16, limit, "int64 object")?;
                Ok(Value::Int(self.word(body)? as i64))
            }
            KIND_BIGINT => {
                self.extent(off, 8 + pad8(n), limit, "big int object")?;
                if n == 0 {
                    return Err(bad(off, "big int object has no bytes"));
                }
                Ok(Value::BigInt(&self.buf[body..body + n]))
            }
            KIND_FLOAT => {
                self.extent(off, 16, limit, "float object")?;
                Ok(Value::Float(f64::from_bits(self.word(body)?)))
            }
            KIND_COMPLEX => {
                self.extent(off, 24, limit, "complex object")?;
                Ok(Value::Complex(f64::from_bits(self.word(body)?), f64::from_bits(self.word(body + 8)?)))
            }
            KIND_LIST | KIND_TUPLE => {
                self.extent(off, 8 + 8 * n, limit, "sequence object")?;
                let seq = Seq { start: off, pos: body, len: n };
                Ok(if kind == KIND_LIST { Value::List(seq) } else { Value::Tuple(seq) })
            }
            KIND_SET | KIND_FROZENSET => {
                let t = self.table(off, n, limit, "set object")?;
                Ok(if kind == KIND_SET { Value::Set(t) } else { Value::FrozenSet(t) })
            }
            KIND_DICT | KIND_ID_DICT => self.plain_dict(off, kind, len, limit).map(Value::Dict),
            KIND_DICT_CLASS => {
                let shape = self.shape_at((len as usize) << 3, off)?;
                let n = shape.len;
                self.extent(off, 16 + 8 * n, limit, "dict object")?;
                let class = self.word(body)?;
                crate::dict_class::check_word(class).map_err(|m| bad(off, m))?;
                Ok(Value::Dict(Dict { start: off, shape, ids: 0, values: body + 8, len: n, row: None, class }))
            }
            KIND_EXTERN => {
                self.extent(off, crate::extern_ref::EXTERN_BYTES, limit, "reference to another segment")?;
                if n != 0 {
                    return Err(bad(off, "reference to another segment has a non-zero length field"));
                }
                let w = [self.word(body)?, self.word(body + 8)?, self.word(body + 16)?, self.word(body + 24)?];
                crate::extern_ref::decode(off, w).map(Value::Extern).map_err(|m| FormatError::at(off, m))
            }
            KIND_TABLE => self.decode_table(off, n, limit, false),
            KIND_KEYED_TABLE => self.decode_table(off, n, limit, true),
            KIND_STR_COLUMN => self.decode_str_column(off, n, limit),
            KIND_SLOT32_COLUMN => self.decode_slot32_column(off, n, limit),
            KIND_STR_CODE_COLUMN => self.decode_code_column(off, n, limit),
            KIND_LIST_COLUMN => self.decode_list_column(off, n, limit, false),
            KIND_ROWS_COLUMN => self.decode_list_column(off, n, limit, true),
            KIND_SHAPE => Err(bad(off, "a shape object is used as a value")),
            KIND_TYPE => Err(bad(off, "a record type object is used as a value")),
            KIND_INT_LIST | KIND_FLOAT_LIST | KIND_INT32_LIST => {
                let (float, int32) = crate::num_list::kind_of(kind).expect("a number list's kind");
                let size = crate::num_list::payload_bytes(n, int32).ok_or_else(too_long)?;
                self.extent(off, 8 + size, limit, "number list object")?;
                Ok(Value::NumList(NumList { start: off, pos: body, len: n, float, int32 }))
            }
            KIND_NDARRAY => self.ndarray(off, n, limit),
            KIND_RECORD => {
                let ty = self.rec_type((len as usize) << 3, off)?;
                let n = ty.fields.len;
                self.extent(off, 8 + 8 * n, limit, "record object")?;
                Ok(Value::Record(Record { start: off, ty, values: body, len: n }))
            }
            k => Err(FormatError::at(off, format!("unknown object kind 0x{k:02x}"))),
        }
    }

    /// The SHAPE at `shape_off`, which must lie wholly before its user at
    /// `user` (shapes precede their dicts in cyclic regions too: a shape is
    /// never part of a cycle).
    pub(crate) fn shape_at(&self, shape_off: usize, user: usize) -> Result<Table> {
        self.extent(shape_off, 8, user, "dict shape")?;
        let sh = self.word(shape_off)?;
        if (sh & 0xFF) as u8 != KIND_SHAPE {
            return Err(bad(shape_off, "dict shape does not reference a shape object"));
        }
        let n = (sh >> 8) as usize;
        if n > self.buf.len() {
            return Err(bad(shape_off, "object length does not fit in the region"));
        }
        let shape = self.table(shape_off, n, user, "shape object")?;
        if shape_off + pad8(8 + 8 * n + 4 * index_cap(n)) > user {
            return Err(bad(shape_off, "dict shape does not lie before its dict"));
        }
        Ok(shape)
    }

    /// The record type at `off`, which must lie wholly before `record`
    /// (types, like shapes, are never part of a cycle).
    pub fn rec_type(&self, off: usize, record: usize) -> Result<RecType> {
        if off >= record || off < HEADER_LEN {
            return Err(bad(off, "record type does not lie before its record"));
        }
        let head = self.word(off)?;
        if (head & 0xFF) as u8 != KIND_TYPE {
            return Err(bad(off, "record does not reference a record type object"));
        }
        let n = (head >> 8) as usize;
        if n > self.buf.len() / 8 {
            return Err(bad(off, "record type length does not fit in the region"));
        }
        let size = pad8(8 + 8 * TYPE_PREFIX_WORDS + 8 * n + 4 * index_cap(n));
        if off + size > record {
            return Err(bad(off, "record type does not lie before its record"));
        }
        let flavor = self.word(off + 8)?;
        if flavor == 0 || flavor > FLAVOR_MAX {
            return Err(bad(off + 8, "unknown record flavor"));
        }
        // Readers index an enum member's two fields (its name and value).
        if (flavor == FLAVOR_ENUM || flavor == FLAVOR_ENUM_MIXIN) && n != 2 {
            return Err(bad(off, "an enum member's record type does not have two fields (name and value)"));
        }
        let name = self.word(off + 16)?;
        let fields = Table { start: off, pos: off + 8 + 8 * TYPE_PREFIX_WORDS, len: n };
        Ok(RecType { start: off, flavor, name, fields })
    }

    /// The qualified name of a record type.
    pub fn type_name(&self, ty: RecType) -> Result<Str<'a>> {
        match self.decode(ty.name, ty.start)? {
            Value::Str(s) => Ok(s),
            _ => Err(bad(ty.start + 16, "record type name is not a string")),
        }
    }
    #[inline]
    pub fn record_value(&self, rec: Record, i: usize) -> Result<Value<'a>> {
        let slot = self.word(rec.values + 8 * i)?;
        self.decode(slot, rec.start)
    }
    #[inline]
    pub fn field_name(&self, ty: RecType, i: usize) -> Result<Value<'a>> {
        self.table_item(ty.fields, i)
    }
    /// Item `i` of a number list as a word: an int's i64 or a float's bits.
    #[inline]
    pub fn num_word(&self, l: NumList, i: usize) -> Result<u64> {
        l.word_in(self.buf, i).ok_or_else(|| bad(l.item_pos(i), "read past the end of the region"))
    }
    /// Item `i` of a number list, as an int or float value.
    #[inline]
    pub fn num_item(&self, l: NumList, i: usize) -> Result<Value<'a>> {
        let w = self.num_word(l, i)?;
        Ok(if l.float { Value::Float(f64::from_bits(w)) } else { Value::Int(w as i64) })
    }

    fn ndarray(&self, off: usize, p: usize, limit: usize) -> Result<Value<'a>> {
        self.extent(off, 8 + pad8(p), limit, "ndarray object")?;
        if p < ND_FIXED_BYTES {
            return Err(bad(off, "ndarray object is too short"));
        }
        let body = off + 8;
        let data_off = self.word(body)? as usize;
        let nbytes = self.word(body + 8)?;
        let itemsize = self.word(body + 16)?;
        let dims = self.word(body + 24)?;
        let (ndim, flags) = ((dims & 0xFFFF_FFFF) as usize, (dims >> 32) as u32);
        if flags & !ND_KNOWN != 0 {
            return Err(bad(off, "ndarray object has unknown flags"));
        }
        if ndim > ND_MAX_DIMS || ND_FIXED_BYTES + 8 * ndim > p || (flags & ND_SCALAR != 0 && ndim != 0) {
            return Err(bad(off, "ndarray object has a bad number of dimensions"));
        }
        if !data_off.is_multiple_of(ND_ALIGN) {
            return Err(bad(off, "ndarray data is not 64-byte aligned"));
        }
        let shape = &self.buf[body + ND_FIXED_BYTES..body + ND_FIXED_BYTES + 8 * ndim];
        // The data is exactly the items: the product of the extents times the item size.
        let mut count: u64 = 1;
        for i in 0..ndim {
            count = count.checked_mul(read_u64(shape, 8 * i)).ok_or_else(|| bad(off, "ndarray shape overflows"))?;
        }
        if count.checked_mul(itemsize) != Some(nbytes) {
            return Err(bad(off, "ndarray byte count does not match its shape and item size"));
        }
        let nbytes = nbytes as usize;
        // Data is referenced like a payload: it lies before the object (or,
        // when empty, nowhere).
        let data: &'a [u8] = if nbytes == 0 {
            &[]
        } else {
            self.extent(data_off, nbytes, off, "ndarray data")?;
            &self.buf[data_off..data_off + nbytes]
        };
        let dtype = std::str::from_utf8(&self.buf[body + ND_FIXED_BYTES + 8 * ndim..body + p])
            .map_err(|_| bad(off, "ndarray dtype is not UTF-8"))?;
        if dtype.is_empty() {
            return Err(bad(off, "ndarray dtype is empty"));
        }
        Ok(Value::NdArray(NdArray { start: off, data_off, data, itemsize, flags, shape, dtype }))
    }

    fn table(&self, off: usize, n: usize, limit: usize, what: &str) -> Result<Table> {
        let size = 8 + 8 * n + 4 * index_cap(n);
        self.extent(off, pad8(size), limit, what)?;
        Ok(Table { start: off, pos: off + 8, len: n })
    }

    /// Element `i` (unchecked against `len`: the caller indexes within it).
    #[inline]
    pub fn seq_item(&self, seq: Seq, i: usize) -> Result<Value<'a>> {
        let slot = self.word(seq.pos + 8 * i)?;
        self.decode(slot, seq.start)
    }
    #[inline]
    pub fn seq_slot(&self, seq: Seq, i: usize) -> Result<u64> {
        self.word(seq.pos + 8 * i)
    }
    #[inline]
    pub fn table_item(&self, t: Table, i: usize) -> Result<Value<'a>> {
        let slot = self.word(t.pos + 8 * i)?;
        self.decode(slot, t.start)
    }
    /// The index in `d.shape` of key `i` of `d` (`i` < `d.len`).
    #[inline(always)]
    pub fn dict_key_index(&self, d: Dict, i: usize) -> usize {
        if d.ids == 0 {
            i
        } else {
            // In bounds and within the table: checked when `d` was decoded.
            self.buf[d.ids + i] as usize
        }
    }
    /// The slot of key `i` of `d`.
    #[inline]
    pub fn dict_key_slot(&self, d: Dict, i: usize) -> Result<u64> {
        self.word(d.shape.pos + 8 * self.dict_key_index(d, i))
    }
    #[inline]
    pub fn dict_key(&self, d: Dict, i: usize) -> Result<Value<'a>> {
        self.table_item(d.shape, self.dict_key_index(d, i))
    }
    /// The place in `d` of the key found at index `found` of its shape
    /// (`None`: the shape's key is not one of `d`'s, or none was found).
    #[inline]
    pub fn dict_place(&self, d: Dict, found: Option<usize>) -> Option<usize> {
        let j = found?;
        if d.ids == 0 {
            return Some(j);
        }
        self.buf[d.ids..d.ids + d.len].iter().position(|&id| id as usize == j)
    }
    /// Finds the key of `d` for which `eq` holds (see `find_with`): its place in `d`.
    #[inline]
    pub fn dict_find_with(
        &self,
        d: Dict,
        hash: impl FnOnce() -> Result<u64>,
        eq: impl FnMut(Value<'a>) -> Result<bool>,
    ) -> Result<Option<usize>> {
        Ok(self.dict_place(d, self.find_with(d.shape, hash, eq)?))
    }
    #[inline]
    pub fn dict_value(&self, d: Dict, i: usize) -> Result<Value<'a>> {
        if let Some(row) = d.row {
            return self.row_value(d, row, i);
        }
        let slot = self.word(d.values + 8 * i)?;
        self.decode(slot, d.start)
    }

    /// Finds the entry of `t` for which `eq` holds, probing from `hash`.
    /// `eq` is only asked about entries whose hash slot matches the probe sequence.
    pub fn find(&self, t: Table, hash: u64, eq: impl FnMut(Value<'a>) -> Result<bool>) -> Result<Option<usize>> {
        self.find_with(t, || Ok(hash), eq)
    }

    /// Like `find`, computing the hash only when the table has an index.
    pub fn find_with(
        &self,
        t: Table,
        hash: impl FnOnce() -> Result<u64>,
        mut eq: impl FnMut(Value<'a>) -> Result<bool>,
    ) -> Result<Option<usize>> {
        let cap = index_cap(t.len);
        if cap == 0 {
            for i in 0..t.len {
                if eq(self.table_item(t, i)?)? {
                    return Ok(Some(i));
                }
            }
            return Ok(None);
        }
        self.find_slot(t, hash()?, |_| {}, |slot| eq(self.decode(slot, t.start)?))
    }

    /// Like `find_with`, asking `eq` about each candidate's raw slot (no
    /// decoding), and calling `candidate` with each candidate's index as
    /// soon as the hash index names it, before its key is read: a caller
    /// that will read a parallel array (a dict's values) prefetches there.
    #[inline]
    fn find_slot(
        &self,
        t: Table,
        hash: u64,
        mut candidate: impl FnMut(usize),
        mut eq: impl FnMut(u64) -> Result<bool>,
    ) -> Result<Option<usize>> {
        let cap = index_cap(t.len);
        let mask = cap.wrapping_sub(1);
        let ipos = t.index_pos();
        let mut p = (hash as usize) & mask;
        for _ in 0..cap {
            let e = u32::from_le_bytes(self.buf[ipos + 4 * p..ipos + 4 * p + 4].try_into().unwrap()) as usize;
            if e == 0 {
                return Ok(None);
            }
            if e > t.len {
                return Err(bad(ipos + 4 * p, "hash index entry out of range"));
            }
            candidate(e - 1);
            if eq(self.word(t.pos + 8 * (e - 1))?)? {
                return Ok(Some(e - 1));
            }
            p = (p + 1) & mask;
        }
        Ok(None)
    }

    /// Finds a string key given as CPython code units of its canonical width.
    #[inline]
    pub fn find_str(&self, t: Table, width: Width, units: &[u8]) -> Result<Option<usize>> {
        self.find_str_then(t, width, units, |_| {})
    }

    /// `find_str`, calling `candidate` with the index of each entry the hash
    /// index names before its key is read (see `find_slot`).
    #[inline]
    pub fn find_str_then(
        &self,
        t: Table,
        width: Width,
        units: &[u8],
        candidate: impl FnMut(usize),
    ) -> Result<Option<usize>> {
        let n = units.len() / width.unit();
        // The SSTR slot this string would have, if it fits one.
        let inline = (width == Width::Ascii && n <= SSTR_MAX).then(|| make_sstr_slot(units));
        // A STR slot of this string carries exactly these bits besides its offset.
        let short = (n <= SHORT_MAX).then_some(TAG_STR | ((width as u64) << 3) | ((n as u64) << 5));
        let matches = |slot: u64| -> Result<bool> {
            Ok(match slot & TAG_MASK {
                TAG_SSTR => inline == Some(slot),
                TAG_STR if short.is_some() => {
                    if Some(slot & ((1 << 21) - 1)) != short {
                        return Ok(false);
                    }
                    let off = ((slot >> 21) << 3) as usize;
                    self.extent(off, units.len(), t.start, "string")?;
                    &self.buf[off..off + units.len()] == units
                }
                // Any string may also be an object. (A STR slot met by a probe too
                // long for one is decoded, and so checked, but cannot match.)
                TAG_OBJ | TAG_STR => {
                    matches!(self.decode(slot, t.start)?, Value::Str(s) if s.width == width && s.units() == units)
                }
                _ => false,
            })
        };
        if index_cap(t.len) == 0 {
            for i in 0..t.len {
                if matches(self.word(t.pos + 8 * i)?)? {
                    return Ok(Some(i));
                }
            }
            return Ok(None);
        }
        // Candidates are compared slot first: a key of another length or
        // width is passed over without reading (or checking) its units.
        self.find_slot(t, crate::hash::hash_str_units(units), candidate, matches)
    }

    /// Index entry `p` of table `t` (for verification).
    pub fn index_entry(&self, t: Table, p: usize) -> u32 {
        let ipos = t.index_pos() + 4 * p;
        u32::from_le_bytes(self.buf[ipos..ipos + 4].try_into().unwrap())
    }
}

/// The error of a failed `Reader::extent` check (kept out of line: the
/// check itself is on every read).
#[cold]
#[inline(never)]
fn extent_error(off: usize, size: usize, limit: usize, what: &str) -> FormatError {
    if off < HEADER_LEN {
        return FormatError::at(off, format!("{what} points into the header"));
    }
    FormatError::at(off, format!("{what} of {size} bytes does not lie before its referrer at byte {limit}"))
}

/// Checks that the code units fit their width (ASCII < 0x80, UCS-4 <= 0x10FFFF).
#[inline]
pub fn check_units(width: Width, data: &[u8], off: usize) -> Result<()> {
    match width {
        Width::Ascii if !data.is_ascii() => {
            return Err(bad(off, "ASCII string holds a non-ASCII byte"));
        }
        Width::Ucs4 => {
            for c in data.chunks_exact(4) {
                if u32::from_le_bytes(c.try_into().unwrap()) > 0x10FFFF {
                    return Err(bad(off, "string holds a code point above U+10FFFF"));
                }
            }
        }
        _ => {}
    }
    Ok(())
}
