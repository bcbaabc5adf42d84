//! A run's changes read back from the journal (`agent/runChanges`) and taken back
//! (`agent/revert`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::store::{EntryKind, SessionFile};
use crate::tools::{Workspace, WorkspaceError, WriteRequest};

use super::blobs::{BlobStore, hash};
use super::image;
use super::images::Unknown;
use super::{Effect, FileEffect, Phase, REVERT_TOOL, branch_effects, store_of};

/// What a revert asks (`agent/revert`, ACP's `_agent-lsp/revert`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertRequest {
    pub session_id: String,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub message_id: Option<String>,
    /// Only the changes of the subagent this `task` call ran.
    #[serde(default)]
    pub task_call_id: Option<String>,
    /// Only these files (absolute, or relative to the session's cwd).
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// Overwrite files changed since the agent changed them.
    #[serde(default)]
    pub force: bool,
    /// With `messageId`: also fork the conversation before that message.
    #[serde(default)]
    pub fork: bool,
}

impl RevertRequest {
    /// The changes it reverts; `Err` when it names both a run and a message.
    pub fn selection(&self) -> Result<Selection, &'static str> {
        match (&self.run_id, &self.message_id, &self.task_call_id) {
            (_, Some(_), Some(_)) => Err("give messageId or taskCallId, not both"),
            (Some(_), Some(_), _) => Err("give runId or messageId, not both"),
            (_, None, Some(task)) => Ok(Selection::Task(task.clone())),
            (_, Some(message), None) => Ok(Selection::Since(message.clone())),
            (run, None, None) => Ok(Selection::Run(run.clone())),
        }
    }
}

/// Which changes: one run's, or everything since a user message (a checkpoint).
#[derive(Clone, Debug)]
pub enum Selection {
    /// `None`: the last run that changed files.
    Run(Option<String>),
    Since(String),
    /// The changes of the subagent a `task` call ran (by the call's id).
    Task(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

/// One changed file of `agent/runChanges`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    pub path: String,
    pub change: ChangeKind,
    /// Unified diff, before-image → current content (empty when the before-image is unknown).
    pub diff: String,
    /// The content now differs from what the agent left (the user, or something else, changed
    /// it since).
    pub user_changed: bool,
    /// The before-image is known, so the file can be reverted.
    pub revertible: bool,
    /// Why it cannot be reverted (`revertible` false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `agent/runChanges`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunChanges {
    /// The run reviewed (`None`: no run changed files).
    pub run_id: Option<String>,
    pub files: Vec<FileChange>,
}

/// A file `agent/revert` did not restore, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotReverted {
    pub path: String,
    pub reason: String,
}

/// `agent/revert`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reverted {
    pub reverted: Vec<String>,
    /// Changed by the user after the agent: left alone (unless `force`).
    pub conflicts: Vec<NotReverted>,
    /// Not revertible (the before-image is unknown) or failed.
    pub skipped: Vec<NotReverted>,
}

/// Why changes cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("this session is not stored on disk: it has no journal")]
    NotStored,
    #[error("no run {0:?} in this session's journal")]
    UnknownRun(String),
    #[error("no user message {0:?} on this session's branch")]
    UnknownMessage(String),
    #[error("no changes of the task call {0:?} in this session's journal")]
    UnknownTask(String),
}

/// What the journal says about one file over a selection.
#[derive(Clone, Debug)]
struct Planned {
    path: PathBuf,
    before: Option<String>,
    before_known: bool,
    unknown: Option<Unknown>,
    /// What the agent last left there (any later run or revert included).
    expected: Option<String>,
}

impl Planned {
    /// Why its content before is unknown (a journal from before the reasons were recorded has
    /// none).
    fn unknown_reason(&self) -> String {
        match self.unknown {
            Some(unknown) => unknown.reason(),
            None => "its content before the run is unknown (changed by a command)".into(),
        }
    }
}

/// The selected files, read from the record (no I/O on the files themselves).
struct Plan {
    run_id: Option<String>,
    files: Vec<Planned>,
    blobs: BlobStore,
}

