//! Renders a scripted response as the SSE chunks of each wire API.
//!
//! A "chunk" is one complete SSE event (ending in a blank line). Fault injection that works on
//! chunk counts (`disconnectAfterChunks`, `malformedAfterChunks`) counts these.

use serde_json::{Value, json};

use super::script::{MockResponse, MockToolCall, split_utf8};
use super::wire_responses::responses_chunks;

/// Which wire API a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireApi {
    OpenAi,
    /// OpenAI Responses (`POST /v1/responses`).
    OpenAiResponses,
    Anthropic,
}

/// The SSE chunks for `response`, answering a request for `requested_model`.
#[cfg(test)]
pub fn render(
    api: WireApi,
    response: &MockResponse,
    id: &str,
    requested_model: &str,
) -> Vec<Vec<u8>> {
    render_stream(api, response, id, requested_model).collect()
}

/// The same chunks, rendered as they are consumed: the mock streams while it renders, as a
/// real server streams while it generates, instead of making the client wait for the whole
/// response to be rendered first (which would hide the client's cost behind the mock's in
/// the benchmarks, BENCH.md). OpenAI text and thinking are lazy; the rest is small.
pub fn render_stream<'a>(
    api: WireApi,
    response: &'a MockResponse,
    id: &'a str,
    requested_model: &'a str,
) -> Box<dyn Iterator<Item = Vec<u8>> + Send + 'a> {
    let model = response.model.as_deref().unwrap_or(requested_model);
    match api {
        WireApi::OpenAi => Box::new(openai_chunks(response, id, model)),
        WireApi::OpenAiResponses => Box::new(responses_chunks(response, id, model).into_iter()),
        WireApi::Anthropic => Box::new(anthropic_chunks(response, id, model).into_iter()),
    }
}

/// A deliberately broken SSE chunk for `malformedAfterChunks`.
pub fn malformed_chunk(api: WireApi) -> Vec<u8> {
    match api {
        WireApi::OpenAi => b"data: {\"id\": \"broken\", \"choices\": [\n\n".to_vec(),
        WireApi::OpenAiResponses => {
            b"event: response.output_text.delta\ndata: {\"type\": broken\n\n".to_vec()
        }
        WireApi::Anthropic => {
            b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", broken\n\n"
                .to_vec()
        }
    }
}

fn data_chunk(value: &Value) -> Vec<u8> {
    format!("data: {value}\n\n").into_bytes()
}

fn event_chunk(name: &str, value: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {value}\n\n").into_bytes()
}

fn openai_chunks<'a>(
    r: &'a MockResponse,
    id: &'a str,
    model: &'a str,
) -> impl Iterator<Item = Vec<u8>> + Send + 'a {
    let chunk = move |delta: Value, finish: Value| {
        data_chunk(&json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        }))
    };
    let field = r.reasoning_field.as_deref().unwrap_or("reasoning_content");
    let thinking = split_utf8(r.thinking.as_deref().unwrap_or(""), r.chunk_size)
        .into_iter()
        .map(move |piece| json!({ field: piece }));
    let text = split_utf8(r.text.as_deref().unwrap_or(""), r.chunk_size)
        .into_iter()
        .map(|piece| json!({"content": piece}));
    let tools = openai_tool_deltas(r).map(|delta| json!({"tool_calls": [delta]}));
    std::iter::once(json!({"role": "assistant"}))
        .chain(thinking)
        .chain(text)
        .chain(reasoning_details(r))
        .chain(tools)
        .map(move |delta| chunk(delta, Value::Null))
        .chain(openai_tail(r, id, model))
}

/// Encrypted reasoning for the tool calls (`encryptedReasoning`), before their deltas.
fn reasoning_details(r: &MockResponse) -> Option<Value> {
    (r.encrypted_reasoning && !r.tool_calls.is_empty()).then(|| {
        let details: Vec<Value> = r
            .tool_calls
            .iter()
            .map(|c| json!({"type": "reasoning.encrypted", "id": c.id, "data": format!("enc-{}", c.id)}))
            .collect();
        json!({"reasoning_details": details})
    })
}

