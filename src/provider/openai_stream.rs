//! OpenAI Chat Completions chunk parsing (§A5): text, reasoning fields, tool-call deltas by
//! stream index, usage, and the exact `finish_reason` table.

use serde_json::Value;

use super::assembler::Assembler;
use super::openai_chunk::{Chunk, ToolCallDelta};
use super::sse::SseEvent;
use super::transport::{Failure, Flow, Payload, WireParser, openai_payload};
use crate::agent::message::{StopReason, ThinkingContent, Usage};
use crate::agent::model::Model;

struct ToolSlot {
    stream_index: Option<u64>,
    id: String,
    content_index: usize,
}

pub struct OpenAiParser {
    model: Model,
    supports_finish_reason: bool,
    text: Option<usize>,
    thinking: Option<usize>,
    tools: Vec<ToolSlot>,
    finish_reason: Option<String>,
    /// `reasoning.encrypted` details that arrived before their tool call, by id.
    pending_details: Vec<(String, String)>,
}

impl OpenAiParser {
    pub fn new(model: Model, supports_finish_reason: bool) -> Self {
        OpenAiParser {
            model,
            supports_finish_reason,
            text: None,
            thinking: None,
            tools: Vec::new(),
            finish_reason: None,
            pending_details: Vec::new(),
        }
    }

    async fn on_chunk(&mut self, asm: &mut Assembler, chunk: &Chunk<'_>) -> Result<(), Failure> {
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            let message = error.get("message").and_then(Value::as_str);
            let message = message.map_or_else(|| error.to_string(), str::to_string);
            return Err(Failure::error(format!("Provider error: {message}")));
        }
        asm.start().await?;
        let message = &mut asm.message;
        if message.response_id.is_none() {
            message.response_id = chunk.id.as_deref().map(str::to_string);
        }
        if let Some(model) = chunk.model.as_deref()
            && model != self.model.id
            && message.response_model.is_none()
        {
            message.response_model = Some(model.to_string());
        }
        let choice = chunk.choices.as_ref().and_then(|c| c.0.as_ref());
        let usage = chunk
            .usage
            .as_ref()
            .or_else(|| choice.and_then(|c| c.usage.as_ref()));
        if let Some(usage) = usage.filter(|u| u.is_object()) {
            asm.set_usage(map_usage(usage), &self.model);
        }
        let Some(choice) = choice else { return Ok(()) };
        if let Some(reason) = choice.finish_reason.as_deref() {
            self.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.delta.as_ref() else {
            return Ok(());
        };
        if let Some((field, text)) = delta.reasoning() {
            self.on_reasoning(asm, field, text).await?;
        }
        if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            let index = match self.text {
                Some(index) => index,
                None => *self.text.insert(asm.text_start().await?),
            };
            asm.text_delta(index, text).await?;
        }
        if let Some(details) = delta.reasoning_details.as_ref().and_then(Value::as_array) {
            self.on_reasoning_details(asm, details);
        }
        for call in delta.tool_calls.iter().flatten() {
            self.on_tool_delta(asm, call).await?;
        }
        Ok(())
    }

    /// Stores each encrypted reasoning detail (as JSON) on the tool call with its id, or keeps
    /// it until that call starts.
    fn on_reasoning_details(&mut self, asm: &mut Assembler, details: &[Value]) {
        for detail in details {
            if detail.get("type").and_then(Value::as_str) != Some("reasoning.encrypted") {
                continue;
            }
            let Some(id) = detail.get("id").and_then(Value::as_str) else {
                continue;
            };
            match self.tools.iter().find(|slot| slot.id == id) {
                Some(slot) => asm.tool_thought_signature(slot.content_index, detail.to_string()),
                None => self
                    .pending_details
                    .push((id.to_string(), detail.to_string())),
            }
        }
    }

    async fn on_reasoning(
        &mut self,
        asm: &mut Assembler,
        field: &str,
        text: &str,
    ) -> Result<(), Failure> {
        let index = match self.thinking {
            Some(index) => index,
            None => {
                let block = ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: Some(field.to_string()),
                    redacted: None,
                };
                *self.thinking.insert(asm.thinking_start(block).await?)
            }
        };
        asm.thinking_delta(index, text).await?;
        Ok(())
    }

    async fn on_tool_delta(
        &mut self,
        asm: &mut Assembler,
        call: &ToolCallDelta<'_>,
    ) -> Result<(), Failure> {
        let stream_index = call.index;
        let id = call.id.as_deref().filter(|s| !s.is_empty());
        let function = call.function.as_ref();
        let name = function.and_then(|f| f.name.as_deref());
        let fragment = function.and_then(|f| f.arguments.as_deref()).unwrap_or("");
        let found = self.tools.iter().position(|slot| match (stream_index, id) {
            (Some(i), _) if slot.stream_index.is_some() => slot.stream_index == Some(i),
            (_, Some(id)) => slot.id == id,
            _ => false,
        });
        let content_index = match found {
            Some(pos) => {
                let slot = &self.tools[pos];
                asm.tool_identity(slot.content_index, id, name);
                slot.content_index
            }
            None => {
                let content_index = asm
                    .tool_start(id.unwrap_or(""), name.unwrap_or(""), None)
                    .await?;
                self.tools.push(ToolSlot {
                    stream_index,
                    id: id.unwrap_or("").to_string(),
                    content_index,
                });
                if let Some(pos) = self
                    .pending_details
                    .iter()
                    .position(|(d, _)| Some(d.as_str()) == id)
                {
                    let (_, detail) = self.pending_details.remove(pos);
                    asm.tool_thought_signature(content_index, detail);
                }
                content_index
            }
        };
        asm.tool_delta(content_index, fragment).await?;
        Ok(())
    }
}

