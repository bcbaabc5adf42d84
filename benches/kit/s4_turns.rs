//! Scenario 4: many turns of tool calls (the model reads a small file each turn, from a
//! different line, then answers).
//! The floor replays the client's own request bodies for the same streams, so the mock's work
//! (reading and checking each request's history) is the same on both sides. Bar: agent-lsp's
//! wall above the floor, per turn, ≤ 2 ms. pi runs the same turns, against a floor replaying
//! pi's bodies.

use agent_lsp::testing::MockResponse;
use anyhow::ensure;
use serde_json::json;

use super::measure::{Sample, ms};
use super::report::{Bar, Report};
use super::{Client, Ctx, MockHost, Sandbox, ensure_settled, json_lines, medians};

pub const FULL_TURNS: usize = 100;

fn responses(turns: usize) -> Vec<MockResponse> {
    let mut all: Vec<MockResponse> = (0..turns)
        .map(|i| {
            // From a different line each turn: the same call six times in a row is a runaway
            // loop, which the session's loop guard stops.
            let args = json!({"path": "notes.txt", "offset": 1 + i % 20});
            MockResponse::tool_call(&format!("call_{i}"), "read", args)
        })
        .collect();
    all.push(MockResponse::text("The notes say hello."));
    all
}

pub fn run(ctx: &Ctx, turns: usize) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let mut report = Report::new(format!("4 {turns} tool-call turns"));
    let ours = measure(ctx, &host, Client::AgentLsp, turns, &mut report)?;
    let pi = ctx
        .pi
        .as_ref()
        .map(|pi| measure(ctx, &host, Client::Pi(pi), turns, &mut report));
    let pi = pi.transpose()?;
    ensure!(
        host.mock.violations().is_empty(),
        "the mock saw invalid histories: {:?}",
        host.mock.violations()
    );
    report.bar(
        Bar::new("wall above the floor per turn", ours, 2.0, "ms").pi(ctx.pi_figure(pi, "ms")),
    );
    Ok(report)
}

/// `client`'s runs and their floors; one detail line; the median wall above the floor per turn.
fn measure(
    ctx: &Ctx,
    host: &MockHost,
    client: Client,
    turns: usize,
    report: &mut Report,
) -> anyhow::Result<f64> {
    let sandbox = Sandbox::new()?;
    std::fs::write(
        sandbox.project().join("notes.txt"),
        "hello\nfrom a small file\n".repeat(20),
    )?;
    let (mut floor, mut runs): (Vec<Sample>, Vec<Sample>) = (Vec::new(), Vec::new());
    for _ in 0..ctx.reps_for(client) {
        let before = host.mock.requests().len();
        responses(turns).into_iter().for_each(|r| host.push(r));
        let (sample, stdout) = ctx.run_json(client, &sandbox, host, &[], "Read the notes")?;
        // The floor sends the very bodies the client sent: the mock reads and checks a history
        // that grows every turn, and that work is the mock's, not the client's.
        let bodies: Vec<String> = host.mock.requests()[before..]
            .iter()
            .map(|r| r.body.to_string())
            .collect();
        ensure!(
            bodies.len() == turns + 1,
            "{} made {} requests for {turns} turns",
            client.name(),
            bodies.len()
        );
        responses(turns).into_iter().for_each(|r| host.push(r));
        floor.push(ctx.floor_replay(host, &bodies)?);
        let lines = json_lines(&stdout)?;
        ensure_settled(&lines)?;
        let reads = lines
            .iter()
            .filter(|l| {
                l.get("type").and_then(|t| t.as_str()) == Some("tool_execution_end")
                    && l.get("isError").and_then(|e| e.as_bool()) == Some(false)
            })
            .count();
        ensure!(
            reads == turns,
            "{}: {reads} successful reads in {turns} turns",
            client.name()
        );
        runs.push(sample);
    }
    let (fw, ..) = medians(&floor);
    let (wall, cpu, rss) = medians(&runs);
    report.line(format!(
        "{}: wall {:.1} ms, CPU {:.1} ms{}; floor ({} requests, its bodies replayed) {:.1} ms \
         (medians of {})",
        client.name(),
        ms(wall),
        ms(cpu),
        rss.map(|k| format!(", peak RSS {:.1} MiB", k as f64 / 1024.0))
            .unwrap_or_default(),
        turns + 1,
        ms(fw),
        runs.len()
    ));
    Ok(ms(wall.saturating_sub(fw)) / turns as f64)
}
