//! Python equality between stored values, possibly of two different buffers.

use crate::error::{FormatError, Result};
use crate::hash::{float_to_int_bytes, hash_value, spend, MAX_KEY_DEPTH};
use crate::reader::{Reader, Value};

enum Num<'a> {
    I(i64),
    Big(&'a [u8]),
    F(f64),
    C(f64, f64),
    /// A fraction small enough to be a number (`fraction::KEY_PART_BYTES`).
    Q(crate::fraction::Fraction<'a>),
}

fn as_num<'a>(v: &Value<'a>) -> Option<Num<'a>> {
    Some(match *v {
        Value::Bool(b) => Num::I(b as i64),
        Value::Int(i) => Num::I(i),
        Value::BigInt(b) => Num::Big(b),
        Value::Float(f) => Num::F(f),
        Value::Complex(re, im) => Num::C(re, im),
        Value::Ext(ref e) if e.kind == crate::format::KIND_FRACTION => {
            Num::Q(crate::fraction::decode(e).ok().filter(|f| f.is_key())?)
        }
        _ => return None,
    })
}

fn int_eq_float(i: i64, f: f64) -> bool {
    f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) && f as i64 == i
}

fn num_eq(a: &Num<'_>, b: &Num<'_>) -> bool {
    use Num::*;
    match (a, b) {
        (Q(f), other) | (other, Q(f)) => {
            if f.is_integer() {
                let n = match crate::fraction::int_of(f.num) {
                    crate::fraction::Int::Small(i) => I(i),
                    crate::fraction::Int::Big(b) => Big(b),
                };
                return num_eq(&n, other);
            }
            match other {
                Q(g) => f == g,
                F(x) => f.exact_f64() == Some(*x),
                C(r, i) => *i == 0.0 && f.exact_f64() == Some(*r),
                I(_) | Big(_) => false,
            }
        }
        (I(x), I(y)) => x == y,
        (Big(x), Big(y)) => x == y,
        (I(_), Big(_)) | (Big(_), I(_)) => false,
        (F(x), F(y)) => x == y,
        (I(i), F(f)) | (F(f), I(i)) => int_eq_float(*i, *f),
        (Big(b), F(f)) | (F(f), Big(b)) => {
            f.fract() == 0.0 && f.is_finite() && f.abs() >= 9.223_372_036_854_776e18 && float_to_int_bytes(*f) == *b
        }
        (C(r1, i1), C(r2, i2)) => r1 == r2 && i1 == i2,
        (C(r, i), other) | (other, C(r, i)) => *i == 0.0 && num_eq(&F(*r), other),
    }
}

/// Why a comparison stopped without an answer: malformed bytes, or a
/// value whose equality only its Python class decides (records, numpy
/// values, decimals, aware times, Windows paths, counters), which a caller
/// that holds Python objects compares instead (`compare` gives `None`).
enum Stop {
    Format(FormatError),
    Undecided,
}

impl From<FormatError> for Stop {
    fn from(e: FormatError) -> Self {
        Stop::Format(e)
    }
}

type Compared<T> = std::result::Result<T, Stop>;

/// Keys and set elements are hashable values, whose equality the bytes
/// decide; a value that is not one stands there only in malformed bytes.
fn key_eq(r: Compared<bool>) -> Result<bool> {
    match r {
        Ok(b) => Ok(b),
        Err(Stop::Format(e)) => Err(e),
        Err(Stop::Undecided) => Err(FormatError::new("a key or set element is of a kind that is not stored as a key")),
    }
}

/// Whether `v` is a value whose equality `values_eq` leaves to Python.
fn needs_python(v: &Value<'_>) -> bool {
    match v {
        Value::Ext(e) => !crate::typed::hashable_ext(e),
        // Only the store can read what it names.
        Value::NdArray(_) | Value::Record(_) | Value::Extern(_) => true,
        _ => false,
    }
}

/// Pairs, typed scalars and number lists (the kinds added after the first ones).
#[inline]
fn later_kind(v: &Value<'_>) -> bool {
    matches!(v, Value::Pair(..) | Value::Ext(_) | Value::NumList(_) | Value::Column(_))
}

