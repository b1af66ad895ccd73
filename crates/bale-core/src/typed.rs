//! Typed scalars: dates, times, datetimes, durations, decimals, UUIDs,
//! ranges and `array.array`s here; fractions (`fraction`) and paths
//! (`path`) in modules of their own. Each is one object whose payload holds no
//! reference, so copying, hashing and comparing one is about its bytes;
//! the checks here make every stored value one its Python type accepts.

use crate::error::{FormatError, Result};
use crate::format::*;

/// A typed scalar as stored: its kind, the `len` field of its header and its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ext<'a> {
    pub kind: u8,
    pub start: usize,
    pub aux: u64,
    pub payload: &'a [u8],
}

/// Whether `kind` is one of the typed scalars of this module.
#[inline]
pub fn is_ext_kind(kind: u8) -> bool {
    (KIND_DATE..=KIND_ARRAY).contains(&kind) || kind == KIND_FRACTION || kind == KIND_PATH
}

/// Payload bytes of a typed scalar with header `len` field `aux`, or why
/// the field is invalid. The result is at most `aux` plus a constant.
pub fn payload_len(kind: u8, aux: u64) -> std::result::Result<usize, &'static str> {
    Ok(match kind {
        KIND_DATE => 0,
        KIND_TIME | KIND_DATETIME => {
            let tz = aux & 3;
            if tz == 3 || aux & 0xF0 != 0 || (tz != TZ_FIXED && aux & TZ_NAMED != 0) || (tz == TZ_NONE && aux >> 8 != 0)
            {
                return Err("bad time zone bits");
            }
            8 + if tz == TZ_FIXED { 8 } else { 0 } + (aux >> 8) as usize
        }
        KIND_TIMEDELTA => 16,
        KIND_DECIMAL => aux as usize,
        KIND_UUID => 16,
        KIND_RANGE => 24,
        KIND_ARRAY => 8 + aux as usize,
        KIND_FRACTION => crate::fraction::payload_len(aux)?,
        KIND_PATH => crate::path::payload_len(aux)?,
        _ => return Err("not a typed scalar"),
    })
}

pub const TZ_NONE: u64 = 0;
pub const TZ_FIXED: u64 = 1;
pub const TZ_ZONE: u64 = 2;
pub const TZ_FOLD: u64 = 4;
pub const TZ_NAMED: u64 = 8;

/// A calendar date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Date {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

/// A time of day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub micro: u32,
}

/// The time zone of a time or datetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tz<'a> {
    Naive,
    /// A fixed offset from UTC, in microseconds, with its name if one was given.
    Fixed {
        offset_us: i64,
        name: Option<&'a str>,
    },
    /// An IANA zone by key (`zoneinfo.ZoneInfo`).
    Zone(&'a str),
}

/// A time or datetime (the date is zero for a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment<'a> {
    pub date: Option<Date>,
    pub clock: Clock,
    pub fold: bool,
    pub tz: Tz<'a>,
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

pub fn pack_date(d: Date) -> u64 {
    d.day as u64 | (d.month as u64) << 5 | (d.year as u64) << 9
}

pub fn unpack_date(aux: u64) -> std::result::Result<Date, &'static str> {
    let d = Date { day: (aux & 31) as u8, month: ((aux >> 5) & 15) as u8, year: (aux >> 9) as u16 };
    if aux >> 23 != 0
        || !(1..=9999).contains(&d.year)
        || !(1..=12).contains(&d.month)
        || d.day == 0
        || d.day > days_in_month(d.year, d.month)
    {
        return Err("invalid date");
    }
    Ok(d)
}

fn pack_clock_word(date: Option<Date>, c: Clock) -> u64 {
    let d = date.map_or(0, pack_date);
    c.micro as u64 | (c.second as u64) << 20 | (c.minute as u64) << 26 | (c.hour as u64) << 32 | d << 37
}

