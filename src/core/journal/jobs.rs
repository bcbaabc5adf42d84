//! A background job's effects on files. A job is a command that keeps running after its `bash`
//! call returned, so its changes are recorded in segments: the `bash` call's `done` entry holds
//! what changed while it started the job; each later checkpoint a `done` entry of what changed
//! since the one before:
//! - at every `bash_output` and `bash_kill` call naming the job: under that call's id and tool
//!   name, when something changed;
//! - when the job ends (by itself or stopped): under the id of the `bash` call that started it,
//!   always (its last entry).
//!
//! Each entry is of the run current when it is written (the run that read or stopped the job; a
//! job ending between runs, the last run) and names the job (`job`). Files that other journaled
//! calls changed meanwhile (an `edit`, a foreground command) are left out of the job's entry:
//! they are those calls' doing. A change of the job to the same file in the same segment is
//! then left out too; it is the price of not knowing which process wrote a file.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::tools::{JobInfo, JobStatus, Jobs};

use super::command::{Started, segment};
use super::{Effect, FileEffect, Journal, Phase};

/// One job followed by the journal.
struct Watch {
    /// The `bash` call that started it.
    call: String,
    /// Where its next segment starts; `None` once its changes are no longer followed (it ended,
    /// or they became unknown).
    next: tokio::sync::Mutex<Option<Started>>,
    /// Files other calls changed since its last checkpoint.
    others: Mutex<HashSet<PathBuf>>,
}

#[derive(Default)]
struct Watched {
    jobs: HashMap<String, Arc<Watch>>,
    /// Jobs that ended before their start was recorded.
    ended_early: HashSet<String>,
}

/// The jobs a session's journal follows.
#[derive(Default)]
pub(super) struct JobWatches(Mutex<Watched>);

impl JobWatches {
    fn lock(&self) -> MutexGuard<'_, Watched> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records each job's last segment when it ends.
    pub(super) fn follow(self: &Arc<Self>, journal: &Arc<Journal>, jobs: &Jobs) {
        let (watches, journal): (Weak<JobWatches>, Weak<Journal>) =
            (Arc::downgrade(self), Arc::downgrade(journal));
        jobs.observe(move |info: &JobInfo| {
            if info.status == JobStatus::Running {
                return;
            }
            let (Some(watches), Some(journal)) = (watches.upgrade(), journal.upgrade()) else {
                return;
            };
            let watch = {
                let mut watched = watches.lock();
                let watch = watched.jobs.get(&info.job_id).cloned();
                if watch.is_none() {
                    watched.ended_early.insert(info.job_id.clone());
                }
                watch
            };
            if let Some(watch) = watch {
                let job = info.job_id.clone();
                // Counted before the job is said to have ended: whoever waits for its end and
                // then for the journal (a session closing) finds its last entry written.
                journal.hashing_started();
                tokio::spawn(async move {
                    let call = watch.call.clone();
                    (watches.checkpoint(&journal, &job, &call, "bash", true)).await;
                    journal.hashing_done();
                });
            }
        });
    }

    /// Another call changed `files`: not the doing of the jobs running now.
    pub(super) fn changed_by_others<'a>(&self, files: impl Iterator<Item = &'a FileEffect>) {
        let paths: Vec<PathBuf> = files.map(|f| PathBuf::from(&f.path)).collect();
        if paths.is_empty() {
            return;
        }
        for watch in self.lock().jobs.values() {
            let mut others = watch.others.lock().unwrap_or_else(|e| e.into_inner());
            others.extend(paths.iter().cloned());
        }
    }

    /// The start of job `job` by call `call` was recorded: its changes are followed from
    /// `next` on (`None`: they cannot be).
    pub(super) async fn watch(
        &self,
        journal: &Arc<Journal>,
        job: &str,
        call: &str,
        next: Option<Started>,
    ) {
        let Some(next) = next else { return };
        let ended = {
            let mut watched = self.lock();
            let watch = Watch {
                call: call.to_owned(),
                next: tokio::sync::Mutex::new(Some(next)),
                others: Mutex::default(),
            };
            watched.jobs.insert(job.to_owned(), Arc::new(watch));
            watched.ended_early.remove(job)
        };
        if ended {
            self.checkpoint(journal, job, call, "bash", true).await;
        }
    }

    /// Records what job `job` changed since its last checkpoint, as call `call` of `tool`;
    /// `last`: it ended, and is followed no more.
    pub(super) async fn checkpoint(
        &self,
        journal: &Arc<Journal>,
        job: &str,
        call: &str,
        tool: &str,
        last: bool,
    ) {
        let watch = match last {
            true => self.lock().jobs.remove(job),
            false => self.lock().jobs.get(job).cloned(),
        };
        let Some(watch) = watch else {
            return;
        };
        let mut next = watch.next.lock().await;
        let Some(started) = next.take() else {
            return;
        };
        let (files, again) = segment(journal, started, !last).await;
        *next = again;
        let others = std::mem::take(&mut *watch.others.lock().unwrap_or_else(|e| e.into_inner()));
        let files = files.map(|files| {
            (files.into_iter())
                .filter(|f| !others.contains(&PathBuf::from(&f.path)))
                .collect::<Vec<_>>()
        });
        if !last && files.as_ref().is_some_and(Vec::is_empty) {
            return;
        }
        journal.append(Effect {
            untracked: files.is_none(),
            job: Some(job.to_owned()),
            ..Effect::new(Phase::Done, call, tool, files.unwrap_or_default())
        });
    }
}
