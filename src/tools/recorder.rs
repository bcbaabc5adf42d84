//! How a tool whose files are known only as it runs (`lsp_rename`: the files its language
//! servers' edit touches) has its changes journaled as `edit`'s are: it names the files before
//! it changes them, and again after. The session's effect journal implements this
//! (`core::journal`), so `agent/runChanges` and `agent/revert` see those changes.

use std::path::PathBuf;

use futures_util::future::BoxFuture;

/// One call's files, as a [`ChangeRecorder`] journals them.
#[derive(Clone, Debug)]
pub struct RecordedCall {
    pub tool_call_id: String,
    pub tool: String,
    /// Absolute, resolved paths.
    pub paths: Vec<PathBuf>,
}

/// The journal's side of a call that changes several files.
pub trait ChangeRecorder: Send + Sync + std::fmt::Debug {
    /// Records that the call is about to change its files (their contents now kept, so a
    /// revert restores them); what it hands back goes to [`ChangeRecorder::after`].
    fn before<'a>(&'a self, call: &'a RecordedCall) -> BoxFuture<'a, Vec<Option<String>>>;

    /// Records what the call changed, given what [`ChangeRecorder::before`] handed back.
    fn after<'a>(
        &'a self,
        call: &'a RecordedCall,
        before: Vec<Option<String>>,
    ) -> BoxFuture<'a, ()>;
}
