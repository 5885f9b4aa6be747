//! One error type for everything that reads dataset files: it always names the file and, when known, the
//! line or JSON path of the problem.

use crate::json::{JsonPath, ParseError};
use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{file}: cannot read: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}: {}{message}", Location(.location))]
    Invalid { file: String, location: String, message: String },
}

struct Location<'a>(&'a str);

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "{}: ", self.0)
        }
    }
}

impl DatasetError {
    pub fn io(file: &str, source: std::io::Error) -> Self {
        DatasetError::Io { file: file.to_string(), source }
    }

    /// A problem at `location` (a JSON path such as `$.messages[3].role`, or `line 12`).
    pub fn at(file: &str, location: impl fmt::Display, message: impl Into<String>) -> Self {
        DatasetError::Invalid { file: file.to_string(), location: location.to_string(), message: message.into() }
    }

    /// A problem with the whole file.
    pub fn whole(file: &str, message: impl Into<String>) -> Self {
        DatasetError::Invalid { file: file.to_string(), location: String::new(), message: message.into() }
    }

    /// A JSON syntax error; `line_offset` shifts line numbers for JSON embedded in a larger file (JSONL).
    pub fn json(file: &str, e: &ParseError, line_offset: usize) -> Self {
        let location = if line_offset == 0 {
            format!("line {}, column {} (at {})", e.line, e.column, e.path)
        } else {
            format!("line {}, column {} (at {})", e.line + line_offset, e.column, e.path)
        };
        DatasetError::at(file, location, format!("not valid JSON: {}", e.message))
    }

    /// A line of a JSON-lines file that is not valid JSON: the file's line and the column in it.
    pub fn json_line(file: &str, e: &ParseError, line: usize) -> Self {
        DatasetError::at(file, format!("line {line}, column {}", e.column), format!("not valid JSON: {}", e.message))
    }

    /// A wrong-type or missing field at a JSON path.
    pub fn field(file: &str, path: &JsonPath, message: impl Into<String>) -> Self {
        DatasetError::at(file, path, message)
    }

    /// The file name this error is about.
    pub fn file(&self) -> &str {
        match self {
            DatasetError::Io { file, .. } | DatasetError::Invalid { file, .. } => file,
        }
    }

    /// Prefixes the location with a line number, for errors inside one line of a JSONL file.
    pub fn on_line(self, line: usize) -> Self {
        match self {
            DatasetError::Invalid { file, location, message } => {
                let location =
                    if location.is_empty() { format!("line {line}") } else { format!("line {line}, {location}") };
                DatasetError::Invalid { file, location, message }
            }
            other => other,
        }
    }
}

/// Decodes UTF-8, reporting the line and column of the first invalid byte.
pub(crate) fn utf8<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, DatasetError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let good = &bytes[..e.valid_up_to()];
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = good.len() - good.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
        DatasetError::at(file, format!("line {line}, column {column}"), "invalid UTF-8")
    })
}
