//! The allow rules of a project's settings files in ACP sessions: they apply only once the user
//! trusted them (`core::permissions`, as the daemon asks, protocol.md §3.22). ACP asks only
//! about tool calls within a turn, so the question is a tool call of its own at the start of the
//! first turn that finds rules waiting, as for `.mcp.json` (`trust.rs`): a pending `other` call
//! listing the rules by file, then a `session/request_permission` with three answers.

use std::sync::{Arc, Weak};

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::acp::session::AcpSession;
use crate::acp::trust_call::{TrustCall, ask_as_tool_call, settle};
use crate::agent::hooks::PrepareRunHook;
use crate::core::permissions::{TrustAnswer, TrustQuestion};

const TRUST: &str = "allow_always";
const NOT_NOW: &str = "reject_once";
const NEVER: &str = "reject_always";

/// The run's preparation, after the question about the project's allow rules when some wait.
pub fn ask_first(session: Weak<AcpSession>, then: Option<PrepareRunHook>) -> PrepareRunHook {
    Arc::new(move |cancel| {
        let session = session.clone();
        let then = then.clone();
        Box::pin(async move {
            if let Some(session) = session.upgrade() {
                ask_if_needed(&session, &cancel).await;
            }
            match then {
                Some(then) => then(cancel).await,
                None => None,
            }
        })
    })
}

async fn ask_if_needed(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    let permissions = session.gate.permissions().clone();
    let waiting = permissions.untrusted();
    if waiting.is_empty() {
        return;
    }
    let question = TrustQuestion::new(permissions.project(), &waiting);
    let id = format!("rules-trust-{}", uuid::Uuid::now_v7().simple());
    let call = TrustCall {
        id: &id,
        kind: acp::ToolKind::Other,
        title: question.title,
        text: format!(
            "This project's settings let the agent act without asking:\n\n{}",
            question.listing
        ),
        input: question.args,
    };
    let options = vec![
        acp::PermissionOption::new(
            TRUST,
            "Apply them (remembered for this project)",
            acp::PermissionOptionKind::AllowAlways,
        ),
        acp::PermissionOption::new(
            NOT_NOW,
            "Not now (asked again in the next session)",
            acp::PermissionOptionKind::RejectOnce,
        ),
        acp::PermissionOption::new(
            NEVER,
            "Never (remembered for this project)",
            acp::PermissionOptionKind::RejectAlways,
        ),
    ];
    let chosen = ask_as_tool_call(session, call, options, cancel).await;
    let answer = match chosen.as_deref() {
        Ok(TRUST) => Some(TrustAnswer::Trust),
        Ok(NOT_NOW) => Some(TrustAnswer::NotNow),
        Ok(NEVER) => Some(TrustAnswer::Refuse),
        _ => None,
    };
    let (status, text) = match answer {
        Some(answer) => {
            permissions.decide_trust(&waiting, answer);
            match answer {
                TrustAnswer::Trust => (acp::ToolCallStatus::Completed, "Applied; remembered."),
                TrustAnswer::NotNow => {
                    (acp::ToolCallStatus::Failed, "Not applied in this session.")
                }
                TrustAnswer::Refuse => (acp::ToolCallStatus::Failed, "Not applied; remembered."),
            }
        }
        None => (
            acp::ToolCallStatus::Failed,
            "Not answered: not applied, asked again next turn.",
        ),
    };
    settle(session, id, status, text);
}
