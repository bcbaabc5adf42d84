//! One provider request (pi's `streamAssistantResponse`): transform, convert, key, stream, and
//! the assistant message events. Plus two improvements: no request once aborted and an
//! in-flight stream raced against the abort (2), and `message_discard` (5).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::config::{AgentLoopConfig, Emit, RunFailure, merged_identity};
use crate::agent::convert::{default_convert_shared, default_convert_to_llm};
use crate::agent::event::AgentEvent;
use crate::agent::hooks::AgentContext;
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent,
    UserMessage, now_ms,
};
use crate::agent::stream_contract::{
    AssistantMessageEvent, LlmContext, StreamFn, StreamOptions, StreamRequest,
};
use crate::agent::tool_exec::{OPERATION_ABORTED, panic_text};

/// The error text of a stream that ended without `done`/`error`.
pub const STREAM_ENDED_TEXT: &str = "Provider stream ended without a terminal event";

/// The instruction of the single repair retry; it never enters the transcript.
pub const PROTOCOL_REPAIR_TEXT: &str = "Your previous response wrote tool calls as text instead of using the native tool-calling interface, so nothing was executed. Call the tools through the native tool-calling interface only, and do not write tool-call markup in your text.";

/// The reason carried by `message_discard`.
pub const DISCARD_REASON: &str =
    "The response wrote tool calls as text while native tools were available";

/// What a request needs from the loop.
pub(crate) struct Request<'a> {
    pub config: &'a AgentLoopConfig,
    pub emit: &'a Emit,
    pub cancel: &'a CancellationToken,
    pub stream_fn: &'a Arc<dyn StreamFn>,
}

/// Streams one response, appends the final message to `context` and returns it.
pub(crate) async fn stream_assistant_response(
    context: &mut AgentContext,
    req: &Request<'_>,
) -> Result<Arc<AssistantMessage>, RunFailure> {
    let config = req.config;
    let hooks = &config.hooks;
    // Without hooks the request's messages are a pure function of the context, which does not
    // change until the response is appended: they share the context's snapshot (no copy when
    // the conversion keeps every message), and a repair recomputes them.
    let llm = if hooks.transform_context.is_none() && hooks.convert_to_llm.is_none() {
        default_convert_shared(&context.messages)
    } else {
        let mut messages = context.messages.to_vec();
        if let Some(transform) = &hooks.transform_context {
            messages = transform(messages, req.cancel.clone()).await?;
        }
        Arc::new(match &hooks.convert_to_llm {
            Some(convert) => convert(messages, req.cancel.clone()).await?,
            None => default_convert_to_llm(messages),
        })
    };
    let options = request_options(config, req.cancel).await?;
    let repairable = config.protocol_repair && !context.tools.is_empty();
    let kept = repairable.then(|| Arc::clone(&llm));
    let mut attempt = Attempt::run(req, llm, options.clone()).await?;
    if let Some(kept) = kept
        && fakes_tool_calls(&attempt.message)
    {
        if attempt.started {
            (req.emit)(AgentEvent::MessageDiscard {
                message: Box::new(attempt.message.clone()),
                reason: DISCARD_REASON.to_string(),
            })
            .await?;
        }
        // The repair request is the same messages plus the instruction; the only copy of the
        // history, and only on this rare path.
        let mut repaired = Arc::unwrap_or_clone(kept);
        repaired.push(AgentMessage::from(UserMessage {
            content: PROTOCOL_REPAIR_TEXT.into(),
            timestamp: now_ms(),
        }));
        attempt = Attempt::run(req, Arc::new(repaired), options).await?;
    }
    let mut message = attempt.message;
    message.thinking_level = Some(config.thinking_level());
    let message = Arc::new(message);
    let as_agent = AgentMessage::Assistant(message.clone());
    if !attempt.started {
        (req.emit)(AgentEvent::MessageStart {
            message: as_agent.clone(),
        })
        .await?;
    }
    context.messages_mut().push(as_agent.clone());
    (req.emit)(AgentEvent::MessageEnd { message: as_agent }).await?;
    Ok(message)
}

/// The request options: the template plus reasoning, key, identity and signal.
async fn request_options(
    config: &AgentLoopConfig,
    cancel: &CancellationToken,
) -> Result<StreamOptions, RunFailure> {
    let mut options = config.stream_options.clone();
    if let Some(get_key) = &config.hooks.get_api_key {
        let key = get_key(config.model.provider.clone(), cancel.clone()).await?;
        if let Some(key) = key.filter(|k| !k.is_empty()) {
            options.api_key = Some(key);
        }
    }
    options.reasoning = config.reasoning;
    options.identity = Some(merged_identity(options.identity.as_ref()));
    options.signal = cancel.clone();
    Ok(options)
}

/// Text that imitates tool-call markup (XML-style invocations some models fall back to).
fn fakes_tool_calls(message: &AssistantMessage) -> bool {
    const MARKERS: [&str; 5] = [
        "<invoke name=",
        "<tool_call>",
        "<function_calls>",
        "<tool_use>",
        "<function=",
    ];
    if message.stop_reason.is_hard_exit() || message.tool_calls().next().is_some() {
        return false;
    }
    let text = message.text();
    MARKERS.iter().any(|m| text.contains(m))
}

/// One provider call, consumed to its final message.
struct Attempt {
    message: AssistantMessage,
    /// A `start` event arrived (so `message_start` was emitted).
    started: bool,
}

