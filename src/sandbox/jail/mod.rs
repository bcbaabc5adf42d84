//! The launcher: `agent-lsp __sandbox-exec`, the daemon's own binary started as the parent of
//! every sandboxed command (as Codex's `codex-linux-sandbox` and Anthropic's `srt-launcher`).
//! A process of its own, single-threaded, so it may fork, mount and change its credentials
//! freely — none of which the daemon (many threads, and `pre_exec` allows only
//! async-signal-safe calls) could do.
//!
//! ```text
//! daemon ── launcher (setsid: no terminal; new user, mount, IPC, PID [, net] namespaces)
//!              └─ init, PID 1 (builds the mount view; reaps; relays the proxy; guards protected paths)
//!                   └─ worker (drops capabilities, Landlock, seccomp) ─ execve(shell)
//! ```
//!
//! When init exits the kernel kills every process left in the PID namespace, so nothing the
//! command started (`&`, `nohup`, `setsid`) outlives it. Init exits when the worker does, when
//! the launcher goes (its control pipe closes), or is asked to stop (a byte on that pipe: init
//! sends SIGTERM to the whole namespace, the launcher's SIGKILL follows if needed). The
//! launcher in turn exits when the daemon goes: its stdin is a pipe whose other end only the
//! daemon holds.
//!
//! Without user namespaces (`spec.namespaces == false`) the launcher is the supervisor itself:
//! a child subreaper that kills every process the command left once it exits.

mod bridge;
mod end;
mod flat;
mod init;
mod mounts;
mod probe;
mod protect;
mod rules;
mod seccomp;
pub mod spec;
pub(crate) mod sys;
mod worker;

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use end::End;
pub use end::{SETUP_FAILED, SETUP_FAILED_PREFIX};
use spec::{JailNetwork, JailSpec, SPEC_ENV};

/// The hidden subcommand that runs the launcher.
pub const SUBCOMMAND: &str = "__sandbox-exec";
/// The launcher's entry point (`agent-lsp __sandbox-exec [--probe DIR]`).
pub fn main(args: &[OsString]) -> ! {
    if let Some(at) = args.iter().position(|a| a == "--probe") {
        probe::run(args.get(at + 1).map(std::path::PathBuf::from))
    }
    match launch() {
        Ok(end) => end.exit(),
        Err(e) => {
            eprintln!("{SETUP_FAILED_PREFIX} {e}");
            std::process::exit(SETUP_FAILED)
        }
    }
}

/// The signals the launcher handles itself (read through a signalfd).
fn handled_signals() -> SigSet {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGCHLD,
    ] {
        set.add(s);
    }
    set
}

fn launch() -> Result<End, String> {
    let value = std::env::var(SPEC_ENV).map_err(|_| format!("{SPEC_ENV} is not set"))?;
    let spec = JailSpec::from_env_value(&value).map_err(|e| format!("bad {SPEC_ENV}: {e}"))?;
    let env = command_env();
    sys::cloexec_from(3).map_err(|e| format!("close_range: {e}"))?;
    nix::unistd::setsid().map_err(|e| format!("setsid: {e}"))?;
    let signals = handled_signals();
    signals
        .thread_block()
        .map_err(|e| format!("sigprocmask: {e}"))?;
    let sigfd = SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;
    let lifeline = daemon_lifeline();
    let lifeline = lifeline.as_ref().map(|fd| fd.as_fd());
    match spec.namespaces {
        true => namespaced(&spec, &env, sigfd, lifeline),
        false => flat::run(&spec, &env, sigfd, lifeline),
    }
}

/// The command's environment: the launcher's, without the spec.
fn command_env() -> Vec<OsString> {
    std::env::vars_os()
        .filter(|(k, _)| k != SPEC_ENV)
        .map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend(v.into_vec());
            OsString::from_vec(kv)
        })
        .collect()
}

/// The launcher's stdin, when it is the pipe the daemon holds open (its end closes when the
/// daemon exits, however it exits).
fn daemon_lifeline() -> Option<OwnedFd> {
    let stdin = std::io::stdin();
    let is_pipe = nix::sys::stat::fstat(stdin.as_fd())
        .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO);
    match is_pipe {
        true => stdin.as_fd().try_clone_to_owned().ok(),
        false => None,
    }
}

