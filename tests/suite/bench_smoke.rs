//! Smoke runs of every benchmark scenario (BENCH.md) at small sizes, through the same kit the
//! benchmark uses (`benches/kit`), so the benchmarks never rot: each run checks agent-lsp's
//! output in full (every delta, every event of every session, every tool result, the mirror
//! after the edits, the resumed session). Timing bars are not asserted here (tests are not
//! benchmarks); the ordering bar is.

#[path = "../../benches/kit/mod.rs"]
mod kit;

use std::path::PathBuf;
use std::time::Duration;

use kit::Ctx;
use kit::measure::{median, percentile};
use kit::report::Report;

fn ctx() -> Ctx {
    Ctx::smoke(PathBuf::from(env!("CARGO_BIN_EXE_agent-lsp")), 1)
}

fn bar<'a>(report: &'a Report, what: &str) -> &'a kit::report::Bar {
    report
        .bars
        .iter()
        .find(|b| b.what == what)
        .unwrap_or_else(|| panic!("no bar {what:?} in {}", report.text()))
}

fn assert_measured(report: &Report) {
    for b in &report.bars {
        assert!(
            b.measured.is_finite() && b.measured >= 0.0,
            "{}",
            report.text()
        );
    }
}

#[test]
fn scenario_1_cold_tiny_turn() {
    let report = kit::s1_cold::run(&ctx()).unwrap();
    assert_measured(&report);
    bar(&report, "wall above the floor");
}

#[test]
fn scenario_2_streamed_answer() {
    let size = kit::s2_stream::Size {
        deltas: 500,
        delta_bytes: 4,
    };
    let report = kit::s2_stream::run(&ctx(), size).unwrap();
    assert_measured(&report);
    bar(&report, "`run --json` wall / floor wall");
    bar(&report, "daemon wall / floor wall");
    bar(&report, "`run --json` CPU per delta");
    bar(&report, "daemon CPU per delta");
}

#[test]
fn scenario_8_acp_first_chunk_and_streamed_answer() {
    let size = kit::s2_stream::Size {
        deltas: 500,
        delta_bytes: 4,
    };
    let report = kit::s8_acp::run(&ctx(), size).unwrap();
    assert_measured(&report);
    bar(
        &report,
        "ACP prompt → first chunk, above the mock's first byte",
    );
    bar(&report, "ACP wall / floor wall");
    bar(&report, "ACP CPU per delta");
}

#[test]
fn scenario_4_tool_turns() {
    let report = kit::s4_turns::run(&ctx(), 3).unwrap();
    assert_measured(&report);
    bar(&report, "wall above the floor per turn");
}

#[test]
fn scenario_5_daemon_edits_on_a_large_document() {
    let size = kit::s5_edits::Size {
        doc_bytes: 200_000,
        edits: 20,
    };
    let report = kit::s5_edits::run(&ctx(), size).unwrap();
    assert_measured(&report);
    bar(&report, "p50 server time per edit");
    bar(&report, "p99 server time per edit");
}

#[test]
fn scenario_6_daemon_concurrent_sessions() {
    let size = kit::s6_sessions::Size {
        sessions: 4,
        deltas: 200,
    };
    let report = kit::s6_sessions::run(&ctx(), size).unwrap();
    assert_measured(&report);
    let lost = bar(&report, "events lost or out of order");
    assert!(lost.met(), "{}", report.text());
}

#[test]
fn scenario_7_resume_of_a_long_session() {
    let report = kit::s7_resume::run(&ctx(), 120).unwrap();
    assert_measured(&report);
    bar(&report, "resume + one turn, wall above the floor");
}

#[test]
fn statistics_pick_the_middle_and_the_rank() {
    let ms = |v: &[u64]| {
        v.iter()
            .map(|m| Duration::from_millis(*m))
            .collect::<Vec<_>>()
    };
    assert_eq!(median(ms(&[5, 1, 3])), Duration::from_millis(3));
    assert_eq!(median(ms(&[4, 1, 3, 2])), Duration::from_millis(2));
    let hundred: Vec<u64> = (1..=100).collect();
    assert_eq!(percentile(ms(&hundred), 50.0), Duration::from_millis(50));
    assert_eq!(percentile(ms(&hundred), 99.0), Duration::from_millis(99));
    assert_eq!(percentile(Vec::new(), 99.0), Duration::ZERO);
}

#[test]
fn floor_client_reads_a_whole_stream_and_rejects_errors() {
    let host = kit::MockHost::start().unwrap();
    host.push(agent_lsp::testing::MockResponse::text("floor"));
    let bytes = kit::floor::fetch(&host.addr(), 1).unwrap();
    assert!(bytes > 100, "only {bytes} bytes");
    // The script is empty now: the mock answers 500, which the floor must not count as a run.
    let err = kit::floor::fetch(&host.addr(), 1).unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
}
