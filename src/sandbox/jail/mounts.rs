//! The command's view of the file system, built by the jail's init in its own mount namespace
//! (as bubblewrap's `--ro-bind / /` plus binds, but without touching the user's tree):
//!
//! - every mount read-only (`mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`), so metadata
//!   changes (`chmod`, `touch -d`, `setxattr`) fail with `EROFS` where Landlock has no right
//!   for them;
//! - the session's roots bound where they are (a root under `/tmp` stays visible), read-write
//!   when writable, and inside those the protected paths that exist bound read-only again;
//! - `/tmp` the command's private temporary directory;
//! - the folders it must not read (the stored keys) covered by an empty read-only tmpfs;
//! - a new `/dev` (a tmpfs with the harmless devices, a private `devpts` and `shm`) and a new
//!   `/proc` for the PID namespace.
//!
//! Everything the view takes from the old one is cloned first (`open_tree(OPEN_TREE_CLONE)`),
//! so a root under `/tmp` is still found once `/tmp` is covered; the clones are attached
//! shallowest first. Mount points that are missing in the new view (a root under the old
//! `/tmp`) are made inside the private temporary directory, never in the user's folders.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::CWD;
use rustix::mount::{
    MountFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags, mount, mount_change,
    move_mount, open_tree,
};

use super::spec::JailSpec;
use super::sys::{self, MOUNT_ATTR_RDONLY};

/// Devices bound from the old `/dev` (those a shell and its tools use; `tty` is there for
/// programs that probe it — with no controlling terminal, opening it fails).
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// A step that failed, named for the user.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path}: {source}")]
pub struct MountError {
    what: &'static str,
    path: String,
    source: std::io::Error,
}

