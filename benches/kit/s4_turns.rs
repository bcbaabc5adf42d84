//! Scenario 4: many turns of tool calls (the model reads a small file each turn, then answers).
//! The floor replays the agent's own request bodies for the same streams, so the mock's work
//! (reading and checking each request's history) is the same on both sides. Bar: agent-lsp's
//! wall above the floor, per turn, ≤ 1 ms.

use agent_lsp::testing::MockResponse;
use anyhow::ensure;
use serde_json::json;

use super::measure::ms;
use super::report::{Bar, Report};
use super::{Ctx, MockHost, Sandbox, ensure_settled, json_lines, medians};

pub const FULL_TURNS: usize = 100;

fn responses(turns: usize) -> Vec<MockResponse> {
    let mut all: Vec<MockResponse> = (0..turns)
        .map(|i| {
            MockResponse::tool_call(&format!("call_{i}"), "read", json!({"path": "notes.txt"}))
        })
        .collect();
    all.push(MockResponse::text("The notes say hello."));
    all
}

pub fn run(ctx: &Ctx, turns: usize) -> anyhow::Result<Report> {
    let host = MockHost::start()?;
    let sandbox = Sandbox::new()?;
    std::fs::write(
        sandbox.project().join("notes.txt"),
        "hello\nfrom a small file\n".repeat(20),
    )?;
    let (mut floor, mut agent) = (Vec::new(), Vec::new());
    for _ in 0..ctx.reps {
        let before = host.mock.requests().len();
        responses(turns).into_iter().for_each(|r| host.push(r));
        let (sample, stdout) = ctx.run_agent(&sandbox, &host, &[], "Read the notes")?;
        // The floor sends the very bodies the agent sent: the mock reads and checks a history
        // that grows every turn, and that work is the mock's, not agent-lsp's.
        let bodies: Vec<String> = host.mock.requests()[before..]
            .iter()
            .map(|r| r.body.to_string())
            .collect();
        ensure!(
            bodies.len() == turns + 1,
            "{} requests for {} turns",
            bodies.len(),
            turns
        );
        responses(turns).into_iter().for_each(|r| host.push(r));
        floor.push(ctx.floor_replay(&host, &bodies)?);
        let lines = json_lines(&stdout)?;
        ensure_settled(&lines)?;
        let reads = lines
            .iter()
            .filter(|l| {
                l.get("type").and_then(|t| t.as_str()) == Some("tool_execution_end")
                    && l.get("isError").and_then(|e| e.as_bool()) == Some(false)
            })
            .count();
        ensure!(reads == turns, "{reads} successful reads in {turns} turns");
        agent.push(sample);
    }
    ensure!(
        host.mock.violations().is_empty(),
        "the mock saw invalid histories: {:?}",
        host.mock.violations()
    );
    let (fw, ..) = medians(&floor);
    let (aw, acpu, arss) = medians(&agent);
    let mut report = Report::new(format!(
        "4. {turns} turns of tool calls (read, then answer)"
    ));
    report.line(format!(
        "median of {}: agent wall {:.1} ms, CPU {:.1} ms{}; floor ({} requests, the agent's bodies replayed) wall {:.1} ms",
        ctx.reps,
        ms(aw),
        ms(acpu),
        arss.map(|k| format!(", peak RSS {:.1} MiB", k as f64 / 1024.0))
            .unwrap_or_default(),
        turns + 1,
        ms(fw)
    ));
    report.bar(Bar::new(
        "wall above the floor per turn",
        ms(aw.saturating_sub(fw)) / turns as f64,
        1.0,
        "ms",
    ));
    Ok(report)
}
