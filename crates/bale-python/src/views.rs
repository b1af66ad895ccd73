//! Read-only views of containers inside a region. A view is a region handle
//! plus the position of its container; every access decodes from the bytes.

use std::sync::atomic::{AtomicUsize, Ordering};

use bale_core::hash::{hash_i64, hash_value};
use bale_core::{values_eq, Column, ColumnKind, Dict, NumList, Reader, Record, Seq, Table, Value};
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyIndexError, PyKeyError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PySlice, PyTuple, PyType};

use crate::alloc::{fast_new, new_object};
use crate::compactor::compact_scratch;
use crate::convert::{owned, scalar};
use crate::errors::{format_error, CompactError};
use crate::ffi::pyunicode::str_units;
use crate::region::Region;

/// The items of a list or tuple view: slots, or a columnar list (a
/// table's rows, a string column's strings, a list column's lists).
#[derive(Clone, Copy, Debug)]
pub enum Items {
    Slots(Seq),
    Column(Column),
}

impl Items {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Items::Slots(s) => s.len,
            Items::Column(c) => c.len,
        }
    }
    /// Item `i` (below `len`).
    #[inline]
    pub fn get<'a>(&self, r: &Reader<'a>, i: usize) -> bale_core::Result<Value<'a>> {
        match *self {
            Items::Slots(s) => r.seq_item(s, i),
            Items::Column(c) => r.column_item(c, i),
        }
    }
}

/// A container inside a region, without the region.
#[derive(Clone, Copy, Debug)]
pub enum Node {
    List(Items),
    Tuple(Items),
    Set(Table),
    FrozenSet(Table),
    Dict(Dict),
    NumList(NumList),
    Record(Record),
}

impl Node {
    pub fn value<'a>(self) -> Value<'a> {
        match self {
            Node::List(Items::Slots(s)) => Value::List(s),
            Node::List(Items::Column(c)) | Node::Tuple(Items::Column(c)) => Value::Column(c),
            Node::Tuple(Items::Slots(s)) => Value::Tuple(s),
            Node::Set(t) => Value::Set(t),
            Node::FrozenSet(t) => Value::FrozenSet(t),
            Node::Dict(d) => Value::Dict(d),
            Node::NumList(l) => Value::NumList(l),
            Node::Record(r) => Value::Record(r),
        }
    }
}

/// A stored value as a Python object: scalars become natives, containers views.
#[inline]
pub fn value_to_py(py: Python<'_>, region: &Py<Region>, v: &Value<'_>) -> PyResult<Py<PyAny>> {
    unsafe {
        if let Some(p) = scalar(py, v) {
            return owned(py, p?);
        }
    }
    let region = region.clone_ref(py);
    Ok(match *v {
        Value::List(seq) => new_object(py, ListView { region, seq: Items::Slots(seq) })?.into_any(),
        Value::Column(col) => new_object(py, ListView { region, seq: Items::Column(col) })?.into_any(),
        Value::Tuple(seq) => new_object(py, TupleView { region, seq: Items::Slots(seq) })?.into_any(),
        Value::Dict(dict) => new_object(py, DictView { region, dict })?.into_any(),
        Value::Set(table) => new_object(py, SetView { region, table })?.into_any(),
        Value::FrozenSet(table) => new_object(py, FrozenSetView { region, table })?.into_any(),
        Value::NumList(list) => untracked(Py::new(py, crate::number_list::NumberListView { region, list })?).into_any(),
        Value::Record(rec) => crate::record_view::record_to_py(py, region, rec)?,
        Value::NdArray(a) => crate::typed::ndarray_to_py(py, region.bind(py).as_any(), &a, false)?,
        Value::Extern(x) => return extern_to_py(py, region.get(), &x),
        _ => unreachable!("scalars are handled above"),
    })
}

/// The view of the dict or list in another segment of a store that an
/// EXTERN object names (`resolve_extern` allows nothing else).
#[cold]
fn extern_to_py(py: Python<'_>, region: &Region, x: &bale_core::Extern) -> PyResult<Py<PyAny>> {
    let target = crate::new_region(py, region.resolve_extern(x)?)?;
    let v = target.get().root_value()?;
    value_to_py(py, &target, &v)
}

/// A value just read (or the error reading it) as a Python object. The
/// value is matched where it lies: moving a `Value` that was just written
/// costs a store-forwarding stall per move, more than the rest of a read.
#[inline(always)]
pub fn read_to_py(py: Python<'_>, region: &Py<Region>, read: bale_core::Result<Value<'_>>) -> PyResult<Py<PyAny>> {
    match read {
        Ok(ref v) => value_to_py(py, region, v),
        Err(e) => Err(format_error(e)),
    }
}

