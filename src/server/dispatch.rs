//! The table of client → server requests after `initialize`: each method's params parsed once
//! (`-32602` when they do not fit), handed to [`SessionTable`], its result serialised.

use ls_types::{CodeActionParams, ExecuteCommandParams};
use serde::Serialize;
use serde_json::Value;

use crate::rpc::jsonrpc::parse_params as parse;
use crate::rpc::jsonrpc::{ResponseError, code};
use crate::server::documents::DocStore;
use crate::server::live_session::QueueKind;
use crate::server::protocol::{
    ForkSessionParams, GetDocumentParams, GetDocumentResult, ListSessionsParams, QueueParams,
    RemoveQueuedParams, SessionParams, SetModelParams, SetThinkingLevelParams, method,
};
use crate::server::session_table::SessionTable;

/// The request methods (besides `initialize` and `shutdown`).
const REQUESTS: [&str; 27] = [
    method::COMPACT,
    method::PROMPT,
    method::STEER,
    method::FOLLOW_UP,
    method::ABORT,
    method::CLEAR_QUEUE,
    method::REMOVE_QUEUED,
    method::NEW_SESSION,
    method::GET_STATE,
    method::GET_MESSAGES,
    method::GET_DOCUMENT,
    method::MCP_STATUS,
    method::MCP_ASK_TRUST,
    "workspace/executeCommand",
    "textDocument/codeAction",
    method::LIST_MODELS,
    method::SET_MODEL,
    method::SET_THINKING_LEVEL,
    method::SET_QUEUE_MODES,
    method::SET_SANDBOX,
    method::GET_STATS,
    method::LIST_SESSIONS,
    method::FORK_SESSION,
    method::RENAME_SESSION,
    method::LIST_COMMANDS,
    method::RUN_CHANGES,
    method::REVERT,
];

pub fn is_request(method: &str) -> bool {
    REQUESTS.contains(&method) || method == "initialize" || method == "shutdown"
}

/// Handles one request.
pub fn request(
    sessions: &SessionTable,
    docs: &DocStore,
    method: &str,
    params: Value,
) -> Result<Value, ResponseError> {
    match method {
        method::PROMPT => to_value(sessions.prompt(parse(params)?)),
        method::STEER | method::FOLLOW_UP => {
            let p: QueueParams = parse(params)?;
            let kind = if method == method::STEER {
                QueueKind::Steer
            } else {
                QueueKind::FollowUp
            };
            to_value(sessions.enqueue(&p.session_id, p.message, kind))
        }
        method::ABORT => to_value(sessions.abort(&session_id(params)?)),
        method::CLEAR_QUEUE => to_value(sessions.clear_queue(&session_id(params)?)),
        method::REMOVE_QUEUED => {
            let p: RemoveQueuedParams = parse(params)?;
            to_value(sessions.remove_queued(&p.session_id, &p.message_id))
        }
        method::NEW_SESSION => to_value(sessions.new_session(parse(params)?)),
        method::GET_STATE => to_value(sessions.state(&session_id(params)?)),
        method::GET_MESSAGES => to_value(sessions.messages(&session_id(params)?)),
        method::GET_DOCUMENT => to_value(get_document(docs, parse(params)?)),
        method::MCP_STATUS => to_value(sessions.mcp_status(&session_id(params)?)),
        method::MCP_ASK_TRUST => to_value(sessions.mcp_ask_trust(&session_id(params)?)),
        "workspace/executeCommand" => {
            let p: ExecuteCommandParams = parse(params)?;
            sessions.execute_command(p)
        }
        "textDocument/codeAction" => {
            let p: CodeActionParams = parse(params)?;
            to_value(Ok(sessions.code_actions(&p)))
        }
        method::LIST_MODELS => to_value(sessions.list_models()),
        method::SET_MODEL => {
            let p: SetModelParams = parse(params)?;
            to_value(sessions.set_model(&p.session_id, &p.model))
        }
        method::SET_THINKING_LEVEL => {
            let p: SetThinkingLevelParams = parse(params)?;
            to_value(sessions.set_thinking_level(&p.session_id, p.level))
        }
        method::SET_QUEUE_MODES => to_value(sessions.set_queue_modes(parse(params)?)),
        method::SET_SANDBOX => to_value(sessions.set_sandbox(parse(params)?)),
        method::GET_STATS => to_value(sessions.stats(&session_id(params)?)),
        method::LIST_SESSIONS => {
            let p: ListSessionsParams = parse(params)?;
            to_value(sessions.list_sessions(p.cwd))
        }
        method::FORK_SESSION => {
            let p: ForkSessionParams = parse(params)?;
            to_value(sessions.fork_session(&p.session_id, &p.message_id))
        }
        method::RENAME_SESSION => to_value(sessions.rename_session(parse(params)?)),
        method::LIST_COMMANDS => to_value(sessions.list_commands(&session_id(params)?)),
        _ => Err(ResponseError::new(
            code::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )),
    }
}

fn session_id(params: Value) -> Result<String, ResponseError> {
    parse::<SessionParams>(params).map(|p| p.session_id)
}

fn to_value<T: Serialize>(result: Result<T, ResponseError>) -> Result<Value, ResponseError> {
    serde_json::to_value(result?).map_err(|e| ResponseError::internal(e.to_string()))
}

/// `agent/getDocument`: what the server mirrors for one URI (for resync checks and tests).
fn get_document(docs: &DocStore, p: GetDocumentParams) -> Result<GetDocumentResult, ResponseError> {
    let doc = docs
        .get(&p.uri)
        .ok_or_else(|| ResponseError::invalid_params(format!("document {} is not open", p.uri)))?;
    Ok(GetDocumentResult {
        uri: p.uri,
        version: doc.version,
        text: doc.rope.to_string(),
    })
}
