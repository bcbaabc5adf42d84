//! The workspace's files kept current between commands: one metadata walk ([`Snapshot`]), then
//! an inotify watch on every folder it read, so that a command's before-state is the last
//! one brought up to date, and its after-state costs a `stat` of what changed instead of a
//! second walk of every file.
//!
//! The watch is a hint of *where* to look; what changed is still decided by each file's stat
//! data, as a walk decides it. Every way the hint could be incomplete falls back to a whole
//! walk, which also puts the watches right again:
//! - the kernel's event queue overflowed (`IN_Q_OVERFLOW`: 16,384 events by default, between
//!   two commands);
//! - a folder was moved (the watches below it would name the old paths), or the root itself
//!   went; the file system under a watch was unmounted;
//! - a `.gitignore` or `.ignore` changed (what the walk takes in is no longer known).
//!
//! A folder deleted drops what was under it; a folder created, and a file not seen before,
//! are looked at by a walk of just them (with the ignore rules of the folders above them, as the
//! whole walk has them). Watching is off altogether, and every update walks, when the root is
//! not on a local file system (a network file system reports no other machine's writes), when
//! the workspace has more folders than a quarter of the user's watches
//! (`fs.inotify.max_user_watches`, shared with the editor's own watching; said once in the log)
//! or more files than a snapshot takes.
//!
//! What a watch cannot see, and a walk would: a file changed through a hard link from outside
//! the workspace, and one written through a shared memory map by a process that has not closed
//! it yet (`IN_CLOSE_WRITE` reports it once it has). Both are rare in a source tree; a whole
//! walk is made again every [`WALK_AGAIN_AFTER`] updates regardless.
//!
//! Several commands may run at once: each takes a [`Mark`] when it starts, and is told the
//! files that changed since its mark when it ends (`Live::changes_since`), whoever's update
//! saw them first.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::snapshot::{Meta, OnFolder, Scope, Snapshot};

/// Below this many files a workspace is walked at every update, unwatched: such a walk takes
/// a few milliseconds, and an inotify instance costs its process a kernel grace period (~10
/// ms) when it closes, which a short `agent-lsp run` in a small project would pay at every exit
/// (BENCH.md, scenario 1).
pub const SMALL_TREE: usize = 2_000;

/// A whole walk is made after this many updates brought by the watch alone.
pub const WALK_AGAIN_AFTER: u32 = 64;

/// Past this many logged changes, marks that may lapse do (a session idle while others sharing
/// the workspace run commands keeps one open; its next command then looks at everything).
pub const LOG_LIMIT: usize = 200_000;

/// The names of the ignore files the walk reads in every folder.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// What each folder's watch reports.
fn watch_mask() -> AddWatchFlags {
    AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// A file whose metadata changed between two updates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    pub path: PathBuf,
    /// `None`: it was not there.
    pub before: Option<Meta>,
    /// `None`: it is gone.
    pub after: Option<Meta>,
}

/// How the last update was made (for the log and the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Updated {
    /// A whole walk.
    Walked,
    /// The watch's events alone.
    Watched,
    /// Too many files: no snapshot.
    Untracked,
}

/// The workspace's files, kept current.
pub struct Live {
    root: PathBuf,
    files: Option<Snapshot>,
    watch: Watch,
    /// Updates since the last whole walk.
    watched_updates: u32,
    generation: u64,
    /// Each file changed by an update while a mark was open: the update's generation, and its
    /// metadata before.
    log: Vec<(u64, PathBuf, Option<Meta>)>,
    /// Open marks: id → the generation they were taken at, and whether it may lapse.
    marks: BTreeMap<u64, (u64, bool)>,
    /// Past this many logged changes the oldest marks that may lapse do.
    log_limit: usize,
    next_mark: u64,
    /// Marks dropped unfinished, to release.
    dropped: Arc<Mutex<Vec<u64>>>,
    /// Fewer files than this are walked rather than watched ([`SMALL_TREE`]).
    watch_from: usize,
}

