//! The sandbox's cost per command (BENCH.md, "Sandbox"): each command run through `bash`'s
//! executor unsandboxed, in the full jail (namespaces, Landlock, seccomp) and in the fallback
//! without namespaces, the three side by side within each repetition (which goes first
//! rotates).
//!
//! By default the commands are `true`, `ls` and a `find` over a synthetic workspace of 1,000
//! files. With `--workspace DIR` they run in DIR (a large real checkout) and are real work:
//! `git status`, `git log`, a `find` and a `grep -r` over its Rust files, and `ls`. With
//! `--command CMD` (repeatable) they are those commands instead (`sleep 0.15`: one that runs
//! long enough for the protected paths' watch).
//!
//! `--phases` times a jailed `true` spawned directly in several ways (the shell alone, the
//! launcher alone, without namespaces, without the network namespace, without protected
//! paths), to tell where the jail's cost goes.
//!
//! `cargo bench --bench sandbox [-- --runs N] [--workspace DIR] [--command CMD]… [--phases]`. The launcher is the release
//! `agent-lsp` binary built with the bench. Every run's output is checked: a command that
//! fails, or prints in the jail what it does not print unsandboxed, fails the bench instead of
//! reporting numbers. Exits 1 when the jail's median cost above the unsandboxed run misses
//! the bar.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use agent_lsp::agent::tool::ToolUpdater;
use agent_lsp::model_registry::EnvSource;
use agent_lsp::sandbox::{Layers, Network, Sandbox, SandboxMode, SandboxParts, SandboxSetting};
use agent_lsp::tools::{BashSettings, run_command};
use tokio_util::sync::CancellationToken;

/// Bar: the jail's median cost per command above the same command unsandboxed (issue 30).
const BAR_MS: f64 = 15.0;

/// The synthetic workspace's commands.
const SYNTHETIC: [&str; 3] = ["true", "ls", "find . -type f | wc -l"];

/// Real work in a real checkout (`--workspace`).
const REAL: [&str; 5] = [
    "git status --short | wc -l",
    "git log --oneline -20 | wc -l",
    "find . -name '*.rs' -not -path './.git/*' | wc -l",
    "grep -rl --include='*.rs' 'fn main' . | wc -l",
    "ls",
];

struct Stats {
    p50: f64,
    p95: f64,
}

fn stats(mut ms: Vec<f64>) -> Stats {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    Stats {
        p50: at(0.5),
        p95: at(0.95),
    }
}

fn sandbox(root: &Path, temp: &Path, layers: Layers) -> Arc<Sandbox> {
    sandbox_with(root, temp, layers, Network::Off, None)
}

fn sandbox_with(
    root: &Path,
    temp: &Path,
    layers: Layers,
    network: Network,
    protected: Option<Vec<String>>,
) -> Arc<Sandbox> {
    Sandbox::new(SandboxParts {
        setting: SandboxSetting {
            mode: Some(SandboxMode::WorkspaceWrite),
            network,
            pass_env: None,
            protected,
        },
        writable_roots: vec![root.to_path_buf()],
        temp_dir: temp.to_path_buf(),
        layers,
        secret_env: Vec::new(),
        own_paths: Vec::new(),
        quarantine: None,
        hidden: Vec::new(),
    })
}

/// One run of `command`: its wall time in ms and its output (the bench fails on an error).
async fn once(settings: &BashSettings, command: &str, cwd: &Path) -> anyhow::Result<(f64, String)> {
    let started = Instant::now();
    let result = run_command(
        settings,
        command,
        cwd,
        None,
        CancellationToken::new(),
        ToolUpdater::none(),
    )
    .await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let result = result.map_err(|e| anyhow::anyhow!("{command}: {}", e.message))?;
    let text: String = result.content.iter().filter_map(|b| b.as_text()).collect();
    anyhow::ensure!(result.is_error != Some(true), "{command}: {text}");
    Ok((ms, text))
}

