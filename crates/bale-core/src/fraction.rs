//! `fractions.Fraction`: the FRACTION kind, a typed scalar holding a
//! rational number in lowest terms. Its layout, encoding, decoding,
//! checks, key hash and equality with other numbers live here.
//!
//! Layout: the header's `len` field is `k | m << 28`; the payload is the
//! numerator in k bytes, then the denominator in m bytes, each an integer
//! in minimal two's complement, little-endian (as a BIGINT's bytes, at
//! least one byte), the denominator positive. Python keeps every Fraction
//! in lowest terms with a positive denominator, and so does the format.
//!
//! Note [Fraction keys and the coprime check]: equality and the key hash
//! read the two integers as they are stored, so they are right only for a
//! fraction in lowest terms. Checking that costs a gcd, quadratic in the
//! integers' size; an unbounded one would let a crafted region stall
//! verification. So a fraction whose parts both fit `KEY_PART_BYTES` is a
//! number like any other (a key, equal to `0.5` or `2` where Python says
//! so, its lowest terms verified); a larger one is a value only: the
//! compactor refuses it as a key, equality leaves it to Python (which
//! compares the thawed `Fraction`s), and thawing normalizes it anyway.

use crate::hash::{hash_bigint, hash_f64, hash_i64, minimal_twos_complement, mix, twos_complement_i64};
use crate::typed::Ext;

/// Bits of the `len` field that hold the numerator's byte count.
pub const PART_BITS: u32 = 28;
/// Largest byte count of either integer (256 MiB).
pub const MAX_PART_BYTES: usize = (1 << PART_BITS) - 1;
/// Fractions whose integers both fit this many bytes (8,192 bits, about
/// 2,466 decimal digits) are keys and numbers (see the Note above).
pub const KEY_PART_BYTES: usize = 1024;
pub const SEED_FRACTION: u64 = 0x6672616374;

/// A stored fraction: its numerator and denominator bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fraction<'a> {
    pub num: &'a [u8],
    pub den: &'a [u8],
}

/// The header field and payload of the fraction `num / den`, given as
/// minimal two's-complement bytes (the caller keeps them in lowest terms).
pub fn encode(num: &[u8], den: &[u8]) -> (u64, Vec<u8>) {
    let mut p = Vec::with_capacity(num.len() + den.len());
    p.extend_from_slice(num);
    p.extend_from_slice(den);
    (num.len() as u64 | (den.len() as u64) << PART_BITS, p)
}

/// Payload bytes of a fraction whose header field is `aux`.
pub fn payload_len(aux: u64) -> Result<usize, &'static str> {
    let (k, m) = ((aux & MAX_PART_BYTES as u64) as usize, (aux >> PART_BITS) as usize);
    if k == 0 || m == 0 || m > MAX_PART_BYTES {
        return Err("numerator or denominator byte count out of range");
    }
    Ok(k + m)
}

/// The two integers of a stored fraction, each checked minimal, the
/// denominator positive. Lowest terms are checked by `check_lowest_terms`.
pub fn decode<'a>(e: &Ext<'a>) -> Result<Fraction<'a>, &'static str> {
    if e.kind != crate::format::KIND_FRACTION || payload_len(e.aux) != Ok(e.payload.len()) {
        return Err("not a fraction's header and payload");
    }
    let k = (e.aux & MAX_PART_BYTES as u64) as usize;
    let (num, den) = e.payload.split_at(k);
    if minimal_twos_complement(num).len() != num.len() || minimal_twos_complement(den).len() != den.len() {
        return Err("integer bytes are not minimal");
    }
    if den[den.len() - 1] & 0x80 != 0 || den == [0] {
        return Err("denominator is not positive");
    }
    Ok(Fraction { num, den })
}

impl Fraction<'_> {
    /// Whether this is a number with a key hash (see the Note above).
    pub fn is_key(&self) -> bool {
        self.num.len() <= KEY_PART_BYTES && self.den.len() <= KEY_PART_BYTES
    }

    pub fn is_integer(&self) -> bool {
        self.den == [1]
    }

    /// The value as a float, when a float holds it exactly and it is not
    /// an integer (`Fraction(1, 2) == 0.5`, `Fraction(1, 3) != 1/3`).
    pub fn exact_f64(&self) -> Option<f64> {
        // The denominator must be a power of two 2^k, k >= 1.
        let top = self.den.len() - 1;
        if self.den[..top].iter().any(|&b| b != 0) || !self.den[top].is_power_of_two() {
            return None;
        }
        let k = 8 * top as u32 + self.den[top].trailing_zeros();
        if k == 0 || k > 1074 || self.num.len() > 8 {
            return None;
        }
        let n = twos_complement_i64(self.num).expect("at most 8 bytes");
        // 53 significant bits and an exponent down to the least subnormal.
        if n.unsigned_abs() > 1 << 53 {
            return None;
        }
        let scale = if k <= 1022 { f64::from_bits((1023 - k as u64) << 52) } else { f64::from_bits(1 << (1074 - k)) };
        // Both factors and the product are exact.
        Some(n as f64 * scale)
    }

    /// The key hash: an integer's when the denominator is 1, a float's when
    /// a float equals it, else one of its own.
    pub fn key_hash(&self) -> u64 {
        if self.is_integer() {
            return int_hash(self.num);
        }
        if let Some(f) = self.exact_f64() {
            return hash_f64(f);
        }
        mix(int_hash(self.num) ^ mix(int_hash(self.den) ^ SEED_FRACTION))
    }

    /// Whether numerator and denominator are coprime (lowest terms).
    pub fn in_lowest_terms(&self) -> bool {
        coprime(&magnitude(self.num), &magnitude(self.den))
    }
}

