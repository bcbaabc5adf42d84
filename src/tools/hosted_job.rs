//! The task of a job run elsewhere ([`JobHost`], an ACP client's terminal): it waits until the
//! job exits (or a read saw it exit), is stopped or its timeout expires; stops it unless it
//! exited; pulls the last of its output and releases it; then records how it ended, as a local
//! job's task does.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::job::{End, Ending, Job, JobStatus, Observers, Place, exited_with, killed_by, stopped};
use super::job_host::HostExit;
use super::process::sleep_until;

/// How long a stopped job has to exit before its last output is read anyway.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Follows `job` (which must be hosted) to its end.
pub(super) async fn follow(
    job: Arc<Job>,
    observers: Arc<Observers>,
    deadline: Option<tokio::time::Instant>,
) {
    let Place::Hosted(hosted) = &job.place else {
        return;
    };
    let host = hosted.host.clone();
    let mut wait = std::pin::pin!(host.wait());
    let end = tokio::select! {
        exit = &mut wait => match exit {
            Ok(exit) => End::Exited(exit),
            Err(why) => End::Lost(why),
        },
        exit = seen(hosted.exit_seen.subscribe()) => End::Exited(exit),
        () = job.stop.cancelled() => End::Stopped,
        () = sleep_until(deadline) => End::TimedOut,
    };
    if !matches!(end, End::Exited(_)) {
        host.kill().await;
        // Its last words are in its output once it has exited.
        if !matches!(end, End::Lost(_)) {
            let _ = tokio::time::timeout(EXIT_GRACE, &mut wait).await;
        }
    }
    hosted.last_pull(&job).await;
    job.conclude(verdict(&job, end), &observers);
}

/// The exit a read saw; never, if none does.
async fn seen(mut rx: watch::Receiver<Option<HostExit>>) -> HostExit {
    let exit = match rx.wait_for(Option::is_some).await {
        Ok(exit) => exit.clone(),
        Err(_) => None,
    };
    match exit {
        Some(exit) => exit,
        None => std::future::pending().await,
    }
}

