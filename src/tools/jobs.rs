//! A session's background jobs: commands `bash` started with `background: true`, which run while
//! the agent works (dev servers, watch builds). Each runs exactly as a `bash` command does (the
//! same sandbox, launcher and process group); a task of its own reads its output and waits for
//! it. The model reads what it printed since its last read (`bash_output`) and stops it
//! (`bash_kill`); front ends list, stop and show jobs through [`Jobs`], and observe each start
//! and end ([`Jobs::observe`]).
//!
//! Nothing outlives its session: [`Jobs::end_all`] stops every job (a front end's session close
//! and exit), dropping the registry kills what is left at once, and a sandboxed job's launcher
//! dies with the daemon (its lifeline).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::bash_output::{OutputBuffer, clean};
use super::process::{BashSettings, Spawned, check_cwd, drain, kill_group, sleep_until, spawn};
use crate::agent::tool::ToolError;
use crate::sandbox::SandboxPolicy;
use crate::sandbox::jail::{SETUP_FAILED, SETUP_FAILED_PREFIX};

/// At most this many jobs of a session run at once.
pub const MAX_RUNNING: usize = 16;
/// Ended jobs kept for listing and reading, the oldest dropped first.
const KEEP_ENDED: usize = 32;
/// How long stopping a job may take: the group's grace before SIGKILL, then reading what is
/// left of its output; a front end closing a session waits at most this long for its jobs.
pub const END_WITHIN: Duration = Duration::from_secs(5);
/// The most of a job's unread output saved to a file between two reads: a chatty server nobody
/// reads for hours must not fill the disk.
const SPILL_LIMIT: usize = 64 * 1024 * 1024;
/// The end of a job's output kept for front ends (`agent/jobOutput`).
pub const RECENT_BYTES: usize = 64 * 1024;

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Running,
    /// Its command ended by itself with an exit code (any code).
    Exited,
    /// Stopped: `bash_kill`, a front end's kill, its timeout, or its session ending.
    Killed,
    /// It could not run (the sandbox could not start it, it could not be waited for) or a
    /// signal nobody here sent ended it.
    Failed,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Exited => "exited",
            JobStatus::Killed => "killed",
            JobStatus::Failed => "failed",
        }
    }
}

/// A job as front ends see it (the `job` of `job_update`, `agent/listJobs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobInfo {
    pub job_id: String,
    pub command: String,
    pub status: JobStatus,
    /// The command's exit code once it exited; `null` while it runs and when a signal ended it.
    pub exit_code: Option<i32>,
    /// Unix time in milliseconds.
    pub started_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
}

/// Why a job request cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("No background job {0:?} in this session")]
    Unknown(String),
}

/// What the model reads of a job ([`Job::read`]): its status when read, then the output it
/// printed since the read before.
pub struct Unread {
    pub info: JobInfo,
    /// How it ended, in a few words, once it has (`exit code 0`, `stopped`, `killed by signal
    /// 9`, the sandbox's failure).
    pub ending: Option<String>,
    pub output: OutputBuffer,
    /// The sandbox policy it runs under (`None`: unconfined).
    pub policy: Option<SandboxPolicy>,
}

/// One background job.
pub struct Job {
    pub id: String,
    /// The tool call that started it.
    pub call_id: String,
    pub pid: Option<u32>,
    pgid: Option<Pid>,
    policy: Option<SandboxPolicy>,
    info: Mutex<JobInfo>,
    ending: Mutex<Option<String>>,
    output: Mutex<JobOutput>,
    /// Asks its task to stop it.
    stop: CancellationToken,
    ended: watch::Sender<bool>,
}

