//! The stream contract: what the loop asks of a model, and what every provider implements.
//!
//! **Contract** (pi-ai §A2, strengthened): [`StreamFn::stream`] never fails. It returns a stream
//! that yields at most one `start`, then block events, and ends in exactly one terminal event
//! (`done` or `error`). Every failure (HTTP status, refused connection, disconnect, malformed
//! SSE, a missing terminal event, an unknown stop reason, abort) becomes an `error` terminal whose
//! message has `stopReason` `error` or `aborted` and a clear `errorMessage`.
//!
//! Events carry deltas, not pi's live `partial` object: consumers that want the growing message
//! fold the events themselves.
//!
//! The types live in `agent/` because the loop defines what it needs; `provider/` implements
//! them (the dependency points from the providers to the agent, never back).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::message::{AgentMessage, AssistantMessage, StopReason, ThinkingLevel, ToolCall};
use crate::agent::model::Model;

/// One event of an assistant response stream (pi's `AssistantMessageEvent`, without `partial`).
/// The variants carrying a whole message box it, so a delta event stays small to move.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    /// The response began; `partial` is the initial message (usually empty content).
    Start { partial: Box<AssistantMessage> },
    #[serde(rename_all = "camelCase")]
    TextStart { content_index: usize },
    #[serde(rename_all = "camelCase")]
    TextDelta { content_index: usize, delta: String },
    #[serde(rename_all = "camelCase")]
    TextEnd {
        content_index: usize,
        content: String,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingStart { content_index: usize },
    #[serde(rename_all = "camelCase")]
    ThinkingDelta { content_index: usize, delta: String },
    #[serde(rename_all = "camelCase")]
    ThinkingEnd {
        content_index: usize,
        content: String,
    },
    #[serde(rename = "toolcall_start", rename_all = "camelCase")]
    ToolCallStart {
        content_index: usize,
        id: String,
        tool_name: String,
    },
    /// A raw fragment of the tool call's JSON argument text.
    #[serde(rename = "toolcall_delta", rename_all = "camelCase")]
    ToolCallDelta { content_index: usize, delta: String },
    #[serde(rename = "toolcall_end", rename_all = "camelCase")]
    ToolCallEnd {
        content_index: usize,
        tool_call: Box<ToolCall>,
    },
    /// A retryable failure happened before any token arrived; the provider waits `delay_ms`
    /// and tries again. Not a pi event: it makes retries visible to clients.
    #[serde(rename_all = "camelCase")]
    Retry {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    /// Terminal success: `reason` is stop, length, toolUse or deferred.
    Done {
        reason: StopReason,
        message: Box<AssistantMessage>,
    },
    /// Terminal failure: `reason` is error or aborted; `error.errorMessage` says why.
    Error {
        reason: StopReason,
        error: Box<AssistantMessage>,
    },
}

impl AssistantMessageEvent {
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    }
}

/// The receiving end of a response stream. Dropping it tells the provider to stop.
pub struct AssistantEventStream {
    rx: mpsc::Receiver<AssistantMessageEvent>,
}

/// The sending end handed to a provider task.
#[derive(Clone)]
pub struct AssistantEventSink {
    tx: mpsc::Sender<AssistantMessageEvent>,
}

/// Creates a connected sink/stream pair with a bounded buffer (back-pressure on slow consumers).
pub fn event_channel() -> (AssistantEventSink, AssistantEventStream) {
    let (tx, rx) = mpsc::channel(256);
    (AssistantEventSink { tx }, AssistantEventStream { rx })
}

impl AssistantEventStream {
    /// The next event, or `None` once the provider finished (or vanished).
    pub async fn next(&mut self) -> Option<AssistantMessageEvent> {
        self.rx.recv().await
    }

    /// A stream that yields the given events and ends (useful for scripted providers).
    pub fn from_events(events: Vec<AssistantMessageEvent>) -> Self {
        let (tx, rx) = mpsc::channel(events.len().max(1));
        for event in events {
            // Capacity equals the number of events, so this cannot fail.
            let _ = tx.try_send(event);
        }
        AssistantEventStream { rx }
    }
}

impl AssistantEventSink {
    /// Sends an event; returns `false` when the consumer is gone (treat as abort).
    pub async fn send(&self, event: AssistantMessageEvent) -> bool {
        self.tx.send(event).await.is_ok()
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// What the provider sees of the conversation: LLM messages only (no custom roles), with tools
/// declared inside system messages (`toolsAdded`/`toolsRemoved`).
///
/// The messages are a shared snapshot: when no hook rewrites the transcript, the loop hands the
/// provider its own history without copying it. Providers only read them, and should drop the
/// context once the request body is built, so the loop's next append does not copy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmContext {
    pub messages: std::sync::Arc<Vec<AgentMessage>>,
}

impl LlmContext {
    /// A context owning these messages.
    pub fn new(messages: Vec<AgentMessage>) -> Self {
        LlmContext {
            messages: std::sync::Arc::new(messages),
        }
    }
}

/// Options for one request. The loop passes its whole configuration through here.
#[derive(Clone, Debug, Default)]
pub struct StreamOptions {
    pub api_key: Option<String>,
    /// Requested reasoning effort; `None` means off.
    pub reasoning: Option<ThinkingLevel>,
    pub signal: CancellationToken,
    pub session_id: Option<String>,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    /// Merged `DEFAULT_AGENT_IDENTITY` and configured identity.
    pub identity: Option<Value>,
    /// Retries before the first token (429/5xx/overloaded). `None` = provider default.
    pub max_retries: Option<u32>,
    /// Cap on a single retry delay, `Retry-After` included. `None` = 60 s.
    pub max_retry_delay_ms: Option<u64>,
    /// Every other configuration key, passed through untouched (pi spreads its config).
    pub extra: Map<String, Value>,
}

/// One request to a provider: pi's `streamFn(model, context, options)` as one value, which
/// wrappers (the router, timing or recording providers) pass on whole.
#[derive(Clone, Debug)]
pub struct StreamRequest {
    pub model: Model,
    pub context: LlmContext,
    pub options: StreamOptions,
}

impl StreamRequest {
    /// A request with default options (no key, never cancelled).
    pub fn new(model: Model, context: LlmContext) -> Self {
        StreamRequest {
            model,
            context,
            options: StreamOptions::default(),
        }
    }
}

/// A function that streams one assistant response (pi's `StreamFn`).
pub trait StreamFn: Send + Sync {
    fn stream(&self, request: StreamRequest) -> AssistantEventStream;
}
