//! Git-backed images for the effect journal (issue 31): in a git workspace, a file whose bytes
//! are its index blob's is recorded by blob id instead of being copied, and the blobs a run
//! relies on are kept reachable under a ref of ours. Only untracked and modified files need
//! copying. This module is the git side only; the journal decides what to ask.
//!
//! It runs the `git` executable (no gitoxide: its build cost on two cores, and git is there
//! wherever a git workspace is), blocking: call it off the async threads.
//!
//! # The API
//!
//! - [`GitRepo::open`] (or [`GitRepo::discover`], which logs the reason and gives `None`): the
//!   repository a workspace root is in, from one `rev-parse` (and a `git var` for the system's
//!   attributes file). The root may be a subfolder (only what is below it is reported), a
//!   linked worktree, a SHA-256 repository. Refused, with a typed reason ([`GitError`]): no
//!   `git`, not a repository, no work tree (bare, or inside `.git`), and a repository owned by
//!   another user that `safe.directory` does not list: git says "detected dubious ownership in
//!   repository at '…'" and refuses to read its configuration, which could run that user's
//!   programs; we do not override it (`-c safe.directory=…` would), we report it
//!   ([`GitError::DubiousOwnership`], with git's words).
//! - [`GitRepo::state`]: every path git reports under the root, absolute (the root as given,
//!   joined with the path below it, byte for byte: `-z` everywhere, so any name survives).
//!   Tracked files carry their stage-0 index entry (blob id, [`Mode`]: symlinks and gitlinks
//!   are marked so a caller skips them) and a [`Status`]. Untracked files (not ignored; every
//!   one, `--untracked-files=all`) and untracked directories git does not descend into (nested
//!   repositories) are listed as such; deleted, modified (intent-to-add included),
//!   type-changed and unmerged files keep their status (an unmerged path has no single blob).
//!   [`State::blob_of`] is the one question a caller needs: `Some(id)` only for a clean regular
//!   or executable file. [`GitRepo::state_with_sizes`], the journal's call, takes the files'
//!   sizes from the caller's metadata snapshot instead of `lstat`ing them again (and how many
//!   files changed since a time, to decide where `status` runs: below), and leaves untracked
//!   files out (`--untracked-files=no`: the snapshot has them, and git's walk for them was a
//!   third of `status`'s time on 100k files).
//! - [`GitRepo::read_blob`], [`GitRepo::read_blobs`] (one `cat-file --batch` for many);
//!   [`GitRepo::blob_id`] names content in-process as git does (the hash of `blob <len>\0` and
//!   the bytes; `ring`'s SHA-1, or `sha2` for SHA-256 repositories), checked against
//!   `git hash-object`.
//! - [`GitRepo::keep`], [`GitRepo::forget`], [`GitRepo::kept`]: the blobs a run relies on,
//!   reachable from `refs/agent-lsp/journal/<name>` so that no `git gc` drops them, whatever
//!   the user does to branches, index and reflogs. [`Kept::missing`] names the ids that are no
//!   longer blobs of the repository (a command that dropped a staged blob from the index and
//!   ran `git gc --prune=now` before `keep`): those images are lost, and the caller must say so
//!   rather than trust the id.
//!
//! # When git's "clean" is a file's bytes
//!
//! Clean is first what `git status` decides: stat data against the index, then content for
//! entries whose stat data changed or that are racily clean (no older than the index file).
//! But git's clean means "the file, *converted*, equals the blob", not "its bytes do", so two
//! checks of ours follow. A file with a `filter` (Git LFS) or `working-tree-encoding` attribute
//! is never vouched for ([`Unverified::Filtered`], from `check-attr`). Every other clean file's
//! size must be its blob's: end-of-line and `ident` conversions only ever shrink a file on its
//! way into git, so equal sizes mean none happened (this catches an `eol=crlf` file, an
//! expanded `$Id$`, a CRLF file added under `text=auto`: [`Unverified::SizeDiffers`]). Files git
//! is told not to look at (assume-unchanged, skip-worktree) are not vouched for either.
//! `check-attr` costs half a `git status` on 15k files, so it runs only when an attributes file
//! git would read mentions `filter` or `working-tree-encoding` (a macro names what it sets, so
//! it does too): `.gitattributes` in every folder from the top down to each file, on disk
//! whether git ignores it or not (one only in the index counts, git falls back to it),
//! `info/attributes`, the user's (`core.attributesFile`, or git's default) and the system's;
//! `attr.tree`, or a git too old to name its system file, counts as a mention.
//!
//! # Our copy of the index
//!
//! When few files changed after the user's index was written ([`FEW_CHANGED`], told by the
//! caller from its snapshot's change times: [`GitRepo::state_with_sizes`]), `status` reads that
//! index in place, without a lock: it hashes at most those files, and nothing is written. When
//! many did (the files were touched, or the checkout copied), `state` runs `ls-files` and
//! `status` on a private copy of the index (a 0700 folder under the temporary directory, named
//! by the process, removed with the last clone of the [`GitRepo`], or by the next process's
//! first copy if this one died first), copied again whenever the user's changes, with its
//! modification time (git tells racily clean entries by it, so it decides as on the user's).
//! Git may take its optional lock there and refresh the copy's stat data, as `git status` does
//! to the user's index: the files are hashed once and not at every `state` again. The user's
//! index is never written; with a split index the copy is written whole
//! (`core.splitIndex=false`), so no shared index is added to the repository. (Reading a split
//! index touches its shared part's time, as every git read does, the user's `ls-files` too.)
//!
//! # Keeping blobs
//!
//! The ref names a flat *tree* (`mktree`, one entry per blob, named by its id), rebuilt from
//! the previous tree and the new blobs and moved by `update-ref` with the old value, so two
//! writers cannot lose each other's blobs (the loser reads again; in one process keeps are
//! serialised). A tree, not a commit: a ref to a tree is invisible to `git log --all`, gitk and
//! `fast-export` (they walk commits; `show-branch --all` warns and skips it), needs no author
//! identity (a repository without `user.name` is no different), and unlike a chain of nested
//! trees never reaches git's tree depth limit. One `cat-file --batch-check` asks what the ref
//! names, which ids are blobs and (for up to 64 ids) which the tree holds
//! already; only when something is new do `ls-tree`, `mktree` and `update-ref` follow. The tree
//! grows with what a name keeps, and each keep writes one loose tree object: names should be
//! per run (or per session), forgotten when done.
//!
//! # Nothing of the user's changes
//!
//! No call takes a lock on the user's files (`--no-optional-locks`, `GIT_OPTIONAL_LOCKS=0`, or
//! our copy of the index), so the index's bytes, HEAD, branches, config and working tree stay
//! as they were (the tests compare the index file, `status`, `log --all`, `branch`, `tag`,
//! `stash list`, the local config and every file under `.git`); the only writes are tree
//! objects and our refs (no reflogs), by `keep`. The environment is the user's minus every
//! `GIT_*` variable that would point git elsewhere (`GIT_DIR`, `GIT_WORK_TREE`,
//! `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`, `GIT_CONFIG_PARAMETERS`, …; kept: where the user's
//! configuration is, and where discovery stops), with `LC_ALL=C`, no terminal prompt, no pager,
//! stdin null unless we feed it, `GIT_FLUSH=0` (`check-attr` would write once per path), no
//! lazy fetch of a partial clone's missing blobs (such a file is [`Unverified::BlobMissing`]),
//! no replace objects. No program the repository's configuration names is run: fsmonitor and
//! hooks are off (`update-ref` would run `reference-transaction`), and `status` runs with every
//! configured filter driver switched off (git would run a filter's `clean` on a file whose stat
//! data changed; such files are never vouched for anyway). The sandbox protects `.git` from
//! commands, but not in every mode, and these calls run outside it, right after the agent's.
//!
//! # For the journal
//!
//! Take the metadata snapshot first, then `state_with_sizes` with its sizes. A file changed in
//! between is either seen dirty by git (and copied), or shows its new metadata to the
//! snapshot's next comparison and is taken as changed by the command, with the index blob,
//! which was its content just before, as its before-image. After the command, `keep` the ids
//! of the files it changed or deleted under the run's name and check [`Kept::missing`]. A
//! workspace whose `.git` has no index file yet (a fresh `git init`, a `clone --no-checkout`)
//! reports every file untracked: all are copied, as without git.
//!
//! # Cost
//!
//! Measured on /var/tmp/deno-indexed, a 14,807-file checkout of deno with an index, by
//! `journal_git_state_of_a_large_checkout` (release build, the 2-core test machine shared with
//! other jobs, load average 2.5 to 7 during the runs; medians of 8 interleaved runs; CPU is
//! this process's and its git children's, per call, which the load moves less):
//!
//! | | wall | CPU |
//! |---|---|---|
//! | `git status` alone (the call `state` makes) | 53–80 ms | 59–61 ms |
//! | `state()`, a new `GitRepo` (blob sizes not known yet) | 107–198 ms | 157–166 ms |
//! | `state()` later | 77–160 ms | 119–128 ms |
//! | `state_with_sizes()` later, sizes from a snapshot | 79–131 ms | 103–111 ms |
//! | its parts alone: `ls-files` parsed | 15–25 ms | 16–17 ms |
//! | `check-attr` (not run there: its `.gitattributes` mentions neither attribute) | 22–34 ms | 24–27 ms |
//! | `cat-file --batch-check` of every blob (a new `GitRepo` only) | 31–50 ms | 35–39 ms |
//! | `lstat` of every file (`state()` only) | 17–28 ms | 19–21 ms |
//!
//! At the quietest run `state()` took 77 ms beside `git status`'s 53 (1.5×); `ls-files` runs
//! beside `status`, and what needs its entries beside `status` too. In a clone of it whose
//! files were all touched (the index stale for every file), `git status` without its lock
//! hashes all 14.8k files each time, 0.56 to 0.92 s; `state()` does it once (0.6 to 1.05 s, a
//! new `GitRepo`), then 120 to 160 ms on its refreshed copy. The journal's copying this
//! replaces: the first command in a workspace read and stored every file up to 64 MiB (1 to
//! 5 s for 3,000 files of 1 KiB, [`super::images`]).
//!
//! `keep()` in a `clone --shared` of it: 1 new blob 5 ms, 10 new 7–10 ms, 100 new 8–12 ms,
//! 1,000 new 15–20 ms, nothing new 5–6 ms; all 12,338 blobs of the checkout under one name at
//! once 78–113 ms, then one more that it holds already 6–8 ms.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// Where the kept blobs' refs live: `refs/agent-lsp/journal/<name>`.
pub const REF_PREFIX: &str = "refs/agent-lsp/journal/";

