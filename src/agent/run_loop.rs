//! The agent loop (pi's `runAgentLoop`/`runAgentLoopContinue`/`runLoop`, spec §3.1–§3.8).
//!
//! Turns, steering and follow-up polls, `prepareNextTurn`, `prepareRequest`, `finishTurn` and
//! the tool batch follow pi 1.6.0 step by step. Every `emit` is awaited (barrier semantics).
//! Unlike pi's raw loop, a failing hook, listener or stream never leaves the event sequence
//! open: the core itself closes it with a synthetic failure turn (improvement 1), so every run
//! emits exactly one `agent_end`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::batch::{execute_tool_calls, fail_truncated_calls};
use crate::agent::config::{AgentLoopConfig, Emit, LoopError, LoopOutcome, RunFailure};
use crate::agent::declare::declare_tool_changes;
use crate::agent::event::AgentEvent;
use crate::agent::hooks::{
    AgentContext, AgentTurnContext, PrepareRequestContext, QueuePollHook, RecoverErrorContext,
    TurnDecision,
};
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, ThinkingLevel, ToolResultMessage,
    Usage, now_ms,
};
use crate::agent::model::Model;
use crate::agent::stream::{Request, stream_assistant_response};
use crate::agent::stream_contract::StreamFn;
use crate::agent::transcript::IncrementalTools;

/// Runs a prompt: the prompts are declared, appended and emitted, then the loop runs.
/// The caller's context is not mutated (the run works on its own copy).
pub async fn run_agent_loop(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    cancel: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
) -> LoopOutcome {
    let mut run = Run::new(context, config, emit, cancel, stream_fn);
    match run.start(prompts).await {
        Ok(outcome) => outcome,
        Err(error) => run.fail(error).await,
    }
}

/// Continues from the context's last message (no new input). Refuses, before any event, an
/// empty context or one ending with an assistant message.
pub async fn run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    cancel: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
) -> Result<LoopOutcome, LoopError> {
    check_continue(&context.messages)?;
    let mut run = Run::new(context, config, emit, cancel, stream_fn);
    Ok(match run.resume().await {
        Ok(outcome) => outcome,
        Err(error) => run.fail(error).await,
    })
}

/// pi's synchronous `agentLoopContinue` checks.
pub fn check_continue(messages: &[AgentMessage]) -> Result<(), LoopError> {
    match messages.last() {
        None => Err(LoopError::NoMessages),
        Some(AgentMessage::Assistant(_)) => Err(LoopError::ContinueFromAssistant),
        Some(_) => Ok(()),
    }
}

/// pi's synthetic failure message (`handleRunFailure`).
pub fn failure_message(config: &AgentLoopConfig, error: &str, aborted: bool) -> AssistantMessage {
    AssistantMessage {
        content: vec![ContentBlock::text("")],
        api: config.model.api.clone(),
        provider: config.model.provider.clone(),
        model: config.model.id.clone(),
        usage: Usage::default(),
        stop_reason: if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        },
        error_message: Some(error.to_string()),
        timestamp: now_ms(),
        ..Default::default()
    }
}

struct Run {
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    cancel: CancellationToken,
    stream_fn: Arc<dyn StreamFn>,
    new_messages: Vec<AgentMessage>,
    tools: IncrementalTools,
    agent_end_sent: bool,
    /// Failed responses `recoverError` retried in this run.
    recoveries: u32,
}

impl Run {
    fn new(
        context: AgentContext,
        config: AgentLoopConfig,
        emit: Emit,
        cancel: CancellationToken,
        stream_fn: Arc<dyn StreamFn>,
    ) -> Self {
        Run {
            context,
            config,
            emit,
            cancel,
            stream_fn,
            new_messages: Vec::new(),
            tools: IncrementalTools::default(),
            agent_end_sent: false,
            recoveries: 0,
        }
    }

    async fn emit(&mut self, event: AgentEvent) -> Result<(), RunFailure> {
        if matches!(event, AgentEvent::AgentEnd { .. }) {
            self.agent_end_sent = true;
        }
        (self.emit)(event).await
    }

