//! The `propel._propel` extension module: GDL games as state machines for
//! Python (see docs/python.md). The Python package `propel` wraps it.

mod batch;
mod errors;
mod game;
mod machine;
mod numpy;
mod search;

use game::{Game, Source, State};
use machine::Kind;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Loads a game from its text. `name` names it in errors (a file path, or
/// `<text>`); `machine` is "jit", "propnet" or "prover". Raises GdlError
/// (with file, line and col) for invalid GDL, BuildError when the machine
/// cannot be built.
#[pyfunction]
#[pyo3(signature = (name, text, machine="jit", ground_seconds=60.0, passes="all"))]
fn load_text(
    py: Python<'_>,
    name: String,
    text: Vec<u8>,
    machine: &str,
    ground_seconds: f64,
    passes: &str,
) -> PyResult<Game> {
    let kind = Kind::parse(machine)
        .ok_or_else(|| PyValueError::new_err(format!("unknown machine `{machine}` (jit, propnet or prover)")))?;
    let source = Source { name, text, kind, ground_seconds, passes: passes.to_string() };
    Ok(Game { shared: game::load(py, source)? })
}

#[pyfunction]
fn _restore_game(
    py: Python<'_>,
    name: String,
    text: Vec<u8>,
    machine: &str,
    ground_seconds: f64,
    passes: String,
) -> PyResult<Game> {
    let kind = Kind::parse(machine).ok_or_else(|| PyValueError::new_err(format!("unknown machine `{machine}`")))?;
    let source = Source { name, text, kind, ground_seconds, passes };
    Ok(Game { shared: game::restore(py, source)? })
}

#[pyfunction]
fn _restore_state(game: &Bound<'_, Game>, facts: Vec<String>) -> PyResult<State> {
    game.get().state_from_facts(facts)
}

/// The standings of match records (a JSON list of records as `propel
/// match` and the tournaments write them), as JSON: the table `propel
/// match` prints and `propel report` shows (per player: matches, mean
/// goal, wins, draws, losses, score and Elo with 95% intervals, errors),
/// computed by the same code.
#[pyfunction]
fn standings(records: &str) -> PyResult<String> {
    let recs: Vec<serde_json::Value> =
        serde_json::from_str(records).map_err(|e| PyValueError::new_err(format!("match records: {e}")))?;
    Ok(propel_runtime::standings::Standings::of_records(&recs, &[]).json().to_string())
}

#[pymodule]
fn _propel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Game>()?;
    m.add_class::<State>()?;
    m.add_function(wrap_pyfunction!(load_text, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_game, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_state, m)?)?;
    m.add_function(wrap_pyfunction!(standings, m)?)?;
    m.add("PropelError", py.get_type::<errors::PropelError>())?;
    m.add("GdlError", py.get_type::<errors::GdlError>())?;
    m.add("BuildError", py.get_type::<errors::BuildError>())?;
    m.add("MachineError", py.get_type::<errors::MachineError>())?;
    Ok(())
}
