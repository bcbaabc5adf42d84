//! The sandbox's cost per command (BENCH.md, "Sandbox"): `true`, `ls` and a `find` over 1,000
//! files, run through `bash`'s executor unsandboxed, in the full jail (namespaces, Landlock,
//! seccomp) and in the fallback without namespaces, in a workspace of 1,000 files.
//!
//! `cargo bench --bench sandbox [-- --runs N]`. The launcher is the release `agent-lsp` binary
//! built with the bench. Exits 1 when the jail's median cost above the unsandboxed run misses
//! the bar.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agent_lsp::agent::tool::ToolUpdater;
use agent_lsp::model_registry::EnvSource;
use agent_lsp::sandbox::{Layers, Network, Sandbox, SandboxMode, SandboxParts, SandboxSetting};
use agent_lsp::tools::{BashSettings, run_command};
use tokio_util::sync::CancellationToken;

/// Bar: the jail's median cost per command above the same command unsandboxed (issue 30).
const BAR_MS: f64 = 15.0;

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
    Sandbox::new(SandboxParts {
        setting: SandboxSetting {
            mode: Some(SandboxMode::WorkspaceWrite),
            network: Network::Off,
            pass_env: None,
            protected: None,
        },
        writable_roots: vec![root.to_path_buf()],
        temp_dir: temp.to_path_buf(),
        layers,
        secret_env: Vec::new(),
        own_paths: Vec::new(),
        quarantine: None,
    })
}

async fn time(
    settings: &BashSettings,
    command: &str,
    cwd: &Path,
    runs: usize,
) -> anyhow::Result<Stats> {
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
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
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(result.is_ok(), "{command}: {:?}", result.err());
    }
    Ok(stats(ms))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let runs = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    agent_lsp::sandbox::launch::use_launcher(env!("CARGO_BIN_EXE_agent-lsp"));
    let base = tempfile::tempdir()?;
    let root = std::fs::canonicalize(base.path())?.join("ws");
    for i in 0..1000 {
        let dir = root.join(format!("d{}", i / 100));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format!("f{i}.rs")), "fn main() {}\n")?;
    }
    let layers = agent_lsp::sandbox::machine_layers(&EnvSource::from_process());
    anyhow::ensure!(
        layers.unavailable().is_none(),
        "no sandbox here: {layers:?}"
    );
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
    println!("sandbox cost per command, {runs} runs each, workspace of 1,000 files (ms)");
    println!(
        "{:<34} {:>14} {:>14} {:>14} {:>10}",
        "command", "unsandboxed", "jail", "no namespaces", "jail cost"
    );
    let mut worst = 0.0f64;
    for command in ["true", "ls", "find . -type f | wc -l"] {
        let p = time(&plain, command, &root, runs).await?;
        let j = time(&jailed, command, &root, runs).await?;
        let f = time(&flat, command, &root, runs).await?;
        let cost = j.p50 - p.p50;
        worst = worst.max(cost);
        println!(
            "{:<34} {:>6.2} / {:>5.2} {:>6.2} / {:>5.2} {:>6.2} / {:>5.2} {:>9.2}",
            command, p.p50, p.p95, j.p50, j.p95, f.p50, f.p95, cost
        );
    }
    println!("(p50 / p95; jail cost = jail p50 - unsandboxed p50; bar {BAR_MS} ms)");
    if worst > BAR_MS {
        println!("MISSED: the jail costs {worst:.2} ms per command");
        std::process::exit(1);
    }
    Ok(())
}
