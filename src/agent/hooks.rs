//! The loop's hook contracts (pi's `types.ts`): what each hook receives and may return.
//!
//! Every hook is an async closure returning a `BoxFuture<'static, …>`, so it receives owned
//! (cheaply cloned: the transcript is an `Arc` snapshot) context plus the run's
//! `CancellationToken`. A hook failure is a [`CallbackError`]: in the tool pipeline it becomes an
//! error tool result (as pi's `catch`), anywhere else it fails the run
//! ([`crate::agent::config::RunFailure::Hook`]), and the core then closes the event sequence
//! itself (see `run_loop` docs).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, ThinkingLevel, ToolCall, ToolResultMessage, Usage,
};
use crate::agent::model::Model;
use crate::agent::tool::{AgentToolResult, ToolRef};

/// The result of an async hook.
pub type HookFuture<T> = BoxFuture<'static, Result<T, CallbackError>>;

/// A hook given `In` and the run's cancellation token, answering `Out`.
pub type Hook<In, Out> = Arc<dyn Fn(In, CancellationToken) -> HookFuture<Out> + Send + Sync>;

/// What a hook, a listener or a queue poll reports when it fails (pi: it throws): the message
/// becomes the failed run's `errorMessage`, or the error result of the tool call it was about.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallbackError(pub String);

impl From<String> for CallbackError {
    fn from(message: String) -> Self {
        CallbackError(message)
    }
}

impl From<&str> for CallbackError {
    fn from(message: &str) -> Self {
        CallbackError(message.to_string())
    }
}

/// pi's `AgentContext`: the transcript and the executable tools (no system prompt field).
///
/// The transcript is a shared snapshot: cloning a context (for every hook that receives one,
/// and for every provider request) copies pointers, not the history. Whoever appends goes
/// through `Arc::make_mut`, which copies the messages only while someone else still holds the
/// same snapshot (copy-on-write), so a hook that keeps its context keeps exactly what it saw.
#[derive(Clone, Default)]
pub struct AgentContext {
    pub messages: Arc<Vec<AgentMessage>>,
    pub tools: Vec<ToolRef>,
}

impl AgentContext {
    /// A context owning these messages and tools.
    pub fn new(messages: Vec<AgentMessage>, tools: Vec<ToolRef>) -> Self {
        AgentContext {
            messages: Arc::new(messages),
            tools,
        }
    }

    /// The transcript for appending (copies it first only if a snapshot of it is still shared).
    pub fn messages_mut(&mut self) -> &mut Vec<AgentMessage> {
        Arc::make_mut(&mut self.messages)
    }

    /// The tool with exactly this name, if any.
    pub fn tool(&self, name: &str) -> Option<&ToolRef> {
        self.tools.iter().find(|t| t.name() == name)
    }
}

impl std::fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("AgentContext")
            .field("messages", &self.messages)
            .field("tools", &tools)
            .finish()
    }
}

/// What `beforeToolCall` sees: the raw call block, the validated arguments, the live context.
#[derive(Clone, Debug)]
pub struct BeforeToolCallContext {
    pub assistant_message: AssistantMessage,
    pub tool_call: ToolCall,
    pub args: Value,
    pub context: AgentContext,
}

/// `beforeToolCall`'s answer. `args` replaces the arguments passed to `execute` *without*
/// revalidation: the Rust form of pi's "mutate `args` in place" (L8).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BeforeToolCallResult {
    pub block: bool,
    pub reason: Option<String>,
    pub terminate: bool,
    pub args: Option<Value>,
}

/// What `afterToolCall` sees: the result before any override.
#[derive(Clone, Debug)]
pub struct AfterToolCallContext {
    pub assistant_message: AssistantMessage,
    pub tool_call: ToolCall,
    pub args: Value,
    pub result: AgentToolResult,
    pub is_error: bool,
    pub context: AgentContext,
}

/// `afterToolCall`'s overrides; `None` keeps the executed value (no deep merge).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterToolCallResult {
    pub content: Option<Vec<ContentBlock>>,
    pub details: Option<Value>,
    pub structured_content: Option<Value>,
    pub is_error: Option<bool>,
    pub usage: Option<Usage>,
    pub terminate: Option<bool>,
}

/// pi's `AgentTurnContext`: a finished turn, as `finishTurn` and `prepareNextTurn` see it.
#[derive(Clone, Debug)]
pub struct AgentTurnContext {
    pub message: Arc<AssistantMessage>,
    pub tool_results: Vec<Arc<ToolResultMessage>>,
    pub context: AgentContext,
    pub new_messages: Vec<AgentMessage>,
}

/// `finishTurn`'s decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnDecision {
    Continue,
    End,
}