fn unpack_clock_word(w: u64, with_date: bool) -> std::result::Result<(Option<Date>, Clock), &'static str> {
    let c = Clock {
        micro: (w & 0xF_FFFF) as u32,
        second: ((w >> 20) & 63) as u8,
        minute: ((w >> 26) & 63) as u8,
        hour: ((w >> 32) & 31) as u8,
    };
    if c.micro > 999_999 || c.second > 59 || c.minute > 59 || c.hour > 23 {
        return Err("invalid time of day");
    }
    let d = w >> 37;
    if with_date {
        Ok((Some(unpack_date(d)?), c))
    } else if d != 0 {
        Err("a time holds date bits")
    } else {
        Ok((None, c))
    }
}

/// Largest |offset| of a fixed time zone: Python requires strictly less than a day.
const DAY_US: i64 = 86_400_000_000;

/// Header `len` field and payload of a time (`date` None) or datetime.
pub fn encode_moment(m: &Moment<'_>) -> (u64, Vec<u8>) {
    let mut p = pack_clock_word(m.date, m.clock).to_le_bytes().to_vec();
    let mut aux = if m.fold { TZ_FOLD } else { 0 };
    let text = match m.tz {
        Tz::Naive => "",
        Tz::Fixed { offset_us, name } => {
            aux |= TZ_FIXED;
            p.extend_from_slice(&offset_us.to_le_bytes());
            if name.is_some() {
                aux |= TZ_NAMED;
            }
            name.unwrap_or("")
        }
        Tz::Zone(key) => {
            aux |= TZ_ZONE;
            key
        }
    };
    p.extend_from_slice(text.as_bytes());
    (aux | (text.len() as u64) << 8, p)
}

pub fn decode_moment<'a>(e: &Ext<'a>) -> std::result::Result<Moment<'a>, &'static str> {
    let w = u64::from_le_bytes(e.payload[..8].try_into().unwrap());
    let (date, clock) = unpack_clock_word(w, e.kind == KIND_DATETIME)?;
    let fold = e.aux & TZ_FOLD != 0;
    let tz = match e.aux & 3 {
        TZ_NONE => Tz::Naive,
        TZ_FIXED => {
            let offset_us = i64::from_le_bytes(e.payload[8..16].try_into().unwrap());
            if offset_us <= -DAY_US || offset_us >= DAY_US {
                return Err("time zone offset is not within a day");
            }
            let name = std::str::from_utf8(&e.payload[16..]).map_err(|_| "time zone name is not UTF-8")?;
            if e.aux & TZ_NAMED == 0 && !name.is_empty() {
                return Err("unnamed time zone has a name");
            }
            Tz::Fixed { offset_us, name: (e.aux & TZ_NAMED != 0).then_some(name) }
        }
        _ => {
            let key = std::str::from_utf8(&e.payload[8..]).map_err(|_| "time zone key is not UTF-8")?;
            if !zone_key_ok(key) {
                return Err("time zone key is not an IANA key");
            }
            Tz::Zone(key)
        }
    };
    Ok(Moment { date, clock, fold, tz })
}

/// Whether `key` has the form of an IANA time zone key (as `zoneinfo`
/// accepts them): ASCII letters, digits and `/_+-.`, relative, without
/// empty or `..` components.
pub fn zone_key_ok(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 255
        && key.bytes().all(|c| c.is_ascii_alphanumeric() || b"/_+-.".contains(&c))
        && key.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

/// A `timedelta`, normalized as Python keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delta {
    pub days: i32,
    pub seconds: u32,
    pub micros: u32,
}

pub fn encode_delta(d: Delta) -> Vec<u8> {
    let mut p = (d.days as i64).to_le_bytes().to_vec();
    p.extend_from_slice(&d.seconds.to_le_bytes());
    p.extend_from_slice(&d.micros.to_le_bytes());
    p
}

