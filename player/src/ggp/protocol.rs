//! The GGP protocol's messages: parsing a request body (KIF, any case) and
//! printing moves canonically, the way the state machines print them.

use propel_compiler::reader::{ends_token, is_space, read, Node, NodeId, Sexprs};
use propel_compiler::{Source, SymbolTable};

/// A request from a game manager.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Info,
    Preview {
        clock: f64,
    },
    Start {
        id: String,
        role: String,
        /// The rules as KIF text, ready for the front end.
        rules: String,
        start_clock: f64,
        play_clock: f64,
    },
    /// `moves` is `None` on the first turn (`nil`), else one move per role.
    Play {
        id: String,
        moves: Option<Vec<String>>,
    },
    Stop {
        id: String,
        moves: Option<Vec<String>>,
    },
    Abort {
        id: String,
    },
}

impl Message {
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Info => "info",
            Message::Preview { .. } => "preview",
            Message::Start { .. } => "start",
            Message::Play { .. } => "play",
            Message::Stop { .. } => "stop",
            Message::Abort { .. } => "abort",
        }
    }

    pub fn match_id(&self) -> Option<&str> {
        match self {
            Message::Start { id, .. } | Message::Play { id, .. } | Message::Stop { id, .. } | Message::Abort { id } => {
                Some(id)
            }
            _ => None,
        }
    }
}

/// What is wrong with a request.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    #[error("{0}")]
    Syntax(String),
    #[error("empty request")]
    Empty,
    #[error("more than one message in the request")]
    Several,
    #[error("unknown message `{0}` (expected info, preview, start, play, stop or abort)")]
    Unknown(String),
    #[error("`{msg}`: {what}")]
    Shape { msg: &'static str, what: String },
}

/// Parses one request body.
pub fn parse(text: &str) -> Result<Message, ProtocolError> {
    let src = Source::new("request", text.as_bytes().to_vec());
    let mut syms = SymbolTable::new();
    let sx = read(&src, &mut syms).map_err(|e| ProtocolError::Syntax(e.to_string()))?;
    let top = match sx.top.as_slice() {
        [] => return Err(ProtocolError::Empty),
        [one] => *one,
        _ => return Err(ProtocolError::Several),
    };
    let r = Reader { sx: &sx, syms: &syms, text };
    let (head, args) = match sx.node(top) {
        // A bare `info` is accepted too.
        Node::Sym(s, _) => (syms.name(*s).to_string(), &[][..]),
        Node::List { .. } => {
            let kids = sx.children(top);
            match kids.first().map(|k| sx.node(*k)) {
                Some(Node::Sym(s, _)) => (syms.name(*s).to_string(), &kids[1..]),
                _ => return Err(ProtocolError::Unknown(r.print(top))),
            }
        }
        Node::Var(..) => return Err(ProtocolError::Unknown(r.print(top))),
    };
    let shape = |msg: &'static str, what: &str| ProtocolError::Shape { msg, what: what.to_string() };
    match head.as_str() {
        "info" => Ok(Message::Info),
        "preview" => match args {
            [_, clock] => {
                Ok(Message::Preview { clock: r.number(*clock).ok_or_else(|| shape("preview", "bad clock"))? })
            }
            _ => Err(shape("preview", "expected (preview GAME CLOCK)")),
        },
        "start" => match args {
            [id, role, rules, sc, pc] => Ok(Message::Start {
                id: r.symbol(*id).ok_or_else(|| shape("start", "the match id must be a symbol"))?,
                role: r.print(*role),
                rules: r.inner_text(*rules).ok_or_else(|| shape("start", "the rules must be a list"))?,
                start_clock: r.number(*sc).ok_or_else(|| shape("start", "bad start clock"))?,
                play_clock: r.number(*pc).ok_or_else(|| shape("start", "bad play clock"))?,
            }),
            _ => Err(shape("start", "expected (start ID ROLE (RULES...) STARTCLOCK PLAYCLOCK)")),
        },
        "play" | "stop" => {
            let msg = if head == "play" { "play" } else { "stop" };
            let (id, moves) = match args {
                [id, moves] => (*id, *moves),
                _ => return Err(shape(msg, "expected (play|stop ID MOVES)")),
            };
            let id = r.symbol(id).ok_or_else(|| shape(msg, "the match id must be a symbol"))?;
            let moves = match sx.node(moves) {
                Node::Sym(s, _) if syms.name(*s) == "nil" => None,
                Node::List { .. } => Some(sx.children(moves).iter().map(|m| r.print(*m)).collect()),
                _ => return Err(shape(msg, "moves must be nil or a list")),
            };
            Ok(if msg == "play" { Message::Play { id, moves } } else { Message::Stop { id, moves } })
        }
        "abort" => match args {
            [id] => {
                Ok(Message::Abort { id: r.symbol(*id).ok_or_else(|| shape("abort", "the match id must be a symbol"))? })
            }
            _ => Err(shape("abort", "expected (abort ID)")),
        },
        other => Err(ProtocolError::Unknown(other.to_string())),
    }
}