/// Takes a new object out of the cyclic GC's lists. Regions, views and
/// iterators only reference their region (and a region only its exporter),
/// so they can never be part of a cycle, and the GC need not scan them.
#[inline]
pub fn untracked<T>(obj: Py<T>) -> Py<T> {
    unsafe { ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
    obj
}

/// The region and node of a view object, if `obj` is one.
pub fn view_parts(obj: &Bound<'_, PyAny>) -> Option<(Py<Region>, Node)> {
    if let Ok(v) = obj.cast::<ListView>() {
        let v = v.get();
        return Some((v.region.clone_ref(obj.py()), Node::List(v.seq)));
    }
    if let Ok(v) = obj.cast::<TupleView>() {
        let v = v.get();
        return Some((v.region.clone_ref(obj.py()), Node::Tuple(v.seq)));
    }
    if let Ok(v) = obj.cast::<DictView>() {
        let v = v.get();
        return Some((v.region.clone_ref(obj.py()), Node::Dict(v.dict)));
    }
    if let Ok(v) = obj.cast::<SetView>() {
        let v = v.get();
        return Some((v.region.clone_ref(obj.py()), Node::Set(v.table)));
    }
    if let Ok(v) = obj.cast::<FrozenSetView>() {
        let v = v.get();
        return Some((v.region.clone_ref(obj.py()), Node::FrozenSet(v.table)));
    }
    if let Ok(v) = obj.cast::<crate::number_list::NumberListView>() {
        let v = v.get();
        return Some((v.region.clone_ref(obj.py()), Node::NumList(v.list)));
    }
    if let Ok(v) = obj.cast::<crate::record_view::RecordView>() {
        let v = v.get();
        return Some((v.region.clone_ref(obj.py()), Node::Record(v.rec)));
    }
    None
}

/// Runs `f` on `obj` as a stored value: a view as it is, a native value
/// compacted into a scratch buffer. `Ok(None)` when `obj` cannot be compacted.
pub fn with_stored<R>(
    obj: &Bound<'_, PyAny>,
    f: impl FnOnce(&Reader<'_>, Value<'_>) -> PyResult<R>,
) -> PyResult<Option<R>> {
    let py = obj.py();
    if let Some((region, node)) = view_parts(obj) {
        let r = region.get().reader();
        return f(&r, node.value()).map(Some);
    }
    match compact_scratch(py, obj) {
        Ok((bytes, slot)) => {
            let r = Reader::new(&bytes);
            let v = r.decode(slot, bytes.len()).map_err(format_error)?;
            f(&r, v).map(Some)
        }
        Err(e) if e.is_instance_of::<CompactError>(py) => Ok(None),
        Err(e) => Err(e),
    }
}

fn unhashable(obj: &Bound<'_, PyAny>) -> PyErr {
    let name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("unhashable type: '{name}'"))
}

/// Position of `key` in `table` under Python equality. A miss in a region
/// that is neither written here nor verified is believed only once the
/// table's index has been checked (`Region::check_index_once`).
pub fn find_in(region: &Region, table: Table, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let found = find_by_index(region, table, key)?;
    if found.is_none() {
        region.check_index_once(table)?;
    }
    Ok(found)
}

/// The place of `key` among `d`'s keys (see `find_in`).
pub fn find_in_dict(region: &Region, d: Dict, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    Ok(region.reader().dict_place(d, find_in(region, d.shape, key)?))
}

fn find_by_index(region: &Region, table: Table, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let r = region.reader();
    unsafe {
        let p = key.as_ptr();
        if ffi::PyUnicode_CheckExact(p) != 0 {
            let (width, units) = str_units(p);
            return r.find_str(table, width, units).map_err(format_error);
        }
        if ffi::PyLong_CheckExact(p) != 0 {
            let mut overflow = 0;
            let i = ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow);
            if overflow == 0 {
                let empty = Reader::new(&[]);
                return r
                    .find_with(table, || Ok(hash_i64(i)), |v| values_eq(&empty, Value::Int(i), &r, v))
                    .map_err(format_error);
            }
        }
    }
    let found = with_stored(key, |kr, kv| {
        // Keys bale does not hash (decimals, records, ...) are found by Python equality.
        let Ok(h) = hash_value(kr, kv, 0) else {
            return Ok(None);
        };
        r.find(table, h, |v| values_eq(kr, kv, &r, v)).map_err(format_error).map(Some)
    })?;
    match found {
        Some(Some(f)) => Ok(f),
        Some(None) => {
            // Only "unhashable" is a TypeError here: a FormatError or a
            // RecursionError from hashing a view goes through as it is.
            key.hash().map_err(|e| if e.is_instance_of::<PyTypeError>(key.py()) { unhashable(key) } else { e })?;
            let py = key.py();
            for i in 0..table.len {
                let k = crate::thawing::thaw_value(py, region, r.table_item(table, i).map_err(format_error)?)?;
                if k.bind(py).eq(key)? {
                    return Ok(Some(i));
                }
            }
            Ok(None)
        }
        None => {
            key.hash()?;
            Ok(None)
        }
    }
}

/// `x == element` for `in`, `index` and `count` on sequences.
fn elements_matching(
    py: Python<'_>,
    region: &Py<Region>,
    seq: Items,
    x: &Bound<'_, PyAny>,
    start: usize,
    stop: usize,
    first_only: bool,
) -> PyResult<(usize, Option<usize>)> {
    let reg = region.get();
    let r = reg.reader();
    let stop = stop.min(seq.len());
    let result = with_stored(x, |xr, xv| {
        let mut count = 0;
        let mut first = None;
        for i in start..stop {
            let e = seq.get(&r, i).map_err(format_error)?;
            let Some(eq) = decided(xr, xv, &r, e)? else {
                return Ok(None);
            };
            if eq {
                count += 1;
                first.get_or_insert(i);
                if first_only {
                    break;
                }
            }
        }
        Ok(Some((count, first)))
    })?;
    if let Some(Some(res)) = result {
        return Ok(res);
    }
    // Not representable in a region: let Python equality decide.
    let mut count = 0;
    let mut first = None;
    for i in start..stop {
        let e = read_to_py(py, region, seq.get(&r, i))?;
        if e.bind(py).eq(x)? {
            count += 1;
            first.get_or_insert(i);
            if first_only {
                break;
            }
        }
    }
    Ok((count, first))
}