/// How many times [`GitRepo::keep`] tries when other writers keep moving the ref under it.
const KEEP_ATTEMPTS: u32 = 16;

/// Up to this many ids, [`GitRepo::keep`] asks whether the tree holds each already.
const MAX_LOOKUPS: usize = 64;

/// Held by [`GitRepo::keep`].
static KEEPING: Mutex<()> = Mutex::new(());

/// At most this many blob sizes are remembered (about 100 bytes each).
const MAX_SIZES: usize = 1 << 20;

/// At most this much of a failed command's stderr is kept in a [`GitError`].
const STDERR_KEPT: usize = 2000;

/// Why a git call did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git is not installed (no `git` on PATH)")]
    NotInstalled,
    #[error("git could not be run: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("{} is not in a git repository", .0.display())]
    NotARepository(PathBuf),
    #[error("{} is not in a git work tree (a bare repository, or inside .git)", .0.display())]
    NotAWorkTree(PathBuf),
    /// The repository is owned by another user and not listed in `safe.directory`: git refuses
    /// to read its configuration (it could run that user's programs), and so do we.
    #[error("git refuses the repository of {}: it is owned by another user (safe.directory): {stderr}", .path.display())]
    DubiousOwnership { path: PathBuf, stderr: String },
    #[error("`git {command}` failed ({status}): {stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("`git {command}` printed what we cannot read: {what}")]
    Unparsable { command: String, what: String },
    #[error("not an object id of this repository: {0:?}")]
    BadOid(String),
    #[error("not a journal ref name (`/`-separated letters, digits, '-', '_', '.'): {0:?}")]
    BadName(String),
    #[error("object {0} is not a blob of this repository")]
    MissingBlob(String),
}

/// How the repository names objects (`extensions.objectFormat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectFormat {
    Sha1,
    Sha256,
}

impl ObjectFormat {
    /// The length of an object id in hex digits.
    pub fn hex_len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 40,
            ObjectFormat::Sha256 => 64,
        }
    }

    /// The id git gives a blob of `bytes`: the hash of `blob <len>\0` and the bytes.
    pub fn blob_id(self, bytes: &[u8]) -> String {
        let header = format!("blob {}\0", bytes.len());
        match self {
            ObjectFormat::Sha1 => {
                let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
                ctx.update(header.as_bytes());
                ctx.update(bytes);
                hex(ctx.finish().as_ref())
            }
            ObjectFormat::Sha256 => {
                use sha2::Digest;
                let mut hasher = sha2::Sha256::new();
                hasher.update(header.as_bytes());
                hasher.update(bytes);
                hex(&hasher.finalize())
            }
        }
    }

    /// `oid` in lower case if it is an object id of this format.
    fn check(self, oid: &str) -> Result<String, GitError> {
        match oid.len() == self.hex_len() && oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            true => Ok(oid.to_ascii_lowercase()),
            false => Err(GitError::BadOid(oid.to_string())),
        }
    }
}

/// An index entry's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 100644.
    Regular,
    /// 100755.
    Executable,
    /// 120000: the blob is the link's target, not a file's content.
    Symlink,
    /// 160000: a submodule's commit, not a blob.
    Gitlink,
    /// Anything else (a sparse index's directory entry, 040000).
    Other(u32),
}

impl Mode {
    fn of(octal: &str) -> Option<Mode> {
        Some(match u32::from_str_radix(octal, 8).ok()? {
            0o100644 => Mode::Regular,
            0o100755 => Mode::Executable,
            0o120000 => Mode::Symlink,
            0o160000 => Mode::Gitlink,
            other => Mode::Other(other),
        })
    }

    /// A file whose content is its blob.
    pub fn is_file(self) -> bool {
        matches!(self, Mode::Regular | Mode::Executable)
    }
}

/// A tracked file's stage-0 index entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub oid: String,
    pub mode: Mode,
}

/// Why git's "clean" does not vouch for a file's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unverified {
    /// A `filter` (Git LFS, …) or `working-tree-encoding` attribute: git compares the file
    /// converted, and the conversion can change anything.
    Filtered,
    /// Its size on disk is not its blob's: an end-of-line or `ident` conversion (which only ever
    /// shrink a file on its way into git, so equal sizes mean none happened), or the file
    /// changed after git looked.
    SizeDiffers,
    /// Git is told not to look at it (`assume-unchanged`, `skip-worktree`).
    NotLooked,
    /// The blob is not in the object database (a partial clone); it is not fetched.
    BlobMissing,
}

/// What git says of one path under the workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The file's bytes are its index blob's.
    Clean,
    /// Git calls it clean, but its bytes may not be the blob's.
    Unverified(Unverified),
    /// Content or mode differs from the index (or it is an intent-to-add entry).
    Modified,
    /// A file became a symlink or the other way round.
    TypeChanged,
    /// In the index, not on disk.
    Deleted,
    /// In a merge conflict: no single index blob.
    Unmerged,
    /// A submodule (gitlink): not looked into.
    Submodule,
    /// Not tracked, not ignored.
    Untracked,
    /// An untracked directory git does not descend into: a nested repository.
    NestedRepository,
}

/// One path of a [`State`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub status: Status,
    /// `None` for untracked and unmerged paths.
    pub index: Option<IndexEntry>,
}

/// Every path under the workspace that git reports, absolute (the workspace root as given,
/// joined with the path below it).
#[derive(Clone, Debug, Default)]
pub struct State {
    pub files: super::snapshot::PathMap<Entry>,
}

impl State {
    /// The blob whose bytes the file at `path` holds, when git vouches for them: a clean
    /// regular or executable file. Every other file must be copied to be kept.
    pub fn blob_of(&self, path: &Path) -> Option<&str> {
        let entry = self.files.get(path)?;
        let index = entry.index.as_ref()?;
        (entry.status == Status::Clean && index.mode.is_file()).then_some(index.oid.as_str())
    }

    /// The nested repositories git leaves alone, sorted.
    pub fn nested_repositories(&self) -> Vec<&Path> {
        let mut out: Vec<&Path> = (self.files.iter())
            .filter(|(_, e)| e.status == Status::NestedRepository)
            .map(|(p, _)| p.as_path())
            .collect();
        out.sort();
        out
    }
}

