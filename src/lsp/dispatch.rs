//! The table of client → server requests after `initialize` ([`Request`]: each method once, and
//! how it is answered): each request's params parsed once (`-32602` when they do not fit),
//! handed to [`SessionTable`], its result serialised.

use ls_types::{CodeActionParams, ExecuteCommandParams};
use serde::Serialize;
use serde_json::Value;

use std::sync::Arc;

use crate::lsp::changes;
use crate::lsp::documents::DocStore;
use crate::lsp::live_session::QueueKind;
use crate::lsp::protocol::{
    ForkSessionParams, GetDocumentParams, GetDocumentResult, ListSessionsParams, QueueParams,
    SessionParams, method,
};
use crate::lsp::session_table::SessionTable;
use crate::rpc::jsonrpc::parse_params as parse;
use crate::rpc::jsonrpc::{Id, ResponseError};
use crate::rpc::output::Output;

/// Every client → server request the daemon answers after `initialize`: the one table of its
/// methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Prompt,
    Steer,
    FollowUp,
    Abort,
    ClearQueue,
    RemoveQueued,
    NewSession,
    GetState,
    GetMessages,
    GetDocument,
    McpStatus,
    McpAskTrust,
    ExecuteCommand,
    CodeAction,
    ListModels,
    SetModel,
    SetThinkingLevel,
    SetQueueModes,
    SetSandbox,
    GetStats,
    ListSessions,
    ForkSession,
    RenameSession,
    ListCommands,
    Compact,
    RunChanges,
    Revert,
    ListJobs,
    KillJob,
    JobOutput,
}

/// How the loop answers a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Before it reads the next message (its reply slot is queued first).
    Inline,
    /// From a task of its own, which answers when done: its work goes through the editor (its
    /// buffers, `workspace/applyEdit`), whose replies the loop must keep reading, or waits for a
    /// compaction or a job to end.
    Task,
}

impl Request {
    /// The request a method names; `None`: not one of the daemon's requests.
    pub fn of(method: &str) -> Option<Request> {
        use Request::*;
        Some(match method {
            method::PROMPT => Prompt,
            method::STEER => Steer,
            method::FOLLOW_UP => FollowUp,
            method::ABORT => Abort,
            method::CLEAR_QUEUE => ClearQueue,
            method::REMOVE_QUEUED => RemoveQueued,
            method::NEW_SESSION => NewSession,
            method::GET_STATE => GetState,
            method::GET_MESSAGES => GetMessages,
            method::GET_DOCUMENT => GetDocument,
            method::MCP_STATUS => McpStatus,
            method::MCP_ASK_TRUST => McpAskTrust,
            "workspace/executeCommand" => ExecuteCommand,
            "textDocument/codeAction" => CodeAction,
            method::LIST_MODELS => ListModels,
            method::SET_MODEL => SetModel,
            method::SET_THINKING_LEVEL => SetThinkingLevel,
            method::SET_QUEUE_MODES => SetQueueModes,
            method::SET_SANDBOX => SetSandbox,
            method::GET_STATS => GetStats,
            method::LIST_SESSIONS => ListSessions,
            method::FORK_SESSION => ForkSession,
            method::RENAME_SESSION => RenameSession,
            method::LIST_COMMANDS => ListCommands,
            method::COMPACT => Compact,
            method::RUN_CHANGES => RunChanges,
            method::REVERT => Revert,
            method::LIST_JOBS => ListJobs,
            method::KILL_JOB => KillJob,
            method::JOB_OUTPUT => JobOutput,
            _ => return None,
        })
    }

    pub fn handling(self) -> Handling {
        match self {
            Request::Compact | Request::RunChanges | Request::Revert | Request::KillJob => {
                Handling::Task
            }
            _ => Handling::Inline,
        }
    }
}

pub fn is_request(method: &str) -> bool {
    Request::of(method).is_some() || method == "initialize" || method == "shutdown"
}

/// Starts a request answered from its own task ([`Handling::Task`]); it answers through
/// `output` when done.
pub fn spawn(
    sessions: &Arc<SessionTable>,
    request: Request,
    id: Id,
    params: Value,
    output: Output,
) {
    match request {
        Request::Compact => sessions.compact(id, params, output),
        Request::RunChanges => changes::run_changes(sessions, id, params, output),
        Request::KillJob => sessions.kill_job(id, params, output),
        _ => changes::revert(sessions, id, params, output),
    }
}

/// Answers an inline request ([`Handling::Inline`]).
pub fn request(
    sessions: &SessionTable,
    docs: &DocStore,
    request: Request,
    params: Value,
) -> Result<Value, ResponseError> {
    use Request::*;
    match request {
        Prompt => to_value(sessions.prompt(parse(params)?)),
        Steer | FollowUp => {
            let p: QueueParams = parse(params)?;
            let kind = match request {
                Steer => QueueKind::Steer,
                _ => QueueKind::FollowUp,
            };
            to_value(sessions.enqueue(&p.session_id, p.message, kind))
        }
        Abort => to_value(sessions.abort(&session_id(params)?)),
        ClearQueue => to_value(sessions.clear_queue(&session_id(params)?)),
        RemoveQueued => to_value(sessions.remove_queued(parse(params)?)),
        NewSession => to_value(sessions.new_session(parse(params)?)),
        GetState => to_value(sessions.state(&session_id(params)?)),
        GetMessages => to_value(sessions.messages(&session_id(params)?)),
        GetDocument => to_value(get_document(docs, parse(params)?)),
        McpStatus => to_value(sessions.mcp_status(&session_id(params)?)),
        McpAskTrust => to_value(sessions.mcp_ask_trust(&session_id(params)?)),
        ExecuteCommand => {
            let p: ExecuteCommandParams = parse(params)?;
            sessions.execute_command(p)
        }
        CodeAction => {
            let p: CodeActionParams = parse(params)?;
            to_value(Ok(sessions.code_actions(&p)))
        }
        ListModels => to_value(sessions.list_models()),
        SetModel => to_value(sessions.set_model(parse(params)?)),
        SetThinkingLevel => to_value(sessions.set_thinking_level(parse(params)?)),
        SetQueueModes => to_value(sessions.set_queue_modes(parse(params)?)),
        SetSandbox => to_value(sessions.set_sandbox(parse(params)?)),
        GetStats => to_value(sessions.stats(&session_id(params)?)),
        ListSessions => {
            let p: ListSessionsParams = parse(params)?;
            to_value(sessions.list_sessions(p.cwd))
        }
        ForkSession => {
            let p: ForkSessionParams = parse(params)?;
            to_value(sessions.fork_session(&p.session_id, &p.message_id))
        }
        RenameSession => to_value(sessions.rename_session(parse(params)?)),
        ListCommands => to_value(sessions.list_commands(&session_id(params)?)),
        ListJobs => to_value(sessions.list_jobs(&session_id(params)?)),
        JobOutput => to_value(sessions.job_output(parse(params)?)),
        Compact | RunChanges | Revert | KillJob => Err(ResponseError::internal(format!(
            "{request:?} is answered from its own task"
        ))),
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