/// Its output: what the model has not read yet, and the end of everything, for front ends.
struct JobOutput {
    unread: OutputBuffer,
    spill_dir: PathBuf,
    recent: VecDeque<u8>,
    total: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Job {
    pub fn info(&self) -> JobInfo {
        lock(&self.info).clone()
    }

    pub fn is_running(&self) -> bool {
        lock(&self.info).status == JobStatus::Running
    }

    fn push(&self, chunk: &[u8]) {
        let mut out = lock(&self.output);
        out.unread.push(chunk);
        out.total += chunk.len() as u64;
        out.recent.extend(chunk);
        let over = out.recent.len().saturating_sub(RECENT_BYTES);
        out.recent.drain(..over);
    }

    /// Its status, then what it printed since the last read (the read moves on past it). The
    /// status is taken first: a job said to have ended has all its output in what follows.
    pub fn read(&self) -> Unread {
        let info = self.info();
        let ending = lock(&self.ending).clone();
        let mut out = lock(&self.output);
        let fresh = OutputBuffer::with_spill_limit(out.spill_dir.clone(), SPILL_LIMIT);
        let output = std::mem::replace(&mut out.unread, fresh);
        Unread {
            info,
            ending,
            output,
            policy: self.policy.clone(),
        }
    }

    /// The last [`RECENT_BYTES`] of everything it printed (ANSI stripped), and whether earlier
    /// output was left out. The model's read position does not move.
    pub fn recent(&self) -> (String, bool) {
        let out = lock(&self.output);
        let (front, back) = out.recent.as_slices();
        let mut bytes = Vec::with_capacity(out.recent.len());
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        let truncated = out.total > bytes.len() as u64;
        // A character cut at the start of what is kept is left out, not shown as garbage.
        let start = match truncated {
            true => bytes
                .iter()
                .take(3)
                .take_while(|b| (**b & 0xC0) == 0x80)
                .count(),
            false => 0,
        };
        (clean(&String::from_utf8_lossy(&bytes[start..])), truncated)
    }

    /// Waits until its task has finished with it.
    pub async fn wait_ended(&self) {
        let mut rx = self.ended.subscribe();
        let _ = rx.wait_for(|ended| *ended).await;
    }

    /// Why it ended, in words, once it has.
    pub fn ending(&self) -> Option<String> {
        lock(&self.ending).clone()
    }
}

/// Told of every job's start and end.
type Observer = Arc<dyn Fn(&JobInfo) + Send + Sync>;

/// The observers of a registry, shared with its jobs' tasks (which never hold the registry).
#[derive(Default)]
struct Observers(Mutex<Vec<Observer>>);

impl Observers {
    fn tell(&self, info: &JobInfo) {
        let observers: Vec<Observer> = lock(&self.0).clone();
        for observer in observers {
            observer(info);
        }
    }
}

/// A session's background jobs.
#[derive(Default)]
pub struct Jobs {
    jobs: Mutex<Vec<Arc<Job>>>,
    next: AtomicU64,
    observers: Arc<Observers>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("jobs", &lock(&self.jobs).len())
            .finish()
    }
}

/// A job just started, and the sandbox policy it runs under (`None`: unconfined).
pub struct Started {
    pub job: Arc<Job>,
    pub policy: Option<SandboxPolicy>,
}

impl Jobs {
    pub fn new() -> Arc<Jobs> {
        Arc::new(Jobs::default())
    }

    /// Calls `observer` at every job's start and end, from then on.
    pub fn observe(&self, observer: impl Fn(&JobInfo) + Send + Sync + 'static) {
        lock(&self.observers.0).push(Arc::new(observer));
    }

    /// Every job, in the order they started.
    pub fn list(&self) -> Vec<JobInfo> {
        lock(&self.jobs).iter().map(|job| job.info()).collect()
    }

    pub fn get(&self, id: &str) -> Result<Arc<Job>, JobError> {
        (lock(&self.jobs).iter())
            .find(|job| job.id == id)
            .cloned()
            .ok_or_else(|| JobError::Unknown(id.to_owned()))
    }

    /// Starts `command` as `bash` would run it, in the background; `timeout` (seconds) stops
    /// it when it expires. Returns once the process is started.
    pub fn start(
        &self,
        settings: &BashSettings,
        command: &str,
        cwd: &Path,
        timeout: Option<f64>,
        call_id: &str,
    ) -> Result<Started, ToolError> {
        check_cwd(cwd)?;
        let running = lock(&self.jobs).iter().filter(|j| j.is_running()).count();
        if running >= MAX_RUNNING {
            return Err(ToolError::new(format!(
                "Not started: {running} background jobs are running already (at most \
                 {MAX_RUNNING}). Stop one with bash_kill first."
            )));
        }
        let spawned = spawn(settings, command, cwd)?;
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let spill_dir = (settings.spill_dir.clone()).unwrap_or_else(std::env::temp_dir);
        let job = Arc::new(Job {
            id: format!("job-{n}"),
            call_id: call_id.to_owned(),
            pid: spawned.child.id(),
            pgid: spawned.pgid,
            policy: spawned.policy.clone(),
            info: Mutex::new(JobInfo {
                job_id: format!("job-{n}"),
                command: command.to_owned(),
                status: JobStatus::Running,
                exit_code: None,
                started_at: crate::agent::message::now_ms(),
                ended_at: None,
            }),
            ending: Mutex::default(),
            output: Mutex::new(JobOutput {
                unread: OutputBuffer::with_spill_limit(spill_dir.clone(), SPILL_LIMIT),
                spill_dir,
                recent: VecDeque::new(),
                total: 0,
            }),
            stop: CancellationToken::new(),
            ended: watch::Sender::new(false),
        });
        let policy = spawned.policy.clone();
        self.keep(job.clone());
        self.observers.tell(&job.info());
        let deadline = timeout.map(|s| tokio::time::Instant::now() + Duration::from_secs_f64(s));
        tokio::spawn(follow(
            job.clone(),
            self.observers.clone(),
            spawned,
            deadline,
        ));
        Ok(Started { job, policy })
    }

