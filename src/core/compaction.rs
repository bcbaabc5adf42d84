//! Compaction inside a session (pi's `AgentSession.compact` and its automatic triggers): the
//! one entry point [`Compactor::compact`], used by `agent/compact`, `/compact`, and the hooks
//! that compact on their own:
//!
//! - *threshold*: before each request (the agent's `prepareRequest`, after the live model's),
//!   when the last response's reported usage passed `contextWindow − reserveTokens`;
//! - *overflow*: when a response is a context-overflow error (`recoverError`), compact and
//!   retry the request once; a second overflow in the run ends it with pi's message.
//!
//! pi checks both after the run and continues with a new run; here they happen between the
//! run's requests, so a long run of tool turns compacts too and a retry stays in its run.

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use futures_util::future::BoxFuture;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::agent::declare::declarations;
use crate::agent::handle::WeakAgent;
use crate::agent::hooks::{AgentContext, PrepareRequestHook, RecoverErrorHook};
use crate::agent::message::{AgentMessage, StopReason};
use crate::agent::model::Model;
use crate::agent::stream_contract::StreamFn;
use crate::agent::transcript::initial_system_message;
use crate::compaction::overflow::is_context_overflow;
use crate::compaction::prepare::context_tokens;
use crate::compaction::summary::{Summarizer, SummaryError};
use crate::compaction::{
    CompactionOptions, CompactionReason, CompactionResult, CompactionSettings,
    estimate_context_tokens, estimate_tokens, prepare,
};
use crate::model_registry::EnvSource;
use crate::store::time::ms_from_iso;
use crate::store::{EntryKind, SessionError, SessionFile};

use super::{SessionControls, SessionTools, with_initial_system_message};

/// The session file, shared by the front end (which records messages) and the compactor.
pub type SharedRecord = Arc<Mutex<SessionFile>>;

/// pi's text when an overflow comes back after the compact-and-retry.
pub const OVERFLOW_RETRY_FAILED: &str = "Context overflow recovery failed after one \
compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// `compaction_end`'s fields (pi's shape; `result` absent unless it succeeded).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEnd {
    pub reason: CompactionReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<CompactionResult>,
    pub aborted: bool,
    pub will_retry: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// `compaction_start` / `compaction_end`, as front ends show them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CompactionEvent {
    CompactionStart { reason: CompactionReason },
    CompactionEnd(Box<CompactionEnd>),
}

