//! Background jobs seen from outside: the processes of a job found in `/proc` by a marker in
//! their command lines, and waiting (with a deadline, never a fixed sleep) until none is left.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::lsp_client::HANG_BOUND;

/// A number no other test's processes carry in their command lines (a job writes it into
/// `sleep 900.<marker>` and its own script).
pub fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}{n:03}", std::process::id())
}

/// The command line of process `pid`, if it exists and has one (a zombie has none).
fn cmdline(pid: &str) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    (!raw.is_empty()).then(|| String::from_utf8_lossy(&raw).replace('\0', " "))
}

/// The command lines of the live processes that carry `marker`.
pub fn running(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| cmdline(e.file_name().to_str()?))
        .filter(|c| c.contains(marker))
        .collect()
}

/// The `sleep`s among them (the children a job started).
pub fn sleepers(marker: &str) -> Vec<String> {
    running(marker)
        .into_iter()
        .filter(|c| c.starts_with("sleep "))
        .collect()
}

/// Whether process `pid` is still the job's: a sandbox launcher, or a process with `marker`.
fn still_ours(pid: u32, marker: &str) -> bool {
    cmdline(&pid.to_string()).is_some_and(|c| c.contains("__sandbox-exec") || c.contains(marker))
}

/// Waits until no process carries `marker` and none of `pids` runs any more.
pub async fn gone(marker: &str, pids: &[u32]) {
    let left = || {
        let mut left = running(marker);
        left.extend(
            (pids.iter())
                .filter(|pid| still_ours(**pid, marker))
                .map(|pid| format!("pid {pid}")),
        );
        left
    };
    let deadline = tokio::time::Instant::now() + HANG_BOUND;
    while !left().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still running: {:?}",
            left()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
