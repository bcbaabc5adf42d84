//! Scenario 8: `agent-lsp acp` (issue 16). Two bars:
//!
//! * latency: from `session/prompt` to the first `agent_message_chunk` on the wire, minus the
//!   mock's own time to its first byte (the relay's instants: the request's first bytes in,
//!   the response's first bytes out) — ≤ 5 ms, median over tiny turns, a new session each;
//! * throughput: scenario 2's answer (400 KB in 100,000 deltas at full size) through ACP, wall
//!   from `session/prompt` to its response ≤ 1.3 × the floor's, the median of per-repetition
//!   ratios (floor first in even repetitions, last in odd ones), as scenario 2's daemon bar.

use std::time::{Duration, Instant};

use agent_lsp::testing::MockResponse;
use anyhow::ensure;

use super::acp::{AcpAgent, Turn};
use super::lsp::process_cpu;
use super::measure::{Ratios, median, ms};
use super::proxy::{Exchange, Relay};
use super::report::{Bar, Report};
use super::s2_stream::{Size, answer, response};
use super::{Ctx, MockHost, Sandbox};

const LATENCY_BAR_MS: f64 = 5.0;
const WALL_BAR: f64 = 1.3;
const HELLO: &str = "Hello";

/// The relay's exchange number `index`: it is recorded a moment after the client read the
/// end, so this waits for it, up to a second.
fn exchange(relay: &Relay, index: usize) -> anyhow::Result<Exchange> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        if let Some(e) = relay.exchanges().get(index) {
            return Ok(*e);
        }
        ensure!(
            Instant::now() < deadline,
            "the relay saw no exchange {index}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Per tiny turn: (prompt → first chunk, mock's request → first byte), in ms.
fn latencies(ctx: &Ctx, host: &MockHost, sandbox: &Sandbox) -> anyhow::Result<Vec<(f64, f64)>> {
    let relay = Relay::start(host.addr())?;
    let project = sandbox.project();
    let env = sandbox.env_for(&relay.openai_base_url());
    let mut agent = AcpAgent::spawn(&ctx.agent_bin, &env, &project)?;
    agent.initialize()?;
    let mut out = Vec::new();
    for i in 0..ctx.ratio_reps() {
        let session = agent.new_session(&project)?;
        host.push(MockResponse::text(HELLO));
        let turn = agent.prompt(&session, "Say hello")?;
        check(&turn, HELLO)?;
        let e = exchange(&relay, i)?;
        let to_chunk = turn.first_chunk()?.saturating_duration_since(turn.sent);
        let mock = e.first_byte.saturating_duration_since(e.request);
        out.push((ms(to_chunk), ms(mock)));
    }
    agent.shutdown()?;
    Ok(out)
}

/// The turn ended `end_turn` and its chunks rebuild `text`; how many chunks it took (merged
/// deltas: one per `deltaIntervalMs`, or per write while the reader is behind).
fn check(turn: &Turn, text: &str) -> anyhow::Result<usize> {
    ensure!(turn.stop_reason == "end_turn", "stop {}", turn.stop_reason);
    let (streamed, chunks) = turn.agent_text()?;
    ensure!(
        streamed == text,
        "ACP streamed {} bytes, expected {}",
        streamed.len(),
        text.len()
    );
    ensure!(chunks >= 1, "no agent_message_chunk");
    Ok(chunks)
}

/// Paired walls (floor, ACP) of the long answer, the agent's CPU and the chunks per answer.
fn stream(ctx: &Ctx, host: &MockHost, sandbox: &Sandbox, size: Size) -> anyhow::Result<Streamed> {
    let text = answer(size);
    let project = sandbox.project();
    let mut agent = AcpAgent::spawn(&ctx.agent_bin, &sandbox.env(host), &project)?;
    agent.initialize()?;
    let (mut floor, mut acp, mut cpu) = (Vec::new(), Vec::new(), Duration::ZERO);
    let mut chunks = Vec::new();
    let floor_run = |floor: &mut Vec<Duration>| -> anyhow::Result<()> {
        host.push(response(&text, size));
        floor.push(ctx.floor(host, 1)?.wall);
        Ok(())
    };
    for rep in 0..ctx.ratio_reps() {
        if rep % 2 == 0 {
            floor_run(&mut floor)?;
        }
        let session = agent.new_session(&project)?;
        host.push(response(&text, size));
        let before = process_cpu(agent.pid())?;
        let turn = agent.prompt(&session, "Write it all")?;
        cpu += process_cpu(agent.pid())?.saturating_sub(before);
        acp.push(turn.answered.saturating_duration_since(turn.sent));
        chunks.push(check(&turn, &text)? as f64);
        if rep % 2 == 1 {
            floor_run(&mut floor)?;
        }
    }
    agent.shutdown()?;
    Ok(Streamed {
        floor,
        acp,
        cpu,
        chunks,
    })
}

/// The long answer's measurements.
struct Streamed {
    floor: Vec<Duration>,
    acp: Vec<Duration>,
    /// The agent's CPU over its turns.
    cpu: Duration,
    /// Chunks on the wire per answer.
    chunks: Vec<f64>,
}

pub fn run(ctx: &Ctx, size: Size) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let sandbox = Sandbox::new()?;
    let tiny = latencies(ctx, &host, &sandbox)?;
    let Streamed {
        floor,
        acp,
        cpu,
        chunks,
    } = stream(ctx, &host, &sandbox, size)?;

    let mut report = Report::new(format!(
        "8 ACP: first chunk; a {} KB answer in {} deltas",
        size.deltas * size.delta_bytes / 1000,
        size.deltas
    ));
    let above: Vec<f64> = tiny.iter().map(|(c, m)| c - m).collect();
    let med = |v: Vec<f64>| Ratios::new(v).median();
    report.line(format!(
        "{} tiny turns, medians: prompt → first agent_message_chunk {:.2} ms, the mock's \
         request → first byte {:.2} ms",
        tiny.len(),
        med(tiny.iter().map(|t| t.0).collect()),
        med(tiny.iter().map(|t| t.1).collect()),
    ));
    let ratios = Ratios::new(
        (acp.iter().zip(&floor))
            .map(|(a, f)| a.as_secs_f64() / f.as_secs_f64().max(1e-9))
            .collect(),
    );
    let deltas = (acp.len() * size.deltas).max(1) as f64;
    report.line(format!(
        "{} repetitions, medians: floor {:.1} ms, ACP {:.1} ms; per-repetition ratios {}",
        acp.len(),
        ms(median(floor.clone())),
        ms(median(acp.clone())),
        ratios.summary()
    ));
    report.line(format!(
        "the {} deltas arrived in {:.0} agent_message_chunk updates (median): merged at the \
         default 16 ms pace",
        size.deltas,
        med(chunks)
    ));
    report.bar(
        Bar::new(
            "ACP prompt → first chunk, above the mock's first byte",
            med(above),
            LATENCY_BAR_MS,
            "ms",
        )
        .pi("n/a: pi has no ACP mode"),
    );
    report.bar(
        Bar::new("ACP wall / floor wall", ratios.median(), WALL_BAR, "×")
            .pi("n/a: pi has no ACP mode"),
    );
    report.bar(
        Bar::figure("ACP CPU per delta", cpu.as_secs_f64() * 1e6 / deltas, "µs")
            .pi("n/a: pi has no ACP mode"),
    );
    Ok(report)
}
