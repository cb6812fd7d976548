//! Interned symbols. GDL is case-insensitive: the reader lower-cases every
//! symbol before it is interned, so one `Sym` is one canonical name.

use rustc_hash::FxHashMap;

/// An interned symbol: an index into a [`SymbolTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sym(pub u32);

macro_rules! keywords {
    ($($konst:ident = $text:literal),* $(,)?) => {
        const KEYWORDS: &[&str] = &[$($text),*];
        #[allow(missing_docs)]
        impl Sym {
            keywords!(@consts 0u32, $($konst)*);
        }
    };
    (@consts $n:expr, $first:ident $($rest:ident)*) => {
        pub const $first: Sym = Sym($n);
        keywords!(@consts $n + 1u32, $($rest)*);
    };
    (@consts $n:expr,) => {};
}

keywords! {
    ROLE = "role", INIT = "init", TRUE = "true", NEXT = "next", LEGAL = "legal",
    DOES = "does", GOAL = "goal", TERMINAL = "terminal", BASE = "base", INPUT = "input",
    SEES = "sees", DISTINCT = "distinct", NOT = "not", OR = "or", AND = "and",
    IMPLIED = "<=", RANDOM = "random",
}

/// Interner for symbol names. The GDL keywords have fixed ids (`Sym::TRUE`, ...).
#[derive(Clone, Debug)]
pub struct SymbolTable {
    names: Vec<Box<str>>,
    ids: FxHashMap<Box<str>, Sym>,
}

impl Default for SymbolTable {
    fn default() -> Self {
        let mut table = SymbolTable { names: Vec::new(), ids: FxHashMap::default() };
        for k in KEYWORDS {
            table.intern(k);
        }
        table
    }
}

impl SymbolTable {
    pub fn new() -> SymbolTable {
        SymbolTable::default()
    }

    pub fn intern(&mut self, name: &str) -> Sym {
        if let Some(&s) = self.ids.get(name) {
            return s;
        }
        let s = Sym(self.names.len() as u32);
        self.names.push(name.into());
        self.ids.insert(name.into(), s);
        s
    }

    pub fn get(&self, name: &str) -> Option<Sym> {
        self.ids.get(name).copied()
    }

    pub fn name(&self, s: Sym) -> &str {
        &self.names[s.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_have_fixed_ids() {
        let t = SymbolTable::new();
        assert_eq!(t.name(Sym::ROLE), "role");
        assert_eq!(t.name(Sym::TRUE), "true");
        assert_eq!(t.name(Sym::IMPLIED), "<=");
        assert_eq!(t.name(Sym::RANDOM), "random");
        assert_eq!(t.get("does"), Some(Sym::DOES));
    }
}
