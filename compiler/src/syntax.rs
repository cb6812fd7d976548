//! From s-expressions to the GDL syntax tree: checks the shape of every
//! form (`(<= head body...)`, `(not L)`, `(distinct a b)`, ...).

use crate::ast::{Atom, Description, Literal, Rule, Term};
use crate::error::{ErrorKind, GdlError};
use crate::reader::{Node, NodeId, Sexprs};
use crate::source::{Source, Span};
use crate::symbol::{Sym, SymbolTable};

struct Builder<'a> {
    src: &'a Source,
    sx: &'a Sexprs,
    syms: &'a SymbolTable,
}

fn is_connective(s: Sym) -> bool {
    matches!(s, Sym::NOT | Sym::OR | Sym::AND | Sym::DISTINCT | Sym::IMPLIED)
}

impl Builder<'_> {
    fn err(&self, span: Span, msg: String) -> GdlError {
        GdlError::at(self.src.loc(span), ErrorKind::Syntax(msg))
    }

    fn term(&self, id: NodeId) -> Result<Term, GdlError> {
        match *self.sx.node(id) {
            Node::Sym(s, span) => Ok(Term::Const(s, span)),
            Node::Var(v, span) => Ok(Term::Var(v, span)),
            Node::List { span, .. } => {
                let kids = self.sx.children(id);
                let Some((&head, rest)) = kids.split_first() else {
                    return Err(self.err(span, "empty list '()' where a term was expected".into()));
                };
                let f = match *self.sx.node(head) {
                    Node::Sym(f, _) => f,
                    _ => {
                        return Err(
                            self.err(self.sx.span(head), "a function term must start with a function symbol".into())
                        )
                    }
                };
                if rest.is_empty() {
                    // `(f)` is read as the constant `f`, as other GDL reasoners do.
                    return Ok(Term::Const(f, span));
                }
                let args = rest.iter().map(|&k| self.term(k)).collect::<Result<_, _>>()?;
                Ok(Term::App(f, args, span))
            }
        }
    }

    fn atom(&self, id: NodeId, what: &str) -> Result<Atom, GdlError> {
        match *self.sx.node(id) {
            Node::Sym(s, span) => {
                if is_connective(s) {
                    return Err(self.err(span, format!("'{}' cannot be used as a {what}", self.syms.name(s))));
                }
                Ok(Atom { rel: s, args: Vec::new(), span })
            }
            Node::Var(_, span) => Err(self.err(span, format!("a variable cannot be a {what}"))),
            Node::List { span, .. } => {
                let kids = self.sx.children(id);
                let Some((&head, rest)) = kids.split_first() else {
                    return Err(self.err(span, format!("empty list '()' where a {what} was expected")));
                };
                let rel = match *self.sx.node(head) {
                    Node::Sym(s, _) => s,
                    Node::Var(..) => {
                        return Err(self.err(self.sx.span(head), "a variable cannot name a relation".into()))
                    }
                    Node::List { .. } => {
                        return Err(self.err(self.sx.span(head), format!("a {what} must start with a relation name")))
                    }
                };
                if is_connective(rel) {
                    return Err(self.err(span, format!("'{}' cannot be used as a {what}", self.syms.name(rel))));
                }
                let args = rest.iter().map(|&k| self.term(k)).collect::<Result<_, _>>()?;
                Ok(Atom { rel, args, span })
            }
        }
    }

    fn literal(&self, id: NodeId) -> Result<Literal, GdlError> {
        if let Node::List { span, .. } = *self.sx.node(id) {
            let kids = self.sx.children(id);
            if let Some(&head) = kids.first() {
                if let Node::Sym(s, _) = *self.sx.node(head) {
                    let rest = &kids[1..];
                    let name = self.syms.name(s);
                    match s {
                        Sym::NOT => {
                            if rest.len() != 1 {
                                return Err(self.err(span, format!("'not' takes one literal, found {}", rest.len())));
                            }
                            return Ok(Literal::Not(Box::new(self.literal(rest[0])?), span));
                        }
                        Sym::DISTINCT => {
                            if rest.len() != 2 {
                                return Err(self.err(span, format!("'distinct' takes two terms, found {}", rest.len())));
                            }
                            return Ok(Literal::Distinct(self.term(rest[0])?, self.term(rest[1])?, span));
                        }
                        Sym::OR | Sym::AND => {
                            if rest.is_empty() {
                                return Err(self.err(span, format!("'{name}' needs at least one literal")));
                            }
                            let lits = rest.iter().map(|&k| self.literal(k)).collect::<Result<_, _>>()?;
                            return Ok(if s == Sym::OR { Literal::Or(lits, span) } else { Literal::And(lits, span) });
                        }
                        Sym::IMPLIED => return Err(self.err(span, "'<=' cannot appear inside a rule body".into())),
                        _ => {}
                    }
                }
            }
        }
        Ok(Literal::Atom(self.atom(id, "literal")?))
    }

    fn rule(&self, id: NodeId) -> Result<Rule, GdlError> {
        let span = self.sx.span(id);
        let kids = self.sx.children(id);
        if let Some(&head) = kids.first() {
            if matches!(*self.sx.node(head), Node::Sym(Sym::IMPLIED, _)) {
                let Some(&h) = kids.get(1) else {
                    return Err(self.err(span, "'<=' needs a head".into()));
                };
                let head = self.atom(h, "rule head")?;
                let body = kids[2..].iter().map(|&k| self.literal(k)).collect::<Result<_, _>>()?;
                return Ok(Rule { head, body, span });
            }
        }
        if let Node::Var(_, s) = *self.sx.node(id) {
            return Err(self.err(s, "a variable on its own is not a sentence".into()));
        }
        Ok(Rule { head: self.atom(id, "fact")?, body: Vec::new(), span })
    }
}