/// Checks lowest terms where it matters (see the Note above).
pub fn check_lowest_terms(f: &Fraction<'_>) -> Result<(), &'static str> {
    if f.is_key() && !f.in_lowest_terms() {
        return Err("fraction is not in lowest terms");
    }
    Ok(())
}

/// The key hash of an integer given by its minimal bytes (as an INT's or a BIGINT's).
fn int_hash(b: &[u8]) -> u64 {
    match twos_complement_i64(b) {
        Some(v) => hash_i64(v),
        None => hash_bigint(b),
    }
}

/// The integer as stored, when it fits 64 bits; otherwise its bytes.
pub enum Int<'a> {
    Small(i64),
    Big(&'a [u8]),
}

pub fn int_of(b: &[u8]) -> Int<'_> {
    match twos_complement_i64(b) {
        Some(v) => Int::Small(v),
        None => Int::Big(b),
    }
}

/// |x| as little-endian u64 limbs without leading zero limbs.
fn magnitude(b: &[u8]) -> Vec<u64> {
    let neg = b[b.len() - 1] & 0x80 != 0;
    let mut limbs: Vec<u64> = b
        .chunks(8)
        .map(|c| {
            let mut w = [if neg { 0xFF } else { 0 }; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    if neg {
        // Two's complement: invert and add one.
        let mut carry = true;
        for l in limbs.iter_mut() {
            let (v, c) = (!*l).overflowing_add(carry as u64);
            *l = v;
            carry = c;
        }
    }
    trim(&mut limbs);
    limbs
}

fn trim(x: &mut Vec<u64>) {
    while x.last() == Some(&0) {
        x.pop();
    }
}

fn shift_right(x: &mut Vec<u64>, bits: u64) {
    let (words, bits) = ((bits / 64) as usize, (bits % 64) as u32);
    x.drain(..words.min(x.len()));
    if bits > 0 {
        for i in 0..x.len() {
            let next = x.get(i + 1).copied().unwrap_or(0);
            x[i] = x[i] >> bits | next << (64 - bits);
        }
    }
    trim(x);
}

fn trailing_zeros(x: &[u64]) -> u64 {
    let i = x.iter().position(|&l| l != 0).expect("non-zero");
    64 * i as u64 + x[i].trailing_zeros() as u64
}

fn less(x: &[u64], y: &[u64]) -> bool {
    if x.len() != y.len() {
        return x.len() < y.len();
    }
    x.iter().rev().cmp(y.iter().rev()) == std::cmp::Ordering::Less
}

/// `y -= x`, given `x <= y`.
fn subtract(y: &mut Vec<u64>, x: &[u64]) {
    let mut borrow = false;
    for (i, limb) in y.iter_mut().enumerate() {
        let (v, b1) = limb.overflowing_sub(x.get(i).copied().unwrap_or(0));
        let (v, b2) = v.overflowing_sub(borrow as u64);
        *limb = v;
        borrow = b1 || b2;
    }
    trim(y);
}

/// Whether gcd(x, y) is 1 (binary gcd; gcd(0, y) is y).
fn coprime(x: &[u64], y: &[u64]) -> bool {
    if x.is_empty() || y.is_empty() {
        return x == [1] || y == [1];
    }
    if x[0] & 1 == 0 && y[0] & 1 == 0 {
        return false;
    }
    if x.len() <= 2 && y.len() <= 2 {
        let wide = |v: &[u64]| v[0] as u128 | (v.get(1).copied().unwrap_or(0) as u128) << 64;
        let (mut a, mut b) = (wide(x), wide(y));
        a >>= a.trailing_zeros();
        while b != 0 {
            b >>= b.trailing_zeros();
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            b -= a;
        }
        return a == 1;
    }
    let (mut a, mut b) = (x.to_vec(), y.to_vec());
    let tz = trailing_zeros(&a);
    shift_right(&mut a, tz);
    while !b.is_empty() {
        let tz = trailing_zeros(&b);
        shift_right(&mut b, tz);
        if less(&b, &a) {
            std::mem::swap(&mut a, &mut b);
        }
        subtract(&mut b, &a);
    }
    a == [1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::KIND_FRACTION;

    fn bytes(v: i128) -> Vec<u8> {
        minimal_twos_complement(&v.to_le_bytes()).to_vec()
    }

    fn frac(n: i128, d: i128) -> (u64, Vec<u8>) {
        encode(&bytes(n), &bytes(d))
    }

    fn with<T>(n: i128, d: i128, f: impl FnOnce(Fraction<'_>) -> T) -> T {
        let (aux, p) = frac(n, d);
        let e = Ext { kind: KIND_FRACTION, start: 64, aux, payload: &p };
        f(decode(&e).unwrap())
    }

    #[test]
    fn layout_round_trips() {
        let (aux, p) = frac(-3, 4);
        assert_eq!(aux, 1 | 1 << 28);
        assert_eq!(p, vec![0xFD, 4]);
        assert_eq!(payload_len(aux), Ok(2));
        assert!(payload_len(1).is_err());
        assert!(payload_len(1 << 28).is_err());
    }

    #[test]
    fn refuses_non_minimal_and_non_positive_denominators() {
        for (num, den) in [(vec![1u8, 0], vec![3u8]), (vec![1], vec![0]), (vec![1], vec![0xFF]), (vec![1], vec![3, 0])]
        {
            let (aux, p) = encode(&num, &den);
            let e = Ext { kind: KIND_FRACTION, start: 64, aux, payload: &p };
            assert!(decode(&e).is_err(), "{num:?}/{den:?}");
        }
    }

    #[test]
    fn floats_and_ints_hash_alike() {
        with(1, 2, |f| assert_eq!((f.exact_f64(), f.key_hash()), (Some(0.5), hash_f64(0.5))));
        with(-7, 1 << 40, |f| assert_eq!(f.key_hash(), hash_f64(-7.0 / (1u64 << 40) as f64)));
        with(5, 1, |f| assert_eq!(f.key_hash(), hash_i64(5)));
        with(1, 3, |f| assert_eq!(f.exact_f64(), None));
        // 54 significant bits: no float holds it.
        with((1 << 53) + 1, 2, |f| assert_eq!(f.exact_f64(), None));
    }

    #[test]
    fn subnormal_fractions_are_exact_floats() {
        // 2^-1074 and 3 * 2^-1074: a denominator of 2^1074.
        let mut den = vec![0u8; 135];
        den[134] = 0x04;
        let (aux, p) = encode(&[1], &den);
        let e = Ext { kind: KIND_FRACTION, start: 64, aux, payload: &p };
        assert_eq!(decode(&e).unwrap().exact_f64(), Some(f64::from_bits(1)));
        let (aux, p) = encode(&[3], &den);
        let e = Ext { kind: KIND_FRACTION, start: 64, aux, payload: &p };
        assert_eq!(decode(&e).unwrap().exact_f64(), Some(f64::from_bits(3)));
        // 2^-1075 is below every float.
        den[134] = 0x08;
        let (aux, p) = encode(&[1], &den);
        let e = Ext { kind: KIND_FRACTION, start: 64, aux, payload: &p };
        assert_eq!(decode(&e).unwrap().exact_f64(), None);
    }

    #[test]
    fn lowest_terms() {
        with(2, 4, |f| assert!(!f.in_lowest_terms()));
        with(-3, 9, |f| assert!(!f.in_lowest_terms()));
        with(0, 1, |f| assert!(f.in_lowest_terms()));
        with(0, 2, |f| assert!(!f.in_lowest_terms()));
        with(-1, 1, |f| assert!(f.in_lowest_terms()));
        let p = 1_000_000_007i128;
        let q = 998_244_353i128;
        with(p * q, q * q, |f| assert!(!f.in_lowest_terms()));
        with(p * p * 3, q * q, |f| assert!(f.in_lowest_terms()));
        // Beyond u128: products of many-limb numbers.
        let big = |parts: &[u64]| {
            let mut x = vec![1u64];
            for &m in parts {
                let mut carry = 0u128;
                for l in x.iter_mut() {
                    let v = *l as u128 * m as u128 + carry;
                    *l = v as u64;
                    carry = v >> 64;
                }
                if carry > 0 {
                    x.push(carry as u64);
                }
            }
            x
        };
        let a = big(&[1_000_000_007, 998_244_353, 1_000_000_009, 999_999_937, 3]);
        let b = big(&[1_000_000_021, 998_244_353, 999_999_929, 7, 11]);
        let c = big(&[1_000_000_021, 999_999_929, 7, 11, 13]);
        assert!(!coprime(&a, &b));
        assert!(coprime(&a, &c));
        assert!(coprime(&c, &a));
    }
}
