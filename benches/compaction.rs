//! Compaction over a long session (BENCH.md, "Compaction"): 300 prompts, each a `read` of a
//! 2,000-character file and an answer, against a model with a 32k window, through the real
//! session (`core::assemble`, the agent loop, the session file on disk, the coding
//! tools) and an in-process model that answers at once. Prints the size of every request's
//! OpenAI body (condensed) and agent-lsp's own time per compaction: from `compaction_start`
//! to `compaction_end`, minus the time the summary requests spent in the model.
//!
//! `cargo bench --bench compaction [-- --turns N]`; exits 1 when a request does not fit the
//! window (its body over 4 bytes per token of the window) or a compaction takes over 20 ms.
//! Without `--bench` (as `cargo test --all-targets` runs it) it only says how to run it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_lsp::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, ToolCall, Usage,
};
use agent_lsp::agent::model::Model;
use agent_lsp::agent::stream_contract::{
    AssistantEventStream, LlmContext, StreamFn, StreamOptions, StreamRequest, event_channel,
};
use agent_lsp::agent::{Agent, AgentListener};
use agent_lsp::compaction::summary::SYSTEM_PROMPT;
use agent_lsp::core::{
    CompactionEvent, Headless, ModelChoice, RecordChoice, SessionSpec, assemble,
};
use agent_lsp::model_registry::{EnvSource, ResolvedModel};
use agent_lsp::provider::openai_request::build_body;
use agent_lsp::provider::scripted::{API, ScriptedProvider};
use agent_lsp::store::SessionStore;

const WINDOW: u64 = 32_768;
const BAR_MS: f64 = 20.0;

/// Each compaction's start, end, and the model's share of it (µs).
type Times = Mutex<Vec<(Instant, Option<Instant>, u64)>>;

/// One request the model saw.
struct Sent {
    turn: usize,
    bytes: usize,
    summary: bool,
}

#[derive(Default)]
struct Log {
    sent: Vec<Sent>,
    /// Time spent answering summary requests, in µs (the model's share of a compaction).
    summary_us: AtomicU64,
}