struct Reader<'a> {
    sx: &'a Sexprs,
    syms: &'a SymbolTable,
    text: &'a str,
}

impl Reader<'_> {
    fn symbol(&self, n: NodeId) -> Option<String> {
        match self.sx.node(n) {
            Node::Sym(s, _) => Some(self.syms.name(*s).to_string()),
            _ => None,
        }
    }

    /// A clock in seconds: a number from 0 to a million (anything larger
    /// would overflow time arithmetic, and is no real clock).
    fn number(&self, n: NodeId) -> Option<f64> {
        self.symbol(n)?.parse::<f64>().ok().filter(|x| x.is_finite() && (0.0..=1e6).contains(x))
    }

    /// The text between a list's parentheses.
    fn inner_text(&self, n: NodeId) -> Option<String> {
        match self.sx.node(n) {
            Node::List { span, .. } => {
                let (a, b) = (span.start as usize + 1, (span.end as usize).saturating_sub(1));
                self.text.get(a..b.max(a)).map(str::to_string)
            }
            _ => None,
        }
    }

    /// Canonical KIF: lower case, single spaces (the reader bounds nesting,
    /// so the recursion is bounded too).
    fn print(&self, n: NodeId) -> String {
        let mut out = String::new();
        self.print_into(n, &mut out);
        out
    }

    fn print_into(&self, n: NodeId, out: &mut String) {
        match self.sx.node(n) {
            Node::Sym(s, _) => out.push_str(self.syms.name(*s)),
            Node::Var(s, _) => {
                out.push('?');
                out.push_str(self.syms.name(*s));
            }
            Node::List { .. } => {
                out.push('(');
                for (i, k) in self.sx.children(n).iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    self.print_into(*k, out);
                }
                out.push(')');
            }
        }
    }
}

/// The match id of a `start` request, read from its first tokens without
/// parsing the rest (the rules can take seconds to read; an `abort`
/// meanwhile must find the match). `None` for any other request.
pub fn peek_start_id(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    // As the reader does: a byte order mark is not part of the text.
    let mut tokens = Tokens(bytes.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(bytes));
    (tokens.next()? == b"(").then_some(())?;
    tokens.next()?.eq_ignore_ascii_case(b"start").then_some(())?;
    let id = tokens.next()?;
    (id != b"(" && id != b")").then(|| String::from_utf8_lossy(id).to_ascii_lowercase())
}

/// KIF tokens: parentheses and words, skipping layout and `;` comments
/// exactly as the reader does (else `peek_start_id` and `parse` could
/// disagree on a request's match).
struct Tokens<'a>(&'a [u8]);

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            match self.0.first()? {
                &b if is_space(b) => self.0 = &self.0[1..],
                b';' => {
                    let end = self.0.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(self.0.len());
                    self.0 = &self.0[end..];
                }
                b'(' | b')' => {
                    let (t, rest) = self.0.split_at(1);
                    self.0 = rest;
                    return Some(t);
                }
                _ => {
                    let end = self.0.iter().position(|&b| ends_token(b)).unwrap_or(self.0.len());
                    let (t, rest) = self.0.split_at(end);
                    self.0 = rest;
                    return Some(t);
                }
            }
        }
    }
}

/// Moves as a `play`/`stop` message lists them.
pub fn moves_kif(moves: &[String]) -> String {
    format!("({})", moves.join(" "))
}

/// Every top-level form of `text` in canonical KIF (comments and layout
/// dropped), e.g. a game's rules for a `start` message.
pub fn forms(name: &str, text: &str) -> Result<Vec<String>, ProtocolError> {
    let src = Source::new(name, text.as_bytes().to_vec());
    let mut syms = SymbolTable::new();
    let sx = read(&src, &mut syms).map_err(|e| ProtocolError::Syntax(e.to_string()))?;
    let r = Reader { sx: &sx, syms: &syms, text };
    Ok(sx.top.iter().map(|&n| r.print(n)).collect())
}

