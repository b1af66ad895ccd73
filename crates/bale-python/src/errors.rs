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
    "A valid stored value this process cannot rebuild: a record whose class it does not know (or knows with other fields), or a time zone its database lacks."
);

pub fn format_error(e: bale_core::FormatError) -> PyErr {
    FormatError::new_err(e.to_string())
}
