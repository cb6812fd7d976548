//! The package's exceptions, and Rust errors turned into them.

use propel_compiler::GdlError as RustGdlError;
use propel_runtime::MachineError as RustMachineError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(_propel, PropelError, PyException, "Base class of every error Propel raises.");
create_exception!(
    _propel,
    GdlError,
    PropelError,
    "The game description is not valid GDL. Attributes: `file`, `line`, `col` (1-based; None when the error has no \
     position, e.g. a file that cannot be read), `excerpt` (the text at that position) and `reason`."
);
create_exception!(
    _propel,
    BuildError,
    PropelError,
    "The game is valid but its machine could not be built (grounding over budget, network too large, code \
     generation failed)."
);
create_exception!(
    _propel,
    MachineError,
    PropelError,
    "The rules failed while a state was evaluated (a goal value that is not 0..100, a non-terminal state without \
     legal moves, a budget exhausted)."
);

/// A GDL error as [`GdlError`], with its position as attributes.
pub(crate) fn gdl_error(py: Python<'_>, e: &RustGdlError) -> PyErr {
    let err = GdlError::new_err(e.to_string());
    let value = err.value(py);
    let (line, col, excerpt) = match &e.loc {
        Some(l) => (Some(l.line), Some(l.col), l.excerpt.clone()),
        None => (None, None, String::new()),
    };
    // Setting attributes on a fresh exception instance cannot fail in
    // practice; if it did, the message still names the position.
    let _ = value.setattr("file", &e.file);
    let _ = value.setattr("line", line);
    let _ = value.setattr("col", col);
    let _ = value.setattr("excerpt", excerpt);
    let _ = value.setattr("reason", e.kind.to_string());
    err
}

pub(crate) fn machine_error(e: RustMachineError) -> PyErr {
    MachineError::new_err(e.to_string())
}

pub(crate) fn build_error(e: impl std::fmt::Display) -> PyErr {
    BuildError::new_err(e.to_string())
}
