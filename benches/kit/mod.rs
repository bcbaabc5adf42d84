//! The benchmark kit, shared by the benchmark (`benches/agent.rs`, full sizes, exact rusage)
//! and the smoke tests (`tests/suite/bench_smoke.rs`, small sizes) so that the scenarios never
//! rot. Each scenario serves the model from the in-process loopback mock ([`MockHost`]),
//! measures the floor (a plain client reading the same stream) and agent-lsp in the same run
//! (and pi, when installed, on the same mock), checks that every client's output is complete
//! and right, and returns a [`Report`] with its bars.

// Each of the two targets that include this kit uses a different subset of it.
#![allow(dead_code)]

pub mod acp;
pub mod floor;
pub mod lsp;
pub mod measure;
pub mod proxy;
pub mod report;
pub mod s1_cold;
pub mod s2_stream;
pub mod s4_turns;
pub mod s5_edits;
pub mod s6_sessions;
pub mod s7_resume;
pub mod s8_acp;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};
use anyhow::Context;
use serde_json::json;

use measure::{Cmd, Runner, Sample};

/// How a scenario runs: which binaries, how children are measured, how many repetitions.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The `agent-lsp` binary (release for the benchmark).
    pub agent_bin: PathBuf,
    pub runner: Runner,
    /// The executable that serves as the floor process (`__floor`); `None` runs the floor
    /// client on a thread of this process (smoke tests).
    pub floor_exe: Option<PathBuf>,
    /// Repetitions per measurement (the median is reported).
    pub reps: usize,
    /// pi, run beside agent-lsp where a scenario can run it.
    pub pi: Option<Pi>,
}

/// pi 1.6 (`node …/pi-coding-agent/dist/cli.js`), as `scripts/bench.sh` installs it.
#[derive(Clone, Debug)]
pub struct Pi {
    pub node: PathBuf,
    pub cli: PathBuf,
}

impl Pi {
    /// From `AGENT_LSP_BENCH_PI_NODE` and `AGENT_LSP_BENCH_PI_CLI`, when both are set.
    pub fn from_env() -> Option<Pi> {
        Some(Pi {
            node: std::env::var_os("AGENT_LSP_BENCH_PI_NODE")?.into(),
            cli: std::env::var_os("AGENT_LSP_BENCH_PI_CLI")?.into(),
        })
    }
}

/// Who answers a prompt in `--json` mode: agent-lsp (`run --json`) or pi (`--mode json`),
/// whose event lines have the same shape (tests/interop case 3).
#[derive(Clone, Copy, Debug)]
pub enum Client<'a> {
    AgentLsp,
    Pi(&'a Pi),
}

impl Client<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Client::AgentLsp => "agent-lsp",
            Client::Pi(_) => "pi",
        }
    }
}

impl Ctx {
    /// Repetitions for a bar that is a ratio of paired runs: at least 41 in a benchmark. One
    /// pair's ratio spreads over 0.7–1.7 on this VM (the machine's speed changes between two
    /// runs a third of a second apart), so the median of nine still moves by ±0.1 from run to
    /// run; of 41, by about ±0.04. Smoke runs keep `reps`.
    pub fn ratio_reps(&self) -> usize {
        if self.floor_exe.is_some() {
            self.reps.max(41)
        } else {
            self.reps
        }
    }

    /// Repetitions for `client`: pi's runs take seconds, and its figure is a comparison, not a
    /// bar.
    pub fn reps_for(&self, client: Client) -> usize {
        match client {
            Client::AgentLsp => self.reps,
            Client::Pi(_) => self.reps.min(3),
        }
    }

    /// The smoke-test context: the test build of the binary, direct children, `reps` runs, no pi.
    pub fn smoke(agent_bin: PathBuf, reps: usize) -> Ctx {
        Ctx {
            agent_bin,
            runner: Runner::Direct,
            floor_exe: None,
            reps,
            pi: None,
        }
    }

    /// pi's figure for a bar: `figure` formatted, or why there is none.
    pub fn pi_figure(&self, figure: Option<f64>, unit: &str) -> String {
        match (&self.pi, figure) {
            (None, _) => "not run".into(),
            (Some(_), Some(value)) => report::number(value, unit),
            (Some(_), None) => "not measured".into(),
        }
    }

    /// The floor: `requests` sequential streams read to the end by a plain client.
    pub fn floor(&self, host: &MockHost, requests: usize) -> anyhow::Result<Sample> {
        if self.floor_exe.is_none() {
            return in_process_floor(|| floor::fetch(&host.addr(), requests));
        }
        self.floor_process(host, &[requests.to_string()])
    }

