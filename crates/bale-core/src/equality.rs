//! Python equality between stored values, possibly of two different buffers.

use crate::error::{FormatError, Result};
use crate::hash::{float_to_int_bytes, hash_value, spend, MAX_KEY_DEPTH};
use crate::reader::{Reader, Value};

enum Num<'a> {
    I(i64),
    Big(&'a [u8]),
    F(f64),
    C(f64, f64),
}

fn as_num<'a>(v: &Value<'a>) -> Option<Num<'a>> {
    Some(match *v {
        Value::Bool(b) => Num::I(b as i64),
        Value::Int(i) => Num::I(i),
        Value::BigInt(b) => Num::Big(b),
        Value::Float(f) => Num::F(f),
        Value::Complex(re, im) => Num::C(re, im),
        _ => return None,
    })
}

fn int_eq_float(i: i64, f: f64) -> bool {
    f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) && f as i64 == i
}

fn num_eq(a: &Num<'_>, b: &Num<'_>) -> bool {
    use Num::*;
    match (a, b) {
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

/// The message of the error `values_eq` gives for values whose equality
/// only Python can decide (records, numpy values, decimals, aware times):
/// callers that hold Python objects compare those instead.
pub const UNDECIDED: &str = "the equality of these values is decided by their Python classes";

fn undecided() -> FormatError {
    FormatError::new(UNDECIDED)
}

/// Whether `v` is a value whose equality `values_eq` leaves to Python.
fn needs_python(v: &Value<'_>) -> bool {
    match v {
        Value::Ext(e) => !crate::typed::hashable_ext(e),
        Value::NdArray(_) | Value::Record(_) => true,
        _ => false,
    }
}

/// Pairs, typed scalars and number lists (the kinds added after the first ones).
#[inline]
fn later_kind(v: &Value<'_>) -> bool {
    matches!(v, Value::Pair(..) | Value::Ext(_) | Value::NumList(_) | Value::Column(_))
}

/// Equality involving a later kind; element pairs still to compare go onto `stack`.
#[inline(never)]
fn eq_later_kinds<'a, 'b>(
    ra: &Reader<'a>,
    a: &Value<'a>,
    rb: &Reader<'b>,
    b: &Value<'b>,
    stack: &mut Vec<(Value<'a>, Value<'b>)>,
) -> Result<bool> {
    Ok(match (a, b) {
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

/// `a == b` with Python semantics (NaN != NaN; identity is not known here).
pub fn values_eq(ra: &Reader<'_>, a: Value<'_>, rb: &Reader<'_>, b: Value<'_>) -> Result<bool> {
    // Valid regions compare in at most one step per word of either side.
    let mut steps = crate::hash::step_budget(ra.buf().len() + rb.buf().len());
    eq_at(ra, a, rb, b, 0, &mut steps)
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
) -> Result<bool> {
    if depth > MAX_KEY_DEPTH {
        return Err(FormatError::new("values nested too deeply to compare"));
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
            _ if needs_python(&a) || needs_python(&b) => return Err(undecided()),
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
                        if rb.find_with(*y, h, |c| eq_at(ra, e, rb, c, depth + 1, steps))?.is_none() {
                            all = false;
                            break;
                        }
                    }
                    all
                }
            }
            (Value::Dict(x), Value::Dict(y)) => {
                if x.len != y.len {
                    false
                } else {
                    let mut all = true;
                    for i in 0..x.len {
                        let k = ra.dict_key(*x, i)?;
                        let h = || hash_value(ra, k, depth + 1);
                        match rb.find_with(y.shape, h, |c| eq_at(ra, k, rb, c, depth + 1, steps))? {
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
