//! OpenAI Responses stream parsing (pi's `processResponsesStream`): output items by
//! `output_index` become thinking (reasoning summaries), text and tool-call blocks; the finished
//! reasoning item is kept whole as the thinking block's signature, for replay; the terminal
//! `response.completed` / `response.incomplete` carries usage and status.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::assembler::Assembler;
use super::sse::SseEvent;
use super::transport::{Failure, Flow, Payload, WireParser, openai_payload};
use crate::agent::message::{ContentBlock, StopReason, ThinkingContent, Usage};
use crate::agent::model::Model;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Thinking,
    Text,
    Tool,
}

/// An output item being streamed.
struct Slot {
    kind: Kind,
    index: usize,
    /// Tool calls: the argument text sent so far.
    arguments: String,
}

pub struct ResponsesParser {
    model: Model,
    slots: HashMap<u64, Slot>,
    /// Content indexes of tool calls whose `output_item.done` has not arrived.
    unfinished: Vec<usize>,
    /// Reasoning item id → its thinking block, for the terminal event's backfill.
    reasoning: Vec<(String, usize)>,
    /// Set by the terminal event: the stop reason, or why the response is an error.
    outcome: Option<Result<StopReason, String>>,
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

impl ResponsesParser {
    pub fn new(model: Model) -> Self {
        ResponsesParser {
            model,
            slots: HashMap::new(),
            unfinished: Vec::new(),
            reasoning: Vec::new(),
            outcome: None,
        }
    }

    fn slot(&self, event: &Value, kind: Kind) -> Option<usize> {
        let output = event.get("output_index").and_then(Value::as_u64)?;
        let slot = self.slots.get(&output).filter(|s| s.kind == kind)?;
        Some(slot.index)
    }

