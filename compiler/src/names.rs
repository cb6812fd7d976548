//! Names of the relations that rewrites make, and how messages show them.
//!
//! The magic-set rewrite ([`crate::magic`]) makes `r@bbf/s` (relation `r`
//! computed where its callers ask, with the first two arguments bound) and
//! `magic@r@bbf/s` (the argument values they ask for); projection
//! ([`crate::project`]) makes `next~1`, a helper split off a clause of
//! `next`. A message shows the relation as written in the file.

/// Names of the demand relations begin with this.
pub const PREFIX: &str = "magic@";

/// Separates a helper's name from the relation whose clause it came from.
pub const MARK: char = '~';

/// The relation a helper or demand relation was made for: `legal_speed`
/// for `legal_speed~5`, `totalcount` for `magic@totalcount@bf`.
pub fn base_name(name: &str) -> &str {
    let n = name.strip_prefix(PREFIX).unwrap_or(name);
    let n = n.split('@').next().unwrap_or(n);
    n.split(MARK).next().unwrap_or(n)
}

/// `name` as a message shows it: the relation as written in the file, in
/// backquotes, and in words what a rewrite made of it.
pub fn describe(name: &str) -> String {
    let base = base_name(name);
    if name == base {
        format!("`{name}`")
    } else if name.starts_with(PREFIX) {
        format!("the calls to `{base}` (computed on demand)")
    } else if name.contains('@') {
        format!("`{base}` (computed on demand)")
    } else {
        format!("a part of `{base}`'s rules")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewritten_names_show_the_relation_as_written() {
        assert_eq!(describe("cell"), "`cell`");
        assert_eq!(describe("thenchall@bbbbbbb/s"), "`thenchall` (computed on demand)");
        assert_eq!(describe("magic@queen_threatens@bbbbbbb/m"), "the calls to `queen_threatens` (computed on demand)");
        assert_eq!(describe("next~3"), "a part of `next`'s rules");
        assert!(!describe("magic@a~1@bf").contains('@'));
    }
}
