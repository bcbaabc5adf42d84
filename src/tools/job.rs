//! One background job as the registry (`jobs.rs`), the model's tools and front ends see it,
//! wherever it runs ([`Place`]): its state (status, how it ended), its output (what the model
//! has not read yet, and the end of everything for front ends) and the signals of its task
//! (stop, ended). Its task (`jobs.rs` for a local process, `hosted_job.rs` for a job run
//! elsewhere) fills it and records its end through [`Job::conclude`].

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::bash_output::{OutputBuffer, clean};
use super::job_host::{HostExit, JobHost, Pulled};
use crate::sandbox::SandboxPolicy;

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
    /// A job run elsewhere whose host lost part of this output: its words.
    pub gap: Option<String>,
}

/// Where a job runs.
pub(super) enum Place {
    /// A process group of ours: the shell's, or the sandbox launcher's.
    Local { pid: Option<u32>, pgid: Option<Pid> },
    /// Elsewhere (an ACP client's terminal), reached through its host.
    Hosted(Hosted),
}

/// A job run elsewhere: its host, and what keeps reads of it in order.
pub(super) struct Hosted {
    pub(super) host: Arc<dyn JobHost>,
    /// Held while output is pulled, so pulls apply in the order they were made; `true` once
    /// the host released the job (nothing more can be pulled).
    released: tokio::sync::Mutex<bool>,
    /// How it exited, once a read saw it before its task did.
    pub(super) exit_seen: watch::Sender<Option<HostExit>>,
}

impl Hosted {
    pub(super) fn new(host: Arc<dyn JobHost>) -> Hosted {
        Hosted {
            host,
            released: tokio::sync::Mutex::new(false),
            exit_seen: watch::Sender::new(None),
        }
    }

    /// Pulls its new output into `job`; the exit, if the host says it exited.
    async fn pull_into(&self, job: &Job) -> Result<Option<HostExit>, String> {
        let released = self.released.lock().await;
        if *released {
            return Ok(None);
        }
        let pulled = self.host.pull().await?;
        job.push_pulled(&pulled);
        Ok(pulled.exit)
    }

    /// The last of its output, then it is released (its task, once it ended or was stopped).
    pub(super) async fn last_pull(&self, job: &Job) {
        let mut released = self.released.lock().await;
        if let Ok(pulled) = self.host.pull().await {
            job.push_pulled(&pulled);
        }
        self.host.release().await;
        *released = true;
    }
}

/// One background job.
pub struct Job {
    pub id: String,
    /// The tool call that started it.
    pub call_id: String,
    pub(super) place: Place,
    policy: Option<SandboxPolicy>,
    info: Mutex<JobInfo>,
    ending: Mutex<Option<String>>,
    output: Mutex<JobOutput>,
    /// Asks its task to stop it.
    pub(super) stop: CancellationToken,
    ended: watch::Sender<bool>,
}