    async fn on_value(&mut self, asm: &mut Assembler, event: &Value) -> Result<(), Failure> {
        asm.start().await?;
        let delta = text(event, "delta").unwrap_or_default();
        match text(event, "type").unwrap_or_default() {
            "response.created" => {
                let id = event.get("response").and_then(|r| text(r, "id"));
                asm.message.response_id = id.map(str::to_string);
            }
            "response.output_item.added" => {
                if let Some(item) = event.get("item") {
                    self.open(asm, event, item).await?;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(index) = self.slot(event, Kind::Thinking) {
                    asm.thinking_delta(index, delta).await?;
                }
            }
            "response.reasoning_summary_part.done" => {
                if let Some(index) = self.slot(event, Kind::Thinking) {
                    asm.thinking_delta(index, "\n\n").await?;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(index) = self.slot(event, Kind::Text) {
                    asm.text_delta(index, delta).await?;
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(slot) = self.tool_slot(event) {
                    slot.arguments.push_str(delta);
                    let index = slot.index;
                    asm.tool_delta(index, delta).await?;
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(full) = text(event, "arguments") {
                    self.replace_arguments(asm, event, full).await?;
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.get("item") {
                    self.close(asm, event, item).await?;
                }
            }
            "response.completed" | "response.incomplete" => {
                if let Some(response) = event.get("response") {
                    self.finalize(asm, response);
                }
            }
            "error" => {
                let code = code_of(event);
                let message = text(event, "message").unwrap_or("Unknown error");
                return Err(Failure::error(format!("Error Code {code}: {message}")));
            }
            "response.failed" => return Err(Failure::error(failed_message(asm, event))),
            _ => {}
        }
        Ok(())
    }

    fn tool_slot(&mut self, event: &Value) -> Option<&mut Slot> {
        let output = event.get("output_index").and_then(Value::as_u64)?;
        self.slots.get_mut(&output).filter(|s| s.kind == Kind::Tool)
    }

    /// pi's `replace`: the complete argument text; the missing tail is sent as a delta when it
    /// continues what was sent, else the arguments start over (no delta).
    async fn replace_arguments(
        &mut self,
        asm: &mut Assembler,
        event: &Value,
        full: &str,
    ) -> Result<(), Failure> {
        let Some(slot) = self.tool_slot(event) else {
            return Ok(());
        };
        let index = slot.index;
        match full.strip_prefix(slot.arguments.as_str()) {
            Some("") => {}
            Some(tail) => {
                let tail = tail.to_string();
                slot.arguments = full.to_string();
                asm.tool_delta(index, &tail).await?;
            }
            None => {
                slot.arguments = full.to_string();
                asm.tool_reset_arguments(index, full);
            }
        }
        Ok(())
    }

    /// `response.output_item.added` (or a `done` for an item never announced).
    async fn open(
        &mut self,
        asm: &mut Assembler,
        event: &Value,
        item: &Value,
    ) -> Result<Option<usize>, Failure> {
        let Some(output) = event.get("output_index").and_then(Value::as_u64) else {
            return Ok(None);
        };
        let (kind, index) = match text(item, "type") {
            Some("reasoning") => {
                let block = ThinkingContent::default();
                (Kind::Thinking, asm.thinking_start(block).await?)
            }
            Some("message") => (Kind::Text, asm.text_start().await?),
            Some("function_call") => {
                let call_id = text(item, "call_id").unwrap_or_default();
                let item_id = text(item, "id").unwrap_or_default();
                let name = text(item, "name").unwrap_or_default();
                let index = asm
                    .tool_start(&format!("{call_id}|{item_id}"), name, None)
                    .await?;
                if let Some(ContentBlock::ToolCall(call)) = asm.message.content.get_mut(index) {
                    call.namespace = text(item, "namespace").map(str::to_string);
                }
                self.unfinished.push(index);
                (Kind::Tool, index)
            }
            _ => return Ok(None),
        };
        let arguments = String::new();
        self.slots.insert(
            output,
            Slot {
                kind,
                index,
                arguments,
            },
        );
        if let Some(initial) =
            text(item, "arguments").filter(|a| !a.is_empty() && kind == Kind::Tool)
        {
            self.replace_arguments(asm, event, initial).await?;
        }
        Ok(Some(index))
    }

    /// `response.output_item.done`: the item's final form replaces what streamed.
    async fn close(
        &mut self,
        asm: &mut Assembler,
        event: &Value,
        item: &Value,
    ) -> Result<(), Failure> {
        let Some(output) = event.get("output_index").and_then(Value::as_u64) else {
            return Ok(());
        };
        if !self.slots.contains_key(&output) && self.open(asm, event, item).await?.is_none() {
            return Ok(());
        }
        let Some(slot) = self.slots.get(&output) else {
            return Ok(());
        };
        let (kind, index) = (slot.kind, slot.index);
        match (kind, text(item, "type")) {
            (Kind::Thinking, Some("reasoning")) => {
                let joined = |key: &str| join_texts(item.get(key), "\n\n");
                let (summary, content) = (joined("summary"), joined("content"));
                if let Some(ContentBlock::Thinking(t)) = asm.message.content.get_mut(index) {
                    if !summary.is_empty() {
                        t.thinking = summary;
                    } else if !content.is_empty() {
                        t.thinking = content;
                    }
                    t.thinking_signature = Some(item.to_string());
                }
                if let Some(id) = text(item, "id") {
                    self.reasoning.push((id.to_string(), index));
                }
            }
            (Kind::Text, Some("message")) => {
                let parts = item.get("content").and_then(Value::as_array);
                let final_text: String = parts
                    .into_iter()
                    .flatten()
                    .filter_map(|p| match text(p, "type") {
                        Some("output_text") => text(p, "text"),
                        _ => text(p, "refusal"),
                    })
                    .collect();
                let mut signature = json!({"v": 1, "id": text(item, "id").unwrap_or_default()});
                if let Some(phase) = text(item, "phase") {
                    signature["phase"] = json!(phase);
                }
                if let Some(ContentBlock::Text(t)) = asm.message.content.get_mut(index) {
                    t.text = final_text;
                    t.text_signature = Some(signature.to_string());
                }
            }
            (Kind::Tool, Some("function_call")) => {
                if let Some(full) = text(item, "arguments").filter(|a| !a.is_empty()) {
                    self.replace_arguments(asm, event, full).await?;
                }
                if let (Some(ns), Some(ContentBlock::ToolCall(call))) =
                    (text(item, "namespace"), asm.message.content.get_mut(index))
                {
                    call.namespace = Some(ns.to_string());
                }
                self.unfinished.retain(|i| *i != index);
            }
            _ => return Ok(()),
        }
        self.slots.remove(&output);
        asm.end_block(index).await?;
        Ok(())
    }

    /// The terminal response: encrypted reasoning only sent here (Azure) is backfilled, then
    /// id, usage with cost, and the stop reason from `status`.
    fn finalize(&mut self, asm: &mut Assembler, response: &Value) {
        let items = response.get("output").and_then(Value::as_array);
        for item in items.into_iter().flatten() {
            let encrypted = item.get("encrypted_content").filter(|e| !e.is_null());
            let (Some(id), Some(encrypted)) = (text(item, "id"), encrypted) else {
                continue;
            };
            let Some((_, index)) = self.reasoning.iter().find(|(r, _)| r == id) else {
                continue;
            };
            if let Some(ContentBlock::Thinking(t)) = asm.message.content.get_mut(*index) {
                backfill(t, encrypted);
            }
        }
        if let Some(id) = text(response, "id") {
            asm.message.response_id = Some(id.to_string());
        }
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            asm.set_usage(map_usage(usage), &self.model);
        }
        let status = text(response, "status");
        let reason = response
            .get("incomplete_details")
            .and_then(|d| text(d, "reason"));
        asm.message.raw_stop_reason = match (status, reason) {
            (Some(s), Some(r)) => Some(format!("{s}.{r}")),
            (s, _) => s.map(str::to_string),
        };
        self.outcome = Some(map_status(status, reason));
    }
}

/// An error's `code` as text (strings unquoted), `unknown` when absent.
fn code_of(error: &Value) -> String {
    match error.get("code") {
        None | Some(Value::Null) => "unknown".into(),
        Some(Value::String(code)) => code.clone(),
        Some(other) => other.to_string(),
    }
}

/// The `text` of each part of an array, joined.
fn join_texts(parts: Option<&Value>, separator: &str) -> String {
    let texts: Vec<&str> = parts
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| text(p, "text"))
        .collect();
    texts.join(separator)
}

/// Adds `encrypted_content` to a stored reasoning item that lacks it.
fn backfill(thinking: &mut ThinkingContent, encrypted: &Value) {
    let stored = thinking.thinking_signature.as_deref();
    let Some(Value::Object(mut item)) = stored.and_then(|s| serde_json::from_str(s).ok()) else {
        return;
    };
    if item.get("encrypted_content").is_some_and(|e| !e.is_null()) {
        return;
    }
    item.insert("encrypted_content".into(), encrypted.clone());
    thinking.thinking_signature = Some(Value::Object(item).to_string());
}

/// `response.failed`: the error's code and message, else the incomplete reason.
fn failed_message(asm: &mut Assembler, event: &Value) -> String {
    let response = event.get("response");
    asm.message.raw_stop_reason = response.and_then(|r| text(r, "status")).map(str::to_string);
    let error = response
        .and_then(|r| r.get("error"))
        .filter(|e| e.is_object());
    let reason = response
        .and_then(|r| r.get("incomplete_details"))
        .and_then(|d| text(d, "reason"));
    match (error, reason) {
        (Some(error), _) => {
            let code = code_of(error);
            let message = text(error, "message").unwrap_or("no message");
            format!("{code}: {message}")
        }
        (None, Some(reason)) => format!("incomplete: {reason}"),
        (None, None) => "Unknown error (no error details in response)".into(),
    }
}

/// Usage: OpenAI counts cached and cache-written tokens in `input_tokens`; pi's `input` does not.
pub fn map_usage(usage: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let details = usage.get("input_tokens_details");
    let cache_read = n(details.and_then(|d| d.get("cached_tokens")));
    let cache_write = n(details.and_then(|d| d.get("cache_write_tokens")));
    let reasoning = usage
        .get("output_tokens_details")
        .and_then(|d| d.get("reasoning_tokens"));
    Usage {
        input: n(usage.get("input_tokens")).saturating_sub(cache_read + cache_write),
        output: n(usage.get("output_tokens")),
        cache_read,
        cache_write,
        reasoning: Some(n(reasoning)),
        ..Usage::default()
    }
}

/// pi's `mapStopReason`: `Err` carries the error message of an error status.
pub fn map_status(status: Option<&str>, incomplete: Option<&str>) -> Result<StopReason, String> {
    match (status, incomplete) {
        (None | Some("completed" | "in_progress" | "queued"), _) => Ok(StopReason::Stop),
        (Some("incomplete"), Some("max_output_tokens")) => Ok(StopReason::Length),
        (Some("incomplete"), Some(reason)) => Err(format!("Response incomplete: {reason}")),
        (Some("incomplete"), None) => Err("Response incomplete without a provider reason".into()),
        (Some("failed" | "cancelled"), _) => Err("An unknown error occurred".into()),
        (Some(other), _) => Err(format!("Unhandled stop reason: {other}")),
    }
}

impl WireParser for ResponsesParser {
    async fn on_event(
        &mut self,
        asm: &mut Assembler,
        event: SseEvent<'_>,
    ) -> Result<Flow, Failure> {
        let value: Value = match openai_payload(&event.data, "OpenAI Responses event")? {
            Payload::Done => return Ok(Flow::Stop),
            Payload::Empty => return Ok(Flow::Continue),
            Payload::Json(value) => value,
        };
        self.on_value(asm, &value).await?;
        Ok(Flow::Continue)
    }

    async fn finish(self, asm: &mut Assembler) -> Result<StopReason, Failure> {
        let Some(outcome) = self.outcome else {
            let message = "OpenAI Responses stream ended before a terminal response event";
            return Err(Failure::error(message));
        };
        let reason = match outcome.map_err(Failure::error)? {
            StopReason::Stop if asm.has_tool_calls() => StopReason::ToolUse,
            other => other,
        };
        if reason == StopReason::ToolUse
            && let Some(index) = self.unfinished.first()
            && let Some(ContentBlock::ToolCall(call)) = asm.message.content.get(*index)
        {
            // The agent runs every call of the final message: never one whose arguments may
            // be cut off.
            return Err(Failure::error(format!(
                "OpenAI Responses stream completed with an unfinished tool call: {} ({})",
                call.name, call.id
            )));
        }
        Ok(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::stream_contract::event_channel;
    use std::borrow::Cow;

    /// Feeds `events` (JSON texts) to a parser; the finished message or the failure's text.
    fn parse(events: &[Value]) -> Result<(StopReason, Value), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (sink, _stream) = event_channel();
            let model = Model::default();
            let mut asm = Assembler::new(sink, &model);
            let mut parser = ResponsesParser::new(model);
            let fail = |f: Failure| match f {
                Failure::Error { message, .. } => message,
                Failure::Gone => "gone".into(),
            };
            for event in events {
                let data = event.to_string();
                let sse = SseEvent {
                    event: Cow::Borrowed("message"),
                    data: Cow::Owned(data),
                };
                parser.on_event(&mut asm, sse).await.map_err(fail)?;
            }
            let reason = parser.finish(&mut asm).await.map_err(fail)?;
            asm.end_all().await.map_err(|_| "gone".to_string())?;
            Ok((reason, serde_json::to_value(&asm.message.content).unwrap()))
        })
    }

    fn call_added() -> Value {
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "read",
                        "arguments": ""}})
    }