/// The finish chunk, the usage chunk and `[DONE]`, as scripted.
fn openai_tail(r: &MockResponse, id: &str, model: &str) -> Vec<Vec<u8>> {
    let chunk = |delta: Value, finish: Value| {
        data_chunk(&json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        }))
    };
    let mut out = Vec::new();
    if !r.omit_stop_reason {
        let reason = r.stop_reason_or("stop", "tool_calls");
        out.push(chunk(json!({}), json!(reason)));
    }
    if let Some(u) = &r.usage {
        let mut usage = json!({
            "prompt_tokens": u.input + u.cache_read + u.cache_write,
            "completion_tokens": u.output,
            "total_tokens": u.input + u.cache_read + u.cache_write + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning},
        });
        if u.cache_write > 0 {
            usage["prompt_tokens_details"]["cache_write_tokens"] = json!(u.cache_write);
        }
        out.push(data_chunk(&json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [], "usage": usage
        })));
    }
    if !r.omit_done {
        out.push(b"data: [DONE]\n\n".to_vec());
    }
    out
}

/// The `tool_calls` delta entries, in order or round-robin when `interleave` is set. In order
/// they are rendered as consumed, like text (a 400 KB argument is 50,000 deltas: rendering them
/// all before the first byte would put that work into the floor of scenario 3).
fn openai_tool_deltas<'a>(r: &'a MockResponse) -> Box<dyn Iterator<Item = Value> + Send + 'a> {
    if !r.interleave {
        return Box::new(
            r.tool_calls
                .iter()
                .enumerate()
                .flat_map(|(index, call)| openai_call_deltas(index, call, r.chunk_size)),
        );
    }
    let per_call: Vec<Vec<Value>> = r
        .tool_calls
        .iter()
        .enumerate()
        .map(|(index, call)| openai_call_deltas(index, call, r.chunk_size).collect())
        .collect();
    let rounds = per_call.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for round in 0..rounds {
        for deltas in &per_call {
            if let Some(delta) = deltas.get(round) {
                out.push(delta.clone());
            }
        }
    }
    Box::new(out.into_iter())
}

fn openai_call_deltas(
    index: usize,
    call: &MockToolCall,
    size: Option<usize>,
) -> impl Iterator<Item = Value> + Send + use<> {
    let first = json!({
        "index": index, "id": call.id, "type": "function",
        "function": {"name": call.name, "arguments": ""}
    });
    let text = call.argument_text();
    let bounds: Vec<(usize, usize)> = split_utf8(&text, size)
        .iter()
        .map(|piece| {
            let start = piece.as_ptr() as usize - text.as_ptr() as usize;
            (start, start + piece.len())
        })
        .collect();
    std::iter::once(first).chain(bounds.into_iter().map(
        move |(start, end)| json!({"index": index, "function": {"arguments": &text[start..end]}}),
    ))
}

fn anthropic_error(message: &str) -> Vec<u8> {
    let error = json!({"type": "error", "error": {"type": "overloaded_error", "message": message}});
    event_chunk("error", &error)
}

