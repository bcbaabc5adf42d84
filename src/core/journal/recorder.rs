//! The journal as a tool's [`ChangeRecorder`]: a call that changes several files known only as
//! it runs (`lsp_rename`) gets the `intended` and `done` entries `edit` gets for its one file
//! (`tool.rs`), with before-images for each file's first change in the run.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::tool::{Which, hashed, image};
use super::{Effect, FileEffect, Journal, PENDING, Phase};
use crate::tools::Workspace;
use crate::tools::recorder::{ChangeRecorder, RecordedCall};

/// The session's journal over its workspace, handed to the tools that change files themselves.
pub(super) struct JournalRecorder {
    pub(super) journal: Arc<Journal>,
    pub(super) ws: Arc<dyn Workspace>,
}

impl std::fmt::Debug for JournalRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalRecorder").finish_non_exhaustive()
    }
}

fn effect(call: &RecordedCall, phase: Phase, files: Vec<FileEffect>) -> Effect {
    Effect::new(phase, &call.tool_call_id, &call.tool, files)
}

impl ChangeRecorder for JournalRecorder {
    fn before<'a>(&'a self, call: &'a RecordedCall) -> BoxFuture<'a, Vec<Option<String>>> {
        Box::pin(async move {
            let (journal, ws) = (&self.journal, &self.ws);
            let mut befores = Vec::with_capacity(call.paths.len());
            let mut planned = Vec::with_capacity(call.paths.len());
            for path in &call.paths {
                let before = match journal.first_change_in_run(path, &call.tool_call_id) {
                    true => image(journal, ws, path).await,
                    false => {
                        let (id, tool) = (&call.tool_call_id, &call.tool);
                        hashed(journal, ws, path, id, tool, Which::Before).await
                    }
                };
                planned.push(FileEffect {
                    path: path.display().to_string(),
                    before: before.clone(),
                    before_known: true,
                    unknown: None,
                    after: None,
                });
                befores.push(before);
            }
            journal.append(effect(call, Phase::Intended, planned));
            befores
        })
    }

    fn after<'a>(
        &'a self,
        call: &'a RecordedCall,
        befores: Vec<Option<String>>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (journal, ws) = (&self.journal, &self.ws);
            let mut files = Vec::new();
            for (path, before) in call.paths.iter().zip(befores) {
                let (id, tool) = (&call.tool_call_id, &call.tool);
                let after = hashed(journal, ws, path, id, tool, Which::After).await;
                journal.remember(path, None);
                let pending = [&before, &after]
                    .iter()
                    .any(|h| h.as_deref() == Some(PENDING));
                if pending || after != before {
                    files.push(FileEffect {
                        path: path.display().to_string(),
                        before,
                        before_known: true,
                        unknown: None,
                        after,
                    });
                }
            }
            journal.append(effect(call, Phase::Done, files));
        })
    }
}
