//! Whether the user trusts the allow rules of a project's own settings files.
//!
//! A project file (`.agent-lsp/settings.json`, `.agent-lsp/settings.local.json`,
//! `.claude/settings.json`) comes with a clone or can be written by a command: its allow rules
//! would let the agent run things unasked, so they apply only once the user said yes, as for a
//! project's `.mcp.json` (`mcp::trust`). Deny and ask rules only restrict and always apply.
//!
//! Answers are remembered in `$XDG_STATE_HOME/agent-lsp/permission-trust.json`, per project,
//! as a SHA-256 of each rule with its file, never the rule itself. The answer is per rule: a
//! new or changed rule is asked about on its own, the rules answered before keep their answer,
//! and a removed rule asks nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::files::Source;
use crate::model_registry::EnvSource;
use crate::state_file::{self, project_key};

/// The remembered answer for one rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleTrust {
    Trusted,
    Refused,
    Unknown,
}

#[derive(Default, Serialize, Deserialize)]
struct Stored {
    #[serde(default)]
    projects: BTreeMap<String, Answers>,
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct Answers {
    #[serde(default)]
    trusted: BTreeSet<String>,
    #[serde(default)]
    refused: BTreeSet<String>,
}

/// The trust file (none without a state directory: then nothing is remembered).
#[derive(Clone, Debug)]
pub struct TrustFile {
    path: Option<PathBuf>,
}

impl TrustFile {
    pub fn new(env: &EnvSource) -> Self {
        TrustFile {
            path: state_file::dir(env).map(|dir| dir.join("permission-trust.json")),
        }
    }

    /// The answers remembered for `project`'s rules (`(source, rule)`), each in turn.
    pub fn lookup(&self, project: &Path, rules: &[(Source, &str)]) -> Vec<RuleTrust> {
        let answers = self
            .read()
            .projects
            .remove(&project_key(project))
            .unwrap_or_default();
        (rules.iter())
            .map(|(source, rule)| {
                let print = fingerprint(*source, rule);
                if answers.trusted.contains(&print) {
                    RuleTrust::Trusted
                } else if answers.refused.contains(&print) {
                    RuleTrust::Refused
                } else {
                    RuleTrust::Unknown
                }
            })
            .collect()
    }

    /// Remembers the answer for these rules of `project`.
    pub fn remember(
        &self,
        project: &Path,
        rules: &[(Source, &str)],
        trusted: bool,
    ) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut stored = self.read();
        let answers = stored.projects.entry(project_key(project)).or_default();
        for (source, rule) in rules {
            let print = fingerprint(*source, rule);
            let (add, remove) = match trusted {
                true => (&mut answers.trusted, &mut answers.refused),
                false => (&mut answers.refused, &mut answers.trusted),
            };
            remove.remove(&print);
            add.insert(print);
        }
        state_file::write(path, &stored)
    }

    fn read(&self) -> Stored {
        state_file::read(self.path.as_deref(), "the permission trust file")
    }
}

/// SHA-256 of the rule with its file, in hex.
fn fingerprint(source: Source, rule: &str) -> String {
    let text = format!("agent-lsp permission-trust 1\n{}\n{rule}", source.key());
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_per_rule_and_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = TrustFile {
            path: Some(dir.path().join("t.json")),
        };
        let project = dir.path();
        let a = (Source::Project, "Bash(npm test:*)");
        let b = (Source::Project, "Edit(docs/**)");
        assert_eq!(file.lookup(project, &[a]), [RuleTrust::Unknown]);
        file.remember(project, &[a], true).unwrap();
        file.remember(project, &[b], false).unwrap();
        let moved = (Source::ClaudeProject, "Bash(npm test:*)");
        assert_eq!(
            file.lookup(project, &[a, b, moved]),
            [RuleTrust::Trusted, RuleTrust::Refused, RuleTrust::Unknown]
        );
        file.remember(project, &[b], true).unwrap();
        assert_eq!(file.lookup(project, &[b]), [RuleTrust::Trusted]);
        let text = std::fs::read_to_string(dir.path().join("t.json")).unwrap();
        assert!(!text.contains("npm"), "{text}");
    }
}