/// Builds the syntax tree of every top-level form.
pub(crate) fn build(src: &Source, sx: &Sexprs, syms: &SymbolTable) -> Result<Description, GdlError> {
    let b = Builder { src, sx, syms };
    let rules = sx.top.iter().map(|&id| b.rule(id)).collect::<Result<_, _>>()?;
    let mut warnings = Vec::new();
    if let Some(first) = sx.skipped.first() {
        let (line, _) = src.line_col(first.start);
        warnings.push(format!(
            "{} line(s) of Prolog syntax between the KIF forms skipped, the first at line {line}",
            sx.skipped.len()
        ));
    }
    Ok(Description { rules, warnings })
}

/// Reads and builds in one step.
pub(crate) fn parse(src: &Source, syms: &mut SymbolTable) -> Result<Description, GdlError> {
    let sx = crate::reader::read(src, syms)?;
    build(src, &sx, syms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<(Description, SymbolTable), GdlError> {
        let src = Source::new("t.kif", text);
        let mut syms = SymbolTable::new();
        parse(&src, &mut syms).map(|d| (d, syms))
    }

    #[test]
    fn rules_and_facts() {
        let (d, syms) = parse_str(
            "(role x) (<= (legal x (mark ?m)) (true (cell ?m b)) (not (true done)) (distinct ?m 1) (or p (q ?m)))",
        )
        .unwrap();
        assert_eq!(d.rules.len(), 2);
        assert!(d.rules[0].body.is_empty());
        let r = &d.rules[1];
        assert_eq!(r.head.rel, Sym::LEGAL);
        assert_eq!(r.body.len(), 4);
        assert!(matches!(r.body[1], Literal::Not(..)));
        assert!(matches!(r.body[2], Literal::Distinct(..)));
        assert!(matches!(&r.body[3], Literal::Or(v, _) if v.len() == 2));
        assert_eq!(syms.name(r.head.args[0].clone().into_const()), "x");
    }

    impl Term {
        fn into_const(self) -> Sym {
            match self {
                Term::Const(s, _) => s,
                _ => panic!(),
            }
        }
    }

    #[test]
    fn malformed_forms_are_errors() {
        for bad in [
            "(<=)",
            "(not a b)",
            "((f) x)",
            "(?x a)",
            "(<= (p) (distinct a))",
            "(<= (p) (or))",
            "?x",
            "(<= ?x p)",
            "(p ())",
        ] {
            let e = parse_str(bad).unwrap_err();
            assert_eq!(e.kind.category(), "syntax", "{bad}: {e}");
            assert!(e.loc.is_some());
        }
    }

    #[test]
    fn empty_application_is_a_constant() {
        let (d, _) = parse_str("(p (f))").unwrap();
        assert!(matches!(d.rules[0].head.args[0], Term::Const(..)));
    }
}
