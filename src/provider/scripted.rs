//! An in-process scripted provider (`api: "scripted"`, like pi's faux provider): a queue of
//! assistant messages streamed as small deltas, no network. `agent-lsp demo` and loop tests use it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use super::assembler::{Assembler, ConsumerGone, spawn_provider, with_cost};
use super::transport::ABORTED;
use crate::agent::message::{
    AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall, Usage,
};
use crate::agent::model::Model;
use crate::agent::stream_contract::{
    AssistantEventStream, LlmContext, StreamFn, StreamOptions, StreamRequest,
};

pub const API: &str = "scripted";
/// Characters per delta cycle through these sizes (pi chops 3–5 "tokens" of 4 characters).
const CHUNK_CHARS: [usize; 3] = [12, 16, 20];

/// Builds a response from the request (pi's response factories).
pub type ResponseFn = dyn Fn(&LlmContext, &StreamOptions, usize) -> AssistantMessage + Send + Sync;

#[derive(Clone)]
pub enum ScriptedResponse {
    Message(Box<AssistantMessage>),
    Factory(Arc<ResponseFn>),
}

/// The queue of scripted responses; clones share the queue.
#[derive(Clone)]
pub struct ScriptedProvider {
    queue: Arc<Mutex<VecDeque<ScriptedResponse>>>,
    calls: Arc<AtomicUsize>,
    delay: Option<Duration>,
}

/// A text response.
pub fn scripted_text(text: &str) -> AssistantMessage {
    scripted_message(vec![ContentBlock::text(text)], StopReason::Stop)
}

/// A response calling one tool (stop reason `toolUse`).
pub fn scripted_tool_call(id: &str, name: &str, arguments: Value) -> AssistantMessage {
    let call = ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        ..ToolCall::default()
    };
    scripted_message(vec![ContentBlock::ToolCall(call)], StopReason::ToolUse)
}

pub fn scripted_message(content: Vec<ContentBlock>, stop_reason: StopReason) -> AssistantMessage {
    AssistantMessage {
        content,
        stop_reason,
        ..AssistantMessage::default()
    }
}

impl ScriptedProvider {
    pub fn new(responses: Vec<AssistantMessage>) -> Self {
        ScriptedProvider {
            queue: Arc::new(Mutex::new(
                responses
                    .into_iter()
                    .map(|m| ScriptedResponse::Message(Box::new(m)))
                    .collect(),
            )),
            calls: Arc::new(AtomicUsize::new(0)),
            delay: None,
        }
    }

