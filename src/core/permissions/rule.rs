//! One permission rule in Claude Code's syntax: `Tool` or `Tool(specifier)`.
//!
//! - `Bash(npm run build)` is that exact command; `Bash(npm run test:*)` and `Bash(npm run
//!   test *)` the commands that start with `npm run test` as whole words (and `npm run test`
//!   itself); `*` elsewhere matches any characters (`Bash(git * main)`); `Bash` and `Bash(*)`
//!   every command. Matched against each simple command of a compound one ([`super::shell`]).
//! - `Read(…)`, `Edit(…)`, `Write(…)`, `Grep(…)`, `Glob(…)`, `LS(…)`: gitignore patterns
//!   ([`super::paths`]). `Read` covers `read`, `grep`, `find` and `ls`; `Edit` every tool that
//!   edits files (`edit` and `write`); `Write`, `Grep`, `Glob` (our `find`) and `LS` their tool.
//! - `WebFetch(domain:docs.rs)`: fetches from that host (`domain:*.rs.io` its subdomains,
//!   `domain:127.0.0.1:8000` that port); `WebSearch`.
//! - `mcp__server` and `mcp__server__*`: every tool of that MCP server; `mcp__server__tool`
//!   one tool.
//! - Any other name is one of our tools by its own name (`bash`, `edit`, `web_fetch`,
//!   `fs__read_file`, …); `bash(…)`, `read(…)`, `edit(…)`, `write(…)`, `web_fetch(…)` take the
//!   specifiers above for that one tool.

use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};

pub use super::paths::Bases;
use super::paths::PathPattern;

/// What a rule says of the calls it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Behavior {
    Allow,
    Ask,
    Deny,
}

impl Behavior {
    /// The settings files' key: `allow`, `ask`, `deny`.
    pub fn key(self) -> &'static str {
        match self {
            Behavior::Allow => "allow",
            Behavior::Ask => "ask",
            Behavior::Deny => "deny",
        }
    }
}

/// A parsed rule; `text` is as written.
#[derive(Clone, Debug)]
pub struct Rule {
    pub text: String,
    pub target: Target,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Which calls a rule names.
#[derive(Clone, Debug)]
pub enum Target {
    /// `bash` commands matching the pattern (`None`: every command).
    Bash(Option<CommandPattern>),
    /// These tools, on paths matching the pattern (`None`: every path).
    Paths {
        tools: &'static [&'static str],
        pattern: Option<PathPattern>,
    },
    /// `web_fetch` of URLs on this site (`None`: every URL).
    WebFetch(Option<Domain>),
    /// MCP tools: what follows `mcp__` (`server`, `server__*`, `server__tool`).
    Mcp(String),
    /// A tool by its own name.
    Tool(String),
}

/// Why a rule could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("`{0}` is not a rule (`Tool` or `Tool(specifier)`)")]
    Malformed(String),
    #[error("`{0}`: {1}")]
    Specifier(String, String),
}

const READS: &[&str] = &["read", "grep", "find", "ls"];
const EDITS: &[&str] = &["edit", "write"];

/// Parses `text`.
pub fn parse(text: &str, bases: Bases) -> Result<Rule, RuleError> {
    let trimmed = text.trim();
    let (name, spec) = match trimmed.find('(') {
        Some(open) if trimmed.ends_with(')') => (
            &trimmed[..open],
            Some(&trimmed[open + 1..trimmed.len() - 1]),
        ),
        Some(_) => return Err(RuleError::Malformed(text.to_owned())),
        None => (trimmed, None),
    };
    let valid_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let name_part = match name.strip_prefix("mcp__") {
        // `mcp__server__*`: every tool of the server.
        Some(rest) => rest.strip_suffix("__*").unwrap_or(rest),
        None => name,
    };
    if name_part.is_empty() || !name_part.chars().all(valid_name) {
        return Err(RuleError::Malformed(text.to_owned()));
    }
    let spec = spec.map(str::trim);
    let bad = |why: &str| RuleError::Specifier(text.to_owned(), why.to_owned());
    if spec == Some("") {
        return Err(bad(
            "an empty specifier; write the bare tool name for every call",
        ));
    }
    let paths = |tools| {
        let pattern = match spec {
            None | Some("**") => None,
            Some(spec) => Some(PathPattern::new(spec, bases).map_err(|e| bad(&e))?),
        };
        Ok(Target::Paths { tools, pattern })
    };
    let target = match name {
        "Bash" | "bash" => Target::Bash(match spec {
            None | Some("*") => None,
            Some(spec) => Some(CommandPattern::new(spec).map_err(|e| bad(&e))?),
        }),
        "Read" => paths(READS)?,
        "Edit" => paths(EDITS)?,
        "read" => paths(&["read"])?,
        "MultiEdit" | "edit" => paths(&["edit"])?,
        "Write" | "write" => paths(&["write"])?,
        "Grep" | "grep" => paths(&["grep"])?,
        "Glob" | "find" => paths(&["find"])?,
        "LS" | "ls" => paths(&["ls"])?,
        "WebFetch" | "web_fetch" => Target::WebFetch(match spec {
            None => None,
            Some(spec) => Some(Domain::new(spec).map_err(|e| bad(&e))?),
        }),
        _ if spec.is_some() => {
            return Err(bad(
                "only Bash, Read, Edit, Write, Grep, Glob, LS and WebFetch rules take a \
                 specifier; write the bare tool name",
            ));
        }
        "WebSearch" => Target::Tool("web_search".into()),
        "TodoWrite" => Target::Tool("todo_write".into()),
        _ => match name.strip_prefix("mcp__") {
            Some(rest) if !rest.is_empty() => Target::Mcp(rest.to_owned()),
            _ => Target::Tool(name.to_owned()),
        },
    };
    Ok(Rule {
        text: trimmed.to_owned(),
        target,
    })
}

