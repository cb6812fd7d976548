//! Propel's compiler: the GDL front end (reader, syntax, validation), the
//! bottom-up evaluator shared by the prover and the grounder, and the
//! stages that turn a game into a propnet and native code.
//!
//! The stages, in order:
//! [`reader`] (text to s-expressions) → [`syntax`] (GDL syntax tree) →
//! [`validate`] (a [`Game`]: arities, safety, stratification, placement).
//! [`eval`] evaluates a game's rules bottom-up over [`term`]s.

#![warn(unreachable_pub)]

pub mod ast;
pub mod deadline;
pub mod error;
pub mod eval;
pub mod game;
mod graph;
pub mod ground;
pub mod lower;
pub mod magic;
pub mod names;
pub mod normal;
pub mod pipeline;
pub mod project;
pub mod propnet;
pub mod reader;
pub mod source;
pub mod strata;
pub mod symbol;
pub mod syntax;
pub mod term;
pub mod validate;

pub use deadline::Deadline;
pub use error::{ErrorKind, GdlError};
pub use game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, Relation, Stratum};
pub use source::{Loc, Source, Span};
pub use symbol::{Sym, SymbolTable};
pub use term::{TermId, TermPool};
pub use validate::{load, load_file};
