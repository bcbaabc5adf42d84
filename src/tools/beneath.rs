//! Files reached beneath a root's directory handle, never by path again (issue 30: no confused
//! deputy).
//!
//! [`super::paths::Roots::resolve`] checks a model-supplied path once. Were the path used again
//! afterwards (`create_dir_all`, `File::create`, `rename`), each call would resolve it anew and
//! follow whatever symlink a process the agent's `bash` left running swapped in meanwhile, out
//! of the workspace. So each root keeps a directory handle, opened once (renaming the root
//! later redirects nothing), and the disk workspace reaches every file it reads, writes,
//! creates, renames or deletes from that handle without following a symlink at any component:
//! the path's directories are opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`, missing ones made with `mkdirat` one at a time, and the file is
//! named only relative to its directory's handle (`openat(O_NOFOLLOW)`, `renameat`,
//! `unlinkat`).
//!
//! No symlinks at all, not merely none leading out: `resolve` canonicalised the path, so a
//! symlink inside the workspace that the model's path went through (one pointing inside, which
//! is allowed) has already been replaced by its target, and a symlink met here is one that
//! appeared since the check. That fails with [`WorkspaceError::PathChanged`], and nothing is
//! read, written or deleted.
//!
//! Without `openat2` (Linux before 5.6, or a seccomp filter that refuses it, found by a probe
//! when the roots are opened) each directory is opened from the last one's handle with
//! `openat(O_NOFOLLOW | O_DIRECTORY)`: as race-free, one call per component
//! ([`Resolver::Components`]); the same walk also finds which component failed, and creates.
//!
//! nix rather than cap-std: nix is already a dependency and wraps exactly these calls, where
//! cap-std would add its own crates for the same few syscalls.
//!
//! A directory moved out of the workspace after its handle was opened still receives the write;
//! moving it needed write access where it went, so it lands where the mover could write anyway.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, OpenHow, ResolveFlag, openat, openat2, renameat};
use nix::sys::stat::{Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};

use super::error::{FileOp, WorkspaceError};

/// How the directories of a path are opened beneath its root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    /// One `openat2` for the whole chain (Linux 5.6+).
    Openat2,
    /// One `openat(O_NOFOLLOW)` per component, where `openat2` is missing.
    Components,
}

impl Resolver {
    /// What this kernel supports, probed on a root's handle.
    fn probe(root: &OwnedFd) -> Resolver {
        Resolver::after_probe(openat2(root, ".", dir_how()).map(drop))
    }

    /// `openat2` when the probe worked; anything else (`ENOSYS` before Linux 5.6, `EPERM` from
    /// a seccomp filter that does not know it) falls back to the walk, which works everywhere.
    fn after_probe(probe: nix::Result<()>) -> Resolver {
        match probe {
            Ok(()) => Resolver::Openat2,
            Err(_) => Resolver::Components,
        }
    }
}

/// `openat2` for a directory handle: no symlink at any component, nothing above the start.
fn dir_how() -> OpenHow {
    OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        )
}

/// One root: its canonical path and a handle on it.
#[derive(Debug)]
struct RootDir {
    path: PathBuf,
    fd: OwnedFd,
}

/// The handles of a workspace's roots (the root first, then the extra roots).
#[derive(Debug)]
pub struct Beneath {
    roots: Vec<RootDir>,
    resolver: Resolver,
}

