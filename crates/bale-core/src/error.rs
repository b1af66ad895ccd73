//! The one error type of the core: malformed bytes.

use std::fmt;

/// Bytes that are not a valid region, with the offset where the problem was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    pub message: String,
    pub offset: Option<usize>,
}

impl FormatError {
    pub fn new(message: impl Into<String>) -> Self {
        FormatError { message: message.into(), offset: None }
    }
    pub fn at(offset: usize, message: impl Into<String>) -> Self {
        FormatError { message: message.into(), offset: Some(offset) }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{} (at byte {})", self.message, o),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for FormatError {}

pub type Result<T> = std::result::Result<T, FormatError>;
