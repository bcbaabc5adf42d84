//! What killed daemons leave behind: a session's sandbox temp dir
//! (`agent-lsp-sandbox-<pid>-<session>`, its proxy's `.proxy` beside it) and a probe's dir
//! (`agent-lsp-probe-<pid>-…`) are removed when the session or probe ends, which a process
//! killed with SIGKILL never reaches. The first sandbox of each process sweeps the temp folder
//! for those of processes that are gone.
//!
//! Only what this user owns is removed, and nothing is followed: `/tmp` is shared, and a name
//! another user planted (a symlink to something of ours) is left alone. A process is gone when
//! `/proc` has no such pid; a daemon in another PID namespace sharing this `/tmp` as the same
//! user would look gone (sandboxed commands cannot remove anything: `/tmp` is read-only in
//! their view).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Once;

const PREFIXES: [&str; 2] = ["agent-lsp-sandbox-", "agent-lsp-probe-"];

/// Sweeps `temp` once per process.
pub fn sweep_once(temp: &Path) {
    static SWEPT: Once = Once::new();
    SWEPT.call_once(|| sweep(temp, &|pid| Path::new(&format!("/proc/{pid}")).exists()));
}

/// Removes the entries of `temp` named for a process `alive` says is gone and owned by this
/// user.
fn sweep(temp: &Path, alive: &dyn Fn(u32) -> bool) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    let uid = nix::unistd::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.uid() != uid || meta.file_type().is_symlink() {
            continue;
        }
        let removed = match meta.is_dir() {
            true => std::fs::remove_dir_all(&path),
            false => std::fs::remove_file(&path),
        };
        if let Err(e) = removed {
            tracing::debug!(path = %path.display(), %e, "cannot remove a stale sandbox dir");
        }
    }
}

/// The pid in one of our temp names.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
    rest.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dirs_of_gone_processes_are_removed_and_the_rest_stays() {
        let temp = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let dir = temp.path().join(name);
            std::fs::create_dir_all(dir.join("inner")).unwrap();
            dir
        };
        let gone = make("agent-lsp-sandbox-41-0199-session");
        let gone_proxy = temp.path().join("agent-lsp-sandbox-41-0199-session.proxy");
        std::fs::write(&gone_proxy, "").unwrap();
        let gone_probe = make("agent-lsp-probe-41-abc");
        let alive = make("agent-lsp-sandbox-42-0199-other");
        let unrelated = make("agent-lsp-sandbox-notapid");
        let elsewhere = make("target");
        let planted = temp.path().join("agent-lsp-sandbox-41-link");
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
        sweep(temp.path(), &|pid| pid == 42);
        assert!(!gone.exists() && !gone_proxy.exists() && !gone_probe.exists());
        assert!(alive.exists() && unrelated.exists());
        assert!(
            elsewhere.join("inner").exists(),
            "a symlink is never followed"
        );
        assert!(std::fs::symlink_metadata(&planted).is_ok(), "nor removed");
    }

    #[test]
    fn only_our_names_carry_a_pid() {
        assert_eq!(owner_pid("agent-lsp-sandbox-1234-01a2-x"), Some(1234));
        assert_eq!(owner_pid("agent-lsp-probe-7-ff"), Some(7));
        assert_eq!(owner_pid("agent-lsp-bash-1234.log"), None);
        assert_eq!(owner_pid("agent-lsp-sandbox-x-1"), None);
    }
}
