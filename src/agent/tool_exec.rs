//! The single tool orchestrator (pi's `prepareToolCall` → `executePreparedToolCall` →
//! `finalizeExecutedToolCall`): lookup, validation, hooks, execution with updates, overrides.
//! [`run_tool_call`] runs one call without events; `batch.rs` runs a turn's batch with events.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::config::RunFailure;
use crate::agent::hooks::{
    AfterToolCallContext, AfterToolCallHook, AgentContext, BeforeToolCallContext,
    BeforeToolCallHook,
};
use crate::agent::message::{AssistantMessage, ToolCall, ToolResultMessage, now_ms};
use crate::agent::tool::{AgentToolResult, ToolInput, ToolRef, ToolUpdater};
use crate::agent::validate::validate_tool_arguments;

/// pi's `AgentToolCallOutcome`: a finalized call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallOutcome {
    pub tool_call: ToolCall,
    pub result: AgentToolResult,
    pub is_error: bool,
    /// Present only when `execute` ran.
    pub duration_ms: Option<u64>,
}

impl ToolCallOutcome {
    /// An outcome decided without executing (`details: {}`, no duration).
    pub fn immediate(tool_call: &ToolCall, text: impl Into<String>) -> Self {
        ToolCallOutcome {
            tool_call: tool_call.clone(),
            result: AgentToolResult::text(text),
            is_error: true,
            duration_ms: None,
        }
    }

    /// The tool-result message, keys as pi orders them.
    pub fn to_message(&self) -> ToolResultMessage {
        ToolResultMessage {
            tool_call_id: self.tool_call.id.clone(),
            tool_name: self.tool_call.name.clone(),
            content: self.result.content.clone(),
            details: self.result.details.clone(),
            usage: self.result.usage.clone(),
            is_error: self.is_error,
            duration_ms: self.duration_ms,
            timestamp: now_ms(),
        }
    }
}

pub const OPERATION_ABORTED: &str = "Operation aborted";
const BLOCKED_DEFAULT: &str = "Tool execution was blocked";

/// Receives a running tool's partial results; `Err` fails the run (pi: the rejection escapes).
pub type UpdateSink =
    Arc<dyn Fn(AgentToolResult) -> BoxFuture<'static, Result<(), RunFailure>> + Send + Sync>;

/// The hooks and knobs the pipeline needs.
#[derive(Clone, Default)]
pub struct ToolPipeline {
    pub before_tool_call: Option<BeforeToolCallHook>,
    pub after_tool_call: Option<AfterToolCallHook>,
    pub abort_grace: Duration,
}

/// A call that passed preparation and may execute.
pub(crate) struct ReadyCall {
    pub tool_call: ToolCall,
    pub tool: ToolRef,
    pub args: Value,
}

#[allow(clippy::large_enum_variant)] // Short-lived, one per tool call.
pub(crate) enum Prepared {
    Immediate(ToolCallOutcome),
    Ready(ReadyCall),
}