/// The native copy that repr, hash, ordering and set operators delegate to.
/// A region with shared containers is first checked to expand to no more
/// elements than it has words: Python walks the copy without a memo, so
/// crafted sharing must not turn these into an exponential walk.
fn thawed(py: Python<'_>, region: &Py<Region>, node: Node) -> PyResult<Py<PyAny>> {
    let reg = region.get();
    check_expansion_of(reg, node.value())?;
    // Python's hash of nested tuples recurses with no depth check: a copy
    // deeper than the recursion limit would overflow the C stack there, so
    // it is refused here with the error Python's guarded walks raise.
    let limit = unsafe { ffi::Py_GetRecursionLimit() }.max(1) as usize;
    crate::thawing::thaw_bounded(py, reg, node.value(), None, limit)
}

/// Checks that a value of `reg` that may share expands to no more values
/// than its budget: a region with the SHARED flag, or a store's segment,
/// whose values may name values of other segments, each many times
/// (references are followed, and what they name counted as often as it is
/// named). Legitimately shared data may expand beyond its size (a list
/// holding one list many times); the allowance bounds crafted sharing only.
/// A value that cannot share passes at once.
pub fn check_expansion_of(reg: &Region, v: Value<'_>) -> PyResult<()> {
    if !reg.is_shared() && reg.place().is_none() {
        return Ok(());
    }
    let r = reg.reader();
    let mut steps = bale_core::hash::step_budget(r.buf().len()) + EXPANSION_ALLOWANCE;
    expand(&r, v, reg, &mut steps, 0)
}

/// Spends a step of `steps` per value `v` expands to; `reg` resolves
/// references to other segments, `depth` of them deep.
fn expand<'a>(r: &Reader<'a>, v: Value<'a>, reg: &Region, steps: &mut usize, depth: usize) -> PyResult<()> {
    let cyclic = r.cyclic();
    let mut stack: Vec<Walk<'a>> = vec![Walk::Enter(v)];
    let mut children: Vec<Value<'a>> = Vec::new();
    // Keys live once in their shape, whatever the number of dicts using it.
    let mut shapes_seen = rustc_hash::FxHashSet::default();
    // In cyclic regions, a container met again inside itself is where
    // Python's own walks stop (`[...]`), so it expands to nothing more.
    let mut on_path = rustc_hash::FxHashSet::default();
    while let Some(w) = stack.pop() {
        let v = match w {
            Walk::Enter(v) => v,
            Walk::Leave(key) => {
                on_path.remove(&key);
                continue;
            }
        };
        if cyclic {
            let key = crate::thawing::container_key(&v);
            if key != crate::thawing::NOT_A_CONTAINER {
                if !on_path.insert(key) {
                    continue;
                }
                stack.push(Walk::Leave(key));
            }
        }
        children.clear();
        match v {
            Value::List(s) | Value::Tuple(s) => {
                for i in 0..s.len {
                    children.push(r.seq_item(s, i).map_err(format_error)?);
                }
            }
            Value::Set(t) | Value::FrozenSet(t) => {
                for i in 0..t.len {
                    children.push(r.table_item(t, i).map_err(format_error)?);
                }
            }
            Value::Column(c) => {
                for i in 0..c.len {
                    children.push(r.column_item(c, i).map_err(format_error)?);
                }
            }
            Value::Dict(d) => {
                if shapes_seen.insert(d.shape.start) {
                    // All its shape's keys (an ID_DICT's key table too), once.
                    for i in 0..d.shape.len {
                        children.push(r.table_item(d.shape, i).map_err(format_error)?);
                    }
                }
                for i in 0..d.len {
                    children.push(r.dict_value(d, i).map_err(format_error)?);
                }
            }
            Value::Extern(x) => {
                if depth >= crate::thawing::MAX_EXTERN_DEPTH {
                    return Err(crate::errors::FormatError::new_err(format!(
                        "references between segments nest more than {} deep (or form a cycle, in a damaged store)",
                        crate::thawing::MAX_EXTERN_DEPTH
                    )));
                }
                crate::errors::check_stack(c" while following references between segments")?;
                let target = reg.resolve_extern(&x)?;
                let tr = target.reader();
                expand(&tr, target.root_value()?, &target, steps, depth + 1)?;
            }
            _ => {}
        }
        for &c in &children {
            bale_core::hash::spend(steps).map_err(format_error)?;
            stack.push(Walk::Enter(c));
        }
    }
    Ok(())
}

/// Values a shared region may expand to beyond `step_budget`.
const EXPANSION_ALLOWANCE: usize = 1 << 24;

enum Walk<'a> {
    Enter(Value<'a>),
    Leave(crate::thawing::ContainerKey),
}

/// Whether `other` is a native of the kind that a view of `node` may equal.
fn comparable_native(node: Node, other: &Bound<'_, PyAny>) -> bool {
    let p = other.as_ptr();
    unsafe {
        match node {
            Node::List(_) => ffi::PyList_Check(p) != 0,
            Node::Tuple(_) => ffi::PyTuple_Check(p) != 0,
            Node::Dict(_) => ffi::PyDict_Check(p) != 0,
            Node::Set(_) | Node::FrozenSet(_) => ffi::PyAnySet_Check(p) != 0,
            Node::NumList(_) => ffi::PyList_Check(p) != 0,
            Node::Record(_) => true,
        }
    }
}

