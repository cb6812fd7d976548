//! Disjunctive normal form of rule bodies: `or`, `and` and nested `not` are
//! pushed apart (De Morgan) until each body is a conjunction of positive
//! atoms, negated atoms, `distinct` and its negation.

use crate::ast::{Atom, Literal, Term};
use crate::source::Span;

/// Most conjunctions one rule may expand into.
pub(crate) const MAX_DISJUNCTS: usize = 4096;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Leaf<'a> {
    Pos(&'a Atom),
    Neg(&'a Atom),
    Distinct(&'a Term, &'a Term),
    /// `(not (distinct a b))`.
    Same(&'a Term, &'a Term),
}

pub(crate) type Conjunction<'a> = Vec<Leaf<'a>>;

/// Expands a rule body. Errors (with the span of the body literal that
/// exploded) when more than [`MAX_DISJUNCTS`] conjunctions would result.
pub(crate) fn dnf(body: &[Literal]) -> Result<Vec<Conjunction<'_>>, Span> {
    conj(body.iter(), false)
}

fn span_of(l: &Literal) -> Span {
    match l {
        Literal::Atom(a) => a.span,
        Literal::Not(_, s) | Literal::Distinct(_, _, s) | Literal::Or(_, s) | Literal::And(_, s) => *s,
    }
}

/// The product of the expansions of `lits` (each negated if `neg`).
fn conj<'a>(lits: impl Iterator<Item = &'a Literal>, neg: bool) -> Result<Vec<Conjunction<'a>>, Span> {
    let mut acc: Vec<Conjunction<'a>> = vec![Vec::new()];
    for l in lits {
        let alts = lit(l, neg)?;
        if acc.len().saturating_mul(alts.len()) > MAX_DISJUNCTS {
            return Err(span_of(l));
        }
        let mut next = Vec::with_capacity(acc.len() * alts.len());
        for a in &acc {
            for b in &alts {
                let mut c = a.clone();
                c.extend_from_slice(b);
                next.push(c);
            }
        }
        acc = next;
    }
    Ok(acc)
}

/// The union of the expansions of `lits`.
fn disj<'a>(lits: &'a [Literal], neg: bool) -> Result<Vec<Conjunction<'a>>, Span> {
    let mut out = Vec::new();
    for l in lits {
        out.extend(lit(l, neg)?);
        if out.len() > MAX_DISJUNCTS {
            return Err(span_of(l));
        }
    }
    Ok(out)
}

fn lit(l: &Literal, neg: bool) -> Result<Vec<Conjunction<'_>>, Span> {
    Ok(match l {
        Literal::Atom(a) => vec![vec![if neg { Leaf::Neg(a) } else { Leaf::Pos(a) }]],
        Literal::Distinct(x, y, _) => vec![vec![if neg { Leaf::Same(x, y) } else { Leaf::Distinct(x, y) }]],
        Literal::Not(inner, _) => lit(inner, !neg)?,
        Literal::And(ls, _) if !neg => conj(ls.iter(), false)?,
        Literal::Or(ls, _) if neg => conj(ls.iter(), true)?,
        Literal::Or(ls, _) => disj(ls, false)?,
        Literal::And(ls, _) => disj(ls, true)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::symbol::SymbolTable;
    use crate::syntax::parse;

    fn shapes(text: &str) -> Vec<String> {
        let src = Source::new("t", text);
        let mut syms = SymbolTable::new();
        let d = parse(&src, &mut syms).unwrap();
        let c = dnf(&d.rules[0].body).unwrap();
        c.iter()
            .map(|conj| {
                conj.iter()
                    .map(|l| match l {
                        Leaf::Pos(a) => syms.name(a.rel).to_string(),
                        Leaf::Neg(a) => format!("~{}", syms.name(a.rel)),
                        Leaf::Distinct(..) => "d".into(),
                        Leaf::Same(..) => "=".into(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn or_and_not_expand() {
        assert_eq!(shapes("(<= h a (or b c) d)"), ["a b d", "a c d"]);
        assert_eq!(shapes("(<= h (not (or a b)))"), ["~a ~b"]);
        assert_eq!(shapes("(<= h (not (and a (not b))))"), ["~a", "b"]);
        assert_eq!(shapes("(<= h (or a (and b c)) (not (distinct ?x ?y)))"), ["a =", "b c ="]);
    }

    #[test]
    fn explosion_is_bounded() {
        let body: String = (0..20).map(|i| format!("(or (a{i}) (b{i}))")).collect();
        let src = Source::new("t", format!("(<= h {body})"));
        let mut syms = SymbolTable::new();
        let d = parse(&src, &mut syms).unwrap();
        assert!(dnf(&d.rules[0].body).is_err());
    }
}
