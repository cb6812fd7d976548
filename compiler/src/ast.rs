//! The GDL abstract syntax, as written: rules whose bodies may still hold
//! `or`, `and` and nested `not`. Validation turns it into a [`crate::Game`].

use crate::source::Span;
use crate::symbol::Sym;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    Const(Sym, Span),
    Var(Sym, Span),
    /// A function term `(f t1 ... tn)`, n >= 1.
    App(Sym, Vec<Term>, Span),
}

impl Term {
    pub fn span(&self) -> Span {
        match self {
            Term::Const(_, s) | Term::Var(_, s) | Term::App(_, _, s) => *s,
        }
    }

    /// Calls `f` on every variable occurrence, left to right.
    pub fn for_each_var(&self, f: &mut impl FnMut(Sym, Span)) {
        match self {
            Term::Const(..) => {}
            Term::Var(v, s) => f(*v, *s),
            Term::App(_, args, _) => args.iter().for_each(|a| a.for_each_var(f)),
        }
    }
}

/// A relation applied to arguments: `(rel t1 ... tn)`, or a bare `rel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Atom {
    pub rel: Sym,
    pub args: Vec<Term>,
    pub span: Span,
}

impl Atom {
    pub fn for_each_var(&self, f: &mut impl FnMut(Sym, Span)) {
        self.args.iter().for_each(|a| a.for_each_var(f));
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Literal {
    Atom(Atom),
    Not(Box<Literal>, Span),
    Distinct(Term, Term, Span),
    Or(Vec<Literal>, Span),
    And(Vec<Literal>, Span),
}

/// `(<= head body...)`; a fact has an empty body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub head: Atom,
    pub body: Vec<Literal>,
    pub span: Span,
}

/// A whole game description, rules in file order.
#[derive(Clone, Debug, Default)]
pub struct Description {
    pub rules: Vec<Rule>,
    /// What reading passed over (Prolog lines between forms).
    pub warnings: Vec<String>,
}
