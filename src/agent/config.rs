//! The low-level loop's configuration and outcome types (pi's `AgentLoopConfig`).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::agent::event::AgentEvent;
use crate::agent::hooks::{AgentHooks, CallbackError, QueuePollHook};
use crate::agent::message::{AgentMessage, ThinkingLevel};
use crate::agent::model::Model;
use crate::agent::stream_contract::StreamOptions;
use crate::agent::tool::ExecutionMode;

/// Delivers one event; the loop awaits it (barrier semantics). `Err` fails the run.
pub type Emit = Arc<dyn Fn(AgentEvent) -> BoxFuture<'static, Result<(), RunFailure>> + Send + Sync>;

/// Why a run failed on the way (improvement 1): the loop closes the event sequence with a
/// failure message whose `errorMessage` is this text, exactly as the failing code put it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunFailure {
    /// A hook or a queue poll failed (outside the tool pipeline, which turns a tool hook's
    /// failure into the call's error result).
    #[error("{0}")]
    Hook(#[from] CallbackError),
    /// A listener failed while an event was delivered.
    #[error("{0}")]
    Listener(CallbackError),
    /// A listener, the stream function or the run's task panicked; the text says how.
    #[error("{0}")]
    Panic(String),
}

/// How long a tool that ignores cancellation may keep running after an abort before the loop
/// abandons it (improvement 2).
pub const DEFAULT_ABORT_GRACE: Duration = Duration::from_secs(2);

/// Everything a run needs besides the context. Clone is cheap.
#[derive(Clone)]
pub struct AgentLoopConfig {
    pub model: Model,
    /// pi's `reasoning`: `None` is off (the loop never sends `"off"`).
    pub reasoning: Option<ThinkingLevel>,
    /// Template for every request (api key, session id, max tokens, identity, extras…). The
    /// loop fills in `reasoning`, `api_key`, `identity` and `signal` per request.
    pub stream_options: StreamOptions,
    pub hooks: AgentHooks,
    pub get_steering_messages: Option<QueuePollHook>,
    pub get_follow_up_messages: Option<QueuePollHook>,
    /// Global mode; a tool declaring `Sequential` forces sequential for its whole batch.
    pub tool_execution: ExecutionMode,
    /// Improvement 2: bounded wait for a tool that ignores cancellation.
    pub abort_grace: Duration,
    /// Improvement 5: withdraw and retry once a response that fakes tool calls in text.
    pub protocol_repair: bool,
}

impl AgentLoopConfig {
    /// A configuration with pi's defaults for everything but the model.
    pub fn new(model: Model) -> Self {
        AgentLoopConfig {
            model,
            reasoning: None,
            stream_options: StreamOptions::default(),
            hooks: AgentHooks::default(),
            get_steering_messages: None,
            get_follow_up_messages: None,
            tool_execution: ExecutionMode::Parallel,
            abort_grace: DEFAULT_ABORT_GRACE,
            protocol_repair: true,
        }
    }

    /// `"off"` maps to `None`, as pi's loop does for `reasoning`.
    pub fn set_thinking_level(&mut self, level: ThinkingLevel) {
        self.reasoning = (level != ThinkingLevel::Off).then_some(level);
    }

    /// `config.reasoning ?? "off"`.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.reasoning.unwrap_or(ThinkingLevel::Off)
    }
}

/// How a run ended. The event sequence is always closed (exactly one `agent_end`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopOutcome {
    /// `agent_end.messages`: the run's new messages (or `[failure]` when the run failed).
    pub new_messages: Vec<AgentMessage>,
    /// The final response was `aborted` (or the run failed while the signal was aborted).
    pub aborted: bool,
    /// The run failed (a hook, listener or stream threw) or ended in a provider error.
    pub error: Option<String>,
    /// Why the run failed on the way, if it did (not set for a provider error, which is a
    /// response like any other).
    pub failure: Option<RunFailure>,
}

/// Why `run_agent_loop_continue` refused to start (pi throws these synchronously).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoopError {
    #[error("Cannot continue: no messages in context")]
    NoMessages,
    #[error("Cannot continue from message role: assistant")]
    ContinueFromAssistant,
}

/// pi's `DEFAULT_AGENT_IDENTITY`.
pub fn default_identity() -> Value {
    json!({"attribution": {"name": "pi", "url": "https://pi.dev", "categories": ["cli-agent"]}})
}

/// `{...DEFAULT_AGENT_IDENTITY, ...configured}`: field by field, configured wins.
pub fn merged_identity(configured: Option<&Value>) -> Value {
    let mut base = default_identity();
    if let (Value::Object(base_map), Some(Value::Object(over))) = (&mut base, configured) {
        for (k, v) in over {
            base_map.insert(k.clone(), v.clone());
        }
    }
    base
}
