//! The narrowest rule an "always" answer saves, per scope, shown to the user before it is saved
//! (`agent/beforeToolCall`'s `alwaysRules`, ACP's option names).
//!
//! - `bash`: `Bash(<program> <first argument>:*)` for each simple command (the first argument
//!   only when it is a plain word and not an option: `Bash(cargo test:*)`, `Bash(ls:*)`), as
//!   Claude Code saves one rule per simple command of a compound one; only for the commands no
//!   rule allows yet.
//! - `edit`, `write`: the file: `Edit(/src/lib.rs)` for the project (from its root),
//!   `Edit(//home/me/p/src/lib.rs)` for the user (absolute: their rules hold in every project).
//!   For the session, the tool (`edit`, `write`), as "always" answers always were.
//! - `read`, `grep`, `find`, `ls` (asked only under a stricter policy): `Read(…)` likewise.
//! - `web_fetch`: `WebFetch(domain:<site>)`.
//! - an MCP tool: `mcp__<server>__<tool>`; for the session, its tool name.
//! - any other tool: its name.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::matcher::{Subject, What};
use super::rule::collapse_spaces;

/// Where an "always" answer is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// Until the session ends (and what an answer without a scope means).
    Session,
    /// `.agent-lsp/settings.local.json` of the project.
    Project,
    /// The user's `settings.json`.
    User,
}

/// The rules each scope would save.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Proposals {
    pub session: Vec<String>,
    pub project: Vec<String>,
    pub user: Vec<String>,
}

impl Proposals {
    pub fn of(&self, scope: Scope) -> &[String] {
        match scope {
            Scope::Session => &self.session,
            Scope::Project => &self.project,
            Scope::User => &self.user,
        }
    }

    fn same(rules: Vec<String>) -> Proposals {
        Proposals {
            session: rules.clone(),
            project: rules.clone(),
            user: rules,
        }
    }
}

/// The rules that would cover the call (`allowed`: whether a simple command is allowed already);
/// `None` when no rule can (a command that cannot be parsed, a program that is not a plain word).
pub fn propose(
    subject: &Subject,
    project: &Path,
    allowed: impl Fn(&str) -> bool,
) -> Option<Proposals> {
    let tool = subject.tool.as_str();
    match &subject.what {
        What::Command { script, .. } => {
            let script = script.as_ref()?;
            let mut rules: Vec<String> = Vec::new();
            for command in script.commands.iter().filter(|c| !allowed(c)) {
                let rule = format!("Bash({}:*)", command_prefix(command)?);
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            (!rules.is_empty()).then(|| Proposals::same(rules))
        }
        What::Path { lexical, .. } => {
            let name = match tool {
                "edit" | "write" => "Edit",
                _ => "Read",
            };
            Some(Proposals {
                session: vec![tool.to_owned()],
                project: vec![format!("{name}({})", project_pattern(lexical, project))],
                user: vec![format!("{name}(/{})", escape(lexical))],
            })
        }
        What::Site(Some(site)) => Some(Proposals::same(vec![format!("WebFetch(domain:{site})")])),
        What::Mcp { server, tool: own } => Some(Proposals {
            session: vec![tool.to_owned()],
            ..Proposals::same(vec![format!(
                "mcp__{}",
                crate::mcp::tool::tool_name(server, own)
            )])
        }),
        // A URL that does not parse names no site; the bare tool would cover every one.
        What::Site(None) => None,
        What::Other => Some(Proposals::same(vec![tool.to_owned()])),
    }
}

/// The program plus its first argument unless that is an option or not a plain word:
/// `cargo test`, `ls`; `None` for a program that is not a plain word (`$CMD`, `"a b"`).
pub fn command_prefix(command: &str) -> Option<String> {
    let command = collapse_spaces(command);
    let mut words = command.split(' ');
    let program = words.next().filter(|p| is_plain_word(p))?;
    Some(match words.next() {
        Some(arg) if !arg.starts_with('-') && is_plain_word(arg) => format!("{program} {arg}"),
        _ => program.to_owned(),
    })
}

fn is_plain_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./:=@+".contains(c))
        && !word.ends_with(':')
}

/// The path from the project's root (`/src/lib.rs`), or absolute (`//etc/hosts`) outside it.
fn project_pattern(path: &Path, project: &Path) -> String {
    match path.strip_prefix(project) {
        Ok(relative) if relative != Path::new("") => format!("/{}", escape(relative)),
        _ => format!("/{}", escape(path)),
    }
}

/// A path as a gitignore pattern that matches exactly it: special characters escaped.
fn escape(path: &Path) -> String {
    let text: PathBuf = path.to_path_buf();
    let mut out = String::new();
    for c in text.to_string_lossy().chars() {
        if "*?[]\\!#".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn propose_for(tool: &str, args: serde_json::Value) -> Option<Proposals> {
        let project = Path::new("/p");
        propose(&Subject::of(tool, &args, None, project), project, |_| false)
    }

    #[test]
    fn one_rule_per_simple_command() {
        let bash = |c: &str| propose_for("bash", json!({ "command": c }));
        assert_eq!(
            bash("cargo test --lib").unwrap().project,
            ["Bash(cargo test:*)"]
        );
        assert_eq!(bash("ls -la").unwrap().session, ["Bash(ls:*)"]);
        assert_eq!(
            bash("git status && git push origin && git status")
                .unwrap()
                .user,
            ["Bash(git status:*)", "Bash(git push:*)"]
        );
        assert_eq!(bash("echo \"hi\"").unwrap().user, ["Bash(echo:*)"]);
        assert_eq!(bash("$CMD x"), None);
        assert_eq!(bash("echo (("), None);
        let project = Path::new("/p");
        let subject = Subject::of(
            "bash",
            &json!({"command": "git status && npm test"}),
            None,
            project,
        );
        let only_new = propose(&subject, project, |c| c.starts_with("git")).unwrap();
        assert_eq!(only_new.project, ["Bash(npm test:*)"]);
    }

    #[test]
    fn files_sites_and_names() {
        let edit = propose_for("write", json!({"path": "src/a*.rs"})).unwrap();
        assert_eq!(edit.session, ["write"]);
        assert_eq!(edit.project, ["Edit(/src/a\\*.rs)"]);
        assert_eq!(edit.user, ["Edit(//p/src/a\\*.rs)"]);
        let outside = propose_for("read", json!({"path": "/etc/hosts"})).unwrap();
        assert_eq!(outside.project, ["Read(//etc/hosts)"]);
        let fetch = propose_for("web_fetch", json!({"url": "https://docs.rs/x"})).unwrap();
        assert_eq!(fetch.session, ["WebFetch(domain:docs.rs)"]);
        assert_eq!(
            propose_for("todo_write", json!({})).unwrap().user,
            ["todo_write"]
        );
    }
}
