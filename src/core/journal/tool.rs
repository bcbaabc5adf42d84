//! A journaled tool: the call's `intended` entry (with before-images) before it runs, its
//! `done` entry (with after-images) after.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{
    AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolInput, ToolRef,
};
use crate::tools::{Workspace, WorkspaceError};

use super::command::{bash_effects, before_images, segment};
use super::jobs::JobWatches;
use super::{Effect, FileEffect, JOB_CHECKPOINTS, JOURNALED, Journal, Phase};
use crate::tools::Jobs;

struct Journaled {
    inner: ToolRef,
    journal: Arc<Journal>,
    ws: Arc<dyn Workspace>,
    /// The background jobs followed, shared by the session's journaled tools.
    watches: Arc<JobWatches>,
}

/// `tools` with the journaled ones wrapped; the jobs of `jobs` followed to their end.
pub(super) fn journaled_tools(
    journal: &Arc<Journal>,
    tools: Vec<ToolRef>,
    ws: &Arc<dyn Workspace>,
    jobs: &Jobs,
) -> Vec<ToolRef> {
    let watches = Arc::new(JobWatches::default());
    watches.follow(journal, jobs);
    let wrap = |inner: ToolRef| -> ToolRef {
        Arc::new(Journaled {
            inner,
            journal: journal.clone(),
            ws: ws.clone(),
            watches: watches.clone(),
        })
    };
    (tools.into_iter())
        .map(|t| match t.name() {
            name if JOURNALED.contains(&name) || JOB_CHECKPOINTS.contains(&name) => wrap(t),
            _ => t,
        })
        .collect()
}

impl AgentTool for Journaled {
    fn declaration(&self) -> &ToolDeclaration {
        self.inner.declaration()
    }

    fn label(&self) -> &str {
        self.inner.label()
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.inner.execution_mode()
    }

    fn prepare_arguments(&self, args: Value) -> Value {
        self.inner.prepare_arguments(args)
    }

    fn execute(&self, input: ToolInput) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let inner = self.inner.clone();
        let journal = self.journal.clone();
        let ws = self.ws.clone();
        let watches = self.watches.clone();
        let tool = inner.name().to_string();
        let tool_call_id = input.tool_call_id.clone();
        Box::pin(async move {
            let effect = |phase, files| Effect::new(phase, &tool_call_id, &tool, files);
            let args = &input.args;
            if JOB_CHECKPOINTS.contains(&tool.as_str()) {
                let job = args.get("jobId").and_then(Value::as_str).map(str::to_owned);
                let result = inner.execute(input).await;
                if let Some(job) = job {
                    (watches.checkpoint(&journal, &job, &tool_call_id, &tool, false)).await;
                }
                return result;
            }
            if tool == "bash" {
                let background = args.get("background").and_then(Value::as_bool) == Some(true);
                let before = before_images(&journal).await;
                let manifest = before.as_ref().and_then(|b| b.manifest.clone());
                journal.append(Effect {
                    untracked: before.is_none(),
                    snapshot: manifest,
                    ..effect(Phase::Intended, Vec::new())
                });
                let result = inner.execute(input).await;
                let job = background.then(|| job_of(&result)).flatten();
                let Some(job) = job else {
                    let files = bash_effects(&journal, before).await;
                    watches.changed_by_others(files.iter().flatten());
                    journal.append(Effect {
                        untracked: files.is_none(),
                        ..effect(Phase::Done, files.unwrap_or_default())
                    });
                    return result;
                };
                // The job goes on: what changed while it started, then its checkpoints.
                let (files, next) = match before {
                    Some(before) => segment(&journal, before, true).await,
                    None => (None, None),
                };
                journal.append(Effect {
                    untracked: files.is_none(),
                    job: Some(job.clone()),
                    ..effect(Phase::Done, files.unwrap_or_default())
                });
                watches.watch(&journal, &job, &tool_call_id, next).await;
                return result;
            }
            let path = args
                .get("path")
                .and_then(Value::as_str)
                .and_then(|p| ws.resolve(p).ok());
            let Some(path) = path else {
                // Refused before it touches anything (a bad path): nothing to journal.
                return inner.execute(input).await;
            };
            let keep = journal.first_change_in_run(&path, &tool_call_id);
            let before = match keep {
                true => image(&journal, &ws, &path).await,
                false => hashed(&journal, &ws, &path, &tool_call_id, &tool, Which::Before).await,
            };
            let shown = path.display().to_string();
            let planned = FileEffect {
                path: shown.clone(),
                before: before.clone(),
                before_known: true,
                unknown: None,
                after: None,
            };
            journal.append(effect(Phase::Intended, vec![planned]));
            let result = inner.execute(input).await;
            // After-images are only compared, never restored: hashed, not stored (the next
            // run that changes the file stores it as its before-image). So the journal does not
            // hold the file's current content, and `bash` re-reads it before it runs.
            let after = hashed(&journal, &ws, &path, &tool_call_id, &tool, Which::After).await;
            journal.remember(&path, None);
            let pending = [&before, &after]
                .iter()
                .any(|h| h.as_deref() == Some(super::PENDING));
            let files = match pending || after != before {
                true => vec![FileEffect {
                    path: shown,
                    before,
                    before_known: true,
                    unknown: None,
                    after,
                }],
                false => Vec::new(),
            };
            watches.changed_by_others(files.iter());
            journal.append(effect(Phase::Done, files));
            result
        })
    }
}