fn richcmp(
    py: Python<'_>,
    region: &Py<Region>,
    node: Node,
    other: &Bound<'_, PyAny>,
    op: CompareOp,
) -> PyResult<Py<PyAny>> {
    match op {
        CompareOp::Eq | CompareOp::Ne => {
            let is_view = view_parts(other).is_some();
            if !is_view && !comparable_native(node, other) {
                return Ok(py.NotImplemented());
            }
            let r = region.get().reader();
            let other_cyclic = view_parts(other).is_some_and(|(o, _)| o.get().is_cyclic());
            let key = crate::thawing::container_key(&node.value());
            let same_place = key != crate::thawing::NOT_A_CONTAINER
                && view_parts(other).is_some_and(|(o, n)| {
                    o.get().same_lineage(region.get()) && crate::thawing::container_key(&n.value()) == key
                });
            if !same_place {
                // A store's value may name other values many times through
                // references: refused, as shared regions are, where it
                // expands past its budget (Python's walks and a compaction
                // of the other side would take it as a tree).
                check_expansion_of(region.get(), node.value())?;
                if let Some((o, n)) = view_parts(other) {
                    check_expansion_of(o.get(), n.value())?;
                }
            }
            let eq = if same_place {
                true
            } else if r.cyclic() || other_cyclic {
                // Values that may contain themselves compare as Python compares them.
                let other = match view_parts(other) {
                    Some((reg, n)) => thawed(py, &reg, n)?.into_bound(py),
                    None => other.clone(),
                };
                thawed(py, region, node)?.bind(py).eq(other)?
            } else {
                match with_stored(other, |or, ov| decided(&r, node.value(), or, ov))? {
                    Some(Some(eq)) => eq,
                    _ => thawed(py, region, node)?.bind(py).eq(other)?,
                }
            };
            Ok((eq == matches!(op, CompareOp::Eq)).into_pyobject(py)?.to_owned().into_any().unbind())
        }
        _ => {
            let mine = thawed(py, region, node)?;
            let other = match view_parts(other) {
                Some((reg, n)) => thawed(py, &reg, n)?.into_bound(py),
                None => other.clone(),
            };
            Ok(mine.bind(py).rich_compare(other, op)?.unbind())
        }
    }
}

/// A pickled view travels as a region holding just its value, and arrives
/// as the same kind of view (`bale._root_of(region)`).
fn reduce<'py>(py: Python<'py>, view: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
    let bale = py.import("bale")?;
    let region = bale.getattr(pyo3::intern!(py, "compact"))?.call1((view,))?;
    Ok((bale.getattr(pyo3::intern!(py, "_root_of"))?, (region,)))
}

/// `bale_core::equality::compare`'s answer (`None`: only Python can decide it).
pub fn decided(ra: &Reader<'_>, a: Value<'_>, rb: &Reader<'_>, b: Value<'_>) -> PyResult<Option<bool>> {
    bale_core::equality::compare(ra, a, rb, b).map_err(format_error)
}

fn repr(py: Python<'_>, region: &Py<Region>, node: Node) -> PyResult<String> {
    match thawed(py, region, node) {
        Ok(native) => Ok(native.bind(py).repr()?.to_string()),
        // Records whose class is unknown here print through their views.
        Err(e) if e.is_instance_of::<crate::errors::ThawError>(py) => view_repr(py, region, node),
        Err(e) => Err(e),
    }
}

/// The repr of a container built from the reprs of its items as views.
fn view_repr(py: Python<'_>, region: &Py<Region>, node: Node) -> PyResult<String> {
    let r = region.get().reader();
    let item = |v: Value<'_>| -> PyResult<String> { Ok(value_to_py(py, region, &v)?.bind(py).repr()?.to_string()) };
    let join = |parts: Vec<String>| parts.join(", ");
    Ok(match node {
        Node::List(s) | Node::Tuple(s) => {
            let parts =
                (0..s.len()).map(|i| item(s.get(&r, i).map_err(format_error)?)).collect::<PyResult<Vec<_>>>()?;
            if matches!(node, Node::List(_)) {
                format!("[{}]", join(parts))
            } else if s.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", join(parts))
            }
        }
        Node::Dict(d) => {
            let mut parts = Vec::with_capacity(d.len);
            for i in 0..d.len {
                let k = item(r.dict_key(d, i).map_err(format_error)?)?;
                parts.push(format!("{k}: {}", item(r.dict_value(d, i).map_err(format_error)?)?));
            }
            format!("{{{}}}", join(parts))
        }
        Node::Record(rec) => crate::record_view::record_repr(py, region, rec)?,
        _ => thawed(py, region, node)?.bind(py).repr()?.to_string(),
    })
}

pub(crate) fn index_arg(key: &Bound<'_, PyAny>, len: usize, what: &str) -> PyResult<usize> {
    let i: isize = key.extract().map_err(|e: PyErr| {
        if e.is_instance_of::<PyOverflowError>(key.py()) {
            PyIndexError::new_err("cannot fit 'int' into an index-sized integer")
        } else {
            e
        }
    })?;
    let n = len as isize;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(PyIndexError::new_err(format!("{what} index out of range")));
    }
    Ok(j as usize)
}