fn plan(record: &SessionFile, selection: &Selection) -> Result<Plan, ReviewError> {
    let blobs = store_of(record).ok_or(ReviewError::NotStored)?;
    let effects: Vec<(usize, Effect)> = branch_effects(record)
        .into_iter()
        .filter(|(_, e)| e.phase == Phase::Done)
        .collect();
    let (run_id, selected): (Option<String>, Vec<&Effect>) = match selection {
        Selection::Run(run) => {
            let run = match run {
                Some(run) => {
                    if !effects.iter().any(|(_, e)| &e.run == run) {
                        return Err(ReviewError::UnknownRun(run.clone()));
                    }
                    Some(run.clone())
                }
                None => (effects.iter().rev())
                    .find(|(_, e)| e.tool != REVERT_TOOL && !e.files.is_empty())
                    .map(|(_, e)| e.run.clone()),
            };
            let selected = effects
                .iter()
                .filter(|(_, e)| Some(&e.run) == run.as_ref() && e.tool != REVERT_TOOL)
                .map(|(_, e)| e)
                .collect();
            (run, selected)
        }
        Selection::Task(task) => {
            let selected: Vec<&Effect> = (effects.iter())
                .filter(|(_, e)| e.task.as_ref() == Some(task) && e.tool != REVERT_TOOL)
                .map(|(_, e)| e)
                .collect();
            let run = selected.first().map(|e| e.run.clone());
            if run.is_none() {
                return Err(ReviewError::UnknownTask(task.clone()));
            }
            (run, selected)
        }
        Selection::Since(message) => {
            let at = record
                .branch_path()
                .iter()
                .position(|e| &e.id == message && matches!(e.kind, EntryKind::Message { .. }))
                .ok_or_else(|| ReviewError::UnknownMessage(message.clone()))?;
            let selected = effects
                .iter()
                .filter(|(i, e)| *i > at && e.tool != REVERT_TOOL)
                .map(|(_, e)| e)
                .collect();
            (None, selected)
        }
    };
    let mut order: Vec<PathBuf> = Vec::new();
    let mut first: HashMap<PathBuf, &FileEffect> = HashMap::new();
    for file in selected.iter().flat_map(|e| &e.files) {
        let path = PathBuf::from(&file.path);
        if let std::collections::hash_map::Entry::Vacant(slot) = first.entry(path.clone()) {
            order.push(path);
            slot.insert(file);
        }
    }
    // What the agent left last, from the whole branch (later runs and reverts too).
    let mut expected: HashMap<PathBuf, Option<String>> = HashMap::new();
    for file in effects.iter().flat_map(|(_, e)| &e.files) {
        expected.insert(PathBuf::from(&file.path), file.after.clone());
    }
    let files = order
        .into_iter()
        .filter_map(|path| {
            let f = first.get(&path)?;
            Some(Planned {
                before: f.before.clone(),
                before_known: f.before_known,
                unknown: f.unknown,
                expected: expected.get(&path).cloned().flatten(),
                path,
            })
        })
        .collect();
    Ok(Plan {
        run_id,
        files,
        blobs,
    })
}

