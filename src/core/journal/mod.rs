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
mod command;
pub mod gc;
pub mod git;
pub mod image;
pub mod images;
mod jobs;
pub mod live;
pub mod manifest;
mod recorder;
pub mod recover;
pub mod review;
pub mod snapshot;
mod tool;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::agent::message::AgentMessage;
use crate::agent::tool::ToolRef;
use crate::store::{EntryKind, SessionEntry, SessionFile};
use crate::tools::Workspace;

use super::SharedRecord;
use blobs::BlobStore;
use snapshot::Meta;

/// The `customType` of journal entries.
pub const EFFECT: &str = "agent-lsp.effect";

/// The niceness of the thread that takes the session's first look at the workspace (and of
/// the threads and processes it starts).
const WARM_UP_NICENESS: i32 = 10;

/// The tools whose effects on files are journaled.
pub const JOURNALED: [&str; 3] = ["edit", "write", "bash"];

/// The tools whose calls are a checkpoint of a background job's changes (not journaled as
/// changing anything themselves: what they record is the job's).
pub const JOB_CHECKPOINTS: [&str; 2] = [crate::tools::BASH_OUTPUT, crate::tools::BASH_KILL];

/// The tool name of the entry a revert records.
pub const REVERT_TOOL: &str = "agent-lsp.revert";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    Intended,
    Done,
    /// A hash an earlier entry of the call left [`PENDING`] (an open buffer's content, hashed
    /// off the edit's path): `files` carries the values, by path.
    Hashed,
}

/// What an `intended` or `done` entry holds for a hash computed after it ([`Phase::Hashed`]
/// fills it in; one never filled means "not known").
pub const PENDING: &str = "pending";

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
    /// `bash`'s `intended`: the workspace before the command ([`manifest`], an image name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// A `done` written when the session was resumed after the process died during the call:
    /// `files` are those that differ from its `snapshot`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// A background job's entry: `bash`'s `done` when it started the job, and each checkpoint
    /// of the job's changes after it ([`jobs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The `task` call whose subagent made the call: its changes are also a unit of their own
    /// ([`review::Selection::Task`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
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
    /// The entry of `phase` of the call `tool_call_id` about `files`, nothing more known yet
    /// (the journal sets its run as it appends it).
    pub fn new(
        phase: Phase,
        tool_call_id: impl Into<String>,
        tool: impl Into<String>,
        files: Vec<FileEffect>,
    ) -> Effect {
        Effect {
            phase,
            run: String::new(),
            tool_call_id: tool_call_id.into(),
            tool: tool.into(),
            files,
            untracked: false,
            snapshot: None,
            interrupted: false,
            job: None,
            task: None,
        }
    }

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

/// The images the journal has of the workspace's files, and which files' image changed since
/// the last manifest (its next link names only those, [`manifest`]).
#[derive(Debug, Default)]
struct KnownImages {
    images: snapshot::PathMap<Known>,
    changed: snapshot::PathSet,
}

impl KnownImages {
    fn get(&self, path: &Path) -> Option<&Known> {
        self.images.get(path)
    }

    fn insert(&mut self, path: PathBuf, known: Known) {
        self.changed.insert(path.clone());
        self.images.insert(path, known);
    }

    fn remove(&mut self, path: &Path) {
        if self.images.remove(path).is_some() {
            self.changed.insert(path.to_path_buf());
        }
    }

    fn extend(&mut self, images: impl IntoIterator<Item = (PathBuf, Known)>) {
        for (path, known) in images {
            self.insert(path, known);
        }
    }
}

/// A session's journal: where entries and images go, and the current run.
pub struct Journal {
    record: SharedRecord,
    /// `None` for a session kept in memory: nothing is journaled.
    blobs: Option<BlobStore>,
    root: PathBuf,
    run: Mutex<Option<String>>,
    /// What the journal knows of the workspace, shared with its warm-up thread.
    seen: Arc<Seen>,
    /// The files whose before-image each run stored (only its first is needed: a run is
    /// reverted to, and reviewed from, the content before its first change of a file).
    imaged: Mutex<HashSet<(String, PathBuf)>>,
    /// The `task` call of each subagent's call (by the subagent's call id).
    tasks: Mutex<HashMap<String, String>>,
    /// Hashes being computed off the calls' path ([`Phase::Hashed`]) and jobs' last entries
    /// being written ([`jobs`]), and their end.
    hashing: tokio::sync::watch::Sender<usize>,
    /// The collection of the folder's image store started with the session ([`gc::auto`]).
    collection: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The last [`manifest`] stored: the next is a link from it.
    last_manifest: Mutex<Option<manifest::Link>>,
    /// `HEAD`'s commit and its files, the base of a git workspace's manifests.
    head: Mutex<Option<(String, Arc<manifest::Files>)>>,
    /// The session's id: the name the git blobs its runs rely on are kept under.
    name: String,
}