/// What [`GitRepo::keep`] could not keep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// Ids that are not blobs of the repository (gone, or never there), sorted.
    pub missing: Vec<String>,
}

/// The environment of our git calls.
#[derive(Clone, Debug, Default)]
struct Env {
    remove: Vec<OsString>,
    set: Vec<(OsString, OsString)>,
}

/// `GIT_*` variables that say where the user's configuration is, or where discovery stops:
/// the user's git honours them, so ours does.
const INHERITED: [&str; 5] = [
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

impl Env {
    /// Every other `GIT_*` variable of ours is removed (`GIT_DIR`, `GIT_WORK_TREE`,
    /// `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`, `GIT_NAMESPACE`, `GIT_CONFIG_PARAMETERS`, … would
    /// point git elsewhere, and a daemon started from a git hook or alias inherits them).
    fn inherited() -> Env {
        Env::from_vars(std::env::vars_os().map(|(k, _)| k))
    }

    fn from_vars(names: impl Iterator<Item = OsString>) -> Env {
        let remove = names
            .filter(|k| k.as_bytes().starts_with(b"GIT_"))
            .filter(|k| !INHERITED.iter().any(|keep| k == keep))
            .collect();
        let set = [
            // Never take a lock git does not need (status would refresh the index).
            ("GIT_OPTIONAL_LOCKS", "0"),
            // Messages we match (dubious ownership) and numbers we parse, untranslated.
            ("LC_ALL", "C"),
            ("GIT_TERMINAL_PROMPT", "0"),
            ("GIT_PAGER", "cat"),
            // A partial clone's missing blob is reported missing, never fetched.
            ("GIT_NO_LAZY_FETCH", "1"),
            // We read answers once all are written: `check-attr` would otherwise flush after
            // every path (14,807 writes to the pipe for a 15k-file checkout, not 556).
            ("GIT_FLUSH", "0"),
        ];
        Env {
            remove,
            set: set.map(|(k, v)| (k.into(), v.into())).to_vec(),
        }
    }

    /// The value git gets for `name`.
    fn var(&self, name: &str) -> Option<OsString> {
        if let Some((_, v)) = self.set.iter().rev().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        match self.remove.iter().any(|k| k == name) {
            true => None,
            false => std::env::var_os(name),
        }
    }

    fn apply(&self, cmd: &mut Command) {
        for k in &self.remove {
            cmd.env_remove(k);
        }
        cmd.env_remove("LANGUAGE");
        cmd.envs(self.set.iter().map(|(k, v)| (k, v)));
    }
}

/// The git repository a workspace is in.
#[derive(Clone, Debug)]
pub struct GitRepo {
    /// The workspace root, as given.
    root: PathBuf,
    /// The repository's top (the work tree's root).
    top: PathBuf,
    /// The workspace root below `top`: empty, or ending in `/`.
    prefix: Vec<u8>,
    git_dir: PathBuf,
    /// Where `info/attributes` is (a linked worktree shares its repository's).
    common_dir: PathBuf,
    /// The system-wide attributes file (`git var GIT_ATTR_SYSTEM`); `None` when git cannot
    /// say (before 2.42).
    system_attributes: Option<PathBuf>,
    format: ObjectFormat,
    env: Env,
    /// Blob sizes by id, shared by clones.
    sizes: Arc<Mutex<HashMap<String, u64>>>,
    /// Our copy of the index ([`GitRepo::private_index`]), shared by clones.
    private: Arc<Mutex<Option<PrivateIndex>>>,
}

impl GitRepo {
    /// The repository containing `workspace_root`, `None` (the reason logged) when there is
    /// none we may use.
    pub fn discover(workspace_root: &Path) -> Option<GitRepo> {
        match GitRepo::open(workspace_root) {
            Ok(repo) => Some(repo),
            Err(e) => {
                tracing::debug!(%e, "not a git workspace");
                None
            }
        }
    }

    /// The repository containing `workspace_root`, or why there is none we may use.
    pub fn open(workspace_root: &Path) -> Result<GitRepo, GitError> {
        GitRepo::open_with(workspace_root, Env::inherited())
    }

    fn open_with(workspace_root: &Path, env: Env) -> Result<GitRepo, GitError> {
        let args = [
            "rev-parse",
            "--is-inside-work-tree",
            "--is-bare-repository",
            "--show-object-format",
            "--git-dir",
            "--git-common-dir",
            "--show-prefix",
            "--show-toplevel",
        ];
        let probe = GitRepo {
            root: workspace_root.to_path_buf(),
            top: PathBuf::new(),
            prefix: Vec::new(),
            git_dir: PathBuf::new(),
            common_dir: PathBuf::new(),
            system_attributes: None,
            format: ObjectFormat::Sha1,
            env,
            sizes: Arc::default(),
            private: Arc::default(),
        };
        let out = probe
            .run(&args, None)
            .map_err(|e| probe.not_a_workspace(e))?;
        let mut repo = probe.located(&out)?;
        repo.system_attributes = repo.system_attributes();
        Ok(repo)
    }

    /// A failed `rev-parse`, named.
    fn not_a_workspace(&self, e: GitError) -> GitError {
        let GitError::Failed { stderr, .. } = &e else {
            return e;
        };
        let path = self.root.clone();
        if stderr.contains("dubious ownership") {
            GitError::DubiousOwnership {
                path,
                stderr: stderr.clone(),
            }
        } else if stderr.contains("not a git repository") {
            GitError::NotARepository(path)
        } else if stderr.contains("must be run in a work tree") {
            GitError::NotAWorkTree(path)
        } else {
            e
        }
    }

    /// The repository `rev-parse` described. Its output is one line per answer, so a path with
    /// a line break in it cannot be told apart: such a workspace is refused as unparsable.
    fn located(mut self, out: &[u8]) -> Result<GitRepo, GitError> {
        let unparsable = |what: &str| GitError::Unparsable {
            command: "rev-parse".into(),
            what: what.into(),
        };
        let text = out.strip_suffix(b"\n").unwrap_or(out);
        let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
        let [inside, _bare, format, git_dir, common_dir, prefix, top] = lines[..] else {
            return match lines.first().copied() == Some(b"false".as_slice()) {
                true => Err(GitError::NotAWorkTree(self.root)),
                false => Err(unparsable("not seven lines")),
            };
        };
        if inside != b"true" {
            return Err(GitError::NotAWorkTree(self.root));
        }
        self.format = match format {
            b"sha1" => ObjectFormat::Sha1,
            b"sha256" => ObjectFormat::Sha256,
            // Before git 2.25 rev-parse echoes an option it does not know; those are SHA-1 only.
            b"--show-object-format" => ObjectFormat::Sha1,
            _ => return Err(unparsable("object format")),
        };
        let git_dir = Path::new(OsStr::from_bytes(git_dir));
        self.git_dir = self.root.join(git_dir);
        self.common_dir = self.root.join(Path::new(OsStr::from_bytes(common_dir)));
        self.prefix = prefix.to_vec();
        self.top = PathBuf::from(OsStr::from_bytes(top));
        Ok(self)
    }

    /// The workspace root, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The repository's top folder.
    pub fn top(&self) -> &Path {
        &self.top
    }

    /// The repository's git directory (a linked worktree's own one).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// The id git gives a blob of `bytes` in this repository.
    pub fn blob_id(&self, bytes: &[u8]) -> String {
        self.format.blob_id(bytes)
    }

    /// What git says of every path under the workspace root ([`State`]).
    ///
    /// `ls-files` (beside `config`, for the filter drivers to switch off), then at once
    /// `status`, `check-attr` (filters) and `cat-file --batch-check` (the sizes of blobs not
    /// seen before) while the tracked files are stat'ed here. No call takes a lock or writes.
    pub fn state(&self) -> Result<State, GitError> {
        self.state_of(&file_size, &|_| usize::MAX, true)
    }

    /// [`GitRepo::state`] of the tracked files (untracked ones are not listed: the journal's
    /// snapshot has them), their sizes on disk from `size_of` (`None`: no regular file): the
    /// journal's metadata snapshot, taken just before, spares a second `lstat` of every file.
    /// A size from a moment before git looked is as good: a file that changed in between is
    /// seen changed by the snapshot's next comparison. `changed_after` tells how many files
    /// changed after a time (where `status` runs: the module doc).
    pub fn state_with_sizes(
        &self,
        size_of: &(dyn Fn(&Path) -> Option<u64> + Sync),
        changed_after: &ChangedAfter<'_>,
    ) -> Result<State, GitError> {
        self.state_of(size_of, changed_after, false)
    }

    /// [`GitRepo::state`], untracked files listed or not (`status` then does not walk the
    /// tree for them: a third of its time in a 100k-file checkout).
    fn state_of(
        &self,
        size_of: &(dyn Fn(&Path) -> Option<u64> + Sync),
        changed_after: &ChangedAfter<'_>,
        untracked: bool,
    ) -> Result<State, GitError> {
        let private = self.private_index(changed_after);
        let private = private.as_deref();
        let (config_tx, config_rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            // `config` then `status` on one side, `ls-files` then what needs its entries on the
            // other: nothing waits for `status` but the result.
            let status = s.spawn(move || {
                let config = self.config();
                let drivers = config.as_ref().map(|c| c.drivers.clone()).ok();
                let _ = config_tx.send(config);
                self.status(&drivers.unwrap_or_default(), private, untracked)
            });
            let index = self.index(private)?;
            let config = config_rx.recv().map_err(|_| panicked("config"))??;
            let looked: Vec<&Indexed> = (index.entries.iter())
                .filter(|i| i.is_looked_at())
                .collect();
            let may_filter = self.may_filter(&config, &index, &looked);
            let (filtered, sized, on_disk) = std::thread::scope(|inner| {
                let filtered = inner.spawn(|| match may_filter {
                    true => self.filtered(&looked),
                    false => Ok(vec![false; looked.len()]),
                });
                let sized = inner.spawn(|| self.size_blobs(&looked));
                let on_disk: Vec<Option<u64>> =
                    looked.iter().map(|i| size_of(&i.absolute)).collect();
                (filtered.join(), sized.join(), on_disk)
            });
            let filtered = filtered.map_err(|_| panicked("check-attr"))??;
            sized.map_err(|_| panicked("cat-file"))??;
            let status = status.join().map_err(|_| panicked("status"))??;
            let sizes = self.sizes.lock().unwrap_or_else(|p| p.into_inner());
            let checks: Vec<Check> = (filtered.into_iter().zip(on_disk))
                .map(|(filtered, on_disk)| Check { filtered, on_disk })
                .collect();
            Ok(self.combine(&index.entries, status, &checks, &sizes))
        })
    }

    /// Our copy of the user's index, made again whenever theirs changed, for `state` to run
    /// on. `git status` refreshes stale stat data (a touched file, a copied checkout) and
    /// writes it back so the next status need not read those files again; on the user's
    /// index that write is not ours to make, so without a copy every `state` would hash them
    /// all again (0.6 s on a 15k-file checkout whose files were all touched). `None` (the
    /// user's index, read only): there is none, or no copy can be made.
    fn private_index(&self, changed_after: &ChangedAfter<'_>) -> Option<PathBuf> {
        let mut file = std::fs::File::open(self.git_dir.join("index")).ok()?;
        let stamp = IndexStamp::of(&file.metadata().ok()?);
        if changed_after(stamp.mtime) <= FEW_CHANGED {
            // Git hashes at most those files: read the user's index in place (nothing written).
            return None;
        }
        let mut private = self.private.lock().unwrap_or_else(|p| p.into_inner());
        if private.is_none() {
            *private = PrivateIndex::create()
                .inspect_err(|e| tracing::debug!(%e, "no private copy of the git index"))
                .ok();
        }
        let private = private.as_mut()?;
        let copy = private.dir.join("index");
        if private.copied == Some(stamp) && copy.is_file() {
            return Some(copy);
        }
        let copied = copy_index(&mut file, &private.dir, &copy);
        match copied {
            Ok(()) => {
                private.copied = Some(stamp);
                Some(copy)
            }
            Err(e) => {
                tracing::debug!(%e, "cannot copy the git index");
                None
            }
        }
    }

    /// What the configuration says that [`GitRepo::state`] needs, from one `config` call.
    fn config(&self) -> Result<Config, GitError> {
        let pattern = r"^(filter\..*|core\.attributesfile|attr\.tree)$";
        let out = match self.run(&["config", "-z", "--get-regexp", pattern], None) {
            Ok(out) => out,
            // Exit 1, no message: nothing matches.
            Err(GitError::Failed { stderr, .. }) if stderr.is_empty() => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut config = Config::default();
        for record in records(&out) {
            // `<key>\n<value>`, or `<key>` alone for a key without `=`.
            let (key, value) = match memchr::memchr(b'\n', record) {
                Some(at) => (&record[..at], Some(&record[at + 1..])),
                None => (record, None),
            };
            let key = String::from_utf8_lossy(key);
            if let Some(driver) = key.strip_prefix("filter.") {
                // `filter.<name>.<variable>`; the name may hold dots.
                if let Some((name, _)) = driver.rsplit_once('.') {
                    config.drivers.push(name.to_string());
                }
            } else if key == "core.attributesfile" {
                config.attributes_file = Some(value.map(<[u8]>::to_vec));
            } else if key == "attr.tree" {
                config.attr_tree = true;
            }
        }
        config.drivers.sort();
        config.drivers.dedup();
        Ok(config)
    }

    /// `git var GIT_ATTR_SYSTEM`: the system's attributes file, fixed for a git binary.
    fn system_attributes(&self) -> Option<PathBuf> {
        let out = self.run(&["var", "GIT_ATTR_SYSTEM"], None).ok()?;
        let path = out.strip_suffix(b"\n").unwrap_or(&out);
        (!path.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(path)))
    }

    /// The user's attributes file: `core.attributesFile`, else git's default under
    /// `$XDG_CONFIG_HOME` or `~/.config`. `Err` when we cannot tell where it is (a path
    /// relative to something, `~user/`).
    fn global_attributes(&self, config: &Config) -> Result<Option<PathBuf>, ()> {
        let home = self
            .env
            .var("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let Some(set) = &config.attributes_file else {
            let xdg = self.env.var("XDG_CONFIG_HOME").filter(|x| !x.is_empty());
            return Ok(match (xdg, home) {
                (Some(xdg), _) => Some(PathBuf::from(xdg).join("git/attributes")),
                (None, Some(home)) => Some(home.join(".config/git/attributes")),
                (None, None) => None,
            });
        };
        // A key without a value, or an empty one: no file.
        let Some(path) = set.as_deref().filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        if let Some(rest) = path.strip_prefix(b"~/") {
            return home
                .map(|h| Some(h.join(OsStr::from_bytes(rest))))
                .ok_or(());
        }
        let path = Path::new(OsStr::from_bytes(path));
        path.is_absolute()
            .then(|| Some(path.to_path_buf()))
            .ok_or(())
    }

    /// Whether a `filter` or `working-tree-encoding` attribute can be set for any of `files`:
    /// `false` only when every attributes file git would read for them is known and none
    /// holds either word (a macro names what it sets, so it holds the word too). Then
    /// `check-attr`, which costs half a `git status` on 15k files, need not run. The files
    /// read: `.gitattributes` in every folder from the top down to each file, on disk whatever
    /// git ignores (an index-only one, which git would fall back to, counts as a mention),
    /// `info/attributes`, the user's and the system's; `attr.tree` counts as a mention.
    fn may_filter(&self, config: &Config, index: &Index, files: &[&Indexed]) -> bool {
        if config.attr_tree || !index.outside_attributes.is_empty() {
            return true;
        }
        let Ok(global) = self.global_attributes(config) else {
            return true;
        };
        let Some(system) = &self.system_attributes else {
            return true;
        };
        let mut sources = vec![self.common_dir.join("info/attributes"), system.clone()];
        sources.extend(global);
        sources.extend(self.ancestors_attributes());
        let mut folders: HashSet<&[u8]> = HashSet::new();
        for file in files {
            let mut path = file.path.as_slice();
            while let Some(slash) = memchr::memrchr(b'/', path) {
                path = &path[..slash];
                if !folders.insert(path) {
                    break;
                }
            }
        }
        sources.push(self.root.join(".gitattributes"));
        sources.extend(
            folders
                .iter()
                .map(|f| self.absolute(f).join(".gitattributes")),
        );
        let tracked = (index.entries.iter())
            .filter(|e| e.path == b".gitattributes" || e.path.ends_with(b"/.gitattributes"));
        for entry in tracked {
            if !entry.absolute.exists() {
                return true;
            }
        }
        sources.iter().any(|source| mentions_filtering(source))
    }

    /// `.gitattributes` of the folders from the top down to (not including) the root.
    fn ancestors_attributes(&self) -> Vec<PathBuf> {
        let mut out = vec![self.top.join(".gitattributes")];
        let mut below = self.top.clone();
        let components = self.prefix.split(|b| *b == b'/').filter(|c| !c.is_empty());
        let components: Vec<&[u8]> = components.collect();
        for component in components.iter().take(components.len().saturating_sub(1)) {
            below.push(OsStr::from_bytes(component));
            out.push(below.join(".gitattributes"));
        }
        out
    }

    /// The stage entries under the workspace (`ls-files --stage`, tagged: `-v` says which git
    /// does not look at), and whether the folders above it have `.gitattributes` in the index.
    fn index(&self, private: Option<&Path>) -> Result<Index, GitError> {
        let mut args: Vec<OsString> = ["ls-files", "--stage", "-v", "-z", "--full-name", "--", "."]
            .map(OsString::from)
            .to_vec();
        for above in self.ancestors_attributes() {
            let Ok(from_top) = above.strip_prefix(&self.top) else {
                continue;
            };
            let mut spec = OsString::from(":(top,literal)");
            spec.push(from_top);
            args.push(spec);
        }
        let out = self.run_with(&args, None, &[], private)?;
        let mut index = Index::default();
        for record in records(&out) {
            match self.indexed(record) {
                Some(Ok(entry)) => index.entries.push(entry),
                // Only one missing on disk matters: git would read it from the index.
                Some(Err(above)) if !above.exists() => index.outside_attributes.push(above),
                Some(Err(_)) => {}
                None => {
                    return Err(GitError::Unparsable {
                        command: "ls-files".into(),
                        what: "an entry".into(),
                    });
                }
            }
        }
        Ok(index)
    }

    /// One `ls-files -s -v` record: `<tag> <mode> <oid> <stage>\t<path>`; `Err` with the path
    /// of one above the workspace (a `.gitattributes` asked about, not on disk).
    fn indexed(&self, record: &[u8]) -> Option<Result<Indexed, PathBuf>> {
        let tab = memchr::memchr(b'\t', record)?;
        let (head, path) = (&record[..tab], &record[tab + 1..]);
        let head = std::str::from_utf8(head).ok()?;
        let mut fields = head.split(' ');
        let tag = fields.next()?;
        let mode = Mode::of(fields.next()?)?;
        let oid = self.format.check(fields.next()?).ok()?;
        let stage: u8 = fields.next()?.parse().ok()?;
        let tag = tag.chars().next()?;
        let Some(path) = self.below_root(path) else {
            return Some(Err(self.top.join(OsStr::from_bytes(path))));
        };
        let path = path.to_vec();
        Some(Ok(Indexed {
            absolute: self.absolute(&path),
            path,
            mode,
            oid,
            stage,
            // Lower case: assume-unchanged; `S`: skip-worktree.
            not_looked: tag.is_ascii_lowercase() || tag == 'S',
        }))
    }

    /// What `status` says differs, by path below the root. The filter `drivers` are switched
    /// off: git would run their `clean` command on a file whose stat data changed, and the
    /// repository's configuration is no program of ours to run (a filtered file is never
    /// vouched for anyway, [`Unverified::Filtered`]).
    fn status(
        &self,
        drivers: &[String],
        private: Option<&Path>,
        untracked: bool,
    ) -> Result<Changes, GitError> {
        let args = [
            // Paths from the repository's top whatever git's default (`-z` gives them so today).
            "-c",
            "status.relativePaths=false",
            "status",
            "--porcelain=v2",
            "-z",
            match untracked {
                true => "--untracked-files=all",
                false => "--untracked-files=no",
            },
            "--no-renames",
            "--ignore-submodules=all",
            "--",
            ".",
        ];
        let out = self.run_with(&args, None, &no_filters(drivers), private)?;
        let unparsable = |what: &str| GitError::Unparsable {
            command: "status".into(),
            what: what.into(),
        };
        let mut changes = Changes::default();
        let mut records = records(&out);
        while let Some(record) = records.next() {
            let line = StatusLine::parse(record).ok_or_else(|| unparsable("a line"))?;
            if let StatusLine::Renamed = line {
                // The original path follows; never printed with --no-renames.
                records.next();
                continue;
            }
            let (path, status) = match line {
                StatusLine::Changed { path, worktree } => (path, worktree),
                StatusLine::Unmerged(path) => (path, Some(Status::Unmerged)),
                StatusLine::Untracked(path) => match path.strip_suffix(b"/") {
                    Some(dir) => (dir, Some(Status::NestedRepository)),
                    None => (path, Some(Status::Untracked)),
                },
                StatusLine::Other | StatusLine::Renamed => continue,
            };
            let path = self.below_root(path).ok_or_else(|| unparsable("a path"))?;
            if let Some(status) = status {
                changes.insert(path.to_vec(), status);
            }
        }
        Ok(changes)
    }

    /// Whether each of `files` has a `filter` or `working-tree-encoding` attribute.
    fn filtered(&self, files: &[&Indexed]) -> Result<Vec<bool>, GitError> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = Vec::new();
        for file in files {
            input.extend_from_slice(&file.path);
            input.push(0);
        }
        let mut args = vec!["check-attr", "--stdin", "-z"];
        args.extend(FILTERING);
        let out = self.run(&args, Some(&input))?;
        let fields: Vec<&[u8]> = records(&out).collect();
        // `<path> <attribute> <value>` for each path and attribute, in the order asked.
        let per_file = 3 * FILTERING.len();
        let answers = fields.chunks_exact(per_file);
        let unparsable = || GitError::Unparsable {
            command: "check-attr".into(),
            what: "not one answer per path and attribute, in order".into(),
        };
        if fields.len() != per_file * files.len() {
            return Err(unparsable());
        }
        (files.iter().zip(answers))
            .map(|(file, answer)| {
                let triples = answer.chunks_exact(3);
                let mut set = false;
                for triple in triples {
                    if triple[0] != file.path.as_slice() {
                        return Err(unparsable());
                    }
                    set |= !matches!(triple[2], b"unspecified" | b"unset");
                }
                Ok(set)
            })
            .collect()
    }

    /// Adds the sizes of the blobs of `files` not sized before to [`GitRepo::sizes`] (an
    /// object's size never changes, so after a first call only new content is asked about).
    fn size_blobs(&self, files: &[&Indexed]) -> Result<(), GitError> {
        let unknown: HashSet<&str> = {
            let sizes = self.sizes.lock().unwrap_or_else(|p| p.into_inner());
            (files.iter())
                .map(|i| i.oid.as_str())
                .filter(|o| !sizes.contains_key(*o))
                .collect()
        };
        let found = self.objects(unknown.into_iter())?;
        let mut sizes = self.sizes.lock().unwrap_or_else(|p| p.into_inner());
        if sizes.len() + found.len() > MAX_SIZES {
            sizes.clear();
        }
        let blobs = found.into_iter().filter_map(|(oid, object)| {
            let blob = object.filter(|o| o.kind == Kind::Blob)?;
            Some((oid, blob.size))
        });
        sizes.extend(blobs);
        Ok(())
    }

    /// `cat-file --batch-check` of `names` (ids, or a ref name we made): each one's object,
    /// `None` when missing. Keyed by name.
    fn objects<'a>(
        &self,
        names: impl Iterator<Item = &'a str>,
    ) -> Result<HashMap<String, Option<Object>>, GitError> {
        let names: Vec<&str> = names.collect();
        if names.is_empty() {
            return Ok(HashMap::new());
        }
        let args = [
            "cat-file",
            "--batch-check=%(objectname) %(objecttype) %(objectsize)",
            "--buffer",
        ];
        let out = self.run(&args, Some(&lines_of(names.iter().copied())))?;
        let text = out.strip_suffix(b"\n").unwrap_or(&out);
        let answers: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
        if answers.len() != names.len() {
            return Err(GitError::Unparsable {
                command: "cat-file --batch-check".into(),
                what: format!("{} answers to {} names", answers.len(), names.len()),
            });
        }
        let pairs = names.iter().zip(answers);
        Ok(pairs
            .map(|(n, a)| (n.to_string(), Object::parse(a)))
            .collect())
    }

    /// The index and status merged, each file git calls clean checked against its attributes
    /// and sizes.
    fn combine(
        &self,
        index: &[Indexed],
        mut changes: Changes,
        checks: &[Check],
        sizes: &HashMap<String, u64>,
    ) -> State {
        let mut files = super::snapshot::PathMap::with_capacity_and_hasher(
            index.len() + changes.len(),
            Default::default(),
        );
        // `checks` are those of the entries looked at, in order.
        let mut checks = checks.iter();
        for entry in index {
            let check = match entry.is_looked_at() {
                true => checks.next(),
                false => None,
            };
            let path = entry.absolute.clone();
            if entry.stage != 0 {
                let unmerged = Entry {
                    status: Status::Unmerged,
                    index: None,
                };
                files.insert(path, unmerged);
                continue;
            }
            let status = match changes.remove(&entry.path) {
                Some(changed) => changed,
                None => verdict(entry, check, sizes),
            };
            let index = IndexEntry {
                oid: entry.oid.clone(),
                mode: entry.mode,
            };
            let entry = Entry {
                status,
                index: Some(index),
            };
            files.insert(path, entry);
        }
        for (path, status) in changes {
            // A path status names that is not in the index: untracked, or removed from the
            // index (`git rm --cached`), which status also lists as untracked when on disk.
            if matches!(status, Status::Untracked | Status::NestedRepository) {
                let entry = Entry {
                    status,
                    index: None,
                };
                files.insert(self.absolute(&path), entry);
            }
        }
        State { files }
    }

    /// `path` (from the repository's top) below the workspace root; `None` outside it.
    fn below_root<'a>(&self, path: &'a [u8]) -> Option<&'a [u8]> {
        path.strip_prefix(self.prefix.as_slice())
            .filter(|p| !p.is_empty())
    }

    fn absolute(&self, below_root: &[u8]) -> PathBuf {
        self.root.join(OsStr::from_bytes(below_root))
    }

    /// The content of blob `oid`.
    pub fn read_blob(&self, oid: &str) -> Result<Vec<u8>, GitError> {
        let mut blobs = self.read_blobs(&[oid.to_string()])?;
        blobs.pop().ok_or_else(|| GitError::MissingBlob(oid.into()))
    }

    /// The contents of the blobs `oids`, in order, from one `cat-file --batch`.
    pub fn read_blobs(&self, oids: &[String]) -> Result<Vec<Vec<u8>>, GitError> {
        let oids: Vec<String> = (oids.iter())
            .map(|o| self.format.check(o))
            .collect::<Result<_, _>>()?;
        if oids.is_empty() {
            return Ok(Vec::new());
        }
        let input = lines_of(oids.iter().map(String::as_str));
        let out = self.run(&["cat-file", "--batch", "--buffer"], Some(&input))?;
        let mut rest = out.as_slice();
        let mut blobs = Vec::with_capacity(oids.len());
        for oid in &oids {
            let (blob, after) = batch_object(rest, oid)?;
            blobs.push(blob.to_vec());
            rest = after;
        }
        Ok(blobs)
    }

    /// Makes the blobs `oids` reachable from `refs/agent-lsp/journal/<name>`, with those it
    /// kept already: `git gc` never drops them, whatever happens to the user's branches and
    /// index. The ref names one flat tree (entries named by id); nothing of the user's is
    /// touched. Returns the ids that could not be kept (not blobs of the repository).
    pub fn keep(&self, name: &str, oids: &[String]) -> Result<Kept, GitError> {
        // One keep at a time in this process: concurrent ones would only make each other retry.
        let _one = KEEPING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.keep_retrying(name, oids)
    }

    /// [`GitRepo::keep`] without the process's lock: another process may move the ref between
    /// our read and our update (`update-ref` checks the old value), then we read again.
    fn keep_retrying(&self, name: &str, oids: &[String]) -> Result<Kept, GitError> {
        let refname = journal_ref(name)?;
        let oids: Vec<String> = (oids.iter())
            .map(|o| self.format.check(o))
            .collect::<Result<_, _>>()?;
        let mut attempt = 0;
        loop {
            match self.keep_once(&refname, &oids) {
                Ok(kept) => return Ok(kept),
                Err(KeepError::Raced(e)) if attempt + 1 >= KEEP_ATTEMPTS => return Err(e),
                Err(KeepError::Raced(_)) => {
                    attempt += 1;
                    std::thread::sleep(backoff(attempt));
                }
                Err(KeepError::Git(e)) => return Err(e),
            }
        }
    }

    /// One read-merge-update of `refname`.
    fn keep_once(&self, refname: &str, oids: &[String]) -> Result<Kept, KeepError> {
        // One `--batch-check` says what the ref names, which ids are blobs, and which the tree
        // holds already (`<ref>:<id>`): when nothing is new, that is all it costs.
        // (Each lookup scans the tree: for many ids, reading the tree once is cheaper.)
        let look_up = oids.len() <= MAX_LOOKUPS;
        let entries: Vec<String> = match look_up {
            true => oids.iter().map(|o| format!("{refname}:{o}")).collect(),
            false => Vec::new(),
        };
        let names = std::iter::once(refname)
            .chain(oids.iter().map(String::as_str))
            .chain(entries.iter().map(String::as_str));
        let found = self.objects(names)?;
        let old = match found.get(refname) {
            Some(Some(Object {
                id,
                kind: Kind::Tree,
                ..
            })) => Some(id.clone()),
            None | Some(None) => None,
            Some(Some(other)) => {
                return Err(KeepError::Git(GitError::Unparsable {
                    command: "cat-file".into(),
                    what: format!("{refname} names a {:?}, not a tree", other.kind),
                }));
            }
        };
        let is_blob = |name: &str| matches!(found.get(name), Some(Some(b)) if b.kind == Kind::Blob);
        let mut missing: Vec<String> = (oids.iter()).filter(|o| !is_blob(o)).cloned().collect();
        missing.sort();
        missing.dedup();
        let new = (oids.iter().zip(&entries)).any(|(o, entry)| is_blob(o) && !is_blob(entry));
        if look_up && !new {
            return Ok(Kept { missing });
        }
        let mut kept = match &old {
            Some(tree) => self.tree_blobs(tree)?,
            None => HashSet::new(),
        };
        let before = kept.len();
        kept.extend(oids.iter().filter(|o| is_blob(o)).cloned());
        if kept.len() == before {
            return Ok(Kept { missing });
        }
        let tree = self.flat_tree(&kept)?;
        let zero = "0".repeat(self.format.hex_len());
        let expected = old.as_deref().unwrap_or(&zero);
        let args = [
            // Our bookkeeping needs no reflog.
            "-c",
            "core.logAllRefUpdates=false",
            "update-ref",
            refname,
            &tree,
            expected,
        ];
        match self.run(&args, None) {
            Ok(_) => Ok(Kept { missing }),
            Err(e) => Err(KeepError::Raced(e)),
        }
    }

    /// The blobs a kept tree names.
    fn tree_blobs(&self, tree: &str) -> Result<HashSet<String>, GitError> {
        let out = self.run(&["ls-tree", "-z", tree], None)?;
        records(&out)
            .map(|r| {
                // `<mode> blob <oid>\t<name>`
                let head = &r[..memchr::memchr(b'\t', r)?];
                let oid = std::str::from_utf8(head).ok()?.rsplit(' ').next()?;
                self.format.check(oid).ok()
            })
            .collect::<Option<HashSet<_>>>()
            .ok_or_else(|| GitError::Unparsable {
                command: "ls-tree".into(),
                what: "an entry".into(),
            })
    }

    /// A tree of `blobs`, each named by its id (so names never clash).
    fn flat_tree(&self, blobs: &HashSet<String>) -> Result<String, GitError> {
        let mut input = Vec::new();
        for oid in blobs {
            input.extend_from_slice(format!("100644 blob {oid}\t{oid}\0").as_bytes());
        }
        let out = self.run(&["mktree", "-z"], Some(&input))?;
        let tree = String::from_utf8_lossy(&out).trim().to_string();
        self.format.check(&tree).map_err(|_| GitError::Unparsable {
            command: "mktree".into(),
            what: tree,
        })
    }

    /// Lets the blobs kept under `name` go (`git gc` drops them once they are old enough
    /// and nothing else reaches them). Forgetting a name never kept is no error.
    pub fn forget(&self, name: &str) -> Result<(), GitError> {
        let refname = journal_ref(name)?;
        let args = [
            "-c",
            "core.hooksPath=/dev/null",
            "update-ref",
            "-d",
            &refname,
        ];
        self.run(&args, None).map(|_| ())
    }

    /// The commit `HEAD` names; `None` on a branch with no commit yet.
    pub fn head(&self) -> Result<Option<String>, GitError> {
        match self.run(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], None) {
            Ok(out) => {
                let oid = String::from_utf8_lossy(&out).trim().to_string();
                self.format.check(&oid).map(Some)
            }
            Err(GitError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The regular and executable files of `commit`'s tree below the workspace root (absolute,
    /// as [`State`] names them), each with its blob id: one `ls-tree`.
    pub fn tree_files(&self, commit: &str) -> Result<HashMap<PathBuf, String>, GitError> {
        let commit = self.format.check(commit)?;
        let out = self.run(&["ls-tree", "-r", "-z", "--full-tree", &commit], None)?;
        let mut files = HashMap::new();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            // `<mode> SP <type> SP <oid> TAB <path>`
            let unparsable = || GitError::Unparsable {
                command: "ls-tree".into(),
                what: String::from_utf8_lossy(record).into_owned(),
            };
            let tab = record
                .iter()
                .position(|b| *b == b'\t')
                .ok_or_else(unparsable)?;
            let (head, path) = (&record[..tab], &record[tab + 1..]);
            let mut fields = head.split(|b| *b == b' ');
            let (Some(mode), Some(_kind), Some(oid)) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(unparsable());
            };
            let is_file = std::str::from_utf8(mode)
                .ok()
                .and_then(Mode::of)
                .is_some_and(Mode::is_file);
            let Some(below) = self.below_root(path) else {
                continue;
            };
            if is_file {
                let oid = self.format.check(&String::from_utf8_lossy(oid))?;
                files.insert(self.absolute(below), oid);
            }
        }
        Ok(files)
    }

    /// The names blobs are kept under, sorted.
    pub fn kept(&self) -> Result<Vec<String>, GitError> {
        let args = ["for-each-ref", "--format=%(refname)", REF_PREFIX];
        let out = self.run(&args, None)?;
        let text = String::from_utf8_lossy(&out);
        let mut names: Vec<String> = (text.lines())
            .filter_map(|l| l.strip_prefix(REF_PREFIX))
            .map(String::from)
            .collect();
        names.sort();
        Ok(names)
    }

    /// Runs `git <args>` in the workspace root, `input` on its stdin (else none); its stdout.
    fn run<S: AsRef<OsStr>>(&self, args: &[S], input: Option<&[u8]>) -> Result<Vec<u8>, GitError> {
        self.run_with(args, input, &[], None)
    }

    /// [`GitRepo::run`] with `env` added, and on our `private` copy of the index when given:
    /// git may then take its optional lock and refresh that copy's stat data (never split:
    /// a split index would write a shared index into the repository).
    fn run_with<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Option<&[u8]>,
        env: &[(String, String)],
        private: Option<&Path>,
    ) -> Result<Vec<u8>, GitError> {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.root);
        match private {
            Some(_) => cmd.args(["-c", "core.splitIndex=false"]),
            None => cmd.arg("--no-optional-locks"),
        };
        cmd.args(COMMON_ARGS)
            .args(args)
            .stdin(match input {
                Some(_) => Stdio::piped(),
                None => Stdio::null(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.env.apply(&mut cmd);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        if let Some(index) = private {
            cmd.env("GIT_INDEX_FILE", index)
                .env("GIT_OPTIONAL_LOCKS", "1");
        }
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GitError::NotInstalled,
            _ => GitError::Spawn(e),
        })?;
        let stdin = child.stdin.take();
        let output = std::thread::scope(|s| {
            if let (Some(mut stdin), Some(input)) = (stdin, input) {
                // Written beside the reads: git answers as it reads, and a full pipe both ways
                // would stall. A write error means git stopped reading; its status says why.
                s.spawn(move || {
                    let _ = stdin.write_all(input);
                });
            }
            child.wait_with_output()
        })
        .map_err(GitError::Spawn)?;
        if output.status.success() {
            return Ok(output.stdout);
        }
        let mut stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
        if stderr.len() > STDERR_KEPT {
            let cut = (0..=STDERR_KEPT)
                .rev()
                .find(|i| stderr.is_char_boundary(*i));
            stderr.truncate(cut.unwrap_or(0));
        }
        let command: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        Err(GitError::Failed {
            command: command.join(" "),
            status: output.status.to_string(),
            stderr,
        })
    }

    #[cfg(test)]
    fn open_with_env(workspace_root: &Path, set: &[(&str, &OsStr)]) -> Result<GitRepo, GitError> {
        let mut env = Env::inherited();
        env.set.extend(
            set.iter()
                .map(|(k, v)| (OsString::from(k), v.to_os_string())),
        );
        GitRepo::open_with(workspace_root, env)
    }
}

