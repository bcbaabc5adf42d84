//! Scenario 2: a long answer streamed as many small deltas (400 KB in 100,000 deltas at full
//! size), through `run --json` (every delta a JSONL line) and through the daemon (a new
//! session per prompt, `$/agentEvent` with default options). Bars: wall ≤ 1.3 × the floor's (a
//! plain client reading the same stream from the same mock), for both; CPU per delta printed.
//!
//! Each repetition runs the floor, `run --json` and the daemon back to back (the floor first
//! in even repetitions, last in odd ones), and the bars are the medians of the per-repetition
//! ratios over at least 41 repetitions: this machine's speed drifts between seconds, and a
//! ratio of two runs a fraction of a second apart absorbs that. pi (`--mode json`) streams the
//! same answer, paired with floor runs of its own.

use std::time::Duration;

use agent_lsp::testing::MockResponse;
use anyhow::ensure;

use super::lsp::{Daemon, EventCheck};
use super::measure::{Ratios, median, ms};
use super::report::{Bar, Report};
use super::{Client, Ctx, MockHost, Sandbox, deltas_of, ensure_settled, json_lines, streamed_text};

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

const BAR: f64 = 1.3;

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

pub fn response(text: &str, size: Size) -> MockResponse {
    MockResponse {
        chunk_size: Some(size.delta_bytes),
        ..MockResponse::text(text)
    }
}

/// One side's runs: walls and CPU times, and the mock's own time writing each answer.
#[derive(Default)]
struct Side {
    walls: Vec<Duration>,
    cpu: Duration,
    serving: Vec<Duration>,
}

impl Side {
    fn ratios(&self, floor: &Side) -> Ratios {
        Ratios::new(
            self.walls
                .iter()
                .zip(&floor.walls)
                .map(|(a, f)| a.as_secs_f64() / f.as_secs_f64().max(1e-9))
                .collect(),
        )
    }

    /// Microseconds of CPU per provider delta.
    fn cpu_per_delta(&self, size: Size) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / (self.walls.len() * size.deltas).max(1) as f64
    }

    fn median_wall(&self) -> f64 {
        ms(median(self.walls.clone()))
    }
}

/// The runs of one scenario: what the host serves and checks, and the sandbox both use.
struct Bench<'a> {
    ctx: &'a Ctx,
    host: MockHost,
    sandbox: Sandbox,
    text: String,
    size: Size,
}

impl Bench<'_> {
    /// Runs `measure` with the answer queued; records its wall, CPU and the mock's time.
    fn side(
        &self,
        side: &mut Side,
        measure: impl FnOnce() -> anyhow::Result<(Duration, Duration)>,
    ) -> anyhow::Result<()> {
        let writes = self.host.writes();
        self.host.push(response(&self.text, self.size));
        let (wall, cpu) = measure()?;
        side.walls.push(wall);
        side.cpu += cpu;
        side.serving.push(self.host.write_time(writes)?);
        Ok(())
    }

    fn floor(&self, side: &mut Side) -> anyhow::Result<()> {
        self.side(side, || {
            let sample = self.ctx.floor(&self.host, 1)?;
            Ok((sample.wall, sample.cpu))
        })
    }

    fn json(&self, client: Client, side: &mut Side) -> anyhow::Result<()> {
        self.side(side, || {
            let (sample, stdout) =
                self.ctx
                    .run_json(client, &self.sandbox, &self.host, &[], "Write it all")?;
            check_stream(&stdout, &self.text, self.size, client)?;
            Ok((sample.wall, sample.cpu))
        })
    }

    fn daemon(
        &self,
        daemon: &mut Daemon,
        check: &mut EventCheck,
        side: &mut Side,
    ) -> anyhow::Result<()> {
        let session = daemon.new_session(&self.sandbox.project())?;
        self.side(side, || {
            let cpu = daemon.cpu()?;
            let (wall, events) = daemon.prompt_all(std::slice::from_ref(&session))?;
            let cpu = daemon.cpu()?.saturating_sub(cpu);
            check.check(&events, std::slice::from_ref(&self.text))?;
            ensure!(
                check.anomalies == 0,
                "the daemon lost, reordered or garbled events"
            );
            Ok((wall, cpu))
        })
    }
}

