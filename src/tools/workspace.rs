//! The `Workspace`: the one door through which every tool touches files.
//!
//! Tools compute whole new contents; the workspace decides how they land. The disk
//! implementation ([`DiskWorkspace`]) writes atomically (temp file + rename, permissions kept);
//! the daemon implements the same trait over the editor's open buffers (`workspace/applyEdit`)
//! and falls back to the disk for files that are not open.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::paths;

/// Why a workspace operation failed. Every message is written for the model to read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The path leaves the workspace root and every extra root (`..`, absolute, symlink).
    #[error(
        "Path '{path}' is outside the workspace ({root}). Only files under the workspace folder{extra} can be accessed."
    )]
    OutsideWorkspace {
        path: String,
        root: String,
        /// Text naming the extra roots, empty when there are none.
        extra: String,
    },
    /// The path could not be interpreted at all (empty, `~user`, NUL byte…).
    #[error("Invalid path '{path}': {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("File not found: {0}")]
    NotFound(String),
    #[error("Is a directory: {0}")]
    IsDirectory(String),
    #[error("Permission denied: {0}")]
    PermissionDenied(String),
    /// The file changed since the caller's snapshot: it must be read again.
    #[error(
        "File {0} has been modified since it was last read (by the user, an editor or another tool). Read it again before changing it."
    )]
    Conflict(String),
    /// The editor refused or failed to apply the change.
    #[error("The editor did not apply the change to {path}: {reason}")]
    Editor { path: String, reason: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

impl WorkspaceError {
    /// Maps an I/O error on `path` to the most specific variant.
    pub fn from_io(path: &Path, e: &std::io::Error) -> Self {
        let shown = path.display().to_string();
        match e.kind() {
            std::io::ErrorKind::NotFound => WorkspaceError::NotFound(shown),
            std::io::ErrorKind::PermissionDenied => WorkspaceError::PermissionDenied(shown),
            std::io::ErrorKind::IsADirectory => WorkspaceError::IsDirectory(shown),
            _ => WorkspaceError::Io {
                path: shown,
                message: e.to_string(),
            },
        }
    }
}

/// Identifies one version of a file's content, so a later write can tell it changed.
///
/// Content-based (length + a 64-bit hash), so the disk and an editor buffer holding the same
/// text agree, and touching a file without changing it is not a conflict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    pub len: u64,
    pub hash: u64,
}

impl Fingerprint {
    /// The fingerprint of `bytes`.
    ///
    /// A multiply-xor hash over four independent 64-bit lanes (several bytes per cycle, where
    /// SipHash managed ~1 byte per cycle: an edit of a 10 MB buffer fingerprints it three
    /// times). It detects changes; it is not meant to resist crafted collisions. Deterministic,
    /// so stable within and across processes.
    pub fn of(bytes: &[u8]) -> Self {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_le_bytes(w)
        };
        let mut lanes: [u64; 4] = [
            0x243F_6A88_85A3_08D3,
            0x1319_8A2E_0370_7344,
            0xA409_3822_299F_31D0,
            0x082E_FA98_EC4E_6C89,
        ];
        let mut blocks = bytes.chunks_exact(32);
        for block in &mut blocks {
            for (lane, chunk) in lanes.iter_mut().zip(block.chunks_exact(8)) {
                *lane = (*lane ^ word(chunk)).wrapping_mul(K).rotate_left(29);
            }
        }
        let mut h = bytes.len() as u64;
        for lane in lanes {
            h = (h ^ lane).wrapping_mul(K).rotate_left(31);
        }
        for &b in blocks.remainder() {
            h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(23);
        }
        h ^= h >> 29;
        h = h.wrapping_mul(K);
        h ^= h >> 32;
        Fingerprint {
            len: bytes.len() as u64,
            hash: h,
        }
    }
}

/// A file's content as the user sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSnapshot {
    pub bytes: Vec<u8>,
    pub fingerprint: Fingerprint,
    /// True when the bytes came from an open editor buffer rather than the disk.
    pub from_editor: bool,
}

impl FileSnapshot {
    pub fn from_disk(bytes: Vec<u8>) -> Self {
        FileSnapshot {
            fingerprint: Fingerprint::of(&bytes),
            bytes,
            from_editor: false,
        }
    }
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The fingerprint of the content now in place.
    pub fingerprint: Fingerprint,
    /// The file did not exist before.
    pub created: bool,
    /// The change went to an editor buffer (not yet saved) rather than the disk.
    pub via_editor: bool,
}

/// Where tools read and write files. Implementations must be cheap to share (`Arc<dyn Workspace>`).
pub trait Workspace: Send + Sync {
    /// The workspace folder (canonical).
    fn root(&self) -> &Path;

    /// Resolves a model-supplied path (`@` prefix stripped, `~` expanded, special spaces
    /// normalised, relative to the root) to a canonical absolute path. Refuses escapes (`..`,
    /// absolute paths elsewhere, symlinks pointing out) unless under a configured extra root.
    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError>;

    /// The content as the user sees it: the editor buffer when open, else the disk.
    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<FileSnapshot, WorkspaceError>>;

    /// Replaces the whole content (creating parent directories). Fails with
    /// [`WorkspaceError::Conflict`] if `expected` no longer matches the current content; a file
    /// that does not exist has nothing to clobber, so `expected` is then ignored.
    fn write(
        &self,
        path: PathBuf,
        content: Vec<u8>,
        expected: Option<Fingerprint>,
    ) -> BoxFuture<'static, Result<WriteOutcome, WorkspaceError>>;

