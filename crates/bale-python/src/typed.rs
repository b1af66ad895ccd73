//! Typed values between Python and regions: datetimes, decimals, UUIDs,
//! ranges, `array.array`, numpy arrays and scalars, and the classes of
//! records. Built-in types are told apart by exact type pointers; other
//! classes are described once per class by `bale._types` (Python), never
//! once per object.

use bale_core::format::*;
use bale_core::typed::{self as core_typed, Clock, Date, Delta, Ext, Moment, Tz};
use bale_core::{NdArray, Reader, RecType, Value};
use pyo3::exceptions::PyTypeError;
use pyo3::ffi::{self, PyObject};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyDate, PyDateAccess, PyDateTime, PyDelta, PyDeltaAccess, PyString, PyTime, PyTimeAccess, PyTuple, PyTzInfo,
    PyTzInfoAccess,
};
use pyo3::PyTypeInfo;

use crate::convert::malformed;
use crate::errors::CompactError;

/// Classes and helpers looked up once, on first use (importing `decimal`
/// and friends is kept off `import bale`).
pub struct Known {
    pub date: usize,
    pub time: usize,
    pub datetime: usize,
    pub delta: usize,
    pub decimal: Py<PyAny>,
    pub uuid: Py<PyAny>,
    pub array: Py<PyAny>,
    pub timezone: Py<PyAny>,
    pub types: Py<PyModule>,
}

static KNOWN: PyOnceLock<Known> = PyOnceLock::new();
static ZONEINFO: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static FRACTION: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static PATH_CLASSES: PyOnceLock<[Py<PyAny>; 4]> = PyOnceLock::new();
static DICT_CLASSES: PyOnceLock<[Py<PyAny>; 3]> = PyOnceLock::new();

/// `OrderedDict`, `Counter` and `defaultdict`, in the order of `bale_core::dict_class`'s numbers.
fn dict_classes(py: Python<'_>) -> PyResult<&[Py<PyAny>; 3]> {
    DICT_CLASSES.get_or_try_init(py, || {
        let m = py.import("collections")?;
        let class = |name: &str| -> PyResult<Py<PyAny>> { Ok(m.getattr(name)?.unbind()) };
        Ok([class("OrderedDict")?, class("Counter")?, class("defaultdict")?])
    })
}

/// The builtin types a stored `defaultdict` may have as its factory, by
/// number (`bale_core::dict_class::FACTORIES`; 0 is `None`).
fn factory_types() -> [*mut ffi::PyTypeObject; 8] {
    use std::ptr::{addr_of_mut, null_mut};
    [
        null_mut(),
        addr_of_mut!(ffi::PyList_Type),
        addr_of_mut!(ffi::PyDict_Type),
        addr_of_mut!(ffi::PySet_Type),
        addr_of_mut!(ffi::PyLong_Type),
        addr_of_mut!(ffi::PyFloat_Type),
        addr_of_mut!(ffi::PyUnicode_Type),
        addr_of_mut!(ffi::PyTuple_Type),
    ]
}

/// The class word of a `collections` dict, and for an `OrderedDict` its
/// items in its own order (which its dict storage does not keep after
/// `move_to_end`), as a list of `(key, value)` tuples.
pub fn dict_class_parts(py: Python<'_>, obj: &Bound<'_, PyAny>, class: u64) -> PyResult<(u64, Option<Py<PyAny>>)> {
    use bale_core::dict_class::{class_word, DEFAULT, FACTORIES, ORDERED};
    match class {
        ORDERED => {
            let items = obj.call_method0(pyo3::intern!(py, "items"))?;
            let list = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PySequence_List(items.as_ptr()))? };
            Ok((class_word(ORDERED, 0), Some(list.unbind())))
        }
        DEFAULT => {
            let factory = obj.getattr(pyo3::intern!(py, "default_factory"))?;
            let n = if factory.is_none() {
                Some(0)
            } else {
                factory_types().iter().position(|&t| t as *mut PyObject == factory.as_ptr())
            };
            match n {
                Some(n) => Ok((class_word(DEFAULT, n as u64), None)),
                None => Err(CompactError::new_err(format!(
                    "cannot compact a defaultdict whose default_factory is {} (bale stores the factories {}: thaw must not call code named in bytes)",
                    factory.repr()?,
                    FACTORIES.join(", ")
                ))),
            }
        }
        _ => Ok((class_word(class, 0), None)),
    }
}