fn text_of(context: &LlmContext) -> Option<&str> {
    match context.messages.first()? {
        AgentMessage::System(s) => match &s.content {
            agent_lsp::agent::message::MessageContent::Text(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// The model: a `read` for a prompt, an answer after the result, a summary for a summary
/// request; usage reports the body's size in tokens (4 bytes each), as a provider would.
fn respond(
    log: &Arc<Mutex<Log>>,
    turn: &Arc<AtomicU64>,
    wire: &Model,
    context: &LlmContext,
    options: &StreamOptions,
) -> AssistantMessage {
    let bytes = build_body(wire, context, options).map_or(0, |b| b.len());
    let summary = text_of(context) == Some(SYSTEM_PROMPT);
    let content = if summary {
        vec![ContentBlock::text(format!(
            "## Goal\n{}",
            "Keep reading notes. ".repeat(60)
        ))]
    } else if matches!(context.messages.last(), Some(AgentMessage::User(_))) {
        vec![ContentBlock::ToolCall(ToolCall {
            id: format!("call_{}", turn.load(Ordering::Relaxed)),
            name: "read".into(),
            arguments: serde_json::json!({"path": "notes.txt"}),
            ..ToolCall::default()
        })]
    } else {
        vec![ContentBlock::text(
            "The notes say the same again. ".repeat(12),
        )]
    };
    let stop_reason = match content.first() {
        Some(ContentBlock::ToolCall(_)) => StopReason::ToolUse,
        _ => StopReason::Stop,
    };
    let input = (bytes / 4) as u64;
    let message = AssistantMessage {
        content,
        stop_reason,
        usage: Usage {
            input,
            output: 100,
            total_tokens: input + 100,
            ..Usage::default()
        },
        ..AssistantMessage::default()
    };
    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
    log.sent.push(Sent {
        turn: turn.load(Ordering::Relaxed) as usize,
        bytes,
        summary,
    });
    message
}

/// The scripted model, timed: a summary request's time, from the request to its last event,
/// is the model's share of a compaction.
struct Timed {
    inner: ScriptedProvider,
    log: Arc<Mutex<Log>>,
}

impl StreamFn for Timed {
    fn stream(&self, request: StreamRequest) -> AssistantEventStream {
        let started = Instant::now();
        let summary = text_of(&request.context) == Some(SYSTEM_PROMPT);
        let mut inner = self.inner.stream(request);
        let (sink, stream) = event_channel();
        let log = self.log.clone();
        tokio::spawn(async move {
            while let Some(event) = inner.next().await {
                let terminal = event.is_terminal();
                if terminal && summary {
                    let us = started.elapsed().as_micros() as u64;
                    log.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .summary_us
                        .fetch_add(us, Ordering::Relaxed);
                }
                if !sink.send(event).await || terminal {
                    break;
                }
            }
        });
        stream
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("compaction benchmark: run with `cargo bench --bench compaction`");
        return ExitCode::SUCCESS;
    }
    let turns = args
        .iter()
        .position(|a| a == "--turns")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(turns)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("bench: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(turns: usize) -> anyhow::Result<bool> {
    let project = tempfile::tempdir()?;
    let store_dir = tempfile::tempdir()?;
    std::fs::write(project.path().join("notes.txt"), "n".repeat(2000))?;
    let model = Model {
        id: "bench-32k".into(),
        name: "32k window".into(),
        api: API.into(),
        provider: "bench".into(),
        context_window: WINDOW,
        max_tokens: 4096,
        ..Model::default()
    };
    let wire = Model {
        api: "openai-completions".into(),
        ..model.clone()
    };
    let log = Arc::new(Mutex::new(Log::default()));
    let turn = Arc::new(AtomicU64::new(0));
    let provider = ScriptedProvider::new(Vec::new());
    let factory = {
        let (log, turn) = (log.clone(), turn.clone());
        Arc::new(move |c: &LlmContext, o: &StreamOptions, _: usize| {
            respond(&log, &turn, &wire, c, o)
        })
    };
    // Two requests per prompt and a few summaries: more than enough answers.
    for _ in 0..turns * 3 + 100 {
        provider.push_fn(factory.clone());
    }
    let session = assemble(
        SessionSpec {
            cwd: project.path().to_path_buf(),
            cwd_is_explicit: true,
            extra_roots: Vec::new(),
            model: ModelChoice::Given(Box::new(ResolvedModel {
                model,
                api_key: None,
            })),
            thinking: None,
            record: RecordChoice::New(Some(SessionStore::new(store_dir.path()))),
            stream_fn: Arc::new(Timed {
                inner: provider,
                log: log.clone(),
            }),
            env: EnvSource::default(),
            mcp: Default::default(),
            limits: Default::default(),
            compaction: Default::default(),
            sandbox: Default::default(),
            context_files: false,
            permissions: Default::default(),
        },
        &Headless,
    )?;
    let agent = Agent::new(session.options);
    session.parts.compactor.attach(&agent);
    let times: Arc<Times> = Arc::default();
    {
        let (times, log) = (times.clone(), log.clone());
        session.parts.compactor.observe(move |event| {
            let now = Instant::now();
            let mut times = times.lock().unwrap_or_else(|e| e.into_inner());
            let model_us = log
                .lock()
                .map_or(0, |l| l.summary_us.load(Ordering::Relaxed));
            match event {
                CompactionEvent::CompactionStart { .. } => times.push((now, None, model_us)),
                CompactionEvent::CompactionEnd(_) => {
                    if let Some(last) = times.last_mut() {
                        last.1 = Some(now);
                        last.2 = model_us - last.2;
                    }
                }
            }
        });
    }
    agent.subscribe(recorder(session.parts.record.clone()));
    for n in 0..turns {
        turn.store(n as u64 + 1, Ordering::Relaxed);
        let handle = agent.prompt_text(&format!(
            "Turn {}: read notes.txt again and tell me what changed.",
            n + 1
        ))?;
        let outcome = handle.wait().await;
        if let Some(error) = outcome.error {
            anyhow::bail!("turn {}: {error}", n + 1);
        }
    }
    Ok(report(&log, &times))
}

/// Records every finished message, as the front ends do.
fn recorder(record: agent_lsp::core::SharedRecord) -> AgentListener {
    Arc::new(move |event, _cancel| {
        if let agent_lsp::agent::event::AgentEvent::MessageEnd { message } = &*event
            && let Ok(mut record) = record.lock()
        {
            let _ = record.append_message(message);
        }
        Box::pin(std::future::ready(Ok(())))
    })
}

fn report(log: &Mutex<Log>, times: &Times) -> bool {
    let log = log.lock().unwrap_or_else(|e| e.into_inner());
    let limit = WINDOW as usize * 4;
    println!(
        "## Compaction: {} prompts, 32k window\n",
        log.sent.iter().map(|s| s.turn).max().unwrap_or(0)
    );
    println!("| turns | requests | largest body (bytes) | ≈ tokens | of the window |");
    println!("|---|---:|---:|---:|---:|");
    let mut fits = true;
    let last_turn = log.sent.iter().map(|s| s.turn).max().unwrap_or(0);
    for start in (1..=last_turn).step_by(25) {
        let end = (start + 24).min(last_turn);
        let rows: Vec<&Sent> = (log.sent.iter())
            .filter(|s| !s.summary && (start..=end).contains(&s.turn))
            .collect();
        let max = rows.iter().map(|s| s.bytes).max().unwrap_or(0);
        fits &= rows.iter().all(|s| s.bytes < limit);
        println!(
            "| {start}–{end} | {} | {max} | {} | {:.0} % |",
            rows.len(),
            max / 4,
            (max / 4) as f64 * 100.0 / WINDOW as f64
        );
    }
    let summaries: Vec<&Sent> = log.sent.iter().filter(|s| s.summary).collect();
    let largest_summary = summaries.iter().map(|s| s.bytes).max().unwrap_or(0);
    fits &= largest_summary < limit;
    let times = times.lock().unwrap_or_else(|e| e.into_inner());
    let own: Vec<f64> = (times.iter())
        .filter_map(|(start, end, model_us)| {
            let total = end.map(|e| e.duration_since(*start))?;
            Some((total.saturating_sub(Duration::from_micros(*model_us))).as_secs_f64() * 1000.0)
        })
        .collect();
    let max_ms = own.iter().copied().fold(0.0, f64::max);
    let mean_ms = own.iter().sum::<f64>() / own.len().max(1) as f64;
    println!(
        "\n{} compactions ({} summary requests, the largest {largest_summary} bytes); agent-lsp's \
         own time per compaction: mean {mean_ms:.2} ms, max {max_ms:.2} ms (bar {BAR_MS} ms)",
        own.len(),
        summaries.len()
    );
    let ok = fits && !own.is_empty() && max_ms <= BAR_MS;
    println!("{}", if ok { "bars met" } else { "BAR MISSED" });
    ok
}
