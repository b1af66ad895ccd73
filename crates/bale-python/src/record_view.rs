//! Views of records: fields read by attribute (and by index for
//! NamedTuples) straight from the region, with no class needed. Enum
//! members come back as the members themselves when their class is known.

use bale_core::format::{FLAVOR_ENUM, FLAVOR_ENUM_MIXIN, FLAVOR_NAMEDTUPLE};
use bale_core::Record;
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyAttributeError, PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PySlice, PyString, PyTuple};

use crate::errors::{format_error, RecursionGuard, ThawError};
use crate::ffi::pyunicode::str_units;
use crate::region::Region;
use crate::views::read_to_py;

#[pyclass(frozen, module = "bale", name = "RecordView")]
pub struct RecordView {
    pub region: Py<Region>,
    pub rec: Record,
}

/// A stored record as Python sees it: a view, or for enums the member.
pub fn record_to_py(py: Python<'_>, region: Py<Region>, rec: Record) -> PyResult<Py<PyAny>> {
    if rec.ty.flavor == FLAVOR_ENUM || rec.ty.flavor == FLAVOR_ENUM_MIXIN {
        let reg = region.get();
        match crate::typed::resolve(py, &reg.reader(), rec.ty, None) {
            Ok(res) => {
                let values = record_values(py, &region, rec)?;
                return crate::typed::build_record(py, &res, values);
            }
            Err(e) if e.is_instance_of::<ThawError>(py) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(crate::views::untracked(Py::new(py, RecordView { region, rec })?).into_any())
}

/// The field values of a record, as views and scalars.
fn record_values<'py>(py: Python<'py>, region: &Py<Region>, rec: Record) -> PyResult<Bound<'py, PyTuple>> {
    let r = region.get().reader();
    let items = (0..rec.len).map(|i| read_to_py(py, region, r.record_value(rec, i))).collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

fn field_names<'py>(py: Python<'py>, region: &Region, rec: Record) -> PyResult<Bound<'py, PyTuple>> {
    Ok(crate::typed::type_parts(py, &region.reader(), rec.ty)?.1)
}

/// The class name of a qualified name (`module.Outer.Name` -> `Name`), as reprs show it.
fn short_name(qualified: &str) -> &str {
    qualified.rsplit('.').next().unwrap_or(qualified)
}

