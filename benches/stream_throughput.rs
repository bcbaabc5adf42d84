//! Streamed tool arguments: why the provider parses them incrementally (`PartialJson`, made by
//! hand) instead of re-parsing the buffer on every delta as pi does.
//!
//! Run: `cargo bench --bench stream_throughput` (release profile). Measures one 200 KB tool
//! argument in 8-byte deltas
//! 1. through the OpenAI provider from the loopback mock (HTTP, SSE, chunk parsing, incremental
//!    JSON, event channel),
//! 2. through the incremental argument parser alone,
//! 3. re-parsed whole with serde_json after every delta (pi's approach).
//!
//! Each case runs a few times; the best run is reported (least disturbed by other load).

use std::time::{Duration, Instant};

use agent_lsp::agent::message::AgentMessage;
use agent_lsp::agent::model::Model;
use agent_lsp::agent::stream_contract::{
    AssistantMessageEvent, LlmContext, StreamFn, StreamRequest,
};
use agent_lsp::provider::openai::OpenAiCompletions;
use agent_lsp::provider::partial_json::PartialJson;
use agent_lsp::testing::{MockProvider, MockResponse, MockScript, MockToolCall};
use anyhow::bail;
use serde_json::json;

const ARGUMENT_BYTES: usize = 200 * 1024;
const ARGUMENT_DELTA: usize = 8;
const RUNS: usize = 3;

struct Row {
    case: &'static str,
    deltas: usize,
    best: Duration,
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let rows = runtime.block_on(cases())?;
    println!("| case | deltas | total (best of {RUNS}) | ns/delta |");
    println!("|---|---:|---:|---:|");
    for row in rows {
        let per = row.best.as_nanos() as f64 / row.deltas as f64;
        println!(
            "| {} | {} | {:.1} ms | {per:.0} |",
            row.case,
            row.deltas,
            row.best.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

async fn cases() -> anyhow::Result<Vec<Row>> {
    let argument = argument_text();
    let tool = MockResponse {
        chunk_size: Some(ARGUMENT_DELTA),
        tool_calls: vec![MockToolCall {
            id: "call_big".into(),
            name: "write".into(),
            arguments: serde_json::Value::Null,
            raw_arguments: Some(argument.clone()),
        }],
        ..MockResponse::default()
    };
    let argument_deltas = argument.len().div_ceil(ARGUMENT_DELTA);
    Ok(vec![
        Row {
            case: "OpenAI provider from mock, 200 KB tool argument",
            deltas: argument_deltas,
            best: best(|| via_mock(tool.clone(), argument_deltas)).await?,
        },
        Row {
            case: "incremental argument parser alone",
            deltas: argument_deltas,
            best: best(|| parse_incremental(&argument)).await?,
        },
        Row {
            case: "re-parse whole buffer per delta (pi's way)",
            deltas: argument_deltas,
            best: best(|| parse_naive(&argument)).await?,
        },
    ])
}

/// `{"path": …, "content": "<~200 KB of text with escapes>"}`.
fn argument_text() -> String {
    let line = "fn main() { println!(\"hello, world\"); }\n";
    let content: String = line.repeat(ARGUMENT_BYTES / line.len());
    json!({"path": "src/big.rs", "content": content}).to_string()
}

async fn best<F, Fut>(mut run: F) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Duration>>,
{
    let mut best = Duration::MAX;
    for _ in 0..RUNS {
        best = best.min(run().await?);
    }
    Ok(best)
}

fn model(mock: &MockProvider) -> Model {
    Model {
        id: "bench".into(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        base_url: mock.openai_base_url(),
        max_tokens: 4096,
        ..Model::default()
    }
}

async fn via_mock(response: MockResponse, expected_deltas: usize) -> anyhow::Result<Duration> {
    let mock = MockProvider::start(MockScript {
        responses: vec![response],
    })
    .await?;
    let provider = OpenAiCompletions::new();
    let context = LlmContext::new(vec![AgentMessage::user_text("go")]);
    let started = Instant::now();
    let mut stream = provider.stream(StreamRequest::new(model(&mock), context));
    let mut deltas = 0;
    let mut last = None;
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::ToolCallDelta { .. }) {
            deltas += 1;
        }
        last = Some(event);
    }
    let elapsed = started.elapsed();
    match last {
        Some(AssistantMessageEvent::Done { message, .. }) => {
            if let Some(call) = message.tool_calls().next()
                && call.arguments_error.is_some()
            {
                bail!("argument did not parse: {:?}", call.arguments_error);
            }
        }
        other => bail!("stream did not finish: {other:?}"),
    }
    // +1: the OpenAI parser also emits the empty first fragment of a tool call.
    if deltas != expected_deltas && deltas != expected_deltas + 1 {
        bail!("expected {expected_deltas} deltas, saw {deltas}");
    }
    Ok(elapsed)
}

async fn parse_incremental(argument: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut parser = PartialJson::new();
    for piece in argument.as_bytes().chunks(ARGUMENT_DELTA) {
        parser.push(std::str::from_utf8(piece)?);
    }
    let parsed = parser.finish().map_err(anyhow::Error::msg)?;
    let elapsed = started.elapsed();
    if parsed.get("path").is_none() {
        bail!("lost the path");
    }
    Ok(elapsed)
}

/// pi's approach: parse the whole buffer after every delta (failing until it is complete).
async fn parse_naive(argument: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut buffer = String::new();
    let mut last = None;
    for piece in argument.as_bytes().chunks(ARGUMENT_DELTA) {
        buffer.push_str(std::str::from_utf8(piece)?);
        last = serde_json::from_str::<serde_json::Value>(&buffer).ok();
    }
    let elapsed = started.elapsed();
    if last.is_none() {
        bail!("final parse failed");
    }
    Ok(elapsed)
}