    async fn start(&mut self, prompts: Vec<AgentMessage>) -> Result<LoopOutcome, RunFailure> {
        let initial = declare_tool_changes(
            &self.context.messages,
            &self.context.tools,
            prompts,
            &mut self.tools,
        );
        self.context.messages_mut().extend(initial.iter().cloned());
        self.new_messages = initial.clone();
        self.emit(AgentEvent::AgentStart).await?;
        self.emit(AgentEvent::TurnStart).await?;
        for message in initial {
            self.emit(AgentEvent::MessageStart {
                message: message.clone(),
            })
            .await?;
            self.emit(AgentEvent::MessageEnd { message }).await?;
        }
        self.run_loop().await
    }

    async fn resume(&mut self) -> Result<LoopOutcome, RunFailure> {
        self.emit(AgentEvent::AgentStart).await?;
        self.emit(AgentEvent::TurnStart).await?;
        self.run_loop().await
    }

    async fn poll(&self, hook: Option<QueuePollHook>) -> Result<Vec<AgentMessage>, RunFailure> {
        match hook {
            Some(poll) => Ok(poll().await?),
            None => Ok(Vec::new()),
        }
    }

    async fn poll_steering(&self) -> Result<Vec<AgentMessage>, RunFailure> {
        self.poll(self.config.get_steering_messages.clone()).await
    }

    fn turn(
        &self,
        message: &Arc<AssistantMessage>,
        results: &[Arc<ToolResultMessage>],
    ) -> AgentTurnContext {
        AgentTurnContext {
            message: message.clone(),
            tool_results: results.to_vec(),
            context: self.context.clone(),
            new_messages: self.new_messages.clone(),
        }
    }

    fn replace_context(&mut self, context: AgentContext) {
        self.context = context;
        self.tools.reset();
    }

    /// pi's `runLoop` (spec §3.2).
    async fn run_loop(&mut self) -> Result<LoopOutcome, RunFailure> {
        // The finished turn's response and results; its full `AgentTurnContext` (the context's
        // list of shared messages) is only built when a hook is there to receive it.
        let mut last_turn: Option<(Arc<AssistantMessage>, Vec<Arc<ToolResultMessage>>)> = None;
        let mut explicit_continuation = false;
        let mut pending = self.poll_steering().await?;
        loop {
            let mut has_more_tool_calls = true;
            while has_more_tool_calls || !pending.is_empty() {
                let mut incoming = Vec::new();
                if let Some(turn) = last_turn.take() {
                    incoming = self.prepare_next_turn(turn).await?;
                    if pending.is_empty() {
                        pending = self.poll_steering().await?;
                    }
                    self.emit(AgentEvent::TurnStart).await?;
                }
                incoming.append(&mut pending);
                self.append_input(incoming).await?;
                let message = loop {
                    self.prepare_request().await?;
                    let message = self.request().await?;
                    match self.recover(&message).await? {
                        Some(context) => self.retry_with(context, message).await?,
                        None => break message,
                    }
                };
                if message.stop_reason.is_hard_exit() {
                    return self.hard_exit(message).await;
                }
                let (results, more) = self.run_tools(&message).await?;
                has_more_tool_calls = more;
                let decision = match self.config.hooks.finish_turn.clone() {
                    Some(finish) => {
                        finish(self.turn(&message, &results), self.cancel.clone()).await?
                    }
                    None => None,
                };
                let turn = (message.clone(), results.clone());
                self.emit(AgentEvent::TurnEnd {
                    message,
                    tool_results: results,
                })
                .await?;
                if decision == Some(TurnDecision::End) {
                    return self.end().await;
                }
                explicit_continuation = decision == Some(TurnDecision::Continue);
                pending = self.poll_steering().await?;
                if has_more_tool_calls || !pending.is_empty() {
                    explicit_continuation = false;
                }
                last_turn = Some(turn);
            }
            let follow_ups = self
                .poll(self.config.get_follow_up_messages.clone())
                .await?;
            if !follow_ups.is_empty() {
                explicit_continuation = false;
                pending = follow_ups;
                continue;
            }
            if explicit_continuation {
                // The context-only request rule: one more request with no new input.
                explicit_continuation = false;
                continue;
            }
            break;
        }
        self.end().await
    }

