//! Scenario 6: many sessions streaming at once on one daemon connection (20 × 5,000 deltas at
//! full size). Bars: no event lost or reordered (every session's `seq` runs 1, 2, 3… and its
//! text deltas rebuild exactly one scripted answer); throughput scales with the mock (the
//! daemon's slowdown from one session to all of them is at most 1.15× the floor's slowdown
//! from one client to as many concurrent clients); and the `$/agentEvent` wire cost per provider
//! text delta (scenario 2's bar for the daemon) is ≤ 120 bytes (default options: paced deltas).
//! Floor and daemon runs alternate within each repetition, and the slowdown ratio is taken per
//! repetition (its four runs lie within a second) before the median: this machine's speed
//! drifts by tens of percent between seconds, which a ratio of medians taken from different
//! repetitions turns into noise.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use agent_lsp::testing::MockResponse;
use anyhow::{Context, ensure};
use serde_json::{Value, json};

use super::lsp::{Daemon, Incoming, contains};
use super::measure::{Ratios, ms};
use super::report::{Bar, Report};
use super::s2_stream;
use super::{Ctx, MockHost, Sandbox, medians};

#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub sessions: usize,
    pub deltas: usize,
}

pub const FULL: Size = Size {
    sessions: 20,
    deltas: 5_000,
};

const DELTA_BYTES: usize = 4;

fn answer(k: usize, size: Size) -> String {
    let body = s2_stream::answer(s2_stream::Size {
        deltas: size.deltas,
        delta_bytes: DELTA_BYTES,
    });
    // A unique head, padded to whole deltas, so each session's text names its response.
    format!("{:<16}{}", format!("[answer {k}]"), &body[16..])
}

fn response(text: &str) -> MockResponse {
    MockResponse {
        chunk_size: Some(DELTA_BYTES),
        ..MockResponse::text(text)
    }
}

pub fn run(ctx: &Ctx, size: Size) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let sandbox = Sandbox::new()?;
    let texts: Vec<String> = (0..size.sessions).map(|k| answer(k, size)).collect();
    let mut daemon = Daemon::spawn(&ctx.agent_bin, &sandbox.env(&host), &sandbox.project())?;
    daemon.initialize(&sandbox.project(), false)?;
    let cwd = sandbox.project().display().to_string();
    let mut sessions = Vec::new();
    for _ in 0..size.sessions {
        let created = daemon.request("agent/newSession", json!({"cwd": cwd}))?;
        sessions.push(
            created["sessionId"]
                .as_str()
                .context("agent/newSession without sessionId")?
                .to_string(),
        );
    }
    // Floor and daemon alternate within each repetition, so a drift of the machine lands on
    // both sides of the ratio.
    let (mut floor_one, mut floor_all) = (Vec::new(), Vec::new());
    let (mut one, mut all, mut stats) = (Vec::new(), Vec::new(), Stats::default());
    for _ in 0..ctx.ratio_reps() {
        host.push(response(&texts[0]));
        floor_one.push(ctx.floor(&host, 1)?);
        host.push(response(&texts[0]));
        let (wall, events) = stream(&mut daemon, &sessions[..1])?;
        stats.check(&events, &texts[..1], size)?;
        one.push(wall);
        texts.iter().for_each(|t| host.push(response(t)));
        floor_all.push(ctx.floor_with(&host, 1, size.sessions)?);
        texts.iter().for_each(|t| host.push(response(t)));
        let (wall, events) = stream(&mut daemon, &sessions)?;
        stats.check(&events, &texts, size)?;
        all.push(wall);
    }
    daemon.shutdown()?;
    let median = |v: Vec<Duration>| super::measure::median(v);
    let slowdown = |all: Duration, one: Duration| all.as_secs_f64() / one.as_secs_f64().max(1e-9);
    let ratios = Ratios::new(
        (0..one.len())
            .map(|i| {
                slowdown(all[i], one[i]) / slowdown(floor_all[i].wall, floor_one[i].wall).max(1e-9)
            })
            .collect(),
    );
    let (f1, fa) = (medians(&floor_one).0, medians(&floor_all).0);
    let runs = one.len();
    let (a1, aa) = (median(one), median(all));
    let mut report = Report::new(format!(
        "6. Daemon: {} sessions streaming {} deltas each on one connection",
        size.sessions, size.deltas
    ));
    report.line(format!(
        "median of {}: one session {:.1} ms, all {:.1} ms; floor: one client {:.1} ms, {} \
         concurrent clients {:.1} ms",
        runs,
        ms(a1),
        ms(aa),
        ms(f1),
        size.sessions,
        ms(fa)
    ));
    report.line(format!(
        "slowdown one → all: daemon {:.2}×, floor {:.2}×; daemon / floor with all sessions {:.2}×",
        slowdown(aa, a1),
        slowdown(fa, f1),
        slowdown(aa, fa)
    ));
    report.line(format!(
        "slowdown ratio per repetition (the bar is their median): {}",
        ratios.listed()
    ));
    report.line(format!(
        "{} events checked; {} provider text deltas in {} notifications, {:.1} wire bytes per \
         notification (frame header included)",
        stats.events,
        stats.provider_deltas,
        stats.deltas,
        stats.delta_bytes as f64 / stats.deltas.max(1) as f64
    ));
    report.bar(Bar::new(
        "events lost or out of order",
        stats.anomalies as f64,
        0.0,
        "",
    ));
    report.bar(Bar::new(
        "daemon slowdown / floor slowdown",
        ratios.median(),
        1.15,
        "×",
    ));
    report.bar(Bar::new(
        "`$/agentEvent` bytes per provider text delta",
        stats.delta_bytes as f64 / stats.provider_deltas.max(1) as f64,
        120.0,
        "B",
    ));
    Ok(report)
}

