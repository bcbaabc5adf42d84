//! What `bash` changed in the workspace: the metadata of every file before and after the
//! command, compared.
//!
//! A metadata walk is cheaper than a file watcher to get right (no event queue to overflow, no
//! per-platform limits on watched folders, nothing running between commands) and costs one
//! `stat` per file; it runs on every core, with `ignore`'s parallel walker (ripgrep's). It
//! honours `.gitignore` (build output such as `target/` is not tracked) and skips `.git`. The
//! metadata is git's stat data minus the owner: size, modification and change times, inode,
//! device — a content change that keeps size and modification time (`touch -r`, a tool that
//! restores times) still moves the change time, which no program can set. A workspace with more
//! than [`MAX_FILES`] files is not tracked at all: the command's file effects are then recorded
//! as unknown rather than slowing every command down. Costs: BENCH.md, "Journal".

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use crate::tools::walk::{Gathered, Gathering};

/// Above this many files a snapshot is not taken.
pub const MAX_FILES: usize = 500_000;

/// One file's metadata (its stat data, as git's index keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub len: u64,
    pub modified: Option<SystemTime>,
    /// The change time (seconds, nanoseconds): moved by every write, never set by a program.
    pub changed: (i64, i64),
    pub inode: u64,
    pub device: u64,
}

impl Meta {
    pub fn of(meta: &std::fs::Metadata) -> Meta {
        Meta {
            len: meta.len(),
            modified: meta.modified().ok(),
            changed: (meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }
}

/// A map keyed by workspace paths, with a hash fast enough for a checkout's every file.
pub type PathMap<V> = HashMap<PathBuf, V, foldhash::fast::RandomState>;

/// A set of workspace paths ([`PathMap`]'s hash).
pub type PathSet = HashSet<PathBuf, foldhash::fast::RandomState>;

/// The files of a workspace and their metadata.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub files: PathMap<Meta>,
}

/// How a file differs between two snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Created,
    Modified,
    Deleted,
}

impl Snapshot {
    /// The regular files under `root`; `None` when there are more than [`MAX_FILES`].
    pub fn take(root: &Path) -> Option<Snapshot> {
        Snapshot::walk(root, None, None)
    }

    /// The regular files under `root` that `scope` admits (all of them without one); `None`
    /// when there are more than [`MAX_FILES`]. `on_folder` is called with every folder the walk
    /// will read, before it reads it (but the root's, which is the caller's to see to): a watch
    /// put on it there misses nothing the walk does not see.
    pub(super) fn walk(
        root: &Path,
        scope: Option<Arc<Scope>>,
        on_folder: Option<OnFolder>,
    ) -> Option<Snapshot> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
        let walk = ignore::WalkBuilder::new(root)
            .hidden(false)
            .require_git(false)
            .parents(false)
            .threads(threads)
            .filter_entry(move |e| {
                let name = e.file_name();
                // The store of keys is never journaled (no image of a key is ever kept).
                let walked = name != ".git"
                    && !name
                        .to_str()
                        .is_some_and(crate::tools::workspace::is_own_temp_file)
                    && !crate::credentials::is_key_store(e.path())
                    && scope.as_ref().is_none_or(|s| s.admits(e.path()));
                let folder = e.file_type().is_some_and(|t| t.is_dir());
                if walked
                    && folder
                    && let Some(on_folder) = &on_folder
                {
                    on_folder(e.path());
                }
                walked
            })
            .build_parallel();
        let count = AtomicUsize::new(0);
        let gathered = Gathered::default();
        walk.run(|| {
            let mut part = Part {
                files: gathered.list(),
                count: &count,
            };
            Box::new(move |entry| part.visit(entry))
        });
        let count = count.load(Ordering::Relaxed);
        if count > MAX_FILES {
            return None;
        }
        let mut files = PathMap::with_capacity_and_hasher(count, Default::default());
        files.extend(gathered.into_items());
        Some(Snapshot { files })
    }

    /// The files that differ in `after`, sorted by path.
    pub fn changes(&self, after: &Snapshot) -> Vec<(PathBuf, Change)> {
        let mut out: Vec<(PathBuf, Change)> = Vec::new();
        for (path, meta) in &after.files {
            match self.files.get(path) {
                None => out.push((path.clone(), Change::Created)),
                Some(old) if old != meta => out.push((path.clone(), Change::Modified)),
                Some(_) => {}
            }
        }
        for path in self.files.keys() {
            if !after.files.contains_key(path) {
                out.push((path.clone(), Change::Deleted));
            }
        }
        out.sort();
        out
    }
}

/// What a walk is called with for every folder it is about to read.
pub(super) type OnFolder = Box<dyn Fn(&Path) + Send + Sync>;