/// `path`'s content as the user sees it, stored as an image: its name; `None` when there is
/// no such file (or it could not be stored, logged). Storing runs off the async thread.
pub(super) async fn image(
    journal: &Arc<Journal>,
    ws: &Arc<dyn Workspace>,
    path: &std::path::Path,
) -> Option<String> {
    match ws.read(path.to_path_buf()).await {
        Ok(snapshot) => {
            let journal = journal.clone();
            let bytes = snapshot.bytes;
            let work = move || journal.store(&bytes);
            tokio::task::spawn_blocking(work).await.ok().flatten()
        }
        Err(WorkspaceError::NotFound(_)) => None,
        Err(e) => {
            tracing::debug!(%e, "no image of {} for the journal", path.display());
            None
        }
    }
}

/// Which hash of a call's file [`hashed`] computes.
#[derive(Clone, Copy)]
pub(super) enum Which {
    Before,
    After,
}

/// The image name of `path`'s content as the user sees it, without storing it (`None`: no
/// such file). A content whose hash is not known yet (an open buffer, captured as it is) is
/// hashed off the call's path: the entry then says [`super::PENDING`], and a `hashed` entry
/// fills it in, so a 10 MB buffer costs the edit nothing.
pub(super) async fn hashed(
    journal: &Arc<Journal>,
    ws: &Arc<dyn Workspace>,
    path: &std::path::Path,
    tool_call_id: &str,
    tool: &str,
    which: Which,
) -> Option<String> {
    let capture = match ws.capture(path.to_path_buf()).await {
        Ok(capture) => capture?,
        Err(e) => {
            tracing::debug!(%e, "no hash of {} for the journal", path.display());
            return None;
        }
    };
    if let Some(hash) = capture.known() {
        return Some(hash.hex());
    }
    let (journal, shown) = (journal.clone(), path.display().to_string());
    let (id, tool) = (tool_call_id.to_string(), tool.to_string());
    journal.hashing_started();
    tokio::spawn(async move {
        let Ok(hash) = tokio::task::spawn_blocking(move || capture.hash()).await else {
            journal.hashing_done();
            return;
        };
        let (before, after) = match which {
            Which::Before => (Some(hash.hex()), None),
            Which::After => (None, Some(hash.hex())),
        };
        let file = FileEffect {
            path: shown,
            before,
            before_known: true,
            unknown: None,
            after,
        };
        journal.append_hashed(&id, &tool, vec![file]);
        journal.hashing_done();
    });
    Some(super::PENDING.to_string())
}

/// The job a `bash` call started in the background (`details.jobId` of its result).
fn job_of(result: &Result<AgentToolResult, ToolError>) -> Option<String> {
    let details = result.as_ref().ok()?.details.as_ref()?;
    details.get("jobId")?.as_str().map(str::to_owned)
}
