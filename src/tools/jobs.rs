//! A session's background jobs: commands `bash` started with `background: true`, which run while
//! the agent works (dev servers, watch builds). Each runs exactly as a `bash` command does (the
//! same sandbox, launcher and process group); a task of its own reads its output and waits for
//! it. The model reads what it printed since its last read (`bash_output`) and stops it
//! (`bash_kill`); front ends list, stop and show jobs through [`Jobs`], and observe each start
//! and end ([`Jobs::observe`]).
//!
//! A job runs as a process of ours or elsewhere ([`Jobs::start_hosted`]: an ACP client's
//! terminal, through a [`JobHost`]); one registry keeps both, and `job.rs` is a job's state
//! wherever it runs. This file is the registry and the task of a local job.
//!
//! Nothing outlives its session: [`Jobs::end_all`] stops every job (a front end's session close
//! and exit), dropping the registry kills what is left at once, and a sandboxed job's launcher
//! dies with the daemon (its lifeline).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use tokio::io::AsyncReadExt;

pub use super::job::{END_WITHIN, Job, JobInfo, JobStatus, RECENT_BYTES, Unread};
use super::job::{End, Ending, Hosted, Observers, Place, exited_with, killed_by, lock, stopped};
use super::job_host::JobHost;
use super::process::{BashSettings, Spawned, check_cwd, sleep_until, spawn};
use crate::agent::tool::ToolError;
use crate::sandbox::SandboxPolicy;
use crate::sandbox::jail::{SETUP_FAILED, SETUP_FAILED_PREFIX};

/// At most this many jobs of a session run at once.
pub const MAX_RUNNING: usize = 16;
/// Ended jobs kept for listing and reading, the oldest dropped first.
const KEEP_ENDED: usize = 32;

/// Why a job request cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("No background job {0:?} in this session")]
    Unknown(String),
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
        self.room()?;
        let spawned = spawn(settings, command, cwd)?;
        let place = Place::Local {
            pid: spawned.child.id(),
            pgid: spawned.pgid,
        };
        let policy = spawned.policy.clone();
        let job = self.add(call_id, command, place, policy.clone(), &settings.spill_dir);
        let observers = self.observers.clone();
        tokio::spawn(follow(job.clone(), observers, spawned, deadline(timeout)));
        Ok(Started { job, policy })
    }

    /// Starts a job that runs elsewhere: `create` makes it (an ACP client's terminal) once
    /// there is room for one more, and the job is kept, listed, read and stopped as a local
    /// one. `spill_dir` is where its unread output goes when it is long (`None`: the temp dir).
    pub async fn start_hosted(
        &self,
        command: &str,
        timeout: Option<f64>,
        call_id: &str,
        spill_dir: &Option<PathBuf>,
        create: impl Future<Output = Result<Arc<dyn JobHost>, ToolError>>,
    ) -> Result<Arc<Job>, ToolError> {
        self.room()?;
        let place = Place::Hosted(Hosted::new(create.await?));
        let job = self.add(call_id, command, place, None, spill_dir);
        let observers = self.observers.clone();
        let follow = super::hosted_job::follow(job.clone(), observers, deadline(timeout));
        tokio::spawn(follow);
        Ok(job)
    }

    /// Refuses a start while [`MAX_RUNNING`] jobs run.
    fn room(&self) -> Result<(), ToolError> {
        let running = lock(&self.jobs).iter().filter(|j| j.is_running()).count();
        if running < MAX_RUNNING {
            return Ok(());
        }
        Err(ToolError::new(format!(
            "Not started: {running} background jobs are running already (at most \
             {MAX_RUNNING}). Stop one with bash_kill first."
        )))
    }

    /// A started job kept and announced under the next id.
    fn add(
        &self,
        call_id: &str,
        command: &str,
        place: Place,
        policy: Option<SandboxPolicy>,
        spill_dir: &Option<PathBuf>,
    ) -> Arc<Job> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let spill_dir = spill_dir.clone().unwrap_or_else(std::env::temp_dir);
        let job = Job::new(
            format!("job-{n}"),
            call_id,
            command,
            place,
            policy,
            spill_dir,
        );
        let job = Arc::new(job);
        self.keep(job.clone());
        self.observers.tell(&job.info());
        job
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
            // A job run elsewhere is stopped and released by its task, if the runtime lets it.
            if let Place::Local {
                pgid: Some(pgid), ..
            } = job.place
            {
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

/// A job's task: reads its output until it ends or is stopped, then records how it ended and
/// tells the observers.
async fn follow(
    job: Arc<Job>,
    observers: Arc<Observers>,
    mut spawned: Spawned,
    deadline: Option<tokio::time::Instant>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut open = true;
    let end = loop {
        tokio::select! {
            read = spawned.rx.read(&mut buf), if open => match read {
                Ok(n) if n > 0 => job.push(&buf[..n]),
                Ok(_) | Err(_) => open = false,
            },
            status = spawned.child.wait() => break match status {
                Ok(status) => End::Exited(status),
                Err(e) => End::Lost(format!("it could not be waited for: {e}")),
            },
            () = job.stop.cancelled() => break End::Stopped,
            () = sleep_until(deadline) => break End::TimedOut,
        }
    };
    let exited = matches!(end, End::Exited(_));
    (spawned.wind_down(exited, &mut buf, open, |chunk| job.push(chunk))).await;
    job.conclude(verdict(&job, end), &observers);
}

/// When a job given `timeout` seconds is stopped.
fn deadline(timeout: Option<f64>) -> Option<tokio::time::Instant> {
    timeout.map(|s| tokio::time::Instant::now() + Duration::from_secs_f64(s))
}

/// The status, exit code and words of a job that ended so.
fn verdict(job: &Job, end: End<std::process::ExitStatus>) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    // Stopped by us however it then ended (the session's registry may have killed it first).
    if job.stop.is_cancelled() {
        return stopped();
    }
    end.ending(|status| match status.code() {
        Some(SETUP_FAILED) if job.recent().0.contains(SETUP_FAILED_PREFIX) => (
            JobStatus::Failed,
            Some(SETUP_FAILED),
            Some("the sandbox could not start it, so nothing ran".into()),
        ),
        Some(code) => exited_with(code),
        None => killed_by(status.signal().unwrap_or_default()),
    })
}