fn is_fraction(v: &Value<'_>) -> bool {
    matches!(v, Value::Ext(e) if e.kind == crate::format::KIND_FRACTION)
}

/// Equality involving a later kind; element pairs still to compare go onto `stack`.
#[inline(never)]
fn eq_later_kinds<'a, 'b>(
    ra: &Reader<'a>,
    a: &Value<'a>,
    rb: &Reader<'b>,
    b: &Value<'b>,
    stack: &mut Vec<(Value<'a>, Value<'b>)>,
) -> Compared<bool> {
    Ok(match (a, b) {
        // A fraction is a number: it equals ints, floats and complexes.
        (x, y) if is_fraction(x) || is_fraction(y) => {
            matches!((as_num(x), as_num(y)), (Some(p), Some(q)) if num_eq(&p, &q))
        }
        (Value::Pair(a, b), Value::Pair(c, d)) => a == c && b == d,
        (Value::Pair(a, b), Value::Tuple(y)) if y.len == 2 => {
            stack.push((Value::Int(*b), rb.seq_item(*y, 1)?));
            stack.push((Value::Int(*a), rb.seq_item(*y, 0)?));
            true
        }
        (Value::Tuple(x), Value::Pair(c, d)) if x.len == 2 => {
            stack.push((ra.seq_item(*x, 1)?, Value::Int(*d)));
            stack.push((ra.seq_item(*x, 0)?, Value::Int(*c)));
            true
        }
        (Value::Ext(x), Value::Ext(y)) => {
            x.kind == y.kind && crate::typed::equality_aux(x) == crate::typed::equality_aux(y) && x.payload == y.payload
        }
        (Value::NumList(x), Value::NumList(y)) if x.len == y.len => {
            for i in (0..x.len).rev() {
                stack.push((ra.num_item(*x, i)?, rb.num_item(*y, i)?));
            }
            true
        }
        (Value::NumList(x), Value::List(y)) if x.len == y.len => {
            for i in (0..x.len).rev() {
                stack.push((ra.num_item(*x, i)?, rb.seq_item(*y, i)?));
            }
            true
        }
        (Value::List(x), Value::NumList(y)) if x.len == y.len => {
            for i in (0..x.len).rev() {
                stack.push((ra.seq_item(*x, i)?, rb.num_item(*y, i)?));
            }
            true
        }
        // Columnar lists against any list form, item by item.
        (
            Value::Column(_) | Value::List(_) | Value::NumList(_),
            Value::Column(_) | Value::List(_) | Value::NumList(_),
        ) => {
            let n = ra.list_len(a).unwrap_or(0);
            if rb.list_len(b) != Some(n) {
                return Ok(false);
            }
            for i in (0..n).rev() {
                stack.push((ra.list_item(*a, i)?, rb.list_item(*b, i)?));
            }
            true
        }
        _ => false,
    })
}

/// `a == b` with Python semantics (NaN != NaN; identity is not known
/// here), for values whose bytes decide it: keys, set elements, and any
/// value without records, numpy values or the other kinds `compare`
/// leaves to Python (an error names that case).
pub fn values_eq(ra: &Reader<'_>, a: Value<'_>, rb: &Reader<'_>, b: Value<'_>) -> Result<bool> {
    match compare(ra, a, rb, b)? {
        Some(same) => Ok(same),
        None => Err(FormatError::new("the equality of these values is decided by their Python classes")),
    }
}

/// `a == b` with Python semantics, or `None` when only the values' Python
/// classes can decide it (see `Stop`).
pub fn compare(ra: &Reader<'_>, a: Value<'_>, rb: &Reader<'_>, b: Value<'_>) -> Result<Option<bool>> {
    // Valid regions compare in at most one step per word of either side.
    let mut steps = crate::hash::step_budget(ra.buf().len() + rb.buf().len());
    match eq_at(ra, a, rb, b, 0, &mut steps) {
        Ok(same) => Ok(Some(same)),
        Err(Stop::Undecided) => Ok(None),
        Err(Stop::Format(e)) => Err(e),
    }
}

