//! Builds the assistant message of one response while emitting the stream events in order.
//!
//! Every wire API feeds an [`Assembler`]: it keeps the growing [`AssistantMessage`], assigns
//! `contentIndex`es (positions in pi's content array), parses tool-call arguments incrementally,
//! and guarantees the contract's shape: at most one `start`, block events, exactly one terminal.

use serde_json::Value;

use super::partial_json::PartialJson;
use crate::agent::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
    now_ms,
};
use crate::agent::model::Model;
use crate::agent::stream_contract::{
    AssistantEventSink, AssistantEventStream, AssistantMessageEvent, event_channel,
};

/// Per-block streaming state, parallel to `message.content`.
enum BlockState {
    Open,
    OpenTool(Box<PartialJson>),
    Closed,
}

/// The consumer dropped the stream: stop working.
#[derive(Debug)]
pub struct ConsumerGone;

/// Assembles one response. Methods return `Err(ConsumerGone)` when nobody listens any more.
pub struct Assembler {
    sink: AssistantEventSink,
    pub message: AssistantMessage,
    blocks: Vec<BlockState>,
    started: bool,
    finished: bool,
}

impl Assembler {
    pub fn new(sink: AssistantEventSink, model: &Model) -> Self {
        Assembler {
            sink,
            message: AssistantMessage {
                api: model.api.clone(),
                provider: model.provider.clone(),
                model: model.id.clone(),
                timestamp: now_ms(),
                ..AssistantMessage::default()
            },
            blocks: Vec::new(),
            started: false,
            finished: false,
        }
    }

    pub fn started(&self) -> bool {
        self.started
    }

    pub fn has_tool_calls(&self) -> bool {
        self.message.tool_calls().next().is_some()
    }

    async fn emit(&mut self, event: AssistantMessageEvent) -> Result<(), ConsumerGone> {
        if self.sink.send(event).await {
            Ok(())
        } else {
            Err(ConsumerGone)
        }
    }

