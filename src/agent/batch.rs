//! A turn's tool batch with events (pi's `executeToolCalls`): sequential or parallel, plus the
//! length-truncation failure path and the `terminate` vote.

use std::sync::Arc;

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use crate::agent::config::{AgentLoopConfig, Emit, RunFailure};
use crate::agent::event::AgentEvent;
use crate::agent::hooks::AgentContext;
use crate::agent::message::{AgentMessage, AssistantMessage, ToolCall, ToolResultMessage};
use crate::agent::tool::ExecutionMode;
use crate::agent::tool_exec::{
    OPERATION_ABORTED, Prepared, ReadyCall, ToolCallOutcome, ToolPipeline, UpdateSink,
    execute_ready, finalize, prepare_tool_call,
};

/// The batch's result messages (source order) and whether every result voted to terminate.
pub(crate) struct BatchResult {
    pub messages: Vec<Arc<ToolResultMessage>>,
    pub terminate: bool,
}

struct BatchCtx<'a> {
    context: &'a AgentContext,
    assistant: &'a AssistantMessage,
    pipeline: ToolPipeline,
    emit: &'a Emit,
    cancel: &'a CancellationToken,
}

/// pi's `shouldTerminateToolBatch`: at least one result, and every one says `terminate`.
fn should_terminate(outcomes: &[ToolCallOutcome]) -> bool {
    !outcomes.is_empty() && outcomes.iter().all(|o| o.result.terminate == Some(true))
}

/// Runs every tool call of `assistant`, emitting pi's tool and message events.
pub(crate) async fn execute_tool_calls(
    context: &AgentContext,
    assistant: &AssistantMessage,
    config: &AgentLoopConfig,
    emit: &Emit,
    cancel: &CancellationToken,
) -> Result<BatchResult, RunFailure> {
    let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
    let sequential = config.tool_execution == ExecutionMode::Sequential
        || calls.iter().any(|c| {
            context
                .tool(&c.name)
                .is_some_and(|t| t.execution_mode() == Some(ExecutionMode::Sequential))
        });
    let ctx = BatchCtx {
        context,
        assistant,
        pipeline: ToolPipeline {
            before_tool_call: config.hooks.before_tool_call.clone(),
            after_tool_call: config.hooks.after_tool_call.clone(),
            abort_grace: config.abort_grace,
        },
        emit,
        cancel,
    };
    let (outcomes, messages) = if sequential {
        run_sequential(&ctx, &calls).await?.into_iter().unzip()
    } else {
        let outcomes = run_parallel(&ctx, &calls).await?;
        // Phase 3: result messages in source order, after every job finished.
        let mut messages = Vec::with_capacity(outcomes.len());
        for outcome in &outcomes {
            messages.push(emit_result_message(emit, outcome).await?);
        }
        (outcomes, messages)
    };
    let outcomes: Vec<ToolCallOutcome> = outcomes;
    Ok(BatchResult {
        terminate: should_terminate(&outcomes),
        messages,
    })
}

async fn emit_result_message(
    emit: &Emit,
    outcome: &ToolCallOutcome,
) -> Result<Arc<ToolResultMessage>, RunFailure> {
    let message = Arc::new(outcome.to_message());
    let as_agent = AgentMessage::ToolResult(message.clone());
    emit(AgentEvent::MessageStart {
        message: as_agent.clone(),
    })
    .await?;
    emit(AgentEvent::MessageEnd { message: as_agent }).await?;
    Ok(message)
}

async fn emit_start(emit: &Emit, call: &ToolCall) -> Result<(), RunFailure> {
    emit(AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
    })
    .await
}

async fn emit_end(emit: &Emit, outcome: &ToolCallOutcome) -> Result<(), RunFailure> {
    emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: outcome.tool_call.id.clone(),
        tool_name: outcome.tool_call.name.clone(),
        result: Box::new(outcome.result.clone()),
        is_error: outcome.is_error,
        duration_ms: outcome.duration_ms,
    })
    .await
}

