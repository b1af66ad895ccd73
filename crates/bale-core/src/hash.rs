//! The stable key hash of `docs/FORMAT.md`: the same in every process, and
//! equal for values Python considers equal (`1 == 1.0 == True`).

use crate::error::{FormatError, Result};
use crate::format::Width;
use crate::reader::{Reader, Value};

pub const SEED_NONE: u64 = 0x6e6f6e65;
pub const SEED_INT: u64 = 0x696e7465676572;
pub const SEED_BIGINT: u64 = 0x62696769;
pub const SEED_FLOAT: u64 = 0x666c6f6174;
pub const SEED_COMPLEX: u64 = 0x636f6d706c6578;
pub const SEED_STR: u64 = 0x737472;
pub const SEED_BYTES: u64 = 0x6279746573;
pub const SEED_TUPLE: u64 = 0x7475706c65;
pub const SEED_FROZENSET: u64 = 0x66726f7a656e;

/// Nesting depth of keys (tuples and frozensets inside keys) beyond which
/// hashing and key comparison give up. Comparing frozensets recurses, so this
/// bounds the stack they use (well under 1 MB) on any thread.
pub const MAX_KEY_DEPTH: usize = 100;

/// The place of `key` in an in-memory table of `2^bits` places (caches,
/// memos and maps of addresses or slots; not part of the format):
/// Fibonacci hashing, whose top bits mix every bit of the key, so that
/// aligned addresses and slots, whose low bits are 0, spread over the table.
#[inline(always)]
pub fn place_of(key: u64, bits: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

#[inline]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

#[inline]
pub fn hash_i64(v: i64) -> u64 {
    mix(v as u64 ^ SEED_INT)
}

/// `le` is a minimal two's-complement little-endian integer outside i64.
pub fn hash_bigint(le: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(le, SEED_BIGINT)
}

pub fn hash_f64(f: f64) -> u64 {
    if f.fract() == 0.0 {
        if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
            return hash_i64(f as i64);
        }
        return hash_bigint(&float_to_int_bytes(f));
    }
    mix(f.to_bits() ^ SEED_FLOAT)
}

pub fn hash_complex(re: f64, im: f64) -> u64 {
    if im == 0.0 {
        return hash_f64(re);
    }
    mix(hash_f64(re) ^ mix(hash_f64(im) ^ SEED_COMPLEX))
}

#[inline]
pub fn hash_str_units(units: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(units, SEED_STR)
}

#[inline]
pub fn hash_bytes(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(b, SEED_BYTES)
}

/// Folds element hashes of a tuple of `n` elements.
pub struct TupleHasher(u64);
impl TupleHasher {
    pub fn new() -> Self {
        TupleHasher(SEED_TUPLE)
    }
    #[inline]
    pub fn add(&mut self, h: u64) {
        self.0 = mix(self.0 ^ h).wrapping_add(1);
    }
    pub fn finish(self, n: usize) -> u64 {
        mix(self.0 ^ n as u64)
    }
}
impl Default for TupleHasher {
    fn default() -> Self {
        Self::new()
    }
}

/// Order-independent fold of frozenset element hashes.
pub fn frozenset_hash(sum_of_mixed: u64, n: usize) -> u64 {
    mix(sum_of_mixed ^ SEED_FROZENSET ^ n as u64)
}