    /// `prepareNextTurn`: may replace context, model and level, and returns messages to add.
    /// The context has not changed since the turn ended, so the hook sees what it always saw.
    async fn prepare_next_turn(
        &mut self,
        (message, results): (Arc<AssistantMessage>, Vec<Arc<ToolResultMessage>>),
    ) -> Result<Vec<AgentMessage>, RunFailure> {
        let Some(hook) = self.config.hooks.prepare_next_turn.clone() else {
            return Ok(Vec::new());
        };
        let turn = self.turn(&message, &results);
        let Some(update) = hook(turn, self.cancel.clone()).await? else {
            return Ok(Vec::new());
        };
        self.apply(update.context, update.model, update.thinking_level);
        Ok(update.messages.unwrap_or_default())
    }

    /// Declares tool changes for, emits and appends the turn's input messages.
    async fn append_input(&mut self, incoming: Vec<AgentMessage>) -> Result<(), RunFailure> {
        let declared = declare_tool_changes(
            &self.context.messages,
            &self.context.tools,
            incoming,
            &mut self.tools,
        );
        for message in declared {
            self.emit(AgentEvent::MessageStart {
                message: message.clone(),
            })
            .await?;
            self.emit(AgentEvent::MessageEnd {
                message: message.clone(),
            })
            .await?;
            self.context.messages_mut().push(message.clone());
            self.new_messages.push(message);
        }
        Ok(())
    }

    /// `prepareRequest`: may replace context, model and level, but not add messages.
    async fn prepare_request(&mut self) -> Result<(), RunFailure> {
        let Some(hook) = self.config.hooks.prepare_request.clone() else {
            return Ok(());
        };
        let ctx = PrepareRequestContext {
            context: self.context.clone(),
            model: self.config.model.clone(),
            thinking_level: self.config.thinking_level(),
        };
        let Some(update) = hook(ctx, self.cancel.clone()).await? else {
            return Ok(());
        };
        self.apply(update.context, update.model, update.thinking_level);
        Ok(())
    }

    /// What a hook replaced: the context, the model, the thinking level.
    fn apply(
        &mut self,
        context: Option<AgentContext>,
        model: Option<Model>,
        level: Option<ThinkingLevel>,
    ) {
        if let Some(context) = context {
            self.replace_context(context);
        }
        if let Some(model) = model {
            self.config.model = model;
        }
        if let Some(level) = level {
            self.config.set_thinking_level(level);
        }
    }

    async fn request(&mut self) -> Result<Arc<AssistantMessage>, RunFailure> {
        let req = Request {
            config: &self.config,
            emit: &self.emit,
            cancel: &self.cancel,
            stream_fn: &self.stream_fn,
        };
        let message = stream_assistant_response(&mut self.context, &req).await?;
        self.new_messages
            .push(AgentMessage::Assistant(message.clone()));
        Ok(message)
    }

    /// Runs (or fails, for `length`) the response's tool calls; returns the results and
    /// whether the loop has a tool continuation.
    async fn run_tools(
        &mut self,
        message: &AssistantMessage,
    ) -> Result<(Vec<Arc<ToolResultMessage>>, bool), RunFailure> {
        if message.tool_calls().next().is_none() {
            return Ok((Vec::new(), false));
        }
        let batch = if message.stop_reason == StopReason::Length {
            fail_truncated_calls(message, &self.emit).await?
        } else {
            execute_tool_calls(
                &self.context,
                message,
                &self.config,
                &self.emit,
                &self.cancel,
            )
            .await?
        };
        for result in &batch.messages {
            let message = AgentMessage::ToolResult(result.clone());
            self.context.messages_mut().push(message.clone());
            self.new_messages.push(message);
        }
        Ok((batch.messages, !batch.terminate))
    }