    /// Pauses between deltas (pi's `tokensPerSecond` pacing).
    pub fn with_delay(mut self, per_delta: Duration) -> Self {
        self.delay = Some(per_delta);
        self
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<ScriptedResponse>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn push(&self, message: AssistantMessage) {
        self.lock()
            .push_back(ScriptedResponse::Message(Box::new(message)));
    }

    pub fn push_fn(&self, factory: Arc<ResponseFn>) {
        self.lock().push_back(ScriptedResponse::Factory(factory));
    }

    pub fn pending(&self) -> usize {
        self.lock().len()
    }

    /// Requests served so far (including ones that found the queue empty).
    pub fn call_count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl StreamFn for ScriptedProvider {
    fn stream(&self, request: StreamRequest) -> AssistantEventStream {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let next = self.lock().pop_front();
        let response = next.map(|r| match r {
            ScriptedResponse::Message(m) => *m,
            ScriptedResponse::Factory(f) => f(&request.context, &request.options, call),
        });
        let input_chars: usize = request
            .context
            .messages
            .iter()
            .map(|m| serde_json::to_string(m).map(|s| s.len()).unwrap_or(0))
            .sum();
        let delay = self.delay;
        let StreamRequest { model, options, .. } = request;
        spawn_provider(&model.clone(), move |sink| async move {
            let mut asm = Assembler::new(sink, &model);
            let Some(response) = response else {
                return asm
                    .fail(
                        StopReason::Error,
                        "No more scripted responses queued".into(),
                    )
                    .await;
            };
            let _ = play(&mut asm, &response, &options, delay).await;
            if options.signal.is_cancelled() {
                return asm.fail(StopReason::Aborted, ABORTED.into()).await;
            }
            finish(asm, response, &model, input_chars).await;
        })
    }
}

async fn finish(mut asm: Assembler, response: AssistantMessage, model: &Model, input_chars: usize) {
    let usage = if response.usage == Usage::default() {
        let output_chars: usize = asm.message.content.iter().map(block_chars).sum();
        Usage {
            input: (input_chars / 4) as u64,
            output: output_chars.div_ceil(4) as u64,
            ..Usage::default()
        }
    } else {
        response.usage.clone()
    };
    asm.message.usage = with_cost(usage, model);
    asm.message.response_id = response.response_id.clone();
    if response.stop_reason.is_hard_exit() {
        let message = response
            .error_message
            .clone()
            .unwrap_or_else(|| "Scripted error".into());
        return asm.fail(response.stop_reason, message).await;
    }
    let _ = asm.done(response.stop_reason).await;
}

fn block_chars(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Thinking(t) => t.thinking.len(),
        ContentBlock::ToolCall(c) => c.arguments.to_string().len(),
        ContentBlock::Image(_) => 0,
    }
}

/// Splits text into deltas of 12/16/20 characters in turn.
fn chop(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut turn = 0;
    while start < chars.len() {
        let end = (start + CHUNK_CHARS[turn % CHUNK_CHARS.len()]).min(chars.len());
        out.push(chars[start..end].iter().collect());
        start = end;
        turn += 1;
    }
    out
}

/// Streams every block; stops early (returning) on abort or a vanished consumer.
async fn play(
    asm: &mut Assembler,
    response: &AssistantMessage,
    options: &StreamOptions,
    delay: Option<Duration>,
) -> Result<(), ConsumerGone> {
    asm.start().await?;
    for block in &response.content {
        let (index, text) = match block {
            ContentBlock::Text(t) => (asm.text_start().await?, t.text.clone()),
            ContentBlock::Thinking(t) => {
                let start = ThinkingContent {
                    thinking: String::new(),
                    ..t.clone()
                };
                (asm.thinking_start(start).await?, t.thinking.clone())
            }
            ContentBlock::ToolCall(c) => (
                asm.tool_start(&c.id, &c.name, None).await?,
                c.arguments.to_string(),
            ),
            ContentBlock::Image(_) => continue,
        };
        for piece in chop(&text) {
            if let Some(delay) = delay {
                tokio::select! {
                    _ = options.signal.cancelled() => {}
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            if options.signal.is_cancelled() {
                return Ok(());
            }
            match block {
                ContentBlock::Text(_) => asm.text_delta(index, &piece).await?,
                ContentBlock::Thinking(_) => asm.thinking_delta(index, &piece).await?,
                _ => asm.tool_delta(index, &piece).await?,
            }
        }
        asm.end_block(index).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::stream_contract::AssistantMessageEvent;
    use serde_json::json;

    fn model() -> Model {
        Model {
            id: "demo".into(),
            api: API.into(),
            provider: "scripted".into(),
            ..Model::default()
        }
    }

    async fn collect(mut stream: AssistantEventStream) -> Vec<AssistantMessageEvent> {
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        events
    }

    #[tokio::test]
    async fn streams_text_in_small_deltas_then_tool_calls() {
        let provider = ScriptedProvider::new(vec![
            scripted_text("The quick brown fox jumps over the lazy dog, twice over."),
            scripted_tool_call("c1", "read", json!({"path": "a.txt"})),
        ]);
        let request = || StreamRequest::new(model(), LlmContext::default());
        let events = collect(provider.stream(request())).await;
        let deltas = events
            .iter()
            .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
            .count();
        assert!(deltas >= 3, "{deltas} deltas");
        let Some(AssistantMessageEvent::Done { message, .. }) = events.last() else {
            panic!("{events:?}")
        };
        assert_eq!(
            message.text(),
            "The quick brown fox jumps over the lazy dog, twice over."
        );
        let events = collect(provider.stream(request())).await;
        let Some(AssistantMessageEvent::Done { reason, message }) = events.last() else {
            panic!()
        };
        assert_eq!(*reason, StopReason::ToolUse);
        assert_eq!(
            message.tool_calls().next().map(|c| c.arguments.clone()),
            Some(json!({"path": "a.txt"}))
        );
        let events = collect(provider.stream(request())).await;
        let Some(AssistantMessageEvent::Error { error, .. }) = events.last() else {
            panic!()
        };
        assert_eq!(
            error.error_message.as_deref(),
            Some("No more scripted responses queued")
        );
        assert_eq!(provider.call_count(), 3);
    }

    #[tokio::test]
    async fn abort_ends_with_aborted() {
        let provider = ScriptedProvider::new(vec![scripted_text(&"word ".repeat(50))])
            .with_delay(Duration::from_millis(5));
        let options = StreamOptions::default();
        let signal = options.signal.clone();
        let mut stream = provider.stream(StreamRequest {
            options,
            ..StreamRequest::new(model(), LlmContext::default())
        });
        let mut last = None;
        while let Some(event) = stream.next().await {
            if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
                signal.cancel();
            }
            last = Some(event);
        }
        let Some(AssistantMessageEvent::Error { reason, error }) = last else {
            panic!()
        };
        assert_eq!(reason, StopReason::Aborted);
        assert_eq!(error.error_message.as_deref(), Some(ABORTED));
    }
}