/// The content of `path` now, as the user sees it (`None`: no such file).
async fn current(ws: &Arc<dyn Workspace>, path: &Path) -> Result<Option<Vec<u8>>, WorkspaceError> {
    match ws.read(path.to_path_buf()).await {
        Ok(snapshot) => Ok(Some(snapshot.bytes)),
        Err(WorkspaceError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn text(bytes: &[u8]) -> String {
    crate::tools::normalize_to_lf(crate::tools::strip_bom(&String::from_utf8_lossy(bytes)).1)
}

/// The changes of the selection, each diffed (with `diffs`) from its before-image to its
/// current content.
pub async fn run_changes(
    record: &crate::core::SharedRecord,
    ws: &Arc<dyn Workspace>,
    selection: &Selection,
    diffs: bool,
) -> Result<RunChanges, ReviewError> {
    let plan = {
        let record = record.lock().unwrap_or_else(|e| e.into_inner());
        plan(&record, selection)?
    };
    let mut files = Vec::new();
    for file in &plan.files {
        let now = current(ws, &file.path).await.ok().flatten();
        let change = match (&file.before, &now, file.before_known) {
            (None, _, true) => ChangeKind::Created,
            (_, None, _) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        let shown = file.path.display().to_string();
        let before = file.before.as_deref().and_then(|h| plan.blobs.load(h));
        let image_missing = file.before.is_some() && before.is_none();
        let diff = match (file.before_known, &file.before, before) {
            _ if !diffs => String::new(),
            (false, _, _) | (true, Some(_), None) => String::new(),
            (true, _, before) => {
                let old = before.as_deref().map(text).unwrap_or_default();
                let new = now.as_deref().map(text).unwrap_or_default();
                crate::tools::diff::diff(&old, &new, &shown).patch
            }
        };
        let reason = match (file.before_known, image_missing) {
            (false, _) => Some(file.unknown_reason()),
            (true, true) => Some("its before-image is missing".to_string()),
            (true, false) => None,
        };
        files.push(FileChange {
            path: shown,
            change,
            diff,
            user_changed: !image::is(file.expected.as_deref(), now.as_deref()),
            revertible: reason.is_none(),
            reason,
        });
    }
    Ok(RunChanges {
        run_id: plan.run_id,
        files,
    })
}

/// Restores the before-images of the selection (only `paths`, when given): through the
/// workspace (open documents as editor edits the user can undo), created files deleted. A file
/// changed since the agent left it is a conflict unless `force`. The revert is journaled.
pub async fn revert(
    record: &crate::core::SharedRecord,
    ws: &Arc<dyn Workspace>,
    selection: &Selection,
    paths: Option<&[String]>,
    force: bool,
) -> Result<Reverted, ReviewError> {
    let plan = {
        let record = record.lock().unwrap_or_else(|e| e.into_inner());
        plan(&record, selection)?
    };
    let wanted = |path: &Path| match paths {
        None => true,
        Some(paths) => paths.iter().any(|p| {
            let p = Path::new(p);
            p == path || (p.is_relative() && path == ws.root().join(p))
        }),
    };
    let mut out = Reverted::default();
    let mut effects = Vec::new();
    for file in plan.files.iter().filter(|f| wanted(&f.path)) {
        let shown = file.path.display().to_string();
        let not = |reason: &str| NotReverted {
            path: shown.clone(),
            reason: reason.into(),
        };
        let now = match current(ws, &file.path).await {
            Ok(now) => now,
            Err(e) => {
                out.skipped.push(not(&e.to_string()));
                continue;
            }
        };
        if !file.before_known {
            out.skipped.push(not(&file.unknown_reason()));
            continue;
        }
        if image::is(file.before.as_deref(), now.as_deref()) {
            out.reverted.push(shown);
            continue;
        }
        if !image::is(file.expected.as_deref(), now.as_deref()) && !force {
            out.conflicts
                .push(not("changed since the agent changed it"));
            continue;
        }
        let restored = match &file.before {
            None => ws
                .remove(file.path.clone())
                .await
                .map_err(|e| e.to_string()),
            Some(h) => match plan.blobs.load(h) {
                None => Err(format!("its before-image {h} is missing")),
                Some(bytes) => {
                    let seen = now.as_deref().map(crate::tools::ContentId::of);
                    (ws.write(WriteRequest::new(file.path.clone(), bytes, seen))
                        .await)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }
            },
        };
        match restored {
            Ok(()) => {
                effects.push(FileEffect {
                    path: shown.clone(),
                    before: now.as_deref().map(hash),
                    before_known: true,
                    unknown: None,
                    after: file.before.clone(),
                });
                out.reverted.push(shown);
            }
            Err(reason) => out.skipped.push(not(&reason)),
        }
    }
    if !effects.is_empty() {
        let mut record = record.lock().unwrap_or_else(|e| e.into_inner());
        let effect = Effect {
            run: uuid::Uuid::now_v7().to_string(),
            ..Effect::new(Phase::Done, String::new(), REVERT_TOOL, effects)
        };
        if let Err(e) = record.append(effect.into_entry()) {
            tracing::warn!(%e, "cannot record the revert in the journal");
        }
    }
    Ok(out)
}
