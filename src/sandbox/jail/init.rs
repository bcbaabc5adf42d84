//! PID 1 of the command's PID namespace: builds the view, starts the worker, reaps every
//! process of the namespace, relays the proxy, guards the protected paths, and exits when the
//! worker does (the kernel then kills whatever is left).

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::end::{End, SETUP_FAILED, SETUP_FAILED_PREFIX};
use super::spec::{JailNetwork, JailSpec};
use super::{bridge, mounts, protect, sys, worker};

/// Runs init to the end; the exit status for its process (how the command ended is also
/// written to `status`, signals included, which an exit status cannot carry from PID 1).
pub fn run(
    spec: &JailSpec,
    env: &[OsString],
    ctl: OwnedFd,
    status: OwnedFd,
    proxy_dir: Option<OwnedFd>,
) -> i32 {
    match supervise(spec, env, &ctl, proxy_dir) {
        Ok((end, guard)) => {
            // The launcher ends on this message, before init does: what init still has to do
            // (let its watch go, which may wait for the kernel) delays nothing, and with its
            // output closed first the daemon does not wait for it either.
            let _ = nix::unistd::write(&status, &end.encode());
            if guard.watching() {
                close_output();
            }
            drop(guard);
            match end {
                End::Code(code) => code,
                End::Signal(sig) => 128 + sig,
            }
        }
        Err(e) => {
            eprintln!("{SETUP_FAILED_PREFIX} {e}");
            SETUP_FAILED
        }
    }
}

/// Points stdout and stderr at `/dev/null`, so the command's output pipe ends with the command.
fn close_output() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
}

fn supervise(
    spec: &JailSpec,
    env: &[OsString],
    ctl: &OwnedFd,
    proxy_dir: Option<OwnedFd>,
) -> Result<(End, protect::Guard), String> {
    // The quarantine is read-only in the view: keep a writable clone of it first.
    let quarantine = match &spec.quarantine {
        Some(dir) => Some((
            mounts::writable_clone(dir).map_err(|e| e.to_string())?,
            dir.clone(),
        )),
        None => None,
    };
    mounts::build(spec).map_err(|e| e.to_string())?;
    nix::unistd::chdir(&spec.cwd)
        .map_err(|e| format!("cannot enter {}: {e}", spec.cwd.display()))?;
    let relay = match &spec.network {
        JailNetwork::Proxy { port, .. } => {
            sys::loopback_up().map_err(|e| format!("cannot bring up the loopback: {e}"))?;
            Some(bridge::Relay::listen(*port)?)
        }
        JailNetwork::Off | JailNetwork::On => None,
    };
    let quarantine = quarantine.map(|(fd, shown)| {
        let dir = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        // The clone lives as long as init: its descriptor is never closed.
        std::mem::forget(fd);
        protect::Quarantine { dir, shown }
    });
    let mut guard = protect::Guard::start(&spec.writable, &spec.protected, quarantine);
    let mut children = SigSet::empty();
    children.add(Signal::SIGCHLD);
    let sigfd = SignalFd::with_flags(&children, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;
    let worker = match sys::fork().map_err(|e| format!("fork: {e}"))? {
        sys::Forked::Child => {
            let why = worker::exec(spec, env);
            eprintln!("{SETUP_FAILED_PREFIX} {why}");
            std::process::exit(SETUP_FAILED)
        }
        sys::Forked::Parent(pid) => pid,
    };
    // Threads only now: init forks no more.
    if let (Some(relay), Some(dir), JailNetwork::Proxy { socket, .. }) =
        (relay, proxy_dir, &spec.network)
    {
        let name = socket.file_name().map(PathBuf::from).unwrap_or_default();
        relay.serve(dir, name);
    }
    let end = wait_for(worker, &sigfd, ctl, &mut guard)?;
    end_everything_else();
    let end = guard.settle(end);
    Ok((end, guard))
}

/// Reaps until the worker ends; a stop request sends SIGTERM to every process of the
/// namespace, a closed control pipe (the launcher is gone) ends init at once.
fn wait_for(
    worker: Pid,
    sigfd: &SignalFd,
    ctl: &OwnedFd,
    guard: &mut protect::Guard,
) -> Result<End, String> {
    loop {
        let ready = super::poll_ready(
            &[Some(sigfd.as_fd()), Some(ctl.as_fd()), guard.fd()],
            guard.poll_timeout(),
        )?;
        if ready[1] {
            let mut byte = [0u8; 1];
            match nix::unistd::read(ctl, &mut byte) {
                Ok(1) => {
                    let _ = kill(Pid::from_raw(-1), Signal::SIGTERM);
                }
                Err(Errno::EINTR) | Err(Errno::EAGAIN) => {}
                _ => return Ok(End::Signal(Signal::SIGKILL as i32)),
            }
        }
        if ready[2] || guard.due() {
            guard.on_event();
        }
        if ready[0] {
            while let Ok(Some(_)) = sigfd.read_signal() {}
            if let Some(end) = reap(worker)? {
                return Ok(end);
            }
        }
    }
}

/// Reaps every process that ended; how the worker ended, once it has.
fn reap(worker: Pid) -> Result<Option<End>, String> {
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return Ok(None),
            Ok(status) if status.pid() == Some(worker) => return Ok(End::from_wait(status)),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(format!("waitpid: {e}")),
        }
    }
}

/// Kills and reaps every other process of the namespace, so none can create anything after
/// the guard's last look.
fn end_everything_else() {
    let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}