fn fail(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> MountError {
    let path = path.display().to_string();
    move |source| MountError { what, path, source }
}

fn errno(e: rustix::io::Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

/// A tree to attach at `target`.
enum Source {
    /// A detached clone of part of the old view.
    Clone(OwnedFd),
    /// The private temporary directory, as `/tmp`.
    Temp(OwnedFd),
    Dev(Vec<(&'static str, OwnedFd)>),
    Proc,
    /// An empty read-only tmpfs over a folder the command must not read.
    Hidden,
}

struct Attachment {
    target: PathBuf,
    source: Source,
    /// Protected paths come after the writable roots at the same depth, hidden folders last.
    rank: u8,
}

/// Builds the view for `spec` in the current (new, private) mount namespace.
pub fn build(spec: &JailSpec) -> Result<(), MountError> {
    mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(errno)
    .map_err(fail("cannot make private", Path::new("/")))?;
    let mut attachments = clones(spec)?;
    sys::mount_setattr(None, c"/", true, MOUNT_ATTR_RDONLY, 0)
        .map_err(fail("cannot make read-only", Path::new("/")))?;
    attachments.sort_by_key(|a| (a.target.components().count(), a.rank));
    for attachment in attachments {
        attach(attachment)?;
    }
    Ok(())
}

/// Clones of everything the view keeps from the old one, taken before anything is covered.
fn clones(spec: &JailSpec) -> Result<Vec<Attachment>, MountError> {
    let mut out = vec![
        Attachment {
            target: PathBuf::from("/tmp"),
            source: Source::Temp(clone_tree(&spec.temp_dir, false)?),
            rank: 0,
        },
        Attachment {
            target: PathBuf::from("/dev"),
            source: Source::Dev(device_clones()),
            rank: 0,
        },
        Attachment {
            target: PathBuf::from("/proc"),
            source: Source::Proc,
            rank: 0,
        },
    ];
    for root in spec.roots.iter().filter(|r| !spec.writable.contains(r)) {
        out.push(Attachment {
            target: root.clone(),
            source: Source::Clone(clone_tree(root, true)?),
            rank: 1,
        });
    }
    for root in &spec.writable {
        out.push(Attachment {
            target: root.clone(),
            source: Source::Clone(clone_tree(root, false)?),
            rank: 1,
        });
        for rel in &spec.protected {
            let path = root.join(rel);
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            out.push(Attachment {
                target: path.clone(),
                source: Source::Clone(clone_tree(&path, true)?),
                rank: 2,
            });
        }
    }
    // Covered after everything at or above its depth (a writable root that contains it
    // included), so nothing attached later uncovers it.
    for dir in spec.hidden.iter().filter(|d| d.is_dir()) {
        out.push(Attachment {
            target: dir.clone(),
            source: Source::Hidden,
            rank: 3,
        });
    }
    Ok(out)
}

/// A writable detached copy of the mount tree at `path`, to reach it through its descriptor
/// once the view is read-only.
pub fn writable_clone(path: &Path) -> Result<OwnedFd, MountError> {
    clone_tree(path, false)
}

/// A detached recursive copy of the mount tree at `path` (read-only when asked).
fn clone_tree(path: &Path, read_only: bool) -> Result<OwnedFd, MountError> {
    let flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC
        | OpenTreeFlags::AT_RECURSIVE;
    let fd = open_tree(CWD, path, flags)
        .map_err(errno)
        .map_err(fail("cannot clone", path))?;
    if read_only {
        sys::mount_setattr(Some(fd.as_fd()), c"", true, MOUNT_ATTR_RDONLY, 0)
            .map_err(fail("cannot make read-only", path))?;
    }
    Ok(fd)
}

fn device_clones() -> Vec<(&'static str, OwnedFd)> {
    let flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
    DEVICES
        .iter()
        .filter_map(|name| {
            let fd = open_tree(CWD, Path::new("/dev").join(name).as_path(), flags).ok()?;
            Some((*name, fd))
        })
        .collect()
}

fn attach(attachment: Attachment) -> Result<(), MountError> {
    let target = attachment.target;
    match attachment.source {
        Source::Clone(fd) => {
            ensure_mount_point(&target)?;
            move_onto(&fd, &target)
        }
        Source::Temp(fd) => move_onto(&fd, &target),
        Source::Dev(devices) => build_dev(&target, devices),
        Source::Proc => mount(
            "proc",
            target.as_path(),
            "proc",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            None,
        )
        .map_err(errno)
        .map_err(fail("cannot mount a new proc on", &target)),
        // The command's capabilities are gone before it starts: it cannot unmount this.
        Source::Hidden => mount(
            "tmpfs",
            target.as_path(),
            "tmpfs",
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            Some(c"mode=0000,size=4k"),
        )
        .map_err(errno)
        .map_err(fail("cannot hide", &target)),
    }
}

fn move_onto(fd: &OwnedFd, target: &Path) -> Result<(), MountError> {
    move_mount(fd, "", CWD, target, MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)
        .map_err(errno)
        .map_err(fail("cannot mount onto", target))
}

/// A root that was under the old `/tmp` has no mount point in the new one: its folders are
/// made inside the private temporary directory (which is what `/tmp` is now). Anywhere else
/// the mount point exists, because the root does.
fn ensure_mount_point(target: &Path) -> Result<(), MountError> {
    if std::fs::symlink_metadata(target).is_ok() {
        return Ok(());
    }
    let inside_tmp = target.starts_with("/tmp");
    if !inside_tmp {
        return Err(MountError {
            what: "no mount point for",
            path: target.display().to_string(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    std::fs::create_dir_all(target).map_err(fail("cannot make the mount point", target))
}

/// `/dev`: a tmpfs with the devices bound from the old one, the usual links, a private
/// `devpts` (ptys the command makes, never the user's terminals) and a private `shm`.
fn build_dev(dev: &Path, devices: Vec<(&'static str, OwnedFd)>) -> Result<(), MountError> {
    mount(
        "tmpfs",
        dev,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"mode=0755,size=256k"),
    )
    .map_err(errno)
    .map_err(fail("cannot mount a tmpfs on", dev))?;
    for (name, fd) in devices {
        let node = dev.join(name);
        std::fs::File::create(&node).map_err(fail("cannot make", &node))?;
        move_onto(&fd, &node)?;
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        let path = dev.join(link);
        std::os::unix::fs::symlink(to, &path).map_err(fail("cannot link", &path))?;
    }
    let pts = dev.join("pts");
    std::fs::create_dir(&pts).map_err(fail("cannot make", &pts))?;
    // A pty of its own is a convenience (`script`, `expect`); without one the rest still holds.
    let _ = mount(
        "devpts",
        pts.as_path(),
        "devpts",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"newinstance,ptmxmode=0666,mode=0620"),
    );
    let shm = dev.join("shm");
    std::fs::create_dir(&shm).map_err(fail("cannot make", &shm))?;
    mount(
        "tmpfs",
        shm.as_path(),
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(c"mode=1777"),
    )
    .map_err(errno)
    .map_err(fail("cannot mount a tmpfs on", &shm))?;
    let dev_c = CString::new(dev.as_os_str().as_bytes()).map_err(|_| MountError {
        what: "bad path",
        path: dev.display().to_string(),
        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    })?;
    sys::mount_setattr(None, &dev_c, false, MOUNT_ATTR_RDONLY, 0)
        .map_err(fail("cannot make read-only", dev))
}