/// What the journal knows of its workspace: its files, their images, and git's word on them. Apart
/// from the [`Journal`], so that work in the background never keeps the session file open.
struct Seen {
    root: PathBuf,
    /// The workspace's files, kept current between commands ([`live`]).
    live: Arc<Mutex<live::Live>>,
    known: Mutex<KnownImages>,
    /// Files git did not vouch for when asked, with the metadata they had then: they are copied
    /// without asking again until they change.
    refused: Mutex<HashMap<PathBuf, Meta>>,
    /// The workspace's git repository, looked for at the first need (`None` inside: not a git
    /// workspace, or git cannot be used there; its files are then all copied).
    git: OnceLock<Option<git::GitRepo>>,
}

impl Seen {
    /// The workspace's git repository, if it is in one git can be used in. Blocking (the first
    /// call runs `git rev-parse`).
    fn git(&self) -> Option<&git::GitRepo> {
        self.git
            .get_or_init(|| git::GitRepo::discover(&self.root))
            .as_ref()
    }

    /// What git says of the workspace's files ([`git::State::blob_of`]: the blob of each file
    /// git vouches for), with the files' sizes from `size_of` and how many changed after a time
    /// from `changed_after`; `None` outside git or when git could not say. Blocking.
    fn vouched(
        &self,
        size_of: &(dyn Fn(&Path) -> Option<u64> + Sync),
        changed_after: &git::ChangedAfter<'_>,
    ) -> Option<git::State> {
        let repo = self.git()?;
        match repo.state_with_sizes(size_of, changed_after) {
            Ok(state) => Some(state),
            Err(e) => {
                tracing::debug!(%e, "git cannot vouch for the workspace's files");
                None
            }
        }
    }
}

impl Journal {
    pub fn new(record: SharedRecord, root: &Path) -> Journal {
        let blobs = record.lock().ok().and_then(|r| store_of(&r));
        let name = record
            .lock()
            .map(|r| r.id().to_string())
            .unwrap_or_default();
        Journal {
            record,
            blobs,
            root: root.to_path_buf(),
            run: Mutex::new(None),
            seen: Arc::new(Seen {
                root: root.to_path_buf(),
                live: live::Live::shared(root),
                known: Mutex::default(),
                refused: Mutex::default(),
                git: OnceLock::new(),
            }),
            imaged: Mutex::default(),
            tasks: Mutex::default(),
            hashing: tokio::sync::watch::Sender::new(0),
            collection: Mutex::default(),
            last_manifest: Mutex::default(),
            head: Mutex::default(),
            name,
        }
    }

    /// Takes the workspace's first snapshot and asks git which files it holds, on a thread of
    /// its own, so that the session's first command finds both done: a model's first answer
    /// takes longer than either. Copies nothing.
    fn warm_up(&self) {
        let seen = self.seen.clone();
        let spawned = std::thread::Builder::new()
            .name("journal-warm-up".into())
            .spawn(move || {
                // In the background of the session's first turn: the tools the model calls
                // meanwhile (a `grep` over the same tree) go first. The walker's threads and
                // git's processes inherit the priority.
                let tid = rustix::thread::gettid();
                if let Err(e) = rustix::process::setpriority_process(Some(tid), WARM_UP_NICENESS) {
                    tracing::debug!(%e, "the warm-up runs at the session's priority");
                }
                let mut live = seen.live.lock().unwrap_or_else(|e| e.into_inner());
                let started = std::time::Instant::now();
                live.update();
                let walked = started.elapsed();
                if let Some(files) = live.files() {
                    seen.vouch_all(files);
                }
                tracing::debug!(
                    ?walked,
                    total = ?started.elapsed(),
                    watching = live.watching(),
                    "the effect journal's first look at the workspace"
                );
            });
        if let Err(e) = spawned {
            tracing::debug!(%e, "no warm-up thread: the first command takes the snapshot");
        }
    }

