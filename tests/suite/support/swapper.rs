//! A hostile process's race (issue 30): a thread that keeps exchanging a directory inside the
//! workspace with a symlink to a directory outside it, so that between the agent's check of a
//! path and its use the directory may have become the symlink.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};

/// Exchanges `dir` and a symlink beside it (`<dir>.swap`), as fast as it can, until stopped.
pub struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    dir: PathBuf,
    link: PathBuf,
}

impl Swapper {
    /// Starts swapping `dir` (an existing directory) with a symlink to `target`.
    pub fn start(dir: &Path, target: &Path) -> Swapper {
        let link = dir.with_extension("swap");
        std::os::unix::fs::symlink(target, &link).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            let (dir, link) = (dir.to_path_buf(), link.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    exchange(&dir, &link);
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let swapper = Swapper {
            stop,
            swaps,
            thread: Some(thread),
            dir: dir.to_path_buf(),
            link,
        };
        swapper.wait_for_swap();
        swapper
    }

    /// Returns once the thread swapped again: on a busy machine it may not have run for a
    /// while, and a race against a thread that does not run proves nothing. Never waits long
    /// for a thread that runs, whatever the code under test does.
    pub fn wait_for_swap(&self) {
        let seen = self.swaps.load(Ordering::Relaxed);
        while self.swaps.load(Ordering::Relaxed) == seen {
            std::thread::yield_now();
        }
    }

    /// Stops swapping and leaves the real directory at its name again; the number of swaps.
    pub fn stop(mut self) -> u64 {
        self.halt();
        let swaps = self.swaps.load(Ordering::Relaxed);
        if std::fs::symlink_metadata(&self.dir)
            .unwrap()
            .file_type()
            .is_symlink()
        {
            exchange(&self.dir, &self.link);
        }
        swaps
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Swaps two names atomically: each always exists, as the directory or as the symlink.
fn exchange(a: &Path, b: &Path) {
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).unwrap();
}

/// Whether `message` is one of the refusals a raced path may get: the path was a symlink out
/// when it was checked, or it changed between the check and the use.
pub fn is_refusal(message: &str) -> bool {
    message.contains("is outside the workspace") || message.contains("changed while")
}
