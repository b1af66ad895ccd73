//! bale's exception types and conversions into them.

use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::PyErr;

create_exception!(bale, CompactError, PyTypeError, "A value that bale cannot compact (names the type and its path).");
create_exception!(bale, FormatError, PyValueError, "Bytes that are not a valid bale region.");
create_exception!(
    bale,
    ThawError,
    PyTypeError,
    "A stored record whose class this process does not know, or knows with other fields."
);

pub fn format_error(e: bale_core::FormatError) -> PyErr {
    FormatError::new_err(e.to_string())
}