/// A `Bash` specifier: an exact command, or one with `*` wildcards (`:*` at the end is the
/// older spelling of ` *`).
#[derive(Clone, Debug)]
pub struct CommandPattern {
    regex: Regex,
}

impl CommandPattern {
    fn new(spec: &str) -> Result<Self, String> {
        let spec = collapse_spaces(spec);
        let spec = match spec.strip_suffix(":*") {
            Some(prefix) => format!("{} *", prefix.trim_end()),
            None => spec,
        };
        if spec.contains(":*") {
            return Err("`:*` may only end the pattern".into());
        }
        // A single trailing ` *` also matches the bare command (`Bash(ls *)` matches `ls`),
        // and only whole words (`lsof` is not `ls -la`).
        let (body, optional_tail) = match spec.strip_suffix(" *") {
            Some(body) if !body.contains('*') => (body.to_owned(), true),
            _ => (spec.clone(), false),
        };
        let mut regex = String::from("(?s)^");
        let parts: Vec<String> = body.split('*').map(regex::escape).collect();
        regex.push_str(&parts.join(".*"));
        if optional_tail {
            regex.push_str("(?: .*)?");
        }
        regex.push('$');
        Regex::new(&regex)
            .map(|regex| CommandPattern { regex })
            .map_err(|e| e.to_string())
    }

    /// Whether the simple command `command` (words joined by single spaces) matches.
    pub fn matches(&self, command: &str) -> bool {
        self.regex.is_match(command)
    }
}

/// Runs of whitespace as one space, trimmed: how [`super::shell`] joins a command's words.
pub fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A `WebFetch` specifier: `domain:HOST`, `domain:HOST:PORT`, `domain:*.HOST`.
#[derive(Clone, Debug)]
pub struct Domain {
    site: String,
    subdomains: bool,
}

impl Domain {
    fn new(spec: &str) -> Result<Self, String> {
        let Some(site) = spec.strip_prefix("domain:").map(str::trim) else {
            return Err("a WebFetch rule takes `domain:HOST`".into());
        };
        let (site, subdomains) = match site.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (site, false),
        };
        if site.is_empty() || site.contains(['/', '*', ' ']) {
            return Err("a WebFetch rule takes `domain:HOST` (or `domain:*.HOST`)".into());
        }
        Ok(Domain {
            site: site.to_ascii_lowercase(),
            subdomains,
        })
    }

    /// Whether a URL's site (`host`, or `host:port` off the scheme's default) matches.
    pub fn matches(&self, site: &str) -> bool {
        let site = site.to_ascii_lowercase();
        match self.subdomains {
            false => site == self.site,
            true => site
                .strip_suffix(&self.site)
                .is_some_and(|head| head.ends_with('.') && head.len() > 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(spec: &str) -> CommandPattern {
        match parse(spec, Bases::example()).unwrap().target {
            Target::Bash(Some(pattern)) => pattern,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bash_prefixes_are_whole_words() {
        let rule = bash("Bash(npm run test:*)");
        assert!(rule.matches("npm run test"));
        assert!(rule.matches("npm run test --watch"));
        assert!(!rule.matches("npm run testing"));
        assert!(!rule.matches("npm run"));
        let ls = bash("Bash(ls *)");
        assert!(ls.matches("ls") && ls.matches("ls -la") && !ls.matches("lsof"));
        let glued = bash("Bash(ls*)");
        assert!(glued.matches("lsof") && glued.matches("ls -la"));
        let exact = bash("Bash(npm  run build)");
        assert!(exact.matches("npm run build") && !exact.matches("npm run build --x"));
        let middle = bash("Bash(git * main)");
        assert!(middle.matches("git push origin main") && !middle.matches("git push main x"));
        assert!(bash("Bash(a.b(c):*)").matches("a.b(c) d"));
    }

    #[test]
    fn names_and_specifiers() {
        let target = |text: &str| parse(text, Bases::example()).map(|r| r.target);
        assert!(matches!(target("Bash"), Ok(Target::Bash(None))));
        assert!(matches!(target("Bash(*)"), Ok(Target::Bash(None))));
        assert!(matches!(
            target("Edit"),
            Ok(Target::Paths {
                tools: EDITS,
                pattern: None
            })
        ));
        assert!(matches!(target("mcp__github"), Ok(Target::Mcp(s)) if s == "github"));
        assert!(matches!(target("fs__read"), Ok(Target::Tool(s)) if s == "fs__read"));
        assert!(matches!(target("WebSearch"), Ok(Target::Tool(s)) if s == "web_search"));
        assert!(target("WebSearch(x)").is_err());
        assert!(target("Bash()").is_err());
        assert!(target("Bash(x").is_err());
        assert!(target("Bash(a:*b)").is_err());
        assert!(target("WebFetch(docs.rs)").is_err());
        assert!(target("Read(~/x)").is_ok());
        assert!(target("").is_err());
        assert!(target("two words").is_err());
    }

    #[test]
    fn domains() {
        let domain = |spec: &str| Domain::new(spec).unwrap();
        assert!(domain("domain:docs.rs").matches("DOCS.rs"));
        assert!(!domain("domain:docs.rs").matches("docs.rs:8443"));
        assert!(!domain("domain:docs.rs").matches("evil-docs.rs"));
        assert!(domain("domain:127.0.0.1:8000").matches("127.0.0.1:8000"));
        assert!(domain("domain:*.github.com").matches("api.github.com"));
        assert!(!domain("domain:*.github.com").matches("github.com"));
        assert!(!domain("domain:*.github.com").matches("evilgithub.com"));
    }
}