/// Its output: what the model has not read yet, and the end of everything, for front ends.
struct JobOutput {
    unread: OutputBuffer,
    spill_dir: PathBuf,
    recent: VecDeque<u8>,
    total: u64,
    /// What a host said it lost of the unread output.
    gap: Option<String>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Job {
    /// A running job `id` of `command`, started by call `call_id`.
    pub(super) fn new(
        id: String,
        call_id: &str,
        command: &str,
        place: Place,
        policy: Option<SandboxPolicy>,
        spill_dir: PathBuf,
    ) -> Job {
        Job {
            call_id: call_id.to_owned(),
            place,
            policy,
            info: Mutex::new(JobInfo {
                job_id: id.clone(),
                command: command.to_owned(),
                status: JobStatus::Running,
                exit_code: None,
                started_at: crate::agent::message::now_ms(),
                ended_at: None,
            }),
            id,
            ending: Mutex::default(),
            output: Mutex::new(JobOutput {
                unread: OutputBuffer::with_spill_limit(spill_dir.clone(), SPILL_LIMIT),
                spill_dir,
                recent: VecDeque::new(),
                total: 0,
                gap: None,
            }),
            stop: CancellationToken::new(),
            ended: watch::Sender::new(false),
        }
    }

    pub fn info(&self) -> JobInfo {
        lock(&self.info).clone()
    }

    pub fn is_running(&self) -> bool {
        lock(&self.info).status == JobStatus::Running
    }

    /// Where it runs, for the model: `pid 4242`, or its host's words.
    pub fn whereabouts(&self) -> String {
        match &self.place {
            Place::Local { pid: Some(pid), .. } => format!("pid {pid}"),
            Place::Local { pid: None, .. } => "pid unknown".to_owned(),
            Place::Hosted(hosted) => hosted.host.whereabouts(),
        }
    }

    pub(super) fn push(&self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        let mut out = lock(&self.output);
        out.unread.push(chunk);
        out.total += chunk.len() as u64;
        out.recent.extend(chunk);
        let over = out.recent.len().saturating_sub(RECENT_BYTES);
        out.recent.drain(..over);
    }

    fn push_pulled(&self, pulled: &Pulled) {
        self.push(pulled.text.as_bytes());
        if let Some(gap) = &pulled.gap {
            lock(&self.output).gap = Some(gap.clone());
        }
    }

    /// Brings in what a job run elsewhere printed since the last read (a local job's task
    /// does so all along). When that shows it exited, waits until its task recorded the end
    /// (its last output, its release), so the read that follows says it ended.
    pub async fn refresh(&self) -> Result<(), String> {
        let Place::Hosted(hosted) = &self.place else {
            return Ok(());
        };
        if let Some(exit) = hosted.pull_into(self).await? {
            hosted.exit_seen.send_replace(Some(exit));
            let _ = tokio::time::timeout(END_WITHIN, self.wait_ended()).await;
        }
        Ok(())
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
            gap: out.gap.take(),
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

    /// Its task is done with it: it ended so (`status`, `code`, the words), which the
    /// observers are told before anyone waiting for its end is let go.
    pub(super) fn conclude(&self, (status, code, ending): Ending, observers: &Observers) {
        *lock(&self.ending) = ending;
        let info = {
            let mut info = lock(&self.info);
            info.status = status;
            info.exit_code = code;
            info.ended_at = Some(crate::agent::message::now_ms());
            info.clone()
        };
        observers.tell(&info);
        self.ended.send_replace(true);
    }
}

/// How a job ended, as its task records it: its status, exit code and words.
pub(super) type Ending = (JobStatus, Option<i32>, Option<String>);

/// How a job's task saw it end, wherever it ran: `X` is an exit as its place tells it.
pub(super) enum End<X> {
    Exited(X),
    Stopped,
    TimedOut,
    /// It could not be waited for any more (why).
    Lost(String),
}

impl<X> End<X> {
    /// How it ended, an exit told by `exited`.
    pub(super) fn ending(self, exited: impl FnOnce(X) -> Ending) -> Ending {
        match self {
            End::Exited(exit) => exited(exit),
            End::Stopped => stopped(),
            End::TimedOut => (
                JobStatus::Killed,
                None,
                Some("stopped: its timeout expired".into()),
            ),
            End::Lost(why) => (JobStatus::Failed, None, Some(why)),
        }
    }
}

/// A job stopped by us.
pub(super) fn stopped() -> Ending {
    (JobStatus::Killed, None, Some("stopped".into()))
}

/// A job that exited with `code`.
pub(super) fn exited_with(code: i32) -> Ending {
    (
        JobStatus::Exited,
        Some(code),
        Some(format!("exit code {code}")),
    )
}

/// A job killed by `signal`.
pub(super) fn killed_by(signal: impl std::fmt::Display) -> Ending {
    (
        JobStatus::Failed,
        None,
        Some(format!("killed by signal {signal}")),
    )
}

/// Told of every job's start and end.
pub(super) type Observer = Arc<dyn Fn(&JobInfo) + Send + Sync>;

/// The observers of a registry, shared with its jobs' tasks (which never hold the registry).
#[derive(Default)]
pub(super) struct Observers(pub(super) Mutex<Vec<Observer>>);

impl Observers {
    pub(super) fn tell(&self, info: &JobInfo) {
        let observers: Vec<Observer> = lock(&self.0).clone();
        for observer in observers {
            observer(info);
        }
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
