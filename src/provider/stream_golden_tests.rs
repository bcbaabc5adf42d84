//! Golden event streams (`snapshots/stream_*.snap`): a recorded SSE body per case
//! (`tests/fixtures/sse/`), served once over loopback HTTP and streamed through the provider
//! router, and the events it produced (timestamps zeroed).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::default_stream_fn;
use super::request_golden_tests::snapshot;
use crate::agent::message::{AgentMessage, AssistantMessage};
use crate::agent::model::{Model, ModelCost};
use crate::agent::stream_contract::{AssistantMessageEvent, LlmContext, StreamOptions};

/// Answers the first request on a loopback port with `sse` as an event stream; the base URL.
async fn serve_once(sse: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0; 4096];
        // The head, then as many body bytes as its content-length says.
        let body_start = loop {
            let n = socket.read(&mut buffer).await.unwrap();
            assert!(n > 0, "the client closed before sending its request");
            request.extend_from_slice(&buffer[..n]);
            if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
        };
        let head = String::from_utf8_lossy(&request[..body_start]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while request.len() < body_start + length {
            let n = socket.read(&mut buffer).await.unwrap();
            assert!(n > 0, "the client closed in the middle of its request");
            request.extend_from_slice(&buffer[..n]);
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n",
            sse.len()
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(sse.as_bytes()).await.unwrap();
        socket.shutdown().await.unwrap();
    });
    base_url
}

fn model(api: &str, id: &str) -> Model {
    Model {
        id: id.into(),
        api: api.into(),
        provider: "golden".into(),
        reasoning: true,
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
        max_tokens: 8192,
        ..Model::default()
    }
}

fn zero_clock(message: &mut AssistantMessage) {
    message.timestamp = 0;
    message.duration_ms = message.duration_ms.map(|_| 0);
}

/// The events of one response to `sse`, as pretty JSON.
async fn stream(api: &str, model_id: &str, sse: &'static str) -> String {
    let model = Model {
        base_url: serve_once(sse).await,
        ..model(api, model_id)
    };
    let options = StreamOptions {
        api_key: Some("test-key".into()),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let context = LlmContext::new(vec![AgentMessage::user_text("Read src/main.rs")]);
    let mut events = default_stream_fn().stream(&model, context, options);
    let mut out = Vec::new();
    while let Some(mut event) = events.next().await {
        match &mut event {
            AssistantMessageEvent::Start { partial: message }
            | AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => zero_clock(message),
            _ => {}
        }
        out.push(event);
    }
    serde_json::to_string_pretty(&out).unwrap()
}

macro_rules! sse {
    ($name:literal) => {
        include_str!(concat!("../../tests/fixtures/sse/", $name, ".sse"))
    };
}

const OPENAI: &str = "openai-completions";
const ANTHROPIC: &str = "anthropic-messages";

#[tokio::test]
async fn openai_tool_calls() {
    let events = stream(OPENAI, "deepseek-chat", sse!("openai_tools")).await;
    let description = "openai_tools.sse: reasoning_content, text with escapes, encrypted \
        reasoning details, two tool calls with argument deltas, tool_calls, usage with cache";
    snapshot("stream_openai_tools", description, events);
}

#[tokio::test]
async fn openai_length() {
    let events = stream(OPENAI, "gpt-test", sse!("openai_length")).await;
    let description = "openai_length.sse: text, finish_reason length, usage on the choice";
    snapshot("stream_openai_length", description, events);
}

#[tokio::test]
async fn openai_error_chunk() {
    let events = stream(OPENAI, "gpt-test", sse!("openai_error_chunk")).await;
    let description = "openai_error_chunk.sse: text, then an error chunk";
    snapshot("stream_openai_error_chunk", description, events);
}

#[tokio::test]
async fn openai_content_filter() {
    let events = stream(OPENAI, "gpt-test", sse!("openai_content_filter")).await;
    let description = "openai_content_filter.sse: an error finish_reason";
    snapshot("stream_openai_content_filter", description, events);
}

#[tokio::test]
async fn anthropic_tool_use() {
    let events = stream(ANTHROPIC, "claude-sonnet-4-5", sse!("anthropic_tools")).await;
    let description = "anthropic_tools.sse: usage with 1 h cache writes, ping, signed \
        thinking, redacted thinking, text with escapes, tool_use with input deltas, tool_use";
    snapshot("stream_anthropic_tools", description, events);
}

#[tokio::test]
async fn anthropic_max_tokens() {
    let events = stream(ANTHROPIC, "claude-sonnet-4-5", sse!("anthropic_max_tokens")).await;
    let description = "anthropic_max_tokens.sse: text, stop_reason max_tokens";
    snapshot("stream_anthropic_max_tokens", description, events);
}

#[tokio::test]
async fn anthropic_error_event() {
    let events = stream(ANTHROPIC, "claude-sonnet-4-5", sse!("anthropic_error")).await;
    let description = "anthropic_error.sse: text, then an overloaded_error event mid-stream";
    snapshot("stream_anthropic_error", description, events);
}

#[tokio::test]
async fn anthropic_refusal() {
    let events = stream(ANTHROPIC, "claude-sonnet-4-5", sse!("anthropic_refusal")).await;
    let description = "anthropic_refusal.sse: stop_reason refusal with an explanation";
    snapshot("stream_anthropic_refusal", description, events);
}

const RESPONSES: &str = "openai-responses";

#[tokio::test]
async fn responses_tool_calls() {
    let events = stream(RESPONSES, "gpt-5", sse!("responses_tools")).await;
    let description = "responses_tools.sse: a two-part reasoning summary whose encrypted content \
        is backfilled from response.completed, text with escapes and a phase, streamed and whole \
        function-call arguments, usage with cached and reasoning tokens";
    snapshot("stream_responses_tools", description, events);
}

#[tokio::test]
async fn responses_incomplete() {
    let events = stream(RESPONSES, "gpt-5", sse!("responses_incomplete")).await;
    let description = "responses_incomplete.sse: text, response.incomplete (max_output_tokens)";
    snapshot("stream_responses_incomplete", description, events);
}

#[tokio::test]
async fn responses_failed() {
    let events = stream(RESPONSES, "gpt-5", sse!("responses_failed")).await;
    let description = "responses_failed.sse: text, then response.failed with an error";
    snapshot("stream_responses_failed", description, events);
}

#[tokio::test]
async fn responses_error_event() {
    let events = stream(RESPONSES, "gpt-5", sse!("responses_error_event")).await;
    let description = "responses_error_event.sse: an error event before any output";
    snapshot("stream_responses_error_event", description, events);
}