/// A new, empty dict of the class a stored class word names.
pub fn new_dict_of_class(py: Python<'_>, word: u64) -> PyResult<*mut PyObject> {
    use bale_core::dict_class::DEFAULT;
    let cls = dict_classes(py)?[(word & 0xFF) as usize - 1].bind(py);
    let made = if word & 0xFF == DEFAULT {
        let factory = factory_types()[(word >> 8) as usize];
        let factory = if factory.is_null() {
            py.None().into_bound(py)
        } else {
            unsafe { Bound::from_borrowed_ptr(py, factory.cast()) }
        };
        cls.call1((factory,))?
    } else {
        cls.call0()?
    };
    Ok(made.into_ptr())
}

/// The `pathlib` class names, in the order of `bale_core::path`'s class numbers.
const PATH_CLASS_NAMES: [&str; 4] = ["PurePosixPath", "PosixPath", "PureWindowsPath", "WindowsPath"];

/// Whether `module` has been imported, without importing it: no object of
/// a class of a module nobody imported can exist, and `import bale` (or a
/// first compaction) should not pay for importing `fractions`.
fn imported(py: Python<'_>, module: &str) -> bool {
    let name = PyString::new(py, module);
    let m = unsafe { ffi::PyImport_GetModule(name.as_ptr()) };
    if m.is_null() {
        // Not imported (or sys.modules is broken: nothing of it exists either).
        unsafe { ffi::PyErr_Clear() };
        return false;
    }
    unsafe { ffi::Py_DecRef(m) };
    true
}

fn fraction_class(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    FRACTION.get_or_try_init(py, || Ok(py.import("fractions")?.getattr(pyo3::intern!(py, "Fraction"))?.unbind()))
}

fn path_classes(py: Python<'_>) -> PyResult<&[Py<PyAny>; 4]> {
    PATH_CLASSES.get_or_try_init(py, || {
        let m = py.import("pathlib")?;
        let class = |i: usize| -> PyResult<Py<PyAny>> { Ok(m.getattr(PATH_CLASS_NAMES[i])?.unbind()) };
        Ok([class(0)?, class(1)?, class(2)?, class(3)?])
    })
}

pub fn known(py: Python<'_>) -> PyResult<&Known> {
    KNOWN.get_or_try_init(py, || {
        let ty = |t: Bound<'_, pyo3::types::PyType>| t.as_ptr() as usize;
        Ok(Known {
            date: ty(PyDate::type_object(py)),
            time: ty(PyTime::type_object(py)),
            datetime: ty(PyDateTime::type_object(py)),
            delta: ty(PyDelta::type_object(py)),
            decimal: py.import("decimal")?.getattr(pyo3::intern!(py, "Decimal"))?.unbind(),
            uuid: py.import("uuid")?.getattr(pyo3::intern!(py, "UUID"))?.unbind(),
            array: py.import("array")?.getattr(pyo3::intern!(py, "array"))?.unbind(),
            timezone: py.import("datetime")?.getattr(pyo3::intern!(py, "timezone"))?.unbind(),
            types: py.import("bale._types")?.unbind(),
        })
    })
}

fn zoneinfo_class(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    ZONEINFO.get_or_try_init(py, || Ok(py.import("zoneinfo")?.getattr(pyo3::intern!(py, "ZoneInfo"))?.unbind()))
}

/// How instances of one type are stored.
pub enum Handler {
    Date,
    Time,
    DateTime,
    Delta,
    Decimal,
    Uuid,
    Range,
    Array,
    NdArray {
        scalar: bool,
    },
    Fraction,
    /// A `collections` dict class (`bale_core::dict_class::ORDERED`...).
    DictClass(u64),
    /// A `pathlib` class (`bale_core::path::PURE_POSIX`...).
    Path(u64),
    Record(RecordInfo),
    Unsupported,
}

