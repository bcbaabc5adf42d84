//! Running one hook command.
//!
//! A hook is the user's own script, like a git hook: it runs with the user's rights, outside the
//! command sandbox, through `bash -c` (else `sh -c`) in the project directory, with the event's
//! JSON on stdin and `CLAUDE_PROJECT_DIR` / `AGENT_LSP_PROJECT_DIR` set. It gets a process group
//! of its own, which is killed when its timeout expires, when the caller gives up on it (an
//! aborted run), and when its future is dropped; what it prints is kept up to a bound. A hook
//! that starts something in the background and exits is done: its output is read for a moment
//! longer, not until every descendant closes it.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// How much of stdout is kept (JSON decisions and context are read from it).
pub const STDOUT_LIMIT: usize = 256 * 1024;
/// How much of stderr is kept (a blocking hook's reason).
pub const STDERR_LIMIT: usize = 64 * 1024;
/// How long output is still read after the hook's shell exited.
const DRAIN: Duration = Duration::from_millis(500);

/// How a hook command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    Exited(i32),
    /// Ended by a signal nobody here sent.
    Signalled,
    /// Its timeout expired; its process group was killed.
    TimedOut,
    /// The caller gave up on it (the run was aborted); its process group was killed.
    Cancelled,
    /// It could not be started.
    Failed(String),
}

/// What one hook command did.
#[derive(Clone, Debug)]
pub struct Ran {
    pub end: End,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

/// One command to run.
pub struct Invocation<'a> {
    pub command: &'a str,
    /// The event's JSON.
    pub input: &'a [u8],
    /// The project directory: its working directory and `CLAUDE_PROJECT_DIR`.
    pub project: &'a Path,
    /// More environment variables (the session's id).
    pub env: &'a [(String, String)],
    pub timeout: Duration,
}

/// Runs the command to its end, its timeout, or `cancel`.
pub async fn run(invocation: Invocation<'_>, cancel: &CancellationToken) -> Ran {
    let started = Instant::now();
    let failed = |why: String| Ran {
        end: End::Failed(why),
        stdout: String::new(),
        stderr: String::new(),
        duration: started.elapsed(),
    };
    if !invocation.project.is_dir() {
        let shown = invocation.project.display();
        return failed(format!("the project directory {shown} does not exist"));
    }
    let mut child = match spawn(&invocation) {
        Ok(child) => child,
        Err(e) => return failed(format!("cannot start it: {e}")),
    };
    let mut group = GroupGuard(child.id().map(|id| Pid::from_raw(id as i32)));
    let stdout = Captured::start(child.stdout.take(), STDOUT_LIMIT);
    let stderr = Captured::start(child.stderr.take(), STDERR_LIMIT);
    if let Some(mut stdin) = child.stdin.take() {
        let input = invocation.input.to_vec();
        // A hook that never reads its stdin must not block on it: written from a task, and
        // dropped (closed) when done or when the hook exits.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let end = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => match status.code() {
                Some(code) => End::Exited(code),
                None => End::Signalled,
            },
            Err(e) => End::Failed(format!("cannot wait for it: {e}")),
        },
        () = tokio::time::sleep(invocation.timeout) => End::TimedOut,
        () = cancel.cancelled() => End::Cancelled,
    };
    if matches!(end, End::TimedOut | End::Cancelled) {
        group.kill();
        let _ = child.wait().await;
    }
    group.0 = None;
    Ran {
        end,
        stdout: stdout.finish().await,
        stderr: stderr.finish().await,
        duration: started.elapsed(),
    }
}

fn spawn(invocation: &Invocation<'_>) -> std::io::Result<tokio::process::Child> {
    let shell = ["/bin/bash", "/usr/bin/bash", "/bin/sh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("sh");
    let project = invocation.project.display().to_string();
    let mut command = tokio::process::Command::new(shell);
    command
        .arg("-c")
        .arg(invocation.command)
        .current_dir(invocation.project)
        .env("CLAUDE_PROJECT_DIR", &project)
        .env("AGENT_LSP_PROJECT_DIR", &project)
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    command.spawn()
}

/// Kills the hook's process group when dropped while it runs (the caller gave up on it).
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One output stream read into a bounded buffer by a task of its own: what is past the bound
/// is read and dropped, so a chatty hook never blocks on a full pipe.
struct Captured {
    kept: Arc<Mutex<(Vec<u8>, bool)>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Captured {
    fn start(stream: Option<impl AsyncRead + Unpin + Send + 'static>, limit: usize) -> Captured {
        let kept = Arc::new(Mutex::new((Vec::new(), false)));
        let task = stream.map(|mut stream| {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                    let room = limit.saturating_sub(kept.0.len());
                    kept.0.extend_from_slice(&buf[..n.min(room)]);
                    kept.1 |= n > room;
                }
            })
        });
        Captured { kept, task }
    }

    /// What was read, once the stream closed or [`DRAIN`] passed.
    async fn finish(mut self) -> String {
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(DRAIN, &mut task).await.is_err()
        {
            task.abort();
        }
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = String::from_utf8_lossy(&kept.0).into_owned();
        if kept.1 {
            text.push_str("\n[… cut]");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sh(command: &str, timeout: Duration) -> Ran {
        let dir = tempfile::tempdir().unwrap();
        let invocation = Invocation {
            command,
            input: br#"{"hook_event_name":"Stop"}"#,
            project: dir.path(),
            env: &[("AGENT_LSP_SESSION_ID".into(), "s1".into())],
            timeout,
        };
        run(invocation, &CancellationToken::new()).await
    }

    #[tokio::test]
    async fn the_event_is_on_stdin_and_the_project_in_the_environment() {
        let ran = sh(
            r#"cat; echo; echo "$CLAUDE_PROJECT_DIR" | grep -c /; echo "$AGENT_LSP_SESSION_ID"; echo oops >&2; exit 3"#,
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(ran.end, End::Exited(3));
        assert_eq!(ran.stdout, "{\"hook_event_name\":\"Stop\"}\n1\ns1\n");
        assert_eq!(ran.stderr, "oops\n");
    }

    #[tokio::test]
    async fn a_hanging_hook_is_killed_with_its_children_at_its_timeout() {
        let started = Instant::now();
        let ran = sh("sleep 30 & sleep 30", Duration::from_millis(300)).await;
        assert_eq!(ran.end, End::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn output_is_bounded_and_a_background_child_does_not_hold_the_hook() {
        let started = Instant::now();
        let ran = sh(
            "head -c 300000 /dev/zero | tr '\\0' x; (sleep 3 &) ; exit 0",
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(ran.end, End::Exited(0));
        assert_eq!(ran.stdout.len(), STDOUT_LIMIT + "\n[… cut]".len());
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
