//! Whether a project's hooks may run.
//!
//! `.agent-lsp/settings.json` and `.agent-lsp/settings.local.json` come with a checkout, and
//! their hooks run programs with the user's rights, so they run only once the user said yes for
//! that project, as a project's `.mcp.json` servers start (`mcp::trust`, whose store this is,
//! under `$XDG_STATE_HOME/agent-lsp/hooks-trust.json`). The answer is remembered for each file's
//! `hooks` object as written, event by event, as hashes: a changed or added event, or a new
//! file, asks again, naming what changed. Claude Code's own `.claude/settings.json` is never
//! read for hooks.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::hooks::config::SettingsHooks;
use crate::mcp::trust::{Change, How, Remembered, Trust, TrustStore};
use crate::model_registry::EnvSource;

/// The trust file's name in agent-lsp's state folder.
const FILE: &str = "hooks-trust.json";

/// A project's hook files and what is remembered about them.
pub struct ProjectTrust {
    store: TrustStore,
    root: PathBuf,
    /// Each project settings file with hooks: its name in the project, its `hooks` as written.
    entries: Vec<(String, Map<String, Value>)>,
}

impl ProjectTrust {
    /// The project files among `files` (the user's file needs no trust).
    pub fn new(env: &EnvSource, root: &Path, files: &[SettingsHooks]) -> ProjectTrust {
        let entries = (files.iter())
            .filter(|f| f.source.is_project() && !f.written.is_empty())
            .map(|f| (name_in(root, &f.file), f.written.clone()))
            .collect();
        ProjectTrust {
            store: TrustStore::named(env, FILE),
            root: root.to_path_buf(),
            entries,
        }
    }

    /// Whether the project has hooks at all.
    pub fn has_hooks(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The remembered answer, and what changed since.
    pub fn remembered(&self) -> Remembered {
        if !self.has_hooks() {
            return Remembered {
                trust: Trust::Allowed,
                changes: Vec::new(),
            };
        }
        self.store.decision_of(&self.root, self.pairs())
    }

    /// Remembers the user's answer for the files as they are now.
    pub fn remember(&self, allowed: bool) -> std::io::Result<()> {
        self.store.remember_of(&self.root, self.pairs(), allowed)
    }

    fn pairs(&self) -> impl Iterator<Item = (&str, &Map<String, Value>)> {
        self.entries
            .iter()
            .map(|(name, hooks)| (name.as_str(), hooks))
    }
}

/// `.agent-lsp/settings.json`: the file's path inside the project.
fn name_in(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

/// A change since the last answer, in the words of hooks: `new hooks in
/// .agent-lsp/settings.json`, `.agent-lsp/settings.json: PreToolUse hooks changed`.
pub fn describe(change: &Change) -> String {
    match change {
        Change::NewServer(file) => format!("new hooks in {file}"),
        Change::Field {
            server, field, how, ..
        } => {
            let how = match how {
                How::Added => "added",
                How::Changed => "changed",
                How::Removed => "removed",
            };
            format!("{server}: {field} hooks {how}")
        }
        Change::OlderAnswer => change.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::HookSource;
    use serde_json::json;

    fn file(root: &Path, name: &str, hooks: Value) -> SettingsHooks {
        SettingsHooks {
            file: root.join(name),
            source: HookSource::Project,
            hooks: Vec::new(),
            written: hooks.as_object().unwrap().clone(),
            disable_all: false,
        }
    }

    #[test]
    fn an_answer_holds_until_an_event_of_a_file_changes() {
        let state = tempfile::tempdir().unwrap();
        let env = EnvSource::from_pairs([("XDG_STATE_HOME", state.path().to_str().unwrap())]);
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let stop = json!({"Stop": [{"hooks": [{"command": "a"}]}]});
        let first = [file(root, ".agent-lsp/settings.json", stop.clone())];
        let trust = ProjectTrust::new(&env, root, &first);
        assert_eq!(trust.remembered().trust, Trust::Unknown);
        trust.remember(true).unwrap();
        assert_eq!(
            ProjectTrust::new(&env, root, &first).remembered().trust,
            Trust::Allowed
        );
        let changed = [file(
            root,
            ".agent-lsp/settings.json",
            json!({"Stop": [{"hooks": [{"command": "b"}]}]}),
        )];
        let again = ProjectTrust::new(&env, root, &changed).remembered();
        assert_eq!(again.trust, Trust::Unknown);
        let said: Vec<String> = again.changes.iter().map(describe).collect();
        assert_eq!(said, [".agent-lsp/settings.json: Stop hooks changed"]);
        let more = [
            file(root, ".agent-lsp/settings.json", stop),
            file(root, ".agent-lsp/settings.local.json", json!({"Stop": []})),
        ];
        let said: Vec<String> = (ProjectTrust::new(&env, root, &more).remembered().changes)
            .iter()
            .map(describe)
            .collect();
        assert_eq!(said, ["new hooks in .agent-lsp/settings.local.json"]);
    }
}
