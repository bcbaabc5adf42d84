//! Per-file state shared by the mutating tools: what the agent last read, and the per-path lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::content::ContentId;

/// The version of each file as the agent last saw it (read, or wrote itself).
///
/// `write`/`edit` compare the current content with this before changing a file, so a change
/// made by the user in between is reported to the model instead of being clobbered.
#[derive(Debug, Default)]
pub struct ReadTracker {
    seen: Mutex<HashMap<PathBuf, ContentId>>,
}

impl ReadTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the agent has seen `id` at `path`.
    pub fn record(&self, path: &Path, id: ContentId) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(path.to_path_buf(), id);
        }
    }

    /// What the agent last saw at `path`, if it ever read it.
    pub fn get(&self, path: &Path) -> Option<ContentId> {
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

    /// Like [`Self::lock`], but gives up (returning `None`) when `cancel` fires first, so an
    /// aborted call does not sit in a long queue.
    pub async fn lock_or_cancel(
        &'static self,
        path: &Path,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<MutationGuard> {
        tokio::select! {
            guard = self.lock(path) => Some(guard),
            _ = cancel.cancelled() => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn leaked() -> &'static FileMutationQueue {
        Box::leak(Box::default())
    }

    #[tokio::test]
    async fn same_path_waits_other_paths_do_not_and_keys_are_dropped() {
        let q = leaked();
        let a = q.lock(Path::new("/w/a")).await;
        // Another file is not blocked by `a` (a liveness bound, not a speed measurement).
        let b = tokio::time::timeout(Duration::from_secs(5), q.lock(Path::new("/w/b"))).await;
        assert!(b.is_ok());
        drop(b);
        let waiter = tokio::spawn(async move { q.lock(Path::new("/w/a")).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiter.is_finished(),
            "a second mutation of the same file must wait"
        );
        drop(a);
        let second = waiter.await.unwrap();
        assert_eq!(q.len(), 1);
        drop(second);
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn cancel_abandons_the_wait() {
        let q = leaked();
        let _held = q.lock(Path::new("/w/x")).await;
        let cancel = tokio_util::sync::CancellationToken::new();
        cancel.cancel();
        assert!(q.lock_or_cancel(Path::new("/w/x"), &cancel).await.is_none());
    }

    #[test]
    fn tracker_records_and_forgets() {
        let t = ReadTracker::new();
        let f = ContentId::of(b"x");
        t.record(Path::new("/a"), f);
        assert_eq!(t.get(Path::new("/a")), Some(f));
        t.forget(Path::new("/a"));
        assert_eq!(t.get(Path::new("/a")), None);
    }
}