impl Beneath {
    /// Opens a handle on each of `roots` (canonical paths); `resolver: None` probes the kernel.
    pub fn open(roots: &[PathBuf], resolver: Option<Resolver>) -> std::io::Result<Beneath> {
        let roots = roots
            .iter()
            .map(|path| {
                let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
                let fd = openat(AT_FDCWD, path, flags, Mode::empty())?;
                Ok(RootDir {
                    path: path.clone(),
                    fd,
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        let resolver = match (resolver, roots.first()) {
            (Some(chosen), _) => chosen,
            (None, Some(root)) => Resolver::probe(&root.fd),
            (None, None) => Resolver::Components,
        };
        Ok(Beneath { roots, resolver })
    }

    /// How these roots' paths are walked.
    pub fn resolver(&self) -> Resolver {
        self.resolver
    }

    /// The directory holding `path` (canonical, under a root) and the file's name in it;
    /// `None` when a directory on the way does not exist.
    pub fn parent(
        &self,
        path: &Path,
        op: FileOp,
    ) -> Result<Option<(Dir, OsString)>, WorkspaceError> {
        let place = self.place(path)?;
        let dir = self.open_dirs(&place, path, op, false)?;
        Ok(dir.map(|dir| (dir, place.name.to_os_string())))
    }

    /// The directory holding `path`, created with its missing parents, and the file's name.
    pub fn parent_created(
        &self,
        path: &Path,
        op: FileOp,
    ) -> Result<(Dir, OsString), WorkspaceError> {
        let place = self.place(path)?;
        match self.open_dirs(&place, path, op, true)? {
            Some(dir) => Ok((dir, place.name.to_os_string())),
            // Unreachable: the walk makes every missing directory.
            None => Err(WorkspaceError::NotFound(path.display().to_string())),
        }
    }

    /// Which root `path` lies under (the deepest, when roots nest) and its components there.
    fn place<'p>(&'p self, path: &'p Path) -> Result<Place<'p>, WorkspaceError> {
        let root = (self.roots.iter())
            .filter(|r| path.starts_with(&r.path))
            .max_by_key(|r| r.path.as_os_str().len())
            .ok_or_else(|| WorkspaceError::OutsideWorkspace {
                path: path.display().to_string(),
                root: self
                    .roots
                    .first()
                    .map(|r| r.path.display().to_string())
                    .unwrap_or_default(),
                extra: String::new(),
            })?;
        let mut parts = Vec::new();
        for component in path.strip_prefix(&root.path).unwrap_or(path).components() {
            match component {
                Component::Normal(part) => parts.push(part),
                _ => {
                    return Err(WorkspaceError::InvalidPath {
                        path: path.display().to_string(),
                        reason: "it is not a canonical path inside the workspace".into(),
                    });
                }
            }
        }
        let Some(name) = parts.pop() else {
            return Err(WorkspaceError::IsDirectory(path.display().to_string()));
        };
        Ok(Place {
            root,
            dirs: parts,
            name,
        })
    }

    /// Opens the directories of `place`: in one `openat2` when it is there and the chain
    /// exists, else (and to say exactly what failed, or to create) one component at a time.
    fn open_dirs(
        &self,
        place: &Place<'_>,
        path: &Path,
        op: FileOp,
        create: bool,
    ) -> Result<Option<Dir>, WorkspaceError> {
        let at = |depth: usize| {
            place
                .root
                .path
                .join(place.dirs[..depth].iter().collect::<PathBuf>())
        };
        if self.resolver == Resolver::Openat2 && !place.dirs.is_empty() {
            let chain: PathBuf = place.dirs.iter().collect();
            if let Ok(fd) = openat2(&place.root.fd, &chain, dir_how()) {
                return Ok(Some(Dir {
                    fd,
                    path: at(place.dirs.len()),
                    op,
                }));
            }
        }
        let io = |e: Errno| WorkspaceError::from_io(path, &e.into());
        let mut fd = place
            .root
            .fd
            .try_clone()
            .map_err(|e| WorkspaceError::from_io(path, &e))?;
        for (depth, part) in place.dirs.iter().enumerate() {
            fd = match step(&fd, part, create) {
                Ok(Some(next)) => next,
                Ok(None) => return Ok(None),
                Err(Step::Symlink) => return Err(changed(path, &at(depth + 1), op)),
                Err(Step::Failed(e)) => return Err(io(e)),
            };
        }
        Ok(Some(Dir {
            fd,
            path: at(place.dirs.len()),
            op,
        }))
    }
}

/// A canonical path split beneath its root.
struct Place<'p> {
    root: &'p RootDir,
    dirs: Vec<&'p OsStr>,
    name: &'p OsStr,
}

/// Why one component could not be opened as a directory.
enum Step {
    /// A symlink is there, or the entry changed while we looked (the path is being swapped).
    Symlink,
    Failed(Errno),
}

/// Opens the directory `name` in `dir` without following a symlink (`None`: missing, unless
/// `create` makes it).
fn step(dir: &OwnedFd, name: &OsStr, create: bool) -> Result<Option<OwnedFd>, Step> {
    match open_component(dir, name) {
        Err(Step::Failed(Errno::ENOENT)) if create => {}
        Err(Step::Failed(Errno::ENOENT)) => return Ok(None),
        other => return other.map(Some),
    }
    match mkdirat(dir, name, Mode::from_bits_truncate(0o777)) {
        // Made meanwhile by someone else: fine, if it is a directory (the open says).
        Ok(()) | Err(Errno::EEXIST) => open_component(dir, name).map(Some),
        Err(e) => Err(Step::Failed(e)),
    }
}

fn open_component(dir: &OwnedFd, name: &OsStr) -> Result<OwnedFd, Step> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        // `O_DIRECTORY | O_NOFOLLOW` on a symlink is `ENOTDIR`, as on a file: look again. Only
        // a file still there is a plain error; a symlink, or a directory back already (the
        // swap undone since), is the path changing under us.
        Err(e @ (Errno::ENOTDIR | Errno::ELOOP)) => match kind(dir, name) {
            Ok(Kind::Symlink | Kind::Directory | Kind::Missing) => Err(Step::Symlink),
            Ok(Kind::File { .. }) | Err(_) => Err(Step::Failed(e)),
        },
        Err(e) => Err(Step::Failed(e)),
    }
}

/// What a directory entry is, not following a symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Missing,
    Directory,
    Symlink,
    /// Anything else (a regular file, a FIFO…), with its mode.
    File {
        mode: u32,
    },
}

