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
use crate::acp::trust_call::{self, YesOrNo};
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

const QUESTION: YesOrNo = YesOrNo {
    prefix: "hooks-trust",
    intro: "This project's settings run these commands on your machine, with your rights:",
    yes: (
        "Run them (remembered for this project)",
        "They run from now on; remembered for this project.",
    ),
    no: (
        "Do not run them (remembered for this project)",
        "They do not run; remembered for this project.",
    ),
    unanswered: "Not answered: they do not run; asked again next turn.",
    stays_off: "the project's hooks stay off",
};

/// Asks about the project's hooks when they wait for trust and nothing is remembered.
pub async fn ask_if_needed(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    trust_call::ask_if_needed(session, session.hooks.as_ref(), &QUESTION, cancel).await;
}
