//! Measuring one child process: wall time, CPU time, peak RSS and the bytes it writes on stdout.
//!
//! Peak RSS of one child needs its own rusage, which only `wait4` gives and std does not expose
//! (and this crate forbids `unsafe`). So the benchmark re-executes itself as a wrapper
//! (`agent __measure …`): the wrapper has exactly one child, so `getrusage(RUSAGE_CHILDREN)`
//! after waiting is that child's own usage. Without a wrapper (the smoke tests), CPU comes from
//! `RUSAGE_CHILDREN` deltas of this process (inexact when tests run in parallel) and peak RSS is
//! unknown: the smoke tests check the machinery, never the numbers.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::resource::{UsageWho, getrusage};
use serde_json::{Value, json};

/// A command to measure: program, arguments, environment (on top of a cleared one), directory.
#[derive(Clone, Debug)]
pub struct Cmd {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

/// What one run cost.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub wall: Duration,
    /// User + system time of the child.
    pub cpu: Duration,
    /// Peak resident set of the child, when measured through the wrapper.
    pub max_rss_kib: Option<u64>,
    pub stdout_bytes: u64,
}

/// How children are measured.
#[derive(Clone, Debug)]
pub enum Runner {
    /// Spawned directly by this process (smoke tests): no per-child peak RSS.
    Direct,
    /// Through `<exe> __measure`, for exact per-child rusage (the benchmark).
    Wrapper(PathBuf),
}

impl Runner {
    /// Runs `cmd` to completion; returns its cost and its stdout. A non-zero exit is an error
    /// carrying the child's stderr, so a broken scenario never reports numbers.
    pub fn run(&self, cmd: &Cmd) -> anyhow::Result<(Sample, Vec<u8>)> {
        match self {
            Runner::Direct => run_direct(cmd),
            Runner::Wrapper(exe) => run_wrapped(exe, cmd),
        }
    }
}

fn command(program: &Path, args: &[String], cmd: &Cmd) -> Command {
    let mut c = Command::new(program);
    c.args(args)
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn cpu_of(usage: &nix::sys::resource::Usage) -> Duration {
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().max(0) as u64)
            + Duration::from_micros(t.tv_usec().max(0) as u64)
    };
    tv(usage.user_time()) + tv(usage.system_time())
}

fn run_direct(cmd: &Cmd) -> anyhow::Result<(Sample, Vec<u8>)> {
    let before = cpu_of(&getrusage(UsageWho::RUSAGE_CHILDREN)?);
    let started = Instant::now();
    let mut child = command(&cmd.program, &cmd.args, cmd)
        .spawn()
        .with_context(|| format!("cannot start {}", cmd.program.display()))?;
    let stderr = drain_in_background(child.stderr.take());
    let mut stdout = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut stdout)?;
    }
    let status = child.wait()?;
    let wall = started.elapsed();
    let after = cpu_of(&getrusage(UsageWho::RUSAGE_CHILDREN)?);
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        bail!(
            "{} exited with {status}: {}",
            cmd.program.display(),
            String::from_utf8_lossy(&stderr)
        );
    }
    let sample = Sample {
        wall,
        cpu: after.saturating_sub(before),
        max_rss_kib: None,
        stdout_bytes: stdout.len() as u64,
    };
    Ok((sample, stdout))
}

fn drain_in_background(
    pipe: Option<std::process::ChildStderr>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        buf
    })
}

fn run_wrapped(exe: &Path, cmd: &Cmd) -> anyhow::Result<(Sample, Vec<u8>)> {
    let out_file = tempfile::NamedTempFile::new()?;
    let mut args = vec![
        "__measure".to_string(),
        out_file.path().display().to_string(),
        cmd.program.display().to_string(),
    ];
    args.extend(cmd.args.iter().cloned());
    let output = command(exe, &args, cmd).output()?;
    if !output.status.success() {
        bail!(
            "{} failed: {}",
            cmd.program.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let report: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| "the measuring wrapper printed no report")?;
    let field = |name: &str| report.get(name).and_then(Value::as_u64).unwrap_or(0);
    let sample = Sample {
        wall: Duration::from_micros(field("wallUs")),
        cpu: Duration::from_micros(field("cpuUs")),
        max_rss_kib: Some(field("maxRssKib")),
        stdout_bytes: field("stdoutBytes"),
    };
    let stdout = std::fs::read(out_file.path())?;
    Ok((sample, stdout))
}

/// The wrapper's entry point: `__measure STDOUT_FILE PROGRAM ARGS…`. Runs the program with this
/// process's environment, copies its stdout to the file, prints a JSON report on stdout.
pub fn measure_main(args: &[String]) -> anyhow::Result<()> {
    let [out_path, program, rest @ ..] = args else {
        bail!("usage: __measure STDOUT_FILE PROGRAM [ARGS…]");
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(out_path)?);
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let mut bytes = 0u64;
    if let Some(mut pipe) = child.stdout.take() {
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = pipe.read(&mut buf)?;
            if n == 0 {
                break;
            }
            bytes += n as u64;
            out.write_all(&buf[..n])?;
        }
    }
    let status = child.wait()?;
    let wall = started.elapsed();
    out.flush()?;
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    if !status.success() {
        bail!("{program} exited with {status}");
    }
    let report = json!({
        "wallUs": wall.as_micros() as u64,
        "cpuUs": cpu_of(&usage).as_micros() as u64,
        "maxRssKib": usage.max_rss().max(0) as u64,
        "stdoutBytes": bytes,
    });
    println!("{report}");
    Ok(())
}

/// The median of some durations (the lower middle for an even count).
pub fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or_default()
}

/// A percentile (0–100) by nearest rank.
pub fn percentile(mut values: Vec<Duration>, p: f64) -> Duration {
    values.sort();
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// Milliseconds with fractions, for reports.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Per-repetition ratios, sorted: their median is the bar of a ratio scenario.
pub struct Ratios(Vec<f64>);

impl Ratios {
    pub fn new(mut ratios: Vec<f64>) -> Ratios {
        ratios.sort_by(f64::total_cmp);
        Ratios(ratios)
    }

    pub fn median(&self) -> f64 {
        self.0.get(self.0.len() / 2).copied().unwrap_or(f64::NAN)
    }

    /// `1.08 (95 % interval 1.03–1.12, range 0.71–1.62)`.
    pub fn summary(&self) -> String {
        let (low, high) = self.median_interval();
        let (first, last) = (self.0.first(), self.0.last());
        format!(
            "{:.3} (95 % interval {low:.3}–{high:.3}, range {:.2}–{:.2})",
            self.median(),
            first.copied().unwrap_or(f64::NAN),
            last.copied().unwrap_or(f64::NAN)
        )
    }

    /// A distribution-free 95 % confidence interval for the median: the order statistics
    /// n/2 ∓ 0.98·√n (the normal approximation to the binomial), clamped to the samples.
    pub fn median_interval(&self) -> (f64, f64) {
        let n = self.0.len();
        if n == 0 {
            return (f64::NAN, f64::NAN);
        }
        let half_width = 0.98 * (n as f64).sqrt();
        let low = ((n as f64 / 2.0 - half_width).floor().max(1.0) as usize).min(n) - 1;
        let high = ((n as f64 / 2.0 + half_width).ceil() as usize).clamp(1, n) - 1;
        (self.0[low], self.0[high])
    }
}
