//! The durable side of a session file: loading with torn-tail repair, atomic rewrites, the
//! single-writer lock, and synced appends.
//!
//! Why this shape: a crash (`kill -9`, power loss) can only tear the line being written, because
//! every entry is one `write` on an `O_APPEND` descriptor, later covered by an `fdatasync`. The
//! `fdatasync` runs on a background thread, at most one per 50 ms per file (see [`Syncer`]): it
//! costs milliseconds on real disks and the agent loop appends several entries per turn, so
//! waiting for it made the disk, not the model, the slowest part of a tool-calling turn, and one
//! per entry still cost more CPU than the rest of the turn (BENCH.md, scenario 4). On open, an
//! unparsable *last* line is therefore a torn tail and is dropped (the file is atomically
//! rewritten to its valid prefix); an unparsable line anywhere else is real corruption and is
//! refused rather than silently skipped.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde_json::Value;

use super::SessionError;

/// A session file's lines, parsed.
pub struct Loaded {
    pub lines: Vec<Value>,
    /// The file ends in a torn line (skipped) or lacks its final newline.
    pub torn: bool,
}

/// Reads and parses a session file without changing it: a torn last line and a missing final
/// newline are skipped and reported in `torn` ([`repair_tail`] mends them, under the lock).
pub fn read_lines(path: &Path) -> Result<Loaded, SessionError> {
    let text = std::fs::read(path).map_err(|e| SessionError::io(path, e))?;
    let text = String::from_utf8_lossy(&text);
    let raw: Vec<&str> = text.split('\n').collect();
    let mut lines = Vec::with_capacity(raw.len());
    let mut torn = false;
    let last_nonempty = raw.iter().rposition(|l| !l.trim().is_empty());
    for (index, line) in raw.iter().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(value) => lines.push(value),
            Err(_) if Some(index) == last_nonempty => torn = true,
            Err(e) => {
                return Err(SessionError::Corrupt {
                    path: path.to_path_buf(),
                    line: index + 1,
                    message: e.to_string(),
                });
            }
        }
    }
    if !torn && !text.is_empty() && !text.ends_with('\n') {
        torn = true;
    }
    Ok(Loaded { lines, torn })
}

/// Rewrites a torn file as its whole lines (the caller holds the writer lock).
pub fn repair_tail(path: &Path, lines: &[Value]) -> Result<(), SessionError> {
    let mut body = String::new();
    for value in lines {
        body.push_str(&value.to_string());
        body.push('\n');
    }
    write_atomically(path, body.as_bytes())?;
    tracing::warn!(path = %path.display(), "repaired a torn session file tail");
    Ok(())
}

/// Writes `<path>.tmp`, syncs it, and renames it over `path` (pi's `publishFileAtomically`).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    let tmp = with_suffix(path, ".tmp");
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(|e| SessionError::io(path, e))
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The append side of a session file, holding the session's writer lock.
pub struct Writer {
    file: File,
    path: PathBuf,
    // Dropped before the lock: the last sync finishes while the writer still holds it.
    syncer: Syncer,
    _lock: WriterLock,
}

/// The least time between two `fdatasync`s of one session file: appends within it share the
/// next sync (group commit), so a power loss can lose at most about this much of the newest
/// transcript, while a tool-calling turn no longer pays two syncs' worth of disk work and I/O
/// interrupts (~0.4–4 ms each on a virtual disk; BENCH.md, scenario 4). A process crash loses
/// nothing: every line is written before `append` returns.
const SYNC_INTERVAL: Duration = Duration::from_millis(50);

/// Syncs appended lines to disk on a background thread. A line is written (visible to readers,
/// safe from a process crash) before `append` returns; its `fdatasync` follows at once when the
/// file was not synced within [`SYNC_INTERVAL`], else when that interval is up, shared with every
/// line appended meanwhile. Dropping the syncer performs the pending sync without waiting out
/// the interval.
struct Syncer {
    requests: Option<mpsc::Sender<()>>,
    /// A sync is requested and not yet started: appends meanwhile need not ask again.
    pending: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start(file: &File, path: &Path) -> Syncer {
        let (tx, rx) = mpsc::channel::<()>();
        let pending = Arc::new(AtomicBool::new(false));
        let thread = file.try_clone().ok().and_then(|file| {
            let (path, pending) = (path.to_path_buf(), pending.clone());
            std::thread::Builder::new()
                .name("session-sync".into())
                .spawn(move || {
                    sync_loop(&rx, &pending, SYNC_INTERVAL, || {
                        if let Err(e) = file.sync_data() {
                            tracing::warn!(path = %path.display(), "cannot sync the session: {e}");
                        }
                    })
                })
                .ok()
        });
        Syncer {
            requests: thread.as_ref().map(|_| tx),
            pending,
            thread,
        }
    }

    /// Asks for a sync; `false` when there is no background thread (the caller syncs itself).
    fn request(&self) -> bool {
        let Some(tx) = &self.requests else {
            return false;
        };
        // Already asked and not yet started: the coming sync covers this line too.
        self.pending.swap(true, Ordering::SeqCst) || tx.send(()).is_ok()
    }
}

