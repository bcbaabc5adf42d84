//! Protected paths that do not exist yet. One that exists is bound read-only (`mounts.rs`),
//! but a missing one cannot be made read-only without creating something in the user's
//! folder (bubblewrap-style placeholders leave stray files behind and break git's discovery of
//! a parent repository). So, as Codex does, the jail's init watches for them (inotify on the
//! nearest existing folder) and removes what the command creates there at once; when the
//! command's processes are all gone it looks once more, and a command that created one is
//! reported as failed. Nothing here ever removes what existed before the command started,
//! and what it removes is first copied (files and folders, bounded) into a quarantine folder
//! of the daemon's, named in the report: a file the user happened to create there while the
//! command ran (an `AGENTS.md` saved from the editor) is not lost.
//!
//! The watch starts only once a command has run for [`WATCH_AFTER`]: closing an inotify
//! instance waits for the kernel's SRCU grace period (8-25 ms measured here), which would
//! more than double the cost of every short command, and the last look covers those. For a
//! longer one, the instance is closed only after the command's end has been passed on (by
//! init, once its output is closed; by the launcher without namespaces, in a child of its own),
//! so nobody waits for that period.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::poll::PollTimeout;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

/// How long a command runs before the guard watches (and removes at once) instead of only
/// looking at the end.
pub const WATCH_AFTER: Duration = Duration::from_millis(100);

/// What a quarantine copy may hold of one removed path.
const COPY_MAX_BYTES: u64 = 16 * 1024 * 1024;
const COPY_MAX_ENTRIES: usize = 2000;

/// Where removed paths are copied: `dir` as the guard reaches it (through a descriptor in the
/// jail, whose view of it is read-only otherwise), `shown` as the user finds it.
pub struct Quarantine {
    pub dir: PathBuf,
    pub shown: PathBuf,
}

/// The protected paths missing when the command started, and the watches on them.
pub struct Guard {
    quarantine: Option<Quarantine>,
    missing: Vec<PathBuf>,
    inotify: Option<Inotify>,
    watched: HashMap<PathBuf, WatchDescriptor>,
    /// What the command created and the guard removed, in order.
    removed: Vec<PathBuf>,
    /// When the watch starts (`None`: it has, or nothing is missing).
    watch_at: Option<Instant>,
}

impl Guard {
    /// Notes which of `protected` (relative to each of `roots`) are missing now.
    pub fn start(roots: &[PathBuf], protected: &[String], quarantine: Option<Quarantine>) -> Guard {
        let missing: Vec<PathBuf> = roots
            .iter()
            .flat_map(|root| protected.iter().map(move |rel| root.join(rel)))
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        Guard {
            watch_at: (!missing.is_empty()).then(|| Instant::now() + WATCH_AFTER),
            quarantine,
            missing,
            inotify: None,
            watched: HashMap::new(),
            removed: Vec::new(),
        }
    }

