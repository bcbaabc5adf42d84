//! Starting and stopping a shell command: the process side shared by `bash` and its background
//! jobs. A confined command is started by the sandbox's launcher (its own session and process
//! group); any other in a process group of its own. Either way the group is what is killed.

use std::io::PipeWriter;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use crate::agent::tool::ToolError;
use crate::sandbox::launch::JailCommand;
use crate::sandbox::{Availability, SandboxPolicy};

/// `bash` configuration taken from `ToolOptions`.
#[derive(Clone, Debug, Default)]
pub struct BashSettings {
    pub shell: Option<PathBuf>,
    pub command_prefix: Option<String>,
    pub env: Vec<(String, String)>,
    pub spill_dir: Option<PathBuf>,
    /// The session's command sandbox; `None`: commands run with the user's full rights.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(1000);

/// A started command: the shell (or the launcher), the read end of its merged stdout+stderr,
/// and what must live as long as it runs.
pub struct Spawned {
    pub child: tokio::process::Child,
    pub rx: pipe::Receiver,
    /// The command's process group (the launcher's, for a confined command).
    pub pgid: Option<Pid>,
    /// The jail's lifeline: kept until the command has ended (dropping it ends the jail).
    pub lifeline: Option<PipeWriter>,
    /// The sandbox policy it runs under; `None`: unconfined.
    pub policy: Option<SandboxPolicy>,
    /// Kills the group if the owner goes away while the command runs.
    pub guard: GroupGuard,
}

impl Spawned {
    /// After the wait: unless the command `exited` (it was stopped, or timed out), its process
    /// group is killed; then what is left in the pipe goes to `push` (`open`: the pipe had not
    /// closed yet) and the jail is let go.
    pub async fn wind_down(
        mut self,
        exited: bool,
        buf: &mut [u8],
        open: bool,
        push: impl FnMut(&[u8]),
    ) {
        if !exited && let Some(pgid) = self.pgid {
            kill_group(pgid, &mut self.child).await;
        }
        self.guard.disarm();
        drain(&mut self.rx, buf, open, push).await;
        // The jail ends with its command; from here its lifeline has nothing left to keep.
        drop(self.lifeline);
    }
}

/// Fails when the working directory is gone (pi's words).
pub fn check_cwd(cwd: &Path) -> Result<(), ToolError> {
    if cwd.is_dir() {
        return Ok(());
    }
    Err(ToolError::new(format!(
        "Working directory does not exist: {}\nCannot execute bash commands.",
        cwd.display()
    )))
}

/// Starts `command` under `settings` in `cwd`, stdin closed, stdout and stderr merged into one
/// pipe.
pub fn spawn(settings: &BashSettings, command: &str, cwd: &Path) -> Result<Spawned, ToolError> {
    let script = match &settings.command_prefix {
        Some(prefix) if !prefix.is_empty() => format!("{prefix}\n{command}"),
        _ => command.to_string(),
    };
    let (reader, writer) = std::io::pipe()?;
    let writer2 = writer.try_clone()?;
    let shell = shell_path(settings);
    let (mut cmd, lifeline, policy) = match confine(settings, &shell, &script, cwd)? {
        Some((jail, policy)) => (jail.command, Some(jail.lifeline), Some(policy)),
        None => {
            let mut cmd = tokio::process::Command::new(&shell);
            cmd.arg("-c")
                .arg(&script)
                .current_dir(cwd)
                .stdin(Stdio::null())
                .process_group(0);
            (cmd, None, None)
        }
    };
    cmd.stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2))
        .envs(settings.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .kill_on_drop(false);
    let child = cmd
        .spawn()
        .map_err(|e| ToolError::new(format!("Failed to start shell: {e}")))?;
    // Our copies of the pipe's write end must go, or the reader never sees EOF.
    drop(cmd);
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    // If the owner is dropped mid-run (the caller gave up on it), the group must not leak.
    let guard = GroupGuard { pgid, armed: true };
    let rx = pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))
        .map_err(|e| ToolError::new(format!("Failed to read the shell's output: {e}")))?;
    Ok(Spawned {
        child,
        rx,
        pgid,
        lifeline,
        policy,
        guard,
    })
}

/// The shell to use: the configured one, else bash, else sh.
pub fn shell_path(settings: &BashSettings) -> PathBuf {
    if let Some(s) = &settings.shell {
        return s.clone();
    }
    ["/bin/bash", "/usr/bin/bash", "/bin/sh"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("sh"))
}

/// The jail of a confined command and the policy it runs under; `None` when unconfined.
/// An unavailable sandbox refuses the command rather than running it unconfined.
fn confine(
    settings: &BashSettings,
    shell: &Path,
    script: &str,
    cwd: &Path,
) -> Result<Option<(JailCommand, SandboxPolicy)>, ToolError> {
    let Some(sb) = settings.sandbox.as_ref() else {
        return Ok(None);
    };
    let policy = sb.policy();
    if !policy.confines() {
        return Ok(None);
    }
    if let Availability::Unavailable(reason) = &sb.availability {
        return Err(ToolError::new(format!(
            "Not run: this session runs commands sandboxed, but the sandbox is unavailable ({reason})."
        )));
    }
    let jail = sb
        .jail(&policy, shell, script, cwd)
        .map_err(|e| ToolError::new(format!("Not run: {e}")))?;
    Ok(Some((jail, policy)))
}

/// Kills the process group when dropped while armed.
pub struct GroupGuard {
    pgid: Option<Pid>,
    armed: bool,
}

impl GroupGuard {
    /// The command has ended (or was killed): nothing left to kill.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed
            && let Some(pgid) = self.pgid
        {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

pub async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Collects what is left in the pipe. The shell has exited, so its output is complete in the
/// kernel buffer: that is read without waiting. Background processes may keep the pipe open and
/// keep writing, so after that, reading stops at a short quiet period or a bounded total
/// instead of waiting for EOF.
async fn drain(rx: &mut pipe::Receiver, buf: &mut [u8], open: bool, mut push: impl FnMut(&[u8])) {
    if !open {
        return;
    }
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        match rx.try_read(buf) {
            Ok(0) => return,
            Ok(n) => push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
    while Instant::now() < until {
        match tokio::time::timeout(Duration::from_millis(200), rx.read(buf)).await {
            Ok(Ok(n)) if n > 0 => push(&buf[..n]),
            _ => break,
        }
    }
}

/// SIGTERM to the group, SIGKILL after [`KILL_GRACE`] if anything in it is still alive.
async fn kill_group(pgid: Pid, child: &mut tokio::process::Child) {
    let _ = killpg(pgid, Signal::SIGTERM);
    let start = Instant::now();
    while start.elapsed() < KILL_GRACE {
        let _ = child.try_wait();
        if !group_alive(pgid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if group_alive(pgid) {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    // The shell (or the sandbox's launcher, before it made its own group) itself.
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// True while some process of the group exists (a signal-0 probe).
fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok()
}