fn anthropic_chunks(r: &MockResponse, id: &str, model: &str) -> Vec<Vec<u8>> {
    let empty = r.text.is_none()
        && r.thinking.is_none()
        && r.redacted_thinking.is_none()
        && r.tool_calls.is_empty();
    if let (Some(message), true) = (&r.stream_error, empty) {
        // As the API does when overloaded: the error is the first and only event.
        return vec![anthropic_error(message)];
    }
    let usage = r.usage.clone().unwrap_or_default();
    let mut out = vec![event_chunk(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input, "output_tokens": 1,
                "cache_read_input_tokens": usage.cache_read,
                "cache_creation_input_tokens": usage.cache_write
            }
        }}),
    )];
    out.push(event_chunk("ping", &json!({"type": "ping"})));
    let mut index = 0;
    if let Some(thinking) = &r.thinking {
        let signature = r.signature.as_deref().unwrap_or("sig-mock");
        let deltas = split_utf8(thinking, r.chunk_size)
            .into_iter()
            .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
            .chain(std::iter::once(
                json!({"type": "signature_delta", "signature": signature}),
            ));
        let start = json!({"type": "thinking", "thinking": "", "signature": ""});
        anthropic_block(&mut out, index, start, deltas);
        index += 1;
    }
    if let Some(data) = &r.redacted_thinking {
        let start = json!({"type": "redacted_thinking", "data": data});
        anthropic_block(&mut out, index, start, std::iter::empty());
        index += 1;
    }
    if let Some(text) = &r.text {
        let deltas = split_utf8(text, r.chunk_size)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}));
        anthropic_block(&mut out, index, json!({"type": "text", "text": ""}), deltas);
        index += 1;
    }
    for call in &r.tool_calls {
        let text = call.argument_text();
        let deltas = split_utf8(&text, r.chunk_size)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}));
        let start = json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
        anthropic_block(&mut out, index, start, deltas);
        index += 1;
    }
    if let Some(message) = &r.stream_error {
        let error =
            json!({"type": "error", "error": {"type": "overloaded_error", "message": message}});
        out.push(event_chunk("error", &error));
        return out;
    }
    if !r.omit_stop_reason {
        let reason = r.stop_reason_or("end_turn", "tool_use");
        let mut delta_usage = json!({"output_tokens": usage.output});
        if usage.reasoning > 0 {
            delta_usage["output_tokens_details"] = json!({"thinking_tokens": usage.reasoning});
        }
        out.push(event_chunk(
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": null},
                    "usage": delta_usage}),
        ));
    }
    if !r.omit_done {
        out.push(event_chunk(
            "message_stop",
            &json!({"type": "message_stop"}),
        ));
    }
    out
}

fn anthropic_block(
    out: &mut Vec<Vec<u8>>,
    index: usize,
    start: Value,
    deltas: impl Iterator<Item = Value>,
) {
    out.push(event_chunk(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    ));
    for delta in deltas {
        out.push(event_chunk(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }
    out.push(event_chunk(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::script::MockToolCall;

    fn text_of(chunks: &[Vec<u8>]) -> String {
        chunks
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect()
    }

    #[test]
    fn openai_text_ends_with_finish_and_done() {
        let chunks = render(WireApi::OpenAi, &MockResponse::text("hi"), "m-1", "gpt");
        let all = text_of(&chunks);
        assert!(all.contains(r#""content":"hi""#));
        assert!(all.contains(r#""finish_reason":"stop""#));
        assert!(all.ends_with("data: [DONE]\n\n"));
    }

    #[test]
    fn openai_interleaves_tool_calls() {
        let call = |id: &str| MockToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({"path": "abcdef"}),
            raw_arguments: None,
        };
        let response = MockResponse {
            tool_calls: vec![call("a"), call("b")],
            interleave: true,
            chunk_size: Some(4),
            ..MockResponse::default()
        };
        let chunks = render(WireApi::OpenAi, &response, "m", "gpt");
        let all = text_of(&chunks);
        let first_b = all.find(r#""id":"b""#).unwrap();
        let second_a_args = all.find(r#""index":0,"function":{"arguments""#).unwrap();
        assert!(
            first_b < second_a_args,
            "call b starts before call a's arguments"
        );
        assert!(all.contains(r#""finish_reason":"tool_calls""#));
    }

    #[test]
    fn anthropic_omits_terminal_on_request() {
        let response = MockResponse {
            omit_done: true,
            ..MockResponse::text("x")
        };
        let all = text_of(&render(WireApi::Anthropic, &response, "m", "claude"));
        assert!(all.contains("event: message_delta"));
        assert!(!all.contains("message_stop"));
    }
}
