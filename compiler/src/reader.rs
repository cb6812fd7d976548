//! KIF reader: bytes to a flat arena of s-expressions.
//!
//! The parser keeps an explicit stack (no recursion), so deep nesting costs
//! heap, not Rust stack; nesting beyond [`MAX_DEPTH`] is refused with an
//! error so that every later pass may recurse over terms safely.

use crate::error::{ErrorKind, GdlError};
use crate::source::{Source, Span};
use crate::symbol::{Sym, SymbolTable};

/// Deepest nesting of parentheses accepted. Real games stay under 30.
pub const MAX_DEPTH: usize = 1000;

/// Index of a node in [`Sexprs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeId(pub u32);

#[derive(Clone, Debug)]
pub enum Node {
    /// A constant or function/relation name (lower-cased).
    Sym(Sym, Span),
    /// `?name` (name lower-cased, without the `?`).
    Var(Sym, Span),
    /// `( ... )`: `len` children stored from `first` in `Sexprs::kids`.
    List { first: u32, len: u32, span: Span },
}

/// The s-expressions of one file.
#[derive(Default, Debug)]
pub struct Sexprs {
    nodes: Vec<Node>,
    kids: Vec<NodeId>,
    /// The top-level forms, in file order.
    pub top: Vec<NodeId>,
    /// Lines skipped between top-level forms because they are Prolog, not
    /// KIF (see `prolog_line`).
    pub skipped: Vec<Span>,
}

impl Sexprs {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    pub fn children(&self, id: NodeId) -> &[NodeId] {
        match self.node(id) {
            Node::List { first, len, .. } => &self.kids[*first as usize..(*first + *len) as usize],
            _ => &[],
        }
    }

    pub fn span(&self, id: NodeId) -> Span {
        match self.node(id) {
            Node::Sym(_, s) | Node::Var(_, s) => *s,
            Node::List { span, .. } => *span,
        }
    }
}

/// KIF layout (ASCII whitespace with vertical tab and form feed).
pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Whether `b` ends a symbol or variable.
pub fn ends_token(b: u8) -> bool {
    is_space(b) || matches!(b, b'(' | b')' | b';')
}

/// Characters that never occur in KIF symbols; files containing them are
/// usually Prolog with some KIF mixed in.
fn forbidden(b: u8) -> bool {
    matches!(b, b',' | b'%' | b'[' | b']' | b'{' | b'}' | b'|' | b'"' | b'\\' | b'`') || b < 0x20
}

/// Where the line that holds `text[i]` ends (its LF or CR, or the end).
fn line_end(text: &[u8], i: usize) -> usize {
    text[i..].iter().position(|&b| b == b'\n' || b == b'\r').map_or(text.len(), |n| i + n)
}

/// Whether `line`, between top-level forms, is Prolog rather than KIF: a
/// `%` comment, a clause (`name ... :-` or `<-`), or a term written
/// `name(...)` with a comma or a final full stop. Some published GDL files
/// (the IGGP benchmark's) carry such lines beside their KIF; Prolog-based
/// readers pass over them.
fn prolog_line(line: &[u8]) -> bool {
    if line.first() == Some(&b'%') {
        return true;
    }
    let name = line.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
    let has = |pat: &[u8]| line.windows(pat.len()).any(|w| w == pat);
    if has(b":-") || has(b"<-") {
        return name > 0 || line.starts_with(b":-");
    }
    name > 0 && line.get(name) == Some(&b'(') && (line.contains(&b',') || line.trim_ascii_end().ends_with(b"."))
}

struct Frame {
    open: usize,
    kids: Vec<NodeId>,
}

