//! A project's `.mcp.json` in ACP sessions: its servers start only once the user allowed them
//! (as in the daemon, protocol.md §3.10). ACP asks only about tool calls within a turn, so the
//! question is a tool call of its own at the start of the session's first turn that needs it:
//! announced as a pending `execute` call listing each server and its command line, then a
//! `session/request_permission` whose two answers are both remembered for the project. No
//! answer (a cancelled turn, an error) starts nothing and asks again at the next turn; after a
//! "no", the `/mcp-trust` command asks again.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::acp::session::AcpSession;
use crate::acp::trust_call::{ALLOW, REJECT, TrustCall, ask_as_tool_call, settle, yes_or_no};
use crate::acp::updates::text_block;
use crate::agent::hooks::PrepareRunHook;
use std::sync::Weak;

/// Asks about the project's servers when they wait for trust and nothing is remembered; the run
/// then waits for an allowed server as for any starting one.
pub async fn ask_if_needed(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    if session.tools.needs_trust() {
        question(session, cancel).await;
    }
}

/// `/mcp-trust`: asks again whatever was remembered; says so when no server waits.
pub async fn ask_again(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    if session.tools.untrusted().is_empty() {
        let text = "No MCP server of this project waits to be allowed.";
        let chunk = acp::ContentChunk::new(text_block(text));
        session.notify(acp::SessionUpdate::AgentMessageChunk(chunk));
        return;
    }
    question(session, cancel).await;
}

/// One question at a time: while one is open, another asks nothing.
async fn question(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    if !session.tools.begin_trust_question() {
        return;
    }
    let id = format!("mcp-trust-{}", uuid::Uuid::now_v7().simple());
    let answer = ask(session, &id, cancel).await;
    let (status, text) = match answer {
        Ok(allowed) => {
            session.tools.decide_trust(allowed);
            match allowed {
                true => (
                    acp::ToolCallStatus::Completed,
                    "Started; remembered for this project.",
                ),
                false => (
                    acp::ToolCallStatus::Failed,
                    "Not started; remembered for this project.",
                ),
            }
        }
        Err(why) => {
            tracing::info!(
                session = session.id,
                why,
                "the project's MCP servers stay stopped"
            );
            (
                acp::ToolCallStatus::Failed,
                "Not answered: not started, asked again next turn.",
            )
        }
    };
    session.tools.end_trust_question();
    settle(session, id, status, text);
}

/// `Ok(true)`: start them; `Ok(false)`: do not; `Err`: no answer.
async fn ask(
    session: &Arc<AcpSession>,
    id: &str,
    cancel: &CancellationToken,
) -> Result<bool, String> {
    let question = session.tools.trust_question();
    let call = TrustCall {
        id,
        kind: acp::ToolKind::Execute,
        title: question.title,
        text: format!(
            "This project's .mcp.json starts these programs on your machine:\n\n{}",
            question.listing
        ),
        input: question.args,
    };
    let options = vec![
        acp::PermissionOption::new(
            ALLOW,
            "Start them (remembered for this project)",
            acp::PermissionOptionKind::AllowAlways,
        ),
        acp::PermissionOption::new(
            REJECT,
            "Do not start them (remembered for this project)",
            acp::PermissionOptionKind::RejectAlways,
        ),
    ];
    yes_or_no(&ask_as_tool_call(session, call, options, cancel).await?)
}

/// The run's preparation, after the question about the project's MCP servers when one is due
/// (`acp::trust`), so an allowed server's tools are there for the turn's first request.
pub fn ask_first(session: Weak<AcpSession>, then: Option<PrepareRunHook>) -> PrepareRunHook {
    Arc::new(move |cancel| {
        let session = session.clone();
        let then = then.clone();
        Box::pin(async move {
            if let Some(session) = session.upgrade() {
                ask_if_needed(&session, &cancel).await;
                crate::acp::hooks::ask_if_needed(&session, &cancel).await;
            }
            match then {
                Some(then) => then(cancel).await,
                None => None,
            }
        })
    })
}
