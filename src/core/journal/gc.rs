//! Collecting the journal's stored images that no session references any more (issue 31):
//! `agent-lsp sessions gc`, `sessions delete`, and on its own when a session folder's store
//! passes [`AUTO_GC_BYTES`].
//!
//! A folder's images are referenced by the journal entries of its session files (a fork's file
//! holds the entries it was forked with). An image is removed only when no session file of the
//! folder names it, and it was last used ([`super::blobs::BlobStore::store`] marks a reused
//! image) before [`GRACE`] ago and before the oldest running session of the folder started: a
//! running session names images it stored or reused in entries written later (a `bash` command's
//! before-images, in its `done` entry). The sweep holds the store's lock exclusively, reuse
//! holds it shared. Git-backed images are never copies: their blobs are kept by the
//! repository's `refs/agent-lsp/journal/<session>` ref, which `sessions delete` drops.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::EFFECT;
use super::blobs::{StoreLock, shared_dir};
use super::image::ImageId;
use super::manifest::{Base, Manifest};

/// An unreferenced image used less than this long ago is kept whatever the sessions' locks say:
/// a margin for clocks that disagree (a session folder on a network file system).
pub const GRACE: Duration = Duration::from_secs(60);

/// A folder's store larger than this is collected when a session of the folder starts
/// (`AGENT_LSP_JOURNAL_STORE_MIB` sets it, in MiB).
pub const AUTO_GC_BYTES: u64 = 512 << 20;

/// The size [`auto`] collects above: `AGENT_LSP_JOURNAL_STORE_MIB`, else [`AUTO_GC_BYTES`].
pub fn auto_limit(env: &crate::model_registry::EnvSource) -> u64 {
    env.get_nonempty("AGENT_LSP_JOURNAL_STORE_MIB")
        .and_then(|mib| mib.trim().parse::<u64>().ok())
        .map_or(AUTO_GC_BYTES, |mib| mib.saturating_mul(1 << 20))
}

/// What a collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    pub folders: usize,
    pub kept: usize,
    pub kept_bytes: u64,
    pub removed: usize,
    pub freed: u64,
}

impl GcReport {
    fn add(&mut self, other: GcReport) {
        self.folders += other.folders;
        self.kept += other.kept;
        self.kept_bytes += other.kept_bytes;
        self.removed += other.removed;
        self.freed += other.freed;
    }