pub(crate) fn seq_getitem(
    py: Python<'_>,
    region: &Py<Region>,
    seq: Items,
    key: &Bound<'_, PyAny>,
    tuple: bool,
) -> PyResult<Py<PyAny>> {
    let what = if tuple { "tuple" } else { "list" };
    let r = region.get().reader();
    unsafe {
        if ffi::PyLong_CheckExact(key.as_ptr()) != 0 {
            let i = ffi::PyLong_AsSsize_t(key.as_ptr());
            if i != -1 || ffi::PyErr_Occurred().is_null() {
                let n = seq.len() as isize;
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(PyIndexError::new_err(format!("{what} index out of range")));
                }
                return read_to_py(py, region, seq.get(&r, j as usize));
            }
            ffi::PyErr_Clear();
        }
    }
    if let Ok(slice) = key.cast::<PySlice>() {
        let ind = slice.indices(seq.len() as isize)?;
        let mut items = Vec::with_capacity(ind.slicelength);
        let mut i = ind.start;
        for _ in 0..ind.slicelength {
            items.push(read_to_py(py, region, seq.get(&r, i as usize))?);
            i += ind.step;
        }
        return Ok(if tuple {
            PyTuple::new(py, items)?.into_any().unbind()
        } else {
            PyList::new(py, items)?.into_any().unbind()
        });
    }
    if key.hasattr(pyo3::intern!(py, "__index__"))? {
        let j = index_arg(key, seq.len(), what)?;
        return read_to_py(py, region, seq.get(&r, j));
    }
    Err(PyTypeError::new_err(format!("{what} indices must be integers or slices, not {}", key.get_type().name()?)))
}

/// Iterator over a list or tuple (forwards or backwards), or over the
/// elements of a set or the keys of a dict (whose slots read the same way).
#[pyclass(frozen, module = "bale")]
pub struct SequenceIterator {
    pub(crate) region: Py<Region>,
    seq: Items,
    next: AtomicUsize,
    reverse: bool,
}

#[pymethods]
impl SequenceIterator {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }
    pub(crate) fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let k = take_next(&self.next);
        let n = self.seq.len();
        if k >= n {
            self.next.store(n, Ordering::Relaxed);
            return Ok(None);
        }
        let i = if self.reverse { n - 1 - k } else { k };
        if let Items::Column(Column { first, kind: ColumnKind::Rows { shape, cols, keyed: 0 }, .. }) = self.seq {
            // A table's row, made without decoding anything (its table
            // starts 16 bytes before its column slots, also where the list
            // is a ROWS_COLUMN's slice of it).
            let dict =
                Dict { start: cols - 16, shape, ids: 0, values: cols, len: shape.len, row: Some(first + i), class: 0 };
            return Ok(Some(new_object(py, DictView { region: self.region.clone_ref(py), dict })?.into_any()));
        }
        let r = self.region.get().reader();
        read_to_py(py, &self.region, self.seq.get(&r, i)).map(Some)
    }
    fn __length_hint__(&self) -> usize {
        self.seq.len().saturating_sub(self.next.load(Ordering::Relaxed))
    }
}

/// An iterator's position, then the next one. With the GIL, a call runs
/// alone, and a plain load and store cost a few cycles where an atomic
/// add costs some twenty on every item of a scan; free-threaded builds
/// keep the atomic add, so that threads sharing an iterator never get the
/// same item twice.
#[inline(always)]
fn take_next(next: &AtomicUsize) -> usize {
    #[cfg(Py_GIL_DISABLED)]
    {
        next.fetch_add(1, Ordering::Relaxed)
    }
    #[cfg(not(Py_GIL_DISABLED))]
    {
        let k = next.load(Ordering::Relaxed);
        next.store(k + 1, Ordering::Relaxed);
        k
    }
}

/// Iterates a set's elements or a shape's keys: their slots read like a sequence's.
fn table_iter(py: Python<'_>, region: &Py<Region>, t: Table) -> PyResult<Py<SequenceIterator>> {
    let seq = Items::Slots(Seq { start: t.start, pos: t.pos, len: t.len });
    new_object(py, SequenceIterator { region: region.clone_ref(py), seq, next: AtomicUsize::new(0), reverse: false })
}

/// The error of every assignment to a view: views are read-only.
pub fn read_only(what: std::fmt::Arguments<'_>, attribute: bool) -> PyErr {
    let msg = format!("{what}: bale views are read-only (bale.thaw(view) gives a mutable copy)");
    if attribute {
        pyo3::exceptions::PyAttributeError::new_err(msg)
    } else {
        PyTypeError::new_err(msg)
    }
}

/// The items of a sequence view, as slicing it whole gives them (views
/// for containers, natives for scalars).
fn seq_items(py: Python<'_>, region: &Py<Region>, seq: Items) -> PyResult<Vec<Py<PyAny>>> {
    let r = region.get().reader();
    (0..seq.len()).map(|i| read_to_py(py, region, seq.get(&r, i))).collect()
}

/// `obj` as the native sequence that `+` concatenates: a list for a list
/// or list view (`want_tuple` false), a tuple for a tuple or tuple view
/// (shallow copies of views, as `view[:]`); `None` for anything else, as
/// `list + tuple` is refused.
pub fn concat_operand<'py>(obj: &Bound<'py, PyAny>, want_tuple: bool) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = obj.py();
    let p = obj.as_ptr();
    if want_tuple {
        if unsafe { ffi::PyTuple_Check(p) } != 0 {
            return Ok(Some(obj.clone()));
        }
        if let Ok(v) = obj.cast::<TupleView>() {
            let v = v.get();
            return Ok(Some(PyTuple::new(py, seq_items(py, &v.region, v.seq)?)?.into_any()));
        }
        return Ok(None);
    }
    if unsafe { ffi::PyList_Check(p) } != 0 {
        return Ok(Some(obj.clone()));
    }
    if let Ok(v) = obj.cast::<ListView>() {
        let v = v.get();
        return Ok(Some(PyList::new(py, seq_items(py, &v.region, v.seq)?)?.into_any()));
    }
    if let Ok(v) = obj.cast::<crate::number_list::NumberListView>() {
        return Ok(Some(v.call_method0(pyo3::intern!(py, "tolist"))?));
    }
    Ok(None)
}

