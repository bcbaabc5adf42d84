//! MCP benchmarks (BENCH.md, "MCP"): what a tool call through an MCP server costs above the
//! server's own time, and whether stdio servers start in parallel.
//!
//! `cargo bench --bench mcp [-- --calls N]`. The server is `agent-lsp-mock-mcp`
//! (`src/testing/mcp_server.rs`), compiled so that starting it costs milliseconds: `timed_echo`
//! answers with the microseconds it spent between reading the request and writing the answer,
//! and its argument delays its answer to `initialize`. Exits 1 when a bar is missed.

use std::path::Path;
use std::time::{Duration, Instant};

use agent_lsp::agent::tool::{AgentTool, ToolInput};
use agent_lsp::mcp::McpHub;
use agent_lsp::mcp::config::{McpConfig, Origin, parse_servers};
use agent_lsp::model_registry::EnvSource;
use serde_json::{Value, json};

/// Bar: a call's wall time above the server's own time, median over the calls.
const CALL_BAR_MS: f64 = 2.0;
/// Bar: three servers together start within the slowest one's start-up plus this.
const START_BAR_MS: f64 = 50.0;

fn entry(start_delay_ms: u64) -> Value {
    let server = Path::new(env!("CARGO_BIN_EXE_agent-lsp-mock-mcp"));
    json!({"command": server.display().to_string(), "args": [start_delay_ms.to_string()]})
}

fn config(servers: Value) -> anyhow::Result<McpConfig> {
    let (servers, errors) = parse_servers(&servers, &Origin::Editor, &EnvSource::from_process());
    anyhow::ensure!(errors.is_empty(), "{errors:?}");
    let mut config = McpConfig::default();
    config.merge(servers);
    Ok(config)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The median of (call wall − the server's own time), in ms.
async fn call_overhead(calls: usize) -> anyhow::Result<f64> {
    let hub = McpHub::new();
    let servers = config(json!({"echo": entry(0)}))?;
    let session = hub.attach(&std::env::temp_dir(), &servers, true);
    session.ready().await;
    let tool = session
        .tools()
        .into_iter()
        .find(|t| t.declaration().name == "echo__timed_echo")
        .ok_or_else(|| anyhow::anyhow!("no timed echo tool: {:?}", session.status()))?;
    let mut overheads = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let result = tool.execute(ToolInput::new("c", json!({}))).await?;
        let wall = started.elapsed().as_secs_f64() * 1e3;
        let text = serde_json::to_value(&result.content)?[0]["text"].clone();
        let own_ms: f64 = text.as_str().and_then(|t| t.parse().ok()).unwrap_or(0.0) / 1e3;
        overheads.push(wall - own_ms);
    }
    hub.shutdown().await;
    Ok(median(overheads))
}

/// Start-up of `delays` servers attached together, until all are ready, in ms.
async fn start_up(delays: &[u64]) -> anyhow::Result<f64> {
    let servers: serde_json::Map<String, Value> = delays
        .iter()
        .enumerate()
        .map(|(i, delay)| (format!("s{i}"), entry(*delay)))
        .collect();
    let hub = McpHub::new();
    let started = Instant::now();
    let session = hub.attach(
        &std::env::temp_dir(),
        &config(Value::Object(servers))?,
        true,
    );
    session.ready().await;
    let took = started.elapsed();
    let status = session.status();
    anyhow::ensure!(status.iter().all(|s| s.error.is_none()), "{status:?}");
    hub.shutdown().await;
    Ok(took.as_secs_f64() * 1e3)
}

fn line(name: &str, figure: f64, bar: &str, met: bool) -> bool {
    let verdict = if met { "met" } else { "MISSED" };
    println!("{name:<48} {figure:>9.2} ms   bar {bar:<24} {verdict}");
    met
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("mcp benchmarks: run with `cargo bench --bench mcp`");
        return;
    }
    let calls = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let measured = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(measure(calls)));
    match measured {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("bench: {e:#}");
            std::process::exit(2);
        }
    }
}

/// Runs both measurements; `Ok(false)` when a bar is missed.
async fn measure(calls: usize) -> anyhow::Result<bool> {
    {
        let overhead = call_overhead(calls).await?;
        let delays = [200, 400, 600];
        let slowest = repeated(3, || start_up(&delays[2..])).await?;
        let together = repeated(3, || start_up(&delays)).await?;
        let (slowest, together) = (median(slowest), median(together));
        let calls_met = line(
            &format!("MCP call above the server's own time ({calls} calls)"),
            overhead,
            &format!("≤ {CALL_BAR_MS} ms"),
            overhead <= CALL_BAR_MS,
        );
        line(
            "the slowest server alone (600 ms to initialize)",
            slowest,
            "(reference)",
            true,
        );
        let start_met = line(
            "three servers (200, 400, 600 ms) together",
            together,
            &format!("≤ {slowest:.0} + {START_BAR_MS} ms"),
            together <= slowest + START_BAR_MS,
        );
        Ok(calls_met && start_met)
    }
}

/// Runs `f` `n` times, one after another.
async fn repeated<F, Fut>(n: usize, f: F) -> anyhow::Result<Vec<f64>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<f64>>,
{
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(f().await?);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(out)
}