    /// `recoverError` for a response that ended in `error`: the context to retry with, if any.
    async fn recover(
        &mut self,
        message: &AssistantMessage,
    ) -> Result<Option<AgentContext>, RunFailure> {
        let Some(hook) = self.config.hooks.recover_error.clone() else {
            return Ok(None);
        };
        if message.stop_reason != StopReason::Error || self.cancel.is_cancelled() {
            return Ok(None);
        }
        let ctx = RecoverErrorContext {
            message: message.clone(),
            context: self.context.clone(),
            attempts: self.recoveries,
        };
        self.recoveries += 1;
        Ok(hook(ctx, self.cancel.clone()).await?)
    }

    /// Closes the failed turn and opens the retry's, on the recovered context.
    async fn retry_with(
        &mut self,
        context: AgentContext,
        failed: Arc<AssistantMessage>,
    ) -> Result<(), RunFailure> {
        self.emit(AgentEvent::TurnEnd {
            message: failed,
            tool_results: Vec::new(),
        })
        .await?;
        self.replace_context(context);
        self.emit(AgentEvent::TurnStart).await
    }

    /// `error`/`aborted`: `finishTurn` runs (its decision ignored), then the run ends.
    async fn hard_exit(
        &mut self,
        message: Arc<AssistantMessage>,
    ) -> Result<LoopOutcome, RunFailure> {
        if let Some(finish) = self.config.hooks.finish_turn.clone() {
            finish(self.turn(&message, &[]), self.cancel.clone()).await?;
        }
        self.emit(AgentEvent::TurnEnd {
            message,
            tool_results: Vec::new(),
        })
        .await?;
        self.end().await
    }

    async fn end(&mut self) -> Result<LoopOutcome, RunFailure> {
        let messages = self.new_messages.clone();
        self.emit(AgentEvent::AgentEnd { messages }).await?;
        Ok(self.outcome())
    }

    fn outcome(&self) -> LoopOutcome {
        let last = self
            .new_messages
            .iter()
            .rev()
            .find_map(AgentMessage::as_assistant);
        let aborted = last.is_some_and(|m| m.stop_reason == StopReason::Aborted);
        let error = last
            .filter(|m| m.stop_reason == StopReason::Error)
            .and_then(|m| m.error_message.clone());
        LoopOutcome {
            new_messages: self.new_messages.clone(),
            aborted,
            error,
            failure: None,
        }
    }

    /// Improvement 1: closes the event sequence after a failure, like pi's Agent does, but
    /// inside the core and without giving up when a listener fails again.
    async fn fail(&mut self, cause: RunFailure) -> LoopOutcome {
        let aborted = self.cancel.is_cancelled();
        let error = cause.to_string();
        if self.agent_end_sent {
            return LoopOutcome {
                new_messages: self.new_messages.clone(),
                aborted,
                error: Some(error),
                failure: Some(cause),
            };
        }
        let failure = Arc::new(failure_message(&self.config, &error, aborted));
        let as_agent = AgentMessage::Assistant(failure.clone());
        let events = [
            AgentEvent::MessageStart {
                message: as_agent.clone(),
            },
            AgentEvent::MessageEnd {
                message: as_agent.clone(),
            },
            AgentEvent::TurnEnd {
                message: failure,
                tool_results: Vec::new(),
            },
            AgentEvent::AgentEnd {
                messages: vec![as_agent.clone()],
            },
        ];
        for event in events {
            // A second failure is not allowed to drop `agent_end`.
            if let Err(again) = self.emit(event).await {
                tracing::warn!(
                    ?cause,
                    "listener failed while closing a failed run: {again}"
                );
            }
        }
        LoopOutcome {
            new_messages: vec![as_agent],
            aborted,
            error: Some(error),
            failure: Some(cause),
        }
    }
}