/// The new user (own ids mapped to themselves), mount, IPC and PID namespaces, and a network
/// namespace unless the command has the user's network.
fn enter_namespaces(new_net: bool) -> Result<(), String> {
    use nix::sched::{CloneFlags, unshare};
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWPID;
    if new_net {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|e| format!("cannot create namespaces: {e}"))?;
    let write = |path: &str, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}

fn namespaced(
    spec: &JailSpec,
    env: &[OsString],
    sigfd: SignalFd,
    lifeline: Option<BorrowedFd<'_>>,
) -> Result<End, String> {
    enter_namespaces(!matches!(spec.network, JailNetwork::On))?;
    // The proxy's folder, opened in the old view: init reaches the socket through
    // /proc/self/fd/N once the folder is hidden or read-only in the new one.
    let proxy_dir = match &spec.network {
        JailNetwork::Proxy { socket, .. } => Some(open_dir(socket.parent().unwrap_or(socket))?),
        _ => None,
    };
    let (ctl_read, ctl_write) = pipe()?;
    let (status_read, status_write) = pipe()?;
    match sys::fork().map_err(|e| format!("fork: {e}"))? {
        sys::Forked::Child => {
            drop((ctl_write, status_read, sigfd));
            let code = init::run(spec, env, ctl_read, status_write, proxy_dir);
            std::process::exit(code)
        }
        sys::Forked::Parent(init) => {
            drop((ctl_read, status_write, proxy_dir));
            watch_init(init, ctl_write, status_read, sigfd, lifeline)
        }
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))
}

fn open_dir(path: &std::path::Path) -> Result<OwnedFd, String> {
    nix::fcntl::open(
        path,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// The launcher's loop while init runs: forwards a stop request, follows the daemon, and
/// returns how the command ended as soon as init says so (init may linger a little after).
fn watch_init(
    init: Pid,
    ctl: OwnedFd,
    status: OwnedFd,
    sigfd: SignalFd,
    lifeline: Option<BorrowedFd<'_>>,
) -> Result<End, String> {
    let mut said = Vec::new();
    loop {
        let ready = poll_ready(
            &[Some(sigfd.as_fd()), lifeline, Some(status.as_fd())],
            PollTimeout::NONE,
        )?;
        if ready[1] && lifeline.is_some_and(closed) {
            // Init sees its control pipe close and takes the namespace with it.
            std::process::exit(128 + Signal::SIGKILL as i32);
        }
        if ready[2] {
            let mut buf = [0u8; 5];
            match nix::unistd::read(&status, &mut buf) {
                Ok(0) => {
                    // Init ended without a word: its own exit status says how.
                    let status_of_init =
                        waitpid(init, None).map_err(|e| format!("waitpid: {e}"))?;
                    return Ok(End::from_wait(status_of_init).unwrap_or(End::Code(SETUP_FAILED)));
                }
                Ok(n) => said.extend_from_slice(&buf[..n]),
                Err(Errno::EINTR | Errno::EAGAIN) => {}
                Err(e) => return Err(format!("reading init's status: {e}")),
            }
            if let Some(end) = End::decode(&said) {
                return Ok(end);
            }
        }
        if ready[0] {
            let mut stop = false;
            while let Ok(Some(info)) = sigfd.read_signal() {
                stop |= info.ssi_signo != Signal::SIGCHLD as u32;
            }
            if stop {
                let _ = nix::unistd::write(&ctl, b"T");
            }
        }
    }
}

/// Polls the descriptors given (`None` slots are left out) until one is ready or `timeout`
/// passed; which are.
fn poll_ready(fds: &[Option<BorrowedFd<'_>>], timeout: PollTimeout) -> Result<Vec<bool>, String> {
    let mut polled: Vec<PollFd> = fds
        .iter()
        .flatten()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    match poll(&mut polled, timeout) {
        Ok(_) | Err(Errno::EINTR) => {}
        Err(e) => return Err(format!("poll: {e}")),
    }
    let mut results = polled.iter();
    Ok(fds
        .iter()
        .map(|slot| {
            slot.is_some()
                && results
                    .next()
                    .is_some_and(|p| p.revents().is_some_and(|r| !r.is_empty()))
        })
        .collect())
}

/// A readable lifeline: end of file (or an error) means the daemon is gone.
fn closed(fd: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 64];
    !matches!(nix::unistd::read(fd, &mut buf), Ok(n) if n > 0)
}