/// A record class as the compactor needs it.
pub struct RecordInfo {
    pub flavor: u64,
    pub name: String,
    pub fields: Vec<Py<PyString>>,
    pub attrs: Vec<Py<PyString>>,
    pub getter: Option<Py<PyAny>>,
    /// The TYPE object once written by this compaction.
    pub type_slot: Option<u64>,
    /// Whether reading `attrs` with `getattr` runs no Python code (see
    /// `attrs_run_no_python`), and the count of Python steps the
    /// compaction had run when that was decided (code can change a class).
    pub plain_attrs: Option<(u64, bool)>,
}

/// The handler for objects of type `tp` (not a built-in container or scalar).
pub fn classify(py: Python<'_>, tp: *mut ffi::PyTypeObject) -> PyResult<Handler> {
    let k = known(py)?;
    let t = tp as usize;
    if t == k.date {
        return Ok(Handler::Date);
    }
    if t == k.datetime {
        return Ok(Handler::DateTime);
    }
    if t == k.time {
        return Ok(Handler::Time);
    }
    if t == k.delta {
        return Ok(Handler::Delta);
    }
    if t == k.decimal.as_ptr() as usize {
        return Ok(Handler::Decimal);
    }
    if t == k.uuid.as_ptr() as usize {
        return Ok(Handler::Uuid);
    }
    if t == k.array.as_ptr() as usize {
        return Ok(Handler::Array);
    }
    if tp == std::ptr::addr_of_mut!(ffi::PyRange_Type) {
        return Ok(Handler::Range);
    }
    if imported(py, "fractions") && fraction_class(py)?.as_ptr() == tp as *mut PyObject {
        return Ok(Handler::Fraction);
    }
    if imported(py, "collections") {
        if let Some(i) = dict_classes(py)?.iter().position(|c| c.as_ptr() == tp as *mut PyObject) {
            return Ok(Handler::DictClass(i as u64 + 1));
        }
    }
    if imported(py, "pathlib") {
        if let Some(i) = path_classes(py)?.iter().position(|c| c.as_ptr() == tp as *mut PyObject) {
            return Ok(Handler::Path(i as u64 + 1));
        }
    }
    let cls = unsafe { Bound::from_borrowed_ptr(py, tp as *mut PyObject) };
    let d = k.types.bind(py).getattr(pyo3::intern!(py, "describe"))?.call1((cls,))?;
    if d.is_none() {
        return Ok(Handler::Unsupported);
    }
    // numpy values are named by a number, records described by their `RecordType`.
    if let Ok(kind) = d.extract::<u32>() {
        return Ok(Handler::NdArray { scalar: kind == 2 });
    }
    let r: RecordDescription = d.extract()?;
    Ok(Handler::Record(RecordInfo {
        name: r.name,
        flavor: r.flavor,
        fields: r.fields,
        attrs: r.attrs,
        getter: r.get,
        type_slot: None,
        plain_attrs: None,
    }))
}

/// A record class as `bale._types.RecordType` describes it, read by attribute name.
#[derive(FromPyObject)]
struct RecordDescription {
    name: String,
    flavor: u64,
    fields: Vec<Py<PyString>>,
    attrs: Vec<Py<PyString>>,
    get: Option<Py<PyAny>>,
}