/// `prepareNextTurn`'s update (pi's `AgentLoopTurnUpdate`).
#[derive(Clone, Debug, Default)]
pub struct AgentLoopTurnUpdate {
    pub context: Option<AgentContext>,
    /// Messages appended (and declared) before the next request.
    pub messages: Option<Vec<AgentMessage>>,
    pub model: Option<Model>,
    pub thinking_level: Option<ThinkingLevel>,
}

/// What `prepareRequest` sees before every request.
#[derive(Clone, Debug)]
pub struct PrepareRequestContext {
    pub context: AgentContext,
    pub model: Model,
    /// `config.reasoning ?? "off"`.
    pub thinking_level: ThinkingLevel,
}

/// `prepareRequest`'s update: like a turn update, but it cannot add messages.
#[derive(Clone, Debug, Default)]
pub struct AgentRequestUpdate {
    pub context: Option<AgentContext>,
    pub model: Option<Model>,
    pub thinking_level: Option<ThinkingLevel>,
}

pub type BeforeToolCallHook = Hook<BeforeToolCallContext, Option<BeforeToolCallResult>>;
pub type AfterToolCallHook = Hook<AfterToolCallContext, Option<AfterToolCallResult>>;
/// A view of the messages for one request; the result is discarded after the request.
pub type TransformContextHook = Hook<Vec<AgentMessage>, Vec<AgentMessage>>;
/// Decides what reaches the provider; the default is [`crate::agent::convert::default_convert_to_llm`].
pub type ConvertToLlmHook = Hook<Vec<AgentMessage>, Vec<AgentMessage>>;
pub type PrepareRequestHook = Hook<PrepareRequestContext, Option<AgentRequestUpdate>>;
/// agent-lsp's, not pi's: awaited when a run starts, before the loop takes its context (an abort
/// ends the wait); `Some` replaces the agent's tools. For tools that appear over time, such as
/// those of MCP servers still starting, so the run's first request already declares them.
pub type PrepareRunHook = Arc<
    dyn Fn(CancellationToken) -> BoxFuture<'static, Option<Vec<crate::agent::tool::ToolRef>>>
        + Send
        + Sync,
>;

pub type PrepareNextTurnHook = Hook<AgentTurnContext, Option<AgentLoopTurnUpdate>>;
/// `None` is pi's "void": no explicit decision.
pub type FinishTurnHook = Hook<AgentTurnContext, Option<TurnDecision>>;
/// What `recoverError` sees: the failed response (already in `context`, last) and how many
/// recoveries this run already made.
#[derive(Clone, Debug)]
pub struct RecoverErrorContext {
    pub message: AssistantMessage,
    pub context: AgentContext,
    pub attempts: u32,
}

/// agent-lsp's, not pi's: called when a response ends in `error`, before the run ends. `Some`
/// retries the request with this context (the failed response stays in the run's messages and
/// events, not in the retried context); `None` ends the run as pi does. For recovering from a
/// context overflow by compacting (`core/compaction.rs`), which pi does after the run.
pub type RecoverErrorHook = Hook<RecoverErrorContext, Option<AgentContext>>;
/// Receives the provider name; `None` or `""` falls back to the configured API key.
pub type GetApiKeyHook = Hook<String, Option<String>>;
/// A queue poll (pi's `getSteeringMessages`/`getFollowUpMessages`).
pub type QueuePollHook = Arc<dyn Fn() -> HookFuture<Vec<AgentMessage>> + Send + Sync>;

/// Every optional hook of a run. Clone is cheap (all `Arc`s).
#[derive(Clone, Default)]
pub struct AgentHooks {
    pub before_tool_call: Option<BeforeToolCallHook>,
    pub after_tool_call: Option<AfterToolCallHook>,
    pub transform_context: Option<TransformContextHook>,
    pub convert_to_llm: Option<ConvertToLlmHook>,
    pub prepare_request: Option<PrepareRequestHook>,
    pub prepare_next_turn: Option<PrepareNextTurnHook>,
    pub finish_turn: Option<FinishTurnHook>,
    /// Not pi's: see [`PrepareRunHook`].
    pub prepare_run: Option<PrepareRunHook>,
    /// Not pi's: see [`RecoverErrorHook`].
    pub recover_error: Option<RecoverErrorHook>,
    pub get_api_key: Option<GetApiKeyHook>,
}

/// Improvement 6: a turn limit as a ready-made `finishTurn` policy, not a loop condition.
///
/// Ends the run once it has produced `n` assistant responses (counted in the turn's
/// `new_messages`, so the policy is stateless and reusable across runs); otherwise it makes no
/// decision. It composes like any other `finishTurn`: tool results of the last turn are kept.
pub fn max_turns(n: usize) -> FinishTurnHook {
    Arc::new(move |turn: AgentTurnContext, _cancel| {
        let turns = turn
            .new_messages
            .iter()
            .filter(|m| matches!(m, AgentMessage::Assistant(_)))
            .count();
        Box::pin(async move { Ok((turns >= n).then_some(TurnDecision::End)) })
    })
}