/// `mine + other` (or `other + mine`, `reflected`) as natives; NotImplemented
/// when `other` is not a sequence of the same kind.
pub fn concat(
    py: Python<'_>,
    mine: Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    tuple: bool,
    reflected: bool,
) -> PyResult<Py<PyAny>> {
    let Some(other) = concat_operand(other, tuple)? else {
        return Ok(py.NotImplemented());
    };
    Ok(if reflected { other.add(mine)? } else { mine.add(other)? }.unbind())
}

/// `native * n`, or NotImplemented when `n` is not an integer; the copy is
/// made only for an integer.
pub fn repeat<'py>(
    py: Python<'py>,
    native: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
    n: &Bound<'py, PyAny>,
) -> PyResult<Py<PyAny>> {
    if unsafe { ffi::PyIndex_Check(n.as_ptr()) } == 0 {
        return Ok(py.NotImplemented());
    }
    Ok(native()?.mul(n)?.unbind())
}

macro_rules! sequence_view {
    ($name:ident, $pyname:literal, $tuple:expr, $node:ident) => {
        #[pyclass(frozen, module = "bale", name = $pyname, sequence)]
        pub struct $name {
            pub region: Py<Region>,
            pub seq: Items,
        }

        #[pymethods]
        impl $name {
            fn __len__(&self) -> usize {
                self.seq.len()
            }
            fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                seq_getitem(py, &self.region, self.seq, key, $tuple)
            }
            fn __iter__(&self, py: Python<'_>) -> PyResult<Py<SequenceIterator>> {
                new_object(
                    py,
                    SequenceIterator {
                        region: self.region.clone_ref(py),
                        seq: self.seq,
                        next: AtomicUsize::new(0),
                        reverse: false,
                    },
                )
            }
            fn __reversed__(&self, py: Python<'_>) -> PyResult<Py<SequenceIterator>> {
                new_object(
                    py,
                    SequenceIterator {
                        region: self.region.clone_ref(py),
                        seq: self.seq,
                        next: AtomicUsize::new(0),
                        reverse: true,
                    },
                )
            }
            fn __contains__(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<bool> {
                Ok(elements_matching(py, &self.region, self.seq, x, 0, self.seq.len(), true)?.1.is_some())
            }
            #[pyo3(signature = (value, start = 0, stop = isize::MAX, /))]
            fn index(&self, py: Python<'_>, value: &Bound<'_, PyAny>, start: isize, stop: isize) -> PyResult<usize> {
                let n = self.seq.len() as isize;
                let clamp = |i: isize| -> usize { (if i < 0 { (i + n).max(0) } else { i.min(n) }) as usize };
                match elements_matching(py, &self.region, self.seq, value, clamp(start), clamp(stop), true)?.1 {
                    Some(i) => Ok(i),
                    None => Err(PyValueError::new_err(format!(
                        "{} is not in {}",
                        value.repr()?,
                        if $tuple { "tuple" } else { "list" }
                    ))),
                }
            }
            #[pyo3(signature = (value, /))]
            fn count(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<usize> {
                Ok(elements_matching(py, &self.region, self.seq, value, 0, self.seq.len(), false)?.0)
            }
            fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
                richcmp(py, &self.region, Node::$node(self.seq), other, op)
            }
            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                repr(py, &self.region, Node::$node(self.seq))
            }
            fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
                self.hash_impl(py)
            }
            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
                reduce(slf.py(), slf.as_any())
            }
            /// `view + [3]` (`+ (3,)` for a tuple view): a native list (tuple), as slicing gives.
            fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                concat(py, self.native(py)?, other, $tuple, false)
            }
            fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                concat(py, self.native(py)?, other, $tuple, true)
            }
            fn __mul__(&self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                repeat(py, || self.native(py), n)
            }
            fn __rmul__(&self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                repeat(py, || self.native(py), n)
            }
            fn __setitem__(&self, _key: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("{} does not support item assignment", $pyname), false))
            }
            fn __delitem__(&self, _key: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("{} does not support item deletion", $pyname), false))
            }
            fn __setattr__(&self, name: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("cannot set attribute {} of a {}", name.repr()?, $pyname), true))
            }
            fn __delattr__(&self, name: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("cannot delete attribute {} of a {}", name.repr()?, $pyname), true))
            }
        }

        impl $name {
            /// The items as a native list or tuple (a shallow copy: views for containers).
            fn native<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let items = seq_items(py, &self.region, self.seq)?;
                Ok(if $tuple { PyTuple::new(py, items)?.into_any() } else { PyList::new(py, items)?.into_any() })
            }
        }
    };
}

sequence_view!(ListView, "ListView", false, List);
sequence_view!(TupleView, "TupleView", true, Tuple);

impl ListView {
    fn hash_impl(&self, _py: Python<'_>) -> PyResult<isize> {
        Err(PyTypeError::new_err("unhashable type: 'ListView'"))
    }
}

impl TupleView {
    fn hash_impl(&self, py: Python<'_>) -> PyResult<isize> {
        thawed(py, &self.region, Node::Tuple(self.seq))?.bind(py).hash()
    }
}

static KEYS_VIEW: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ITEMS_VIEW: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// What a `DictIterator` yields of each entry.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DictPart {
    Values,
    Items,
    Keys,
}

/// Iterator over a dict's values, (key, value) pairs or keys, by position:
/// it never looks keys up, so it reads every entry of any readable dict.
#[pyclass(frozen, module = "bale")]
pub struct DictIterator {
    pub(crate) region: Py<Region>,
    dict: Dict,
    next: AtomicUsize,
    part: DictPart,
}

