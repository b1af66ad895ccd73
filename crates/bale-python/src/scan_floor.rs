//! `_bale._read_every_value(records)`: what a scan of records through views
//! costs below the Python loop, for `benchmarks/bench_sweep.py`.
//!
//! A scan through views (`for rec in d: for v in rec.values()`) makes a new
//! object for each value it reads (an int, a float, a str, or a view of a
//! container), where a scan of native objects hands out the objects the
//! dicts already hold. This reads every value of every record the way a
//! view does (`DictIterator::__next__`'s calls), makes its object
//! and drops it, with no Python loop, no row view and no iterator. The
//! sweep's *bound* column adds the time of the same Python loop over a
//! skeleton of the records (`bench_sweep.skeleton`): a scan through views
//! runs that loop and makes these values. Where a scan's figure still
//! comes under that bound, this call made the values more slowly than the
//! views' iterators, and the sweep does not count the bound as a floor.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use bale_core::Value;

use crate::errors::format_error;
use crate::views::{read_to_py, view_parts, Node};

/// Reads (and makes, then drops) every value of every record of `records`,
/// a list or tuple view of dicts; returns how many values it read. With
/// `deep`, reads every value of every list, tuple, number list and dict
/// reachable from `records` (any view) instead, as `bench_sweep.walk_deep`
/// does, and returns how many were not containers.
#[pyfunction]
#[pyo3(signature = (records, deep = false))]
pub fn _read_every_value(py: Python<'_>, records: &Bound<'_, PyAny>, deep: bool) -> PyResult<usize> {
    if deep {
        return read_deep(py, records);
    }
    let (region, items) = match view_parts(records) {
        Some((region, Node::List(items) | Node::Tuple(items))) => (region, items),
        _ => return Err(PyTypeError::new_err("_read_every_value() takes a list or tuple view of dicts")),
    };
    let reg = region.get();
    let r = reg.reader();
    let mut n = 0;
    for i in 0..items.len() {
        let Value::Dict(d) = items.get(&r, i).map_err(format_error)? else {
            return Err(PyTypeError::new_err(format!("_read_every_value(): item {i} is not a dict")));
        };
        // As `DictIterator::__next__` reads them.
        for j in 0..d.len {
            drop(match d.row {
                Some(row) => crate::rows::row_value_to_py(py, &region, d, row, j)?,
                None => read_to_py(py, &region, r.dict_value(d, j))?,
            });
            n += 1;
        }
    }
    Ok(n)
}

/// Every value under the view `root`, each made and dropped, containers
/// (lists, tuples, number lists, dicts) then opened; other values counted.
fn read_deep(py: Python<'_>, root: &Bound<'_, PyAny>) -> PyResult<usize> {
    let Some((region, node)) = view_parts(root) else {
        return Err(PyTypeError::new_err("_read_every_value() takes a view"));
    };
    let reg = region.get();
    let r = reg.reader();
    // A walk to every value never ends in a cycle, and crafted sharing
    // could make it expand without end: both refused before it starts.
    if r.cyclic() {
        return Err(PyValueError::new_err("_read_every_value(): the region holds cycles (share=True)"));
    }
    crate::views::check_expansion_of(reg, node.value())?;
    let mut stack = Vec::new();
    let mut n = 0;
    keep_if_container(node.value(), &mut stack, &mut n);
    // Only containers go on the stack: a scalar is made, dropped and
    // counted where it is read (a `Value` pushed and popped per scalar
    // cost more than the views' walk pays to make it).
    while let Some(v) = stack.pop() {
        match v {
            Value::List(s) | Value::Tuple(s) => {
                for i in 0..s.len {
                    made(py, &region, r.seq_item(s, i), &mut stack, &mut n)?;
                }
            }
            Value::Column(c) => {
                for i in 0..c.len {
                    made(py, &region, r.column_item(c, i), &mut stack, &mut n)?;
                }
            }
            Value::NumList(l) => {
                for i in 0..l.len {
                    let item = r.num_item(l, i).map_err(format_error)?;
                    drop(crate::views::value_to_py(py, &region, &item)?);
                    n += 1;
                }
            }
            Value::Dict(d) => {
                for j in 0..d.len {
                    made(py, &region, crate::rows::dict_value(py, reg, &r, d, j), &mut stack, &mut n)?;
                }
            }
            _ => unreachable!("only containers are kept"),
        }
    }
    Ok(n)
}

/// Keeps `v` to be opened when it is a container; otherwise counts it (a
/// tuple of two small ints held in its slot as the two scalars its tuple holds).
#[inline(always)]
fn keep_if_container<'a>(v: Value<'a>, stack: &mut Vec<Value<'a>>, n: &mut usize) {
    match v {
        Value::List(_) | Value::Tuple(_) | Value::Column(_) | Value::NumList(_) | Value::Dict(_) => stack.push(v),
        Value::Pair(..) => *n += 2,
        _ => *n += 1,
    }
}

/// Makes and drops `read`'s object (a view, for a container), then keeps
/// the value to be opened or counts it (`keep_if_container`). Inlined, so
/// that the 88-byte `Value` is not returned and moved again for every
/// scalar: that copy, not the views' work, took a third of this call's time.
#[inline(always)]
fn made<'a>(
    py: Python<'_>,
    region: &Py<crate::region::Region>,
    read: bale_core::Result<Value<'a>>,
    stack: &mut Vec<Value<'a>>,
    n: &mut usize,
) -> PyResult<()> {
    let v = read.map_err(format_error)?;
    drop(crate::views::value_to_py(py, region, &v)?);
    keep_if_container(v, stack, n);
    Ok(())
}