pub fn run(ctx: &Ctx, size: Size) -> anyhow::Result<Report> {
    let bench = Bench {
        ctx,
        host: MockHost::start()?,
        sandbox: Sandbox::new()?,
        text: answer(size),
        size,
    };
    let project = bench.sandbox.project();
    let mut daemon = Daemon::spawn(&ctx.agent_bin, &bench.sandbox.env(&bench.host), &project)?;
    daemon.initialize(&project, false)?;
    let (mut floor, mut json, mut lsp) = (Side::default(), Side::default(), Side::default());
    let mut check = EventCheck::default();
    for rep in 0..ctx.ratio_reps() {
        if rep % 2 == 0 {
            bench.floor(&mut floor)?;
        }
        bench.json(Client::AgentLsp, &mut json)?;
        bench.daemon(&mut daemon, &mut check, &mut lsp)?;
        if rep % 2 == 1 {
            bench.floor(&mut floor)?;
        }
    }
    daemon.shutdown()?;
    let pi = match &ctx.pi {
        Some(pi) => {
            let (mut pi_floor, mut pi_json) = (Side::default(), Side::default());
            for _ in 0..ctx.reps_for(Client::Pi(pi)) {
                bench.floor(&mut pi_floor)?;
                bench.json(Client::Pi(pi), &mut pi_json)?;
            }
            Some((pi_floor, pi_json))
        }
        None => None,
    };

    let mut report = Report::new(format!(
        "2 a {} KB answer in {} deltas",
        size.deltas * size.delta_bytes / 1000,
        size.deltas
    ));
    let served = |side: &Side| ms(median(side.serving.clone()));
    report.line(format!(
        "{} repetitions, medians: floor {:.1} ms, `run --json` {:.1} ms, daemon {:.1} ms; \
         the mock's own time writing the answer: {:.1} / {:.1} / {:.1} ms",
        floor.walls.len(),
        floor.median_wall(),
        json.median_wall(),
        lsp.median_wall(),
        served(&floor),
        served(&json),
        served(&lsp),
    ));
    let (json_ratios, lsp_ratios) = (json.ratios(&floor), lsp.ratios(&floor));
    report.line(format!(
        "per-repetition ratios: `run --json` {}; daemon {}",
        json_ratios.summary(),
        lsp_ratios.summary()
    ));
    report.line(format!(
        "daemon: {} events checked, {} text-delta notifications for {} provider deltas",
        check.events,
        check.notifications,
        lsp.walls.len() * size.deltas
    ));
    if let Some((pi_floor, pi_json)) = &pi {
        report.line(format!(
            "pi: {:.1} ms (median of {}), floor {:.1} ms",
            pi_json.median_wall(),
            pi_json.walls.len(),
            pi_floor.median_wall()
        ));
    }
    let pi_ratio = pi.as_ref().map(|(f, j)| j.ratios(f).median());
    let pi_cpu = pi.as_ref().map(|(_, j)| j.cpu_per_delta(size));
    report.bar(
        Bar::new(
            "`run --json` wall / floor wall",
            json_ratios.median(),
            BAR,
            "×",
        )
        .pi(ctx.pi_figure(pi_ratio, "×")),
    );
    report.bar(
        Bar::new("daemon wall / floor wall", lsp_ratios.median(), BAR, "×")
            .pi("n/a: no LSP daemon"),
    );
    report.bar(
        Bar::figure("`run --json` CPU per delta", json.cpu_per_delta(size), "µs")
            .pi(ctx.pi_figure(pi_cpu, "µs")),
    );
    report.bar(
        Bar::figure("daemon CPU per delta", lsp.cpu_per_delta(size), "µs").pi("n/a: no LSP daemon"),
    );
    Ok(report)
}

/// Every delta arrived, in order, as its own event, and the run settled.
fn check_stream(stdout: &[u8], text: &str, size: Size, client: Client) -> anyhow::Result<()> {
    let lines = json_lines(stdout)?;
    ensure_settled(&lines)?;
    let streamed = streamed_text(&lines);
    ensure!(
        streamed == text,
        "{} streamed {} bytes, expected {}",
        client.name(),
        streamed.len(),
        text.len()
    );
    let count = deltas_of(&lines, "text_delta").count();
    ensure!(
        count == size.deltas,
        "{} printed {count} text delta events for {} deltas",
        client.name(),
        size.deltas
    );
    Ok(())
}