/// The same stored container (same buffer, same place): equal without a walk.
fn same_place(ra: &Reader<'_>, a: &Value<'_>, rb: &Reader<'_>, b: &Value<'_>) -> bool {
    if ra.buf().as_ptr() != rb.buf().as_ptr() {
        return false;
    }
    match (a, b) {
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => x == y && x.len > 0,
        (Value::Dict(x), Value::Dict(y)) => x == y,
        (Value::NumList(x), Value::NumList(y)) => x == y,
        (Value::Column(x), Value::Column(y)) => x == y,
        (Value::Set(x), Value::Set(y)) | (Value::FrozenSet(x), Value::FrozenSet(y)) => x == y,
        _ => false,
    }
}

fn eq_at(
    ra: &Reader<'_>,
    a: Value<'_>,
    rb: &Reader<'_>,
    b: Value<'_>,
    depth: usize,
    steps: &mut usize,
) -> Compared<bool> {
    if depth > MAX_KEY_DEPTH {
        return Err(FormatError::new("values nested too deeply to compare").into());
    }
    // Sequences are compared with an explicit stack: they may nest a million deep.
    let mut stack = vec![(a, b)];
    while let Some((a, b)) = stack.pop() {
        spend(steps)?;
        // Like Python's `x is y` shortcut: a stored container equals itself.
        if same_place(ra, &a, rb, &b) {
            continue;
        }
        let same = match (&a, &b) {
            (Value::None, Value::None) => true,
            (Value::Str(x), Value::Str(y)) => x.width == y.width && x.len == y.len && x.units() == y.units(),
            (Value::Bytes(x), Value::Bytes(y)) => x == y,
            _ if needs_python(&a) || needs_python(&b) => return Err(Stop::Undecided),
            // Kept out of line: this function recurses per level of nested
            // sets, so its frame must stay small.
            _ if later_kind(&a) || later_kind(&b) => eq_later_kinds(ra, &a, rb, &b, &mut stack)?,
            (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => {
                if x.len != y.len {
                    false
                } else {
                    for i in (0..x.len).rev() {
                        stack.push((ra.seq_item(*x, i)?, rb.seq_item(*y, i)?));
                    }
                    true
                }
            }
            (Value::Set(x) | Value::FrozenSet(x), Value::Set(y) | Value::FrozenSet(y)) => {
                if x.len != y.len {
                    false
                } else {
                    let mut all = true;
                    for i in 0..x.len {
                        let e = ra.table_item(*x, i)?;
                        let h = || hash_value(ra, e, depth + 1);
                        if rb.find_with(*y, h, |c| key_eq(eq_at(ra, e, rb, c, depth + 1, steps)))?.is_none() {
                            all = false;
                            break;
                        }
                    }
                    all
                }
            }
            (Value::Dict(x), Value::Dict(y)) => {
                use crate::dict_class::{COUNTER, ORDERED};
                let (cx, cy) = (x.class & 0xFF, y.class & 0xFF);
                // Counters compare missing keys as zero counts (3.10+): Python's call.
                if cx == COUNTER && cy == COUNTER {
                    return Err(Stop::Undecided);
                }
                // Two OrderedDicts compare their order too.
                let ordered = cx == ORDERED && cy == ORDERED;
                if x.len != y.len {
                    false
                } else {
                    let mut all = true;
                    for i in 0..x.len {
                        let k = ra.dict_key(*x, i)?;
                        let h = || hash_value(ra, k, depth + 1);
                        match rb.dict_find_with(*y, h, |c| key_eq(eq_at(ra, k, rb, c, depth + 1, steps)))? {
                            Some(j) if ordered && j != i => {
                                all = false;
                                break;
                            }
                            Some(j) => stack.push((ra.dict_value(*x, i)?, rb.dict_value(*y, j)?)),
                            None => {
                                all = false;
                                break;
                            }
                        }
                    }
                    all
                }
            }
            _ => match (as_num(&a), as_num(&b)) {
                (Some(x), Some(y)) => num_eq(&x, &y),
                _ => false,
            },
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}
