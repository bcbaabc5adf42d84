//! Where a background job runs when it is no process of ours: an ACP client's terminal
//! (`acp/terminal_job.rs`). The session's registry (`jobs.rs`) keeps such a job as it keeps a
//! local one (listed, read, stopped, ended with its session, its start and end observed) and
//! reaches it only through [`JobHost`].

use futures_util::future::BoxFuture;

/// A job run elsewhere, as the registry drives it. The futures own what they need, so the
/// registry's task can hold them across a `select!`.
pub trait JobHost: Send + Sync + 'static {
    /// Where it runs, for the model (`in the client's terminal`).
    fn whereabouts(&self) -> String;

    /// What it printed since the last pull, whether part of it was lost, and how it exited
    /// once it has.
    fn pull(&self) -> BoxFuture<'static, Result<Pulled, String>>;

    /// Resolves once it exited (an error: it cannot be followed any more).
    fn wait(&self) -> BoxFuture<'static, Result<HostExit, String>>;

    /// Stops it; what it printed stays readable until it is released.
    fn kill(&self) -> BoxFuture<'static, ()>;

    /// Frees it (stopping it if it still runs): nothing of it can be pulled afterwards.
    fn release(&self) -> BoxFuture<'static, ()>;
}

/// A pull's news.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pulled {
    pub text: String,
    /// The host lost part of what was printed since the last pull: the words for the model.
    pub gap: Option<String>,
    /// Set once it exited.
    pub exit: Option<HostExit>,
}

/// How a job run elsewhere ended: its exit code, or the signal that ended it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostExit {
    pub code: Option<i32>,
    pub signal: Option<String>,
}