/// The part of a workspace a walk looks at: the files named in some folders, and whole
/// subtrees (the root is always read; the folders on the way to these are read too).
#[derive(Debug, Default)]
pub(super) struct Scope {
    /// Folders read to reach the others: only their entries on the way are walked.
    on_the_way: HashSet<PathBuf>,
    /// Folder → the names in it to look at.
    names: HashMap<PathBuf, HashSet<OsString>>,
    /// Folders walked whole.
    trees: HashSet<PathBuf>,
}

impl Scope {
    /// The scope of `names` (by folder) and `trees`, under `root`.
    pub fn new(
        root: &Path,
        names: HashMap<PathBuf, HashSet<OsString>>,
        trees: HashSet<PathBuf>,
    ) -> Scope {
        let mut on_the_way = HashSet::new();
        let folders = names.keys().map(PathBuf::as_path);
        let above_trees = trees.iter().filter_map(|t| t.parent());
        for folder in folders.chain(above_trees) {
            for up in folder.ancestors() {
                if up == root || !up.starts_with(root) || !on_the_way.insert(up.to_path_buf()) {
                    break;
                }
            }
        }
        Scope {
            on_the_way,
            names,
            trees,
        }
    }

    fn admits(&self, path: &Path) -> bool {
        if self.on_the_way.contains(path) || path.ancestors().any(|a| self.trees.contains(a)) {
            return true;
        }
        match (path.parent(), path.file_name()) {
            (Some(folder), Some(name)) => self.names.get(folder).is_some_and(|n| n.contains(name)),
            _ => false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.trees.is_empty()
    }
}

/// One walker thread's files.
struct Part<'a> {
    files: Gathering<'a, (PathBuf, Meta)>,
    count: &'a AtomicUsize,
}

impl Part<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        let Ok(entry) = entry else {
            return ignore::WalkState::Continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return ignore::WalkState::Continue;
        }
        let Ok(meta) = entry.metadata() else {
            return ignore::WalkState::Continue;
        };
        if self.count.fetch_add(1, Ordering::Relaxed) >= MAX_FILES {
            return ignore::WalkState::Quit;
        }
        self.files.items.push((entry.into_path(), Meta::of(&meta)));
        ignore::WalkState::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_modified_and_deleted_files_are_found_ignored_ones_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::write(root.join("keep.txt"), "a").unwrap();
        std::fs::write(root.join("gone.txt"), "a").unwrap();
        std::fs::write(root.join("grow.txt"), "a").unwrap();
        std::fs::create_dir(root.join("build")).unwrap();
        let before = Snapshot::take(root).unwrap();
        std::fs::write(root.join("new.txt"), "n").unwrap();
        std::fs::write(root.join("grow.txt"), "abc").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        std::fs::write(root.join("build/out.o"), "x").unwrap();
        std::fs::write(root.join(".env"), "x").unwrap();
        // A `write` in flight beside the command: its temporary file is not the command's.
        let temp = ".keep.txt.agent-lsp-0123456789abcdef0123456789abcdef.tmp";
        std::fs::write(root.join(temp), "w").unwrap();
        let after = Snapshot::take(root).unwrap();
        let changes = before.changes(&after);
        let names: Vec<(String, Change)> = changes
            .iter()
            .map(|(p, c)| (p.file_name().unwrap().to_string_lossy().into_owned(), *c))
            .collect();
        assert_eq!(
            names,
            vec![
                (".env".into(), Change::Created),
                ("gone.txt".into(), Change::Deleted),
                ("grow.txt".into(), Change::Modified),
                ("new.txt".into(), Change::Created),
            ]
        );
    }

    #[test]
    fn own_temp_files_are_recognised_by_name() {
        use crate::tools::workspace::is_own_temp_file;
        assert!(is_own_temp_file(
            ".a.rs.agent-lsp-0123456789abcdef0123456789abcdef.tmp"
        ));
        assert!(!is_own_temp_file(
            "a.rs.agent-lsp-0123456789abcdef0123456789abcdef.tmp"
        ));
        assert!(!is_own_temp_file(".a.rs.agent-lsp-notahexnumber.tmp"));
        assert!(!is_own_temp_file(".a.tmp"));
    }

    /// The cost noted in the module doc (printed; not a timed assertion).
    #[test]
    fn journal_snapshot_of_this_repository() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let start = std::time::Instant::now();
        let snapshot = Snapshot::take(root).unwrap();
        let took = start.elapsed();
        assert!(snapshot.files.keys().any(|p| p.ends_with("Cargo.toml")));
        assert!(
            !snapshot
                .files
                .keys()
                .any(|p| p.starts_with(root.join("target")))
        );
        eprintln!("snapshot: {} files in {took:?}", snapshot.files.len());
    }
}
