//! Which rules match a tool call.
//!
//! A rule that restricts (`deny`, `ask`) applies when it matches any part of the call: one
//! simple command of a compound one, the path as written or where its symlinks lead, a command
//! that cannot be parsed read as a whole. Allowing takes more: every simple command allowed by
//! some rule and no redirection writing a file, the path allowed both as written and where it
//! leads; a command that cannot be parsed is never allowed by a specifier.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::rule::{Rule, Target, collapse_spaces};
use super::shell::{self, Script};
use crate::mcp::tool::{McpToolInfo, tool_name};
use crate::tools::paths::{clean_input, lexical_normalize, real_path};
use crate::tools::web;

/// A tool call as the rules see it.
#[derive(Clone, Debug)]
pub struct Subject {
    pub tool: String,
    pub what: What,
}

#[derive(Clone, Debug)]
pub enum What {
    /// A `bash` command, and its simple commands (`None`: it cannot be parsed).
    Command {
        command: String,
        script: Option<Script>,
    },
    /// A file tool's path, as written (normalised) and where its symlinks lead.
    Path { lexical: PathBuf, real: PathBuf },
    /// A `web_fetch`: the URL's site (`host`, or `host:port`), `None` for a URL that does not
    /// parse.
    Site(Option<String>),
    /// An MCP tool: its server and its own name.
    Mcp { server: String, tool: String },
    /// Anything else (also a file tool without a usable path).
    Other,
}

impl Subject {
    /// The call of `tool` with `args` in the project `root` (`mcp`: the MCP tool's info).
    pub fn of(tool: &str, args: &Value, mcp: Option<&McpToolInfo>, root: &Path) -> Subject {
        let text = |name: &str| args.get(name).and_then(Value::as_str);
        let what = if let Some(info) = mcp {
            What::Mcp {
                server: info.server.clone(),
                tool: info.tool.clone(),
            }
        } else {
            match tool {
                "bash" => {
                    let command = text("command").unwrap_or_default().to_owned();
                    let script = shell::parse(&command);
                    What::Command { command, script }
                }
                "read" | "edit" | "write" => path_of(text("path"), root),
                "grep" | "find" | "ls" => path_of(Some(text("path").unwrap_or(".")), root),
                web::WEB_FETCH => What::Site(text("url").and_then(web::site_of)),
                _ => What::Other,
            }
        };
        Subject {
            tool: tool.to_owned(),
            what,
        }
    }
}

fn path_of(path: Option<&str>, root: &Path) -> What {
    let Some(cleaned) = path.and_then(|p| clean_input(p).ok()) else {
        return What::Other;
    };
    let lexical = lexical_normalize(&root.join(cleaned));
    let real = real_path(&lexical);
    What::Path { lexical, real }
}

/// Whether a `deny` or `ask` rule applies to the call.
pub fn restricts(rule: &Rule, subject: &Subject) -> bool {
    match (&rule.target, &subject.what) {
        (Target::Bash(pattern), What::Command { command, script }) => match (pattern, script) {
            (None, _) => true,
            (Some(pattern), Some(script)) => script.commands.iter().any(|c| pattern.matches(c)),
            (Some(pattern), None) => pattern.matches(&collapse_spaces(command)),
        },
        (Target::Paths { tools, pattern }, what) if tools.contains(&subject.tool.as_str()) => {
            match (pattern, what) {
                (None, _) => true,
                (Some(pattern), What::Path { lexical, real }) => {
                    pattern.matches(lexical) || pattern.matches(real)
                }
                (Some(_), _) => false,
            }
        }
        _ => names(rule, subject),
    }
}

/// Whether `rules` (allow rules) together allow the call; `Some` with the rules used.
pub fn allows<'r>(rules: &[&'r Rule], subject: &Subject) -> Option<Vec<&'r Rule>> {
    if let What::Command { script, .. } = &subject.what {
        if let Some(all) = rules
            .iter()
            .find(|r| matches!(r.target, Target::Bash(None)))
        {
            return Some(vec![*all]);
        }
        let script = script.as_ref().filter(|s| s.writes.is_empty())?;
        let mut used: Vec<&Rule> = Vec::new();
        for command in &script.commands {
            let rule = rules.iter().find(|r| match &r.target {
                Target::Bash(Some(pattern)) => pattern.matches(command),
                _ => false,
            })?;
            if !used.iter().any(|u| std::ptr::eq(*u, *rule)) {
                used.push(rule);
            }
        }
        // A command of no simple command (a comment, a blank line) is left to the policy.
        return (!used.is_empty()).then_some(used);
    }
    if let What::Path { lexical, real } = &subject.what {
        let covers = |rule: &&&Rule, path: &Path| match &rule.target {
            Target::Paths { tools, pattern } if tools.contains(&subject.tool.as_str()) => {
                pattern.as_ref().is_none_or(|p| p.matches(path))
            }
            _ => false,
        };
        let written = rules.iter().find(|r| covers(r, lexical))?;
        let led_to = rules.iter().find(|r| covers(r, real))?;
        let mut used = vec![*written];
        if !std::ptr::eq(*written, *led_to) {
            used.push(led_to);
        }
        return Some(used);
    }
    rules
        .iter()
        .find(|rule| restricts(rule, subject))
        .map(|rule| vec![*rule])
}

