//! The launcher's system calls that no safe wrapper offers — the crate's audited `unsafe`
//! for the sandbox. Each runs in the launcher, a single-threaded process of its own (never in
//! the daemon), which is what makes `fork` sound: there is no other thread whose locks or
//! state the child could inherit half-way.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::unistd::{ForkResult, Pid};

/// Which side of a fork this is.
pub enum Forked {
    Parent(Pid),
    Child,
}

/// `fork()`.
///
/// Callers: the launcher (before it starts any thread) and the jail's init (which starts its
/// relay threads only after its last fork).
pub fn fork() -> std::io::Result<Forked> {
    // SAFETY: the launcher and the jail's init are single-threaded whenever they fork (see
    // above), so the child may allocate and take locks like any process.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Parent { child }) => Ok(Forked::Parent(child)),
        Ok(ForkResult::Child) => Ok(Forked::Child),
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// `struct mount_attr` of `<linux/mount.h>` (ver 0, 32 bytes).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `MOUNT_ATTR_RDONLY`.
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// `mount_setattr(dirfd, path, flags, {set, clear})` on `path` (`dirfd` `None`: relative to
/// the cwd) or, with an empty `path`, on the mount `dirfd` is (a detached tree from
/// `open_tree`). `recursive`: every mount below too.
pub fn mount_setattr(
    dirfd: Option<BorrowedFd<'_>>,
    path: &CStr,
    recursive: bool,
    set: u64,
    clear: u64,
) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let mut flags = 0;
    if recursive {
        flags |= libc::AT_RECURSIVE;
    }
    if path.is_empty() {
        flags |= libc::AT_EMPTY_PATH;
    }
    let dirfd = dirfd.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    // SAFETY: `path` is a valid NUL-terminated string and `attr` a valid `mount_attr` of the
    // size passed; both outlive the call, which only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Marks every file descriptor from `first` on close-on-exec (`close_range` with
/// `CLOSE_RANGE_CLOEXEC`, Linux 5.11), so the command inherits only stdin, stdout and stderr
/// whatever the daemon's own parent left open.
pub fn cloexec_from(first: u32) -> std::io::Result<()> {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors; it
    // touches no memory and closes nothing this process still uses.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Brings the loopback interface of this network namespace up (`SIOCSIFFLAGS` on `lo`), so
/// the proxy's relay can listen on 127.0.0.1.
pub fn loopback_up() -> std::io::Result<()> {
    use std::os::fd::FromRawFd;
    // SAFETY: socket() returns a new descriptor (or -1), owned from here on.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let sock = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero ifreq is a valid value of this plain C struct.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS and SIOCSIFFLAGS read and write the `ifreq` passed, which lives
    // for the duration of each call.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The Landlock ABI version of the running kernel (`landlock_create_ruleset(NULL, 0,
/// LANDLOCK_CREATE_RULESET_VERSION)`), `<= 0` without Landlock. Callable from the daemon: it
/// changes nothing.
pub fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: a null attribute pointer with size 0 is read by
    // nobody, and the call has no other effect.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    }
}