/// Before every call's own arguments (after `--no-optional-locks`, unless the call is on our
/// private index). Objects as stored (a `refs/replace/` object would
/// stand in for the blob we read). No program named by the repository's configuration runs:
/// no fsmonitor hook (status would ask it) and no hooks (`update-ref` runs
/// `reference-transaction`; our bookkeeping is no event of the user's).
const COMMON_ARGS: [&str; 5] = [
    "--no-replace-objects",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
];

/// `GIT_CONFIG_COUNT`/`KEY`/`VALUE` settings that switch the filter `drivers` off (in the
/// environment, where a name holding `=` or spaces is no problem; git before 2.31 ignores it).
fn no_filters(drivers: &[String]) -> Vec<(String, String)> {
    let settings: Vec<(String, &str)> = (drivers.iter())
        .flat_map(|d| {
            [
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ]
            .map(|(var, value)| (format!("filter.{d}.{var}"), value))
        })
        .collect();
    let mut env = vec![("GIT_CONFIG_COUNT".to_string(), settings.len().to_string())];
    for (i, (key, value)) in settings.into_iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), key));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), value.to_string()));
    }
    env
}

fn panicked(command: &str) -> GitError {
    GitError::Unparsable {
        command: command.into(),
        what: "its reader thread panicked".into(),
    }
}