/// Parses one move as a player answers it: canonical KIF, or `None` when
/// the answer is not a single term.
pub fn parse_move(text: &str) -> Option<String> {
    match forms("move", text).ok()?.as_mut_slice() {
        [one] => Some(std::mem::take(one)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_message_in_any_case() {
        assert_eq!(parse("( INFO )").unwrap(), Message::Info);
        assert_eq!(parse("(preview (role x) 30)").unwrap(), Message::Preview { clock: 30.0 });
        let m = parse("(START m1 White ((role white) (ROLE black) (init (p 1))) 10 5)").unwrap();
        match m {
            Message::Start { id, role, rules, start_clock, play_clock } => {
                assert_eq!((id.as_str(), role.as_str()), ("m1", "white"));
                assert_eq!(rules, "(role white) (ROLE black) (init (p 1))");
                assert_eq!((start_clock, play_clock), (10.0, 5.0));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(parse("(play m1 NIL)").unwrap(), Message::Play { id: "m1".into(), moves: None });
        assert_eq!(
            parse("(play m1 ((Mark  1 2) noop))").unwrap(),
            Message::Play { id: "m1".into(), moves: Some(vec!["(mark 1 2)".into(), "noop".into()]) }
        );
        assert_eq!(
            parse("(stop m1 (a b))").unwrap(),
            Message::Stop { id: "m1".into(), moves: Some(vec!["a".into(), "b".into()]) }
        );
        assert_eq!(parse("(abort m1)").unwrap(), Message::Abort { id: "m1".into() });
    }

    #[test]
    fn refuses_malformed_requests() {
        assert_eq!(parse("").unwrap_err(), ProtocolError::Empty);
        assert_eq!(parse("(info) (info)").unwrap_err(), ProtocolError::Several);
        assert!(matches!(parse("(play m1").unwrap_err(), ProtocolError::Syntax(_)));
        assert!(matches!(parse("(dance m1)").unwrap_err(), ProtocolError::Unknown(_)));
        assert!(matches!(parse("(play m1)").unwrap_err(), ProtocolError::Shape { .. }));
        assert!(matches!(parse("(play (m1) nil)").unwrap_err(), ProtocolError::Shape { .. }));
        assert!(matches!(parse("(start m r rules 1 1)").unwrap_err(), ProtocolError::Shape { .. }));
        assert!(matches!(parse("(start m r () x 1)").unwrap_err(), ProtocolError::Shape { .. }));
        assert!(matches!(parse("(start m r () 1e300 1)").unwrap_err(), ProtocolError::Shape { .. }));
        assert!(matches!(parse("(start m r () 1 -1)").unwrap_err(), ProtocolError::Shape { .. }));
        assert!(matches!(parse("(?x)").unwrap_err(), ProtocolError::Unknown(_)));
    }

    #[test]
    fn start_ids_are_read_ahead() {
        assert_eq!(peek_start_id(" ;c\n( START M1 xplayer ((role x)) 1 1)").as_deref(), Some("m1"));
        assert_eq!(peek_start_id("(start(role x))"), None);
        assert_eq!(peek_start_id("(play m1 nil)"), None);
        assert_eq!(peek_start_id("(start"), None);
        // Found by fuzzing (fuzz/, target protocol): layout and comments
        // the reader skips (vertical tab, form feed, a comment ended by
        // \r, a byte order mark) were not skipped here, so an `abort`
        // during such a `start` could not find its match.
        for text in [
            "\x0b\x0b(start m1 x ((role x)) 1 1)",
            "\x0c(start\x0cm1 x ((role x)) 1 1)",
            ";c\r(start m1 x ((role x)) 1 1)",
            "\u{feff}(start m1 x ((role x)) 1 1)",
        ] {
            let Ok(Message::Start { id, .. }) = parse(text) else { panic!("{text:?} must parse") };
            assert_eq!(peek_start_id(text).as_deref(), Some(id.as_str()), "{text:?}");
        }
    }

    #[test]
    fn canonical_moves() {
        assert_eq!(parse_move(" ( MOVE a\n  b ) ").as_deref(), Some("(move a b)"));
        assert_eq!(parse_move("a b"), None);
        assert_eq!(parse_move("(a"), None);
    }
}