impl DictIterator {
    pub fn new(py: Python<'_>, region: &Py<Region>, dict: Dict, part: DictPart) -> PyResult<Py<DictIterator>> {
        new_object(py, DictIterator { region: region.clone_ref(py), dict, next: AtomicUsize::new(0), part })
    }
}

#[pymethods]
impl DictIterator {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }
    pub(crate) fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let i = take_next(&self.next);
        if i >= self.dict.len {
            self.next.store(self.dict.len, Ordering::Relaxed);
            return Ok(None);
        }
        let r = self.region.get().reader();
        if self.part == DictPart::Keys {
            return read_to_py(py, &self.region, r.dict_key(self.dict, i)).map(Some);
        }
        let value = match self.dict.row {
            Some(row) => crate::rows::row_value_to_py(py, &self.region, self.dict, row, i)?,
            None => read_to_py(py, &self.region, r.dict_value(self.dict, i))?,
        };
        if self.part == DictPart::Values {
            return Ok(Some(value));
        }
        let key = read_to_py(py, &self.region, r.dict_key(self.dict, i))?;
        Ok(Some(PyTuple::new(py, [key, value])?.into_any().unbind()))
    }
    fn __length_hint__(&self) -> usize {
        self.dict.len.saturating_sub(self.next.load(Ordering::Relaxed))
    }
}

#[pyclass(frozen, module = "bale", name = "DictView", mapping)]
pub struct DictView {
    pub region: Py<Region>,
    pub dict: Dict,
}

impl DictView {
    fn lookup(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        let reg = self.region.get();
        let p = key.as_ptr();
        // The common key, a str, found without `find_in`'s other cases.
        let found = if unsafe { ffi::PyUnicode_CheckExact(p) } != 0 {
            let (width, units) = unsafe { str_units(p) };
            let found = reg.reader().find_str(self.dict.shape, width, units).map_err(format_error)?;
            if found.is_none() {
                reg.check_index_once(self.dict.shape)?;
            }
            reg.reader().dict_place(self.dict, found)
        } else {
            find_in_dict(reg, self.dict, key)?
        };
        match found {
            Some(i) => match self.dict.row {
                Some(row) => crate::rows::row_value_to_py(py, &self.region, self.dict, row, i).map(Some),
                None => read_to_py(py, &self.region, reg.reader().dict_value(self.dict, i)).map(Some),
            },
            None => Ok(None),
        }
    }
}

#[pymethods]
impl DictView {
    fn __len__(&self) -> usize {
        self.dict.len
    }
    pub(crate) fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match self.lookup(py, key)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }
    #[pyo3(signature = (key, default = None, /))]
    fn get(&self, py: Python<'_>, key: &Bound<'_, PyAny>, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        Ok(self.lookup(py, key)?.unwrap_or_else(|| default.unwrap_or_else(|| py.None())))
    }
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(find_in_dict(self.region.get(), self.dict, key)?.is_some())
    }
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.dict.ids != 0 {
            // Its keys are some of its key table's, in its own order.
            return Ok(DictIterator::new(py, &self.region, self.dict, DictPart::Keys)?.into_any());
        }
        Ok(table_iter(py, &self.region, self.dict.shape)?.into_any())
    }
    fn keys(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let cls = KEYS_VIEW.import(slf.py(), "bale._mapping", "DictKeys")?;
        Ok(cls.call1((slf,))?.unbind())
    }
    fn values(&self, py: Python<'_>) -> PyResult<Py<crate::dict_values::DictValues>> {
        crate::dict_values::DictValues::of(py, self)
    }
    fn items(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let cls = ITEMS_VIEW.import(slf.py(), "bale._mapping", "DictItems")?;
        Ok(cls.call1((slf,))?.unbind())
    }
    /// (key, value) pairs in order, by position (used by `items()`).
    fn _iter_items(&self, py: Python<'_>) -> PyResult<Py<DictIterator>> {
        DictIterator::new(py, &self.region, self.dict, DictPart::Items)
    }
    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        richcmp(py, &self.region, Node::Dict(self.dict), other, op)
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr(py, &self.region, Node::Dict(self.dict))
    }
    fn __hash__(&self) -> PyResult<isize> {
        Err(PyTypeError::new_err("unhashable type: 'DictView'"))
    }
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        reduce(slf.py(), slf.as_any())
    }
    /// `view | {"b": 2}`: a native dict, as `dict | dict` gives (a shallow
    /// copy: views for containers), the right operand's values winning.
    fn __or__<'py>(&self, py: Python<'py>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        let Some(other) = dict_operand(other)? else {
            return Ok(py.NotImplemented());
        };
        let mine = self.native(py)?;
        mine.update(other.as_mapping())?;
        Ok(mine.into_any().unbind())
    }
    fn __ror__<'py>(&self, py: Python<'py>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        let Some(other) = dict_operand(other)? else {
            return Ok(py.NotImplemented());
        };
        let out = other.copy()?;
        out.update(self.native(py)?.as_mapping())?;
        Ok(out.into_any().unbind())
    }
    fn __setitem__(&self, _key: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(read_only(format_args!("DictView does not support item assignment"), false))
    }
    fn __delitem__(&self, _key: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(read_only(format_args!("DictView does not support item deletion"), false))
    }
    fn __setattr__(&self, name: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(read_only(format_args!("cannot set attribute {} of a DictView", name.repr()?), true))
    }
    fn __delattr__(&self, name: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(read_only(format_args!("cannot delete attribute {} of a DictView", name.repr()?), true))
    }
}

