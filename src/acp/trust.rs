//! A project's `.mcp.json` in ACP sessions: its servers start only once the user allowed them
//! (as in the daemon, protocol.md §3.10). ACP asks only about tool calls within a turn, so the
//! question is a tool call of its own at the start of the session's first turn that needs it:
//! announced as a pending `execute` call listing each server and its command line, then a
//! `session/request_permission` whose two answers are both remembered for the project. No
//! answer (a cancelled turn, an error) starts nothing and asks again at the next turn; after a
//! "no", the `/mcp-trust` command asks again.

use std::sync::{Arc, Weak};

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::acp::session::AcpSession;
use crate::acp::trust_call::{self, YesOrNo, ask_yes_or_no};
use crate::acp::updates::text_block;
use crate::agent::hooks::PrepareRunHook;

const QUESTION: YesOrNo = YesOrNo {
    prefix: "mcp-trust",
    intro: "This project's .mcp.json starts these programs on your machine:",
    yes: (
        "Start them (remembered for this project)",
        "Started; remembered for this project.",
    ),
    no: (
        "Do not start them (remembered for this project)",
        "Not started; remembered for this project.",
    ),
    unanswered: "Not answered: not started, asked again next turn.",
    stays_off: "the project's MCP servers stay stopped",
};

/// Asks about the project's servers when they wait for trust and nothing is remembered; the run
/// then waits for an allowed server as for any starting one.
pub async fn ask_if_needed(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    trust_call::ask_if_needed(session, session.tools.as_ref(), &QUESTION, cancel).await;
}

/// `/mcp-trust`: asks again whatever was remembered; says so when no server waits.
pub async fn ask_again(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    if session.tools.untrusted().is_empty() {
        let text = "No MCP server of this project waits to be allowed.";
        let chunk = acp::ContentChunk::new(text_block(text));
        session.notify(acp::SessionUpdate::AgentMessageChunk(chunk));
        return;
    }
    ask_yes_or_no(session, session.tools.as_ref(), &QUESTION, cancel).await;
}

/// The run's preparation, after the questions due about the project: its MCP servers (so an
/// allowed server's tools are there for the turn's first request), its hooks, then its
/// permission rules (`acp::hooks`, `acp::rules_trust`).
pub fn ask_first(session: Weak<AcpSession>, then: Option<PrepareRunHook>) -> PrepareRunHook {
    Arc::new(move |cancel| {
        let session = session.clone();
        let then = then.clone();
        Box::pin(async move {
            if let Some(session) = session.upgrade() {
                ask_if_needed(&session, &cancel).await;
                crate::acp::hooks::ask_if_needed(&session, &cancel).await;
                crate::acp::rules_trust::ask_if_needed(&session, &cancel).await;
            }
            match then {
                Some(then) => then(cancel).await,
                None => None,
            }
        })
    })
}
