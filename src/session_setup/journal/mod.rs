//! The effect journal: what the agent's tools did to files, recorded in the session file so a
//! run can be reviewed and reverted, and a crash leaves no doubt about what ran.
//!
//! Before `edit`, `write` or `bash` runs, the session file gets an `intended` entry (with each
//! known file's before-image hash); after it, a `done` entry (each changed file's before and
//! after hash). Images are stored once per content under the session's directory
//! ([`blobs`]). `bash`'s files are found by comparing workspace snapshots ([`snapshot`]): a
//! file it created reverts to absent; one it changed or deleted reverts to its content before
//! the command, which was stored before the command ran ([`images`]) unless the file was too
//! large or the command's budget was spent (it is then reported as not revertible, with why).
//!
//! Entries are pi `custom` entries (`customType` [`EFFECT`]), which pi keeps and ignores, so
//! the file stays a pi session. [`review`] reads them back (`agent/runChanges`,
//! `agent/revert`); [`recover`] tells a resumed session what its interrupted calls did.

pub mod blobs;
pub mod git;
pub mod images;
pub mod recover;
pub mod review;
pub mod snapshot;
mod tool;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::agent::message::AgentMessage;
use crate::agent::tool::ToolRef;
use crate::session::{EntryKind, SessionEntry, SessionFile};
use crate::tools::Workspace;

use super::SharedRecord;
use blobs::BlobStore;
use snapshot::Meta;

/// The `customType` of journal entries.
pub const EFFECT: &str = "agent-lsp.effect";

/// The tools whose effects on files are journaled.
pub const JOURNALED: [&str; 3] = ["edit", "write", "bash"];

/// The tool name of the entry a revert records.
pub const REVERT_TOOL: &str = "agent-lsp.revert";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    Intended,
    Done,
}

/// One journal entry's data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    pub phase: Phase,
    /// The run the call belongs to (the daemon's `runId`; elsewhere the id of the run's user
    /// message entry).
    pub run: String,
    pub tool_call_id: String,
    pub tool: String,
    /// `intended`: the files the call is about to change (none known for `bash`); `done`: the
    /// files it changed.
    #[serde(default)]
    pub files: Vec<FileEffect>,
    /// `bash` in a workspace too large to snapshot: its file effects are unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untracked: bool,
}

/// One file in an [`Effect`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEffect {
    /// Absolute.
    pub path: String,
    /// The content hash before (`None`: the file did not exist).
    pub before: Option<String>,
    /// False when the content before is not known (a file `bash` changed that the journal had
    /// no image of): `before` is then `None` and means nothing.
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub before_known: bool,
    /// Why the content before is not known (`before_known` false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<images::Unknown>,
    /// `done` only: the content hash after (`None`: the file is gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

fn yes() -> bool {
    true
}

impl Effect {
    /// The journal entry in `entry`, if it is one.
    pub fn of(entry: &SessionEntry) -> Option<Effect> {
        match &entry.kind {
            EntryKind::Custom {
                custom_type,
                data: Some(data),
            } if custom_type == EFFECT => serde_json::from_value(data.clone()).ok(),
            _ => None,
        }
    }

    fn into_entry(self) -> EntryKind {
        EntryKind::Custom {
            custom_type: EFFECT.into(),
            data: serde_json::to_value(self).ok(),
        }
    }
}

/// A file content the journal has an image of, with the metadata it had then.
#[derive(Clone, Debug)]
struct Known {
    meta: Meta,
    hash: String,
}

/// A session's journal: where entries and images go, and the current run.
pub struct Journal {
    record: SharedRecord,
    /// `None` for a session kept in memory: nothing is journaled.
    blobs: Option<BlobStore>,
    root: PathBuf,
    run: Mutex<Option<String>>,
    known: Mutex<HashMap<PathBuf, Known>>,
    /// The files whose before-image each run stored (only its first is needed: a run is
    /// reverted to, and reviewed from, the content before its first change of a file).
    imaged: Mutex<HashSet<(String, PathBuf)>>,
}