enum Watch {
    /// Not tried yet.
    NotYet,
    /// The workspace is small: every update walks, until a walk finds it grown.
    Unneeded,
    On(Watcher),
    /// Every update walks.
    Off,
}

struct Watcher {
    inotify: Arc<Inotify>,
    folders: HashMap<WatchDescriptor, PathBuf>,
    root: PathBuf,
    /// At most this many folders are watched (the tests' stand-in for the system's limit).
    limit: usize,
}

/// A command's start, for [`Live::finish`]; one dropped unfinished (its command cancelled)
/// is released at the next update.
pub struct Mark {
    dropped: Weak<Mutex<Vec<u64>>>,
    id: u64,
}

impl Drop for Mark {
    fn drop(&mut self) {
        // Not the `Live`'s own lock, which the dropping thread may hold.
        if let Some(dropped) = self.dropped.upgrade() {
            dropped
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(self.id);
        }
    }
}

impl Live {
    pub fn new(root: &Path) -> Live {
        Live {
            root: root.to_path_buf(),
            files: None,
            watch: Watch::NotYet,
            watched_updates: 0,
            generation: 0,
            log: Vec::new(),
            marks: BTreeMap::new(),
            log_limit: LOG_LIMIT,
            next_mark: 0,
            dropped: Arc::default(),
            watch_from: 0,
        }
    }

    /// The one `Live` of `root` in this process, shared by every session working there (one
    /// walk, one set of watches; marks keep their commands apart).
    pub fn shared(root: &Path) -> Arc<Mutex<Live>> {
        static SHARED: std::sync::OnceLock<Mutex<HashMap<PathBuf, Weak<Mutex<Live>>>>> =
            std::sync::OnceLock::new();
        let mut shared = SHARED
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        shared.retain(|_, live| live.strong_count() > 0);
        if let Some(live) = shared.get(root).and_then(Weak::upgrade) {
            return live;
        }
        let live = Arc::new(Mutex::new(Live {
            watch_from: SMALL_TREE,
            ..Live::new(root)
        }));
        shared.insert(root.to_path_buf(), Arc::downgrade(&live));
        live
    }

    /// The files as of the last update (`None`: too many to track).
    pub fn files(&self) -> Option<&Snapshot> {
        self.files.as_ref()
    }

    /// Whether a watch is on.
    pub fn watching(&self) -> bool {
        matches!(self.watch, Watch::On(_))
    }

    /// Watches at most `folders` folders, as if that were the system's limit.
    #[cfg(test)]
    fn limit_watches(&mut self, folders: usize) {
        if let Watch::NotYet = self.watch {
            self.watch = match Watcher::start(&self.root) {
                Some(watcher) => Watch::On(Watcher {
                    limit: folders,
                    ..watcher
                }),
                None => Watch::Off,
            };
        }
    }

    /// Brings the files up to date: from the watch's events when it can tell, else by a walk.
    /// Blocking.
    pub fn update(&mut self) -> Updated {
        let dropped = std::mem::take(&mut *self.dropped.lock().unwrap_or_else(|e| e.into_inner()));
        for id in dropped {
            self.release(id);
        }
        self.generation += 1;
        let events = match (&mut self.watch, self.files.is_some()) {
            (Watch::On(watcher), true) if self.watched_updates < WALK_AGAIN_AFTER => {
                watcher.drain()
            }
            _ => None,
        };
        let Some(events) = events else {
            return self.walk();
        };
        self.watched_updates += 1;
        self.apply(events);
        Updated::Watched
    }

    /// Takes a mark at the current state (after an [`Live::update`]), for a command: it never
    /// lapses.
    pub fn mark(&mut self) -> Mark {
        self.new_mark(false)
    }