/// The status, exit code and words of a job that ended so.
fn verdict(job: &Job, end: End<HostExit>) -> Ending {
    // Stopped by us however it then ended (the session's registry may have stopped it first).
    if job.stop.is_cancelled() && !matches!(end, End::Exited(_)) {
        return stopped();
    }
    end.ending(|exit| match exit {
        HostExit {
            code: Some(code), ..
        } => exited_with(code),
        HostExit {
            signal: Some(signal),
            ..
        } => killed_by(signal),
        _ => (
            JobStatus::Failed,
            None,
            Some("it ended without an exit code".into()),
        ),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use futures_util::future::BoxFuture;
    use tokio::sync::Notify;

    use super::super::job_host::{JobHost, Pulled};
    use super::super::jobs::Jobs;
    use super::*;

    /// A host in memory: pulls give what is queued, `wait` answers once `exit` is set and
    /// `exited` notified (or fails with `lost`); every call is recorded.
    #[derive(Default)]
    struct Host {
        pulls: Mutex<VecDeque<Pulled>>,
        exit: Mutex<Option<Result<HostExit, String>>>,
        exited: Notify,
        calls: Mutex<Vec<&'static str>>,
    }

    fn record(host: &Arc<Host>, call: &'static str) {
        host.calls.lock().unwrap().push(call);
    }

    struct Shared(Arc<Host>);

    impl JobHost for Shared {
        fn whereabouts(&self) -> String {
            "in memory".into()
        }
        fn pull(&self) -> BoxFuture<'static, Result<Pulled, String>> {
            let host = self.0.clone();
            record(&host, "pull");
            let pulled = host.pulls.lock().unwrap().pop_front().unwrap_or_default();
            Box::pin(async move { Ok(pulled) })
        }
        fn wait(&self) -> BoxFuture<'static, Result<HostExit, String>> {
            let host = self.0.clone();
            Box::pin(async move {
                loop {
                    let notified = host.exited.notified();
                    if let Some(exit) = host.exit.lock().unwrap().clone() {
                        return exit;
                    }
                    notified.await;
                }
            })
        }
        /// The command exits killed, as in a terminal.
        fn kill(&self) -> BoxFuture<'static, ()> {
            record(&self.0, "kill");
            let killed = HostExit {
                code: None,
                signal: Some("SIGKILL".into()),
            };
            let mut exit = self.0.exit.lock().unwrap();
            exit.get_or_insert(Ok(killed));
            self.0.exited.notify_waiters();
            Box::pin(async {})
        }
        fn release(&self) -> BoxFuture<'static, ()> {
            record(&self.0, "release");
            Box::pin(async {})
        }
    }

    async fn started(jobs: &Jobs, host: &Arc<Host>) -> Arc<Job> {
        let shared: Arc<dyn JobHost> = Arc::new(Shared(host.clone()));
        let created = async { Ok(shared) };
        (jobs
            .start_hosted("serve", None, "call-1", &None, created)
            .await)
            .unwrap()
    }

    fn output(job: &Job) -> String {
        job.read().output.render().0
    }

    #[tokio::test]
    async fn a_read_that_sees_the_exit_ends_the_job_before_the_hosts_wait_answers() {
        let (jobs, host) = (Jobs::new(), Arc::new(Host::default()));
        let job = started(&jobs, &host).await;
        assert_eq!(job.whereabouts(), "in memory");
        let exit = HostExit {
            code: Some(0),
            signal: None,
        };
        host.pulls.lock().unwrap().extend([
            Pulled {
                text: "bye\n".into(),
                gap: None,
                exit: Some(exit),
            },
            Pulled::default(),
        ]);
        job.refresh().await.unwrap();
        let info = job.info();
        assert_eq!((info.status, info.exit_code), (JobStatus::Exited, Some(0)));
        assert_eq!(output(&job), "bye");
        assert_eq!(*host.calls.lock().unwrap(), ["pull", "pull", "release"]);
        // Released: a later read asks the host nothing.
        job.refresh().await.unwrap();
        assert_eq!(host.calls.lock().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn a_stopped_job_is_killed_then_its_last_output_pulled_and_it_is_released() {
        let (jobs, host) = (Jobs::new(), Arc::new(Host::default()));
        let job = started(&jobs, &host).await;
        host.pulls.lock().unwrap().push_back(Pulled {
            text: "tick\n".into(),
            gap: Some("part of it was lost".into()),
            exit: None,
        });
        jobs.kill(&job.id).await.unwrap();
        assert_eq!(*host.calls.lock().unwrap(), ["kill", "pull", "release"]);
        let unread = job.read();
        assert_eq!(unread.info.status, JobStatus::Killed);
        assert_eq!(unread.ending.as_deref(), Some("stopped"));
        assert_eq!(unread.gap.as_deref(), Some("part of it was lost"));
        assert_eq!(jobs.list()[0].status, JobStatus::Killed);
    }

    #[tokio::test]
    async fn a_job_that_cannot_be_waited_for_fails_and_is_stopped_and_released() {
        let (jobs, host) = (Jobs::new(), Arc::new(Host::default()));
        *host.exit.lock().unwrap() = Some(Err("the client is gone".into()));
        let job = started(&jobs, &host).await;
        job.wait_ended().await;
        assert_eq!(job.info().status, JobStatus::Failed);
        assert_eq!(job.ending().as_deref(), Some("the client is gone"));
        assert_eq!(*host.calls.lock().unwrap(), ["kill", "pull", "release"]);
    }

    #[tokio::test]
    async fn an_exit_by_signal_is_a_failure_and_an_exit_code_an_exit() {
        let (jobs, host) = (Jobs::new(), Arc::new(Host::default()));
        let exit = |code, signal: Option<&str>| HostExit {
            code,
            signal: signal.map(str::to_owned),
        };
        *host.exit.lock().unwrap() = Some(Ok(exit(None, Some("SIGSEGV"))));
        let job = started(&jobs, &host).await;
        job.wait_ended().await;
        assert_eq!(job.info().status, JobStatus::Failed);
        assert_eq!(job.ending().as_deref(), Some("killed by signal SIGSEGV"));
        *host.exit.lock().unwrap() = Some(Ok(exit(Some(2), None)));
        let job = started(&jobs, &host).await;
        job.wait_ended().await;
        assert_eq!(
            (job.info().status, job.info().exit_code),
            (JobStatus::Exited, Some(2))
        );
        assert_eq!(job.id, "job-2");
    }
}
