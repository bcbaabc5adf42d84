//! The scenario benchmarks (see BENCH.md): agent-lsp's own cost measured against the floor of
//! just serving the model's stream, in the same run, with pi's figures on the same mock beside
//! them when pi is installed (`AGENT_LSP_BENCH_PI_NODE`, `AGENT_LSP_BENCH_PI_CLI`; scripts/bench.sh
//! installs it).
//!
//! `cargo bench --bench agent [-- [SCENARIO…] [--reps N] [--quick] [--edits N] [--markdown FILE]]`
//! (SCENARIO: 1 cold, 2 stream, 4 turns, 5 daemon edits, 6 daemon sessions, 7 resume, 8 ACP; default
//! all; 3 was retired with its bar). `--quick` uses the smoke sizes. Exits 1 when a bar is
//! missed.
//! Without `--bench` (as `cargo test --all-targets` runs it) it only says how to run it. The
//! binary also serves as its own measuring wrapper (`__measure`) and floor client (`__floor`);
//! see `kit/measure.rs`.

mod kit;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use kit::measure::{self, Runner};
use kit::report::{Report, TABLE_HEAD};
use kit::{Ctx, Pi, floor};

/// The order of a full run: the scenarios whose bars are absolute times (per turn, per edit,
/// a resume) before the long ratio scenario 2. After a minute of both cores busy, this VM runs
/// slower for a while; a ratio to a floor taken in the same moment absorbs that, an absolute
/// time does not (BENCH.md, "Machine and conditions").
const SCENARIOS: [&str; 7] = ["1", "4", "5", "7", "2", "6", "8"];

struct Options {
    scenarios: Vec<String>,
    reps: usize,
    quick: bool,
    markdown: Option<PathBuf>,
    /// Scenario 5's number of edits instead of the full 1,000.
    edits: Option<usize>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("__measure") => measure::measure_main(&args[1..]).map(|()| true),
        Some("__floor") => floor::floor_main(&args[1..]).map(|()| true),
        // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary too (debug
        // build, libtest arguments), where the smoke tests stand in for it.
        _ if !args.iter().any(|a| a == "--bench") => {
            println!(
                "agent benchmarks: run with `cargo bench --bench agent` (or pass --bench); \
                 their smoke versions are tests/suite/bench_smoke.rs"
            );
            Ok(true)
        }
        _ => parse(&args).and_then(|o| run(&o)),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("bench: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options {
        scenarios: Vec::new(),
        reps: 7,
        quick: false,
        markdown: None,
        edits: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            // cargo bench passes --bench to every harness-less benchmark.
            "--bench" => {}
            "--quick" => options.quick = true,
            "--reps" => {
                options.reps = it
                    .next()
                    .context("--reps needs a number")?
                    .parse()
                    .context("--reps needs a number")?
            }
            "--edits" => {
                options.edits = Some(
                    it.next()
                        .context("--edits needs a number")?
                        .parse()
                        .context("--edits needs a number")?,
                )
            }
            "--markdown" => options.markdown = Some(it.next().context("--markdown FILE")?.into()),
            s if SCENARIOS.contains(&s) => options.scenarios.push(s.into()),
            other => bail!(
                "unknown argument {other:?} (scenarios: {})",
                SCENARIOS.join(" ")
            ),
        }
    }
    if options.scenarios.is_empty() {
        options.scenarios = SCENARIOS.map(String::from).to_vec();
    }
    Ok(options)
}

fn run(options: &Options) -> anyhow::Result<bool> {
    let exe = std::env::current_exe().context("cannot find the benchmark's own executable")?;
    let ctx = Ctx {
        // A profiler wrapper (e.g. a script running `strace -f -o … agent-lsp "$@"`) can stand
        // in for the binary.
        agent_bin: std::env::var_os("AGENT_LSP_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_agent-lsp"))),
        runner: Runner::Wrapper(exe.clone()),
        floor_exe: Some(exe),
        reps: options.reps,
        pi: Pi::from_env(),
    };
    println!("{}", machine());
    match &ctx.pi {
        Some(pi) => println!("pi: {} {}", pi.node.display(), pi.cli.display()),
        None => println!(
            "pi: not run (AGENT_LSP_BENCH_PI_NODE and _CLI unset; scripts/bench.sh sets them)"
        ),
    }
    let mut table = String::from(TABLE_HEAD);
    let mut all_met = true;
    for scenario in &options.scenarios {
        println!("\n[{}] load average {}", now(), load());
        let report = scenario_report(&ctx, scenario, options)
            .with_context(|| format!("scenario {scenario}"))?;
        all_met &= report.all_met();
        print!("{}", report.text());
        table.push_str(&report.table_rows());
    }
    println!("\n[{}] load average {}\n\n{table}", now(), load());
    if let Some(path) = &options.markdown {
        std::fs::write(path, &table)?;
    }
    println!(
        "{}",
        if all_met {
            "all bars met"
        } else {
            "SOME BARS MISSED"
        }
    );
    Ok(all_met)
}

fn scenario_report(ctx: &Ctx, scenario: &str, options: &Options) -> anyhow::Result<Report> {
    let pick = |full: usize, small: usize| if options.quick { small } else { full };
    match scenario {
        "1" => kit::s1_cold::run(ctx),
        "2" => {
            let size = kit::s2_stream::Size {
                deltas: pick(kit::s2_stream::FULL.deltas, 2_000),
                ..kit::s2_stream::FULL
            };
            kit::s2_stream::run(ctx, size)
        }
        "4" => kit::s4_turns::run(ctx, pick(kit::s4_turns::FULL_TURNS, 5)),
        "5" => {
            let size = kit::s5_edits::Size {
                doc_bytes: pick(kit::s5_edits::FULL.doc_bytes, 200_000),
                edits: options.edits.unwrap_or(pick(kit::s5_edits::FULL.edits, 20)),
            };
            kit::s5_edits::run(ctx, size)
        }
        "6" => {
            let size = kit::s6_sessions::Size {
                sessions: pick(kit::s6_sessions::FULL.sessions, 4),
                deltas: pick(kit::s6_sessions::FULL.deltas, 200),
            };
            kit::s6_sessions::run(ctx, size)
        }
        "7" => kit::s7_resume::run(ctx, pick(kit::s7_resume::FULL_MESSAGES, 200)),
        "8" => {
            let size = kit::s2_stream::Size {
                deltas: pick(kit::s2_stream::FULL.deltas, 2_000),
                ..kit::s2_stream::FULL
            };
            kit::s8_acp::run(ctx, size)
        }
        other => bail!("no scenario {other}"),
    }
}

/// The machine line of the report: CPU model, cores, kernel.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("Machine: {model}, {cores} cores, Linux {}", kernel.trim())
}

/// `/proc/loadavg`'s three averages: the machine is shared, and a result measured under load
/// says so.
fn load() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The time of day (UTC), to match a result with the machine's load at the time.
fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "{:02}:{:02}:{:02} UTC",
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}
