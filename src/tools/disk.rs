//! The [`Workspace`] on the local disk: atomic writes (a temporary file renamed over the old
//! one, permissions kept), every file reached beneath its root's directory handle.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::beneath::{Kind, Resolver};
use super::content::ContentId;
use super::error::{FileOp, WorkspaceError};
use super::paths;
use super::workspace::{FileSnapshot, Workspace, WriteOutcome, WriteRequest};

/// A [`Workspace`] on the local disk. Every file is reached beneath its root's handle
/// ([`super::beneath`]), never by its path again after [`Workspace::resolve`] checked it.
#[derive(Clone, Debug)]
pub struct DiskWorkspace {
    roots: Arc<paths::Roots>,
}

impl DiskWorkspace {
    /// A workspace rooted at `root`; `extra_roots` are further folders tools may touch (for
    /// example a shared scratch directory). Roots are canonicalised; a missing root is an error.
    pub fn new(root: impl AsRef<Path>, extra_roots: Vec<PathBuf>) -> std::io::Result<Self> {
        Self::with_resolver(root, extra_roots, None)
    }

    /// As [`DiskWorkspace::new`], with the walk beneath the roots chosen instead of probed:
    /// tests run the fallback of kernels without `openat2` through it.
    pub fn with_resolver(
        root: impl AsRef<Path>,
        extra_roots: Vec<PathBuf>,
        resolver: Option<Resolver>,
    ) -> std::io::Result<Self> {
        let roots = paths::Roots::with_resolver(root.as_ref(), &extra_roots, resolver)?;
        Ok(DiskWorkspace {
            roots: Arc::new(roots),
        })
    }

    /// Reads a file from disk (refusing directories with a clear error), in one trip to the
    /// blocking pool: every trip is a thread hand-off each way, which costs more than reading a
    /// small source file (issue 6, scenario 4).
    pub async fn read_disk(&self, path: PathBuf) -> Result<FileSnapshot, WorkspaceError> {
        let roots = self.roots.clone();
        blocking(move || read_blocking(&roots, &path)).await
    }

    /// Writes a file atomically: checks `expected`, writes a sibling temp file with the old
    /// file's permissions, then renames it over the target.
    pub async fn write_disk(
        &self,
        path: PathBuf,
        content: Vec<u8>,
        expected: Option<ContentId>,
    ) -> Result<WriteOutcome, WorkspaceError> {
        let roots = self.roots.clone();
        // Blocking I/O in one piece: the check and the rename should be as close as possible.
        blocking(move || write_blocking(&roots, &path, &content, expected)).await
    }

    /// Deletes a file on disk; a file already gone is no error.
    pub async fn remove_disk(&self, path: PathBuf) -> Result<(), WorkspaceError> {
        let roots = self.roots.clone();
        blocking(move || remove_blocking(&roots, &path)).await
    }
}

impl Workspace for DiskWorkspace {
    fn roots(&self) -> &paths::Roots {
        &self.roots
    }

    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<FileSnapshot, WorkspaceError>> {
        let disk = self.clone();
        Box::pin(async move { disk.read_disk(path).await })
    }

    fn write(&self, req: WriteRequest) -> BoxFuture<'static, Result<WriteOutcome, WorkspaceError>> {
        let disk = self.clone();
        Box::pin(async move { disk.write_disk(req.path, req.content, req.expected).await })
    }

    fn remove(&self, path: PathBuf) -> BoxFuture<'static, Result<(), WorkspaceError>> {
        let disk = self.clone();
        Box::pin(async move { disk.remove_disk(path).await })
    }
}

/// Runs `work` on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, WorkspaceError> + Send + 'static,
) -> Result<T, WorkspaceError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| WorkspaceError::Io {
            path: String::new(),
            message: format!("file task failed: {e}"),
        })?
}

fn read_blocking(roots: &paths::Roots, path: &Path) -> Result<FileSnapshot, WorkspaceError> {
    let io_err = |e: std::io::Error| WorkspaceError::from_io(path, &e);
    let Some((dir, name)) = roots.parent(path, FileOp::Read)? else {
        return Err(WorkspaceError::NotFound(path.display().to_string()));
    };
    let mut file = dir.open_read(&name)?;
    let meta = file.metadata().map_err(io_err)?;
    if meta.is_dir() {
        return Err(WorkspaceError::IsDirectory(path.display().to_string()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(io_err)?;
    Ok(FileSnapshot::from_disk(bytes))
}

/// What names a file [`DiskWorkspace::write_disk`] is writing, until its rename:
/// `.<name>.agent-lsp-<hex>.tmp`.
const TEMP_MARK: &str = ".agent-lsp-";
const TEMP_SUFFIX: &str = ".tmp";

/// Whether `name` is one of [`DiskWorkspace::write_disk`]'s temporary files: the journal's
/// workspace scan skips them, so a `write` running beside a `bash` command is not taken for a
/// file the command made.
pub fn is_own_temp_file(name: &str) -> bool {
    name.starts_with('.')
        && name.ends_with(TEMP_SUFFIX)
        && name
            .rfind(TEMP_MARK)
            .map(|at| &name[at + TEMP_MARK.len()..name.len() - TEMP_SUFFIX.len()])
            .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn temp_name(name: &OsStr) -> OsString {
    OsString::from(format!(
        ".{}{TEMP_MARK}{}{TEMP_SUFFIX}",
        name.to_string_lossy(),
        uuid::Uuid::new_v4().simple()
    ))
}

fn write_blocking(
    roots: &paths::Roots,
    path: &Path,
    content: &[u8],
    expected: Option<ContentId>,
) -> Result<WriteOutcome, WorkspaceError> {
    use std::io::Write;
    let io_err = |e: std::io::Error| WorkspaceError::from_io(path, &e);
    let (dir, name) = roots.parent_created(path, FileOp::Write)?;
    let existing = match dir.kind(&name)? {
        Kind::Missing => None,
        Kind::Directory => return Err(WorkspaceError::IsDirectory(path.display().to_string())),
        // `resolve` followed every symlink, so one here appeared since.
        Kind::Symlink => return Err(dir.changed(&name)),
        // Atomic rename would bypass a read-only file's protection: honour it explicitly.
        Kind::File { mode } if mode & 0o222 == 0 => {
            return Err(WorkspaceError::PermissionDenied(path.display().to_string()));
        }
        Kind::File { mode } => Some(mode),
    };
    if let (Some(_), Some(expected)) = (existing, expected) {
        let mut current = Vec::new();
        std::io::Read::read_to_end(&mut dir.open_read(&name)?, &mut current).map_err(io_err)?;
        // The disk's content is a hash: an expected buffer revision cannot be it.
        if ContentId::of(&current).same(&expected) != Some(true) {
            return Err(WorkspaceError::Conflict(path.display().to_string()));
        }
    }
    let tmp = temp_name(&name);
    let result = (|| {
        let mut file = dir.create_new(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
        if let Some(mode) = existing {
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        dir.rename(&tmp, &name)
    })();
    if let Err(e) = result {
        // Best effort: never leave the temp file behind.
        let _ = dir.unlink(&tmp);
        return Err(io_err(e));
    }
    Ok(WriteOutcome {
        id: ContentId::of(content),
        created: existing.is_none(),
        via_editor: false,
        unsaved: None,
    })
}

fn remove_blocking(roots: &paths::Roots, path: &Path) -> Result<(), WorkspaceError> {
    // A directory on the way is gone: so is the file.
    let Some((dir, name)) = roots.parent(path, FileOp::Delete)? else {
        return Ok(());
    };
    match dir.unlink(&name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(WorkspaceError::from_io(path, &e)),
    }
}
