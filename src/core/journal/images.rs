//! `bash`'s before-images: before a command runs, the content of every workspace file whose
//! metadata differs from what the session last stored is stored, so whatever the command then
//! changes or deletes can be reverted.
//!
//! It reuses the command's before-snapshot ([`Snapshot`]): one metadata walk, then a read only
//! of the files that are new or changed since the session last stored them. Images are stored
//! once per content ([`super::blobs`]), so after a session's first command this costs the walk
//! plus the files that changed in between. It is bounded: a file over [`MAX_FILE`] bytes is not
//! read, nor is anything once [`MAX_PER_COMMAND`] bytes were read for one command; such files
//! stay not revertible, with the reason ([`Unknown`]). Measured on a directory of 3,000 files
//! of 1 KiB (`journal_before_images_of_3000_files`, debug build, 2-core test machine): a later
//! command's walk, with nothing to store, about 12 ms; the first command in a workspace, walk and
//! 3,000 images stored, 1 to 5 s (the host drifts), mostly creating the image files; the first
//! command of another session of that folder, which reads and hashes the files but finds every
//! image stored already (the folder's sessions share them, [`super::blobs`]), 0.18 to 0.32 s
//! in the same runs. Later commands only store what changed in between.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::live::Delta;
use super::snapshot::{Meta, Snapshot};
use super::{FileEffect, Journal, Known, Seen};

/// A file larger than this is not read for a before-image.
pub const MAX_FILE: u64 = 1 << 20;

/// At most this many bytes are read for before-images before one command.
pub const MAX_PER_COMMAND: u64 = 64 << 20;

/// Why the journal has no before-image of a file `bash` changed or deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Unknown {
    /// Over [`MAX_FILE`].
    TooLarge,
    /// [`MAX_PER_COMMAND`] was spent on other files.
    OverBudget,
    /// It could not be read, or it changed while it was read.
    Unreadable,
    /// agent-lsp stopped before it had hashed the open buffer's content.
    Unhashed,
    /// Its content before was a git blob the repository no longer had when the journal went to
    /// keep it (the command dropped it from the index and pruned it).
    GitBlobGone,
}

impl Unknown {
    /// The words `agent/runChanges` and `agent/revert` give.
    pub fn reason(self) -> String {
        match self {
            Unknown::TooLarge => format!(
                "its content before the command is unknown: the file is larger than {} MiB",
                MAX_FILE >> 20
            ),
            Unknown::OverBudget => format!(
                "its content before the command is unknown: more than {} MiB of other files were stored before that command",
                MAX_PER_COMMAND >> 20
            ),
            Unknown::Unreadable => {
                "its content before the command is unknown: it could not be read before the command"
                    .into()
            }
            Unknown::Unhashed => {
                "its content before the change is unknown: agent-lsp stopped before it had hashed it"
                    .into()
            }
            Unknown::GitBlobGone => {
                "its content before the command was a git blob the repository no longer has: the command removed it before the journal could keep it"
                    .into()
            }
        }
    }
}

/// What a command's before-images left out, and why.
#[derive(Debug, Default)]
pub struct Before {
    pub unknown: HashMap<PathBuf, Unknown>,
    /// How many files were read and stored.
    pub stored: usize,
}

/// At most this many files are copied without asking git which of them it holds: fewer are
/// cheaper to copy than one `git status` of a large checkout (about 0.1 s for 15k files).
pub const COPY_WITHOUT_GIT: usize = 32;

