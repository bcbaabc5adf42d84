//! The workspace as it was before a `bash` command, named in the command's `intended` entry
//! (`snapshot`), so that a command cut off by a crash or a kill -9 still has its effects told
//! and made revertible when the session is resumed ([`super::recover`]): the files that differ
//! from the manifest then are what the command (or something beside it) changed.
//!
//! A manifest maps every file of the before-snapshot (relative to the workspace root) to its
//! before-image, or to why there is none. To stay small, and cheap to write before every
//! command, it is a chain: each command's manifest is a link from the previous one naming only
//! the files whose metadata, image or reason for having none changed since ([`Link`]; nothing
//! changed: the same manifest), and every [`MAX_LINKS`] links one is made from scratch: in a
//! git workspace a difference from the tree of the `HEAD` commit (already in the repository; a
//! clean checkout's is empty), elsewhere every file. Manifests are images of the store (JSON,
//! named by their SHA-256), needed only until the command's `done` entry is written: the
//! collection ([`super::gc`]) keeps them, the chain they end and what they name, only for
//! commands that have none. A root's commit must still be in the repository for a resumed
//! session to read it (a commit rewritten and collected since is told as effects unknown).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::images::Unknown;
use super::snapshot::Snapshot;

/// What a manifest says of one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Slot {
    /// Its before-image.
    Image(String),
    /// Its content before is not kept, and why.
    Unknown { unknown: Unknown },
}

/// What a manifest is a difference from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Base {
    /// A full manifest (an image name).
    Manifest(String),
    /// The tree of this commit of the workspace's repository: each file of it is its blob.
    GitCommit(String),
}

/// A stored manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Base>,
    /// Relative path → slot; `None`: in the base, not in the workspace.
    pub files: BTreeMap<String, Option<Slot>>,
}

/// Every file of a before-state, by absolute path.
pub type Files = HashMap<PathBuf, Slot>;

impl Manifest {
    /// The difference of `files` (under `root`) from `base` (its files, by absolute path).
    pub fn diff(root: &Path, files: &Files, base: Option<(Base, &Files)>) -> Manifest {
        let relative = |path: &Path| {
            let rel = path.strip_prefix(root).unwrap_or(path);
            rel.to_string_lossy().into_owned()
        };
        let Some((base, base_files)) = base else {
            let files = files
                .iter()
                .map(|(p, s)| (relative(p), Some(s.clone())))
                .collect();
            return Manifest { base: None, files };
        };
        let mut diff = BTreeMap::new();
        for (path, slot) in files {
            if base_files.get(path) != Some(slot) {
                diff.insert(relative(path), Some(slot.clone()));
            }
        }
        for path in base_files.keys() {
            if !files.contains_key(path) {
                diff.insert(relative(path), None);
            }
        }
        Manifest {
            base: Some(base),
            files: diff,
        }
    }

    /// The files this states under `root`, over `base` (the files of [`Manifest::base`]).
    pub fn files(&self, root: &Path, base: Files) -> Files {
        let mut files = base;
        for (rel, slot) in &self.files {
            let path = root.join(rel);
            match slot {
                Some(slot) => files.insert(path, slot.clone()),
                None => files.remove(&path),
            };
        }
        files
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Manifest> {
        serde_json::from_slice(bytes).ok()
    }

    /// The image names this holds (for the collection).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let base = match &self.base {
            Some(Base::Manifest(name)) => Some(name.as_str()),
            _ => None,
        };
        let images = self.files.values().filter_map(|slot| match slot {
            Some(Slot::Image(name)) => Some(name.as_str()),
            _ => None,
        });
        base.into_iter().chain(images)
    }
}

/// At most this many links follow a manifest made from scratch: a resumed session reads them
/// all.
pub const MAX_LINKS: usize = 64;

/// The last manifest stored, for the next to be a link from it.
pub struct Link {
    name: String,
    /// Links since the last manifest made from scratch.
    depth: usize,
    /// The workspace's state when it was made: what changed since is what the next names.
    mark: super::live::Mark,
    /// The files it said have no image, and why.
    unknown: HashMap<PathBuf, Unknown>,
}

/// What changed since the last command's manifest.
pub struct Since {
    /// The last manifest (name, links since one made from scratch, files it said have no image
    /// and why); `None` before the first command.
    last: Option<(String, usize, HashMap<PathBuf, Unknown>)>,
    /// The files whose metadata or image changed since.
    changed: super::snapshot::PathSet,
}

