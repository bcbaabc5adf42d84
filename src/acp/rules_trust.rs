//! The allow rules of a project's settings files in ACP sessions: they apply only once the user
//! trusted them (`core::permissions`, as the daemon asks, protocol.md §3.22). ACP asks only
//! about tool calls within a turn, so the question is a tool call of its own at the start of the
//! first turn that finds rules waiting, as for `.mcp.json` (`trust.rs`): a pending `other` call
//! listing the rules by file, then a `session/request_permission` with three answers.

use std::sync::Arc;

use acp::PermissionOptionKind as Kind;
use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::acp::session::AcpSession;
use crate::acp::trust_call::{Answer, TrustCall, ask, settle};
use crate::core::permissions::TrustAnswer;

/// The three answers, in the order offered, each with what it decides.
const ANSWERS: [(Answer, TrustAnswer); 3] = [
    (
        Answer::new(
            "allow_always",
            "Apply them (remembered for this project)",
            Kind::AllowAlways,
            "Applied; remembered.",
        ),
        TrustAnswer::Trust,
    ),
    (
        Answer::new(
            "reject_once",
            "Not now (asked again in the next session)",
            Kind::RejectOnce,
            "Not applied in this session.",
        ),
        TrustAnswer::NotNow,
    ),
    (
        Answer::new(
            "reject_always",
            "Never (remembered for this project)",
            Kind::RejectAlways,
            "Not applied; remembered.",
        ),
        TrustAnswer::Refuse,
    ),
];

/// Asks about the project's allow rules when some wait (`acp::trust::ask_first`, at the start of
/// a turn).
pub(super) async fn ask_if_needed(session: &Arc<AcpSession>, cancel: &CancellationToken) {
    let permissions = session.gate.permissions().clone();
    let waiting = permissions.untrusted();
    if waiting.is_empty() {
        return;
    }
    let call = TrustCall::new(
        "rules-trust",
        acp::ToolKind::Other,
        "This project's settings let the agent act without asking:",
        permissions.trust_question(&waiting),
    );
    let chosen = ask(session, &call, &ANSWERS, cancel).await;
    if let Ok((_, decided)) = chosen {
        permissions.decide_trust(&waiting, *decided);
    }
    let chosen = chosen.map(|(answer, _)| answer);
    settle(
        session,
        call.id,
        chosen,
        "Not answered: not applied, asked again next turn.",
    );
}