    /// The floor replaying `bodies` (the requests a client made) one after another, so the
    /// mock does the same work for both and only the client differs.
    pub fn floor_replay(&self, host: &MockHost, bodies: &[String]) -> anyhow::Result<Sample> {
        if self.floor_exe.is_none() {
            return in_process_floor(|| {
                floor::fetch_bodies(&host.addr(), bodies.iter().map(String::as_str))
            });
        }
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("bodies.jsonl");
        std::fs::write(&file, bodies.join("\n"))?;
        self.floor_process(host, &["--bodies".into(), file.display().to_string()])
    }

    /// Runs the floor process (`__floor ADDR ARGS…`) through the runner.
    fn floor_process(&self, host: &MockHost, args: &[String]) -> anyhow::Result<Sample> {
        let program = self
            .floor_exe
            .clone()
            .context("no floor executable to run")?;
        let mut all = vec!["__floor".to_string(), host.addr()];
        all.extend_from_slice(args);
        let cmd = Cmd {
            program,
            args: all,
            env: Vec::new(),
            cwd: std::env::temp_dir(),
        };
        let (mut sample, stdout) = self.runner.run(&cmd)?;
        // The floor prints how many bytes it read from the mock: report those.
        sample.stdout_bytes = String::from_utf8_lossy(&stdout).trim().parse()?;
        Ok(sample)
    }

    /// `client` answering `prompt` with JSON event lines on stdout: agent-lsp's `run --json`
    /// or pi's `--mode json`, in `sandbox` against `host`, with `extra` arguments (both take
    /// `--session FILE`).
    pub fn run_json(
        &self,
        client: Client,
        sandbox: &Sandbox,
        host: &MockHost,
        extra: &[&str],
        prompt: &str,
    ) -> anyhow::Result<(Sample, Vec<u8>)> {
        let (program, head, env) = match client {
            Client::AgentLsp => (
                self.agent_bin.clone(),
                vec!["run", "--json", "-m", "openai/gpt-4.1"],
                sandbox.env(host),
            ),
            Client::Pi(pi) => {
                let cli = pi.cli.to_str().context("pi's path is not UTF-8")?;
                let head = vec![
                    cli,
                    "--provider",
                    "mock",
                    "--model",
                    "mock-model",
                    "--mode",
                    "json",
                ];
                (pi.node.clone(), head, sandbox.pi_env(host)?)
            }
        };
        let mut args: Vec<String> = head.iter().map(|s| s.to_string()).collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(prompt.to_string());
        let cmd = Cmd {
            program,
            args,
            env,
            cwd: sandbox.project(),
        };
        self.runner.run(&cmd)
    }
}

/// The loopback mock provider on its own one-thread runtime (the "model" gets one core's
/// worth of scheduling, like a remote server would not compete with the client at all).
pub struct MockHost {
    pub mock: MockProvider,
    // Declared after `mock`: the provider shuts down before its runtime goes.
    _runtime: tokio::runtime::Runtime,
}

