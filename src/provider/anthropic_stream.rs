//! Anthropic Messages SSE parsing (§A4): named events routed by block index, usage from
//! `message_start`/`message_delta`, the exact stop-reason table, `message_stop` required.

use serde_json::Value;

use super::anthropic_event::{self, EventData};
use super::assembler::Assembler;
use super::sse::SseEvent;
use super::transport::{Failure, Flow, WireParser, unparsable};
use crate::agent::message::{StopReason, ThinkingContent, Usage};
use crate::agent::model::Model;

pub struct AnthropicParser {
    model: Model,
    /// (Anthropic block index, pi content index) of open blocks.
    blocks: Vec<(u64, usize)>,
    usage: Usage,
    started: bool,
    stop_reason: Option<Result<StopReason, String>>,
    stopped: bool,
}

impl AnthropicParser {
    pub fn new(model: Model) -> Self {
        AnthropicParser {
            model,
            blocks: Vec::new(),
            usage: Usage::default(),
            started: false,
            stop_reason: None,
            stopped: false,
        }
    }

    fn content_index(&self, event: &EventData) -> Option<usize> {
        let index = event.index?;
        self.blocks
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, c)| *c)
    }

    async fn dispatch(
        &mut self,
        asm: &mut Assembler,
        name: &str,
        data: &EventData<'_>,
    ) -> Result<(), Failure> {
        match name {
            "message_start" => {
                self.started = true;
                let message = data.message.as_ref();
                asm.message.response_id = message
                    .and_then(|m| m.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if let Some(usage) = message.and_then(|m| m.get("usage")) {
                    update_usage(&mut self.usage, usage);
                    asm.set_usage(self.usage.clone(), &self.model);
                }
                asm.start().await?;
            }
            "content_block_start" => self.block_start(asm, data).await?,
            "content_block_delta" => self.block_delta(asm, data).await?,
            "content_block_stop" => {
                if let Some(index) = self.content_index(data) {
                    self.blocks.retain(|(i, _)| Some(*i) != data.index);
                    asm.end_block(index).await?;
                }
            }
            "message_delta" => {
                let delta = data.delta.as_ref();
                if let Some(reason) = delta.and_then(|d| d.stop_reason.as_deref()) {
                    asm.message.raw_stop_reason = Some(reason.to_string());
                    let explanation = delta
                        .and_then(|d| d.stop_details.as_ref())
                        .and_then(|d| d.get("explanation"))
                        .and_then(Value::as_str);
                    self.stop_reason = Some(map_stop_reason(reason, explanation));
                }
                if let Some(usage) = &data.usage {
                    update_usage(&mut self.usage, usage);
                    asm.set_usage(self.usage.clone(), &self.model);
                }
            }
            "message_stop" => self.stopped = true,
            _ => {}
        }
        Ok(())
    }

    async fn block_start(
        &mut self,
        asm: &mut Assembler,
        data: &EventData<'_>,
    ) -> Result<(), Failure> {
        let Some(index) = data.index else {
            return Err(Failure::error(
                "Anthropic content_block_start without index",
            ));
        };
        let block = data.content_block.as_ref().unwrap_or(&Value::Null);
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let content_index = match block.get("type").and_then(Value::as_str) {
            Some("text") => asm.text_start().await?,
            Some("thinking") => {
                let thinking = ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: Some(String::new()),
                    redacted: None,
                };
                asm.thinking_start(thinking).await?
            }
            Some("redacted_thinking") => {
                let thinking = ThinkingContent {
                    thinking: "[Reasoning redacted]".into(),
                    thinking_signature: Some(text("data")),
                    redacted: Some(true),
                };
                asm.thinking_start(thinking).await?
            }
            Some("tool_use") => {
                let input = block
                    .get("input")
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                    .cloned();
                asm.tool_start(&text("id"), &text("name"), input).await?
            }
            _ => return Ok(()),
        };
        self.blocks.push((index, content_index));
        Ok(())
    }

    async fn block_delta(
        &mut self,
        asm: &mut Assembler,
        data: &EventData<'_>,
    ) -> Result<(), Failure> {
        let (Some(index), Some(delta)) = (self.content_index(data), data.delta.as_ref()) else {
            return Ok(());
        };
        match delta.kind.as_deref() {
            Some("text_delta") => asm.text_delta(index, or_empty(&delta.text)).await?,
            Some("thinking_delta") => asm.thinking_delta(index, or_empty(&delta.thinking)).await?,
            Some("input_json_delta") => {
                asm.tool_delta(index, or_empty(&delta.partial_json)).await?
            }
            Some("signature_delta") => asm.thinking_signature(index, or_empty(&delta.signature)),
            _ => {}
        }
        Ok(())
    }
}

