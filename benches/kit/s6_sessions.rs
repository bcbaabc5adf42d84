//! Scenario 6: many sessions streaming at once on one daemon connection (20 × 5,000 deltas at
//! full size), prompted back to back, `reps` times. Bar: nothing lost or reordered — every
//! session's `seq` runs 1, 2, 3… across the runs, and its text deltas rebuild exactly one
//! scripted answer, each answer used once. pi has no LSP daemon (its RPC mode serves one
//! session per process).

use std::time::Duration;

use super::lsp::{Daemon, EventCheck};
use super::measure::{median, ms};
use super::report::{Bar, Report};
use super::s2_stream;
use super::{Ctx, MockHost, Sandbox};

#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub sessions: usize,
    pub deltas: usize,
}

pub const FULL: Size = Size {
    sessions: 20,
    deltas: 5_000,
};

fn stream(size: Size) -> s2_stream::Size {
    s2_stream::Size {
        deltas: size.deltas,
        delta_bytes: 4,
    }
}

/// Answer `k`: a unique head, padded to whole deltas, so each session's text names its answer.
fn answer(k: usize, size: Size) -> String {
    let body = s2_stream::answer(stream(size));
    format!("{:<16}{}", format!("[answer {k}]"), &body[16..])
}

pub fn run(ctx: &Ctx, size: Size) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let sandbox = Sandbox::new()?;
    let texts: Vec<String> = (0..size.sessions).map(|k| answer(k, size)).collect();
    let mut daemon = Daemon::spawn(&ctx.agent_bin, &sandbox.env(&host), &sandbox.project())?;
    daemon.initialize(&sandbox.project(), false)?;
    let sessions = (0..size.sessions)
        .map(|_| daemon.new_session(&sandbox.project()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (mut walls, mut check) = (Vec::<Duration>::new(), EventCheck::default());
    for _ in 0..ctx.reps {
        for text in &texts {
            host.push(s2_stream::response(text, stream(size)));
        }
        let (wall, events) = daemon.prompt_all(&sessions)?;
        check.check(&events, &texts)?;
        walls.push(wall);
    }
    daemon.shutdown()?;
    let mut report = Report::new(format!(
        "6 daemon: {} sessions on one connection",
        size.sessions
    ));
    report.line(format!(
        "{} runs of {} sessions × {} deltas: {:.1} ms each (median); {} events checked, {} \
         text-delta notifications",
        walls.len(),
        size.sessions,
        size.deltas,
        ms(median(walls)),
        check.events,
        check.notifications
    ));
    report.bar(
        Bar::new(
            "events lost or out of order",
            check.anomalies as f64,
            0.0,
            "",
        )
        .pi("n/a: no LSP daemon"),
    );
    Ok(report)
}