    /// Adds a job, dropping the oldest ended ones past [`KEEP_ENDED`].
    fn keep(&self, job: Arc<Job>) {
        let mut jobs = lock(&self.jobs);
        jobs.push(job);
        let ended = jobs.iter().filter(|j| !j.is_running()).count();
        let mut excess = ended.saturating_sub(KEEP_ENDED);
        jobs.retain(|j| {
            let drop = excess > 0 && !j.is_running();
            excess -= usize::from(drop);
            !drop
        });
    }

    /// Stops job `id` (its whole process tree) and waits until it ended; the job.
    pub async fn kill(&self, id: &str) -> Result<Arc<Job>, JobError> {
        let job = self.get(id)?;
        job.stop.cancel();
        job.wait_ended().await;
        Ok(job)
    }

    /// Stops every running job and waits until each ended (a session closing).
    pub async fn end_all(&self) {
        let running: Vec<Arc<Job>> = (lock(&self.jobs).iter())
            .filter(|j| j.is_running())
            .cloned()
            .collect();
        for job in &running {
            job.stop.cancel();
        }
        for job in running {
            job.wait_ended().await;
        }
    }
}

impl Jobs {
    /// SIGKILLs every running job's process group at once, without waiting (a process about
    /// to exit; the runtime its tasks need may be going away too).
    pub fn kill_now(&self) {
        for job in lock(&self.jobs).iter().filter(|j| j.is_running()) {
            job.stop.cancel();
            if let Some(pgid) = job.pgid {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// How a job's command ended.
enum End {
    Exited(std::process::ExitStatus),
    Stopped,
    TimedOut,
    Lost(String),
}

/// A job's task: reads its output until it ends or is stopped, then records how it ended and
/// tells the observers.
async fn follow(
    job: Arc<Job>,
    observers: Arc<Observers>,
    spawned: Spawned,
    deadline: Option<tokio::time::Instant>,
) {
    let Spawned {
        mut child,
        mut rx,
        pgid,
        lifeline,
        mut guard,
        ..
    } = spawned;
    let mut buf = vec![0u8; 64 * 1024];
    let mut open = true;
    let end = loop {
        tokio::select! {
            read = rx.read(&mut buf), if open => match read {
                Ok(n) if n > 0 => job.push(&buf[..n]),
                Ok(_) | Err(_) => open = false,
            },
            status = child.wait() => break match status {
                Ok(status) => End::Exited(status),
                Err(e) => End::Lost(format!("it could not be waited for: {e}")),
            },
            () = job.stop.cancelled() => break End::Stopped,
            () = sleep_until(deadline) => break End::TimedOut,
        }
    };
    if !matches!(end, End::Exited(_))
        && let Some(pgid) = pgid
    {
        kill_group(pgid, &mut child).await;
    }
    guard.disarm();
    drain(&mut rx, &mut buf, open, |chunk| job.push(chunk)).await;
    // The jail ends with its command; from here its lifeline has nothing left to keep.
    drop(lifeline);
    let (status, code, ending) = verdict(&job, end);
    *lock(&job.ending) = ending;
    let info = {
        let mut info = lock(&job.info);
        info.status = status;
        info.exit_code = code;
        info.ended_at = Some(crate::agent::message::now_ms());
        info.clone()
    };
    observers.tell(&info);
    job.ended.send_replace(true);
}

/// The status, exit code and words of a job that ended so.
fn verdict(job: &Job, end: End) -> (JobStatus, Option<i32>, Option<String>) {
    use std::os::unix::process::ExitStatusExt;
    // Stopped by us however it then ended (the session's registry may have killed it first).
    if job.stop.is_cancelled() {
        return (JobStatus::Killed, None, Some("stopped".into()));
    }
    match end {
        End::Stopped => (JobStatus::Killed, None, Some("stopped".into())),
        End::TimedOut => (
            JobStatus::Killed,
            None,
            Some("stopped: its timeout expired".into()),
        ),
        End::Lost(why) => (JobStatus::Failed, None, Some(why)),
        End::Exited(status) => match status.code() {
            Some(SETUP_FAILED) if job.recent().0.contains(SETUP_FAILED_PREFIX) => (
                JobStatus::Failed,
                Some(SETUP_FAILED),
                Some("the sandbox could not start it, so nothing ran".into()),
            ),
            Some(code) => (
                JobStatus::Exited,
                Some(code),
                Some(format!("exit code {code}")),
            ),
            None => {
                let signal = status.signal().unwrap_or_default();
                (
                    JobStatus::Failed,
                    None,
                    Some(format!("killed by signal {signal}")),
                )
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_info_has_the_wire_shape() {
        let info = JobInfo {
            job_id: "job-1".into(),
            command: "npm run dev".into(),
            status: JobStatus::Running,
            exit_code: None,
            started_at: 5,
            ended_at: None,
        };
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            serde_json::json!({"jobId": "job-1", "command": "npm run dev", "status": "running",
                               "exitCode": null, "startedAt": 5})
        );
    }
}
