//! Every read of CPython's internals, one module per struct.
//!
//! The rest of the binding goes through the C API or through these
//! functions; nothing else casts an object to a CPython struct. Each module
//! says which fields it reads and for which versions, and is bounded on
//! both sides: a read of a private layout is compiled only for the versions
//! it was checked on (a later one, or PyPy, or the limited API takes the
//! C-API path), and the public struct fields read by CPython's own macros
//! are bounded by the versions pyo3-ffi knows, which refuses any other.
//!
//! | module | struct | reads | private layout, bounds |
//! | --- | --- | --- | --- |
//! | `pylong` | `PyLongObject` | `ob_size`, 30-bit digits | yes: 3.10 and 3.11, 30-bit digits |
//! | `pydict` | `PyDictObject`, `PyDictKeysObject` | `ma_used`, `ma_keys`, `ma_values`; the entry table | the entry table: yes: 3.11 to 3.14, GIL builds, checked at import |
//! | `pyunicode` | `PyASCIIObject`, `PyCompactUnicodeObject` | kind, length, data, the `ascii` bit (3.14: the units are scanned instead) | no (the `PyUnicode_*` macros) |
//! | `pyfloat` | `PyFloatObject` | `ob_fval` | no (`PyFloat_AS_DOUBLE`) |
//! | `pybytes` | `PyBytesObject` | `ob_sval`, size | no (`PyBytes_AS_STRING`) |
//! | `pylist` | `PyListObject` | `ob_item`, `Py_SIZE` | no (the `PyList_GET_*` macros) |
//! | `pytuple` | `PyTupleObject` | `ob_item`, `Py_SIZE` | no (the `PyTuple_GET_*` macros) |
//! | `pytype` | `PyTypeObject` | `tp_getattro`, `tp_dictoffset`, `tp_mro`, `tp_dict`, `tp_basicsize` | no; read on 3.10 to 3.14 only all the same |
//!
//! `BALE_NO_FAST_PATHS` (see `switched_off`) keeps every private read and
//! every shortcut that depends on a layout off for the whole process, so a
//! test run covers the C-API paths alone.

pub mod pybytes;
pub mod pydict;
pub mod pyfloat;
pub mod pylist;
pub mod pylong;
pub mod pytuple;
pub mod pytype;
pub mod pyunicode;

/// Whether `BALE_NO_FAST_PATHS` (set to anything but empty or `0` when
/// bale is imported) turns off every reading of CPython's private layouts.
pub fn switched_off() -> bool {
    std::env::var_os("BALE_NO_FAST_PATHS").is_some_and(|v| !v.is_empty() && v != "0")
}
