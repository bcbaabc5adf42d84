//! The launcher without namespaces (where user namespaces are not allowed): Landlock and
//! seccomp only. The launcher is then the supervisor itself, a child subreaper: every process
//! the command leaves behind becomes its child and is killed once the command has ended.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::end::{End, SETUP_FAILED, SETUP_FAILED_PREFIX};
use super::spec::JailSpec;
use super::{protect, sys, worker};

pub fn run(
    spec: &JailSpec,
    env: &[OsString],
    sigfd: SignalFd,
    lifeline: Option<BorrowedFd<'_>>,
) -> Result<End, String> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| format!("subreaper: {e}"))?;
    nix::unistd::chdir(&spec.cwd)
        .map_err(|e| format!("cannot enter {}: {e}", spec.cwd.display()))?;
    let quarantine = spec.quarantine.clone().map(|dir| protect::Quarantine {
        shown: dir.clone(),
        dir,
    });
    let mut guard = protect::Guard::start(&spec.writable, &spec.protected, quarantine);
    let launcher = nix::unistd::getpid();
    let worker = match sys::fork().map_err(|e| format!("fork: {e}"))? {
        sys::Forked::Child => {
            // Dies with the launcher (a SIGKILL of it leaves no command behind).
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
            if nix::unistd::getppid() != launcher {
                std::process::exit(SETUP_FAILED);
            }
            let why = worker::exec(spec, env);
            eprintln!("{SETUP_FAILED_PREFIX} {why}");
            std::process::exit(SETUP_FAILED)
        }
        sys::Forked::Parent(pid) => pid,
    };
    let end = loop {
        let ready = super::poll_ready(
            &[Some(sigfd.as_fd()), lifeline, guard.fd()],
            guard.poll_timeout(),
        )?;
        if ready[1] && lifeline.is_some_and(super::closed) {
            kill_descendants();
            return Ok(End::Signal(Signal::SIGKILL as i32));
        }
        if ready[2] || guard.due() {
            guard.on_event();
        }
        if !ready[0] {
            continue;
        }
        let mut ended = None;
        while let Ok(Some(info)) = sigfd.read_signal() {
            match Signal::try_from(info.ssi_signo as i32) {
                Ok(Signal::SIGCHLD) | Err(_) => {}
                Ok(stop) => forward(worker, stop),
            }
        }
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => break,
                Ok(status) if status.pid() == Some(worker) => ended = End::from_wait(status),
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(format!("waitpid: {e}")),
            }
        }
        if let Some(end) = ended {
            break end;
        }
    };
    kill_descendants();
    let end = guard.settle(end);
    let_go(guard);
    Ok(end)
}

/// Drops the guard without waiting for the kernel: a watching guard's inotify instance is
/// closed for good by a child of its own (its output closed first), the launcher's copy at once.
fn let_go(guard: protect::Guard) {
    if !guard.watching() {
        return;
    }
    if let Ok(sys::Forked::Child) = sys::fork() {
        if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
            let _ = nix::unistd::dup2_stdout(&null);
            let _ = nix::unistd::dup2_stderr(&null);
        }
        drop(guard);
        std::process::exit(0);
    }
}

/// Passes a stop request to the command's process group (the worker's own).
fn forward(worker: Pid, signal: Signal) {
    if killpg(worker, signal).is_err() {
        let _ = kill(worker, signal);
    }
}

/// Kills every child (orphans of the command land here, the launcher being a subreaper) until
/// none is left.
fn kill_descendants() {
    loop {
        for child in children() {
            let _ = kill(child, Signal::SIGKILL);
        }
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Err(Errno::ECHILD) => return,
            Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(2)),
            Ok(_) | Err(_) => {}
        }
    }
}

/// The launcher's children: its (only) thread's `children` list, else from every
/// `/proc/*/stat` (the field after the command name) where the kernel has no such list.
fn children() -> Vec<Pid> {
    let me = nix::unistd::getpid().as_raw();
    if let Ok(list) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        return list
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .map(Pid::from_raw)
            .collect();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_of(&stat))
                == Some(me)
        })
        .map(Pid::from_raw)
        .collect()
}

fn parent_of(stat: &str) -> Option<i32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_parent_is_read_after_a_name_with_spaces_and_parentheses() {
        assert_eq!(super::parent_of("42 (a) b) c) S 7 42 42"), Some(7));
    }
}