impl Attempt {
    async fn run(
        req: &Request<'_>,
        messages: Arc<Vec<AgentMessage>>,
        options: StreamOptions,
    ) -> Result<Attempt, RunFailure> {
        let mut partial = Partial::new(req.config);
        if req.cancel.is_cancelled() {
            // Improvement 2: no provider request is started after an abort.
            return Ok(Attempt {
                message: partial.finish(StopReason::Aborted, OPERATION_ABORTED),
                started: false,
            });
        }
        // pi 1.6.0 times each provider stream (`durationMs` on the final message).
        let started_at = std::time::Instant::now();
        // A stream function must encode failures in its stream; one that panics instead
        // ("provider exploded") fails the run like pi's throwing stream function.
        let call = std::panic::AssertUnwindSafe(|| {
            req.stream_fn.stream(StreamRequest {
                model: req.config.model.clone(),
                context: LlmContext { messages },
                options,
            })
        });
        let mut stream = std::panic::catch_unwind(call)
            .map_err(|p| RunFailure::Panic(panic_text(p.as_ref())))?;
        let cancelled = req.cancel.cancelled();
        tokio::pin!(cancelled);
        let mut attempt = loop {
            let event = tokio::select! {
                biased;
                event = stream.next() => event,
                () = &mut cancelled => {
                    break Attempt {
                        message: partial.finish(StopReason::Aborted, OPERATION_ABORTED),
                        started: partial.started,
                    };
                }
            };
            let Some(event) = event else {
                break Attempt {
                    message: partial.finish(StopReason::Error, STREAM_ENDED_TEXT),
                    started: partial.started,
                };
            };
            if let Some(message) = partial.accept(event, req.emit).await? {
                break Attempt {
                    message,
                    started: partial.started,
                };
            }
        };
        if attempt.message.duration_ms.is_none() {
            let ms = u64::try_from(started_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            attempt.message.duration_ms = Some(ms);
        }
        Ok(attempt)
    }
}

/// The response being received: only as much accumulation as an interrupted stream needs.
struct Partial {
    message: AssistantMessage,
    started: bool,
}

impl Partial {
    fn new(config: &AgentLoopConfig) -> Self {
        Partial {
            message: AssistantMessage {
                api: config.model.api.clone(),
                provider: config.model.provider.clone(),
                model: config.model.id.clone(),
                timestamp: now_ms(),
                ..Default::default()
            },
            started: false,
        }
    }

    /// The partial content, closed with a failure.
    fn finish(&mut self, reason: StopReason, text: &str) -> AssistantMessage {
        let mut message = self.message.clone();
        message.stop_reason = reason;
        message.error_message = Some(text.to_string());
        message
    }

    /// Handles one event; returns the final message on a terminal event.
    async fn accept(
        &mut self,
        event: AssistantMessageEvent,
        emit: &Emit,
    ) -> Result<Option<AssistantMessage>, RunFailure> {
        match event {
            AssistantMessageEvent::Start { partial } => {
                self.message = *partial;
                self.started = true;
                emit(AgentEvent::MessageStart {
                    message: AgentMessage::from(self.message.clone()),
                })
                .await?;
            }
            AssistantMessageEvent::Retry {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                emit(AgentEvent::ProviderRetry {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                })
                .await?;
            }
            AssistantMessageEvent::Done { message, .. } => return Ok(Some(*message)),
            AssistantMessageEvent::Error { reason, mut error } => {
                if !error.stop_reason.is_hard_exit() {
                    error.stop_reason = if reason.is_hard_exit() {
                        reason
                    } else {
                        StopReason::Error
                    };
                }
                return Ok(Some(*error));
            }
            // pi ignores block events that arrive before `start`.
            block if self.started => {
                self.fold(&block);
                emit(AgentEvent::MessageUpdate {
                    assistant_message_event: block,
                })
                .await?;
            }
            _ => {}
        }
        Ok(None)
    }

    fn fold(&mut self, event: &AssistantMessageEvent) {
        let content = &mut self.message.content;
        let slot = |content: &mut Vec<ContentBlock>, index: usize, empty: ContentBlock| {
            while content.len() <= index {
                content.push(empty.clone());
            }
        };
        match event {
            AssistantMessageEvent::TextStart { content_index } => {
                slot(content, *content_index, ContentBlock::text(""));
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } => {
                slot(content, *content_index, ContentBlock::text(""));
                if let Some(ContentBlock::Text(TextContent { text, .. })) =
                    content.get_mut(*content_index)
                {
                    text.push_str(delta);
                }
            }
            AssistantMessageEvent::ThinkingStart { content_index }
            | AssistantMessageEvent::ThinkingDelta { content_index, .. } => {
                let empty = ContentBlock::Thinking(ThinkingContent::default());
                slot(content, *content_index, empty);
                if let (
                    AssistantMessageEvent::ThinkingDelta { delta, .. },
                    Some(ContentBlock::Thinking(t)),
                ) = (event, content.get_mut(*content_index))
                {
                    t.thinking.push_str(delta);
                }
            }
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                slot(content, *content_index, ContentBlock::text(""));
                if let Some(block) = content.get_mut(*content_index) {
                    *block = ContentBlock::ToolCall((**tool_call).clone());
                }
            }
            _ => {}
        }
    }
}
