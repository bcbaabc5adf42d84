//! Scenario 3: one `write` call whose content streams as 8-byte argument deltas, at a base size
//! and twice that (200 KB in ~25,000 deltas, then 400 KB in ~50,000 at full size). Bar: time
//! grows linearly (2× input → ≤ 2.2× time). Each run also proves the file was written whole.
//!
//! The two sizes are interleaved within each repetition (floor and agent-lsp at 1×, then at
//! 2×, then 1× again, …) rather than all repetitions of 1× before all of 2×: a drift of the
//! machine's speed during the run (other processes on the two cores, frequency) then lands on
//! both sizes alike instead of on one side of the ratio. The bar is the median of the ratios
//! of each repetition (its two agent runs lie within half a second), over at least 41.

use agent_lsp::testing::MockResponse;
use anyhow::ensure;
use serde_json::json;

use super::measure::{Ratios, Sample, ms};
use super::report::{Bar, Report};
use super::{Ctx, MockHost, Sandbox, deltas_of, ensure_settled, json_lines, medians};

pub const FULL_BASE_BYTES: usize = 200_000;
const DELTA_BYTES: usize = 8;

/// Source-like content of `bytes` bytes (with newlines, so JSON escaping is exercised).
pub fn content(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "    let value_{i} = compute({i}, \"tab\\there\");\n"
        ));
        i += 1;
    }
    text.truncate(bytes);
    text
}

fn responses(content: &str) -> [MockResponse; 2] {
    let call = MockResponse {
        chunk_size: Some(DELTA_BYTES),
        ..MockResponse::tool_call(
            "call_write",
            "write",
            json!({"path": "out.txt", "content": content}),
        )
    };
    [call, MockResponse::text("Written.")]
}

/// One size's samples: floor, agent-lsp, and the number of argument deltas.
#[derive(Default)]
struct Size {
    floor: Vec<Sample>,
    agent: Vec<Sample>,
    deltas: usize,
}

/// One repetition at one size: the floor, then agent-lsp (checked: settled, file whole).
fn measure_once(
    ctx: &Ctx,
    host: &MockHost,
    sandbox: &Sandbox,
    content: &str,
    size: &mut Size,
) -> anyhow::Result<()> {
    for r in responses(content) {
        host.push(r);
    }
    size.floor.push(ctx.floor(host, 2)?);
    for r in responses(content) {
        host.push(r);
    }
    let _ = std::fs::remove_file(sandbox.project().join("out.txt"));
    let (sample, stdout) = ctx.run_agent(sandbox, host, &["--approve", "all"], "Write out.txt")?;
    let lines = json_lines(&stdout)?;
    ensure_settled(&lines)?;
    size.deltas = deltas_of(&lines, "toolcall_delta").count();
    let written = std::fs::read_to_string(sandbox.project().join("out.txt"))?;
    ensure!(
        written == content,
        "out.txt differs from the streamed content"
    );
    size.agent.push(sample);
    Ok(())
}

/// Both sizes, interleaved within each repetition (see the module documentation).
fn measure(ctx: &Ctx, base_bytes: usize) -> anyhow::Result<[Size; 2]> {
    let host = MockHost::start()?;
    let sandbox = Sandbox::new()?;
    let contents = [content(base_bytes), content(2 * base_bytes)];
    let mut sizes = [Size::default(), Size::default()];
    for _ in 0..ctx.ratio_reps() {
        for (content, size) in contents.iter().zip(sizes.iter_mut()) {
            measure_once(ctx, &host, &sandbox, content, size)?;
        }
    }
    Ok(sizes)
}

pub fn run(ctx: &Ctx, base_bytes: usize) -> anyhow::Result<Report> {
    let [one, two] = measure(ctx, base_bytes)?;
    let (d1, d2) = (one.deltas, two.deltas);
    let ((fw1, ..), (aw1, ac1, _)) = (medians(&one.floor), medians(&one.agent));
    let ((fw2, ..), (aw2, ac2, _)) = (medians(&two.floor), medians(&two.agent));
    let mut report = Report::new(format!(
        "3. One `write` call streaming {} KB, then {} KB, in {DELTA_BYTES}-byte argument deltas",
        base_bytes / 1000,
        2 * base_bytes / 1000
    ));
    for (bytes, deltas, aw, ac, fw) in [
        (base_bytes, d1, aw1, ac1, fw1),
        (2 * base_bytes, d2, aw2, ac2, fw2),
    ] {
        report.line(format!(
            "{} KB in {deltas} deltas: agent wall {:.1} ms, CPU {:.1} ms; floor wall {:.1} ms \
             (median of {})",
            bytes / 1000,
            ms(aw),
            ms(ac),
            ms(fw),
            one.agent.len()
        ));
    }
    let above = |a: std::time::Duration, f: std::time::Duration| ms(a.saturating_sub(f));
    report.line(format!(
        "time above the floor: {:.1} ms → {:.1} ms; CPU ratio {:.2}×",
        above(aw1, fw1),
        above(aw2, fw2),
        ac2.as_secs_f64() / ac1.as_secs_f64().max(1e-9)
    ));
    let per_rep = |a: &[Sample], b: &[Sample]| {
        Ratios::new(
            a.iter()
                .zip(b)
                .map(|(a, b)| b.wall.as_secs_f64() / a.wall.as_secs_f64().max(1e-9))
                .collect(),
        )
    };
    let agent = per_rep(&one.agent, &two.agent);
    report.line(format!(
        "wall(2×) / wall(1×) per repetition (the bar is their median): {}; the floor's: {}",
        agent.listed(),
        per_rep(&one.floor, &two.floor).listed()
    ));
    report.bar(Bar::new(
        "wall(2× input) / wall(1× input)",
        agent.median(),
        2.2,
        "×",
    ));
    Ok(report)
}