pub fn decode_delta(e: &Ext<'_>) -> std::result::Result<Delta, &'static str> {
    let days = i64::from_le_bytes(e.payload[..8].try_into().unwrap());
    let seconds = u32::from_le_bytes(e.payload[8..12].try_into().unwrap());
    let micros = u32::from_le_bytes(e.payload[12..16].try_into().unwrap());
    if !(-999_999_999..=999_999_999).contains(&days) || seconds >= 86_400 || micros >= 1_000_000 {
        return Err("timedelta fields out of range");
    }
    Ok(Delta { days: days as i32, seconds, micros })
}

/// Whether `s` is a decimal as `str(decimal.Decimal)` writes it.
pub fn decimal_text_ok(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"-").unwrap_or(s);
    let digits = |t: &[u8]| t.iter().all(u8::is_ascii_digit);
    if s == b"Infinity" {
        return true;
    }
    if let Some(payload) = s.strip_prefix(b"sNaN").or_else(|| s.strip_prefix(b"NaN")) {
        return digits(payload);
    }
    let (coef, exp) = match s.iter().position(|&c| c == b'E') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match coef.iter().position(|&c| c == b'.') {
        Some(i) => (&coef[..i], Some(&coef[i + 1..])),
        None => (coef, None),
    };
    let exp_ok = match exp {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(b"+").or_else(|| e.strip_prefix(b"-")).unwrap_or(b"");
            !e.is_empty() && digits(e)
        }
    };
    !int.is_empty() && digits(int) && frac.is_none_or(|f| !f.is_empty() && digits(f)) && exp_ok
}

/// `range(start, stop, step)` with 64-bit bounds.
pub fn decode_range(e: &Ext<'_>) -> std::result::Result<(i64, i64, i64), &'static str> {
    let w = |i: usize| i64::from_le_bytes(e.payload[8 * i..8 * i + 8].try_into().unwrap());
    let (start, stop, step) = (w(0), w(1), w(2));
    if step == 0 {
        return Err("range step is zero");
    }
    Ok((start, stop, step))
}

/// Item size of each `array.array` type code on this platform (LP64).
pub fn array_itemsize(code: u8) -> Option<usize> {
    Some(match code {
        b'b' | b'B' => 1,
        b'h' | b'H' => 2,
        b'i' | b'I' | b'f' | b'w' => 4,
        b'u' => std::mem::size_of::<libc_wchar>(),
        b'l' | b'L' | b'q' | b'Q' | b'd' => 8,
        _ => return None,
    })
}

#[cfg(windows)]
type libc_wchar = u16;
#[cfg(not(windows))]
#[allow(non_camel_case_types)]
type libc_wchar = u32;

/// An `array.array`: its type code and its items' bytes.
pub fn decode_array<'a>(e: &Ext<'a>) -> std::result::Result<(u8, &'a [u8]), &'static str> {
    let (code, size) = (e.payload[0], e.payload[1] as usize);
    if e.payload[2..8].iter().any(|&b| b != 0) {
        return Err("array header bytes are not zero");
    }
    match array_itemsize(code) {
        Some(s) if s == size => {}
        Some(_) => return Err("array item size does not match its type code on this platform"),
        None => return Err("unknown array type code"),
    }
    let data = &e.payload[8..];
    if !data.len().is_multiple_of(size) {
        return Err("array bytes are not a whole number of items");
    }
    Ok((code, data))
}

/// Checks everything a typed scalar's bytes must satisfy.
pub fn check(e: &Ext<'_>) -> Result<()> {
    let r = match e.kind {
        KIND_DATE => unpack_date(e.aux).map(|_| ()),
        KIND_TIME | KIND_DATETIME => decode_moment(e).map(|_| ()),
        // Their length field is 0: it is hashed and compared with the payload.
        KIND_TIMEDELTA | KIND_UUID | KIND_RANGE if e.aux != 0 => Err("length field is not 0"),
        KIND_TIMEDELTA => decode_delta(e).map(|_| ()),
        KIND_DECIMAL => {
            if decimal_text_ok(e.payload) {
                Ok(())
            } else {
                Err("decimal text is malformed")
            }
        }
        KIND_UUID => Ok(()),
        KIND_RANGE => decode_range(e).map(|_| ()),
        KIND_ARRAY => decode_array(e).map(|_| ()),
        KIND_FRACTION => crate::fraction::decode(e).map(|_| ()),
        KIND_PATH => crate::path::decode(e).map(|_| ()),
        _ => Err("not a typed scalar"),
    };
    r.map_err(|m| FormatError::at(e.start, format!("{} object: {m}", kind_name(e.kind))))
}

/// The Python type name of a kind, for messages.
pub fn kind_name(kind: u8) -> &'static str {
    match kind {
        KIND_DATE => "date",
        KIND_TIME => "time",
        KIND_DATETIME => "datetime",
        KIND_TIMEDELTA => "timedelta",
        KIND_DECIMAL => "Decimal",
        KIND_UUID => "UUID",
        KIND_RANGE => "range",
        KIND_ARRAY => "array",
        KIND_NDARRAY => "ndarray",
        KIND_FRACTION => "Fraction",
        KIND_PATH => "path",
        _ => "object",
    }
}

