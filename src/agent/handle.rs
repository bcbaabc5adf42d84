//! The `Agent` handle (pi's `Agent` class, spec §4): state, queues, listeners and runs.
//!
//! A run starts synchronously (busy check, then a task spawned on the current Tokio runtime)
//! and returns a [`RunHandle`] at once. Listeners are awaited in subscription order for every
//! event, after the state reduction, so `message_end` is a barrier: tool preflight only starts
//! once the assistant `message_end` listeners settled, and `agent_end` listeners finish before
//! the run is idle.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use agent_lsp::agent::{Agent, AgentOptions};
//! # async fn demo(stream_fn: Arc<dyn agent_lsp::agent::stream_contract::StreamFn>) {
//! let agent = Agent::new(AgentOptions::new(stream_fn));
//! agent.subscribe(Arc::new(|event, _cancel| {
//!     Box::pin(async move {
//!         println!("{}", event.kind());
//!         Ok(())
//!     })
//! }));
//! let run = agent.prompt_text("Hello").expect("idle agent");
//! let outcome = run.wait().await; // never hangs; `outcome.error` says why a run failed
//! assert!(!agent.state().is_streaming);
//! # let _ = outcome;
//! # }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agent::config::{DEFAULT_ABORT_GRACE, LoopOutcome, RunFailure};
use crate::agent::declare::declarations;
use crate::agent::event::AgentEvent;
use crate::agent::hooks::{AgentHooks, CallbackError};
use crate::agent::message::{
    AgentMessage, ContentBlock, MessageContent, ThinkingLevel, UserMessage, now_ms,
};
use crate::agent::model::Model;
use crate::agent::queue::{PendingQueue, QueueMode};
use crate::agent::state::AgentState;
use crate::agent::stream_contract::{StreamFn, StreamOptions};
use crate::agent::tool::{ExecutionMode, ToolRef};
use crate::agent::transcript::{current_system_message, initial_system_message};

pub const BUSY_PROMPT: &str = "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.";
pub const BUSY_CONTINUE: &str =
    "Agent is already processing. Wait for completion before continuing.";
pub const BUSY_RESET: &str = "Agent is already processing. Wait for completion before resetting.";
pub const NO_MESSAGES: &str = "No messages to continue from";
pub const CONTINUE_FROM_ASSISTANT: &str = "Cannot continue from message role: assistant";

/// Why an Agent call was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// A run is active (pi's exact texts: [`BUSY_PROMPT`], [`BUSY_CONTINUE`], [`BUSY_RESET`]).
    #[error("{0}")]
    Busy(String),
    /// `continue_run` has nothing to continue from ([`NO_MESSAGES`], [`CONTINUE_FROM_ASSISTANT`]).
    #[error("{0}")]
    NothingToContinue(String),
    #[error("Agent runs need a Tokio runtime")]
    NoRuntime,
}

/// Receives every event of a run with the run's cancellation token (pi's `signal`; clone it
/// to keep it in the returned future); `Err` fails the run.
pub type AgentListener = Arc<
    dyn Fn(Arc<AgentEvent>, &CancellationToken) -> BoxFuture<'static, Result<(), CallbackError>>
        + Send
        + Sync,
>;

/// Identifies a subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ListenerId(u64);

/// How to build an [`Agent`]. Start from [`AgentOptions::new`] and set what differs.
#[derive(Clone)]
pub struct AgentOptions {
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    /// With `tools`, becomes the leading system message unless `messages` starts with one.
    pub system_prompt: Option<String>,
    pub tools: Vec<ToolRef>,
    pub messages: Vec<AgentMessage>,
    pub stream_fn: Arc<dyn StreamFn>,
    pub hooks: AgentHooks,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub tool_execution: ExecutionMode,
    /// Template for every request: api_key, session_id, max_tokens, identity, extras…
    pub stream_options: StreamOptions,
    /// How long a tool ignoring cancellation may run after an abort (improvement 2).
    pub abort_grace: Duration,
    /// Withdraw and retry once a response faking tool calls in text (improvement 5).
    pub protocol_repair: bool,
}

