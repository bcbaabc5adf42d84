//! `SessionEnd`, `PreCompact`, `Notification` and `SubagentStop`: hooks told of something,
//! which decide nothing here (a `SubagentStop` block is returned to its caller).
//!
//! - `SessionEnd` (`reason: "other"`) runs once as the session closes (the daemon's shutdown or
//!   exit, ACP's `session/close` or exit, the end of `agent-lsp run`), within the time the
//!   session's closing is given (5 s): a hook still running then is killed.
//! - `PreCompact` (`trigger: "manual" | "auto"`, `custom_instructions`) runs before a
//!   compaction summarises; the compaction waits for it.
//! - `Notification` (`notification_type`: `permission_prompt` when the user is asked to
//!   approve a tool call, `elicitation_dialog` when a question waits for them; `message`,
//!   `title`) runs in the background: the question is not held back.

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Firing, SessionHooks, reasons};
use crate::compaction::CompactionReason;
use crate::core::compaction::BeforeCompaction;
use crate::hooks::config::HookEvent;
use crate::hooks::output::Said;

/// `Notification`'s `notification_type` for an approval question.
pub const PERMISSION_PROMPT: &str = "permission_prompt";
/// `Notification`'s `notification_type` for a question to the user.
pub const ELICITATION_DIALOG: &str = "elicitation_dialog";

impl SessionHooks {
    /// Runs the `SessionEnd` hooks, once however often the session is closed: a closing that
    /// comes while they run waits for them (the daemon's `exit` after its `shutdown`).
    pub async fn session_end(&self) {
        if !self.configured(HookEvent::SessionEnd) {
            return;
        }
        self.ended.get_or_init(|| self.end_now()).await;
    }

    async fn end_now(&self) {
        let reason = "other";
        let firing = Firing::new(
            HookEvent::SessionEnd,
            &[reason],
            [("reason", json!(reason))],
        );
        self.fire(firing, &CancellationToken::new()).await;
    }

    /// The `PreCompact` hooks, as the compactor's [`BeforeCompaction`].
    pub fn pre_compact_hook(self: &Arc<Self>) -> Option<BeforeCompaction> {
        if !self.configured(HookEvent::PreCompact) {
            return None;
        }
        let hooks = self.clone();
        Some(Arc::new(move |reason, instructions, cancel| {
            let hooks = hooks.clone();
            Box::pin(async move {
                let trigger = match reason {
                    CompactionReason::Manual => "manual",
                    CompactionReason::Threshold | CompactionReason::Overflow => "auto",
                };
                let instructions = json!(instructions.unwrap_or_default());
                let fields = [
                    ("trigger", json!(trigger)),
                    ("custom_instructions", instructions),
                ];
                let firing = Firing::new(HookEvent::PreCompact, &[trigger], fields);
                hooks.fire(firing, &cancel).await;
            })
        }))
    }

    /// Runs the `Notification` hooks of `kind` in the background.
    pub fn notify(self: &Arc<Self>, kind: &'static str, message: String) {
        if !self.configured(HookEvent::Notification) {
            return;
        }
        let hooks = self.clone();
        tokio::spawn(async move {
            let fields = [
                ("message", json!(message)),
                ("title", json!("agent-lsp")),
                ("notification_type", json!(kind)),
            ];
            let firing = Firing::new(HookEvent::Notification, &[kind], fields);
            hooks.fire(firing, &CancellationToken::new()).await;
        });
    }

    /// Runs the `SubagentStop` hooks of a child agent that is about to stop (`agent_type`, for
    /// matchers; `agent_id`): the reasons it should go on, when one blocks. For subagents.
    pub async fn subagent_stop(
        &self,
        agent_type: &str,
        agent_id: &str,
        stop_hook_active: bool,
        last_message: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let fields = [
            ("stop_hook_active", json!(stop_hook_active)),
            ("agent_type", json!(agent_type)),
            ("agent_id", json!(agent_id)),
            ("last_assistant_message", json!(last_message)),
        ];
        let firing = Firing::new(HookEvent::SubagentStop, &[agent_type], fields);
        let said = self.fire(firing, cancel).await;
        if said.iter().any(|s| s.stop.is_some()) {
            return None;
        }
        reasons(&said, Said::blocks)
    }
}
