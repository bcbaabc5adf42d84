//! `agent/runChanges`, `agent/revert` and the `changes_update` event: the effect journal
//! (`core::journal`) on the wire. Answered from their own tasks: reading buffers and
//! reverting open documents go through the editor.

use std::sync::Arc;

use serde_json::Value;

use crate::core::journal::review::{self, ReviewError, Selection};
use crate::lsp::live_session::LiveSession;
use crate::lsp::protocol::{RevertParams, RevertResult, RunChangesParams, code};
use crate::lsp::session_table::SessionTable;
use crate::rpc::jsonrpc::parse_params as parse;
use crate::rpc::jsonrpc::{Id, Response, ResponseError};
use crate::rpc::output::Output;

/// Refused while the session runs: its tools are changing the same files.
const REVERT_BUSY: &str = "Cannot revert while a run is active; abort it or wait for agent_settled";

/// `agent/runChanges`.
pub fn run_changes(sessions: &Arc<SessionTable>, id: Id, params: Value, output: Output) {
    let work = parse::<RunChangesParams>(params).and_then(|p| {
        let session = sessions.get(&p.session_id)?;
        let selection = match p.task_call_id {
            Some(task) => Selection::Task(task),
            None => Selection::Run(p.run_id),
        };
        Ok(Work::Changes(session, selection))
    });
    answer_from_task(work, id, output);
}

/// `agent/revert`.
pub fn revert(sessions: &Arc<SessionTable>, id: Id, params: Value, output: Output) {
    let work = parse::<RevertParams>(params).and_then(|p| start_revert(sessions, p));
    answer_from_task(work, id, output);
}

fn answer_from_task(work: Result<Work, ResponseError>, id: Id, output: Output) {
    let answer = |result: Result<Value, ResponseError>| Response::new(Some(&id), result);
    let work = match work {
        Ok(work) => work,
        Err(e) => return output.send(&answer(Err(e))),
    };
    let id = id.clone();
    tokio::spawn(async move {
        // Hashes of open buffers still being computed decide whether the user changed a file.
        match &work {
            Work::Changes(session, _) | Work::Revert(session, ..) => {
                session.journal.settled().await
            }
        }
        let result = match work {
            Work::Changes(session, selection) => {
                review::run_changes(&session.record, &session.workspace, &selection, true)
                    .await
                    .map_err(review_error)
                    .and_then(to_value)
            }
            Work::Revert(session, p, selection, fork) => {
                let reverted = review::revert(
                    &session.record,
                    &session.workspace,
                    &selection,
                    p.paths.as_deref(),
                    p.force,
                )
                .await;
                reverted
                    .map(|reverted| RevertResult { reverted, fork })
                    .map_err(review_error)
                    .and_then(to_value)
            }
        };
        output.send(&Response::new(Some(&id), result));
    });
}

enum Work {
    Changes(Arc<LiveSession>, Selection),
    Revert(
        Arc<LiveSession>,
        RevertParams,
        Selection,
        Option<crate::lsp::protocol::ForkSessionResult>,
    ),
}

/// Checks a revert can run; with `fork`, makes the fork now (the conversation before the
/// message does not depend on the files).
fn start_revert(sessions: &Arc<SessionTable>, p: RevertParams) -> Result<Work, ResponseError> {
    let session = sessions.get(&p.session_id)?;
    if session.active_run().is_some() {
        return Err(ResponseError::new(code::AGENT_BUSY, REVERT_BUSY));
    }
    let selection = p.selection().map_err(ResponseError::invalid_params)?;
    let fork = match (&p.message_id, p.fork) {
        (Some(message), true) => Some(sessions.fork_session(&p.session_id, message)?),
        (None, true) => {
            return Err(ResponseError::invalid_params("fork needs a messageId"));
        }
        (_, false) => None,
    };
    Ok(Work::Revert(session, p, selection, fork))
}

fn review_error(e: ReviewError) -> ResponseError {
    ResponseError::invalid_params(e.to_string())
}

fn to_value<T: serde::Serialize>(value: T) -> Result<Value, ResponseError> {
    serde_json::to_value(value).map_err(|e| ResponseError::internal(e.to_string()))
}
