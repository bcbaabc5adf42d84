//! Per-file state shared by the mutating tools: what the agent last read, and the per-path lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::workspace::Fingerprint;

/// The fingerprint of each file as the agent last saw it (read, or wrote itself).
///
/// `write`/`edit` compare the current content with this before changing a file, so a change
/// made by the user in between is reported to the model instead of being clobbered.
#[derive(Debug, Default)]
pub struct ReadTracker {
    seen: Mutex<HashMap<PathBuf, Fingerprint>>,
}

impl ReadTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the agent has seen `fingerprint` at `path`.
    pub fn record(&self, path: &Path, fingerprint: Fingerprint) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(path.to_path_buf(), fingerprint);
        }
    }

    /// What the agent last saw at `path`, if it ever read it.
    pub fn get(&self, path: &Path) -> Option<Fingerprint> {
        self.seen.lock().ok().and_then(|s| s.get(path).copied())
    }

    /// Forgets `path` (for example after the file was deleted).
    pub fn forget(&self, path: &Path) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.remove(path);
        }
    }
}

/// pi's `withFileMutationQueue`: mutations of one file run one at a time, in arrival order
/// (tokio's mutex is fair); different files proceed in parallel. Keys are canonical paths
/// (callers pass [`super::Workspace::resolve`] results). Entries are dropped once unused.
#[derive(Debug, Default)]
pub struct FileMutationQueue {
    locks: Mutex<HashMap<PathBuf, Arc<AsyncMutex<()>>>>,
}

/// Holds a file's mutation slot; dropping it lets the next mutation of that file run.
pub struct MutationGuard {
    _guard: OwnedMutexGuard<()>,
    key: PathBuf,
    queue: &'static FileMutationQueue,
}

impl Drop for MutationGuard {
    fn drop(&mut self) {
        self.queue.release(&self.key);
    }
}

impl FileMutationQueue {
    /// The process-wide queue (shared by every agent, as pi's module-level map is).
    pub fn global() -> &'static FileMutationQueue {
        static QUEUE: OnceLock<FileMutationQueue> = OnceLock::new();
        QUEUE.get_or_init(FileMutationQueue::default)
    }

    /// Waits for this file's turn.
    pub async fn lock(&'static self, path: &Path) -> MutationGuard {
        let key = path.to_path_buf();
        // Registration is synchronous, so two callers racing on a new key share one mutex.
        let mutex = match self.locks.lock() {
            Ok(mut locks) => locks.entry(key.clone()).or_default().clone(),
            // A poisoned map only means another thread panicked mid-insert: use a private lock.
            Err(_) => Arc::new(AsyncMutex::new(())),
        };
        let guard = mutex.lock_owned().await;
        MutationGuard {
            _guard: guard,
            key,
            queue: self,
        }
    }

    /// Drops the key once nobody holds or waits for it (only the map's reference remains).
    fn release(&self, key: &Path) {
        if let Ok(mut locks) = self.locks.lock()
            && let Some(m) = locks.get(key)
            && Arc::strong_count(m) <= 2
        {
            // 2 = the map's clone + the guard being dropped right now.
            locks.remove(key);
        }
    }

    /// How many files currently have a lock entry (for tests).
    pub fn len(&self) -> usize {
        self.locks.lock().map(|l| l.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