/// Copies the user's index (open as `file`) to `copy` through a temporary file in `dir`, with
/// the index's modification time (git tells racily clean entries by it, so it decides as on
/// the user's).
fn copy_index(file: &mut std::fs::File, dir: &Path, copy: &Path) -> std::io::Result<()> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let tmp = dir.join("index.new");
    std::fs::write(&tmp, &bytes)?;
    let times = std::fs::FileTimes::new().set_modified(file.metadata()?.modified()?);
    std::fs::File::options()
        .write(true)
        .open(&tmp)?
        .set_times(times)?;
    std::fs::rename(&tmp, copy)
}

/// How many of the workspace's files changed (their change time, seconds and nanoseconds)
/// after a time: what `status` may have to hash because the index's stat data is older.
pub type ChangedAfter<'a> = dyn Fn((i64, i64)) -> usize + Sync + 'a;

/// Up to this many files changed since the index was written, `status` reads the user's
/// index in place: hashing them costs less than a copy of a large index (1.9 MB for 15k files).
pub const FEW_CHANGED: usize = 64;

/// A private folder (mode 0700, removed with the last clone of the [`GitRepo`]) holding our
/// copy of the index, and which state of the user's index it was copied from.
#[derive(Debug)]
struct PrivateIndex {
    dir: PathBuf,
    copied: Option<IndexStamp>,
}

