//! Source text and positions: byte spans, and their translation to the
//! 1-based line:column pairs that every error message names.

use std::fmt;

/// A byte range in a [`Source`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }
}

/// A resolved position: file, line, column and the offending text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: String,
    pub line: u32,
    pub col: u32,
    /// The text of the span (first line of it, trimmed to a sensible length).
    pub excerpt: String,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A game description's text. Line ends may be LF, CR or CRLF: many public
/// GDL files use CR alone, so all three end a line (and a `;` comment).
pub struct Source {
    pub name: String,
    pub text: Vec<u8>,
    line_starts: Vec<u32>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<Vec<u8>>) -> Source {
        let text = text.into();
        let mut line_starts = vec![0u32];
        let mut i = 0;
        while i < text.len() {
            match text[i] {
                b'\r' if text.get(i + 1) == Some(&b'\n') => {
                    line_starts.push((i + 2) as u32);
                    i += 2;
                    continue;
                }
                b'\r' | b'\n' => line_starts.push((i + 1) as u32),
                _ => {}
            }
            i += 1;
        }
        Source { name: name.into(), text, line_starts }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let end = (offset as usize).min(self.text.len());
        let col = String::from_utf8_lossy(&self.text[start..end]).chars().count();
        (line as u32 + 1, col as u32 + 1)
    }

    pub fn loc(&self, span: Span) -> Loc {
        let (line, col) = self.line_col(span.start);
        let start = (span.start as usize).min(self.text.len());
        let end = (span.end as usize).clamp(start, self.text.len());
        let raw = String::from_utf8_lossy(&self.text[start..end]);
        let first = raw.split(['\n', '\r']).next().unwrap_or("");
        let mut excerpt: String = first.chars().take(80).collect();
        if excerpt.len() < first.len() || first.len() < raw.len() {
            excerpt.push_str(" ...");
        }
        Loc { file: self.name.clone(), line, col, excerpt }
    }
}

/// A game's name from its rules: the first line of the comment before the
/// first form ("Tic-tac-toe, written for Propel." gives "Tic-tac-toe";
/// "Chess (with 200-step time limit)" stays whole), else the file's stem.
pub fn game_title(text: &str, source: &str) -> String {
    let stem = std::path::Path::new(source).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some(comment) = line.strip_prefix(';') else { break };
        let words = comment.trim_start_matches(';').trim();
        // Lines of semicolons alone are skipped; the name is the first clause.
        let first = words.split([',', ':', ';']).next().unwrap_or("").trim().trim_end_matches('.').trim();
        if first.chars().any(|c| c.is_alphanumeric()) {
            return first.chars().take(60).collect();
        }
    }
    stem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_lf_cr_crlf() {
        let s = Source::new("t", "a\nb\rc\r\nd");
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(2), (2, 1));
        assert_eq!(s.line_col(4), (3, 1));
        assert_eq!(s.line_col(7), (4, 1));
    }

    #[test]
    fn game_names_from_the_rules() {
        let t = ";;; Tic-tac-toe, written for Propel.\n;;; Two players.\n(role x)";
        assert_eq!(game_title(t, "games/tictactoe.kif"), "Tic-tac-toe");
        let t = "; Chess (with 200-step time limit)\n; by someone\n(role white)";
        assert_eq!(game_title(t, "base/chess_200.v1.kif"), "Chess (with 200-step time limit)");
        let t = ";;;;;;;;;;;;;;;\n;;;\n;;; Breakthrough\n;;;\n(role white)";
        assert_eq!(game_title(t, "x/breakthrough.kif"), "Breakthrough");
        assert_eq!(game_title("(role a) ; Not a title", "dir/some.game.kif"), "some.game");
        assert_eq!(game_title("", "g.kif"), "g");
    }
}