    /// A mark that lapses if too much changes before it is finished ([`LOG_LIMIT`]).
    pub fn lapsing_mark(&mut self) -> Mark {
        self.new_mark(true)
    }

    fn new_mark(&mut self, lapses: bool) -> Mark {
        let id = self.next_mark;
        self.next_mark += 1;
        self.marks.insert(id, (self.generation, lapses));
        Mark {
            dropped: Arc::downgrade(&self.dropped),
            id,
        }
    }

    /// The files whose metadata differs now (after an [`Live::update`]) from when `mark` was
    /// taken, sorted by path; `None` when the mark lapsed. The mark is released.
    pub fn finish(&mut self, mut mark: Mark) -> Option<Vec<Delta>> {
        mark.dropped = Weak::new();
        let changes = self.changes_since(mark.id);
        self.release(mark.id);
        changes
    }

    fn changes_since(&self, mark: u64) -> Option<Vec<Delta>> {
        let &(since, _) = self.marks.get(&mark)?;
        let mut first: BTreeMap<&Path, Option<Meta>> = BTreeMap::new();
        for (generation, path, before) in &self.log {
            if *generation > since {
                first.entry(path).or_insert(*before);
            }
        }
        let changes = first
            .into_iter()
            .filter_map(|(path, before)| {
                let after = self.meta(path);
                (before != after).then(|| Delta {
                    path: path.to_path_buf(),
                    before,
                    after,
                })
            })
            .collect();
        Some(changes)
    }

    fn release(&mut self, id: u64) {
        self.marks.remove(&id);
        self.prune();
    }

    /// Keeps only the log entries an open mark needs.
    fn prune(&mut self) {
        match self.marks.values().map(|(generation, _)| *generation).min() {
            Some(oldest) => self.log.retain(|(generation, ..)| *generation > oldest),
            None => self.log.clear(),
        }
    }

    /// Lets the oldest marks that may lapse do, until the log is within its limit.
    fn lapse(&mut self) {
        while self.log.len() > self.log_limit {
            let oldest = (self.marks.iter())
                .filter(|(_, (_, lapses))| *lapses)
                .min_by_key(|(_, (generation, _))| *generation)
                .map(|(id, _)| *id);
            let Some(oldest) = oldest else {
                return;
            };
            self.marks.remove(&oldest);
            self.prune();
        }
    }

    /// Records that `path` had `before` until this update, if a mark wants to know.
    fn changed(&mut self, path: &Path, before: Option<Meta>) {
        if !self.marks.is_empty() {
            self.log.push((self.generation, path.to_path_buf(), before));
            if self.log.len() > self.log_limit {
                self.lapse();
            }
        }
    }