impl Journal {
    pub fn new(record: SharedRecord, root: &Path) -> Journal {
        let blobs = record.lock().ok().and_then(|r| store_of(&r));
        Journal {
            record,
            blobs,
            root: root.to_path_buf(),
            run: Mutex::new(None),
            known: Mutex::default(),
            imaged: Mutex::default(),
        }
    }

    /// The run whose calls are journaled from now on (the daemon's `runId`); `None`: each
    /// call's run is its run's user message.
    pub fn set_run(&self, run: Option<String>) {
        if let Ok(mut current) = self.run.lock() {
            *current = run;
        }
    }

    /// Wraps the journaled tools among `tools`.
    pub fn wrap(
        self: &std::sync::Arc<Self>,
        tools: Vec<ToolRef>,
        ws: &std::sync::Arc<dyn Workspace>,
    ) -> Vec<ToolRef> {
        if self.blobs.is_none() {
            return tools;
        }
        tools
            .into_iter()
            .map(|t| match t.name() {
                name if JOURNALED.contains(&name) => tool::journaled(t, self.clone(), ws.clone()),
                _ => t,
            })
            .collect()
    }

    fn current_run(&self, record: &SessionFile) -> String {
        let set = self.run.lock().ok().and_then(|r| r.clone());
        set.unwrap_or_else(|| last_user_message(record).unwrap_or_default())
    }

    /// Appends an entry (the run filled in); a failure is logged: the journal must never stop
    /// the tool it describes.
    fn append(&self, mut effect: Effect) {
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        effect.run = self.current_run(&record);
        if let Err(e) = record.append(effect.into_entry()) {
            tracing::warn!(%e, "cannot record the effect journal");
        }
    }

    /// Whether `path` is changed for the first time in the current run (then its before-image
    /// must be stored; later changes in the run need only hashes).
    fn first_change_in_run(&self, path: &Path) -> bool {
        let run = match self.record.lock() {
            Ok(record) => self.current_run(&record),
            Err(_) => return true,
        };
        match self.imaged.lock() {
            Ok(mut imaged) => imaged.insert((run, path.to_path_buf())),
            Err(_) => true,
        }
    }

    /// Stores an image; `None` (logged) when it cannot.
    fn store(&self, bytes: &[u8]) -> Option<String> {
        let blobs = self.blobs.as_ref()?;
        match blobs.store(bytes) {
            Ok(hash) => Some(hash),
            Err(e) => {
                tracing::warn!(%e, "cannot store a before-image for the effect journal");
                None
            }
        }
    }

    /// Remembers that `path` on disk holds `hash` now (for `bash`'s before-images).
    fn remember(&self, path: &Path, hash: Option<&str>) {
        let Ok(mut known) = self.known.lock() else {
            return;
        };
        match (hash, std::fs::metadata(path)) {
            (Some(hash), Ok(meta)) => {
                let entry = Known {
                    meta: Meta::of(&meta),
                    hash: hash.to_string(),
                };
                known.insert(path.to_path_buf(), entry);
            }
            _ => {
                known.remove(path);
            }
        }
    }

    /// The hash of `path` when it had `meta`, if the journal knows it.
    fn known_hash(&self, path: &Path, meta: &Meta) -> Option<String> {
        let known = self.known.lock().ok()?;
        known
            .get(path)
            .filter(|k| k.meta == *meta)
            .map(|k| k.hash.clone())
    }
}

/// The blob store of a session stored on disk.
pub fn store_of(record: &SessionFile) -> Option<BlobStore> {
    let path = record.path()?;
    Some(BlobStore::for_session(
        path,
        record.header().parent_session.as_deref(),
    ))
}

/// The id of the last user message on the branch.
fn last_user_message(record: &SessionFile) -> Option<String> {
    record
        .branch_path()
        .iter()
        .rev()
        .find_map(|e| match e.kind.message() {
            Some(AgentMessage::User(_)) => Some(e.id.clone()),
            _ => None,
        })
}

/// The journal entries of the branch, in order, with the position of each on the branch.
pub fn branch_effects(record: &SessionFile) -> Vec<(usize, Effect)> {
    record
        .branch_path()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Effect::of(e).map(|effect| (i, effect)))
        .collect()
}
