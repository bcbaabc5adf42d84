//! Anthropic Messages SSE parsing (§A4): named events routed by block index, usage from
//! `message_start`/`message_delta`, the exact stop-reason table, `message_stop` required.

use eventsource_stream::Event;
use serde_json::Value;

use super::Model;
use super::assembler::Assembler;
use super::transport::{Failure, Flow, WireParser};
use crate::agent::message::{StopReason, ThinkingContent, Usage};

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

    fn content_index(&self, event: &Value) -> Option<usize> {
        let index = event.get("index").and_then(Value::as_u64)?;
        self.blocks
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, c)| *c)
    }

    async fn dispatch(
        &mut self,
        asm: &mut Assembler,
        name: &str,
        data: &Value,
    ) -> Result<(), Failure> {
        match name {
            "message_start" => {
                self.started = true;
                let message = data.get("message");
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
                    let anthropic_index = data.get("index").and_then(Value::as_u64);
                    self.blocks.retain(|(i, _)| Some(*i) != anthropic_index);
                    asm.end_block(index).await?;
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    asm.message.raw_stop_reason = Some(reason.to_string());
                    let explanation = data
                        .pointer("/delta/stop_details/explanation")
                        .and_then(Value::as_str);
                    self.stop_reason = Some(map_stop_reason(reason, explanation));
                }
                if let Some(usage) = data.get("usage") {
                    update_usage(&mut self.usage, usage);
                    asm.set_usage(self.usage.clone(), &self.model);
                }
            }
            "message_stop" => self.stopped = true,
            _ => {}
        }
        Ok(())
    }

    async fn block_start(&mut self, asm: &mut Assembler, data: &Value) -> Result<(), Failure> {
        let Some(index) = data.get("index").and_then(Value::as_u64) else {
            return Err(Failure::error(
                "Anthropic content_block_start without index",
            ));
        };
        let block = data.get("content_block").cloned().unwrap_or(Value::Null);
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

    async fn block_delta(&mut self, asm: &mut Assembler, data: &Value) -> Result<(), Failure> {
        let Some(index) = self.content_index(data) else {
            return Ok(());
        };
        let delta = data.get("delta").cloned().unwrap_or(Value::Null);
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => asm.text_delta(index, field("text")).await?,
            Some("thinking_delta") => asm.thinking_delta(index, field("thinking")).await?,
            Some("input_json_delta") => asm.tool_delta(index, field("partial_json")).await?,
            Some("signature_delta") => asm.thinking_signature(index, field("signature")),
            _ => {}
        }
        Ok(())
    }
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
    async fn on_event(&mut self, asm: &mut Assembler, event: Event) -> Result<Flow, Failure> {
        let name = event.event.as_str();
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
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            let shown: String = event.data.chars().take(200).collect();
            Failure::error(format!(
                "Could not parse Anthropic SSE event {name}: {e}; data={shown}"
            ))
        })?;
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