    /// Emits `start` once; block methods call it themselves.
    pub async fn start(&mut self) -> Result<(), ConsumerGone> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        let partial = Box::new(self.message.clone());
        self.emit(AssistantMessageEvent::Start { partial }).await
    }

    /// Emits a retry notice (only before `start`).
    pub async fn retry(&mut self, event: AssistantMessageEvent) -> Result<(), ConsumerGone> {
        self.emit(event).await
    }

    pub async fn text_start(&mut self) -> Result<usize, ConsumerGone> {
        let start = |content_index| AssistantMessageEvent::TextStart { content_index };
        self.open_block(ContentBlock::text(""), BlockState::Open, start)
            .await
    }

    pub async fn text_delta(&mut self, index: usize, delta: &str) -> Result<(), ConsumerGone> {
        if let Some(ContentBlock::Text(t)) = self.message.content.get_mut(index) {
            t.text.push_str(delta);
        }
        let delta = delta.to_string();
        let event = AssistantMessageEvent::TextDelta {
            content_index: index,
            delta,
        };
        self.emit(event).await
    }

    pub async fn thinking_start(
        &mut self,
        thinking: ThinkingContent,
    ) -> Result<usize, ConsumerGone> {
        let start = |content_index| AssistantMessageEvent::ThinkingStart { content_index };
        self.open_block(ContentBlock::Thinking(thinking), BlockState::Open, start)
            .await
    }

    pub async fn thinking_delta(&mut self, index: usize, delta: &str) -> Result<(), ConsumerGone> {
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking.push_str(delta);
        }
        let delta = delta.to_string();
        let event = AssistantMessageEvent::ThinkingDelta {
            content_index: index,
            delta,
        };
        self.emit(event).await
    }

    /// Appends to a thinking block's signature (no event, as in pi).
    pub fn thinking_signature(&mut self, index: usize, signature: &str) {
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking_signature
                .get_or_insert_with(String::new)
                .push_str(signature);
        }
    }

    pub async fn tool_start(
        &mut self,
        id: &str,
        name: &str,
        initial_arguments: Option<Value>,
    ) -> Result<usize, ConsumerGone> {
        let call = ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: initial_arguments.unwrap_or_else(|| Value::Object(Default::default())),
            ..ToolCall::default()
        };
        let state = BlockState::OpenTool(Box::default());
        let start = |content_index| AssistantMessageEvent::ToolCallStart {
            content_index,
            id: id.to_string(),
            tool_name: name.to_string(),
        };
        self.open_block(ContentBlock::ToolCall(call), state, start)
            .await
    }

    /// Fills in a tool call's id or name that arrived after its first delta.
    pub fn tool_identity(&mut self, index: usize, id: Option<&str>, name: Option<&str>) {
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            if let Some(id) = id.filter(|id| !id.is_empty() && call.id.is_empty()) {
                call.id = id.to_string();
            }
            if let Some(name) = name.filter(|n| !n.is_empty() && call.name.is_empty()) {
                call.name = name.to_string();
            }
        }
    }

    /// Sets a tool call's opaque replay signature (no event).
    pub fn tool_thought_signature(&mut self, index: usize, signature: String) {
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            call.thought_signature = Some(signature);
        }
    }

    /// Replaces a tool call's argument text so far with `text` (no event: a provider that
    /// sends the complete arguments which do not continue the streamed ones).
    pub fn tool_reset_arguments(&mut self, index: usize, text: &str) {
        if let Some(BlockState::OpenTool(parser)) = self.blocks.get_mut(index) {
            let mut fresh = Box::<PartialJson>::default();
            fresh.push(text);
            *parser = fresh;
        }
    }

    pub async fn tool_delta(&mut self, index: usize, delta: &str) -> Result<(), ConsumerGone> {
        if let Some(BlockState::OpenTool(parser)) = self.blocks.get_mut(index) {
            parser.push(delta);
        }
        let delta = delta.to_string();
        let event = AssistantMessageEvent::ToolCallDelta {
            content_index: index,
            delta,
        };
        self.emit(event).await
    }

    /// Emits `start` if not yet, then appends `block` and emits its start event; its index.
    async fn open_block(
        &mut self,
        block: ContentBlock,
        state: BlockState,
        start_event: impl FnOnce(usize) -> AssistantMessageEvent,
    ) -> Result<usize, ConsumerGone> {
        self.start().await?;
        self.message.content.push(block);
        self.blocks.push(state);
        let index = self.message.content.len() - 1;
        self.emit(start_event(index)).await.map(|_| index)
    }

    /// Closes one block, emitting its `*_end` event (no-op when already closed).
    pub async fn end_block(&mut self, index: usize) -> Result<(), ConsumerGone> {
        let Some(state) = self.blocks.get_mut(index) else {
            return Ok(());
        };
        let state = std::mem::replace(state, BlockState::Closed);
        let event = match (state, self.message.content.get_mut(index)) {
            (BlockState::Closed, _) | (_, None) => return Ok(()),
            (BlockState::OpenTool(parser), Some(ContentBlock::ToolCall(call))) => {
                finish_arguments(call, &parser);
                AssistantMessageEvent::ToolCallEnd {
                    content_index: index,
                    tool_call: Box::new(call.clone()),
                }
            }
            (_, Some(ContentBlock::Thinking(ThinkingContent { thinking, .. }))) => {
                AssistantMessageEvent::ThinkingEnd {
                    content_index: index,
                    content: thinking.clone(),
                }
            }
            (_, Some(ContentBlock::Text(TextContent { text, .. }))) => {
                AssistantMessageEvent::TextEnd {
                    content_index: index,
                    content: text.clone(),
                }
            }
            (_, Some(_)) => return Ok(()),
        };
        self.emit(event).await
    }

    /// Closes every open block in content order.
    pub async fn end_all(&mut self) -> Result<(), ConsumerGone> {
        for index in 0..self.blocks.len() {
            self.end_block(index).await?;
        }
        Ok(())
    }

    pub fn set_usage(&mut self, usage: Usage, model: &Model) {
        self.message.usage = with_cost(usage, model);
    }

    /// Terminal success.
    pub async fn done(mut self, reason: StopReason) -> Result<(), ConsumerGone> {
        self.start().await?;
        self.end_all().await?;
        self.finished = true;
        self.message.stop_reason = reason;
        let message = Box::new(self.message.clone());
        self.emit(AssistantMessageEvent::Done { reason, message })
            .await
    }

    /// Terminal failure (`error` or `aborted`). Open tool calls keep their best-effort
    /// arguments; no `*_end` events are emitted for unfinished blocks.
    pub async fn fail(mut self, reason: StopReason, error_message: String) {
        if self.finished {
            return;
        }
        self.finished = true;
        for (state, block) in self.blocks.iter().zip(self.message.content.iter_mut()) {
            if let (BlockState::OpenTool(parser), ContentBlock::ToolCall(call)) = (state, block) {
                call.arguments = Value::Object(parser.snapshot_object());
            }
        }
        self.message.stop_reason = reason;
        self.message.error_message = Some(error_message);
        let error = Box::new(self.message.clone());
        let _ = self
            .emit(AssistantMessageEvent::Error { reason, error })
            .await;
    }
}

fn finish_arguments(call: &mut ToolCall, parser: &PartialJson) {
    if call.id.is_empty() {
        // Some local servers omit ids; the loop and the next request need one to pair results.
        let unique = uuid::Uuid::new_v4().simple().to_string();
        call.id = format!("call_{}", &unique[..24]);
    }
    match parser.finish() {
        Ok(map) => call.arguments = Value::Object(map),
        Err(error) => {
            call.arguments = Value::Object(Default::default());
            call.arguments_error = Some(error);
        }
    }
}

/// Fills `total_tokens` and the cost from the model's per-million prices.
pub fn with_cost(mut usage: Usage, model: &Model) -> Usage {
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
    model.cost.charge(&mut usage);
    usage
}

/// An error terminal's message for failures outside any response.
pub fn error_message(model: &Model, reason: StopReason, message: String) -> AssistantMessage {
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: now_ms(),
        stop_reason: reason,
        error_message: Some(message),
        ..AssistantMessage::default()
    }
}

/// Runs a provider task on the current tokio runtime, streaming into a fresh channel. Without a
/// runtime the stream holds a single error terminal instead of panicking.
pub fn spawn_provider<F, Fut>(model: &Model, task: F) -> AssistantEventStream
where
    F: FnOnce(AssistantEventSink) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            let (sink, stream) = event_channel();
            handle.spawn(task(sink));
            stream
        }
        Err(_) => {
            let reason = StopReason::Error;
            let error = Box::new(error_message(
                model,
                reason,
                "no tokio runtime to stream on".into(),
            ));
            AssistantEventStream::from_events(vec![AssistantMessageEvent::Error { reason, error }])
        }
    }
}