    /// `HEAD`'s commit and its files as images (`git:<oid>`), read again only when `HEAD`
    /// moved; `None` outside git or before the first commit. Blocking.
    fn head_files(&self) -> Option<(String, Arc<manifest::Files>)> {
        let repo = self.seen.git()?;
        let commit = repo.head().ok()??;
        let mut head = self.head.lock().ok()?;
        if let Some((cached, files)) = head.as_ref()
            && *cached == commit
        {
            return Some((commit, files.clone()));
        }
        let files: manifest::Files = match repo.tree_files(&commit) {
            Ok(files) => files
                .into_iter()
                .map(|(path, oid)| (path, manifest::Slot::Image(format!("git:{oid}"))))
                .collect(),
            Err(e) => {
                tracing::debug!(%e, "no manifest base from HEAD");
                return None;
            }
        };
        let files = Arc::new(files);
        *head = Some((commit.clone(), files.clone()));
        Some((commit, files))
    }

    /// Keeps the git blobs among `names` reachable for as long as the session is kept; the
    /// ones the repository no longer has. Blocking.
    fn keep_git(&self, names: &[&str]) -> Vec<String> {
        let oids: Vec<String> = (names.iter())
            .filter_map(|n| n.strip_prefix("git:"))
            .map(String::from)
            .collect();
        let (Some(repo), false) = (self.seen.git(), oids.is_empty()) else {
            return Vec::new();
        };
        match repo.keep(&self.name, &oids) {
            Ok(kept) => kept.missing.iter().map(|o| format!("git:{o}")).collect(),
            Err(e) => {
                // Not kept: a `git gc` may drop them once nothing else reaches them, and the
                // revert then says the image is missing. Everything else still holds.
                tracing::warn!(%e, "cannot keep the journal's git blobs");
                Vec::new()
            }
        }
    }

    /// Collects the session folder's image store on a thread if it holds more than `limit`
    /// bytes; what to tell the user, if so.
    pub fn collect_if_large(&self, limit: u64) -> Option<String> {
        let folder = self.blobs.as_ref()?.dir().parent()?.to_path_buf();
        let (words, thread) = gc::auto(&folder, limit)?;
        if let Ok(mut collection) = self.collection.lock() {
            *collection = Some(thread);
        }
        Some(words)
    }

    /// Waits for the collection [`Journal::collect_if_large`] started (a process about to
    /// exit lets it finish).
    pub async fn collected(&self) {
        let thread = self.collection.lock().ok().and_then(|mut c| c.take());
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }

    /// Waits until every hash being computed, and every background job's last entry, is in the
    /// record (a review reads them; a closing session writes them before it goes).
    pub async fn settled(&self) {
        let mut rx = self.hashing.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Counts a hash that is being computed until `done` is called for it.
    fn hashing_started(&self) {
        self.hashing.send_modify(|n| *n += 1);
    }

    fn hashing_done(&self) {
        self.hashing.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// The run whose calls are journaled from now on (the daemon's `runId`); `None`: each
    /// call's run is its run's user message.
    pub fn set_run(&self, run: Option<String>) {
        if let Ok(mut current) = self.run.lock() {
            *current = run;
        }
    }

    /// Wraps the journaled tools among `tools`; the background jobs of `jobs` are journaled at
    /// their checkpoints and end.
    pub fn wrap(
        self: &std::sync::Arc<Self>,
        tools: Vec<ToolRef>,
        ws: &std::sync::Arc<dyn Workspace>,
        jobs: &crate::tools::Jobs,
    ) -> Vec<ToolRef> {
        if self.blobs.is_none() {
            return tools;
        }
        if tools.iter().any(|t| t.name() == "bash") {
            self.warm_up();
        }
        tool::journaled_tools(self, tools, ws, jobs)
    }

    /// The journal as the recorder of the tools that change files themselves (`lsp_rename`);
    /// `None` when nothing is journaled (no session directory).
    pub fn recorder(
        self: &std::sync::Arc<Self>,
        ws: &std::sync::Arc<dyn Workspace>,
    ) -> Option<std::sync::Arc<dyn crate::tools::recorder::ChangeRecorder>> {
        self.blobs.as_ref()?;
        Some(std::sync::Arc::new(recorder::JournalRecorder {
            journal: self.clone(),
            ws: ws.clone(),
        }))
    }

    fn current_run(&self, record: &SessionFile) -> String {
        let set = self.run.lock().ok().and_then(|r| r.clone());
        set.unwrap_or_else(|| last_user_message(record).unwrap_or_default())
    }

    /// Notes that the call `tool_call_id` is a subagent's, run by the `task` call `task`.
    pub fn assign(&self, tool_call_id: &str, task: &str) {
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.insert(tool_call_id.to_owned(), task.to_owned());
        }
    }

    /// The `task` call whose subagent made `tool_call_id`, if one did.
    fn task_of(&self, tool_call_id: &str) -> Option<String> {
        self.tasks.lock().ok()?.get(tool_call_id).cloned()
    }

    /// Appends an entry (the run and the `task` filled in); a failure is logged: the journal
    /// must never stop the tool it describes.
    fn append(&self, mut effect: Effect) {
        effect.task = effect.task.or_else(|| self.task_of(&effect.tool_call_id));
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        effect.run = self.current_run(&record);
        if let Err(e) = record.append(effect.into_entry()) {
            tracing::warn!(%e, "cannot record the effect journal");
        }
    }

    /// Whether `path` is changed for the first time in the current run (then its before-image
    /// must be stored; later changes in the run need only hashes) — or, for a subagent's call,
    /// in its `task` call's changes, which are reverted as a unit too.
    fn first_change_in_run(&self, path: &Path, tool_call_id: &str) -> bool {
        let run = match self.record.lock() {
            Ok(record) => self.current_run(&record),
            Err(_) => return true,
        };
        let run = match self.task_of(tool_call_id) {
            Some(task) => format!("{run}\ntask {task}"),
            None => run,
        };
        match self.imaged.lock() {
            Ok(mut imaged) => imaged.insert((run, path.to_path_buf())),
            Err(_) => true,
        }
    }

    /// Appends the hashes computed for `tool_call_id` after its entries were written.
    fn append_hashed(&self, tool_call_id: &str, tool: &str, files: Vec<FileEffect>) {
        self.append(Effect::new(Phase::Hashed, tool_call_id, tool, files));
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
        let Ok(mut known) = self.seen.known.lock() else {
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
        let known = self.seen.known.lock().ok()?;
        known
            .get(path)
            .filter(|k| k.meta == *meta)
            .map(|k| k.hash.clone())
    }
}

/// The blob store of a session stored on disk.
pub fn store_of(record: &SessionFile) -> Option<BlobStore> {
    let path = record.path()?;
    let store = BlobStore::for_session(path, record.header().parent_session.as_deref());
    Some(store.with_workspace(Path::new(record.cwd())))
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

/// The journal entries of the branch, in order, with the position of each on the branch; the
/// hashes [`Phase::Hashed`] entries carry are filled into the entries they complete (a hash
/// never filled stays `None` with `before_known` false, or an unknown `after`).
pub fn branch_effects(record: &SessionFile) -> Vec<(usize, Effect)> {
    let all: Vec<(usize, Effect)> = record
        .branch_path()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Effect::of(e).map(|effect| (i, effect)))
        .collect();
    let mut fills: HashMap<(String, String), FileEffect> = HashMap::new();
    for (_, effect) in all.iter().filter(|(_, e)| e.phase == Phase::Hashed) {
        for file in &effect.files {
            fills.insert(
                (effect.tool_call_id.clone(), file.path.clone()),
                file.clone(),
            );
        }
    }
    all.into_iter()
        .filter(|(_, e)| e.phase != Phase::Hashed)
        .map(|(i, mut effect)| {
            for file in &mut effect.files {
                let fill = fills.get(&(effect.tool_call_id.clone(), file.path.clone()));
                fill_pending(file, fill);
            }
            (i, effect)
        })
        .collect()
}

/// Puts the hashes of `fill` where `file` has [`PENDING`].
fn fill_pending(file: &mut FileEffect, fill: Option<&FileEffect>) {
    if file.before.as_deref() == Some(PENDING) {
        file.before = fill.and_then(|f| f.before.clone());
        file.before_known = file.before.is_some();
        if !file.before_known {
            file.unknown = Some(images::Unknown::Unhashed);
        }
    }
    // An `after` never filled stays PENDING, which no content matches: in doubt, the file
    // counts as changed since the agent left it.
    if file.after.as_deref() == Some(PENDING)
        && let Some(after) = fill.and_then(|f| f.after.clone())
    {
        file.after = Some(after);
    }
}