/// Usage per §A5: `input` excludes cached and cache-written tokens.
pub fn map_usage(usage: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64);
    let details = usage.get("prompt_tokens_details");
    let cache_read = n(details.and_then(|d| d.get("cached_tokens")))
        .or(n(usage.get("prompt_cache_hit_tokens")))
        .unwrap_or(0);
    let cache_write = n(details.and_then(|d| d.get("cache_write_tokens"))).unwrap_or(0);
    let prompt = n(usage.get("prompt_tokens")).unwrap_or(0);
    let reasoning = n(usage
        .get("completion_tokens_details")
        .and_then(|d| d.get("reasoning_tokens")));
    Usage {
        input: prompt.saturating_sub(cache_read + cache_write),
        output: n(usage.get("completion_tokens")).unwrap_or(0),
        cache_read,
        cache_write,
        reasoning,
        ..Usage::default()
    }
}

/// The `finish_reason` table: `Err` carries the error message for error reasons.
pub fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "stop" | "end" => Ok(StopReason::Stop),
        "length" => Ok(StopReason::Length),
        "tool_calls" | "function_call" => Ok(StopReason::ToolUse),
        other => Err(format!("Provider finish_reason: {other}")),
    }
}

impl WireParser for OpenAiParser {
    async fn on_event(
        &mut self,
        asm: &mut Assembler,
        event: SseEvent<'_>,
    ) -> Result<Flow, Failure> {
        let chunk: Chunk = match openai_payload(&event.data, "OpenAI stream chunk")? {
            Payload::Done => return Ok(Flow::Stop),
            Payload::Empty => return Ok(Flow::Continue),
            Payload::Json(chunk) => chunk,
        };
        self.on_chunk(asm, &chunk).await?;
        Ok(Flow::Continue)
    }

    async fn finish(self, asm: &mut Assembler) -> Result<StopReason, Failure> {
        let Some(reason) = self.finish_reason else {
            if self.supports_finish_reason {
                return Err(Failure::error("Stream ended without finish_reason"));
            }
            let inferred = if asm.has_tool_calls() {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            };
            return Ok(inferred);
        };
        asm.message.raw_stop_reason = Some(reason.clone());
        map_finish_reason(&reason).map_err(Failure::error)
    }
}