/// Prompts every session at once; returns the wall time until the last `agent_settled` and
/// every event received meanwhile (unparsed).
fn stream(daemon: &mut Daemon, sessions: &[String]) -> anyhow::Result<(Duration, Vec<Incoming>)> {
    let started = Instant::now();
    let mut prompts = HashSet::new();
    for session in sessions {
        prompts.insert(daemon.request_start(
            "agent/prompt",
            json!({"sessionId": session, "message": "Stream your answer"}),
        )?);
    }
    let (mut events, mut settled, mut last) = (Vec::new(), 0, started);
    while settled < sessions.len() {
        let message = daemon.next()?;
        if message.is_event() {
            if contains(&message.raw, b"\"agent_settled\"") {
                settled += 1;
                last = message.at;
            }
            events.push(message);
            continue;
        }
        let value = message.parse()?;
        if let Some(id) = value.get("id").and_then(Value::as_i64)
            && prompts.contains(&id)
        {
            ensure!(value.get("error").is_none(), "agent/prompt failed: {value}");
        }
    }
    Ok((last.saturating_duration_since(started), events))
}

#[derive(Default)]
struct Stats {
    events: usize,
    /// Text-delta notifications (each may carry several provider deltas).
    deltas: usize,
    /// Provider text deltas the mock streamed.
    provider_deltas: usize,
    delta_bytes: usize,
    anomalies: usize,
    /// The last `seq` seen per session, across runs.
    last_seq: BTreeMap<String, u64>,
}

impl Stats {
    /// Every session's events are consecutive and its deltas rebuild one whole answer; every
    /// answer went to exactly one session.
    fn check(&mut self, events: &[Incoming], texts: &[String], size: Size) -> anyhow::Result<()> {
        let mut streamed: BTreeMap<String, (String, usize)> = BTreeMap::new();
        for incoming in events {
            let value = incoming.parse()?;
            let params = &value["params"];
            let session = params["sessionId"].as_str().unwrap_or_default().to_string();
            let seq = params["seq"].as_u64().unwrap_or(0);
            let last = self.last_seq.entry(session.clone()).or_insert(0);
            if seq != *last + 1 {
                self.anomalies += 1;
            }
            *last = seq;
            self.events += 1;
            let event = &params["event"]["assistantMessageEvent"];
            if event["type"] == "text_delta" {
                let entry = streamed.entry(session).or_default();
                entry
                    .0
                    .push_str(event["delta"].as_str().unwrap_or_default());
                entry.1 += 1;
                self.deltas += 1;
                let header = format!("Content-Length: {}\r\n\r\n", incoming.raw.len());
                self.delta_bytes += incoming.raw.len() + header.len();
            }
        }
        let mut unused: HashSet<&str> = texts.iter().map(String::as_str).collect();
        for (text, count) in streamed.values() {
            // The daemon may merge deltas of a client that falls behind (protocol.md,
            // `$/agentEvent`): fewer events are fine, the rebuilt text must be exact.
            if !unused.remove(text.as_str()) || *count == 0 || *count > size.deltas {
                self.anomalies += 1;
            }
        }
        self.anomalies += unused.len();
        self.provider_deltas += texts.len() * size.deltas;
        Ok(())
    }
}