fn kind(dir: &OwnedFd, name: &OsStr) -> nix::Result<Kind> {
    let stat = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::ENOENT) => return Ok(Kind::Missing),
        Err(e) => return Err(e),
    };
    let format = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    Ok(match format {
        SFlag::S_IFDIR => Kind::Directory,
        SFlag::S_IFLNK => Kind::Symlink,
        _ => Kind::File { mode: stat.st_mode },
    })
}

/// The error for a path that changed between its check and its use.
fn changed(path: &Path, at: &Path, op: FileOp) -> WorkspaceError {
    WorkspaceError::PathChanged {
        path: path.display().to_string(),
        at: at.display().to_string(),
        op,
    }
}

/// An open directory beneath a root; files in it are named by a single component only.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    op: FileOp,
}

impl Dir {
    /// What `name` is here.
    pub fn kind(&self, name: &OsStr) -> Result<Kind, WorkspaceError> {
        kind(&self.fd, name).map_err(|e| WorkspaceError::from_io(&self.path.join(name), &e.into()))
    }

    /// The error saying a symlink appeared at `name` here.
    pub fn changed(&self, name: &OsStr) -> WorkspaceError {
        let at = self.path.join(name);
        changed(&at, &at, self.op)
    }

    /// Opens `name` for reading, refusing a symlink.
    pub fn open_read(&self, name: &OsStr) -> Result<File, WorkspaceError> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(File::from(fd)),
            Err(Errno::ELOOP) => Err(self.changed(name)),
            Err(e) => Err(WorkspaceError::from_io(&self.path.join(name), &e.into())),
        }
    }

    /// Creates `name`, which must not exist (mode 0666 less the umask, as `File::create`).
    pub fn create_new(&self, name: &OsStr) -> std::io::Result<File> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(&self.fd, name, flags, Mode::from_bits_truncate(0o666))?;
        Ok(File::from(fd))
    }

    /// Renames `from` to `to`, both in this directory (`to` is replaced, never followed).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> std::io::Result<()> {
        Ok(renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Deletes `name` (a symlink itself, never its target).
    pub fn unlink(&self, name: &OsStr) -> std::io::Result<()> {
        Ok(unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_openat2_walks_the_components() {
        assert_eq!(
            Resolver::after_probe(Err(Errno::ENOSYS)),
            Resolver::Components
        );
        assert_eq!(
            Resolver::after_probe(Err(Errno::EPERM)),
            Resolver::Components
        );
        assert_eq!(Resolver::after_probe(Ok(())), Resolver::Openat2);
    }
}