    /// A whole walk, putting a watch on every folder it reads (unless watching is off).
    fn walk(&mut self) -> Updated {
        self.watched_updates = 0;
        let previous = std::mem::replace(&mut self.watch, Watch::Off);
        let was_small = matches!(previous, Watch::Unneeded);
        // A small workspace is never watched: counting its entries (no stat) is cheaper than
        // what an inotify instance costs.
        let small_at_first = matches!(previous, Watch::NotYet)
            && self.watch_from > 0
            && has_fewer_entries(&self.root, self.watch_from);
        let was_small = was_small || small_at_first;
        let watcher = match previous {
            Watch::On(watcher) => Some(watcher),
            Watch::NotYet if !small_at_first => Watcher::start(&self.root),
            Watch::NotYet | Watch::Unneeded | Watch::Off => None,
        };
        let (walked, watcher) = match watcher {
            Some(mut watcher) => {
                // What happened before this walk, the walk sees.
                watcher.discard_events();
                let (walked, added) = watcher.walk(&self.root, None);
                match added {
                    Ok(folders) => {
                        watcher.replace_folders(folders);
                        (walked, Some(watcher))
                    }
                    Err(e) => {
                        tracing::warn!(
                            "the effect journal cannot watch {} ({e}): every command walks it \
                             (raise fs.inotify.max_user_watches to have it watched)",
                            self.root.display()
                        );
                        (walked, None)
                    }
                }
            }
            None => (Snapshot::walk(&self.root, None, None), None),
        };
        let small = walked.as_ref().map(|w| w.files.len() < self.watch_from);
        self.watch = match (watcher, small) {
            (Some(watcher), Some(true)) => {
                close_elsewhere(watcher);
                Watch::Unneeded
            }
            (Some(watcher), Some(false)) => Watch::On(watcher),
            (None, Some(true)) if was_small => Watch::Unneeded,
            // Grown: the next update walks with a watch.
            (None, Some(false)) if was_small => Watch::NotYet,
            // Too many files (nothing to watch for), or watching is off.
            _ => Watch::Off,
        };
        let old = std::mem::replace(&mut self.files, walked);
        let Some(new) = &self.files else {
            return Updated::Untracked;
        };
        let old = old.unwrap_or_default();
        let mut changes: Vec<(PathBuf, Option<Meta>)> = Vec::new();
        for (path, meta) in &new.files {
            match old.files.get(path) {
                Some(before) if before == meta => {}
                before => changes.push((path.clone(), before.copied())),
            }
        }
        for (path, meta) in &old.files {
            if !new.files.contains_key(path) {
                changes.push((path.clone(), Some(*meta)));
            }
        }
        for (path, before) in changes {
            self.changed(&path, before);
        }
        Updated::Walked
    }

    /// Applies what the watch saw.
    fn apply(&mut self, events: Events) {
        let Events {
            touched,
            removed_folders,
            new_folders,
        } = events;
        for folder in removed_folders {
            let gone: Vec<(PathBuf, Meta)> = (self.files.iter())
                .flat_map(|s| s.files.iter())
                .filter(|(path, _)| path.starts_with(&folder))
                .map(|(path, meta)| (path.clone(), *meta))
                .collect();
            for (path, meta) in gone {
                self.set(&path, None);
                self.changed(&path, Some(meta));
            }
        }
        let mut unseen: HashMap<PathBuf, HashSet<OsString>> = HashMap::new();
        for path in touched {
            let now = std::fs::symlink_metadata(&path)
                .ok()
                .filter(|m| m.file_type().is_file())
                .map(|m| Meta::of(&m));
            let before = self.meta(&path);
            match (before, now) {
                (None, Some(_)) => {
                    // Not seen before: the walk decides whether it is one of ours (ignored?).
                    if let (Some(folder), Some(name)) = (path.parent(), path.file_name()) {
                        unseen
                            .entry(folder.to_path_buf())
                            .or_default()
                            .insert(name.to_os_string());
                    }
                }
                (before, now) if before != now => {
                    self.set(&path, now);
                    self.changed(&path, before);
                }
                _ => {}
            }
        }
        let scope = Scope::new(&self.root, unseen, new_folders);
        if scope.is_empty() {
            return;
        }
        let found = match &mut self.watch {
            Watch::On(watcher) => {
                let (found, added) = watcher.walk(&self.root, Some(Arc::new(scope)));
                match added {
                    Ok(folders) => watcher.folders.extend(folders),
                    // The next update walks it all, and turns watching off if it fails again.
                    Err(_) => self.watched_updates = WALK_AGAIN_AFTER,
                }
                found
            }
            _ => Snapshot::walk(&self.root, Some(Arc::new(scope)), None),
        };
        for (path, meta) in found.map(|s| s.files).unwrap_or_default() {
            let before = self.meta(&path);
            if before != Some(meta) {
                self.set(&path, Some(meta));
                self.changed(&path, before);
            }
        }
    }

    fn meta(&self, path: &Path) -> Option<Meta> {
        self.files.as_ref()?.files.get(path).copied()
    }