/// `runs` repetitions of `command` in each of `modes`, side by side: the order within a
/// repetition rotates, and one untimed run of each comes first (the page cache). Every run's
/// output must be the first unsandboxed run's.
async fn time(
    modes: &[&BashSettings],
    command: &str,
    cwd: &Path,
    runs: usize,
) -> anyhow::Result<Vec<Stats>> {
    let (_, expected) = once(modes[0], command, cwd).await?;
    let mut ms = vec![Vec::with_capacity(runs); modes.len()];
    for rep in 0..=runs {
        for k in 0..modes.len() {
            let m = (rep + k) % modes.len();
            let (t, text) = once(modes[m], command, cwd).await?;
            anyhow::ensure!(
                text == expected,
                "{command}: mode {m} printed {text:?}, unsandboxed {expected:?}"
            );
            if rep > 0 {
                ms[m].push(t);
            }
        }
    }
    Ok(ms.into_iter().map(stats).collect())
}

/// One way of running `true` for `--phases`: the shell alone, the launcher alone (no spec: it
/// exits at once), or the launcher with one sandbox's spec.
enum Phase {
    Shell,
    LauncherAlone,
    Launcher(Arc<Sandbox>),
}

/// One run of `phase` in `cwd` (the process spawned directly, no executor): its wall time in ms.
async fn run_phase(phase: &Phase, cwd: &Path) -> anyhow::Result<f64> {
    let shell = Path::new("/bin/bash");
    let launcher = Path::new(env!("CARGO_BIN_EXE_agent-lsp"));
    let started = Instant::now();
    let (mut command, lifeline, expected) = match phase {
        Phase::Shell => {
            let mut c = tokio::process::Command::new(shell);
            c.args(["-c", "true"]).stdin(Stdio::null());
            (c, None, Some(0))
        }
        Phase::LauncherAlone => {
            let mut c = tokio::process::Command::new(launcher);
            c.arg(agent_lsp::sandbox::jail::SUBCOMMAND)
                .env_remove(agent_lsp::sandbox::jail::spec::SPEC_ENV)
                .stdin(Stdio::null());
            (c, None, Some(agent_lsp::sandbox::jail::SETUP_FAILED))
        }
        Phase::Launcher(sb) => {
            let jail = sb
                .jail(&sb.policy(), shell, "true", cwd)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            (jail.command, Some(jail.lifeline), Some(0))
        }
    };
    let status = command
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    drop(lifeline);
    anyhow::ensure!(status.code() == expected, "a phase ended with {status}");
    Ok(ms)
}

/// `--phases`: where a jailed `true` spends its time, by difference between ways of running it.
async fn phases(root: &Path, temp: &Path, layers: &Layers, runs: usize) -> anyhow::Result<()> {
    let mut flat_layers = layers.clone();
    flat_layers.namespaces = Err("left out for the bench".into());
    let variants: Vec<(&str, Phase)> = vec![
        ("bash -c true, no launcher", Phase::Shell),
        (
            "the launcher alone (no spec: exits at once)",
            Phase::LauncherAlone,
        ),
        (
            "no namespaces (Landlock, seccomp)",
            Phase::Launcher(sandbox(root, &temp.join("p1"), flat_layers)),
        ),
        (
            "jail with the user's network (no net namespace)",
            Phase::Launcher(sandbox_with(
                root,
                &temp.join("p2"),
                layers.clone(),
                Network::On,
                None,
            )),
        ),
        (
            "jail",
            Phase::Launcher(sandbox(root, &temp.join("p3"), layers.clone())),
        ),
        (
            "jail with no protected paths",
            Phase::Launcher(sandbox_with(
                root,
                &temp.join("p4"),
                layers.clone(),
                Network::Off,
                Some(Vec::new()),
            )),
        ),
    ];
    let mut ms = vec![Vec::with_capacity(runs); variants.len()];
    for rep in 0..=runs {
        for k in 0..variants.len() {
            let v = (rep + k) % variants.len();
            let t = run_phase(&variants[v].1, root).await?;
            if rep > 0 {
                ms[v].push(t);
            }
        }
    }
    println!("a jailed `true`, spawned directly, {runs} runs each (ms)");
    println!("{:<50} {:>7} {:>7}", "how", "p50", "p95");
    for ((name, _), ms) in variants.iter().zip(ms) {
        let s = stats(ms);
        println!("{name:<50} {:>7.2} {:>7.2}", s.p50, s.p95);
    }
    Ok(())
}

