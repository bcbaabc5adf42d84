//! Protected paths that do not exist yet. One that exists is bound read-only (`mounts.rs`),
//! but a missing one cannot be made read-only without creating something in the user's
//! folder (bubblewrap-style placeholders leave stray files behind and break git's discovery of
//! a parent repository). So, as Codex does, the jail's init watches for them (inotify on the
//! nearest existing folder) and removes what the command creates there at once; when the
//! command's processes are all gone it looks once more, and a command that created one is
//! reported as failed. Nothing here ever removes what existed before the command started.
//!
//! The watch starts only once a command has run for [`WATCH_AFTER`]: closing an inotify
//! instance waits for the kernel's SRCU grace period (8-25 ms measured here), which would
//! more than double the cost of every short command, and the last look covers those.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::poll::PollTimeout;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

/// How long a command runs before the guard watches (and removes at once) instead of only
/// looking at the end.
pub const WATCH_AFTER: Duration = Duration::from_millis(100);

/// The protected paths missing when the command started, and the watches on them.
pub struct Guard {
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
    pub fn start(roots: &[PathBuf], protected: &[String]) -> Guard {
        let missing: Vec<PathBuf> = roots
            .iter()
            .flat_map(|root| protected.iter().map(move |rel| root.join(rel)))
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        Guard {
            watch_at: (!missing.is_empty()).then(|| Instant::now() + WATCH_AFTER),
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

    /// The last look, once the command's processes are gone: what the command created and
    /// the guard removed.
    pub fn finish(mut self) -> Vec<PathBuf> {
        self.sweep();
        self.removed
    }

    fn sweep(&mut self) {
        for path in &self.missing {
            if std::fs::symlink_metadata(path).is_ok()
                && remove(path).is_ok()
                && !self.removed.contains(path)
            {
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

/// The message for the command's output when the guard removed something.
pub fn report(removed: &[PathBuf]) -> String {
    let list: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
    format!(
        "agent-lsp sandbox: this command created {}, which the sandbox protects (git's hooks and \
         config, the agent's instructions and settings, MCP servers and editors' project \
         settings run or load outside the sandbox later); it was removed and the command \
         counts as failed. If it really must create it, ask to rerun the command outside the \
         sandbox.",
        list.join(", ")
    )
}