    /// How long the supervisor may wait before [`Guard::due`] needs a look.
    pub fn poll_timeout(&self) -> PollTimeout {
        match self.watch_at {
            None => PollTimeout::NONE,
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now()).as_millis();
                PollTimeout::from(left.min(1000) as u16 + 1)
            }
        }
    }

    /// The watch is due to start (the supervisor then calls [`Guard::on_event`]).
    pub fn due(&self) -> bool {
        self.watch_at.is_some_and(|at| Instant::now() >= at)
    }

    /// The descriptor to poll (readable when something was created in a watched folder).
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.inotify.as_ref().map(|i| i.as_fd())
    }

    /// Something happened in a watched folder, or the watch is due: remove what appeared at a
    /// protected path.
    pub fn on_event(&mut self) {
        if self.due() {
            self.watch_at = None;
            self.inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok();
        }
        if let Some(inotify) = &self.inotify {
            while matches!(inotify.read_events(), Ok(events) if !events.is_empty()) {}
        }
        self.sweep();
        self.arm();
    }

    /// The last look, once the command's processes are gone: how the command counts as having
    /// ended (failed when it created a protected path, which the report on stderr names).
    /// The guard is kept: dropping it may wait for the kernel (see the module doc), which the
    /// caller does once the command's end is out.
    pub fn settle(&mut self, end: super::End) -> super::End {
        let Some(report) = self.finish() else {
            return end;
        };
        eprintln!("{report}");
        match end {
            super::End::Code(0) => super::End::Code(1),
            other => other,
        }
    }

    /// Whether dropping the guard closes an inotify instance (and so may wait).
    pub fn watching(&self) -> bool {
        self.inotify.is_some()
    }

    /// The report of what the command created and the guard removed (`None`: nothing).
    fn finish(&mut self) -> Option<String> {
        self.sweep();
        if self.removed.is_empty() {
            return None;
        }
        Some(report(
            &self.removed,
            self.quarantine.as_ref().map(|q| &q.shown),
        ))
    }

    fn sweep(&mut self) {
        for at in 0..self.missing.len() {
            let path = &self.missing[at];
            if std::fs::symlink_metadata(path).is_err() {
                continue;
            }
            if let Some(q) = &self.quarantine {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let name = path.file_name().map(PathBuf::from).unwrap_or_default();
                let to = q.dir.join(format!("{stamp}-{at}")).join(name);
                let _ = copy_bounded(path, &to, &mut Budget::new());
            }
            if remove(path).is_ok() && !self.removed.contains(path) {
                self.removed.push(path.clone());
            }
        }
    }

    /// Watches the nearest existing folder of every missing path (deeper as folders appear).
    fn arm(&mut self) {
        let Some(inotify) = &self.inotify else {
            return;
        };
        let flags =
            AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_ONLYDIR;
        for path in &self.missing {
            let Some(dir) = nearest_existing_parent(path) else {
                continue;
            };
            if self.watched.contains_key(&dir) {
                continue;
            }
            if let Ok(wd) = inotify.add_watch(dir.as_path(), flags) {
                self.watched.insert(dir, wd);
            }
        }
    }
}

fn nearest_existing_parent(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .find(|dir| dir.is_dir())
        .map(Path::to_path_buf)
}

/// Removes a file, link or whole folder without following links out of it.
fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path)? {
        meta if meta.is_dir() => std::fs::remove_dir_all(path),
        _ => std::fs::remove_file(path),
    }
}

/// How much a quarantine copy may still take.
struct Budget {
    bytes: u64,
    entries: usize,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            bytes: COPY_MAX_BYTES,
            entries: COPY_MAX_ENTRIES,
        }
    }
}

/// Copies `from` (a file, a link as a link, or a folder) to `to`, within the budget; what
/// does not fit is left out.
fn copy_bounded(from: &Path, to: &Path, budget: &mut Budget) -> std::io::Result<()> {
    if budget.entries == 0 {
        return Ok(());
    }
    budget.entries -= 1;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let meta = std::fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        return std::os::unix::fs::symlink(std::fs::read_link(from)?, to);
    }
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)?.flatten() {
            let _ = copy_bounded(&entry.path(), &to.join(entry.file_name()), budget);
        }
        return Ok(());
    }
    if meta.is_file() && meta.len() <= budget.bytes {
        budget.bytes -= meta.len();
        std::fs::copy(from, to)?;
    }
    Ok(())
}

/// The message for the command's output when the guard removed something.
fn report(removed: &[PathBuf], copies: Option<&PathBuf>) -> String {
    let list: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
    let kept = match copies {
        Some(dir) => format!(" (a copy is in {})", dir.display()),
        None => String::new(),
    };
    format!(
        "agent-lsp sandbox: this command created {}, which the sandbox protects (git's hooks and \
         config, the agent's instructions and settings, MCP servers and editors' project \
         settings run or load outside the sandbox later); it was removed{kept} and the command \
         counts as failed. If it really must create it, ask to rerun the command outside the \
         sandbox.",
        list.join(", ")
    )
}
