//! Hooks in ACP sessions: each hook that decided something (or failed) within a turn told as an
//! agent message chunk of its own, with the `hook` event in `_meta["agent-lsp"].hook`; and the
//! project's hooks asked about as the project's MCP servers are (`trust.rs`): a tool call of
//! its own before the first model request of the first turn that finds them waiting, then a
//! `session/request_permission` whose two answers are both remembered for the project.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::acp::session::AcpSession;
use crate::acp::trust_call::{ALLOW, REJECT, TrustCall, ask_as_tool_call, settle, yes_or_no};
use crate::acp::updates::text_block;
use crate::core::HookRun;

impl AcpSession {
    /// A hook's run as a message of its own, within a turn; a silent one is not shown, nor one
    /// outside a turn (`SessionStart`, `SessionEnd`: an update belongs to a request of its
    /// session; the session file has it).
    pub(super) fn show_hook(&self, run: &HookRun) {
        if !run.decided() || !self.view.in_turn() {
            return;
        }
        let meta = json!({"agent-lsp": {"hook": run}});
        let id = acp::MessageId::new(uuid::Uuid::now_v7().to_string());
        let chunk = acp::ContentChunk::new(text_block(&format!("[{}]", run.summary())))
            .message_id(id)
            .meta(meta.as_object().cloned());
        self.notify(acp::SessionUpdate::AgentMessageChunk(chunk));
    }
}

/// Asks about the project's hooks when they wait for trust and nothing is remembered.
pub async fn ask_if_needed(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    if !session.hooks.needs_trust() || !session.hooks.begin_trust_question() {
        return;
    }
    let id = format!("hooks-trust-{}", uuid::Uuid::now_v7().simple());
    let (status, text) = match ask(session, &id, cancel).await {
        Ok(allowed) => {
            session.hooks.decide_trust(allowed);
            match allowed {
                true => (
                    acp::ToolCallStatus::Completed,
                    "They run from now on; remembered for this project.",
                ),
                false => (
                    acp::ToolCallStatus::Failed,
                    "They do not run; remembered for this project.",
                ),
            }
        }
        Err(why) => {
            tracing::info!(session = session.id, why, "the project's hooks stay off");
            (
                acp::ToolCallStatus::Failed,
                "Not answered: they do not run; asked again next turn.",
            )
        }
    };
    session.hooks.end_trust_question();
    settle(session, id, status, text);
}

/// `Ok(true)`: run them; `Ok(false)`: do not; `Err`: no answer.
async fn ask(
    session: &Arc<AcpSession>,
    id: &str,
    cancel: &CancellationToken,
) -> Result<bool, String> {
    let question = session.hooks.trust_question();
    let call = TrustCall {
        id,
        kind: acp::ToolKind::Execute,
        title: question.title,
        text: format!(
            "This project's settings run these commands on your machine, with your rights:\n\n{}",
            question.listing
        ),
        input: question.args,
    };
    let options = vec![
        acp::PermissionOption::new(
            ALLOW,
            "Run them (remembered for this project)",
            acp::PermissionOptionKind::AllowAlways,
        ),
        acp::PermissionOption::new(
            REJECT,
            "Do not run them (remembered for this project)",
            acp::PermissionOptionKind::RejectAlways,
        ),
    ];
    yes_or_no(&ask_as_tool_call(session, call, options, cancel).await?)
}