/// The header field and payload of a typed scalar, for the simple kinds.
pub fn scalar_parts(py: Python<'_>, h: &Handler, obj: &Bound<'_, PyAny>) -> PyResult<(u8, u64, Vec<u8>)> {
    Ok(match h {
        Handler::Date => {
            let d = unsafe { obj.cast_unchecked::<PyDate>() };
            let date = Date { year: d.get_year() as u16, month: d.get_month(), day: d.get_day() };
            (KIND_DATE, core_typed::pack_date(date), Vec::new())
        }
        Handler::DateTime => {
            let d = unsafe { obj.cast_unchecked::<PyDateTime>() };
            let date = Date { year: d.get_year() as u16, month: d.get_month(), day: d.get_day() };
            let clock = Clock {
                hour: d.get_hour(),
                minute: d.get_minute(),
                second: d.get_second(),
                micro: d.get_microsecond(),
            };
            let tz = d.get_tzinfo();
            moment_parts(py, KIND_DATETIME, Some(date), clock, d.get_fold(), tz.as_ref())?
        }
        Handler::Time => {
            let t = unsafe { obj.cast_unchecked::<PyTime>() };
            let clock = Clock {
                hour: t.get_hour(),
                minute: t.get_minute(),
                second: t.get_second(),
                micro: t.get_microsecond(),
            };
            let tz = t.get_tzinfo();
            moment_parts(py, KIND_TIME, None, clock, t.get_fold(), tz.as_ref())?
        }
        Handler::Delta => {
            let d = unsafe { obj.cast_unchecked::<PyDelta>() };
            let delta =
                Delta { days: d.get_days(), seconds: d.get_seconds() as u32, micros: d.get_microseconds() as u32 };
            (KIND_TIMEDELTA, 0, core_typed::encode_delta(delta))
        }
        Handler::Decimal => {
            let text = obj.str()?.to_string();
            (KIND_DECIMAL, text.len() as u64, text.into_bytes())
        }
        Handler::Uuid => {
            let b: Vec<u8> = obj.getattr(pyo3::intern!(py, "bytes"))?.extract()?;
            (KIND_UUID, 0, b)
        }
        Handler::Range => {
            let word = |name: &Bound<'_, PyString>| -> PyResult<i64> {
                obj.getattr(name)?
                    .extract::<i64>()
                    .map_err(|_| CompactError::new_err(format!("range {name} does not fit in 64 bits")))
            };
            let mut p = Vec::with_capacity(24);
            for name in [pyo3::intern!(py, "start"), pyo3::intern!(py, "stop"), pyo3::intern!(py, "step")] {
                p.extend_from_slice(&word(name)?.to_le_bytes());
            }
            (KIND_RANGE, 0, p)
        }
        Handler::Array => {
            let code: String = obj.getattr(pyo3::intern!(py, "typecode"))?.extract()?;
            let itemsize: usize = obj.getattr(pyo3::intern!(py, "itemsize"))?.extract()?;
            let code = code.as_bytes().first().copied().unwrap_or(0);
            if core_typed::array_itemsize(code) != Some(itemsize) {
                return Err(CompactError::new_err(format!("array of type code {:?} is not supported", code as char)));
            }
            let data: Vec<u8> = obj.call_method0(pyo3::intern!(py, "tobytes"))?.extract()?;
            let mut p = vec![code, itemsize as u8, 0, 0, 0, 0, 0, 0];
            p.extend_from_slice(&data);
            (KIND_ARRAY, data.len() as u64, p)
        }
        Handler::Fraction => fraction_parts(py, obj)?,
        Handler::Path(class) => {
            let text = obj.str()?;
            // Lone surrogates (undecodable file names) are kept as code points.
            let utf8 = unsafe {
                Bound::from_owned_ptr_or_err(
                    py,
                    ffi::PyUnicode_AsEncodedString(text.as_ptr(), c"utf-8".as_ptr(), c"surrogatepass".as_ptr()),
                )?
            };
            let (aux, payload) = bale_core::path::encode(*class, utf8.cast::<pyo3::types::PyBytes>()?.as_bytes());
            checked(KIND_PATH, aux, payload)?
        }
        _ => unreachable!("scalar_parts takes typed scalar handlers"),
    })
}

/// A typed scalar's parts once the format's own checks accept them: an
/// object whose state was changed behind its class's back (say a
/// Fraction's `_denominator` set to 0) is refused here rather than written.
fn checked(kind: u8, aux: u64, payload: Vec<u8>) -> PyResult<(u8, u64, Vec<u8>)> {
    let e = Ext { kind, start: 0, aux, payload: &payload };
    let fine = match kind {
        KIND_FRACTION => bale_core::fraction::decode(&e).and_then(|f| bale_core::fraction::check_lowest_terms(&f)),
        KIND_PATH => bale_core::path::decode(&e).map(|_| ()),
        _ => Ok(()),
    };
    fine.map_err(|m| CompactError::new_err(format!("cannot compact this {}: {m}", core_typed::class_name(&e))))?;
    Ok((kind, aux, payload))
}

