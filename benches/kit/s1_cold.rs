//! Scenario 1: one tiny turn, cold process. `agent-lsp run --json` answers one prompt with a
//! five-byte answer (recording a session, the default); the floor is a fresh process fetching
//! the same stream. Bars: wall ≤ 30 ms and peak RSS ≤ 15 MiB above the floor. pi
//! (`--mode json`) runs the same turn on the same mock.

use agent_lsp::testing::MockResponse;
use anyhow::ensure;

use super::measure::{Sample, ms};
use super::report::{Bar, Report};
use super::{Client, Ctx, MockHost, Sandbox, ensure_settled, json_lines, medians, streamed_text};

const ANSWER: &str = "Hello";

/// A client's figures above the floor: wall (ms) and peak RSS (MiB, when measured).
struct Above {
    wall: f64,
    rss: Option<f64>,
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let mut report = Report::new("1 cold tiny turn");
    let ours = measure(ctx, &host, Client::AgentLsp, &mut report)?;
    let pi = ctx
        .pi
        .as_ref()
        .map(|pi| measure(ctx, &host, Client::Pi(pi), &mut report));
    let pi = pi.transpose()?;
    report.bar(
        Bar::new("wall above the floor", ours.wall, 30.0, "ms")
            .pi(ctx.pi_figure(pi.as_ref().map(|p| p.wall), "ms")),
    );
    match ours.rss {
        Some(rss) => report.bar(
            Bar::new("peak RSS above the floor", rss, 15.0, "MiB")
                .pi(ctx.pi_figure(pi.as_ref().and_then(|p| p.rss), "MiB")),
        ),
        None => report.line("peak RSS not measured (direct children: smoke run)"),
    }
    Ok(report)
}

/// Floor and `client` in turns; one detail line; the client's medians above the floor's.
fn measure(
    ctx: &Ctx,
    host: &MockHost,
    client: Client,
    report: &mut Report,
) -> anyhow::Result<Above> {
    let sandbox = Sandbox::new()?;
    let (mut floor, mut runs): (Vec<Sample>, Vec<Sample>) = (Vec::new(), Vec::new());
    for _ in 0..ctx.reps_for(client) {
        host.push(MockResponse::text(ANSWER));
        floor.push(ctx.floor(host, 1)?);
        host.push(MockResponse::text(ANSWER));
        let (sample, stdout) = ctx.run_json(client, &sandbox, host, &[], "Say hello")?;
        let lines = json_lines(&stdout)?;
        let text = streamed_text(&lines);
        ensure!(text == ANSWER, "{} streamed {text:?}", client.name());
        ensure_settled(&lines)?;
        runs.push(sample);
    }
    let (fw, _, frss) = medians(&floor);
    let (wall, cpu, rss) = medians(&runs);
    let mib = |k: u64| k as f64 / 1024.0;
    report.line(format!(
        "{}: wall {:.1} ms, CPU {:.1} ms{}; floor wall {:.1} ms{} (medians of {})",
        client.name(),
        ms(wall),
        ms(cpu),
        rss.map(|k| format!(", peak RSS {:.1} MiB", mib(k)))
            .unwrap_or_default(),
        ms(fw),
        frss.map(|k| format!(", RSS {:.1} MiB", mib(k)))
            .unwrap_or_default(),
        runs.len()
    ));
    Ok(Above {
        wall: ms(wall.saturating_sub(fw)),
        rss: rss.zip(frss).map(|(a, f)| mib(a.saturating_sub(f))),
    })
}