fn or_empty<'a>(text: &'a Option<std::borrow::Cow<'_, str>>) -> &'a str {
    text.as_deref().unwrap_or("")
}

/// Updates only the fields present and non-null (proxies may omit input on `message_delta`).
fn update_usage(usage: &mut Usage, wire: &Value) {
    let n = |key: &str| wire.get(key).and_then(Value::as_u64);
    if let Some(v) = n("input_tokens") {
        usage.input = v;
    }
    if let Some(v) = n("output_tokens") {
        usage.output = v;
    }
    if let Some(v) = n("cache_read_input_tokens") {
        usage.cache_read = v;
    }
    if let Some(v) = n("cache_creation_input_tokens") {
        usage.cache_write = v;
    }
    if let Some(v) = wire
        .pointer("/cache_creation/ephemeral_1h_input_tokens")
        .and_then(Value::as_u64)
    {
        usage.cache_write1h = Some(v);
    }
    if let Some(v) = wire
        .pointer("/output_tokens_details/thinking_tokens")
        .and_then(Value::as_u64)
    {
        usage.reasoning = Some(v);
    }
}

/// The stop-reason table: `Err` carries the error message.
pub fn map_stop_reason(reason: &str, explanation: Option<&str>) -> Result<StopReason, String> {
    match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        "refusal" => Err(explanation
            .unwrap_or("The model refused to complete the request")
            .to_string()),
        "sensitive" => Err(explanation
            .unwrap_or("Provider stop_reason: sensitive")
            .to_string()),
        other => Err(format!("Unhandled stop reason: {other}")),
    }
}

impl WireParser for AnthropicParser {
    async fn on_event(
        &mut self,
        asm: &mut Assembler,
        event: SseEvent<'_>,
    ) -> Result<Flow, Failure> {
        let name = &*event.event;
        if name == "error" {
            let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
            let message = data
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or(&event.data);
            let kind = data
                .pointer("/error/type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            // Overload before anything streamed is worth a retry; later it is final.
            let retryable = kind == "overloaded_error" && !asm.started();
            return Err(Failure::Error {
                message: format!("{kind}: {message}"),
                retryable,
            });
        }
        const KNOWN: [&str; 6] = [
            "message_start",
            "message_delta",
            "message_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
        ];
        if !KNOWN.contains(&name) {
            return Ok(Flow::Continue);
        }
        let data = anthropic_event::parse(&event.data)
            .map_err(|e| unparsable(&format!("Anthropic SSE event {name}"), &e, &event.data))?;
        self.dispatch(asm, name, &data).await?;
        Ok(if self.stopped {
            Flow::Stop
        } else {
            Flow::Continue
        })
    }

    async fn finish(self, _asm: &mut Assembler) -> Result<StopReason, Failure> {
        if !self.stopped {
            let message = if self.started {
                "Anthropic stream ended before message_stop"
            } else {
                "Anthropic stream ended without any event"
            };
            return Err(Failure::error(message));
        }
        match self.stop_reason {
            Some(result) => result.map_err(Failure::error),
            None => Ok(StopReason::Stop),
        }
    }
}
