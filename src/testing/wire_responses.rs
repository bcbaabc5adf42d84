//! The OpenAI Responses rendering of a scripted response: named SSE events
//! (`event: <type>` + `data: {"type": <type>, "sequence_number": n, …}`) from
//! `response.created` through the output items (a reasoning item with a summary and encrypted
//! content, a message, function calls) to `response.completed`.

use serde_json::{Value, json};

use super::script::{MockResponse, split_utf8};

/// Numbers the events as the API does.
struct Events {
    out: Vec<Vec<u8>>,
}

impl Events {
    fn push(&mut self, kind: &str, mut body: Value) {
        body["type"] = json!(kind);
        body["sequence_number"] = json!(self.out.len());
        self.out
            .push(format!("event: {kind}\ndata: {body}\n\n").into_bytes());
    }
}

/// The SSE events for `r`, as response `id` of `model`.
pub fn responses_chunks(r: &MockResponse, id: &str, model: &str) -> Vec<Vec<u8>> {
    let mut events = Events { out: Vec::new() };
    let shell = |status: &str| {
        json!({"id": id, "object": "response", "created_at": 0, "status": status,
               "model": model, "output": []})
    };
    events.push(
        "response.created",
        json!({"response": shell("in_progress")}),
    );
    let mut output = Vec::new();
    if let Some(thinking) = &r.thinking {
        output.push(reasoning(&mut events, r, id, thinking, output.len()));
    }
    if let Some(text) = &r.text {
        output.push(message(&mut events, r, id, text, output.len()));
    }
    for call in &r.tool_calls {
        let index = output.len();
        let item_id = format!("fc_{}", call.id);
        let mut item = json!({"id": item_id, "type": "function_call", "status": "in_progress",
                              "arguments": "", "call_id": call.id, "name": call.name});
        events.push(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        let arguments = call.argument_text();
        for piece in split_utf8(&arguments, r.chunk_size) {
            events.push(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": piece}),
            );
        }
        events.push(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
        );
        item["status"] = json!("completed");
        item["arguments"] = json!(arguments);
        events.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
        output.push(item);
    }
    if let Some(message) = &r.stream_error {
        events.push(
            "error",
            json!({"code": "server_error", "message": message, "param": null}),
        );
        return events.out;
    }
    if r.omit_done || r.omit_stop_reason {
        return events.out;
    }
    let status = r.stop_reason.as_deref().unwrap_or("completed");
    let mut response = shell(status);
    response["output"] = Value::Array(output);
    if status == "incomplete" {
        response["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    if let Some(u) = &r.usage {
        let input = u.input + u.cache_read + u.cache_write;
        let mut details = json!({"cached_tokens": u.cache_read});
        if u.cache_write > 0 {
            details["cache_write_tokens"] = json!(u.cache_write);
        }
        response["usage"] = json!({
            "input_tokens": input, "input_tokens_details": details,
            "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": input + u.output,
        });
    }
    let terminal = match status {
        "failed" => {
            response["error"] = json!({"code": "server_error", "message": "scripted failure"});
            "response.failed"
        }
        "incomplete" => "response.incomplete",
        _ => "response.completed",
    };
    events.push(terminal, json!({ "response": response }));
    events.out
}

/// A reasoning item whose summary streams as one part; its encrypted content is `signature`
/// (default `enc-<response id>`).
fn reasoning(
    events: &mut Events,
    r: &MockResponse,
    id: &str,
    summary: &str,
    index: usize,
) -> Value {
    let item_id = format!("rs_{id}");
    events.push(
        "response.output_item.added",
        json!({"output_index": index,
               "item": {"id": item_id, "type": "reasoning", "summary": []}}),
    );
    let part = |text: &str| json!({"type": "summary_text", "text": text});
    let at = json!({"item_id": item_id, "output_index": index, "summary_index": 0});
    let names = ("reasoning_summary_part", "reasoning_summary_text");
    stream_part(events, r, names, at, part, summary);
    let encrypted = r.signature.clone().unwrap_or_else(|| format!("enc-{id}"));
    let item = json!({"id": item_id, "type": "reasoning", "summary": [part(summary)],
                      "encrypted_content": encrypted});
    events.push(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    );
    item
}

fn message(events: &mut Events, r: &MockResponse, id: &str, text: &str, index: usize) -> Value {
    let item_id = format!("msg_{id}");
    let mut item = json!({"id": item_id, "type": "message", "status": "in_progress",
                          "role": "assistant", "content": []});
    events.push(
        "response.output_item.added",
        json!({"output_index": index, "item": item}),
    );
    let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
    let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
    stream_part(events, r, ("content_part", "output_text"), at, part, text);
    item["status"] = json!("completed");
    item["content"] = json!([part(text)]);
    events.push(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    );
    item
}

/// One part of an item streamed at `at` (its item, output and part index): the part added empty,
/// its text in deltas, the text done, the part done. `names` are the event names' middles: the
/// part's (`response.<part>.added`) and the text's (`response.<text>.delta`).
fn stream_part(
    events: &mut Events,
    r: &MockResponse,
    (part_name, text_name): (&str, &str),
    at: Value,
    part: impl Fn(&str) -> Value,
    text: &str,
) {
    let with = |key: &str, value: Value| {
        let mut body = at.clone();
        body[key] = value;
        body
    };
    events.push(
        &format!("response.{part_name}.added"),
        with("part", part("")),
    );
    for piece in split_utf8(text, r.chunk_size) {
        events.push(
            &format!("response.{text_name}.delta"),
            with("delta", json!(piece)),
        );
    }
    events.push(
        &format!("response.{text_name}.done"),
        with("text", json!(text)),
    );
    events.push(
        &format!("response.{part_name}.done"),
        with("part", part(text)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::script::MockToolCall;

    #[test]
    fn a_reasoning_tool_turn_ends_completed_with_every_item() {
        let response = MockResponse {
            thinking: Some("plan".into()),
            tool_calls: vec![MockToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
                raw_arguments: None,
            }],
            ..MockResponse::default()
        };
        let chunks = responses_chunks(&response, "resp_1", "gpt-5");
        let all: String = chunks
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        assert!(all.starts_with("event: response.created\n"));
        let last = String::from_utf8_lossy(chunks.last().unwrap()).into_owned();
        assert!(last.starts_with("event: response.completed\n"), "{last}");
        assert!(
            last.contains(r#""encrypted_content":"enc-resp_1""#),
            "{last}"
        );
        assert!(last.contains(r#""call_id":"call_1""#), "{last}");
    }
}