impl DictView {
    /// The entries as a native dict (a shallow copy: views for containers), read by position.
    fn native<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let reg = self.region.get();
        let r = reg.reader();
        let out = PyDict::new(py);
        for i in 0..self.dict.len {
            let key = read_to_py(py, &self.region, r.dict_key(self.dict, i))?;
            let value = read_to_py(py, &self.region, crate::rows::dict_value(py, reg, &r, self.dict, i))?;
            out.set_item(key, value)?;
        }
        Ok(out)
    }
}

/// `obj` as the dict that `|` merges: a dict, or a dict view's entries.
fn dict_operand<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(Some(d.clone()));
    }
    if let Ok(v) = obj.cast::<DictView>() {
        return Ok(Some(v.get().native(obj.py())?));
    }
    Ok(None)
}

macro_rules! set_view {
    ($name:ident, $pyname:literal, $node:ident) => {
        #[pyclass(frozen, module = "bale", name = $pyname)]
        pub struct $name {
            pub region: Py<Region>,
            pub table: Table,
        }

        impl $name {
            fn native(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                thawed(py, &self.region, Node::$node(self.table))
            }
        }

        #[pymethods]
        impl $name {
            fn __len__(&self) -> usize {
                self.table.len
            }
            fn __iter__(&self, py: Python<'_>) -> PyResult<Py<SequenceIterator>> {
                table_iter(py, &self.region, self.table)
            }
            fn __contains__(&self, x: &Bound<'_, PyAny>) -> PyResult<bool> {
                Ok(find_in(self.region.get(), self.table, x)?.is_some())
            }
            fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
                richcmp(py, &self.region, Node::$node(self.table), other, op)
            }
            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                repr(py, &self.region, Node::$node(self.table))
            }
            #[pyo3(signature = (other, /))]
            fn isdisjoint(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                Ok(self.native(py)?.bind(py).call_method1(pyo3::intern!(py, "isdisjoint"), (other,))?.unbind())
            }
            fn __and__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__and__"), false)
            }
            fn __rand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__and__"), true)
            }
            fn __or__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__or__"), false)
            }
            fn __ror__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__or__"), true)
            }
            fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__sub__"), false)
            }
            fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__sub__"), true)
            }
            fn __xor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__xor__"), false)
            }
            fn __rxor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                set_op(py, self.native(py)?, other, pyo3::intern!(py, "__xor__"), true)
            }
            fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
                self.hash_impl(py)
            }
            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
                reduce(slf.py(), slf.as_any())
            }
            fn __setitem__(&self, _key: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("{} does not support item assignment", $pyname), false))
            }
            fn __delitem__(&self, _key: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("{} does not support item deletion", $pyname), false))
            }
            fn __setattr__(&self, name: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("cannot set attribute {} of a {}", name.repr()?, $pyname), true))
            }
            fn __delattr__(&self, name: &Bound<'_, PyAny>) -> PyResult<()> {
                Err(read_only(format_args!("cannot delete attribute {} of a {}", name.repr()?, $pyname), true))
            }
        }
    };
}

/// A set operator on the native copy; non-set operands give NotImplemented.
fn set_op<'py>(
    py: Python<'py>,
    mine: Py<PyAny>,
    other: &Bound<'py, PyAny>,
    op: &Bound<'py, pyo3::types::PyString>,
    reflected: bool,
) -> PyResult<Py<PyAny>> {
    let other = match view_parts(other) {
        Some((reg, n)) => thawed(py, &reg, n)?.into_bound(py),
        None => other.clone(),
    };
    if unsafe { ffi::PyAnySet_Check(other.as_ptr()) } == 0 {
        return Ok(py.NotImplemented());
    }
    let (a, b) = if reflected { (other, mine.into_bound(py)) } else { (mine.into_bound(py), other) };
    Ok(a.call_method1(op, (b,))?.unbind())
}

set_view!(SetView, "SetView", Set);
set_view!(FrozenSetView, "FrozenSetView", FrozenSet);

impl SetView {
    fn hash_impl(&self, _py: Python<'_>) -> PyResult<isize> {
        Err(PyTypeError::new_err("unhashable type: 'SetView'"))
    }
}

impl FrozenSetView {
    fn hash_impl(&self, py: Python<'_>) -> PyResult<isize> {
        self.native(py)?.bind(py).hash()
    }
}

/// Checks, on one instance of each class, the layout `new_object` relies on.
pub fn layout_check(py: Python<'_>, region: &Py<Region>) -> PyResult<bool> {
    use crate::alloc::layout_matches as sample_matches;
    let seq = Seq { start: 0, pos: 0, len: 0 };
    let table = Table { start: 0, pos: 0, len: 0 };
    let dict = Dict { start: 0, shape: table, ids: 0, values: 0, len: 0, row: None, class: 0 };
    let r = || region.clone_ref(py);
    let seq = Items::Slots(seq);
    Ok(sample_matches(py, ListView { region: r(), seq })?
        && sample_matches(py, TupleView { region: r(), seq })?
        && sample_matches(py, DictView { region: r(), dict })?
        && sample_matches(py, SetView { region: r(), table })?
        && sample_matches(py, FrozenSetView { region: r(), table })?
        && sample_matches(py, SequenceIterator { region: r(), seq, next: AtomicUsize::new(0), reverse: false })?
        && sample_matches(py, DictIterator { region: r(), dict, next: AtomicUsize::new(0), part: DictPart::Values })?
        && crate::dict_values::layout_check(py, region, dict)?)
}

fast_new!(ListView, TupleView, DictView, SetView, FrozenSetView, SequenceIterator, DictIterator);
