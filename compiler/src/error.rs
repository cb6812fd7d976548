//! The front end's error type: what went wrong, and where in the file.

use crate::source::Loc;
use std::fmt;

/// Why a game description was refused. Each kind maps to a short category
/// (`category()`) used in corpus reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error("syntax error: {0}")]
    Syntax(String),
    #[error("{0}")]
    Arity(String),
    #[error("unsafe rule: {0}")]
    Unsafe(String),
    #[error("negation is not stratified: {0}")]
    Unstratified(String),
    #[error("{0}")]
    Placement(String),
    #[error("{0}")]
    Missing(String),
    #[error("GDL-II is not supported yet: {0}")]
    GdlII(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("cannot read the file: {0}")]
    Io(String),
}

impl ErrorKind {
    /// Short stable name of the kind, for reports and tests.
    pub fn category(&self) -> &'static str {
        match self {
            ErrorKind::Syntax(_) => "syntax",
            ErrorKind::Arity(_) => "arity",
            ErrorKind::Unsafe(_) => "unsafe",
            ErrorKind::Unstratified(_) => "unstratified",
            ErrorKind::Placement(_) => "placement",
            ErrorKind::Missing(_) => "missing",
            ErrorKind::GdlII(_) => "gdl-ii",
            ErrorKind::TooLarge(_) => "too-large",
            ErrorKind::Io(_) => "io",
        }
    }
}

/// An error in a game description, with the position it concerns where
/// there is one. Displays as `file:line:col: message` plus the offending text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdlError {
    pub file: String,
    pub loc: Option<Loc>,
    pub kind: ErrorKind,
}

impl GdlError {
    pub fn at(loc: Loc, kind: ErrorKind) -> GdlError {
        GdlError { file: loc.file.clone(), loc: Some(loc), kind }
    }

    pub fn in_file(file: &str, kind: ErrorKind) -> GdlError {
        GdlError { file: file.to_string(), loc: None, kind }
    }
}

impl fmt::Display for GdlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.loc {
            Some(loc) => {
                write!(f, "{}: {}", loc, self.kind)?;
                if !loc.excerpt.is_empty() {
                    write!(f, "\n    | {}", loc.excerpt)?;
                }
                Ok(())
            }
            None => write!(f, "{}: {}", self.file, self.kind),
        }
    }
}

impl std::error::Error for GdlError {}