/// A Fraction's numerator and denominator as minimal two's-complement bytes.
fn fraction_parts(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<(u8, u64, Vec<u8>)> {
    let mut parts = [Vec::new(), Vec::new()];
    for (name, bytes) in [pyo3::intern!(py, "numerator"), pyo3::intern!(py, "denominator")].into_iter().zip(&mut parts)
    {
        let v = obj.getattr(name)?;
        if !v.is_instance_of::<pyo3::types::PyInt>() {
            return Err(CompactError::new_err(format!("cannot compact a Fraction whose {name} is not an int")));
        }
        unsafe { crate::ffi::pylong::big_int_bytes(py, v.as_ptr(), bytes)? };
        if bytes.len() > bale_core::fraction::MAX_PART_BYTES {
            return Err(CompactError::new_err(format!(
                "cannot compact a Fraction whose {name} takes more than 256 MiB"
            )));
        }
    }
    let (aux, payload) = bale_core::fraction::encode(&parts[0], &parts[1]);
    checked(KIND_FRACTION, aux, payload)
}

fn moment_parts(
    py: Python<'_>,
    kind: u8,
    date: Option<Date>,
    clock: Clock,
    fold: bool,
    tz: Option<&Bound<'_, PyTzInfo>>,
) -> PyResult<(u8, u64, Vec<u8>)> {
    let k = known(py)?;
    // (zone kind, offset, named, text) first; the Tz borrows the text.
    let (kind_tz, offset_us, named, text): (u8, i64, bool, String) = match tz {
        None => (0, 0, false, String::new()),
        Some(tz) if tz.get_type().as_ptr() == k.timezone.as_ptr() => {
            // __getinitargs__ tells a given name from the default one.
            let args = tz.call_method0(pyo3::intern!(py, "__getinitargs__"))?.cast_into::<PyTuple>()?;
            let off = args.get_item(0)?.cast_into::<PyDelta>()?;
            let offset_us =
                (off.get_days() as i64 * 86_400 + off.get_seconds() as i64) * 1_000_000 + off.get_microseconds() as i64;
            let named = args.len() > 1;
            let text = if named { args.get_item(1)?.extract()? } else { String::new() };
            (1, offset_us, named, text)
        }
        Some(tz) => {
            let zi = zoneinfo_class(py)?;
            // Exactly ZoneInfo: a subclass may answer differently than the
            // ZoneInfo its key rebuilds.
            if !tz.get_type().is(zi.bind(py)) {
                return Err(CompactError::new_err(format!(
                    "cannot compact a {} with tzinfo of type {} (bale stores datetime.timezone and zoneinfo.ZoneInfo zones)",
                    core_typed::kind_name(kind),
                    tz.get_type().name()?
                )));
            }
            let key = tz.getattr(pyo3::intern!(py, "key"))?;
            if key.is_none() {
                return Err(CompactError::new_err("cannot compact a ZoneInfo made from a file (its key is None)"));
            }
            (2, 0, false, key.extract()?)
        }
    };
    let tz = match kind_tz {
        0 => Tz::Naive,
        1 => Tz::Fixed { offset_us, name: named.then_some(text.as_str()) },
        _ => Tz::Zone(text.as_str()),
    };
    let (aux, payload) = core_typed::encode_moment(&Moment { date, clock, fold, tz });
    Ok((kind, aux, payload))
}

/// A stored typed scalar as a new Python object.
pub fn ext_to_py(py: Python<'_>, e: &Ext<'_>) -> PyResult<*mut PyObject> {
    let bad = |m: &str| malformed(&format!("{} object at byte {}: {m}", core_typed::kind_name(e.kind), e.start));
    let obj: Bound<'_, PyAny> = match e.kind {
        KIND_DATE => {
            let d = core_typed::unpack_date(e.aux).map_err(&bad)?;
            PyDate::new(py, d.year as i32, d.month, d.day)?.into_any()
        }
        KIND_TIME | KIND_DATETIME => {
            let m = core_typed::decode_moment(e).map_err(&bad)?;
            let tz = match m.tz {
                Tz::Naive => None,
                Tz::Fixed { offset_us, name } => {
                    let k = known(py)?;
                    let delta =
                        PyDelta::new(py, 0, (offset_us / 1_000_000) as i32, (offset_us % 1_000_000) as i32, true)?;
                    let tz = match name {
                        Some(n) => k.timezone.bind(py).call1((delta, n)),
                        None => k.timezone.bind(py).call1((delta,)),
                    }
                    .map_err(|err| bad(&err.to_string()))?;
                    Some(tz.cast_into::<PyTzInfo>()?)
                }
                Tz::Zone(key) => {
                    // A valid key this machine's time zone database lacks: the
                    // bytes are fine, this process cannot rebuild the value.
                    let tz = zoneinfo_class(py)?.bind(py).call1((key,)).map_err(|err| {
                        crate::errors::ThawError::new_err(format!(
                            "cannot read the time zone {key:?} of the {} at byte {}: {}",
                            core_typed::kind_name(e.kind),
                            e.start,
                            err.value(py)
                        ))
                    })?;
                    Some(tz.cast_into::<PyTzInfo>()?)
                }
            };
            let c = m.clock;
            match m.date {
                Some(d) => PyDateTime::new_with_fold(
                    py,
                    d.year as i32,
                    d.month,
                    d.day,
                    c.hour,
                    c.minute,
                    c.second,
                    c.micro,
                    tz.as_ref(),
                    m.fold,
                )?
                .into_any(),
                None => PyTime::new_with_fold(py, c.hour, c.minute, c.second, c.micro, tz.as_ref(), m.fold)?.into_any(),
            }
        }
        KIND_TIMEDELTA => {
            let d = core_typed::decode_delta(e).map_err(&bad)?;
            PyDelta::new(py, d.days, d.seconds as i32, d.micros as i32, false)?.into_any()
        }
        KIND_DECIMAL => {
            let text = std::str::from_utf8(e.payload).map_err(|_| bad("text is not ASCII"))?;
            known(py)?.decimal.bind(py).call1((text,)).map_err(|err| bad(&err.to_string()))?
        }
        KIND_UUID => {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("bytes", pyo3::types::PyBytes::new(py, e.payload))?;
            known(py)?.uuid.bind(py).call((), Some(&kwargs))?
        }
        KIND_RANGE => {
            let (a, b, c) = core_typed::decode_range(e).map_err(&bad)?;
            unsafe {
                Bound::from_owned_ptr_or_err(
                    py,
                    ffi::PyObject_CallFunction(
                        std::ptr::addr_of_mut!(ffi::PyRange_Type).cast(),
                        c"LLL".as_ptr(),
                        a,
                        b,
                        c,
                    ),
                )?
            }
        }
        KIND_ARRAY => {
            let (code, data) = core_typed::decode_array(e).map_err(&bad)?;
            let code = (code as char).to_string();
            let arr = known(py)?.array.bind(py).call1((code,))?;
            arr.call_method1(pyo3::intern!(py, "frombytes"), (pyo3::types::PyBytes::new(py, data),))?;
            arr
        }
        KIND_FRACTION => {
            let f = bale_core::fraction::decode(e).map_err(&bad)?;
            let int = |b: &[u8]| unsafe { crate::convert::owned(py, crate::convert::big_int(b)) };
            // The constructor brings a fraction to lowest terms whatever the bytes say.
            fraction_class(py)?.bind(py).call1((int(f.num)?, int(f.den)?))?
        }
        KIND_PATH => {
            let p = bale_core::path::decode(e).map_err(&bad)?;
            let text = unsafe {
                Bound::from_owned_ptr_or_err(
                    py,
                    ffi::PyUnicode_DecodeUTF8(
                        p.text.as_ptr().cast(),
                        p.text.len() as ffi::Py_ssize_t,
                        c"surrogatepass".as_ptr(),
                    ),
                )
            }
            .map_err(|_| bad("path text is not UTF-8"))?;
            let cls = path_classes(py)?[p.class as usize - 1].bind(py);
            // A WindowsPath cannot be made on a posix system, nor the reverse.
            cls.call1((text,)).map_err(|err| {
                crate::errors::ThawError::new_err(format!(
                    "cannot make the {} at byte {} on this system: {}",
                    bale_core::path::class_name(p.class),
                    e.start,
                    err.value(py)
                ))
            })?
        }
        _ => return Err(bad("unknown kind")),
    };
    Ok(obj.into_ptr())
}

