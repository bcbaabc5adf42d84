//! A journaled tool: the call's `intended` entry (with before-images) before it runs, its
//! `done` entry (with after-images) after.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{
    AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolRef, ToolUpdater,
};
use crate::tools::{Workspace, WorkspaceError};

use super::images::Before;
use super::live::Mark;
use super::{Effect, FileEffect, Journal, Phase};

struct Journaled {
    inner: ToolRef,
    journal: Arc<Journal>,
    ws: Arc<dyn Workspace>,
}

pub(super) fn journaled(inner: ToolRef, journal: Arc<Journal>, ws: Arc<dyn Workspace>) -> ToolRef {
    Arc::new(Journaled { inner, journal, ws })
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

    fn execute(
        &self,
        tool_call_id: String,
        args: Value,
        cancel: CancellationToken,
        on_update: ToolUpdater,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let inner = self.inner.clone();
        let journal = self.journal.clone();
        let ws = self.ws.clone();
        let tool = inner.name().to_string();
        Box::pin(async move {
            let effect = |phase, files| Effect {
                phase,
                run: String::new(),
                tool_call_id: tool_call_id.clone(),
                tool: tool.clone(),
                files,
                untracked: false,
                snapshot: None,
                interrupted: false,
            };
            if tool == "bash" {
                let before = before_images(&journal).await;
                let manifest = before.as_ref().and_then(|b| b.manifest.clone());
                journal.append(Effect {
                    untracked: before.is_none(),
                    snapshot: manifest,
                    ..effect(Phase::Intended, Vec::new())
                });
                let result = inner
                    .execute(tool_call_id.clone(), args, cancel, on_update)
                    .await;
                let files = bash_effects(&journal, before).await;
                journal.append(Effect {
                    untracked: files.is_none(),
                    ..effect(Phase::Done, files.unwrap_or_default())
                });
                return result;
            }
            let path = args
                .get("path")
                .and_then(Value::as_str)
                .and_then(|p| ws.resolve(p).ok());
            let Some(path) = path else {
                // Refused before it touches anything (a bad path): nothing to journal.
                return inner.execute(tool_call_id, args, cancel, on_update).await;
            };
            let keep = journal.first_change_in_run(&path);
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
            let result = inner
                .execute(tool_call_id.clone(), args, cancel, on_update)
                .await;
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
            journal.append(effect(Phase::Done, files));
            result
        })
    }
}

/// `path`'s content as the user sees it, stored as an image: its name; `None` when there is
/// no such file (or it could not be stored, logged). Storing runs off the async thread.
async fn image(
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
enum Which {
    Before,
    After,
}

/// The image name of `path`'s content as the user sees it, without storing it (`None`: no
/// such file). A content whose hash is not known yet (an open buffer, captured as it is) is
/// hashed off the call's path: the entry then says [`super::PENDING`], and a `hashed` entry
/// fills it in, so a 10 MB buffer costs the edit nothing.
async fn hashed(
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

/// A command's start: its mark in the workspace's live snapshot, what its before-images left
/// out, and the name of its [`super::manifest`].
struct Started {
    mark: Mark,
    images: Before,
    manifest: Option<String>,
}

/// The workspace brought up to date, every file given a before-image within the bounds
/// ([`super::images`]), and the manifest stored; `None` when the workspace is too large to
/// snapshot.
async fn before_images(journal: &Arc<Journal>) -> Option<Started> {
    let journal = journal.clone();
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let mut live = journal.seen.live.lock().unwrap_or_else(|e| e.into_inner());
        let waited = started.elapsed();
        let updated = live.update();
        let brought = started.elapsed();
        let since = journal.since_last_command(&mut live);
        let files = live.files()?;
        let images = journal.before_images(files, since.maybe_stale());
        let imaged = started.elapsed();
        let manifest = journal.store_manifest(&mut live, &images, since);
        let mark = live.mark();
        tracing::debug!(
            ?waited, ?updated, ?brought, ?imaged, total = ?started.elapsed(),
            stored = images.stored,
            "the effect journal before a command"
        );
        Some(Started {
            mark,
            images,
            manifest,
        })
    })
    .await
    .ok()
    .flatten()
}

/// What the command changed since it started; `None` when that is unknown (the workspace
/// was, or became, too large to snapshot).
async fn bash_effects(journal: &Arc<Journal>, started: Option<Started>) -> Option<Vec<FileEffect>> {
    let started = started?;
    let journal = journal.clone();
    let work = move || {
        let begun = std::time::Instant::now();
        let changes = {
            let mut live = journal.seen.live.lock().unwrap_or_else(|e| e.into_inner());
            live.update();
            let tracked = live.files().is_some();
            let changes = live.finish(started.mark)?;
            tracked.then_some(changes)?
        };
        let brought = begun.elapsed();
        let files = journal.bash_effects(&started.images, &changes);
        tracing::debug!(
            ?brought, total = ?begun.elapsed(), changed = files.len(),
            "the effect journal after a command"
        );
        Some(files)
    };
    tokio::task::spawn_blocking(work).await.ok().flatten()
}