impl AgentOptions {
    /// pi's defaults: model `unknown`, thinking off, one-at-a-time queues, parallel tools.
    pub fn new(stream_fn: Arc<dyn StreamFn>) -> Self {
        AgentOptions {
            model: Model::default(),
            thinking_level: ThinkingLevel::Off,
            system_prompt: None,
            tools: Vec::new(),
            messages: Vec::new(),
            stream_fn,
            hooks: AgentHooks::default(),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            tool_execution: ExecutionMode::Parallel,
            stream_options: StreamOptions::default(),
            abort_grace: DEFAULT_ABORT_GRACE,
            protocol_repair: true,
        }
    }
}

/// How a run ended: what the loop reported.
pub type RunOutcome = LoopOutcome;

/// A started run.
pub struct RunHandle {
    join: JoinHandle<RunOutcome>,
}

impl RunHandle {
    /// Waits for the run's end (after its `agent_end` listeners). Never hangs on a failure.
    pub async fn wait(self) -> RunOutcome {
        match self.join.await {
            Ok(outcome) => outcome,
            Err(e) => {
                let text = format!("Agent run task failed: {e}");
                RunOutcome {
                    error: Some(text.clone()),
                    failure: Some(RunFailure::Panic(text)),
                    ..RunOutcome::default()
                }
            }
        }
    }
}

/// The per-run settings that are not state.
#[derive(Clone)]
struct Settings {
    stream_fn: Arc<dyn StreamFn>,
    hooks: AgentHooks,
    tool_execution: ExecutionMode,
    stream_options: StreamOptions,
    abort_grace: Duration,
    protocol_repair: bool,
}

struct Shared {
    state: Mutex<AgentState>,
    settings: Mutex<Settings>,
    steering: Mutex<PendingQueue>,
    follow_up: Mutex<PendingQueue>,
    /// Copy-on-write, so each emitted event takes a snapshot without allocating.
    listeners: Mutex<Arc<Vec<(ListenerId, AgentListener)>>>,
    next_listener: AtomicU64,
    /// The active run's token; `Some` while a run is active.
    active: Mutex<Option<CancellationToken>>,
    running: watch::Sender<bool>,
}

/// A poisoned lock only means another thread panicked mid-update; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Ends the run when dropped, even if the run task panicked.
struct RunGuard(Arc<Shared>);

impl Drop for RunGuard {
    fn drop(&mut self) {
        {
            let mut state = lock(&self.0.state);
            state.is_streaming = false;
            state.streaming_message = None;
            state.pending_tool_calls.clear();
        }
        *lock(&self.0.active) = None;
        self.0.running.send_replace(false);
    }
}

/// The agent handle: cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

mod runs;

/// A handle that does not keep the agent alive (for hooks the agent itself holds).
#[derive(Clone)]
pub struct WeakAgent(std::sync::Weak<Shared>);

impl WeakAgent {
    pub fn upgrade(&self) -> Option<Agent> {
        self.0.upgrade().map(|shared| Agent { shared })
    }
}

impl Agent {
    pub fn downgrade(&self) -> WeakAgent {
        WeakAgent(Arc::downgrade(&self.shared))
    }