/// Rules that name the call's tool without looking at its arguments (and `WebFetch` domains).
fn names(rule: &Rule, subject: &Subject) -> bool {
    match (&rule.target, &subject.what) {
        (Target::WebFetch(domain), What::Site(site)) => match (domain, site) {
            (None, _) => true,
            (Some(domain), Some(site)) => domain.matches(site),
            (Some(_), None) => false,
        },
        (Target::Mcp(rest), What::Mcp { server, tool }) => {
            let safe = tool_name(server, tool);
            let server_safe = safe.split("__").next().unwrap_or_default();
            [server.as_str(), server_safe]
                .iter()
                .any(|s| rest == s || *rest == format!("{s}__*") || *rest == format!("{s}__{tool}"))
                || *rest == safe
        }
        (Target::Tool(name), _) => *name == subject.tool,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::permissions::rule::{Bases, parse};
    use serde_json::json;

    fn rule(text: &str) -> Rule {
        parse(text, Bases::example()).unwrap()
    }

    fn bash(command: &str) -> Subject {
        Subject::of(
            "bash",
            &json!({ "command": command }),
            None,
            Path::new("/p"),
        )
    }

    fn allowed(rules: &[&str], subject: &Subject) -> bool {
        let rules: Vec<Rule> = rules.iter().map(|r| rule(r)).collect();
        let refs: Vec<&Rule> = rules.iter().collect();
        allows(&refs, subject).is_some()
    }

    #[test]
    fn every_simple_command_must_be_allowed() {
        let status = ["Bash(git status:*)"];
        assert!(allowed(&status, &bash("git status -s")));
        assert!(!allowed(&status, &bash("git status && git push")));
        assert!(!allowed(&status, &bash("git status; rm -rf /")));
        assert!(!allowed(&status, &bash("git status $(rm -rf /)")));
        assert!(!allowed(&status, &bash("git status > out.txt")));
        assert!(!allowed(&status, &bash("git status ((")));
        let both = ["Bash(git status:*)", "Bash(git push:*)"];
        assert!(allowed(&both, &bash("git status && git push origin")));
        assert!(allowed(&["Bash"], &bash("anything > out ((")));
    }

    #[test]
    fn restricting_rules_apply_to_any_part() {
        let push = rule("Bash(git push:*)");
        assert!(restricts(&push, &bash("git status && git push")));
        assert!(restricts(&push, &bash("echo $(git push)")));
        assert!(restricts(&push, &bash("git push ((")));
        assert!(!restricts(&push, &bash("git status")));
    }

    #[test]
    fn read_rules_cover_the_search_tools_and_edit_rules_write() {
        let subject = |tool: &str, path: Value| {
            Subject::of(tool, &json!({ "path": path }), None, Path::new("/p"))
        };
        let env = rule("Read(.env)");
        assert!(restricts(&env, &subject("read", json!("a/.env"))));
        assert!(restricts(&env, &subject("grep", json!("a/.env"))));
        assert!(!restricts(&env, &subject("edit", json!("a/.env"))));
        let docs = rule("Edit(docs/**)");
        assert!(restricts(&docs, &subject("write", json!("docs/a.md"))));
        assert!(restricts(
            &docs,
            &subject("edit", json!("./docs/../docs/a.md"))
        ));
        assert!(!restricts(&docs, &subject("edit", json!("src/a.rs"))));
        assert!(allowed(
            &["Edit(docs/**)"],
            &subject("edit", json!("docs/a.md"))
        ));
        assert!(!allowed(
            &["Write(docs/**)"],
            &subject("edit", json!("docs/a.md"))
        ));
        assert!(allowed(&["Read"], &subject("ls", Value::Null)));
    }

    #[test]
    fn web_fetch_and_mcp_and_names() {
        let fetch =
            |url: &str| Subject::of("web_fetch", &json!({ "url": url }), None, Path::new("/p"));
        assert!(restricts(
            &rule("WebFetch(domain:docs.rs)"),
            &fetch("https://docs.rs/x")
        ));
        assert!(!restricts(
            &rule("WebFetch(domain:docs.rs)"),
            &fetch("https://crates.io/")
        ));
        assert!(restricts(&rule("WebFetch"), &fetch("not a url")));
        let info = McpToolInfo {
            server: "git hub".into(),
            tool: "create_issue".into(),
            kind: "other",
            policy: None,
            title: String::new(),
        };
        let mcp = Subject::of(
            "git_hub__create_issue",
            &json!({}),
            Some(&info),
            Path::new("/p"),
        );
        for text in [
            "mcp__git_hub",
            "mcp__git_hub__*",
            "mcp__git_hub__create_issue",
            "git_hub__create_issue",
        ] {
            assert!(restricts(&rule(text), &mcp), "{text}");
        }
        assert!(!restricts(&rule("mcp__git_hub__delete"), &mcp));
        assert!(!restricts(&rule("mcp__other"), &mcp));
        let plan = Subject::of("todo_write", &json!({}), None, Path::new("/p"));
        assert!(restricts(&rule("TodoWrite"), &plan));
        assert!(!restricts(&rule("Bash"), &plan));
    }
}