    fn completed() -> Value {
        json!({"type": "response.completed", "response": {"status": "completed"}})
    }

    #[test]
    fn complete_arguments_that_do_not_continue_the_deltas_replace_them() {
        let delta = json!({"type": "response.function_call_arguments.delta", "output_index": 0,
                           "delta": "{\"x"});
        let done = json!({"type": "response.output_item.done", "output_index": 0,
                          "item": {"type": "function_call", "id": "fc_1", "call_id": "c",
                                   "name": "read", "arguments": "{\"path\":\"b\"}"}});
        let (reason, content) = parse(&[call_added(), delta.clone(), done, completed()]).unwrap();
        assert_eq!(reason, StopReason::ToolUse);
        assert_eq!(content[0]["arguments"], json!({"path": "b"}));
        assert_eq!(content[0]["id"], "c|fc_1");
        // Without its output_item.done the call is never handed to the agent.
        let error = parse(&[call_added(), delta, completed()]).unwrap_err();
        assert_eq!(
            error,
            "OpenAI Responses stream completed with an unfinished tool call: read (c|fc_1)"
        );
    }

    #[test]
    fn status_table_matches_pi() {
        assert_eq!(map_status(Some("completed"), None), Ok(StopReason::Stop));
        assert_eq!(
            map_status(Some("incomplete"), Some("max_output_tokens")),
            Ok(StopReason::Length)
        );
        assert_eq!(
            map_status(Some("incomplete"), Some("content_filter")),
            Err("Response incomplete: content_filter".into())
        );
        assert!(map_status(Some("failed"), None).is_err());
        assert_eq!(map_status(None, None), Ok(StopReason::Stop));
    }

    #[test]
    fn usage_subtracts_cached_input() {
        let usage = map_usage(&json!({"input_tokens": 100, "output_tokens": 20,
            "input_tokens_details": {"cached_tokens": 60},
            "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 120}));
        assert_eq!((usage.input, usage.cache_read, usage.output), (40, 60, 20));
        assert_eq!(usage.reasoning, Some(12));
    }

    #[test]
    fn backfill_adds_missing_encrypted_content_only() {
        let mut t = ThinkingContent {
            thinking_signature: Some(r#"{"type":"reasoning","id":"rs_1","summary":[]}"#.into()),
            ..ThinkingContent::default()
        };
        backfill(&mut t, &json!("enc"));
        let stored: Value = serde_json::from_str(t.thinking_signature.as_deref().unwrap()).unwrap();
        assert_eq!(stored["encrypted_content"], "enc");
        backfill(&mut t, &json!("other"));
        let stored: Value = serde_json::from_str(t.thinking_signature.as_deref().unwrap()).unwrap();
        assert_eq!(
            stored["encrypted_content"], "enc",
            "an existing one is kept"
        );
    }
}