    /// One line for people.
    pub fn line(&self) -> String {
        format!(
            "{} folder(s): removed {} unreferenced image(s), {}; kept {} ({})",
            self.folders,
            self.removed,
            bytes(self.freed),
            self.kept,
            bytes(self.kept_bytes)
        )
    }
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// Collects every session folder under `root` (the session store).
pub fn collect_store(root: &Path, grace: Duration) -> std::io::Result<GcReport> {
    let mut report = GcReport::default();
    let Ok(folders) = std::fs::read_dir(root) else {
        return Ok(report);
    };
    for folder in folders.flatten() {
        if folder.file_type().is_ok_and(|t| t.is_dir()) {
            report.add(collect_folder(&folder.path(), grace)?);
        }
    }
    Ok(report)
}

/// The time before which an image unused since is not needed by any running session of
/// `folder`: the start of the oldest one (the time its writer lock was taken, [`live_since`]),
/// and at most `grace` ago.
fn cutoff(folder: &Path, grace: Duration) -> SystemTime {
    let now = SystemTime::now();
    let latest = now.checked_sub(grace).unwrap_or(SystemTime::UNIX_EPOCH);
    live_since(folder).map_or(latest, |oldest| oldest.min(latest))
}

/// When the oldest session of `folder` that is running now started. A session's writer holds
/// `<session>.jsonl.lock` with its pid in it and removes it when it ends; a lock file whose
/// process is gone (kill -9) is not a running session. A reused pid only keeps more images.
fn live_since(folder: &Path) -> Option<SystemTime> {
    let entries = std::fs::read_dir(folder).ok()?;
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl.lock"))
        .filter(|e| {
            let pid = std::fs::read_to_string(e.path())
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
            // A lock file just created has no pid yet: running.
            pid.is_none_or(alive)
        })
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .min()
}

fn alive(pid: i32) -> bool {
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    match kill(Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(errno) => errno != nix::errno::Errno::ESRCH,
    }
}

/// Collects one session folder: its shared `blobs/` and the per-session `<stem>.blobs/` of
/// sessions from before the store was shared. A collection running already in the folder (by
/// another process) makes this one do nothing.
pub fn collect_folder(folder: &Path, grace: Duration) -> std::io::Result<GcReport> {
    let mut report = GcReport {
        folders: 1,
        ..GcReport::default()
    };
    let shared = shared_dir(&folder.join("x.jsonl"));
    if !shared.is_dir() && !has_own_stores(folder) {
        return Ok(report);
    }
    let _sweeping = match shared.is_dir() {
        true => match StoreLock::exclusive(&shared) {
            Some(lock) => Some(lock),
            None => return Ok(report),
        },
        false => None,
    };
    // Entries are read after the lock is taken: an image reused before it is named by an entry
    // or marked younger than the cutoff.
    let cutoff = cutoff(folder, grace);
    let referenced = referenced(folder);
    let mut stores = vec![shared];
    if let Ok(entries) = std::fs::read_dir(folder) {
        stores.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "blobs") && p.is_dir()),
        );
    }
    for store in stores {
        let Ok(images) = std::fs::read_dir(&store) else {
            continue;
        };
        for image in images.flatten() {
            let name = image.file_name().to_string_lossy().into_owned();
            let Ok(meta) = image.metadata() else {
                continue;
            };
            let used_since = meta.modified().map_or(true, |m| m >= cutoff);
            // A copy left half-written by a session that was killed is garbage too.
            let unreferenced = match name.strip_suffix(".tmp") {
                Some(_) => name.starts_with('.'),
                None => ImageId::parse(&name).is_some_and(|_| !referenced.contains(&name)),
            };
            if unreferenced && !used_since && std::fs::remove_file(image.path()).is_ok() {
                report.removed += 1;
                report.freed += meta.len();
            } else {
                report.kept += 1;
                report.kept_bytes += meta.len();
            }
        }
        // An old per-session store emptied by this is removed too.
        if store.extension().is_some_and(|x| x == "blobs") {
            let _ = std::fs::remove_dir(&store);
        }
    }
    Ok(report)
}

fn has_own_stores(folder: &Path) -> bool {
    std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let path = e.path();
            path.extension().is_some_and(|x| x == "blobs") && path.is_dir()
        })
}

/// The image names the journal entries of `folder`'s session files hold: every before- and
/// after-image, and the manifest of a command that has no `done` entry (a resumed session
/// needs it to tell what the command did), with everything the manifest names.
fn referenced(folder: &Path) -> HashSet<String> {
    let mut names = HashSet::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return names;
    };
    let mut manifests = Vec::new();
    for file in entries.flatten().map(|e| e.path()) {
        if file.extension().is_some_and(|x| x == "jsonl") {
            let (images, pending) = names_in(&file);
            names.extend(images);
            manifests.extend(pending);
        }
    }
    let store = shared_dir(&folder.join("x.jsonl"));
    while let Some(name) = manifests.pop() {
        if !names.insert(name.clone()) || ImageId::parse(&name).is_none() {
            continue;
        }
        let Some(manifest) = std::fs::read(store.join(&name))
            .ok()
            .and_then(|bytes| Manifest::from_bytes(&bytes))
        else {
            continue;
        };
        for named in manifest.names() {
            match &manifest.base {
                Some(Base::Manifest(base)) if base == named => manifests.push(base.clone()),
                _ => {
                    names.insert(named.to_string());
                }
            }
        }
    }
    names
}

