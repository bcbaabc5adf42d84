//! `agent-lsp run` and a hostile race (issue 30): while a process keeps swapping a directory of
//! the workspace for a symlink to the outside, the binary's `write` calls land inside or are
//! refused, never outside.

use agent_lsp::testing::{MockResponse, MockToolCall};
use serde_json::json;

use super::super::support::cli_run::{CliEnv, request_texts, stderr};
use super::super::support::swapper::{Swapper, is_refusal};
use super::super::support::tool_harness::dir_names;
use super::{MODEL, mock};

/// 400 writes: path-based, as before issue 30, 5-76 of them went outside (20 runs, all
/// failing; with 200, one run in 20 passed). The calls of a turn run in parallel.
const TURNS: usize = 8;
const CALLS_PER_TURN: usize = 50;

/// One assistant turn writing `d/f<n>.txt` for each `n` of `turn`'s calls.
fn writes(turn: usize) -> MockResponse {
    let tool_calls = (0..CALLS_PER_TURN)
        .map(|k| {
            let n = turn * CALLS_PER_TURN + k;
            MockToolCall {
                id: format!("w{n}"),
                name: "write".into(),
                arguments: json!({"path": format!("d/f{n}.txt"), "content": "x"}),
                raw_arguments: None,
            }
        })
        .collect();
    MockResponse {
        tool_calls,
        ..MockResponse::default()
    }
}

#[tokio::test]
async fn run_writes_raced_by_a_symlink_swap_never_land_outside() {
    let mut script: Vec<MockResponse> = (0..TURNS).map(writes).collect();
    script.push(MockResponse::text("done"));
    let mock = mock(script).await;
    let env = CliEnv::with_mock(&mock);
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(env.project().join("d")).unwrap();
    let swapper = Swapper::start(&env.project().join("d"), outside.path());
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "write"])
        .await;
    let swaps = swapper.stop();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let escaped = dir_names(outside.path());
    assert!(
        escaped.is_empty(),
        "{} of {} writes landed outside the workspace ({swaps} swaps): {escaped:?}",
        escaped.len(),
        TURNS * CALLS_PER_TURN
    );
    let requests = mock.requests();
    let results: Vec<String> = request_texts(&requests[requests.len() - 1].body)
        .into_iter()
        .filter(|(role, _)| role == "tool")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(results.len(), TURNS * CALLS_PER_TURN);
    let inside = dir_names(&env.project().join("d"));
    let wrote: Vec<&String> = results
        .iter()
        .filter(|t| t.starts_with("Successfully wrote"))
        .collect();
    for text in &results {
        assert!(
            text.starts_with("Successfully wrote") || is_refusal(text),
            "{text}"
        );
    }
    for text in &wrote {
        let name = text.rsplit("d/").next().unwrap_or_default();
        assert!(inside.iter().any(|n| n == name), "{text} is not inside");
    }
    assert_eq!(inside.len(), wrote.len(), "{inside:?}");
}