/// Minimal two's-complement LE bytes of an integral float outside i64.
pub fn float_to_int_bytes(f: f64) -> Vec<u8> {
    let bits = f.to_bits();
    let neg = bits >> 63 == 1;
    let exp = ((bits >> 52) & 0x7FF) as i64;
    let mant = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    let shift = (exp - 1075) as usize; // >= 11 for |f| >= 2^63
    let nbytes = (53 + shift) / 8 + 2;
    let mut mag = vec![0u8; nbytes];
    let (byte, bit) = (shift / 8, shift % 8);
    let wide = (mant as u128) << bit;
    for k in 0..9 {
        if byte + k < nbytes {
            mag[byte + k] = (wide >> (8 * k)) as u8;
        }
    }
    if neg {
        let mut carry = 1u16;
        for b in mag.iter_mut() {
            let v = (!*b) as u16 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
    }
    minimize_twos_complement(&mut mag);
    mag
}

/// Drops redundant sign-extension bytes from a two's-complement LE integer.
pub fn minimize_twos_complement(b: &mut Vec<u8>) {
    let n = minimal_twos_complement(b).len();
    b.truncate(n);
}

/// Two's-complement little-endian bytes as an i64, when there are at most
/// eight of them (sign-extended); `None` for longer ones.
pub fn twos_complement_i64(b: &[u8]) -> Option<i64> {
    if b.len() > 8 {
        return None;
    }
    let fill = if b.last().is_some_and(|&x| x & 0x80 != 0) { 0xFF } else { 0 };
    let mut w = [fill; 8];
    w[..b.len()].copy_from_slice(b);
    Some(i64::from_le_bytes(w))
}

/// How many bytes `minimal_twos_complement` keeps of `v`'s 16: its
/// significant bits and a sign bit.
pub fn twos_complement_len(v: i128) -> usize {
    (128 - if v < 0 { !v } else { v }.leading_zeros() as usize) / 8 + 1
}

/// The shortest prefix of little-endian two's-complement bytes `b` that
/// has the same value (at least one byte of a non-empty `b`).
pub fn minimal_twos_complement(b: &[u8]) -> &[u8] {
    let mut n = b.len();
    while n > 1 {
        let (last, prev) = (b[n - 1], b[n - 2]);
        if (last == 0 && prev & 0x80 == 0) || (last == 0xFF && prev & 0x80 != 0) {
            n -= 1;
        } else {
            break;
        }
    }
    &b[..n]
}

/// The key hash of a stored value. Lists, dicts and sets are unhashable.
pub fn hash_value(r: &Reader<'_>, v: Value<'_>, depth: usize) -> Result<u64> {
    // A valid region holds at most one element per word; crafted sharing
    // could otherwise make a small key expand without bound.
    let mut steps = step_budget(r.buf().len());
    hash_at(r, v, depth, &mut steps)
}

fn hash_at(r: &Reader<'_>, v: Value<'_>, depth: usize, steps: &mut usize) -> Result<u64> {
    if depth > MAX_KEY_DEPTH {
        return Err(FormatError::new("key nested too deeply to hash"));
    }
    Ok(match v {
        Value::None => mix(SEED_NONE),
        Value::Bool(b) => hash_i64(b as i64),
        Value::Int(i) => hash_i64(i),
        Value::BigInt(b) => hash_bigint(b),
        Value::Float(f) => hash_f64(f),
        Value::Complex(re, im) => hash_complex(re, im),
        Value::Str(s) => hash_str_units(s.units()),
        Value::Bytes(b) => hash_bytes(b),
        // Hashes as the tuple it is.
        Value::Pair(a, b) => {
            let mut h = TupleHasher::new();
            h.add(hash_i64(a));
            h.add(hash_i64(b));
            h.finish(2)
        }
        Value::Tuple(seq) => {
            let mut h = TupleHasher::new();
            for i in 0..seq.len {
                spend(steps)?;
                h.add(hash_at(r, r.seq_item(seq, i)?, depth + 1, steps)?);
            }
            h.finish(seq.len)
        }
        Value::FrozenSet(t) => {
            let mut s = 0u64;
            for i in 0..t.len {
                spend(steps)?;
                s = s.wrapping_add(mix(hash_at(r, r.table_item(t, i)?, depth + 1, steps)?));
            }
            frozenset_hash(s, t.len)
        }
        Value::Ext(e) if crate::typed::hashable_ext(&e) => hash_ext(&e),
        Value::Ext(e) => {
            return Err(FormatError::at(
                e.start,
                format!("a {} is not stored as a key or set element", crate::typed::class_name(&e)),
            ))
        }
        Value::List(_) | Value::Column(_) | Value::Dict(_) | Value::Set(_) | Value::NumList(_) | Value::NdArray(_) => {
            return Err(FormatError::new("unhashable value (list, dict, set or array) used as a key or set element"))
        }
        Value::Record(r) => return Err(FormatError::at(r.start, "a record is not stored as a key or set element")),
        Value::Extern(x) => return Err(crate::extern_ref::unhashable(&x)),
    })
}

/// The key hash of a hashable typed scalar: its kind, header field and
/// payload (a fraction's is that of the number it is).
pub fn hash_ext(e: &crate::typed::Ext<'_>) -> u64 {
    if e.kind == crate::format::KIND_FRACTION {
        if let Ok(f) = crate::fraction::decode(e) {
            return f.key_hash();
        }
    }
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&[e.kind]);
    h.update(&crate::typed::equality_aux(e).to_le_bytes());
    h.update(e.payload);
    mix(h.digest())
}

/// The steps a traversal of a region of `len` bytes may take: a valid
/// region holds at most one value per word, and a table row with its
/// values takes at least half a word per value (its columns' items and
/// offsets), hence four steps per word.
pub fn step_budget(len: usize) -> usize {
    len / 2 + 1
}

/// Takes one step of a traversal budget.
#[inline]
pub fn spend(steps: &mut usize) -> Result<()> {
    if *steps == 0 {
        return Err(FormatError::new(
            "value expands to more elements than its region's size allows (malformed sharing)",
        ));
    }
    *steps -= 1;
    Ok(())
}

/// Whether `units` of `width` are stored at their smallest width, the one
/// CPython would use for them, answered at the first unit that needs the
/// width: a string's first character mostly does, so a verifier need not
/// scan it (a short Latin-1 string was a byte-by-byte maximum).
pub fn is_canonical_width(width: Width, units: &[u8]) -> bool {
    match width {
        Width::Ascii => true,
        Width::Latin1 => !units.is_ascii(),
        Width::Ucs2 => units.chunks_exact(2).any(|c| c[1] != 0),
        Width::Ucs4 => units.chunks_exact(4).any(|c| c[2] != 0 || c[3] != 0),
    }
}

#[cfg(test)]
mod width_tests {
    use super::is_canonical_width;
    use crate::format::Width;

    /// The smallest width that holds `units`: the answer by a full scan.
    fn canonical_width(width: Width, units: &[u8]) -> Width {
        let max = match width {
            Width::Ascii | Width::Latin1 => units.iter().copied().max().unwrap_or(0) as u32,
            Width::Ucs2 => units.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as u32).max().unwrap_or(0),
            Width::Ucs4 => units.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).max().unwrap_or(0),
        };
        Width::for_max(max)
    }

    #[test]
    fn canonical_width_tests_agree() {
        let cases: Vec<(Width, Vec<u8>)> = vec![
            (Width::Latin1, b"abc".to_vec()),
            (Width::Latin1, vec![b'a', 0xE9]),
            (Width::Latin1, vec![]),
            (Width::Ucs2, vec![0x61, 0, 0xE9, 0]),
            (Width::Ucs2, vec![0x61, 0, 0xAC, 0x20]),
            (Width::Ucs4, vec![0x61, 0, 0, 0, 0xAC, 0x20, 0, 0]),
            (Width::Ucs4, vec![0x00, 0xF6, 0x01, 0]),
            (Width::Ucs4, vec![]),
        ];
        for (w, u) in cases {
            assert_eq!(is_canonical_width(w, &u), canonical_width(w, &u) == w, "{w:?} {u:?}");
        }
    }
}