impl Since {
    /// The files whose image may be missing now (`None`: any file, before the first command):
    /// those that changed, and those that had none.
    pub fn maybe_stale(&self) -> Option<impl Iterator<Item = &PathBuf>> {
        let (_, _, unknown) = self.last.as_ref()?;
        Some(self.changed.iter().chain(unknown.keys()))
    }
}

impl super::Journal {
    /// What changed since the last command's manifest (`live` brought up to date).
    pub(super) fn since_last_command(&self, live: &mut super::live::Live) -> Since {
        let link = self.last_manifest.lock().ok().and_then(|mut l| l.take());
        let mut changed: super::snapshot::PathSet = match self.seen.known.lock() {
            Ok(mut known) => std::mem::take(&mut known.changed),
            Err(_) => Default::default(),
        };
        // A mark that lapsed: whatever changed is not known, the next manifest is whole.
        let last = link.and_then(|link| {
            let since = live.finish(link.mark)?;
            changed.extend(since.into_iter().map(|d| d.path));
            Some((link.name, link.depth, link.unknown))
        });
        Since { last, changed }
    }

    /// Stores the manifest of the workspace's files before a command (`live`'s, with the
    /// images `before` left out) and returns its name (`None`, logged: it could not be stored,
    /// and an interrupted command is then told as one whose effects are unknown). It is a link
    /// from the last one, naming only the files whose metadata, image or reason for none
    /// changed `since`; every [`MAX_LINKS`] it is made from scratch (a difference from `HEAD`'s
    /// tree in a git workspace, else every file). Blocking: run it off the async threads.
    pub(super) fn store_manifest(
        &self,
        live: &mut super::live::Live,
        before: &super::images::Before,
        since: Since,
    ) -> Option<String> {
        let Since { last, mut changed } = since;
        // Images made for this command.
        if let Ok(mut known) = self.seen.known.lock() {
            changed.extend(std::mem::take(&mut known.changed));
        }
        let snapshot = live.files()?;
        let (manifest, depth) = match last {
            Some((name, depth, unknown)) if depth < MAX_LINKS => {
                let mut paths: HashSet<&Path> = changed.iter().map(PathBuf::as_path).collect();
                let reasons = (before.unknown.iter())
                    .filter(|(path, why)| unknown.get(*path) != Some(*why))
                    .map(|(path, _)| path.as_path());
                paths.extend(reasons.collect::<Vec<_>>());
                paths.extend(
                    (unknown.keys())
                        .filter(|p| !before.unknown.contains_key(*p))
                        .map(PathBuf::as_path),
                );
                if paths.is_empty() {
                    // Nothing changed: the same manifest.
                    let link = Link {
                        name: name.clone(),
                        depth,
                        mark: live.lapsing_mark(),
                        unknown,
                    };
                    *self.last_manifest.lock().ok()? = Some(link);
                    return Some(name);
                }
                let link = self.link(snapshot, before, name, paths);
                (link, depth + 1)
            }
            _ => (self.whole_manifest(snapshot, before), 0),
        };
        let name = self.store(&manifest.to_bytes())?;
        let link = Link {
            name: name.clone(),
            depth,
            mark: live.lapsing_mark(),
            unknown: before.unknown.clone(),
        };
        *self.last_manifest.lock().ok()? = Some(link);
        Some(name)
    }

    /// A manifest from scratch: in a git workspace a difference from `HEAD`'s tree, else
    /// every file.
    fn whole_manifest(&self, snapshot: &Snapshot, before: &super::images::Before) -> Manifest {
        match self.head_files() {
            Some((commit, head)) => self.head_difference(snapshot, before, commit, &head),
            None => Manifest::diff(&self.root, &self.before_files(snapshot, before), None),
        }
    }

    /// A link from manifest `base`: what `paths` are now (`None`: not in the workspace).
    fn link(
        &self,
        snapshot: &Snapshot,
        before: &super::images::Before,
        base: String,
        paths: HashSet<&Path>,
    ) -> Manifest {
        let known = self.seen.known.lock();
        let known = known.as_deref().ok();
        let files = (paths.into_iter())
            .map(|path| {
                let slot = snapshot.files.get(path).map(|meta| {
                    let image = (known.and_then(|k| k.get(path)))
                        .filter(|k| k.meta == *meta)
                        .map(|k| &k.hash);
                    slot(image, before, path)
                });
                (self.relative(path), slot)
            })
            .collect();
        Manifest {
            base: Some(Base::Manifest(base)),
            files,
        }
    }

    fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        rel.to_string_lossy().into_owned()
    }

    /// The manifest of `snapshot` as a difference from `HEAD`'s files (`head`, of `commit`):
    /// only what differs is looked at twice, nothing of a clean checkout is copied.
    fn head_difference(
        &self,
        snapshot: &Snapshot,
        before: &super::images::Before,
        commit: String,
        head: &Files,
    ) -> Manifest {
        let relative = |path: &Path| self.relative(path);
        let mut diff = BTreeMap::new();
        if let Ok(known) = self.seen.known.lock() {
            for (path, meta) in &snapshot.files {
                let image = (known.get(path))
                    .filter(|k| k.meta == *meta)
                    .map(|k| &k.hash);
                let same = match (image, head.get(path)) {
                    (Some(image), Some(Slot::Image(blob))) => image == blob,
                    _ => false,
                };
                if !same {
                    diff.insert(relative(path), Some(slot(image, before, path)));
                }
            }
        }
        for path in head.keys() {
            if !snapshot.files.contains_key(path) {
                diff.insert(relative(path), None);
            }
        }
        Manifest {
            base: Some(Base::GitCommit(commit)),
            files: diff,
        }
    }

    /// Every file of the snapshot with its image, or why it has none.
    fn before_files(&self, snapshot: &Snapshot, before: &super::images::Before) -> Files {
        let known = self.seen.known.lock();
        let known = known.as_deref().ok();
        (snapshot.files.iter())
            .map(|(path, meta)| {
                let image = known
                    .and_then(|k| k.get(path))
                    .filter(|k| k.meta == *meta)
                    .map(|k| &k.hash);
                (path.clone(), slot(image, before, path))
            })
            .collect()
    }
}

/// What a manifest says of `path`: its `image`, or why `before` has none.
fn slot(image: Option<&String>, before: &super::images::Before, path: &Path) -> Slot {
    match image {
        Some(hash) => Slot::Image(hash.clone()),
        None => Slot::Unknown {
            unknown: (before.unknown.get(path).copied()).unwrap_or(Unknown::Unreadable),
        },
    }
}

/// The files `name` (a stored manifest) states, its base resolved (a commit's from `git`, the
/// workspace's repository); `None` when it or its base cannot be read.
pub fn load(
    store: &super::blobs::BlobStore,
    root: &Path,
    name: &str,
    git: Option<&super::git::GitRepo>,
) -> Option<Files> {
    // The chain of links, from `name` back to the manifest made from scratch.
    let mut chain = vec![Manifest::from_bytes(&store.load(name)?)?];
    while let Some(Base::Manifest(base)) = chain.last().and_then(|m| m.base.as_ref()) {
        if chain.len() > 4 * MAX_LINKS {
            return None;
        }
        let base = Manifest::from_bytes(&store.load(base)?)?;
        chain.push(base);
    }
    let mut files = match chain.last().and_then(|m| m.base.as_ref()) {
        None | Some(Base::Manifest(_)) => Files::new(),
        Some(Base::GitCommit(commit)) => match git?.tree_files(commit) {
            Ok(files) => files
                .into_iter()
                .map(|(path, oid)| (path, Slot::Image(format!("git:{oid}"))))
                .collect(),
            Err(e) => {
                tracing::warn!(%e, "the manifest's commit cannot be read");
                return None;
            }
        },
    };
    for manifest in chain.iter().rev() {
        files = manifest.files(root, files);
    }
    Some(files)
}