    /// Open documents overlaying the disk (path → text), for `grep`/`find`. Disk: none.
    fn open_documents(&self) -> Vec<(PathBuf, String)> {
        Vec::new()
    }
}

/// A [`Workspace`] on the local disk.
#[derive(Clone, Debug)]
pub struct DiskWorkspace {
    roots: Arc<paths::Roots>,
}

impl DiskWorkspace {
    /// A workspace rooted at `root`; `extra_roots` are further folders tools may touch (for
    /// example a shared scratch directory). Roots are canonicalised; a missing root is an error.
    pub fn new(root: impl AsRef<Path>, extra_roots: Vec<PathBuf>) -> std::io::Result<Self> {
        Ok(DiskWorkspace {
            roots: Arc::new(paths::Roots::new(root.as_ref(), &extra_roots)?),
        })
    }

    /// The resolution rules, shared with other implementations (the daemon's).
    pub fn roots(&self) -> &paths::Roots {
        &self.roots
    }
}

impl Workspace for DiskWorkspace {
    fn root(&self) -> &Path {
        self.roots.root()
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.roots.resolve(path)
    }

    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<FileSnapshot, WorkspaceError>> {
        Box::pin(async move { read_disk(&path).await })
    }

    fn write(
        &self,
        path: PathBuf,
        content: Vec<u8>,
        expected: Option<Fingerprint>,
    ) -> BoxFuture<'static, Result<WriteOutcome, WorkspaceError>> {
        Box::pin(async move { write_disk(&path, content, expected).await })
    }
}

/// Reads a file from disk (refusing directories with a clear error).
pub async fn read_disk(path: &Path) -> Result<FileSnapshot, WorkspaceError> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| WorkspaceError::from_io(path, &e))?;
    if meta.is_dir() {
        return Err(WorkspaceError::IsDirectory(path.display().to_string()));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| WorkspaceError::from_io(path, &e))?;
    Ok(FileSnapshot::from_disk(bytes))
}

/// Writes a file atomically: checks `expected`, writes a sibling temp file with the old file's
/// permissions, then renames it over the target.
pub async fn write_disk(
    path: &Path,
    content: Vec<u8>,
    expected: Option<Fingerprint>,
) -> Result<WriteOutcome, WorkspaceError> {
    let path = path.to_path_buf();
    // Blocking I/O in one piece: the check and the rename should be as close as possible.
    tokio::task::spawn_blocking(move || write_disk_blocking(&path, &content, expected))
        .await
        .map_err(|e| WorkspaceError::Io {
            path: String::new(),
            message: format!("write task failed: {e}"),
        })?
}

fn write_disk_blocking(
    path: &Path,
    content: &[u8],
    expected: Option<Fingerprint>,
) -> Result<WriteOutcome, WorkspaceError> {
    use std::io::Write;
    let io_err = |e: std::io::Error| WorkspaceError::from_io(path, &e);
    let existing = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(WorkspaceError::IsDirectory(path.display().to_string()));
        }
        // Atomic rename would bypass a read-only file's protection: honour it explicitly.
        Ok(meta) if meta.permissions().readonly() => {
            return Err(WorkspaceError::PermissionDenied(path.display().to_string()));
        }
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(e)),
    };
    if let (Some(_), Some(expected)) = (&existing, expected) {
        let current = std::fs::read(path).map_err(io_err)?;
        if Fingerprint::of(&current) != expected {
            return Err(WorkspaceError::Conflict(path.display().to_string()));
        }
    }
    let parent = path.parent().ok_or_else(|| WorkspaceError::InvalidPath {
        path: path.display().to_string(),
        reason: "it has no parent directory".into(),
    })?;
    std::fs::create_dir_all(parent).map_err(|e| WorkspaceError::from_io(parent, &e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(
        ".{name}.agent-lsp-{}.tmp",
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
        if let Some(meta) = &existing {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        // Best effort: never leave the temp file behind.
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err(e));
    }
    Ok(WriteOutcome {
        fingerprint: Fingerprint::of(content),
        created: existing.is_none(),
        via_editor: false,
    })
}

#[cfg(test)]
mod fingerprint_tests {
    use super::Fingerprint;
    use std::collections::HashSet;

    #[test]
    fn any_one_byte_change_or_block_swap_changes_the_fingerprint() {
        let base: Vec<u8> = (0..200u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut seen = HashSet::new();
        assert!(seen.insert(Fingerprint::of(&base)));
        for at in 0..base.len() {
            for delta in [1u8, 0x80] {
                let mut b = base.clone();
                b[at] ^= delta;
                assert!(seen.insert(Fingerprint::of(&b)), "collision at {at}");
            }
        }
        let mut swapped = base.clone();
        swapped[..32].rotate_left(8);
        assert_ne!(Fingerprint::of(&swapped), Fingerprint::of(&base));
        let mut lanes = base.clone();
        let (a, b) = lanes[..64].split_at_mut(32);
        a.swap_with_slice(b);
        assert_ne!(Fingerprint::of(&lanes), Fingerprint::of(&base));
        assert_eq!(Fingerprint::of(&base), Fingerprint::of(&base.clone()));
    }
}
