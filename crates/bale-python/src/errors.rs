//! bale's exception types and conversions into them.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::{PyErr, PyResult, Python};

create_exception!(bale, CompactError, PyTypeError, "A value that bale cannot compact (names the type and its path).");
create_exception!(bale, FormatError, PyValueError, "Bytes that are not a valid bale region.");
create_exception!(
    bale,
    ThawError,
    PyTypeError,
    "A valid stored value this process cannot rebuild: a record whose class it does not know (or knows with other fields), or a time zone its database lacks."
);

pub fn format_error(e: bale_core::FormatError) -> PyErr {
    FormatError::new_err(e.to_string())
}

/// One level of Python's recursion check (`Py_EnterRecursiveCall`), left
/// when dropped: for view methods that Python calls recursively through C
/// (a record view's hash hashes its fields, which may be record views), so
/// deep data raises `RecursionError` instead of overflowing the C stack.
///
/// Python's count alone is not enough: 3.12 and 3.13 allow 10,000 C levels
/// whatever a level costs, and a level here (Python's slot, PyO3's
/// trampoline, the view method, the tuple it hashes) can take more than the
/// 800 bytes an 8 MiB stack gives each; a thread started with a small
/// `threading.stack_size` has less. So the guard also measures the stack
/// that is left.
pub struct RecursionGuard(());

/// Stack kept free below the deepest guarded call: room for what Python and
/// the view method run between two guards (a user `__repr__`, a hash).
const STACK_RESERVE: usize = 256 * 1024;

impl RecursionGuard {
    pub fn enter(py: Python<'_>, while_doing: &std::ffi::CStr) -> PyResult<RecursionGuard> {
        check_stack(while_doing)?;
        if unsafe { pyo3::ffi::Py_EnterRecursiveCall(while_doing.as_ptr()) } != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(RecursionGuard(()))
    }
}

/// `RecursionError` if less than `STACK_RESERVE` of this thread's stack is
/// left: for code that recurses natively, checked once a level.
pub fn check_stack(while_doing: &std::ffi::CStr) -> PyResult<()> {
    if stacker::remaining_stack().is_some_and(|left| left < STACK_RESERVE) {
        return Err(pyo3::exceptions::PyRecursionError::new_err(format!(
            "maximum recursion depth exceeded{} (the C stack is nearly used up)",
            while_doing.to_string_lossy()
        )));
    }
    Ok(())
}

impl Drop for RecursionGuard {
    fn drop(&mut self) {
        unsafe { pyo3::ffi::Py_LeaveRecursiveCall() };
    }
}

/// `OSError(errno, strerror, filename)` for a failure on `path` (Python
/// makes it the errno's subclass, e.g. `FileNotFoundError`).
pub fn os_error(e: std::io::Error, path: &std::path::Path) -> PyErr {
    let filename = path.to_string_lossy().into_owned();
    match e.raw_os_error() {
        Some(errno) => {
            let text = e.to_string();
            let suffix = format!(" (os error {errno})");
            let strerror = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
            PyOSError::new_err((errno, strerror, filename))
        }
        None => PyOSError::new_err((0, e.to_string(), filename)),
    }
}