/// The sync thread: one `sync` per request, at most one per `interval` unless the writer is
/// gone (then the last one at once).
fn sync_loop(
    rx: &mpsc::Receiver<()>,
    pending: &AtomicBool,
    interval: Duration,
    mut sync: impl FnMut(),
) {
    let mut last: Option<Instant> = None;
    while rx.recv().is_ok() {
        let mut closed = false;
        if let Some(due) = last.map(|at| at + interval) {
            loop {
                let now = Instant::now();
                if now >= due {
                    break;
                }
                match rx.recv_timeout(due - now) {
                    Ok(()) => {}
                    Err(mpsc::RecvTimeoutError::Timeout) => break,
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        closed = true;
                        break;
                    }
                }
            }
        }
        // Lines appended after this point ask for (and get) another sync.
        pending.store(false, Ordering::SeqCst);
        sync();
        last = Some(Instant::now());
        if closed {
            return;
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        // Closing the channel ends the thread after it served every pending request.
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Writer {
    /// Opens `path` for appending (creating it), after taking the writer lock.
    pub fn open(path: &Path) -> Result<Writer, SessionError> {
        let lock = WriterLock::acquire(path)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| SessionError::io(path, e))?;
        Ok(Writer {
            syncer: Syncer::start(&file, path),
            file,
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    /// Appends one JSON line with a single write; the sync to disk follows in the background.
    pub fn append(&mut self, value: &impl serde::Serialize) -> Result<(), SessionError> {
        let mut line =
            serde_json::to_vec(value).map_err(|e| SessionError::io(&self.path, e.into()))?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|e| SessionError::io(&self.path, e))?;
        if !self.syncer.request() {
            self.file
                .sync_data()
                .map_err(|e| SessionError::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Replaces the whole file atomically and reopens the append handle.
    pub fn rewrite(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        write_atomically(&self.path, bytes)?;
        self.reopen()
    }

    /// Reopens the append handle: after an atomic rename the old descriptor points at the
    /// replaced (unlinked) file.
    pub fn reopen(&mut self) -> Result<(), SessionError> {
        self.file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| SessionError::io(&self.path, e))?;
        // The old syncer finishes its pending sync of the old descriptor as it is dropped.
        self.syncer = Syncer::start(&self.file, &self.path);
        Ok(())
    }
}

/// `<session>.jsonl.lock`, an OS advisory lock (`flock`) held by the writer for as long as the
/// file is open. The kernel drops it when the process ends, however it ends (kill -9 included),
/// so a lock is never stale and a reused pid cannot block anyone. The pid written in the file
/// only names the holder in the error.
///
/// `nix`'s `flock` rather than std's `File::try_lock`, which needs Rust 1.89 (our MSRV is 1.88).
struct WriterLock {
    path: PathBuf,
    // Holds the lock; unlocked and closed after the file is removed in `drop`.
    _file: Flock<File>,
}

impl WriterLock {
    fn acquire(session: &Path) -> Result<WriterLock, SessionError> {
        let path = with_suffix(session, ".lock");
        for _ in 0..3 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| SessionError::io(&path, e))?;
            let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => locked,
                Err((_, Errno::EWOULDBLOCK)) => {
                    let pid = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|s| s.trim().parse::<i32>().ok());
                    return Err(SessionError::Locked {
                        path: session.to_path_buf(),
                        pid,
                    });
                }
                Err((_, errno)) => return Err(SessionError::io(&path, errno.into())),
            };
            // The previous holder removes the file before it unlocks: a lock taken on the
            // removed file locks nothing others can see, so take it again on the current one.
            if !same_file(&file, &path) {
                continue;
            }
            let _ = file.set_len(0);
            let _ = write!(file, "{}", std::process::id());
            return Ok(WriterLock { path, _file: file });
        }
        Err(SessionError::io(
            &path,
            std::io::Error::other("could not take the session lock"),
        ))
    }
}

/// Whether `path` still names the open `file`.
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Removed while still locked; the lock itself goes with the file handle right after.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `sync_loop` on a thread with a long interval; returns the request sender, the
    /// pending flag and a receiver of sync notifications.
    fn start_loop() -> (
        mpsc::Sender<()>,
        Arc<AtomicBool>,
        mpsc::Receiver<()>,
        std::thread::JoinHandle<()>,
    ) {
        let (tx, rx) = mpsc::channel();
        let (synced_tx, synced) = mpsc::channel();
        let pending = Arc::new(AtomicBool::new(false));
        let flag = pending.clone();
        let thread = std::thread::spawn(move || {
            sync_loop(&rx, &flag, Duration::from_secs(3600), || {
                synced_tx.send(()).unwrap();
            })
        });
        (tx, pending, synced, thread)
    }

    #[test]
    fn the_first_sync_is_immediate_later_ones_wait_and_closing_syncs_at_once() {
        let (tx, pending, synced, thread) = start_loop();
        let wait = Duration::from_secs(30);
        pending.store(true, Ordering::SeqCst);
        tx.send(()).unwrap();
        synced
            .recv_timeout(wait)
            .expect("an idle file is synced at once");
        assert!(!pending.load(Ordering::SeqCst));
        // Within the interval: the next request waits and later appends share it.
        pending.store(true, Ordering::SeqCst);
        tx.send(()).unwrap();
        assert!(synced.recv_timeout(Duration::from_millis(200)).is_err());
        // The writer goes away: the pending sync happens now, not after the interval.
        drop(tx);
        synced
            .recv_timeout(wait)
            .expect("closing performs the pending sync");
        thread.join().unwrap();
        assert!(synced.try_recv().is_err(), "exactly two syncs");
    }

    #[test]
    fn every_appended_line_is_in_the_file_once_the_writer_closes() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = Writer::open(&dir.path().join("s.jsonl")).unwrap();
        for i in 0..100 {
            writer.append(&serde_json::json!({"i": i})).unwrap();
        }
        drop(writer);
        let lines = read_lines(&dir.path().join("s.jsonl")).unwrap().lines;
        assert_eq!(lines.len(), 100);
    }
}