/// What differs in the workspace under `root` now from `before`: each file as a `done` entry
/// lists it, and how many files could not be compared (their content before was not kept).
/// Blocking: reads every file that has a before-image.
pub fn changes_since(root: &Path, before: &Files) -> Option<(Vec<super::FileEffect>, usize)> {
    use super::FileEffect;
    use super::image::{ImageId, name_of};
    let now = super::snapshot::Snapshot::take(root)?;
    let mut files = Vec::new();
    let mut unchecked = 0;
    let shown = |path: &Path| path.display().to_string();
    for path in now.files.keys() {
        let after = || {
            std::fs::read(path)
                .ok()
                .map(|bytes| (name_of(&bytes), bytes))
        };
        match before.get(path) {
            Some(Slot::Image(name)) => {
                let Some((after, bytes)) = after() else {
                    continue;
                };
                if ImageId::parse(name).is_some_and(|id| id.matches(&bytes)) {
                    continue;
                }
                files.push(FileEffect {
                    path: shown(path),
                    before: Some(name.clone()),
                    before_known: true,
                    unknown: None,
                    after: Some(after),
                });
            }
            Some(Slot::Unknown { .. }) => unchecked += 1,
            None => files.push(FileEffect {
                path: shown(path),
                before: None,
                before_known: true,
                unknown: None,
                after: after().map(|(name, _)| name),
            }),
        }
    }
    for (path, slot) in before {
        if now.files.contains_key(path) {
            continue;
        }
        let (before, unknown) = match slot {
            Slot::Image(name) => (Some(name.clone()), None),
            Slot::Unknown { unknown } => (None, Some(*unknown)),
        };
        files.push(FileEffect {
            path: shown(path),
            before_known: unknown.is_none(),
            before,
            unknown,
            after: None,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Some((files, unchecked))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::journal::Journal;
    use crate::core::journal::live::Live;
    use crate::store::SessionFile;
    use std::sync::{Arc, Mutex};

    /// Commands in a row, the workspace changing between them (files written, removed,
    /// grown past what is copied, made unreadable): each command's manifest, its chain of links
    /// resolved, states exactly the files and images (or reasons) the journal had before it;
    /// in a git workspace and outside one, across a manifest made from scratch again.
    #[test]
    fn every_link_of_the_chain_states_the_whole_workspace() {
        for git in [false, true] {
            let session = tempfile::tempdir().unwrap();
            let ws = tempfile::tempdir().unwrap();
            let root = ws.path();
            for i in 0..40 {
                std::fs::write(root.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
            }
            if git {
                let run = |args: &[&str]| {
                    let out = std::process::Command::new("git")
                        .arg("-C")
                        .arg(root)
                        .args(args)
                        .env("GIT_CONFIG_GLOBAL", "/dev/null")
                        .env("GIT_CONFIG_NOSYSTEM", "1")
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{out:?}");
                };
                run(&["init", "-q"]);
                run(&["add", "-A"]);
                run(&[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "commit",
                    "-qm",
                    "c",
                ]);
            }
            let record = SessionFile::create_at(&session.path().join("s.jsonl"), root).unwrap();
            let journal = Journal::new(Arc::new(Mutex::new(record)), root);
            let store = super::super::store_of(&journal.record.lock().unwrap()).unwrap();
            let repo = super::super::git::GitRepo::discover(root);
            let mut live = Live::new(root);
            let mut seed = 7u64;
            for step in 0..(MAX_LINKS + 10) {
                for _ in 0..(step % 4) {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let file = root.join(format!("f{}.txt", (seed >> 33) % 48));
                    let _ = match (seed >> 20) % 4 {
                        0 => std::fs::remove_file(&file),
                        1 => std::fs::write(&file, vec![b'x'; MAX_FILE_FOR_TEST]),
                        _ => std::fs::write(&file, format!("{step}\n")),
                    };
                }
                live.update();
                let since = journal.since_last_command(&mut live);
                let before = journal.before_images(live.files().unwrap(), since.maybe_stale());
                let name = journal.store_manifest(&mut live, &before, since).unwrap();
                let expected = journal.before_files(live.files().unwrap(), &before);
                let stated = load(&store, root, &name, repo.as_ref()).unwrap();
                assert_eq!(stated, expected, "step {step} (git: {git})");
            }
        }
    }

    /// Larger than a before-image is made of.
    const MAX_FILE_FOR_TEST: usize = super::super::images::MAX_FILE as usize + 1;

    #[test]
    fn a_difference_from_its_base_gives_back_the_same_files() {
        let root = Path::new("/w");
        let img = |s: &str| Slot::Image(s.into());
        let base: Files = [
            (root.join("same"), img("a")),
            (root.join("changed"), img("b")),
            (root.join("gone"), img("c")),
        ]
        .into();
        let now: Files = [
            (root.join("same"), img("a")),
            (root.join("changed"), img("b2")),
            (
                root.join("new"),
                Slot::Unknown {
                    unknown: Unknown::TooLarge,
                },
            ),
        ]
        .into();
        let diff = Manifest::diff(root, &now, Some((Base::Manifest("m".into()), &base)));
        assert_eq!(diff.files.len(), 3, "{diff:?}");
        assert_eq!(diff.files["gone"], None);
        let back = Manifest::from_bytes(&diff.to_bytes()).unwrap();
        assert_eq!(back, diff);
        assert_eq!(back.files(root, base), now);
        let names: Vec<&str> = back.names().collect();
        assert_eq!(names, ["m", "b2"]);
        let full = Manifest::diff(root, &now, None);
        assert_eq!(full.files(root, Files::new()), now);
    }
}