impl Journal {
    /// Gives every file of `snapshot` the journal has no current image of one: its git blob
    /// when git vouches for its bytes (no copy), else a stored copy within the bounds. Blocking
    /// (file reads, git): run it off the async threads.
    /// Only `maybe_stale` files are looked at when given (those that changed since the last
    /// command, or had no image then).
    pub(super) fn before_images<'a>(
        &self,
        snapshot: &Snapshot,
        maybe_stale: Option<impl Iterator<Item = &'a PathBuf>>,
    ) -> Before {
        let seen = &self.seen;
        let mut stale = match maybe_stale {
            Some(paths) => seen.stale_among(snapshot, paths),
            None => seen.stale(snapshot),
        };
        // Sorted: which files a spent budget leaves out does not depend on hashing order.
        stale.sort_by(|a, b| a.0.cmp(b.0));
        let unasked = seen.unasked(&stale);
        if unasked > COPY_WITHOUT_GIT {
            let found = seen.vouch(&stale);
            stale.retain(|(path, _)| !found.contains(*path));
        }
        let (copied, unknown) = self.copies(&stale);
        let stored = copied.len();
        if let Ok(mut known) = seen.known.lock() {
            known.extend(copied);
        }
        Before { unknown, stored }
    }
}

impl Seen {
    /// Asks git for the blobs of every file of `snapshot` the journal has no image of (the
    /// session's first look at the workspace, before any command needs it); copies nothing.
    /// Blocking.
    pub(super) fn vouch_all(&self, snapshot: &Snapshot) {
        let stale = self.stale(snapshot);
        if !stale.is_empty() {
            self.vouch(&stale);
        }
    }