pub fn record_repr(py: Python<'_>, region: &Py<Region>, rec: Record) -> PyResult<String> {
    let reg = region.get();
    let (name, fields) = crate::typed::type_parts(py, &reg.reader(), rec.ty)?;
    let values = record_values(py, region, rec)?;
    if rec.ty.flavor == FLAVOR_ENUM || rec.ty.flavor == FLAVOR_ENUM_MIXIN {
        let member = values.get_item(0)?.str()?.to_string();
        return Ok(format!("<{}.{}: {}>", short_name(&name), member, values.get_item(1)?.repr()?));
    }
    let parts = fields
        .iter()
        .zip(values.iter())
        .map(|(f, v)| Ok(format!("{}={}", f.str()?, v.repr()?)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(format!("{}({})", short_name(&name), parts.join(", ")))
}

impl RecordView {
    /// `'Point' record view`, for messages.
    fn label(&self) -> String {
        let name = self.region.get().reader().type_name(self.rec.ty).map(|n| n.to_string_lossy()).unwrap_or_default();
        format!("'{}' record view", short_name(&name))
    }
    fn read_only(&self, name: &Bound<'_, PyString>, verb: &str) -> PyErr {
        let (width, units) = unsafe { str_units(name.as_ptr()) };
        let field = matches!(self.region.get().reader().find_str(self.rec.ty.fields, width, units), Ok(Some(_)));
        let what = if field { "field" } else { "attribute" };
        crate::views::read_only(format_args!("cannot {verb} {what} '{name}' of a {}", self.label()), true)
    }
    fn is_namedtuple(&self) -> bool {
        self.rec.ty.flavor == FLAVOR_NAMEDTUPLE
    }
    fn not_a_sequence(&self, what: &str) -> PyErr {
        let name = self.region.get().reader().type_name(self.rec.ty).map(|n| n.to_string_lossy()).unwrap_or_default();
        PyTypeError::new_err(format!("'{}' record view {what}", short_name(&name)))
    }
}

#[pymethods]
impl RecordView {
    /// Fields first (found through the type's index, without raising),
    /// then the view's own attributes.
    fn __getattribute__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let me = slf.get();
        let reg = me.region.get();
        let r = reg.reader();
        let (width, units) = unsafe { str_units(name.as_ptr()) };
        // Dunder names (`__class__`, asked by isinstance) are the view's own:
        // answering them never reads the region.
        let dunder = units.len() > 4 && units.starts_with(b"__") && units.ends_with(b"__");
        if !dunder {
            if let Some(i) = r.find_str(me.rec.ty.fields, width, units).map_err(format_error)? {
                return read_to_py(py, &me.region, r.record_value(me.rec, i));
            }
        }
        unsafe { Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyObject_GenericGetAttr(slf.as_ptr(), name.as_ptr())) }
            .map(Bound::unbind)
    }

    /// Called when neither a field nor an attribute of the view has the name.
    fn __getattr__(&self, name: &Bound<'_, PyString>) -> PyResult<Py<PyAny>> {
        self.region.get().check_index_once(self.rec.ty.fields)?;
        let tname = self.region.get().reader().type_name(self.rec.ty).map_err(format_error)?.to_string_lossy();
        Err(PyAttributeError::new_err(format!("'{}' record has no field '{}'", short_name(&tname), name)))
    }

    /// The stored field names, in order.
    #[getter]
    fn _fields(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(field_names(py, self.region.get(), self.rec)?.unbind())
    }

    /// The qualified name of the record's class, as stored.
    #[getter]
    fn __bale_type__(&self) -> PyResult<String> {
        Ok(self.region.get().reader().type_name(self.rec.ty).map_err(format_error)?.to_string_lossy())
    }

    fn __len__(&self) -> PyResult<usize> {
        if !self.is_namedtuple() {
            return Err(self.not_a_sequence("has no len() (only NamedTuple records do)"));
        }
        Ok(self.rec.len)
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if !self.is_namedtuple() {
            return Err(self.not_a_sequence("is not subscriptable (only NamedTuple records are)"));
        }
        let values = record_values(py, &self.region, self.rec)?;
        if key.is_instance_of::<PySlice>() {
            return Ok(values.as_any().get_item(key)?.unbind());
        }
        let i: isize = key.extract()?;
        let n = self.rec.len as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(PyIndexError::new_err("tuple index out of range"));
        }
        Ok(values.get_item(j as usize)?.unbind())
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if !self.is_namedtuple() {
            return Err(self.not_a_sequence("is not iterable (only NamedTuple records are)"));
        }
        Ok(record_values(py, &self.region, self.rec)?.try_iter()?.into_any().unbind())
    }

    /// Equal to a view of an equal record, and to an instance of the class
    /// it was made from whose fields are equal (a NamedTuple view also to
    /// an equal tuple, as NamedTuples are).
    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let _depth = RecursionGuard::enter(py, c" in comparison")?;
        let eq = match op {
            CompareOp::Eq | CompareOp::Ne => self.equals(py, other)?,
            _ => None,
        };
        Ok(match eq {
            Some(e) => (e == matches!(op, CompareOp::Eq)).into_pyobject(py)?.to_owned().into_any().unbind(),
            None => py.NotImplemented(),
        })
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        let _depth = RecursionGuard::enter(py, c" while hashing a RecordView")?;
        record_values(py, &self.region, self.rec)?.hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let _depth = RecursionGuard::enter(py, c" while getting the repr of a RecordView")?;
        record_repr(py, &self.region, self.rec)
    }

    /// Records are read in place: assigning a field says so.
    fn __setattr__(&self, name: &Bound<'_, PyString>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(self.read_only(name, "set"))
    }
    fn __delattr__(&self, name: &Bound<'_, PyString>) -> PyResult<()> {
        Err(self.read_only(name, "delete"))
    }
    fn __setitem__(&self, _key: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(crate::views::read_only(format_args!("{} does not support item assignment", &self.label()), false))
    }
    fn __delitem__(&self, _key: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(crate::views::read_only(format_args!("{} does not support item deletion", &self.label()), false))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let py = slf.py();
        let bale = py.import("bale")?;
        let region = bale.getattr(pyo3::intern!(py, "compact"))?.call1((slf,))?;
        Ok((bale.getattr(pyo3::intern!(py, "_root_of"))?, (region,)))
    }
}

impl RecordView {
    fn equals(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
        let reg = self.region.get();
        let (name, fields) = crate::typed::type_parts(py, &reg.reader(), self.rec.ty)?;
        let mine = record_values(py, &self.region, self.rec)?;
        if let Ok(o) = other.cast::<RecordView>() {
            let o = o.get();
            let (oname, ofields) = crate::typed::type_parts(py, &o.region.get().reader(), o.rec.ty)?;
            if oname != name || !ofields.eq(&fields)? {
                return Ok(Some(false));
            }
            return Ok(Some(mine.eq(record_values(py, &o.region, o.rec)?)?));
        }
        let cls = other.get_type();
        let qualified = format!("{}.{}", cls.module()?, cls.qualname()?);
        if qualified == name {
            if self.rec.ty.flavor == FLAVOR_ENUM || self.rec.ty.flavor == FLAVOR_ENUM_MIXIN {
                let (Ok(member_name), Ok(member_value), 2) = (
                    other.getattr(pyo3::intern!(py, "_name_")),
                    other.getattr(pyo3::intern!(py, "_value_")),
                    mine.len(),
                ) else {
                    return Err(ThawError::new_err(format!(
                        "{name} is stored as an enum member, but this process's {name} is not an Enum (or the record is damaged)"
                    )));
                };
                return Ok(Some(member_name.eq(mine.get_item(0)?)? && member_value.eq(mine.get_item(1)?)?));
            }
            for (i, f) in fields.iter().enumerate() {
                match other.getattr(f.cast_into::<PyString>()?) {
                    Ok(v) => {
                        if !v.eq(mine.get_item(i)?)? {
                            return Ok(Some(false));
                        }
                    }
                    Err(_) => return Ok(Some(false)),
                }
            }
            return Ok(Some(true));
        }
        if self.is_namedtuple() && other.is_instance_of::<PyTuple>() {
            return Ok(Some(mine.eq(other)?));
        }
        Ok(None)
    }
}