/// Abort check, lookup, `prepare_arguments`, validation, `beforeToolCall`.
pub(crate) async fn prepare_tool_call(
    context: &AgentContext,
    assistant: &AssistantMessage,
    call: &ToolCall,
    pipeline: &ToolPipeline,
    cancel: &CancellationToken,
) -> Prepared {
    if cancel.is_cancelled() {
        return Prepared::Immediate(ToolCallOutcome::immediate(call, OPERATION_ABORTED));
    }
    let Some(tool) = context.tool(&call.name).cloned() else {
        let text = format!("Tool {} not found", call.name);
        return Prepared::Immediate(ToolCallOutcome::immediate(call, text));
    };
    let prepared_args = tool.prepare_arguments(call.arguments.clone());
    let for_validation = ToolCall {
        arguments: prepared_args,
        ..call.clone()
    };
    let mut args = match validate_tool_arguments(&tool.declaration().parameters, &for_validation) {
        Ok(args) => args,
        Err(text) => return Prepared::Immediate(ToolCallOutcome::immediate(call, text)),
    };
    if let Some(before) = &pipeline.before_tool_call {
        let ctx = BeforeToolCallContext {
            assistant_message: assistant.clone(),
            tool_call: call.clone(),
            args: args.clone(),
            context: context.clone(),
        };
        let decision = match before(ctx, cancel.clone()).await {
            Ok(decision) => decision,
            Err(e) => return Prepared::Immediate(ToolCallOutcome::immediate(call, e.0)),
        };
        if cancel.is_cancelled() {
            return Prepared::Immediate(ToolCallOutcome::immediate(call, OPERATION_ABORTED));
        }
        if let Some(decision) = decision {
            if decision.block {
                let reason = decision.reason.filter(|r| !r.is_empty());
                let mut outcome =
                    ToolCallOutcome::immediate(call, reason.as_deref().unwrap_or(BLOCKED_DEFAULT));
                if decision.terminate {
                    outcome.result.terminate = Some(true);
                }
                return Prepared::Immediate(outcome);
            }
            // The Rust form of "mutated args are honoured without revalidation".
            if let Some(replaced) = decision.args {
                args = replaced;
            }
        }
    }
    Prepared::Ready(ReadyCall {
        tool_call: call.clone(),
        tool,
        args,
    })
}

/// Runs `execute`, forwarding updates while it runs; a tool that outlives an abort by more than
/// the grace is abandoned with `Operation aborted` (improvement 2).
pub(crate) async fn execute_ready(
    ready: &ReadyCall,
    pipeline: &ToolPipeline,
    cancel: &CancellationToken,
    on_update: Option<&UpdateSink>,
) -> Result<ToolCallOutcome, RunFailure> {
    let (updater, mut rx) = ToolUpdater::channel();
    let started = Instant::now();
    // A panicking tool becomes an error result instead of taking the run down with it.
    let mut work = AssertUnwindSafe(ready.tool.execute(ToolInput {
        tool_call_id: ready.tool_call.id.clone(),
        args: ready.args.clone(),
        cancel: cancel.clone(),
        on_update: updater,
    }))
    .catch_unwind();
    let grace = pipeline.abort_grace;
    let abandon = async move {
        cancel.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::pin!(abandon);
    let mut update_error: Option<RunFailure> = None;
    let settled = loop {
        tokio::select! {
            biased;
            result = &mut work => break Some(result),
            Some(partial) = rx.recv() => {
                if let Some(sink) = on_update
                    && let Err(e) = sink(partial).await
                {
                    update_error.get_or_insert(e);
                }
            }
            () = &mut abandon => break None,
        }
    };
    let duration_ms = Some((started.elapsed().as_secs_f64() * 1000.0).round() as u64);
    drop(work);
    // Updates sent before `execute` settled still reach listeners; later ones are ignored.
    rx.close();
    while let Ok(partial) = rx.try_recv() {
        if let Some(sink) = on_update
            && let Err(e) = sink(partial).await
        {
            update_error.get_or_insert(e);
        }
    }
    if let Some(e) = update_error {
        return Err(e);
    }
    let (result, is_error) = match settled {
        Some(Err(panic)) => (AgentToolResult::text(panic_text(panic.as_ref())), true),
        Some(Ok(Ok(result))) => {
            let is_error = result.is_error == Some(true);
            (result, is_error)
        }
        // A tool that stops with an error because of the abort reports the abort itself.
        Some(Ok(Err(_))) if cancel.is_cancelled() => {
            (AgentToolResult::text(OPERATION_ABORTED), true)
        }
        Some(Ok(Err(e))) => (AgentToolResult::text(e.message), true),
        None => (AgentToolResult::text(OPERATION_ABORTED), true),
    };
    Ok(ToolCallOutcome {
        tool_call: ready.tool_call.clone(),
        result,
        is_error,
        duration_ms,
    })
}

/// `afterToolCall` with pi's override rules (no deep merge; `structuredContent` is dropped when
/// only `content` is replaced).
pub(crate) async fn finalize(
    mut outcome: ToolCallOutcome,
    ready: &ReadyCall,
    context: &AgentContext,
    assistant: &AssistantMessage,
    pipeline: &ToolPipeline,
    cancel: &CancellationToken,
) -> ToolCallOutcome {
    let Some(after) = &pipeline.after_tool_call else {
        return outcome;
    };
    let ctx = AfterToolCallContext {
        assistant_message: assistant.clone(),
        tool_call: ready.tool_call.clone(),
        args: ready.args.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
        context: context.clone(),
    };
    match after(ctx, cancel.clone()).await {
        Ok(None) => {}
        Ok(Some(a)) => {
            let old = std::mem::take(&mut outcome.result);
            let content_replaced = a.content.is_some();
            outcome.result = AgentToolResult {
                content: a.content.unwrap_or(old.content),
                details: a.details.or(old.details),
                usage: a.usage.or(old.usage),
                terminate: a.terminate.or(old.terminate),
                structured_content: a.structured_content.or(if content_replaced {
                    None
                } else {
                    old.structured_content
                }),
                is_error: old.is_error,
            };
            outcome.is_error = a.is_error.unwrap_or(outcome.is_error);
        }
        Err(e) => {
            outcome.result = AgentToolResult::text(e.0);
            outcome.is_error = true;
        }
    }
    outcome
}

/// The message of a caught panic (`panic!("…")` payloads are `&str` or `String`).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        return (*s).to_string();
    }
    if let Some(s) = payload.downcast_ref::<String>() {
        return s.clone();
    }
    "panicked".to_string()
}