/// A numpy array or scalar from an NDARRAY object: over the region's
/// memory (read-only, zero copy) unless `copy`.
pub fn ndarray_to_py(py: Python<'_>, region: &Bound<'_, PyAny>, a: &NdArray<'_>, copy: bool) -> PyResult<Py<PyAny>> {
    let buffer = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyMemoryView_FromObject(region.as_ptr()))? };
    array_from(py, &buffer, a.data_off, a, copy)
}

/// A writable copy of a stored array (for `thaw`), from its data as bytes.
pub fn ndarray_from_bytes(
    py: Python<'_>,
    data: &Bound<'_, pyo3::types::PyBytes>,
    a: &NdArray<'_>,
) -> PyResult<Py<PyAny>> {
    array_from(py, data.as_any(), 0, a, true)
}

/// `bale._types.array_from` over `buffer`, whose byte `offset` is where `a`'s data starts.
fn array_from(
    py: Python<'_>,
    buffer: &Bound<'_, PyAny>,
    offset: usize,
    a: &NdArray<'_>,
    copy: bool,
) -> PyResult<Py<PyAny>> {
    let shape = PyTuple::new(py, (0..a.ndim()).map(|i| a.dim(i)))?;
    known(py)?
        .types
        .bind(py)
        .getattr(pyo3::intern!(py, "array_from"))?
        .call1((buffer, offset, a.data.len(), shape, a.dtype, a.flags, copy))
        .map(Bound::unbind)
        .map_err(|err| array_error(py, a, err))
}