    fn set(&mut self, path: &Path, meta: Option<Meta>) {
        let Some(files) = self.files.as_mut().map(|s| &mut s.files) else {
            return;
        };
        match meta {
            Some(meta) => {
                files.insert(path.to_path_buf(), meta);
            }
            None => {
                files.remove(path);
            }
        }
    }
}

/// Whether `root` holds fewer than `limit` entries (files and folders, `.git` left out, ignore
/// rules not read: an overestimate of what a walk takes in).
fn has_fewer_entries(root: &Path, limit: usize) -> bool {
    let mut seen = 0usize;
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen >= limit {
                return false;
            }
            let is_folder = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_folder && entry.file_name() != ".git" {
                folders.push(entry.path());
            }
        }
    }
    true
}

/// Closes an inotify instance on a thread of its own: the close waits out a kernel grace period.
fn close_elsewhere(watcher: Watcher) {
    let spawned = std::thread::Builder::new()
        .name("inotify-close".into())
        .spawn(move || drop(watcher));
    if let Err(e) = spawned {
        tracing::debug!(%e, "closing the watch here");
    }
}

/// What the watch saw since the last update.
#[derive(Debug, Default)]
struct Events {
    /// Files (or what were files) created, changed or removed.
    touched: HashSet<PathBuf>,
    removed_folders: Vec<PathBuf>,
    new_folders: HashSet<PathBuf>,
}

impl Watcher {
    /// An inotify instance, if the root is on a file system whose changes it sees.
    fn start(root: &Path) -> Option<Watcher> {
        if !is_local(root) {
            tracing::debug!(
                "the effect journal walks {} at every command: not a local file system",
                root.display()
            );
            return None;
        }
        let flags = InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC;
        match Inotify::init(flags) {
            Ok(inotify) => Some(Watcher {
                inotify: Arc::new(inotify),
                folders: HashMap::new(),
                root: root.to_path_buf(),
                limit: watch_budget(),
            }),
            Err(e) => {
                tracing::warn!(%e, "the effect journal cannot watch the workspace: every command walks it");
                None
            }
        }
    }

    /// Walks `root` (within `scope`) with a watch on every folder it reads; the watches added,
    /// or why one could not be.
    #[allow(clippy::type_complexity)]
    fn walk(
        &self,
        root: &Path,
        scope: Option<Arc<Scope>>,
    ) -> (
        Option<Snapshot>,
        Result<Vec<(WatchDescriptor, PathBuf)>, Errno>,
    ) {
        let added: Arc<Mutex<Result<Vec<(WatchDescriptor, PathBuf)>, Errno>>> =
            Arc::new(Mutex::new(Ok(Vec::new())));
        // A whole walk watches every folder again; a scoped one adds to the others.
        let room = match scope {
            None => self.limit,
            Some(_) => self.limit.saturating_sub(self.folders.len()),
        };
        let watch = {
            let (inotify, added) = (self.inotify.clone(), added.clone());
            move |folder: &Path| {
                let mut added = added.lock().unwrap_or_else(|e| e.into_inner());
                let Ok(list) = added.as_mut() else {
                    return;
                };
                if list.len() >= room {
                    *added = Err(Errno::ENOSPC);
                    return;
                }
                match inotify.add_watch(folder, watch_mask()) {
                    Ok(wd) => list.push((wd, folder.to_path_buf())),
                    // Gone, or not a folder any more: the walk will not read it either.
                    Err(Errno::ENOENT | Errno::ENOTDIR) => {}
                    Err(e) => *added = Err(e),
                }
            }
        };
        watch(root);
        let on_folder: OnFolder = Box::new(watch);
        let walked = Snapshot::walk(root, scope, Some(on_folder));
        let added = std::mem::replace(
            &mut *added.lock().unwrap_or_else(|e| e.into_inner()),
            Ok(Vec::new()),
        );
        (walked, added)
    }

