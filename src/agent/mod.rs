//! The agent core: pi's message model, tools, events and the agent loop.
//!
//! **Invariant:** nothing in `agent/` knows about LSP, JSON-RPC, editors, the disk or HTTP, and
//! nothing here imports `provider/`: the agent defines what it needs of a model
//! ([`model::Model`], the [`stream_contract`]) and providers implement it; tools come in
//! through [`tool::AgentTool`].
//!
//! Code map: [`run_loop`] is pi's `runAgentLoop`/`runLoop` (turns, polls, hooks), [`stream`] one
//! provider request, [`batch`] a turn's tool batch with events, [`tool_exec`] the single tool
//! orchestrator (lookup, validation, hooks, execution; also [`tool_exec::run_tool_call`]),
//! [`validate`] argument coercion and validation, [`declare`] `declareToolChanges`, [`convert`]
//! the default `convertToLlm`, [`hooks`] the hook contracts, [`config`] the loop configuration,
//! [`handle`] the [`Agent`] handle with [`state`] and [`queue`]; [`model`] and
//! [`stream_contract`] are what a provider implements.
//!
//! # doc/improvements: deliberate improvements over pi 1.6
//!
//! The 1.6.0 behaviour is kept everywhere else (spec `pi-agent-loop.md` §1–§4, §6). Each item is
//! tested in `tests/suite/agent_core.rs`.
//!
//! 1. **The core closes every event sequence.** pi's raw loop never ends its stream when a
//!    hook, listener or stream throws, and its Agent drops `agent_end` when a listener fails a
//!    second time. Here any failure (a hook's `Err`, a listener's `Err`, a stream that ends
//!    without a terminal event) is closed inside [`run_loop`]: a synthetic failure message
//!    (`content [text ""]`, `stopReason` error, or aborted when the signal was aborted, the
//!    error as `errorMessage`) is emitted as `message_start`, `message_end`, `turn_end`,
//!    `agent_end([failure])`, even if listeners fail again. Every run emits exactly one
//!    `agent_end` and never hangs; a stream without a terminal event becomes an error message
//!    `Provider stream ended without a terminal event`. Panics are contained too: a panicking
//!    stream function or listener fails the run like an `Err` (the sequence is still closed),
//!    and a panicking tool becomes an error tool result.
//! 2. **Abort is final.** pi 1.6 makes another provider request after an abort and lets tools
//!    that ignore the signal hold the run. Here no provider request starts once the signal is
//!    aborted (the turn ends with an `aborted` message carrying `Operation aborted`), an
//!    in-flight stream is raced against the signal and ends `aborted`, queued tool calls end
//!    with `Operation aborted`, and a running tool that ignores cancellation is abandoned after
//!    a bounded grace (`abort_grace`, 2 s by default) with `Operation aborted`. In parallel
//!    mode every job is awaited even when a listener fails, so no tool outlives `agent_end`.
//! 3. **Incremental tool replay.** `declareToolChanges` needs the transcript's tool set before
//!    every request; pi replays the whole transcript each time. Here
//!    [`transcript::IncrementalTools`] caches the replay at the committed prefix and replays
//!    only new messages (reset when a hook replaces the context). A proptest proves it equals
//!    [`transcript::current_tools`] at every cut.
//! 4. **Protocol-valid requests by default.** The default `convertToLlm`
//!    ([`convert::default_convert_to_llm`]) applies seed 002's `projectToolCallProtocol`
//!    after pi's role filter: orphan tool results are dropped, empty error/aborted assistant
//!    messages are dropped, and each result is placed right after its call.
//! 5. **`message_discard`.** A response that writes tool-call markup in its text while native
//!    tools are available is withdrawn with [`event::AgentEvent::MessageDiscard`] (instead of
//!    its `message_end`; it never enters the transcript) and retried once with a repair
//!    instruction that exists only in that retry's request.
//! 6. **Turn limit as a policy.** [`hooks::max_turns`] is a ready-made `finishTurn` that ends the
//!    run after `n` responses; the loop itself has no iteration condition.

pub mod batch;
pub mod config;
pub mod convert;
pub mod declare;
pub mod event;
pub mod handle;
pub mod hooks;
pub mod message;
pub mod model;
pub mod queue;
pub mod run_loop;
pub mod state;
pub mod stream;
pub mod stream_contract;
pub mod tool;
pub mod tool_exec;
pub mod transcript;
pub mod validate;

pub use config::{AgentLoopConfig, Emit, LoopError, LoopOutcome, RunFailure};
pub use handle::{
    Agent, AgentError, AgentListener, AgentOptions, ListenerId, RunHandle, RunOutcome,
};
pub use hooks::{AgentContext, AgentHooks, CallbackError, TurnDecision, max_turns};
pub use queue::QueueMode;
pub use run_loop::{run_agent_loop, run_agent_loop_continue};
pub use state::AgentState;
pub use tool::{ExecutionMode, ToolRef};
pub use tool_exec::{RunToolCallOptions, ToolCallOutcome, run_tool_call};