    pub fn new(options: AgentOptions) -> Agent {
        let mut messages = options.messages;
        let starts_with_system = matches!(messages.first(), Some(AgentMessage::System(_)));
        if !starts_with_system
            && let Some(system) = initial_system_message(
                options.system_prompt.as_deref(),
                &declarations(&options.tools),
            )
        {
            messages.insert(0, AgentMessage::from(system));
        }
        let state = AgentState {
            model: options.model,
            thinking_level: options.thinking_level,
            messages,
            tools: options.tools,
            is_streaming: false,
            streaming_message: None,
            pending_tool_calls: Vec::new(),
            error_message: None,
        };
        let settings = Settings {
            stream_fn: options.stream_fn,
            hooks: options.hooks,
            tool_execution: options.tool_execution,
            stream_options: options.stream_options,
            abort_grace: options.abort_grace,
            protocol_repair: options.protocol_repair,
        };
        let (running, _) = watch::channel(false);
        Agent {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                settings: Mutex::new(settings),
                steering: Mutex::new(PendingQueue::new(options.steering_mode)),
                follow_up: Mutex::new(PendingQueue::new(options.follow_up_mode)),
                listeners: Mutex::new(Arc::new(Vec::new())),
                next_listener: AtomicU64::new(1),
                active: Mutex::new(None),
                running,
            }),
        }
    }

    /// Starts a run with these prompt messages.
    pub fn prompt(&self, messages: Vec<AgentMessage>) -> Result<RunHandle, AgentError> {
        let (guard, cancel) = self.begin(BUSY_PROMPT)?;
        Ok(self.spawn_prompt(guard, cancel, messages, false))
    }

    /// Starts a run with one user message `[{type:"text", text}]`.
    pub fn prompt_text(&self, text: &str) -> Result<RunHandle, AgentError> {
        self.prompt(vec![AgentMessage::from(UserMessage {
            content: MessageContent::Blocks(vec![ContentBlock::text(text)]),
            timestamp: now_ms(),
        })])
    }

    /// pi's `continue()`: from a non-assistant tail, continue the transcript; from an assistant
    /// tail, run queued steering (one batch, the first in-loop poll skipped) or follow-ups.
    pub fn continue_run(&self) -> Result<RunHandle, AgentError> {
        let (guard, cancel) = self.begin(BUSY_CONTINUE)?;
        let messages = lock(&self.shared.state).messages.clone();
        if messages
            .iter()
            .all(|m| matches!(m, AgentMessage::System(_)))
        {
            // Dropping the guard ends the refused run; no event was emitted.
            return Err(AgentError::NothingToContinue(NO_MESSAGES.into()));
        }
        if !matches!(messages.last(), Some(AgentMessage::Assistant(_))) {
            return Ok(self.spawn_continue(guard, cancel));
        }
        let steering = lock(&self.shared.steering).drain();
        if !steering.is_empty() {
            return Ok(self.spawn_prompt(guard, cancel, steering, true));
        }
        let follow_ups = lock(&self.shared.follow_up).drain();
        if !follow_ups.is_empty() {
            return Ok(self.spawn_prompt(guard, cancel, follow_ups, false));
        }
        Err(AgentError::NothingToContinue(
            CONTINUE_FROM_ASSISTANT.into(),
        ))
    }

    /// Queues a message for the next steering poll (delivered after the current tool batch).
    pub fn steer(&self, m: AgentMessage) {
        lock(&self.shared.steering).enqueue(m);
    }

    /// Queues a message for when the agent would otherwise stop.
    pub fn follow_up(&self, m: AgentMessage) {
        lock(&self.shared.follow_up).enqueue(m);
    }

    /// How many steering and follow-up messages are queued (without copying them).
    pub fn queued_lens(&self) -> (usize, usize) {
        (
            lock(&self.shared.steering).len(),
            lock(&self.shared.follow_up).len(),
        )
    }

    /// Every queued message: `(steering, follow-up)`.
    pub fn queued(&self) -> (Vec<AgentMessage>, Vec<AgentMessage>) {
        (
            lock(&self.shared.steering).all(),
            lock(&self.shared.follow_up).all(),
        )
    }

    /// pi's `peekQueuedMessages`: what the next poll would take (steering first).
    pub fn peek_queued(&self) -> Vec<AgentMessage> {
        let steering = lock(&self.shared.steering).peek();
        if !steering.is_empty() {
            return steering;
        }
        lock(&self.shared.follow_up).peek()
    }

    pub fn has_queued_messages(&self) -> bool {
        lock(&self.shared.steering).has_items() || lock(&self.shared.follow_up).has_items()
    }

    /// Removes one steering message, `distance` places from the tail (0 = the newest); `None`
    /// when it was already delivered. (agent-lsp addition: editors remove single queued items.)
    pub fn remove_steering_from_end(&self, distance: usize) -> Option<AgentMessage> {
        lock(&self.shared.steering).remove_from_end(distance)
    }

    /// As [`Agent::remove_steering_from_end`], for the follow-up queue.
    pub fn remove_follow_up_from_end(&self, distance: usize) -> Option<AgentMessage> {
        lock(&self.shared.follow_up).remove_from_end(distance)
    }

    pub fn clear_steering_queue(&self) {
        lock(&self.shared.steering).clear();
    }

    pub fn clear_follow_up_queue(&self) {
        lock(&self.shared.follow_up).clear();
    }

    pub fn clear_all_queues(&self) {
        self.clear_steering_queue();
        self.clear_follow_up_queue();
    }

    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.shared.steering).mode = mode;
    }

    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.shared.follow_up).mode = mode;
    }

    /// `(steering, follow-up)` queue modes.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        (
            lock(&self.shared.steering).mode,
            lock(&self.shared.follow_up).mode,
        )
    }

    /// Aborts the active run; `true` when a run was active.
    pub fn abort(&self) -> bool {
        match lock(&self.shared.active).as_ref() {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Resolves once no run is active (after the run's `agent_end` listeners).
    pub async fn wait_for_idle(&self) {
        let mut rx = self.shared.running.subscribe();
        // The sender lives in `shared`, which `self` keeps alive: this cannot fail.
        let _ = rx.wait_for(|running| !*running).await;
    }

    pub fn subscribe(&self, l: AgentListener) -> ListenerId {
        let id = ListenerId(self.shared.next_listener.fetch_add(1, Ordering::Relaxed));
        Arc::make_mut(&mut lock(&self.shared.listeners)).push((id, l));
        id
    }

    pub fn unsubscribe(&self, id: ListenerId) {
        Arc::make_mut(&mut lock(&self.shared.listeners)).retain(|(i, _)| *i != id);
    }

    /// Keeps only the replayed system head, clears runtime fields and both queues.
    pub fn reset(&self) -> Result<(), AgentError> {
        let active = lock(&self.shared.active);
        if active.is_some() {
            return Err(AgentError::Busy(BUSY_RESET.into()));
        }
        {
            let mut state = lock(&self.shared.state);
            let head = current_system_message(&state.messages);
            state.messages = head.map(AgentMessage::from).into_iter().collect();
            state.streaming_message = None;
            state.pending_tool_calls.clear();
            state.error_message = None;
        }
        drop(active);
        self.clear_all_queues();
        Ok(())
    }

    pub fn state(&self) -> AgentState {
        lock(&self.shared.state).clone()
    }

    /// The current model, without copying the rest of the state (the transcript).
    pub fn model(&self) -> Model {
        lock(&self.shared.state).model.clone()
    }

    pub fn set_model(&self, m: Model) {
        lock(&self.shared.state).model = m;
    }

    pub fn set_thinking_level(&self, l: ThinkingLevel) {
        lock(&self.shared.state).thinking_level = l;
    }

    pub fn set_tools(&self, t: Vec<ToolRef>) {
        lock(&self.shared.state).tools = t;
    }

    pub fn set_messages(&self, m: Vec<AgentMessage>) {
        lock(&self.shared.state).messages = m;
    }

    /// Replaces the hooks used by later runs.
    pub fn set_hooks(&self, hooks: AgentHooks) {
        lock(&self.shared.settings).hooks = hooks;
    }

    pub fn set_tool_execution(&self, mode: ExecutionMode) {
        lock(&self.shared.settings).tool_execution = mode;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_is_send_sync_clone() {
        fn is<T: Send + Sync + Clone>() {}
        is::<Agent>();
    }
}
