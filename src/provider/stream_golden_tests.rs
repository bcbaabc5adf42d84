//! Golden event streams (`snapshots/stream_*.snap`): a recorded SSE body per case
//! (`tests/fixtures/sse/`), served once over loopback HTTP and streamed through the provider
//! router, and the events it produced (timestamps zeroed).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::default_stream_fn;
use super::request_golden_tests::snapshot;
use crate::agent::message::{AgentMessage, AssistantMessage};
use crate::agent::model::{Model, ModelCost};
use crate::agent::stream_contract::{
    AssistantMessageEvent, LlmContext, StreamOptions, StreamRequest,
};

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
    let mut events = default_stream_fn().stream(StreamRequest {
        model,
        context,
        options,
    });
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

/// One golden case: `tests/fixtures/sse/<sse>.sse` streamed from `api` as `model`, matched
/// against `snapshots/stream_<sse>.snap`, whose description starts with the file's name.
macro_rules! golden {
    ($test:ident: $api:expr, $model:literal, $sse:literal, $description:literal) => {
        #[tokio::test]
        async fn $test() {
            let events = stream($api, $model, sse!($sse)).await;
            let description = concat!($sse, ".sse: ", $description);
            snapshot(concat!("stream_", $sse), description, events);
        }
    };
}

const OPENAI: &str = "openai-completions";
const ANTHROPIC: &str = "anthropic-messages";
const RESPONSES: &str = "openai-responses";

golden!(openai_tool_calls: OPENAI, "deepseek-chat", "openai_tools",
    "reasoning_content, text with escapes, encrypted reasoning details, two tool calls with \
    argument deltas, tool_calls, usage with cache");
golden!(openai_length: OPENAI, "gpt-test", "openai_length",
    "text, finish_reason length, usage on the choice");
golden!(openai_error_chunk: OPENAI, "gpt-test", "openai_error_chunk",
    "text, then an error chunk");
golden!(openai_content_filter: OPENAI, "gpt-test", "openai_content_filter",
    "an error finish_reason");
golden!(anthropic_tool_use: ANTHROPIC, "claude-sonnet-4-5", "anthropic_tools",
    "usage with 1 h cache writes, ping, signed thinking, redacted thinking, text with escapes, \
    tool_use with input deltas, tool_use");
golden!(anthropic_max_tokens: ANTHROPIC, "claude-sonnet-4-5", "anthropic_max_tokens",
    "text, stop_reason max_tokens");
golden!(anthropic_error_event: ANTHROPIC, "claude-sonnet-4-5", "anthropic_error",
    "text, then an overloaded_error event mid-stream");
golden!(anthropic_refusal: ANTHROPIC, "claude-sonnet-4-5", "anthropic_refusal",
    "stop_reason refusal with an explanation");
golden!(responses_tool_calls: RESPONSES, "gpt-5", "responses_tools",
    "a two-part reasoning summary whose encrypted content is backfilled from \
    response.completed, text with escapes and a phase, streamed and whole function-call \
    arguments, usage with cached and reasoning tokens");
golden!(responses_incomplete: RESPONSES, "gpt-5", "responses_incomplete",
    "text, response.incomplete (max_output_tokens)");
golden!(responses_failed: RESPONSES, "gpt-5", "responses_failed",
    "text, then response.failed with an error");
golden!(responses_error_event: RESPONSES, "gpt-5", "responses_error_event",
    "an error event before any output");