impl MockHost {
    pub fn start() -> anyhow::Result<MockHost> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let mock = runtime
            .block_on(MockProvider::start(MockScript::default()))
            .context("cannot start the mock provider")?;
        Ok(MockHost {
            mock,
            _runtime: runtime,
        })
    }

    pub fn push(&self, response: MockResponse) {
        self.mock.push_response(response);
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.mock.port())
    }

    /// How many answers the mock has finished writing.
    pub fn writes(&self) -> usize {
        self.mock.write_times().len()
    }

    /// The mock's time writing answer number `index` (0-based, in the order writes ended). A
    /// client can finish reading a moment before the mock's task records the write, so this
    /// waits for it, up to a second.
    pub fn write_time(&self, index: usize) -> anyhow::Result<Duration> {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            if let Some(time) = self.mock.write_times().get(index) {
                return Ok(*time);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the mock recorded no write number {index}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A sealed place for one agent-lsp process: temp HOME and XDG dirs, a project directory, no
/// inherited environment, and Ollama pointed at a closed port.
pub struct Sandbox {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
    closed_port: u16,
}

impl Sandbox {
    pub fn new() -> anyhow::Result<Sandbox> {
        let closed_port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        Ok(Sandbox {
            home: tempfile::tempdir()?,
            project: tempfile::tempdir()?,
            closed_port,
        })
    }

    pub fn project(&self) -> PathBuf {
        std::fs::canonicalize(self.project.path()).unwrap_or(self.project.path().into())
    }

    pub fn env(&self, host: &MockHost) -> Vec<(String, String)> {
        self.env_for(&host.mock.openai_base_url())
    }

    /// pi's environment: this sandbox's, with pi's agent directory (`PI_CODING_AGENT_DIR`, read
    /// by pi 1.6's `getAgentDir`) holding a `models.json` that declares provider `mock` (OpenAI
    /// Chat Completions) at `host`, as tests/interop does.
    pub fn pi_env(&self, host: &MockHost) -> anyhow::Result<Vec<(String, String)>> {
        let dir = self.home.path().join("pi-agent");
        std::fs::create_dir_all(&dir)?;
        let models = json!({"providers": {"mock": {
            "baseUrl": host.mock.openai_base_url(),
            "api": "openai-completions",
            "apiKey": "bench-key",
            // gpt-4.1's limits, which agent-lsp uses: no compaction of the long session.
            "models": [{"id": "mock-model", "name": "Mock", "contextWindow": 1_047_576, "maxTokens": 32_768}]
        }}});
        std::fs::write(dir.join("models.json"), models.to_string())?;
        let mut env = self.env(host);
        env.push(("PI_CODING_AGENT_DIR".into(), dir.display().to_string()));
        env.push(("TMPDIR".into(), self.home.path().display().to_string()));
        // No version check or other network use: the bench touches only loopback.
        env.push(("PI_OFFLINE".into(), "1".into()));
        Ok(env)
    }

    /// The environment with the OpenAI provider at `openai_base_url`.
    pub fn env_for(&self, openai_base_url: &str) -> Vec<(String, String)> {
        let home = self.home.path();
        vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), home.display().to_string()),
            (
                "XDG_DATA_HOME".into(),
                home.join("data").display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                home.join("config").display().to_string(),
            ),
            (
                "OLLAMA_HOST".into(),
                format!("127.0.0.1:{}", self.closed_port),
            ),
            ("OPENAI_BASE_URL".into(), openai_base_url.to_string()),
            ("OPENAI_API_KEY".into(), "bench-key".into()),
        ]
    }
}

/// The JSON lines of a `run --json` stdout.
pub fn json_lines(stdout: &[u8]) -> anyhow::Result<Vec<serde_json::Value>> {
    stdout
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).context("run --json printed a non-JSON line"))
        .collect()
}

/// The `assistantMessageEvent` of each `message_update` line whose event type is `kind`.
pub fn deltas_of<'a>(
    lines: &'a [serde_json::Value],
    kind: &'a str,
) -> impl Iterator<Item = (&'a serde_json::Value, &'a serde_json::Value)> + 'a {
    lines.iter().filter_map(move |line| {
        let event = line.get("assistantMessageEvent")?;
        (event.get("type")?.as_str()? == kind).then_some((line, event))
    })
}

/// The concatenated text deltas of a `run --json` output.
pub fn streamed_text(lines: &[serde_json::Value]) -> String {
    deltas_of(lines, "text_delta")
        .filter_map(|(_, e)| e.get("delta")?.as_str())
        .collect()
}

/// The run ended with `agent_settled`, not aborted.
pub fn ensure_settled(lines: &[serde_json::Value]) -> anyhow::Result<()> {
    let last = lines.last();
    anyhow::ensure!(
        last.and_then(|l| l.get("type")?.as_str()) == Some("agent_settled")
            && last.and_then(|l| l.get("aborted")?.as_bool()) == Some(false),
        "the run did not settle cleanly: {last:?}"
    );
    Ok(())
}

/// Median wall, CPU and (when known) peak RSS of samples.
pub fn medians(samples: &[Sample]) -> (std::time::Duration, std::time::Duration, Option<u64>) {
    let wall = measure::median(samples.iter().map(|s| s.wall).collect());
    let cpu = measure::median(samples.iter().map(|s| s.cpu).collect());
    let mut rss: Vec<u64> = samples.iter().filter_map(|s| s.max_rss_kib).collect();
    rss.sort_unstable();
    let rss = rss.get(rss.len().saturating_sub(1) / 2).copied();
    (wall, cpu, rss)
}

/// The floor run in this process (the smoke tests have no wrapper), timed.
fn in_process_floor(fetch: impl FnOnce() -> anyhow::Result<u64>) -> anyhow::Result<Sample> {
    let started = std::time::Instant::now();
    let bytes = fetch()?;
    Ok(Sample {
        wall: started.elapsed(),
        stdout_bytes: bytes,
        ..Sample::default()
    })
}