/// Reads every top-level form of `src`, interning symbols into `syms`.
pub fn read(src: &Source, syms: &mut SymbolTable) -> Result<Sexprs, GdlError> {
    let text = &src.text[..];
    let err =
        |start: usize, end: usize, msg: String| GdlError::at(src.loc(Span::new(start, end)), ErrorKind::Syntax(msg));
    let mut out = Sexprs::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    // A UTF-8 byte order mark is not part of the text.
    if text.starts_with(&[0xef, 0xbb, 0xbf]) {
        i = 3;
    }
    let mut lower = String::new();
    while i < text.len() {
        let b = text[i];
        if is_space(b) {
            i += 1;
        } else if let Some(end) =
            (stack.is_empty() && b != b'(').then(|| line_end(text, i)).filter(|&end| prolog_line(&text[i..end]))
        {
            out.skipped.push(Span::new(i, end));
            i = end;
        } else if b == b';' {
            i = line_end(text, i);
        } else if b == b'(' {
            if stack.len() >= MAX_DEPTH {
                return Err(err(i, i + 1, format!("nesting deeper than {MAX_DEPTH} levels")));
            }
            stack.push(Frame { open: i, kids: Vec::new() });
            i += 1;
        } else if b == b')' {
            let Some(frame) = stack.pop() else {
                return Err(err(i, i + 1, "unexpected ')' with no matching '('".into()));
            };
            let first = out.kids.len() as u32;
            out.kids.extend_from_slice(&frame.kids);
            let id = NodeId(out.nodes.len() as u32);
            out.nodes.push(Node::List { first, len: frame.kids.len() as u32, span: Span::new(frame.open, i + 1) });
            i += 1;
            match stack.last_mut() {
                Some(parent) => parent.kids.push(id),
                None => out.top.push(id),
            }
        } else {
            let start = i;
            while i < text.len() && !ends_token(text[i]) {
                if forbidden(text[i]) {
                    let shown = String::from_utf8_lossy(&text[i..i + 1]).into_owned();
                    let hint = if matches!(text[i], b',' | b'%' | b'[' | b']') {
                        " (this looks like Prolog syntax, which is not KIF)"
                    } else {
                        ""
                    };
                    return Err(err(i, i + 1, format!("unexpected character {shown:?}{hint}")));
                }
                i += 1;
            }
            let raw = String::from_utf8_lossy(&text[start..i]);
            if raw.contains(":-") {
                return Err(err(start, i, "':-' is Prolog syntax, not KIF".into()));
            }
            lower.clear();
            lower.extend(raw.chars().map(|c| c.to_ascii_lowercase()));
            let span = Span::new(start, i);
            let node = if let Some(name) = lower.strip_prefix('?') {
                if name.is_empty() {
                    return Err(err(start, i, "'?' must be followed by a variable name".into()));
                }
                Node::Var(syms.intern(name), span)
            } else {
                Node::Sym(syms.intern(&lower), span)
            };
            let id = NodeId(out.nodes.len() as u32);
            out.nodes.push(node);
            match stack.last_mut() {
                Some(parent) => parent.kids.push(id),
                None => out.top.push(id),
            }
        }
    }
    if let Some(frame) = stack.last() {
        return Err(err(frame.open, text.len(), "'(' is never closed (missing ')')".into()));
    }
    // Prolog lines beside KIF forms are passed over; a file of them alone
    // is Prolog, which this reader does not read.
    if let (true, Some(first)) = (out.top.is_empty(), out.skipped.first()) {
        return Err(err(first.start as usize, first.end as usize, "Prolog syntax, not KIF".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(Sexprs, SymbolTable), GdlError> {
        let src = Source::new("t.kif", text);
        let mut syms = SymbolTable::new();
        read(&src, &mut syms).map(|s| (s, syms))
    }

    #[test]
    fn prolog_lines_between_forms_are_skipped() {
        let text = "(role x)\n%% a(X) :- b(X).\nlegal(x,noop):-my_true(c).\nP(A,B)<-Q(A).\nterminal :- f.\n(init p)\n";
        let (s, _) = parse(text).unwrap();
        assert_eq!((s.top.len(), s.skipped.len()), (2, 4));
        // Inside a form, or without the marks of a clause, it is an error.
        assert!(parse("(role x,y)").is_err());
        assert!(parse("(<= (legal x a)\nfoo(b),\n(true p))").is_err());
        assert!(parse("role(x)").is_ok_and(|(s, _)| s.skipped.is_empty()));
    }

    #[test]
    fn comments_end_at_cr_lf_and_crlf() {
        for sep in ["\n", "\r", "\r\n"] {
            let text = format!("; comment{sep}(role x); c2{sep}(role y)");
            let (s, _) = parse(&text).unwrap();
            assert_eq!(s.top.len(), 2, "separator {sep:?}");
        }
    }

    #[test]
    fn symbols_are_lowercased() {
        let (s, syms) = parse("(ROLE XPlayer) ?Var").unwrap();
        let kids = s.children(s.top[0]);
        match s.node(kids[0]) {
            Node::Sym(sym, _) => assert_eq!(*sym, Sym::ROLE),
            other => panic!("{other:?}"),
        }
        match s.node(kids[1]) {
            Node::Sym(sym, _) => assert_eq!(syms.name(*sym), "xplayer"),
            other => panic!("{other:?}"),
        }
        match s.node(s.top[1]) {
            Node::Var(sym, _) => assert_eq!(syms.name(*sym), "var"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse("(role x)\n  (init (cell 1)\n").unwrap_err();
        let loc = e.loc.unwrap();
        assert_eq!((loc.line, loc.col), (2, 3));
        assert!(e.kind.to_string().contains("never closed"));
        let e = parse("(role x))").unwrap_err();
        assert_eq!(e.loc.unwrap().col, 9);
        let e = parse("legal(a,b):-foo.").unwrap_err();
        assert!(e.to_string().contains("Prolog"), "{e}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = "(".repeat(MAX_DEPTH + 5);
        let e = parse(&text).unwrap_err();
        assert!(e.kind.to_string().contains("nesting deeper"));
        let ok = format!("{}a{}", "(f ".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let (s, _) = parse("\u{feff}(role x)").unwrap();
        assert_eq!(s.top.len(), 1);
    }
}
