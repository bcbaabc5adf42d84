//! A hook group's `matcher`, as Claude Code reads it: `*`, `""` or none matches everything; a
//! word of letters, digits and `_` (or several joined by `|`) matches those names exactly;
//! anything else is a regular expression searched in the name (`Edit|Write`, `mcp__.*`,
//! `^Notebook`). Claude Code's expressions are JavaScript's; here they are the `regex` crate's,
//! which agrees on everything a tool-name pattern uses (no look-around, no back-references).

use regex::Regex;

#[derive(Clone, Debug)]
enum Kind {
    All,
    Names(Vec<String>),
    Pattern(Regex),
}

/// A parsed matcher and its text as written (for events and listings).
#[derive(Clone, Debug)]
pub struct Matcher {
    written: Option<String>,
    kind: Kind,
}

impl Matcher {
    /// Everything matches.
    pub fn all() -> Matcher {
        Matcher {
            written: None,
            kind: Kind::All,
        }
    }

    /// The matcher `text` (absent: everything); `Err` is the expression's error.
    pub fn parse(text: Option<&str>) -> Result<Matcher, regex::Error> {
        let written = text.map(str::to_owned);
        let kind = match text.map(str::trim) {
            None | Some("") | Some("*") => Kind::All,
            Some(t)
                if t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|') =>
            {
                Kind::Names(
                    t.split('|')
                        .filter(|n| !n.is_empty())
                        .map(Into::into)
                        .collect(),
                )
            }
            Some(t) => Kind::Pattern(Regex::new(t)?),
        };
        Ok(Matcher { written, kind })
    }

    /// Whether any of `names` (a tool's Claude Code name and ours, a notification's type, …)
    /// matches.
    pub fn matches(&self, names: &[&str]) -> bool {
        match &self.kind {
            Kind::All => true,
            Kind::Names(list) => names.iter().any(|n| list.iter().any(|l| l == n)),
            Kind::Pattern(re) => names.iter().any(|n| re.is_match(n)),
        }
    }

    /// As written in the settings file (`None` when absent).
    pub fn written(&self) -> Option<&str> {
        self.written.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(text: &str) -> Matcher {
        Matcher::parse(Some(text)).unwrap()
    }

    #[test]
    fn claude_codes_matcher_forms() {
        assert!(m("*").matches(&["Bash"]));
        assert!(m("").matches(&["anything"]));
        assert!(Matcher::parse(None).unwrap().matches(&["x"]));
        assert!(m("Bash").matches(&["Bash", "bash"]));
        assert!(m("bash").matches(&["Bash", "bash"]));
        assert!(!m("Bash").matches(&["BashOutput", "bash_output"]));
        assert!(m("Edit|Write").matches(&["Write", "write"]));
        assert!(!m("Edit|Write").matches(&["Read", "read"]));
        assert!(m("mcp__.*").matches(&["mcp__fs__read", "fs__read"]));
        assert!(m("^Note").matches(&["NotebookEdit"]));
        assert!(m("Web.*").matches(&["WebFetch"]));
        assert!(Matcher::parse(Some("(")).is_err());
    }
}