fn arg(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let runs = arg("--runs").and_then(|n| n.parse().ok()).unwrap_or(100);
    let workspace = arg("--workspace").map(PathBuf::from);
    agent_lsp::sandbox::launch::use_launcher(env!("CARGO_BIN_EXE_agent-lsp"));
    let base = tempfile::tempdir()?;
    let chosen: Vec<String> = std::env::args()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "--command")
        .map(|w| w[1].clone())
        .collect();
    let (root, mut commands, what): (PathBuf, Vec<&str>, String) = match &workspace {
        Some(dir) => {
            let root = std::fs::canonicalize(dir)?;
            let what = format!("workspace {}", root.display());
            (root, REAL.to_vec(), what)
        }
        None => {
            let root = std::fs::canonicalize(base.path())?.join("ws");
            for i in 0..1000 {
                let dir = root.join(format!("d{}", i / 100));
                std::fs::create_dir_all(&dir)?;
                std::fs::write(dir.join(format!("f{i}.rs")), "fn main() {}\n")?;
            }
            (root, SYNTHETIC.to_vec(), "workspace of 1,000 files".into())
        }
    };
    let layers = agent_lsp::sandbox::machine_layers(&EnvSource::from_process());
    anyhow::ensure!(
        layers.unavailable().is_none(),
        "no sandbox here: {layers:?}"
    );
    if std::env::args().any(|a| a == "--phases") {
        return phases(&root, base.path(), &layers, runs).await;
    }
    let mut flat_layers = layers.clone();
    flat_layers.namespaces = Err("left out for the bench".into());
    let plain = BashSettings::default();
    let jailed = BashSettings {
        sandbox: Some(sandbox(&root, &base.path().join("t1"), layers)),
        ..BashSettings::default()
    };
    let flat = BashSettings {
        sandbox: Some(sandbox(&root, &base.path().join("t2"), flat_layers)),
        ..BashSettings::default()
    };
    if !chosen.is_empty() {
        commands = chosen.iter().map(String::as_str).collect();
    }
    let width = commands.iter().map(|c| c.len()).max().unwrap_or(0).max(7);
    println!("sandbox cost per command, {runs} runs each, {what} (ms)");
    println!(
        "{:<width$} {:>16} {:>16} {:>16} {:>15}",
        "command", "unsandboxed", "jail", "no namespaces", "jail cost"
    );
    let mut worst = 0.0f64;
    for command in &commands {
        let s = time(&[&plain, &jailed, &flat], command, &root, runs).await?;
        let (p, j, f) = (&s[0], &s[1], &s[2]);
        worst = worst.max(j.p50 - p.p50);
        println!(
            "{:<width$} {:>7.2} / {:>6.2} {:>7.2} / {:>6.2} {:>7.2} / {:>6.2} {:>6.2} / {:>6.2}",
            command,
            p.p50,
            p.p95,
            j.p50,
            j.p95,
            f.p50,
            f.p95,
            j.p50 - p.p50,
            j.p95 - p.p95
        );
    }
    println!(
        "(p50 / p95; jail cost = jail - unsandboxed, at p50 / at p95; bar {BAR_MS} ms at p50)"
    );
    if worst > BAR_MS {
        println!("MISSED: the jail costs {worst:.2} ms per command");
        std::process::exit(1);
    }
    Ok(())
}
