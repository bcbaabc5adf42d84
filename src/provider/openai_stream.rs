//! OpenAI Chat Completions chunk parsing (§A5): text, reasoning fields, tool-call deltas by
//! stream index, usage, and the exact `finish_reason` table.

use eventsource_stream::Event;
use serde_json::Value;

use super::Model;
use super::assembler::Assembler;
use super::transport::{Failure, Flow, WireParser};
use crate::agent::message::{StopReason, ThinkingContent, Usage};

/// Delta fields that carry reasoning, in priority order (only the first non-empty one counts).
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

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
        }
    }

    async fn on_chunk(&mut self, asm: &mut Assembler, chunk: &Value) -> Result<(), Failure> {
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string);
            let message = message.unwrap_or_else(|| error.to_string());
            return Err(Failure::error(format!("Provider error: {message}")));
        }
        asm.start().await?;
        let message = &mut asm.message;
        if message.response_id.is_none() {
            message.response_id = chunk.get("id").and_then(Value::as_str).map(str::to_string);
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str)
            && model != self.model.id
            && message.response_model.is_none()
        {
            message.response_model = Some(model.to_string());
        }
        let choice = chunk.get("choices").and_then(|c| c.get(0));
        let usage = chunk
            .get("usage")
            .or_else(|| choice.and_then(|c| c.get("usage")));
        if let Some(usage) = usage.filter(|u| u.is_object()) {
            asm.set_usage(map_usage(usage), &self.model);
        }
        let Some(choice) = choice else { return Ok(()) };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        self.on_reasoning(asm, delta).await?;
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            let index = match self.text {
                Some(index) => index,
                None => *self.text.insert(asm.text_start().await?),
            };
            asm.text_delta(index, text).await?;
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.on_tool_delta(asm, call).await?;
        }
        Ok(())
    }

    async fn on_reasoning(&mut self, asm: &mut Assembler, delta: &Value) -> Result<(), Failure> {
        let found = REASONING_FIELDS.iter().find_map(|field| {
            let text = delta.get(*field)?.as_str().filter(|t| !t.is_empty())?;
            Some((*field, text))
        });
        let Some((field, text)) = found else {
            return Ok(());
        };
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

    async fn on_tool_delta(&mut self, asm: &mut Assembler, call: &Value) -> Result<(), Failure> {
        let stream_index = call.get("index").and_then(Value::as_u64);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = call.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        let fragment = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
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
    async fn on_event(&mut self, asm: &mut Assembler, event: Event) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Stop);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            let shown: String = data.chars().take(200).collect();
            Failure::error(format!(
                "Could not parse OpenAI stream chunk: {e}; data={shown}"
            ))
        })?;
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