/// Options of [`run_tool_call`] (pi's `runToolCall` options).
#[derive(Clone, Default)]
pub struct RunToolCallOptions {
    pub tools: Vec<ToolRef>,
    pub assistant_message: AssistantMessage,
    pub context: AgentContext,
    pub signal: CancellationToken,
    pub on_update: Option<Arc<dyn Fn(AgentToolResult) + Send + Sync>>,
    pub before_tool_call: Option<BeforeToolCallHook>,
    pub after_tool_call: Option<AfterToolCallHook>,
    /// Zero means [`crate::agent::config::DEFAULT_ABORT_GRACE`].
    pub abort_grace: Duration,
}

/// pi's `runToolCall`: the whole pipeline for one call, with no events and no messages. Tool
/// failures are error outcomes, never `Err`.
pub async fn run_tool_call(call: &ToolCall, options: RunToolCallOptions) -> ToolCallOutcome {
    let mut context = options.context.clone();
    context.tools = options.tools.clone();
    let pipeline = ToolPipeline {
        before_tool_call: options.before_tool_call.clone(),
        after_tool_call: options.after_tool_call.clone(),
        abort_grace: if options.abort_grace.is_zero() {
            crate::agent::config::DEFAULT_ABORT_GRACE
        } else {
            options.abort_grace
        },
    };
    let assistant = &options.assistant_message;
    let cancel = &options.signal;
    let ready = match prepare_tool_call(&context, assistant, call, &pipeline, cancel).await {
        Prepared::Immediate(outcome) => return outcome,
        Prepared::Ready(ready) => ready,
    };
    let sink: Option<UpdateSink> = options.on_update.clone().map(|f| {
        let sink: UpdateSink = Arc::new(move |partial| {
            f(partial);
            Box::pin(async { Ok(()) })
        });
        sink
    });
    let outcome = match execute_ready(&ready, &pipeline, cancel, sink.as_ref()).await {
        Ok(outcome) => outcome,
        // Unreachable with an infallible sink; kept total rather than panicking.
        Err(failure) => ToolCallOutcome::immediate(call, failure.to_string()),
    };
    finalize(outcome, &ready, &context, assistant, &pipeline, cancel).await
}
