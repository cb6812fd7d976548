//! Propel's compiler: the GDL front end (reader, syntax, validation), the
//! bottom-up evaluator shared by the prover and the grounder, and the
//! stages that turn a game into a propnet and native code.
//!
//! The stages, in order:
//! [`reader`] (text to s-expressions) → `syntax` (GDL syntax tree) →
//! [`validate`] (a [`Game`]: arities, safety, stratification, placement).
//! [`eval`] evaluates a game's rules bottom-up over terms ([`TermPool`]).
//!
//! Public modules are the ones the runtime, the player and the tests use;
//! the front end's internals (syntax tree, normal form, strata, terms,
//! symbols, sources, relation names) are private, their types re-exported
//! below.

#![warn(unreachable_pub)]

mod ast;
mod deadline;
mod domain;
mod error;
pub mod eval;
pub mod fixed;
mod game;
mod graph;
pub mod ground;
pub mod lookup;
pub mod lower;
pub mod magic;
mod names;
mod normal;
pub mod pipeline;
pub mod project;
pub mod propnet;
pub mod queries;
pub mod reader;
mod source;
mod strata;
mod symbol;
mod syntax;
mod term;
pub mod topdown;
pub mod unfold;
pub mod validate;

pub use deadline::Deadline;
pub use error::{ErrorKind, GdlError};
pub use game::{AtomPat, Clause, Direction, Game, Layer, Lit, Pat, RelId, Relation, Stratum};
pub use source::{game_title, Loc, Source, Span};
pub use symbol::{Sym, SymbolTable};
pub use term::{TermId, TermPool};
pub use validate::{load, load_file};