fn array_error(py: Python<'_>, a: &NdArray<'_>, err: PyErr) -> PyErr {
    if err.is_instance_of::<pyo3::exceptions::PyImportError>(py) {
        PyTypeError::new_err("reading a numpy array from a region needs numpy installed")
    } else if err.is_instance_of::<crate::errors::FormatError>(py) {
        err
    } else {
        malformed(&format!("ndarray object at byte {}: {}", a.start, err.value(py)))
    }
}

/// The parts of a numpy array (or scalar) to store: contiguous bytes,
/// flags, shape and dtype text. `keep` holds the buffer's owner.
pub struct ArrayParts {
    pub itemsize: u64,
    pub flags: u32,
    pub shape: Vec<u64>,
    pub dtype: String,
    view: ffi::Py_buffer,
}

impl ArrayParts {
    pub fn new(py: Python<'_>, obj: &Bound<'_, PyAny>, scalar: bool) -> PyResult<ArrayParts> {
        let parts = known(py)?.types.bind(py).getattr(pyo3::intern!(py, "array_parts"))?.call1((obj, scalar))?;
        let parts = parts.cast_into::<PyTuple>()?;
        let data = parts.get_item(0)?;
        let mut view: ffi::Py_buffer = unsafe { std::mem::zeroed() };
        if unsafe { ffi::PyObject_GetBuffer(data.as_ptr(), &mut view, ffi::PyBUF_SIMPLE) } != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(ArrayParts {
            itemsize: parts.get_item(4)?.extract()?,
            flags: parts.get_item(1)?.extract()?,
            shape: parts.get_item(2)?.extract()?,
            dtype: parts.get_item(3)?.extract()?,
            view,
        })
    }
    pub fn data(&self) -> &[u8] {
        if self.view.len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.view.len as usize) }
    }
}

impl Drop for ArrayParts {
    fn drop(&mut self) {
        // Dropped while the compactor holds the GIL.
        unsafe { ffi::PyBuffer_Release(&mut self.view) };
    }
}

/// Checks, with numpy, what a verification found that only numpy can
/// check: each distinct dtype, and the code points of text arrays. Without
/// numpy there is nothing to check (arrays cannot be read at all).
pub fn check_arrays(py: Python<'_>, r: &Reader<'_>, report: &bale_core::Report) -> PyResult<()> {
    if report.array_types.is_empty() || py.import("numpy").is_err() {
        return Ok(());
    }
    let check = known(py)?.types.bind(py).getattr(pyo3::intern!(py, "check_dtype"))?;
    for t in &report.array_types {
        check
            .call1((t.dtype.as_str(), t.flags, t.itemsize))
            .map_err(|e| malformed(&format!("ndarray dtype {:?} is not valid here: {}", t.dtype, e.value(py))))?;
    }
    for &off in &report.text_arrays {
        if let Value::NdArray(a) = r.decode(off as u64, r.buf().len()).map_err(crate::errors::format_error)? {
            // A copy: nothing made here may point into memory not yet adopted.
            ndarray_from_bytes(py, &pyo3::types::PyBytes::new(py, a.data), &a)?;
        }
    }
    Ok(())
}