impl PrivateIndex {
    fn create() -> std::io::Result<PrivateIndex> {
        use std::os::unix::fs::DirBuilderExt;
        let temp = std::env::temp_dir();
        remove_orphaned_folders(&temp);
        let name = format!(
            "{PRIVATE_PREFIX}{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        );
        let dir = temp.join(name);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(PrivateIndex { dir, copied: None })
    }
}

/// The start of a private folder's name; the creating process's id follows.
const PRIVATE_PREFIX: &str = "agent-lsp-git-";

/// Removes the private folders of processes that are gone (one that exited while git worked,
/// or was killed, never ran its `Drop`). A folder whose process id was taken again since is
/// left to that process's end.
fn remove_orphaned_folders(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = (name.to_str())
            .and_then(|n| n.strip_prefix(PRIVATE_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        let Some(pid) = pid else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        let ours = entry.metadata().is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == nix::unistd::Uid::effective().as_raw()
        });
        if !alive && ours {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for PrivateIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What tells one version of the index file from another (git replaces it by renaming a new
/// file over it: a new inode, times and size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IndexStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl IndexStamp {
    fn of(meta: &std::fs::Metadata) -> IndexStamp {
        use std::os::unix::fs::MetadataExt;
        IndexStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// What `ls-files` says.
#[derive(Debug, Default)]
struct Index {
    entries: Vec<Indexed>,
    /// `.gitattributes` of folders above the workspace that are in the index, not on disk.
    outside_attributes: Vec<PathBuf>,
}

/// What the configuration says that [`GitRepo::state`] needs.
#[derive(Debug, Default)]
struct Config {
    /// The filter drivers defined (`filter.<name>.*`).
    drivers: Vec<String>,
    /// `core.attributesFile`, as written (`Some(None)`: set without a value).
    attributes_file: Option<Option<Vec<u8>>>,
    /// `attr.tree`: attributes come from a tree as well.
    attr_tree: bool,
}

/// Whether the attributes file `path` mentions a [`FILTERING`] attribute; a file that cannot
/// be read (other than by not being there) might.
fn mentions_filtering(path: &Path) -> bool {
    match std::fs::read(path) {
        Ok(text) => FILTERING
            .iter()
            .any(|word| memchr::memmem::find(&text, word.as_bytes()).is_some()),
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        ),
    }
}

/// A stage entry of the index, its path below the workspace root.
#[derive(Debug)]
struct Indexed {
    path: Vec<u8>,
    absolute: PathBuf,
    mode: Mode,
    oid: String,
    stage: u8,
    not_looked: bool,
}

/// What `status` says of the paths it lists, by path below the root.
type Changes = HashMap<Vec<u8>, Status>;

impl Indexed {
    /// A stage-0 regular or executable file git looks at: the files [`Check`]ed.
    fn is_looked_at(&self) -> bool {
        self.stage == 0 && self.mode.is_file() && !self.not_looked
    }
}

/// The attributes that let git's clean hide any difference in bytes.
const FILTERING: [&str; 2] = ["filter", "working-tree-encoding"];

/// What decides whether a file git calls clean holds its blob's bytes.
struct Check {
    /// A [`FILTERING`] attribute is set.
    filtered: bool,
    /// Its size, if it is a regular file.
    on_disk: Option<u64>,
}

/// The status of a stage-0 entry `status` did not list; `check` for the entries looked at.
fn verdict(entry: &Indexed, check: Option<&Check>, sizes: &HashMap<String, u64>) -> Status {
    if entry.mode == Mode::Gitlink {
        return Status::Submodule;
    }
    if entry.not_looked {
        return Status::Unverified(Unverified::NotLooked);
    }
    let Some(check) = check else {
        // A symlink (its blob is its target), or another kind git alone speaks for.
        return Status::Clean;
    };
    if check.filtered {
        return Status::Unverified(Unverified::Filtered);
    }
    let Some(blob) = sizes.get(&entry.oid) else {
        return Status::Unverified(Unverified::BlobMissing);
    };
    match check.on_disk {
        Some(size) if size == *blob => Status::Clean,
        _ => Status::Unverified(Unverified::SizeDiffers),
    }
}

/// One record of `status --porcelain=v2 -z`.
enum StatusLine<'a> {
    /// `1 XY sub mH mI mW hH hI path`: the worktree's side (`Y`) as a status, `None` when it
    /// matches the index.
    Changed {
        path: &'a [u8],
        worktree: Option<Status>,
    },
    /// `u XY sub m1 m2 m3 mW h1 h2 h3 path`.
    Unmerged(&'a [u8]),
    /// `? path`.
    Untracked(&'a [u8]),
    /// `2 …`: a rename, followed by its original path.
    Renamed,
    /// `! path` (ignored), `# …` (headers).
    Other,
}

impl<'a> StatusLine<'a> {
    fn parse(record: &'a [u8]) -> Option<StatusLine<'a>> {
        let fields = |n: usize| record.splitn(n + 1, |b| *b == b' ').nth(n);
        Some(match record.first()? {
            b'1' => {
                let xy = record.get(2..4)?;
                let worktree = match xy[1] {
                    b'.' => None,
                    b'D' => Some(Status::Deleted),
                    b'T' => Some(Status::TypeChanged),
                    _ => Some(Status::Modified),
                };
                StatusLine::Changed {
                    path: fields(8)?,
                    worktree,
                }
            }
            b'u' => StatusLine::Unmerged(fields(10)?),
            b'?' => StatusLine::Untracked(record.get(2..)?),
            b'2' => StatusLine::Renamed,
            b'!' | b'#' => StatusLine::Other,
            _ => return None,
        })
    }
}

/// The NUL-terminated records of `-z` output.
fn records(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.strip_suffix(b"\0")
        .unwrap_or(out)
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
}

/// An object as `cat-file --batch-check` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Object {
    id: String,
    kind: Kind,
    size: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Blob,
    Tree,
    Commit,
    Tag,
}

impl Object {
    /// `<id> <type> <size>`; `None` for `<name> missing` (or `ambiguous`).
    fn parse(line: &[u8]) -> Option<Object> {
        let text = std::str::from_utf8(line).ok()?;
        let mut fields = text.split(' ');
        let (id, kind, size) = (fields.next()?, fields.next()?, fields.next()?);
        let kind = match kind {
            "blob" => Kind::Blob,
            "tree" => Kind::Tree,
            "commit" => Kind::Commit,
            "tag" => Kind::Tag,
            _ => return None,
        };
        Some(Object {
            id: id.to_string(),
            kind,
            size: size.parse().ok()?,
        })
    }
}

/// `items`, one a line: `--batch` input (ids and ref names never hold a line break).
fn lines_of<'a>(items: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        out.extend_from_slice(item.as_bytes());
        out.push(b'\n');
    }
    out
}

/// One `--batch` answer for `oid` at the start of `out`: the blob and what follows it.
fn batch_object<'a>(out: &'a [u8], oid: &str) -> Result<(&'a [u8], &'a [u8]), GitError> {
    let unparsable = |what: &str| GitError::Unparsable {
        command: "cat-file --batch".into(),
        what: what.into(),
    };
    let end = memchr::memchr(b'\n', out).ok_or_else(|| unparsable("no header"))?;
    let header = std::str::from_utf8(&out[..end]).map_err(|_| unparsable("header"))?;
    let mut fields = header.split(' ');
    let (name, kind, size) = (fields.next(), fields.next(), fields.next());
    if name != Some(oid) {
        return Err(unparsable("an answer for another object"));
    }
    let (Some("blob"), Some(size)) = (kind, size) else {
        return Err(GitError::MissingBlob(oid.into()));
    };
    let size: usize = size.parse().map_err(|_| unparsable("size"))?;
    let body = &out[end + 1..];
    let (blob, rest) = (body.get(..size), body.get(size..));
    match (blob, rest.and_then(|r| r.strip_prefix(b"\n"))) {
        (Some(blob), Some(rest)) => Ok((blob, rest)),
        _ => Err(unparsable("a short blob")),
    }
}

/// The size of a regular file (not following a symlink); `None` for anything else.
fn file_size(path: &Path) -> Option<u64> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type().is_file().then_some(meta.len())
}

/// `refs/agent-lsp/journal/<name>`, when `name` is `/`-separated components of letters,
/// digits, `-`, `_` and `.` (no component starting with `.` or ending in `.lock`): always a
/// valid ref name, never one that escapes the prefix.
fn journal_ref(name: &str) -> Result<String, GitError> {
    let component_ok = |c: &str| {
        !c.is_empty()
            && !c.starts_with('.')
            && !c.ends_with(".lock")
            && !c.contains("..")
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    match name.split('/').all(component_ok) {
        true => Ok(format!("{REF_PREFIX}{name}")),
        false => Err(GitError::BadName(name.into())),
    }
}

/// Why one attempt of [`GitRepo::keep`] failed.
enum KeepError {
    /// The ref update was refused: most likely another writer moved it.
    Raced(GitError),
    Git(GitError),
}

impl From<GitError> for KeepError {
    fn from(e: GitError) -> Self {
        KeepError::Git(e)
    }
}

/// A wait growing with `attempt`, jittered so two writers that collided part ways.
fn backoff(attempt: u32) -> std::time::Duration {
    let jitter = (std::time::SystemTime::now())
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() % 4_000_000)
        .unwrap_or(0);
    std::time::Duration::from_millis(u64::from(attempt.min(8)) * 2)
        + std::time::Duration::from_nanos(u64::from(jitter))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
#[path = "git_tests.rs"]
mod tests;
