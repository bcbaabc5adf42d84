//! Scenario 2: a long answer streamed as many small deltas (400 KB in 100,000 deltas at full
//! size). Bars: agent-lsp's wall ≤ 1.15 × the floor's (a plain client reading the same stream
//! from the same mock), and ≤ 120 bytes on the wire per provider delta, both for `run --json`
//! (JSONL) and for the daemon's `$/agentEvent` notifications (default `initializationOptions`,
//! so with the default delta pace; protocol.md §4.1).

use std::time::{Duration, Instant};

use agent_lsp::testing::MockResponse;
use anyhow::{Context, ensure};
use serde_json::{Value, json};

use super::lsp::{Daemon, Incoming, contains};

use super::measure::{Ratios, Sample, ms};
use super::report::{Bar, Report};
use super::{
    Ctx, MockHost, Sandbox, deltas_of, ensure_settled, json_lines, medians, streamed_text,
};

/// Sizes: `deltas` deltas of `delta_bytes` bytes each.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub deltas: usize,
    pub delta_bytes: usize,
}

pub const FULL: Size = Size {
    deltas: 100_000,
    delta_bytes: 4,
};

/// An answer of `deltas × delta_bytes` ASCII bytes that changes from delta to delta.
pub fn answer(size: Size) -> String {
    let words = ["fn ", "let ", "x = ", "1;\n", "ok ", "// ", "move", "{}\n"];
    let mut text = String::with_capacity(size.deltas * size.delta_bytes);
    let mut i = 0;
    while text.len() < size.deltas * size.delta_bytes {
        text.push_str(words[i % words.len()]);
        i += 1;
    }
    text.truncate(size.deltas * size.delta_bytes);
    text
}

fn response(text: &str, size: Size) -> MockResponse {
    MockResponse {
        chunk_size: Some(size.delta_bytes),
        ..MockResponse::text(text)
    }
}

pub fn run(ctx: &Ctx, size: Size) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let sandbox = Sandbox::new()?;
    let text = answer(size);
    let (mut floor, mut agent) = (Vec::new(), Vec::new());
    let mut per_delta = 0.0;
    // Floor and agent alternate, and the bar's ratio is taken per repetition (the two runs lie
    // within half a second) before the median: this machine's speed drifts between seconds.
    // Which of the two goes first alternates too, so neither side always meets the machine
    // after the other has warmed (or disturbed) it.
    // The mock's own time writing each answer, during the floor's run and during agent-lsp's.
    let (mut floor_serving, mut agent_serving) = (Vec::new(), Vec::new());
    for rep in 0..ctx.ratio_reps() {
        if rep % 2 == 0 {
            let writes = host.writes();
            host.push(response(&text, size));
            floor.push(ctx.floor(&host, 1)?);
            floor_serving.push(host.write_time(writes)?);
        }
        let writes = host.writes();
        host.push(response(&text, size));
        let (sample, stdout) = ctx.run_agent(&sandbox, &host, &[], "Write it all")?;
        per_delta = check_stream(&stdout, &text, size)?;
        agent.push(sample);
        agent_serving.push(host.write_time(writes)?);
        if rep % 2 == 1 {
            let writes = host.writes();
            host.push(response(&text, size));
            floor.push(ctx.floor(&host, 1)?);
            floor_serving.push(host.write_time(writes)?);
        }
    }
    let wire = daemon_wire(ctx, &host, &sandbox, &text, size)?;
    let (fw, fcpu, _) = medians(&floor);
    let (aw, acpu, arss) = medians(&agent);
    let mut report = Report::new(format!(
        "2. A {} KB answer in {} deltas (`agent-lsp run --json`)",
        size.deltas * size.delta_bytes / 1000,
        size.deltas
    ));
    report.line(format!(
        "median of {} runs: agent wall {:.1} ms, CPU {:.1} ms{}; floor wall {:.1} ms, CPU {:.1} ms",
        agent.len(),
        ms(aw),
        ms(acpu),
        arss.map(|k| format!(", peak RSS {:.1} MiB", k as f64 / 1024.0))
            .unwrap_or_default(),
        ms(fw),
        ms(fcpu)
    ));
    report.line(format!(
        "agent stdout {} bytes; floor read {} bytes from the mock",
        agent.last().map(|s| s.stdout_bytes).unwrap_or(0),
        floor.last().map(|s| s.stdout_bytes).unwrap_or(0)
    ));
    let ratios = Ratios::new(
        agent
            .iter()
            .zip(&floor)
            .map(|(a, f)| a.wall.as_secs_f64() / f.wall.as_secs_f64().max(1e-9))
            .collect(),
    );
    report.line(format!(
        "wall / floor wall per repetition (the bar is their median): {}",
        ratios.listed()
    ));
    report.line(serving_breakdown(
        &floor,
        &floor_serving,
        &agent,
        &agent_serving,
    ));
    report.bar(Bar::new("wall / floor wall", ratios.median(), 1.15, "×"));
    report.bar(Bar::new(
        "JSONL bytes per text delta event",
        per_delta,
        120.0,
        "B",
    ));
    wire.report(&mut report, fw);
    Ok(report)
}

