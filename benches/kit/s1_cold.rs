//! Scenario 1: one tiny turn, cold process. `agent-lsp run --json` answers one prompt with a
//! five-byte answer; the floor is a fresh process fetching the same stream. Bars: wall under
//! 30 ms and peak RSS under 15 MiB above the floor.

use agent_lsp::testing::MockResponse;
use anyhow::ensure;

use super::measure::ms;
use super::report::{Bar, Report};
use super::{Ctx, MockHost, Sandbox, ensure_settled, json_lines, medians, streamed_text};

const ANSWER: &str = "Hello";

pub fn run(ctx: &Ctx) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let sandbox = Sandbox::new()?;
    let (mut floor, mut agent) = (Vec::new(), Vec::new());
    for _ in 0..ctx.reps {
        host.push(MockResponse::text(ANSWER));
        floor.push(ctx.floor(&host, 1)?);
        host.push(MockResponse::text(ANSWER));
        let (sample, stdout) = ctx.run_agent(&sandbox, &host, &[], "Say hello")?;
        check_answer(&stdout)?;
        agent.push(sample);
    }
    let (fw, fcpu, frss) = medians(&floor);
    let (aw, acpu, arss) = medians(&agent);
    let mut report = Report::new("1. One tiny turn, cold process (`agent-lsp run --json`)");
    report.line(format!(
        "median of {} runs: agent wall {:.2} ms, CPU {:.2} ms; floor wall {:.2} ms, CPU {:.2} ms",
        ctx.reps,
        ms(aw),
        ms(acpu),
        ms(fw),
        ms(fcpu)
    ));
    report.bar(Bar::new(
        "wall above the floor",
        ms(aw.saturating_sub(fw)),
        30.0,
        "ms",
    ));
    match (arss, frss) {
        (Some(a), Some(f)) => {
            report.line(format!(
                "median peak RSS: agent {:.1} MiB, floor {:.1} MiB",
                a as f64 / 1024.0,
                f as f64 / 1024.0
            ));
            report.bar(Bar::new(
                "peak RSS above the floor",
                a.saturating_sub(f) as f64 / 1024.0,
                15.0,
                "MiB",
            ));
        }
        _ => report.line("peak RSS not measured (direct children: smoke run)"),
    }
    Ok(report)
}

/// The run printed the answer as text deltas and settled without error.
fn check_answer(stdout: &[u8]) -> anyhow::Result<()> {
    let lines = json_lines(stdout)?;
    let text = streamed_text(&lines);
    ensure!(text == ANSWER, "the run streamed {text:?}, not {ANSWER:?}");
    ensure_settled(&lines)
}
