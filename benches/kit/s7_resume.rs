//! Scenario 7: resuming a long session. A 2,000-message session file (pi's version 3 JSONL:
//! user / assistant `read` call / tool result / assistant answer cycles) is resumed with one
//! more prompt: `agent-lsp run --json --session FILE "…"` loads it, sends the whole history with
//! the prompt, prints the short answer and appends the turn to the file. Bar: wall above the
//! floor (replaying the request the client sent, so the mock's reading of the 2,000 messages is
//! not counted) ≤ 100 ms. pi resumes a copy of the same file (`--mode json --session FILE`).

use std::path::Path;

use agent_lsp::testing::MockResponse;
use anyhow::ensure;
use serde_json::{Value, json};

use super::measure::{Sample, ms};
use super::report::{Bar, Report};
use super::{Client, Ctx, MockHost, Sandbox, ensure_settled, json_lines, medians, streamed_text};

pub const FULL_MESSAGES: usize = 2_000;

const ANSWER: &str = "Resumed.";

/// A session file of `messages` messages in `cwd`, as pi 1.6 writes them.
pub fn session_file(cwd: &Path, messages: usize) -> String {
    let usage = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let assistant = |content: Value, stop: &str| {
        json!({"role": "assistant", "content": content, "api": "openai-completions",
            "provider": "openai", "model": "gpt-4.1", "usage": usage, "stopReason": stop,
            "timestamp": 1_796_000_000_000u64})
    };
    let cycle = |i: usize| {
        let id = format!("call_{i}");
        let path = format!("src/file_{i}.rs");
        [
            json!({"role": "user", "content": [{"type": "text", "text": format!("Look at {path} please.")}],
                "timestamp": 1_796_000_000_000u64}),
            assistant(
                json!([{"type": "toolCall", "id": id, "name": "read", "arguments": {"path": path}}]),
                "toolUse",
            ),
            json!({"role": "toolResult", "toolCallId": id, "toolName": "read",
                "content": [{"type": "text", "text": "fn main() {\n    println!(\"hi\");\n}\n".repeat(8)}],
                "isError": false, "timestamp": 1_796_000_000_000u64}),
            assistant(
                json!([{"type": "text", "text": format!("file_{i}.rs prints a greeting; nothing to change there.")}]),
                "stop",
            ),
        ]
    };
    let header = json!({"type": "session", "version": 3, "id": "01a23300-0000-7000-8000-000000000001",
        "timestamp": "2026-12-01T00:00:00.000Z", "cwd": cwd.display().to_string()});
    let mut lines = vec![header.to_string()];
    let mut parent = Value::Null;
    for (n, message) in (0..).flat_map(cycle).take(messages).enumerate() {
        let id = format!("{n:08x}");
        let entry = json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-12-01T00:00:00.000Z", "message": message});
        lines.push(entry.to_string());
        parent = Value::String(id);
    }
    lines.join("\n") + "\n"
}

pub fn run(ctx: &Ctx, messages: usize) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let mut report = Report::new(format!("7 resume of a {messages}-message session"));
    let ours = measure(ctx, &host, Client::AgentLsp, messages, &mut report)?;
    let pi = ctx
        .pi
        .as_ref()
        .map(|pi| measure(ctx, &host, Client::Pi(pi), messages, &mut report));
    let pi = pi.transpose()?;
    ensure!(
        host.mock.violations().is_empty(),
        "the mock saw invalid histories: {:?}",
        host.mock.violations()
    );
    report.bar(
        Bar::new("resume + one turn, wall above the floor", ours, 100.0, "ms")
            .pi(ctx.pi_figure(pi, "ms")),
    );
    Ok(report)
}

/// `client` resuming fresh copies of the session, each against a floor replaying its request;
/// one detail line; the median wall above the floor's.
fn measure(
    ctx: &Ctx,
    host: &MockHost,
    client: Client,
    messages: usize,
    report: &mut Report,
) -> anyhow::Result<f64> {
    let sandbox = Sandbox::new()?;
    let file = session_file(&sandbox.project(), messages);
    let (mut floor, mut runs): (Vec<Sample>, Vec<Sample>) = (Vec::new(), Vec::new());
    for rep in 0..ctx.reps_for(client) {
        let path = sandbox.project().join(format!("session-{rep}.jsonl"));
        std::fs::write(&path, &file)?;
        let before = host.mock.requests().len();
        host.push(MockResponse::text(ANSWER));
        let session = path.display().to_string();
        let (sample, stdout) = ctx.run_json(
            client,
            &sandbox,
            host,
            &["--session", &session],
            "One more?",
        )?;
        let lines = json_lines(&stdout)?;
        ensure_settled(&lines)?;
        let text = streamed_text(&lines);
        ensure!(text == ANSWER, "{} streamed {text:?}", client.name());
        let requests = &host.mock.requests()[before..];
        ensure!(
            requests.len() == 1,
            "{} made {} requests",
            client.name(),
            requests.len()
        );
        let sent = requests[0].body["messages"].as_array().map_or(0, Vec::len);
        ensure!(
            sent > messages,
            "{} sent {sent} messages for a {messages}-message history",
            client.name()
        );
        let appended = std::fs::read_to_string(&path)?;
        ensure!(
            appended.len() > file.len() && appended.starts_with(&file),
            "{} did not append the turn to the session file",
            client.name()
        );
        host.push(MockResponse::text(ANSWER));
        floor.push(ctx.floor_replay(host, &[requests[0].body.to_string()])?);
        runs.push(sample);
    }
    let (fw, ..) = medians(&floor);
    let (wall, cpu, rss) = medians(&runs);
    report.line(format!(
        "{}: wall {:.1} ms, CPU {:.1} ms{}; floor (its request replayed) {:.1} ms; session file \
         {} KB (medians of {})",
        client.name(),
        ms(wall),
        ms(cpu),
        rss.map(|k| format!(", peak RSS {:.1} MiB", k as f64 / 1024.0))
            .unwrap_or_default(),
        ms(fw),
        file.len() / 1000,
        runs.len()
    ));
    Ok(ms(wall.saturating_sub(fw)))
}