/// Where the wall time goes, from the mock's own time writing the answer in each run: how long
/// each client took beyond it (its start-up, and what it still had to do after the mock's last
/// byte), and how much slower the mock served agent-lsp than the floor within a repetition.
fn serving_breakdown(
    floor: &[Sample],
    floor_serving: &[Duration],
    agent: &[Sample],
    agent_serving: &[Duration],
) -> String {
    let beyond = |samples: &[Sample], serving: &[Duration]| {
        let spans = samples
            .iter()
            .zip(serving)
            .map(|(s, w)| s.wall.saturating_sub(*w));
        ms(super::measure::median(spans.collect()))
    };
    let slower = Ratios::new(
        agent_serving
            .iter()
            .zip(floor_serving)
            .map(|(a, f)| a.as_secs_f64() / f.as_secs_f64().max(1e-9))
            .collect(),
    );
    format!(
        "the mock's own time writing the answer (median): {:.1} ms for the floor, {:.1} ms for \
         agent-lsp; wall beyond it (median): floor {:.1} ms, agent-lsp {:.1} ms; the mock's \
         time serving agent-lsp / serving the floor, per repetition: {}",
        ms(super::measure::median(floor_serving.to_vec())),
        ms(super::measure::median(agent_serving.to_vec())),
        beyond(floor, floor_serving),
        beyond(agent, agent_serving),
        slower.listed()
    )
}

/// What the daemon wrote for the answer, over all repetitions.
#[derive(Default)]
struct Wire {
    provider_deltas: usize,
    notifications: usize,
    /// Bytes of the text-delta notifications, frame headers included.
    delta_bytes: usize,
    /// Bytes of every `$/agentEvent` of the runs (the final messages carry the whole answer).
    event_bytes: usize,
    walls: Vec<Duration>,
}

impl Wire {
    fn report(&self, report: &mut Report, floor: Duration) {
        let wall = super::measure::median(self.walls.clone());
        report.line(format!(
            "daemon (`$/agentEvent`, default options): {} notifications for {} provider text \
             deltas ({:.1} deltas each), {:.1} B per notification; all events {:.1} B per \
             provider delta; prompt → agent_settled {:.1} ms (median), {:.2} × the floor",
            self.notifications,
            self.provider_deltas,
            self.provider_deltas as f64 / self.notifications.max(1) as f64,
            self.delta_bytes as f64 / self.notifications.max(1) as f64,
            self.event_bytes as f64 / self.provider_deltas.max(1) as f64,
            ms(wall),
            wall.as_secs_f64() / floor.as_secs_f64().max(1e-9)
        ));
        report.bar(Bar::new(
            "`$/agentEvent` bytes per provider text delta",
            self.delta_bytes as f64 / self.provider_deltas.max(1) as f64,
            120.0,
            "B",
        ));
    }
}

/// Streams the answer `ctx.reps` times through one daemon session; checks every run's text
/// and `seq` and counts the bytes of the notifications.
fn daemon_wire(
    ctx: &Ctx,
    host: &MockHost,
    sandbox: &Sandbox,
    text: &str,
    size: Size,
) -> anyhow::Result<Wire> {
    let mut daemon = Daemon::spawn(&ctx.agent_bin, &sandbox.env(host), &sandbox.project())?;
    daemon.initialize(&sandbox.project(), false)?;
    let (mut wire, mut last_seq) = (Wire::default(), 0);
    for _ in 0..ctx.reps {
        host.push(response(text, size));
        let started = Instant::now();
        daemon.request_start("agent/prompt", json!({"message": "Write it all"}))?;
        let mut events: Vec<Incoming> = Vec::new();
        loop {
            let message = daemon.next()?;
            if !message.is_event() {
                continue;
            }
            let settled = contains(&message.raw, b"\"agent_settled\"");
            events.push(message);
            if settled {
                break;
            }
        }
        wire.walls
            .push(events.last().map_or(started, |e| e.at) - started);
        let mut streamed = String::new();
        for incoming in &events {
            let value: Value = incoming.parse()?;
            let params = &value["params"];
            let seq = params["seq"].as_u64().context("an event without seq")?;
            ensure!(seq == last_seq + 1, "seq {seq} after {last_seq}");
            last_seq = seq;
            let frame = incoming.raw.len()
                + format!("Content-Length: {}\r\n\r\n", incoming.raw.len()).len();
            wire.event_bytes += frame;
            let event = &params["event"]["assistantMessageEvent"];
            if event["type"] == "text_delta" {
                streamed.push_str(event["delta"].as_str().unwrap_or_default());
                wire.notifications += 1;
                wire.delta_bytes += frame;
            }
        }
        ensure!(
            streamed == text,
            "the daemon's deltas differ from the answer ({} bytes, expected {})",
            streamed.len(),
            text.len()
        );
        wire.provider_deltas += size.deltas;
    }
    daemon.shutdown()?;
    Ok(wire)
}

/// Every delta arrived, in order, as its own event; returns the mean JSONL bytes per delta line.
fn check_stream(stdout: &[u8], text: &str, size: Size) -> anyhow::Result<f64> {
    let lines = json_lines(stdout)?;
    ensure_settled(&lines)?;
    let streamed = streamed_text(&lines);
    ensure!(
        streamed == text,
        "the streamed text differs ({} bytes, expected {})",
        streamed.len(),
        text.len()
    );
    let count = deltas_of(&lines, "text_delta").count();
    ensure!(
        count == size.deltas,
        "{count} text delta events for {} deltas",
        size.deltas
    );
    let bytes: usize = stdout
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(br#"{"type":"message_update""#) && memfind(l, b"text_delta"))
        .map(|l| l.len() + 1)
        .sum();
    Ok(bytes as f64 / count as f64)
}

fn memfind(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