/// Why a compaction did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("A compaction is already running")]
    Busy,
    /// pi's "Already compacted" / "Nothing to compact (session too small)".
    #[error("{0}")]
    Nothing(&'static str),
    #[error("Compaction cancelled")]
    Aborted,
    #[error("{0}")]
    Failed(String),
    #[error("cannot record the compaction: {0}")]
    Record(#[from] SessionError),
}

/// A compaction that happened: its result and the session's new transcript.
pub struct Compacted {
    pub result: CompactionResult,
    pub messages: Vec<AgentMessage>,
}

type Observer = Arc<dyn Fn(&CompactionEvent) + Send + Sync>;

/// Awaited before a compaction summarises (the session's `PreCompact` hooks): its reason, its
/// instructions, its token.
pub type BeforeCompaction = Arc<
    dyn Fn(CompactionReason, Option<String>, CancellationToken) -> BoxFuture<'static, ()>
        + Send
        + Sync,
>;

/// What a compaction needs of its session.
pub struct CompactorParts {
    pub settings: CompactionSettings,
    pub controls: Arc<SessionControls>,
    pub stream_fn: Arc<dyn StreamFn>,
    pub record: SharedRecord,
    pub tools: Arc<SessionTools>,
    pub system_prompt: String,
    pub session_id: String,
}

/// A session's compactions.
pub struct Compactor {
    parts: CompactorParts,
    agent: OnceLock<WeakAgent>,
    observer: Mutex<Option<Observer>>,
    before: OnceLock<BeforeCompaction>,
    /// The running compaction's token.
    running: Mutex<Option<CancellationToken>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Clears the running token when a compaction ends, on every path — also when its future is
/// dropped before it was ever polled (the reservation is made when `compact` is called).
struct Running(Arc<Compactor>);

impl Drop for Running {
    fn drop(&mut self) {
        *lock(&self.0.running) = None;
    }
}

impl Compactor {
    pub fn new(parts: CompactorParts) -> Compactor {
        Compactor {
            parts,
            agent: OnceLock::new(),
            observer: Mutex::new(None),
            before: OnceLock::new(),
            running: Mutex::new(None),
        }
    }

    /// The agent whose transcript a compaction replaces (set once, by the front end).
    pub fn attach(&self, agent: &Agent) {
        let _ = self.agent.set(agent.downgrade());
    }

    /// What each compaction waits for before it summarises (set once, as the session is
    /// assembled).
    pub fn before_each(&self, before: BeforeCompaction) {
        let _ = self.before.set(before);
    }

    /// Where `compaction_start` / `compaction_end` go.
    pub fn observe(&self, observer: impl Fn(&CompactionEvent) + Send + Sync + 'static) {
        *lock(&self.observer) = Some(Arc::new(observer));
    }

    fn emit(&self, event: CompactionEvent) {
        let observer = lock(&self.observer).clone();
        if let Some(observer) = observer {
            observer(&event);
        }
    }

    /// The settings for this model (pi's caps for small windows applied).
    pub fn settings_for(&self, model: &Model) -> CompactionSettings {
        self.parts.settings.for_window(model.context_window)
    }

    pub fn is_running(&self) -> bool {
        lock(&self.running).is_some()
    }

    /// Cancels the running compaction; whether there was one.
    pub fn abort(&self) -> bool {
        match lock(&self.running).as_ref() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Compacts the session: summarises what comes before the kept recent part with the
    /// session's current model and key, records pi's `compaction` entry, and replaces the
    /// agent's transcript. Emits `compaction_start`/`compaction_end` (an automatic compaction
    /// with nothing to summarise emits nothing, as pi). `cancel` (or [`Compactor::abort`])
    /// cancels it. The compaction is reserved when this is called (a second one is refused
    /// with [`CompactError::Busy`]), so a front end can refuse prompts from then on.
    pub fn compact(
        self: &Arc<Self>,
        reason: CompactionReason,
        instructions: Option<String>,
        cancel: &CancellationToken,
        will_retry: bool,
    ) -> impl Future<Output = Result<Compacted, CompactError>> + Send + use<> {
        let token = cancel.child_token();
        let reserved = {
            let mut running = lock(&self.running);
            match running.is_some() {
                true => Err(CompactError::Busy),
                false => {
                    *running = Some(token.clone());
                    Ok(Running(self.clone()))
                }
            }
        };
        async move {
            let running = reserved?;
            (running.0)
                .compact_now(reason, instructions.as_deref(), &token, will_retry)
                .await
        }
    }

    async fn compact_now(
        &self,
        reason: CompactionReason,
        instructions: Option<&str>,
        token: &CancellationToken,
        will_retry: bool,
    ) -> Result<Compacted, CompactError> {
        let model = self.parts.controls.model();
        let settings = self.settings_for(&model);
        let prepared = {
            let record = lock(&self.parts.record);
            let branch = record.branch_path();
            match prepare(&branch, &settings) {
                Some(prep) => Ok(prep),
                None if branch
                    .last()
                    .is_some_and(|e| matches!(e.kind, EntryKind::Compaction { .. })) =>
                {
                    Err(CompactError::Nothing("Already compacted"))
                }
                None => Err(CompactError::Nothing(
                    "Nothing to compact (session too small)",
                )),
            }
        };
        let prepared = match prepared {
            Err(e) if reason != CompactionReason::Manual => return Err(e),
            other => other,
        };
        if let (Ok(_), Some(before)) = (&prepared, self.before.get()) {
            before(reason, instructions.map(str::to_owned), token.clone()).await;
        }
        self.emit(CompactionEvent::CompactionStart { reason });
        let outcome = match prepared {
            Ok(prep) => {
                self.run(&prep, &model, instructions, token, will_retry)
                    .await
            }
            Err(e) => Err(e),
        };
        let end = match &outcome {
            Ok(done) => CompactionEnd {
                reason,
                result: Some(done.result.clone()),
                aborted: false,
                will_retry,
                error_message: None,
            },
            Err(e) => {
                let aborted = matches!(e, CompactError::Aborted);
                CompactionEnd {
                    reason,
                    result: None,
                    aborted,
                    will_retry: false,
                    error_message: (!aborted).then(|| failure_text(reason, e)),
                }
            }
        };
        self.emit(CompactionEvent::CompactionEnd(Box::new(end)));
        outcome
    }

    async fn run(
        &self,
        prep: &crate::compaction::Preparation,
        model: &Model,
        instructions: Option<&str>,
        token: &CancellationToken,
        drop_failed: bool,
    ) -> Result<Compacted, CompactError> {
        let controls = &self.parts.controls;
        let summarizer = Summarizer {
            stream_fn: self.parts.stream_fn.clone(),
            model: model.clone(),
            api_key: controls.api_key_for(&model.provider),
            thinking: controls.settings().thinking_level,
            session_id: Some(self.parts.session_id.clone()),
        };
        let (summary, usage) = summarizer
            .summarize(prep, instructions, token)
            .await
            .map_err(|e| match e {
                SummaryError::Aborted => CompactError::Aborted,
                SummaryError::Failed(text) => CompactError::Failed(text),
            })?;
        if token.is_cancelled() {
            return Err(CompactError::Aborted);
        }
        let details = prep.files.lists();
        let stored = {
            let mut record = lock(&self.parts.record);
            record.append(EntryKind::Compaction {
                summary: summary.clone(),
                first_kept_entry_id: prep.first_kept_entry_id.clone(),
                tokens_before: prep.tokens_before,
                details: serde_json::to_value(&details).ok(),
                from_hook: None,
            })?;
            record.messages()
        };
        let mut messages = self.transcript(stored);
        if drop_failed
            && matches!(messages.last(), Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Error)
        {
            messages.pop();
        }
        if let Some(agent) = self.agent.get().and_then(WeakAgent::upgrade) {
            agent.set_messages(messages.clone());
        }
        let estimated_tokens_after = messages.iter().map(estimate_tokens).sum();
        Ok(Compacted {
            result: CompactionResult {
                summary,
                first_kept_entry_id: prep.first_kept_entry_id.clone(),
                tokens_before: prep.tokens_before,
                estimated_tokens_after,
                usage,
                details,
            },
            messages,
        })
    }

    /// The stored context as the agent holds it: the system prompt and tools first, as when
    /// the session is resumed.
    fn transcript(&self, stored: Vec<AgentMessage>) -> Vec<AgentMessage> {
        let prompt = &self.parts.system_prompt;
        let tools = &self.parts.tools;
        let mut messages = with_initial_system_message(stored, prompt, tools.base());
        if !matches!(messages.first(), Some(AgentMessage::System(_)))
            && let Some(system) =
                initial_system_message(Some(prompt), &declarations(&tools.current()))
        {
            messages.insert(0, AgentMessage::from(system));
        }
        messages
    }

    /// Whether the last response's usage passed the threshold (pi's `_checkCompaction`, case 3):
    /// only a response newer than the latest compaction counts.
    fn past_threshold(&self, messages: &[AgentMessage], model: &Model) -> bool {
        let settings = self.settings_for(model);
        if !settings.enabled {
            return false;
        }
        let Some(last) = messages.iter().rev().find_map(AgentMessage::as_assistant) else {
            return false;
        };
        if matches!(last.stop_reason, StopReason::Aborted | StopReason::Error) {
            return false;
        }
        let tokens = match context_tokens(&last.usage) {
            0 => estimate_context_tokens(messages),
            reported => reported,
        };
        // The file is only read past the threshold: most requests never touch it.
        settings.should_compact(tokens, model.context_window)
            && (self.latest_compaction_ms()).is_none_or(|at| last.timestamp > at)
    }

    fn latest_compaction_ms(&self) -> Option<i64> {
        let record = lock(&self.parts.record);
        let branch = record.branch_path();
        let latest = branch
            .iter()
            .rev()
            .find(|e| matches!(e.kind, EntryKind::Compaction { .. }))?;
        ms_from_iso(&latest.timestamp)
    }

    /// `prepareRequest`: `inner` first (the live model), then the threshold check against the
    /// model the request goes to; a compaction replaces the request's context.
    pub fn prepare_request_hook(
        self: &Arc<Self>,
        inner: Option<PrepareRequestHook>,
    ) -> PrepareRequestHook {
        let compactor = self.clone();
        Arc::new(move |request, cancel| {
            let compactor = compactor.clone();
            let inner = inner.clone();
            Box::pin(async move {
                let mut update = match &inner {
                    Some(inner) => inner(request.clone(), cancel.clone()).await?,
                    None => None,
                };
                let model = (update.as_ref().and_then(|u| u.model.clone()))
                    .unwrap_or_else(|| request.model.clone());
                if !compactor.past_threshold(&request.context.messages, &model) {
                    return Ok(update);
                }
                let reason = CompactionReason::Threshold;
                // A failed or aborted compaction leaves the context as it was; an abort then
                // ends the run before its request.
                if let Ok(done) = compactor.compact(reason, None, &cancel, false).await {
                    let context = AgentContext::new(done.messages, request.context.tools.clone());
                    update.get_or_insert_with(Default::default).context = Some(context);
                }
                Ok(update)
            })
        })
    }

    /// `recoverError`: a context overflow from the session's current model is compacted and
    /// retried once per run.
    pub fn recover_error_hook(self: &Arc<Self>) -> RecoverErrorHook {
        let compactor = self.clone();
        Arc::new(move |failed, cancel| {
            let compactor = compactor.clone();
            Box::pin(async move {
                let model = compactor.parts.controls.model();
                let same_model =
                    failed.message.provider == model.provider && failed.message.model == model.id;
                if !compactor.settings_for(&model).enabled
                    || !same_model
                    || !is_context_overflow(&failed.message, 0)
                {
                    return Ok(None);
                }
                if failed.attempts > 0 {
                    compactor.emit(CompactionEvent::CompactionEnd(Box::new(CompactionEnd {
                        reason: CompactionReason::Overflow,
                        result: None,
                        aborted: false,
                        will_retry: false,
                        error_message: Some(OVERFLOW_RETRY_FAILED.into()),
                    })));
                    return Ok(None);
                }
                let reason = CompactionReason::Overflow;
                Ok(compactor
                    .compact(reason, None, &cancel, true)
                    .await
                    .ok()
                    .map(|done| AgentContext::new(done.messages, failed.context.tools.clone())))
            })
        })
    }
}

/// pi's `errorMessage` of a failed compaction.
fn failure_text(reason: CompactionReason, error: &CompactError) -> String {
    match reason {
        CompactionReason::Manual => format!("Compaction failed: {error}"),
        CompactionReason::Threshold => format!("Auto-compaction failed: {error}"),
        CompactionReason::Overflow => format!("Context overflow recovery failed: {error}"),
    }
}

/// The user's layer: `compaction` in `$XDG_CONFIG_HOME/agent-lsp/settings.json` (pi's
/// `settings.json` key). A missing file is no layer; a broken one is reported and ignored.
pub fn user_settings(env: &EnvSource) -> Result<CompactionOptions, String> {
    let Some(path) = env.config_dir().map(|dir| dir.join("settings.json")) else {
        return Ok(CompactionOptions::default());
    };
    settings_file(&path)
}

fn settings_file(path: &Path) -> Result<CompactionOptions, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        compaction: CompactionOptions,
    }
    serde_json::from_str::<File>(&text)
        .map(|file| file.compaction)
        .map_err(|e| {
            format!(
                "{}: {e} (its compaction settings are ignored)",
                path.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::agent::model::Model;
    use crate::core::{Headless, SessionSpec, assemble};
    use crate::model_registry::ResolvedModel;
    use crate::provider::scripted::ScriptedProvider;

    #[tokio::test]
    async fn a_compaction_dropped_before_it_ran_releases_its_reservation() {
        let dir = tempfile::tempdir().unwrap();
        let model = ResolvedModel {
            model: Model::default(),
            api_key: None,
        };
        let stream_fn = Arc::new(ScriptedProvider::new(Vec::new()));
        let spec = SessionSpec::isolated(dir.path().to_path_buf(), model, stream_fn);
        let compactor = assemble(spec, &Headless).unwrap().parts.compactor;
        let never_polled = compactor.compact(
            CompactionReason::Manual,
            None,
            &CancellationToken::new(),
            false,
        );
        assert!(compactor.is_running(), "reserved when asked");
        drop(never_polled);
        assert!(
            !compactor.is_running(),
            "a dropped compaction kept the session busy"
        );
        let second = compactor.compact(
            CompactionReason::Manual,
            None,
            &CancellationToken::new(),
            false,
        );
        // Nothing to summarise in an empty session: it ends, and releases the reservation.
        let _ = second.await;
        assert!(!compactor.is_running());
    }
}
