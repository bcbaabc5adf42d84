//! A project-trust question (its `.mcp.json`, hooks or permission rules) as ACP can ask one:
//! ACP asks only about tool calls, so the question is a tool call of its own, announced pending
//! with what it would allow as its content, then `session/request_permission`, then ended with
//! a line saying what follows. `trust.rs`, `hooks.rs` and `rules_trust.rs` word their own.

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::acp::session::AcpSession;
use crate::acp::updates::text_block;
use crate::rpc::outgoing::RequestError;

/// The two answers of a yes-or-no trust question, both remembered for the project.
pub(super) const ALLOW: &str = "allow_always";
pub(super) const REJECT: &str = "reject_always";

/// `allow_always` or `reject_always`, the two answers of a yes-or-no trust question.
pub(super) fn yes_or_no(option: &str) -> Result<bool, String> {
    match option {
        ALLOW => Ok(true),
        REJECT => Ok(false),
        other => Err(format!("unknown option {other:?}")),
    }
}

/// A project-trust question (its `.mcp.json`, hooks or permission rules) as ACP can ask one:
/// the tool call it is about, shown pending with `text` as its content.
pub(super) struct TrustCall<'a> {
    pub id: &'a str,
    pub kind: acp::ToolKind,
    pub title: String,
    pub text: String,
    pub input: serde_json::Value,
}

/// Announces `call` and asks `session/request_permission` with `options`: the id of the option
/// chosen, or why there is none.
pub(super) async fn ask_as_tool_call(
    session: &AcpSession,
    call: TrustCall<'_>,
    options: Vec<acp::PermissionOption>,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let content = vec![acp::ToolCallContent::Content(acp::Content::new(
        text_block(&call.text),
    ))];
    let announced = acp::ToolCall::new(call.id.to_owned(), call.title.clone())
        .kind(call.kind)
        .status(acp::ToolCallStatus::Pending)
        .content(content.clone())
        .raw_input(call.input.clone());
    session.notify(acp::SessionUpdate::ToolCall(announced));
    let fields = acp::ToolCallUpdateFields::new()
        .title(call.title)
        .kind(call.kind)
        .status(acp::ToolCallStatus::Pending)
        .content(content)
        .raw_input(call.input);
    let update = acp::ToolCallUpdate::new(call.id.to_owned(), fields);
    match session.request_permission(update, options, cancel).await {
        Ok(response) => match response.outcome {
            acp::RequestPermissionOutcome::Selected(selected) => {
                Ok(selected.option_id.0.to_string())
            }
            _ => Err("cancelled".into()),
        },
        Err(RequestError::Cancelled) => Err("the turn was cancelled".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Ends the question's tool call `id` with `status` and a line saying what follows.
pub(super) fn settle(session: &AcpSession, id: String, status: acp::ToolCallStatus, text: &str) {
    let fields = acp::ToolCallUpdateFields::new()
        .status(status)
        .content(vec![acp::ToolCallContent::Content(acp::Content::new(
            text_block(text),
        ))]);
    session.notify(acp::SessionUpdate::ToolCallUpdate(
        acp::ToolCallUpdate::new(id, fields),
    ));
}
