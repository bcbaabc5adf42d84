//! The project's hooks and the user's trust, for a session: what the front ends ask, what
//! `agent/getState` and `agent-lsp run` list, `run --trust-project-hooks`.

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::SessionHooks;
use crate::hooks::config::{HookEvent, HookSource};
use crate::hooks::trust::describe;
use crate::mcp::trust::{Trust, TrustQuestion, with_changes};

/// A configured hook as `agent/getState` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookInfo {
    pub event: HookEvent,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub command: String,
    pub timeout_sec: f64,
    pub source: HookSource,
    pub file: String,
    pub status: HookStatus,
}

/// Whether a configured hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HookStatus {
    Active,
    /// A project's hook, waiting for the user's trust (or refused it).
    Untrusted,
    /// `disableAllHooks` in a settings file.
    Disabled,
}

impl SessionHooks {
    /// The configured hooks.
    pub fn list(&self) -> Vec<HookInfo> {
        let trusted = self.project_trusted();
        (self.hooks.iter())
            .map(|h| HookInfo {
                event: h.event,
                matcher: h.matcher.written().map(str::to_owned),
                command: h.command.clone(),
                timeout_sec: h.timeout.as_secs_f64(),
                source: h.source,
                file: h.file.display().to_string(),
                status: match (self.disabled, trusted || !h.source.is_project()) {
                    (true, _) => HookStatus::Disabled,
                    (false, true) => HookStatus::Active,
                    (false, false) => HookStatus::Untrusted,
                },
            })
            .collect()
    }

    /// Whether the project has hooks that do not run for want of the user's trust.
    pub fn untrusted(&self) -> bool {
        self.project.has_hooks() && !self.disabled && !self.project_trusted()
    }

    /// Whether the user should be asked: the project's hooks wait and no answer is remembered.
    pub fn needs_trust(&self) -> bool {
        self.untrusted() && self.trust.trust() == Trust::Unknown
    }

    /// The question about the project's hooks, worded once for every front end: one
    /// `Event [matcher]: command (file)` line per hook, then what changed since the last answer.
    /// Its args: `{project, hooks: [{event, matcher?, command, file}], changes: [text]}`.
    pub fn trust_question(&self) -> TrustQuestion {
        let project = self.cwd.display().to_string();
        let changes = self.trust.changes(describe);
        let hooks: Vec<_> = (self.hooks.iter())
            .filter(|h| h.source.is_project())
            .collect();
        let listing = (hooks.iter())
            .map(|h| {
                let matcher = (h.matcher.written())
                    .map(|m| format!(" [{m}]"))
                    .unwrap_or_default();
                let file = h.file.strip_prefix(&self.cwd).unwrap_or(&h.file);
                format!("{}{matcher}: {} ({})", h.event, h.command, file.display())
            })
            .collect::<Vec<_>>()
            .join("\n");
        let listing = with_changes(listing, &changes);
        let mut title = format!("Run the hooks of {project}/.agent-lsp?");
        if !changes.is_empty() {
            title.push_str(&format!(
                " Changed since your last answer: {}",
                changes.join("; ")
            ));
        }
        let args = json!({
            "project": project,
            "hooks": hooks.iter().map(|h| {
                let file = h.file.strip_prefix(&self.cwd).unwrap_or(&h.file);
                json!({"event": h.event, "matcher": h.matcher.written(), "command": h.command,
                       "file": file.display().to_string()})
            }).collect::<Vec<_>>(),
            "changes": changes,
        });
        TrustQuestion {
            project,
            title,
            listing,
            args,
        }
    }

    /// Claims the one open trust question: `false` when one is open already.
    pub fn begin_trust_question(&self) -> bool {
        self.trust.begin_question()
    }

    pub fn end_trust_question(&self) {
        self.trust.end_question();
    }

    /// Records the user's answer for the project's hooks as they are written now.
    pub fn decide_trust(&self, allowed: bool) {
        if let Err(e) = self.project.remember(allowed) {
            tracing::warn!(%e, "cannot remember the hooks trust decision");
        }
        self.trust.answered(allowed);
    }

    /// Runs the project's hooks in this session without asking or remembering anything
    /// (`agent-lsp run --trust-project-hooks`).
    pub fn trust_for_session(&self) {
        self.trusted_now.store(true, Ordering::Release);
    }
}