fn update_sink(emit: &Emit, call: &ToolCall) -> UpdateSink {
    let emit = emit.clone();
    let call = call.clone();
    Arc::new(move |partial| {
        emit(AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result: Box::new(partial),
        })
    })
}

/// Executes and finalizes a prepared call.
async fn run_ready(ctx: &BatchCtx<'_>, ready: &ReadyCall) -> Result<ToolCallOutcome, RunFailure> {
    let sink = update_sink(ctx.emit, &ready.tool_call);
    let outcome = execute_ready(ready, &ctx.pipeline, ctx.cancel, Some(&sink)).await?;
    Ok(finalize(
        outcome,
        ready,
        ctx.context,
        ctx.assistant,
        &ctx.pipeline,
        ctx.cancel,
    )
    .await)
}

async fn prepare(ctx: &BatchCtx<'_>, call: &ToolCall) -> Prepared {
    prepare_tool_call(ctx.context, ctx.assistant, call, &ctx.pipeline, ctx.cancel).await
}

/// Each call is started, prepared, executed, ended and recorded before the next one starts.
async fn run_sequential(
    ctx: &BatchCtx<'_>,
    calls: &[ToolCall],
) -> Result<Vec<(ToolCallOutcome, Arc<ToolResultMessage>)>, RunFailure> {
    let mut out = Vec::with_capacity(calls.len());
    for call in calls {
        emit_start(ctx.emit, call).await?;
        let outcome = match prepare(ctx, call).await {
            Prepared::Immediate(outcome) => outcome,
            Prepared::Ready(ready) => run_ready(ctx, &ready).await?,
        };
        emit_end(ctx.emit, &outcome).await?;
        let message = emit_result_message(ctx.emit, &outcome).await?;
        out.push((outcome, message));
    }
    Ok(out)
}

async fn run_parallel(
    ctx: &BatchCtx<'_>,
    calls: &[ToolCall],
) -> Result<Vec<ToolCallOutcome>, RunFailure> {
    #[allow(clippy::large_enum_variant)] // Short-lived, one per tool call.
    enum Slot {
        Done(ToolCallOutcome),
        Job(ReadyCall),
    }
    let mut slots = Vec::with_capacity(calls.len());
    for call in calls {
        emit_start(ctx.emit, call).await?;
        match prepare(ctx, call).await {
            Prepared::Immediate(outcome) => {
                emit_end(ctx.emit, &outcome).await?;
                slots.push(Slot::Done(outcome));
            }
            Prepared::Ready(ready) => slots.push(Slot::Job(ready)),
        }
    }
    // Every job runs to completion even if a listener fails, so no tool outlives the run
    // (pi's `Promise.all` rejects at once and leaves tools running).
    let results = join_all(slots.into_iter().map(|slot| async move {
        match slot {
            Slot::Done(outcome) => Ok(outcome),
            Slot::Job(ready) => {
                let outcome = if ctx.cancel.is_cancelled() {
                    ToolCallOutcome::immediate(&ready.tool_call, OPERATION_ABORTED)
                } else {
                    run_ready(ctx, &ready).await?
                };
                emit_end(ctx.emit, &outcome).await?;
                Ok(outcome)
            }
        }
    }))
    .await;
    results.into_iter().collect()
}

/// pi's `failToolCallsFromTruncatedMessage`: every call of a `length` response fails unexecuted.
pub(crate) async fn fail_truncated_calls(
    assistant: &AssistantMessage,
    emit: &Emit,
) -> Result<BatchResult, RunFailure> {
    let mut messages = Vec::new();
    for call in assistant.tool_calls() {
        emit_start(emit, call).await?;
        let text = format!(
            "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.",
            call.name
        );
        let outcome = ToolCallOutcome::immediate(call, text);
        emit_end(emit, &outcome).await?;
        messages.push(emit_result_message(emit, &outcome).await?);
    }
    Ok(BatchResult {
        messages,
        terminate: false,
    })
}