    /// The files of `snapshot` the journal has no current image of.
    fn stale<'a>(&self, snapshot: &'a Snapshot) -> Vec<(&'a PathBuf, &'a Meta)> {
        match self.known.lock() {
            Ok(known) => (snapshot.files.iter())
                .filter(|(path, meta)| known.get(path).is_none_or(|k| k.meta != **meta))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The files among `paths` (of `snapshot`) the journal has no current image of.
    fn stale_among<'a, 'b>(
        &self,
        snapshot: &'a Snapshot,
        paths: impl Iterator<Item = &'b PathBuf>,
    ) -> Vec<(&'a PathBuf, &'a Meta)> {
        let Ok(known) = self.known.lock() else {
            return Vec::new();
        };
        let unique: HashSet<&PathBuf> = paths.collect();
        (unique.into_iter())
            .filter_map(|path| snapshot.files.get_key_value(path))
            .filter(|(path, meta)| known.get(path).is_none_or(|k| k.meta != **meta))
            .collect()
    }

    /// How many of `files` git was not asked about as they are now.
    fn unasked(&self, files: &[(&PathBuf, &Meta)]) -> usize {
        let Ok(refused) = self.refused.lock() else {
            return files.len();
        };
        (files.iter())
            .filter(|(path, meta)| refused.get(*path) != Some(*meta))
            .count()
    }

    /// The blobs git vouches for among `files`, made known; the others are remembered as
    /// refused, so that git is not asked about them again until they change. The paths
    /// vouched for.
    fn vouch(&self, files: &[(&PathBuf, &Meta)]) -> HashSet<PathBuf> {
        let sizes: HashMap<&Path, u64> = files.iter().map(|(p, m)| (p.as_path(), m.len)).collect();
        let changed_after =
            |time: (i64, i64)| files.iter().filter(|(_, m)| m.changed > time).count();
        let Some(state) = self.vouched(&|path| sizes.get(path).copied(), &changed_after) else {
            return HashSet::new();
        };
        let mut vouched = HashSet::new();
        let mut refused = Vec::new();
        let mut found = Vec::new();
        for (path, meta) in files {
            match state.blob_of(path) {
                Some(blob) => {
                    let hash = format!("git:{blob}");
                    found.push(((*path).clone(), Known { meta: **meta, hash }));
                    vouched.insert((*path).clone());
                }
                None => refused.push(((*path).clone(), **meta)),
            }
        }
        if let Ok(mut known) = self.known.lock() {
            known.extend(found);
        }
        if let Ok(mut asked) = self.refused.lock() {
            asked.extend(refused);
        }
        vouched
    }
}

impl Journal {
    /// Stores copies of `files` within the bounds, synced together: what was stored, and why
    /// the others were not.
    fn copies(
        &self,
        files: &[(&PathBuf, &Meta)],
    ) -> (Vec<(PathBuf, Known)>, HashMap<PathBuf, Unknown>) {
        let mut unknown = HashMap::new();
        let Some(blobs) = &self.blobs else {
            return (Vec::new(), unknown);
        };
        let mut batch = blobs.batch();
        let mut stored = Vec::new();
        let mut spent = 0u64;
        for (path, meta) in files {
            if meta.len > MAX_FILE {
                unknown.insert((*path).clone(), Unknown::TooLarge);
                continue;
            }
            if spent + meta.len > MAX_PER_COMMAND {
                unknown.insert((*path).clone(), Unknown::OverBudget);
                continue;
            }
            spent += meta.len;
            let added = read_unchanged(path, meta).and_then(|bytes| batch.add(&bytes).ok());
            match added {
                Some(hash) => stored.push(((*path).clone(), Known { meta: **meta, hash })),
                None => {
                    unknown.insert((*path).clone(), Unknown::Unreadable);
                }
            }
        }
        if let Err(e) = batch.commit() {
            tracing::warn!(%e, "cannot store before-images for the effect journal");
            for (path, _) in stored.drain(..) {
                unknown.insert(path, Unknown::Unreadable);
            }
        }
        (stored, unknown)
    }
}

impl Journal {
    /// The files the command changed (`changes`, from the before-state it ran on), each with
    /// its before-image (a git blob is kept reachable from the session's ref) and after-image.
    /// An after-image is only compared, never restored, but it is the next command's
    /// before-image: git's blob when git vouches for the file, else a copy within the bounds;
    /// a file it has none of is forgotten, and the next command stores it or says why not.
    /// Blocking.
    pub(super) fn bash_effects(&self, before: &Before, changes: &[Delta]) -> Vec<FileEffect> {
        let present: Vec<(&PathBuf, &Meta)> = (changes.iter())
            .filter_map(|d| Some((&d.path, d.after.as_ref()?)))
            .collect();
        let vouched = match self.seen.unasked(&present) > COPY_WITHOUT_GIT {
            true => self.seen.vouch(&present),
            false => HashSet::new(),
        };
        let to_copy: Vec<(&PathBuf, &Meta)> = (present.iter().copied())
            .filter(|(path, _)| !vouched.contains(*path))
            .collect();
        let (copied, _) = self.copies(&to_copy);
        let mut now: HashMap<PathBuf, Known> = copied.into_iter().collect();
        if let Ok(known) = self.seen.known.lock() {
            for path in vouched {
                if let Some(image) = known.get(&path) {
                    now.insert(path, image.clone());
                }
            }
        }
        let mut files = Vec::new();
        for change in changes {
            let path = &change.path;
            let (before_hash, unknown) = match change.before {
                None => (None, None),
                Some(meta) => {
                    let known = self.known_hash(path, &meta);
                    let unknown = match known {
                        Some(_) => None,
                        None => {
                            Some((before.unknown.get(path).copied()).unwrap_or(Unknown::Unreadable))
                        }
                    };
                    (known, unknown)
                }
            };
            let after_hash = match change.after {
                None => None,
                Some(_) => match now.get(path) {
                    Some(known) => Some(known.hash.clone()),
                    // Not stored (too large, over the budget, written while read): compared
                    // by its hash all the same.
                    None => super::blobs::hash_file(path).ok(),
                },
            };
            // Its metadata moved, its content did not (`touch`, `chmod`, a rewrite of the
            // same bytes): the journal is about content.
            let modified = change.before.is_some() && change.after.is_some();
            if modified && before_hash.is_some() && before_hash == after_hash {
                continue;
            }
            files.push(FileEffect {
                path: path.display().to_string(),
                before: before_hash,
                before_known: unknown.is_none(),
                unknown,
                after: after_hash,
            });
        }
        self.keep_befores(&mut files);
        if let Ok(mut known) = self.seen.known.lock() {
            for change in changes {
                match now.remove(&change.path) {
                    Some(image) => known.insert(change.path.clone(), image),
                    None => known.remove(&change.path),
                }
            }
        }
        files
    }

    /// Keeps the git blobs of `files`' before-images reachable; a file whose blob the
    /// repository no longer has is not revertible, and says why.
    fn keep_befores(&self, files: &mut [FileEffect]) {
        let names: Vec<&str> = files.iter().filter_map(|f| f.before.as_deref()).collect();
        let missing = self.keep_git(&names);
        for file in files.iter_mut() {
            if file.before.as_ref().is_some_and(|b| missing.contains(b)) {
                file.before = None;
                file.before_known = false;
                file.unknown = Some(Unknown::GitBlobGone);
            }
        }
    }
}

/// The content of `path`, only if it still has `meta` once read (a file written while it is
/// read has no trustworthy image).
fn read_unchanged(path: &std::path::Path, meta: &Meta) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let now = std::fs::metadata(path).ok().map(|m| Meta::of(&m))?;
    (now == *meta && bytes.len() as u64 == meta.len).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SessionFile;
    use std::sync::{Arc, Mutex};

    fn journal(dir: &std::path::Path, root: &std::path::Path) -> Journal {
        journal_named(dir, "s.jsonl", root)
    }

    fn journal_named(dir: &std::path::Path, file: &str, root: &std::path::Path) -> Journal {
        let record = SessionFile::create_at(&dir.join(file), root).unwrap();
        Journal::new(Arc::new(Mutex::new(record)), root)
    }

    /// The before-images of `root` as a fresh walk finds it, and how long they took.
    fn images_now(journal: &Journal, root: &std::path::Path) -> (Before, std::time::Duration) {
        let start = std::time::Instant::now();
        let snapshot = Snapshot::take(root).unwrap();
        let before = journal.before_images(&snapshot, None::<std::iter::Empty<&PathBuf>>);
        (before, start.elapsed())
    }

    #[test]
    fn only_new_or_changed_files_within_the_bounds_are_stored() {
        let session = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("b.txt"), "b").unwrap();
        std::fs::write(root.join("big.bin"), vec![b'x'; MAX_FILE as usize + 1]).unwrap();
        let journal = journal(session.path(), root);
        let (first, _) = images_now(&journal, root);
        assert_eq!(first.stored, 2);
        assert_eq!(
            first.unknown.get(&root.join("big.bin")),
            Some(&Unknown::TooLarge)
        );
        let snapshot = Snapshot::take(root).unwrap();
        let a = snapshot.files.get(&root.join("a.txt")).unwrap();
        assert_eq!(
            journal.known_hash(&root.join("a.txt"), a),
            Some(super::super::blobs::hash(b"a"))
        );

        std::fs::write(root.join("b.txt"), "bb").unwrap();
        let (second, _) = images_now(&journal, root);
        assert_eq!(second.stored, 1, "only the changed file is read again");
    }

    /// The cost noted in the module doc (printed; not a timed assertion).
    #[test]
    fn journal_before_images_of_3000_files() {
        let session = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        for dir in 0..30 {
            let dir_path = root.join(format!("d{dir}"));
            std::fs::create_dir(&dir_path).unwrap();
            for file in 0..100 {
                let content = format!("{dir}/{file}\n").repeat(1024 / 8);
                std::fs::write(dir_path.join(format!("f{file}.txt")), content).unwrap();
            }
        }
        let journal = journal(session.path(), root);
        let (first, first_took) = images_now(&journal, root);
        let (later, later_took) = images_now(&journal, root);
        assert_eq!(first.stored, 3000);
        assert_eq!(later.stored, 0);
        // Another session of the folder reads and hashes the files, but creates no image.
        let other = journal_named(session.path(), "t.jsonl", root);
        let (other_first, other_took) = images_now(&other, root);
        assert_eq!(other_first.stored, 3000);
        assert!(other_first.unknown.is_empty());
        let images = std::fs::read_dir(session.path().join("blobs"))
            .unwrap()
            .count();
        assert_eq!(images, 3000, "one image per content, shared");
        eprintln!(
            "before-images: first {first_took:?}, later {later_took:?}, \
             another session's first {other_took:?}"
        );
    }
}