    /// After a whole walk: the folders it watched are all there is to watch.
    fn replace_folders(&mut self, folders: Vec<(WatchDescriptor, PathBuf)>) {
        let new: HashMap<WatchDescriptor, PathBuf> = folders.into_iter().collect();
        for wd in self.folders.keys() {
            if !new.contains_key(wd) {
                // A folder now ignored (or gone: the kernel dropped its watch already).
                let _ = self.inotify.rm_watch(*wd);
            }
        }
        self.folders = new;
    }

    fn discard_events(&self) {
        while let Ok(events) = self.inotify.read_events() {
            if events.is_empty() {
                break;
            }
        }
    }

    /// Everything queued since the last drain; `None` when only a whole walk can tell.
    fn drain(&mut self) -> Option<Events> {
        let mut events = Events::default();
        let mut walk = false;
        loop {
            let batch = match self.inotify.read_events() {
                Ok(batch) if !batch.is_empty() => batch,
                Ok(_) | Err(Errno::EAGAIN) => break,
                Err(e) => {
                    tracing::debug!(%e, "cannot read the workspace's watch");
                    return None;
                }
            };
            for event in batch {
                walk |= self.take(event, &mut events);
            }
        }
        (!walk).then_some(events)
    }

    /// Files `event` into `events`; whether only a whole walk can tell what it means.
    fn take(&mut self, event: nix::sys::inotify::InotifyEvent, events: &mut Events) -> bool {
        use AddWatchFlags as F;
        let mask = event.mask;
        if mask.intersects(F::IN_Q_OVERFLOW | F::IN_UNMOUNT | F::IN_MOVE_SELF) {
            return true;
        }
        if mask.contains(F::IN_IGNORED) {
            self.folders.remove(&event.wd);
            return false;
        }
        let Some(folder) = self.folders.get(&event.wd) else {
            return false;
        };
        let Some(name) = event.name else {
            // The root itself deleted; any other folder's own events come to its parent too.
            return mask.contains(F::IN_DELETE_SELF) && *folder == self.root;
        };
        if skipped(&name) {
            return false;
        }
        let path = folder.join(&name);
        // The store of keys is never journaled (no image of a key is ever kept).
        if crate::credentials::is_key_store(&path) {
            return false;
        }
        if mask.contains(F::IN_ISDIR) {
            if mask.intersects(F::IN_MOVED_FROM | F::IN_MOVED_TO) {
                return true;
            }
            if mask.contains(F::IN_DELETE) {
                events.removed_folders.push(path);
            } else if mask.contains(F::IN_CREATE) {
                events.new_folders.insert(path);
            }
            return false;
        }
        if IGNORE_FILES.iter().any(|f| name == OsStr::new(f)) {
            return true;
        }
        events.touched.insert(path);
        false
    }
}

/// How many folders one workspace may watch: a quarter of the user's watches
/// (`fs.inotify.max_user_watches`, which the editor's own file watching and every other
/// program of the user share), so that a repository of very many folders cannot take them all.
fn watch_budget() -> usize {
    let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(8192);
    max / 4
}

/// Names the walk never takes in.
fn skipped(name: &OsStr) -> bool {
    name == ".git"
        || name
            .to_str()
            .is_some_and(crate::tools::workspace::is_own_temp_file)
}

/// Whether `root` is on a local file system, whose every change its watches are told of.
fn is_local(root: &Path) -> bool {
    // ext2/3/4, XFS, Btrfs, tmpfs, overlayfs, F2FS, bcachefs, ZFS (their `statfs` magic).
    const LOCAL: [i64; 8] = [
        0xEF53,
        0x5846_5342,
        0x9123_683E,
        0x0102_1994,
        0x794C_7630,
        0xF2F5_2010,
        0xCA45_1A4E,
        0x2FC1_2FC1,
    ];
    nix::sys::statfs::statfs(root).is_ok_and(|fs| LOCAL.contains(&fs.filesystem_type().0))
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
