//! The daemon's way to put a question to the user (the `ask_user` tool, MCP elicitations):
//! `agent/askUser` for agent clients that answer it, `window/showMessageRequest` with the options
//! as buttons for generic clients; otherwise no one can answer, and the tool says why.
//!
//! The request goes through the one registry of requests to the client, bounded by
//! `approvalTimeoutMs`; an abort withdraws it with `$/cancelRequest`. A timeout, an error reply,
//! a malformed result or a disconnect cancel the question, saying which.

use std::sync::Arc;

use ls_types::{MessageActionItem, MessageType, ShowMessageRequestParams};
use tokio_util::sync::CancellationToken;

use crate::lsp::live_session::LiveSession;
use crate::lsp::protocol::{AskUserAction, AskUserParams, AskUserResult, AskUserSource, method};
use crate::rpc::outgoing::{RequestError, duration_text};
use crate::tools::{Question, UserAnswer};

/// Asks `question` of the session's user; `cancel` (an abort) withdraws it.
pub async fn ask(
    session: &Arc<LiveSession>,
    question: &Question,
    cancel: &CancellationToken,
) -> UserAnswer {
    let config = &session.view.ctx.config;
    if config.ask_user() {
        ask_agent_client(session, question, cancel).await
    } else if config.is_generic() {
        ask_generic_client(session, question, cancel).await
    } else {
        UserAnswer::Unavailable(
            "the editor takes no questions (capabilities.experimental.agent.askUser is not set)"
                .into(),
        )
    }
}

async fn ask_agent_client(
    session: &Arc<LiveSession>,
    question: &Question,
    cancel: &CancellationToken,
) -> UserAnswer {
    let params = AskUserParams {
        session_id: session.id.clone(),
        run_id: session.active_run().unwrap_or_default(),
        tool_call_id: question.tool_call_id.clone(),
        question: question.text.clone(),
        options: (!question.options.is_empty()).then(|| question.options.clone()),
        multi_select: question.multi_select,
        allow_text: question.allow_text,
        source: (question.mcp_server.clone()).map(|mcp_server| AskUserSource { mcp_server }),
    };
    let ctx = &session.view.ctx;
    let timeout = ctx.config.approval_timeout();
    let reply: Result<AskUserResult, RequestError> = ctx
        .out
        .request(method::ASK_USER, params, timeout, cancel)
        .await;
    match reply {
        Ok(result) => match result.action {
            AskUserAction::Accept => UserAnswer::Answered {
                selected: result.selected.unwrap_or_default(),
                text: result.text,
            },
            AskUserAction::Decline => UserAnswer::Declined,
            AskUserAction::Cancel => UserAnswer::Cancelled(None),
        },
        Err(e) => failed(e),
    }
}

/// A question a generic client can show: its options as the buttons of a message.
async fn ask_generic_client(
    session: &Arc<LiveSession>,
    question: &Question,
    cancel: &CancellationToken,
) -> UserAnswer {
    let ctx = &session.view.ctx;
    if !ctx.config.message_actions {
        return UserAnswer::Unavailable(
            "the editor shows no questions (window.showMessage.messageActionItem is not \
             advertised)"
                .into(),
        );
    }
    if question.options.is_empty() {
        return UserAnswer::Unavailable(
            "the editor can only show choices as buttons (window/showMessageRequest), and this \
             question needs a typed answer: offer options"
                .into(),
        );
    }
    let mut message = match &question.mcp_server {
        Some(server) => format!(
            "agent-lsp asks for the MCP server {server}: {}",
            question.text
        ),
        None => format!("agent-lsp asks: {}", question.text),
    };
    for option in &question.options {
        if let Some(description) = &option.description {
            message.push_str(&format!("\n{}: {description}", option.label));
        }
    }
    let actions = (question.options.iter())
        .map(|o| MessageActionItem {
            title: o.label.clone(),
            properties: Default::default(),
        })
        .collect();
    let params = ShowMessageRequestParams {
        typ: MessageType::INFO,
        message,
        actions: Some(actions),
    };
    let timeout = ctx.config.approval_timeout();
    let reply: Result<Option<MessageActionItem>, RequestError> = ctx
        .out
        .request("window/showMessageRequest", params, timeout, cancel)
        .await;
    match reply {
        Ok(Some(item)) => UserAnswer::Answered {
            selected: vec![item.title],
            text: None,
        },
        // Dismissed: the user gave no answer.
        Ok(None) => UserAnswer::Declined,
        Err(e) => failed(e),
    }
}

/// Why a question got no answer from the client.
fn failed(error: RequestError) -> UserAnswer {
    UserAnswer::Cancelled(match error {
        RequestError::Cancelled => None,
        RequestError::Timeout(t) => Some(format!("no answer within {}", duration_text(t))),
        other => Some(other.to_string()),
    })
}
