//! `bale.Region`: a region's bytes plus its root slot.

use std::ffi::c_int;
use std::io::Write;
use std::path::{Path, PathBuf};

use bale_core::{Reader, Value};
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::format_error;
use crate::storage::{buffer_ptr, Storage};
use crate::views::value_to_py;

#[pyclass(frozen, module = "bale", name = "Region")]
pub struct Region {
    storage: Storage,
    root: u64,
    shared: bool,
}

impl Region {
    /// Adopts `storage` after checking its header (O(1)), or everything when `verify`.
    pub fn adopt(py: Python<'_>, storage: Storage, verify: bool) -> PyResult<Region> {
        let header = bale_core::parse_header(storage.bytes()).map_err(format_error)?;
        let region = Region { storage, root: header.root, shared: header.flags & bale_core::format::FLAG_SHARED != 0 };
        if verify {
            region.verify(py)?;
        }
        Ok(region)
    }

    #[inline]
    pub fn buf(&self) -> &[u8] {
        self.storage.bytes()
    }
    #[inline]
    pub fn reader(&self) -> Reader<'_> {
        Reader::new(self.buf())
    }
    pub fn is_shared(&self) -> bool {
        self.shared
    }
    pub fn root_value(&self) -> PyResult<Value<'_>> {
        self.reader().decode(self.root, self.buf().len()).map_err(format_error)
    }
}

fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no file name"))?;
    let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let tmp = dir.join(format!(".{}.{}-{}.tmp", name.to_string_lossy(), std::process::id(), nonce));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // Make the rename itself durable.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[pymethods]
impl Region {
    /// The root value: a read-only view for containers, a plain value for scalars.
    #[getter]
    fn root(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let r = slf.get();
        let v = r.root_value()?;
        value_to_py(slf.py(), slf.as_unbound(), v)
    }

    /// Size of the region in bytes (equals `len(bytes(region))`).
    #[getter]
    fn nbytes(&self) -> usize {
        self.buf().len()
    }

    /// Full check of structure and checksum; raises FormatError.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let buf = self.buf();
        py.detach(|| bale_core::Region::new_verified(buf).map(|_| ())).map_err(format_error)
    }

    /// Writes the region to `path` atomically (temporary file, fsync, rename).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let buf = self.buf();
        py.detach(|| write_atomically(&path, buf)).map_err(PyErr::from)
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.buf())
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("bale regions are read-only"));
        }
        let buf = slf.get().buf();
        let rc = ffi::PyBuffer_FillInfo(view, slf.as_ptr(), buffer_ptr(buf), buf.len() as ffi::Py_ssize_t, 1, flags);
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    /// Pickle protocol 5 ships the region's memory as one out-of-band
    /// buffer (no copy; the receiver adopts it with `bale.load`, O(1));
    /// older protocols ship it in-band as bytes.
    fn __reduce_ex__<'py>(slf: &Bound<'py, Self>, protocol: i32) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let py = slf.py();
        let load = py.import("bale")?.getattr("load")?;
        let payload = if protocol >= 5 {
            py.import("pickle")?.getattr("PickleBuffer")?.call1((slf,))?
        } else {
            PyBytes::new(py, slf.get().buf()).into_any()
        };
        Ok((load, (payload,)))
    }

    /// Regions are immutable: a copy is the region itself.
    fn __copy__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __deepcopy__<'py>(slf: Bound<'py, Self>, _memo: &Bound<'py, PyAny>) -> Bound<'py, Self> {
        slf
    }

    fn __repr__(&self) -> String {
        let what = match self.root_value() {
            Ok(Value::List(s)) => format!("list of {}", s.len),
            Ok(Value::Tuple(s)) => format!("tuple of {}", s.len),
            Ok(Value::Dict(d)) => format!("dict of {}", d.len),
            Ok(Value::Set(t)) => format!("set of {}", t.len),
            Ok(Value::FrozenSet(t)) => format!("frozenset of {}", t.len),
            Ok(_) => "scalar".to_string(),
            Err(_) => "malformed".to_string(),
        };
        format!("<bale.Region {} bytes, root: {}>", self.buf().len(), what)
    }
}