/// A record type resolved for thawing: the class and how to rebuild it
/// (`bale._types.RecordType`, read by attribute name).
#[derive(FromPyObject)]
pub struct Resolved {
    pub cls: Py<PyAny>,
    pub flavor: u64,
    pub attrs: Vec<Py<PyString>>,
    pub make: Option<Py<PyAny>>,
}

/// The stored name (for messages) and field names (exact `str` objects) of a record type.
pub fn type_parts<'py>(py: Python<'py>, r: &Reader<'_>, ty: RecType) -> PyResult<(String, Bound<'py, PyTuple>)> {
    let name = r.type_name(ty).map_err(crate::errors::format_error)?.to_string_lossy();
    let mut fields = Vec::with_capacity(ty.fields.len);
    for i in 0..ty.fields.len {
        match r.field_name(ty, i).map_err(crate::errors::format_error)? {
            Value::Str(s) => fields.push(unsafe { crate::convert::owned(py, crate::convert::make_str(py, &s)?)? }),
            _ => return Err(malformed("record field name is not a string")),
        }
    }
    Ok((name, PyTuple::new(py, fields)?))
}

/// Finds the class of a stored record type (see `bale._types.resolve`).
pub fn resolve(py: Python<'_>, r: &Reader<'_>, ty: RecType, types: Option<&Py<PyTuple>>) -> PyResult<Resolved> {
    let (name, fields) = type_parts(py, r, ty)?;
    let k = known(py)?;
    let res = k.types.bind(py).getattr(pyo3::intern!(py, "resolve"))?.call1((
        name,
        ty.flavor,
        fields,
        types.map(|t| t.bind(py).clone()),
    ));
    let res = res.map_err(|e| {
        let mismatch = k.types.bind(py).getattr(pyo3::intern!(py, "TypeMismatch"));
        if e.is_instance_of::<pyo3::exceptions::PyLookupError>(py) || mismatch.is_ok_and(|cls| e.is_instance(py, &cls))
        {
            crate::errors::ThawError::new_err(e.value(py).to_string())
        } else {
            e
        }
    })?;
    res.extract()
}

static OBJECT_NEW: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static TUPLE_NEW: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// An instance of a resolved record type from its field values.
pub fn build_record(py: Python<'_>, res: &Resolved, values: Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let cls = res.cls.bind(py);
    match res.flavor {
        FLAVOR_NAMEDTUPLE => {
            let new = TUPLE_NEW.get_or_try_init(py, || {
                Ok::<_, PyErr>(py.get_type::<PyTuple>().getattr(pyo3::intern!(py, "__new__"))?.unbind())
            })?;
            Ok(new.bind(py).call1((cls, values))?.unbind())
        }
        FLAVOR_ENUM | FLAVOR_ENUM_MIXIN => {
            if values.len() != 2 {
                return Err(malformed("an enum member's record does not hold exactly its name and value"));
            }
            let value = values.get_item(1)?;
            // The member for the value, as `cls(value)` finds it.
            cls.call1((value,))
                .map(Bound::unbind)
                .map_err(|e| crate::errors::ThawError::new_err(format!("cannot thaw enum member: {}", e.value(py))))
        }
        _ if res.make.is_some() => Ok(res.make.as_ref().unwrap().bind(py).call1(values)?.unbind()),
        _ => {
            // Dataclasses: made without __init__ or __post_init__ (as pickle
            // does), fields set past a frozen __setattr__.
            let new = OBJECT_NEW.get_or_try_init(py, || {
                Ok::<_, PyErr>(py.get_type::<pyo3::types::PyAny>().getattr(pyo3::intern!(py, "__new__"))?.unbind())
            })?;
            let obj = new.bind(py).call1((cls,))?;
            for (attr, v) in res.attrs.iter().zip(values.iter()) {
                if unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), attr.as_ptr(), v.as_ptr()) } != 0 {
                    return Err(PyErr::fetch(py));
                }
            }
            Ok(obj.unbind())
        }
    }
}
