//! Ground terms, hash-consed: one `TermId` per distinct term, so equality
//! is an integer compare and a term is built once however often it is
//! derived.

use crate::symbol::{Sym, SymbolTable};
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;
use std::hash::Hasher;

/// Deepest ground term the evaluator builds. Deeper terms only come from
/// rules that build ever larger terms (not valid GDL); they are an error.
pub(crate) const MAX_TERM_DEPTH: u32 = 1000;

/// A ground term in a [`TermPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TermId(pub u32);

#[derive(Clone, Copy, Debug)]
struct Node {
    functor: Sym,
    start: u32,
    len: u32,
    depth: u32,
}

/// The term is deeper than [`MAX_TERM_DEPTH`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooDeep;

#[derive(Clone, Default, Debug)]
pub struct TermPool {
    nodes: Vec<Node>,
    args: Vec<TermId>,
    index: FxHashMap<u64, SmallVec<[TermId; 1]>>,
}

fn key_hash(functor: Sym, args: &[TermId]) -> u64 {
    let mut h = FxHasher::default();
    h.write_u32(functor.0);
    h.write_usize(args.len());
    for a in args {
        h.write_u32(a.0);
    }
    h.finish()
}

impl TermPool {
    pub fn new() -> TermPool {
        TermPool::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The constant `s` (a term with no arguments).
    pub fn constant(&mut self, s: Sym) -> TermId {
        match self.app(s, &[]) {
            Ok(t) => t,
            Err(TooDeep) => unreachable!("a constant has depth 1"),
        }
    }

    pub fn find_constant(&self, s: Sym) -> Option<TermId> {
        self.find(s, &[])
    }

    /// The term `(functor args...)`, built if new.
    pub fn app(&mut self, functor: Sym, args: &[TermId]) -> Result<TermId, TooDeep> {
        let h = key_hash(functor, args);
        if let Some(t) = self.lookup(h, functor, args) {
            return Ok(t);
        }
        let depth = 1 + args.iter().map(|a| self.nodes[a.0 as usize].depth).max().unwrap_or(0);
        if depth > MAX_TERM_DEPTH {
            return Err(TooDeep);
        }
        let t = TermId(self.nodes.len() as u32);
        self.nodes.push(Node { functor, start: self.args.len() as u32, len: args.len() as u32, depth });
        self.args.extend_from_slice(args);
        self.index.entry(h).or_default().push(t);
        Ok(t)
    }

    /// The term `(functor args...)` if it was ever built.
    pub fn find(&self, functor: Sym, args: &[TermId]) -> Option<TermId> {
        self.lookup(key_hash(functor, args), functor, args)
    }

    fn lookup(&self, h: u64, functor: Sym, args: &[TermId]) -> Option<TermId> {
        self.index.get(&h)?.iter().copied().find(|&t| self.functor(t) == functor && self.args(t) == args)
    }

    pub fn functor(&self, t: TermId) -> Sym {
        self.nodes[t.0 as usize].functor
    }

    pub fn args(&self, t: TermId) -> &[TermId] {
        let n = &self.nodes[t.0 as usize];
        &self.args[n.start as usize..(n.start + n.len) as usize]
    }

    pub fn depth(&self, t: TermId) -> u32 {
        self.nodes[t.0 as usize].depth
    }

    /// Appends the canonical KIF form of `t`: lower case, `(f a b)` with
    /// single spaces. Iterative, so any depth prints.
    pub fn write_kif(&self, t: TermId, syms: &SymbolTable, out: &mut String) {
        // Stack of (term, next argument to print); usize::MAX = not opened.
        let mut stack: Vec<(TermId, usize)> = vec![(t, usize::MAX)];
        while let Some((t, i)) = stack.pop() {
            let args = self.args(t);
            if i == usize::MAX {
                if args.is_empty() {
                    out.push_str(syms.name(self.functor(t)));
                    continue;
                }
                out.push('(');
                out.push_str(syms.name(self.functor(t)));
                stack.push((t, 0));
            } else if i < args.len() {
                out.push(' ');
                stack.push((t, i + 1));
                stack.push((args[i], usize::MAX));
            } else {
                out.push(')');
            }
        }
    }

    pub fn to_kif(&self, t: TermId, syms: &SymbolTable) -> String {
        let mut s = String::new();
        self.write_kif(t, syms, &mut s);
        s
    }

    /// The term written as `text` in KIF (case-insensitive, as
    /// [`TermPool::write_kif`] writes it), built if new. Every symbol must
    /// already be one of `syms`: a term of another game is an error, with
    /// the reason in words.
    pub fn parse_kif(&mut self, syms: &SymbolTable, text: &str) -> Result<TermId, String> {
        let lower = text.to_lowercase();
        let tokens = lower.split_inclusive(['(', ')', ' ', '\t', '\n', '\r']).flat_map(split_token);
        // Open applications: (function symbol, arguments so far).
        let mut open: Vec<(Option<Sym>, Vec<TermId>)> = Vec::new();
        let mut done: Option<TermId> = None;
        for tok in tokens {
            if done.is_some() {
                return Err("text after the term".into());
            }
            let finished = match tok {
                "(" => {
                    open.push((None, Vec::new()));
                    None
                }
                ")" => match open.pop() {
                    Some((Some(f), args)) if !args.is_empty() => {
                        Some(self.app(f, &args).map_err(|TooDeep| "nested too deep".to_string())?)
                    }
                    _ => return Err("unbalanced `)`, or an application without arguments".into()),
                },
                name => {
                    let sym = syms.get(name).ok_or_else(|| format!("no symbol `{name}`"))?;
                    match open.last_mut() {
                        Some((f @ None, _)) => {
                            *f = Some(sym);
                            None
                        }
                        _ => Some(self.constant(sym)),
                    }
                }
            };
            if let Some(t) = finished {
                match open.last_mut() {
                    Some((Some(_), args)) => args.push(t),
                    Some((None, _)) => return Err("a function symbol must be a name".into()),
                    None => done = Some(t),
                }
            }
        }
        match (done, open.is_empty()) {
            (Some(t), true) => Ok(t),
            _ => Err("incomplete".into()),
        }
    }
}

/// A piece of text split after each delimiter: the name before it and the
/// delimiter itself, blanks dropped.
fn split_token(piece: &str) -> impl Iterator<Item = &str> {
    let (name, delim) = match piece.char_indices().last() {
        Some((i, '(' | ')' | ' ' | '\t' | '\n' | '\r')) => (&piece[..i], &piece[i..]),
        _ => (piece, ""),
    };
    [name, delim].into_iter().filter(|t| !t.is_empty() && !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_consing_and_printing() {
        let mut syms = SymbolTable::new();
        let mut pool = TermPool::new();
        let cell = syms.intern("cell");
        let one = pool.constant(syms.intern("1"));
        let b = pool.constant(syms.intern("b"));
        let t1 = pool.app(cell, &[one, one, b]).unwrap();
        let t2 = pool.app(cell, &[one, one, b]).unwrap();
        assert_eq!(t1, t2);
        assert_eq!(pool.to_kif(t1, &syms), "(cell 1 1 b)");
        assert_eq!(pool.find(cell, &[one, b, b]), None);
        assert_eq!(pool.depth(t1), 2);
    }

    #[test]
    fn depth_is_bounded_and_printing_is_iterative() {
        let mut syms = SymbolTable::new();
        let mut pool = TermPool::new();
        let s = syms.intern("s");
        let mut t = pool.constant(syms.intern("0"));
        for _ in 1..MAX_TERM_DEPTH {
            t = pool.app(s, &[t]).unwrap();
        }
        assert_eq!(pool.app(s, &[t]), Err(TooDeep));
        let text = pool.to_kif(t, &syms);
        assert!(text.starts_with("(s (s ") && text.ends_with(&format!("(s 0{}", ")".repeat(999))));
    }
}
