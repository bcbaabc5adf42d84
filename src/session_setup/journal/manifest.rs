//! The workspace as it was before a `bash` command, named in the command's `intended` entry
//! (`snapshot`), so that a command cut off by a crash or a kill -9 still has its effects told
//! and made revertible when the session is resumed ([`super::recover`]): the files that differ
//! from the manifest then are what the command (or something beside it) changed.
//!
//! A manifest maps every file of the before-snapshot (relative to the workspace root) to its
//! before-image, or to why there is none. To stay small it is a difference from a base: in a git
//! workspace, the tree of the `HEAD` commit (already in the repository; a clean checkout's
//! manifest is empty); elsewhere, the session's last full manifest, written again when the
//! difference grows past half of it. Manifests are images of the store (JSON, named by their
//! SHA-256), needed only until the command's `done` entry is written: the collection
//! ([`super::gc`]) keeps them, and what they name, only for commands that have none.

use std::collections::{BTreeMap, HashMap};
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

impl super::Journal {
    /// Stores the manifest of the workspace's files before a command (`snapshot`, with the
    /// images `before` left out) and returns its name (`None`, logged: it could not be stored,
    /// and an interrupted command is then told as one whose effects are unknown). Blocking:
    /// run it off the async threads.
    pub(super) fn store_manifest(
        &self,
        snapshot: &Snapshot,
        before: &super::images::Before,
    ) -> Option<String> {
        if let Some((commit, head)) = self.head_files() {
            let manifest = self.head_difference(snapshot, before, commit, &head);
            return self.store(&manifest.to_bytes());
        }
        let files = self.before_files(snapshot, before);
        let mut full = self.full_manifest.lock().ok()?;
        let base = full.as_ref().and_then(|(name, base_files)| {
            let diff = Manifest::diff(
                &self.root,
                &files,
                Some((Base::Manifest(name.clone()), base_files)),
            );
            (diff.files.len() * 2 <= base_files.len().max(1)).then_some(diff)
        });
        let (manifest, is_full) = match base {
            Some(diff) => (diff, false),
            None => (Manifest::diff(&self.root, &files, None), true),
        };
        let name = self.store(&manifest.to_bytes())?;
        if is_full {
            *full = Some((name.clone(), files));
        }
        Some(name)
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
        let relative = |path: &Path| {
            let rel = path.strip_prefix(&self.root).unwrap_or(path);
            rel.to_string_lossy().into_owned()
        };
        let mut diff = BTreeMap::new();
        if let Ok(known) = self.known.lock() {
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
        let known = self.known.lock();
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
    let manifest = Manifest::from_bytes(&store.load(name)?)?;
    let base = match &manifest.base {
        None => Files::new(),
        Some(Base::Manifest(base)) => {
            let base = Manifest::from_bytes(&store.load(base)?)?;
            if base.base.is_some() {
                return None;
            }
            base.files(root, Files::new())
        }
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
    Some(manifest.files(root, base))
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