/// The header field of a typed scalar as equality and the key hash see
/// it: Python ignores `fold` when it compares naive times and datetimes
/// (`datetime(2021, 1, 1, 1, 30) == datetime(2021, 1, 1, 1, 30, fold=1)`),
/// so their fold bit is cleared. Aware values are not keys, and are
/// compared by Python.
pub fn equality_aux(e: &Ext<'_>) -> u64 {
    match e.kind {
        KIND_TIME | KIND_DATETIME if e.aux & 3 == TZ_NONE => e.aux & !TZ_FOLD,
        KIND_PATH => crate::path::equality_aux(e.aux),
        _ => e.aux,
    }
}

/// Whether a typed scalar may be a dict key or set element: those whose
/// Python equality is equality of their stored bytes (of their numbers,
/// for fractions).
pub fn hashable_ext(e: &Ext<'_>) -> bool {
    match e.kind {
        KIND_DATE | KIND_TIMEDELTA | KIND_UUID => true,
        KIND_TIME | KIND_DATETIME => e.aux & 3 == TZ_NONE,
        KIND_PATH => crate::path::is_posix(e.aux & 0xFF),
        KIND_FRACTION => crate::fraction::decode(e).is_ok_and(|f| f.is_key()),
        _ => false,
    }
}

/// The Python class name of a typed scalar, for messages.
pub fn class_name(e: &Ext<'_>) -> &'static str {
    match e.kind {
        KIND_PATH => crate::path::class_name(e.aux & 0xFF),
        k => kind_name(k),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_texts() {
        for ok in [
            "0",
            "-0",
            "1.5",
            "1E+5",
            "1.23E-7",
            "Infinity",
            "-Infinity",
            "NaN",
            "NaN123",
            "-sNaN",
            "0E-7",
            "12345678901234567890.5",
        ] {
            assert!(decimal_text_ok(ok.as_bytes()), "{ok}");
        }
        for bad in ["", "-", ".5", "5.", "1e5", "1E", "1E+", "inf", "NaNx", "1_000", " 1", "+1", "1.2.3"] {
            assert!(!decimal_text_ok(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn dates_round_trip_and_refuse_impossible_days() {
        let d = Date { year: 2024, month: 2, day: 29 };
        assert_eq!(unpack_date(pack_date(d)).unwrap(), d);
        assert!(unpack_date(pack_date(Date { year: 2023, month: 2, day: 29 })).is_err());
        assert!(unpack_date(pack_date(Date { year: 0, month: 1, day: 1 })).is_err());
        assert!(unpack_date(1 << 23).is_err());
    }

    #[test]
    fn moments_round_trip() {
        let m = Moment {
            date: Some(Date { year: 2021, month: 11, day: 7 }),
            clock: Clock { hour: 1, minute: 30, second: 0, micro: 999_999 },
            fold: true,
            tz: Tz::Zone("America/New_York"),
        };
        let (aux, p) = encode_moment(&m);
        let e = Ext { kind: KIND_DATETIME, start: 64, aux, payload: &p };
        assert_eq!(payload_len(KIND_DATETIME, aux).unwrap(), p.len());
        assert_eq!(decode_moment(&e).unwrap(), m);
        let t = Moment {
            date: None,
            clock: m.clock,
            fold: false,
            tz: Tz::Fixed { offset_us: -3_600_000_000, name: Some("X") },
        };
        let (aux, p) = encode_moment(&t);
        let e = Ext { kind: KIND_TIME, start: 64, aux, payload: &p };
        assert_eq!(decode_moment(&e).unwrap(), t);
    }
}