/// The images a session file's entries name, and the manifests of its commands with no `done`.
fn names_in(file: &Path) -> (Vec<String>, Vec<String>) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return (Vec::new(), Vec::new());
    };
    let mut names = Vec::new();
    let mut snapshots: HashMap<String, String> = HashMap::new();
    let mut done = HashSet::new();
    for line in text.lines().filter(|l| l.contains(EFFECT)) {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if entry["customType"] != EFFECT {
            continue;
        }
        let data = &entry["data"];
        let call = data["toolCallId"].as_str().unwrap_or_default().to_string();
        match data["phase"].as_str() {
            Some("done") => {
                done.insert(call);
            }
            Some("intended") => {
                if let Some(snapshot) = data["snapshot"].as_str() {
                    snapshots.insert(call, snapshot.to_string());
                }
            }
            _ => {}
        }
        for f in data["files"].as_array().into_iter().flatten() {
            for key in ["before", "after"] {
                if let Some(name) = f[key].as_str() {
                    names.push(name.to_string());
                }
            }
        }
    }
    let pending = snapshots
        .into_iter()
        .filter(|(call, _)| !done.contains(call))
        .map(|(_, manifest)| manifest)
        .collect();
    (names, pending)
}

/// The total size of a folder's shared store (what [`AUTO_GC_BYTES`] is compared with).
pub fn store_size(folder: &Path) -> u64 {
    let store = shared_dir(&folder.join("x.jsonl"));
    std::fs::read_dir(store)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// When a session of `folder` starts: collects it if its store holds more than `limit` bytes,
/// on a thread of its own; the words for the user and the thread, if it does.
pub fn auto(folder: &Path, limit: u64) -> Option<(String, std::thread::JoinHandle<()>)> {
    let size = store_size(folder);
    if size <= limit {
        return None;
    }
    let owned: PathBuf = folder.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("journal-gc".into())
        .spawn(move || match collect_folder(&owned, GRACE) {
            Ok(report) => tracing::info!("journal store collected: {}", report.line()),
            Err(e) => tracing::warn!(%e, "journal store not collected"),
        });
    let thread = match spawned {
        Ok(thread) => thread,
        Err(e) => {
            tracing::warn!(%e, "cannot start the journal's collection");
            return None;
        }
    };
    let words = format!(
        "the effect journal's images of this project take {} (more than {}); the ones no \
         session refers to are being removed (`agent-lsp sessions gc` does it by hand)",
        bytes(size),
        bytes(limit)
    );
    Some((words, thread))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::journal::blobs::BlobStore;
    use crate::core::journal::{Effect, FileEffect, Phase};
    use crate::store::SessionFile;

    fn record_naming(path: &Path, names: &[&str]) {
        let mut record = SessionFile::create_at(path, Path::new("/w")).unwrap();
        let files = names
            .iter()
            .map(|n| FileEffect {
                path: "/w/f".into(),
                before: Some(n.to_string()),
                before_known: true,
                unknown: None,
                after: None,
            })
            .collect();
        let effect = Effect {
            run: "r".into(),
            ..Effect::new(Phase::Done, "c", "bash", files)
        };
        record.append(effect.into_entry()).unwrap();
    }

    /// A session folder whose store holds `contents`, and their images' names.
    fn stored<const N: usize>(contents: [&str; N]) -> (tempfile::TempDir, BlobStore, [String; N]) {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::for_session(&dir.path().join("a.jsonl"), None);
        let names = contents.map(|c| store.store(c.as_bytes()).unwrap());
        (dir, store, names)
    }

    #[test]
    fn only_old_images_no_session_names_are_removed() {
        let (dir, store, [kept, dropped]) = stored(["kept", "dropped"]);
        record_naming(&dir.path().join("a.jsonl"), &[&kept]);
        // Young: kept whatever names it.
        let young = collect_folder(dir.path(), GRACE).unwrap();
        assert_eq!((young.removed, young.kept), (0, 2));
        let swept = collect_folder(dir.path(), Duration::ZERO).unwrap();
        assert_eq!((swept.removed, swept.kept), (1, 1));
        assert!(store.load(&kept).is_some());
        assert!(store.load(&dropped).is_none());
        assert!(swept.line().contains("removed 1 unreferenced image(s)"));
    }

    fn age(store: &BlobStore, name: &str, by: Duration) {
        let file = std::fs::File::options()
            .write(true)
            .open(store.dir().join(name))
            .unwrap();
        file.set_modified(SystemTime::now() - by).unwrap();
    }

    #[test]
    fn a_running_session_keeps_what_it_reused_since_it_started() {
        let (dir, store, [reused, unused]) =
            stored(["reused by the running session", "used by nobody since"]);
        age(&store, &reused, Duration::from_secs(3600));
        age(&store, &unused, Duration::from_secs(3600));
        // A running session (it holds its writer lock) stores the same content again: it may
        // name the image in an entry at any time from now on.
        let mut running =
            SessionFile::create_at(&dir.path().join("b.jsonl"), Path::new("/w")).unwrap();
        running
            .append(crate::store::EntryKind::Custom {
                custom_type: "x".into(),
                data: None,
            })
            .unwrap();
        assert_eq!(
            store.store(b"reused by the running session").unwrap(),
            reused
        );
        let swept = collect_folder(dir.path(), Duration::ZERO).unwrap();
        assert_eq!(swept.removed, 1);
        assert!(store.load(&reused).is_some());
        assert!(store.load(&unused).is_none());
        drop(running);
    }

    #[test]
    fn a_killed_sessions_lock_and_half_written_copies_do_not_keep_anything() {
        let (dir, store, [old]) = stored(["old"]);
        age(&store, &old, Duration::from_secs(3600));
        let tmp = store.dir().join(format!(".{old}.deadbeef.tmp"));
        std::fs::write(&tmp, b"half").unwrap();
        age(
            &store,
            tmp.file_name().unwrap().to_str().unwrap(),
            Duration::from_secs(3600),
        );
        // The lock file of a session whose process is gone (no process has pid 2^22 + 1).
        std::fs::write(dir.path().join("k.jsonl.lock"), "4194305").unwrap();
        let swept = collect_folder(dir.path(), Duration::ZERO).unwrap();
        assert_eq!((swept.removed, swept.kept), (2, 0));
        assert!(!tmp.exists());
    }

    /// A command cut off without its `done` entry keeps its manifest and what it names: the
    /// resumed session tells its effects from them. Once done, they are garbage.
    #[test]
    fn an_unfinished_commands_manifest_keeps_its_images() {
        use crate::core::journal::manifest::{Files, Manifest, Slot};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        let store = BlobStore::for_session(&path, None);
        let image = store.store(b"before the command").unwrap();
        let files: Files = [(PathBuf::from("/w/f"), Slot::Image(image.clone()))].into();
        let manifest = store
            .store(&Manifest::diff(Path::new("/w"), &files, None).to_bytes())
            .unwrap();
        age(&store, &image, Duration::from_secs(3600));
        age(&store, &manifest, Duration::from_secs(3600));
        let mut record = SessionFile::create_at(&path, Path::new("/w")).unwrap();
        let effect = |phase| Effect {
            run: "r".into(),
            snapshot: (phase == Phase::Intended).then(|| manifest.clone()),
            ..Effect::new(phase, "b", "bash", Vec::new())
        };
        record.append(effect(Phase::Intended).into_entry()).unwrap();
        drop(record);
        let kept = collect_folder(dir.path(), Duration::ZERO).unwrap();
        assert_eq!((kept.removed, kept.kept), (0, 2));
        let mut record = SessionFile::open_path(&path).unwrap();
        record.append(effect(Phase::Done).into_entry()).unwrap();
        drop(record);
        let swept = collect_folder(dir.path(), Duration::ZERO).unwrap();
        assert_eq!((swept.removed, swept.kept), (2, 0));
    }

    #[test]
    fn a_sweep_under_way_elsewhere_makes_a_second_one_do_nothing() {
        let (dir, store, [old]) = stored(["old"]);
        age(&store, &old, Duration::from_secs(3600));
        let held = StoreLock::exclusive(store.dir()).unwrap();
        let skipped = collect_folder(dir.path(), Duration::ZERO).unwrap();
        assert_eq!(skipped.removed, 0);
        drop(held);
        assert_eq!(
            collect_folder(dir.path(), Duration::ZERO).unwrap().removed,
            1
        );
    }
}
