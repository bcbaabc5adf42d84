//! `agent-lsp run` and the command sandbox (issue 19): `--approve all` runs bash sandboxed by
//! default, `-v` says so, an escalation or an unavailable sandbox is refused (no one to ask), and
//! `--sandbox off` runs commands with the user's full rights.

use agent_lsp::testing::MockResponse;
use serde_json::json;

use super::super::support::cli_run::{CliEnv, request_texts, stderr};
use super::{MODEL, mock};

/// The tool results the model was sent in the last request.
fn tool_texts(mock: &agent_lsp::testing::MockProvider) -> Vec<String> {
    let requests = mock.requests();
    let last = request_texts(&requests[requests.len() - 1].body);
    last.into_iter()
        .filter(|(r, _)| r == "tool")
        .map(|(_, t)| t)
        .collect()
}

#[tokio::test]
async fn approve_all_runs_bash_sandboxed_and_refuses_the_escalation() {
    let outside = crate::suite::support::outside_tmp();
    let target = outside.path().join("out.txt");
    let command = format!("echo x > {}", target.display());
    let mock = mock(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "echo in > in.txt"})),
        MockResponse::tool_call("c2", "bash", json!({"command": command})),
        MockResponse::tool_call(
            "c3",
            "bash",
            json!({"command": command, "sandbox": false, "justification": "needed"}),
        ),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "-v", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("sandbox: sandboxed (workspaceWrite"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(env.project().join("in.txt")).unwrap(),
        "in\n"
    );
    assert!(!target.exists());
    let texts = tool_texts(&mock);
    assert!(texts[1].contains("Read-only file system"), "{texts:?}");
    assert!(texts[1].contains("the sandbox refused"), "{texts:?}");
    assert!(texts[2].contains("--sandbox off"), "{texts:?}");
}

#[tokio::test]
async fn sandbox_off_runs_with_full_rights() {
    let outside = crate::suite::support::outside_tmp();
    let target = outside.path().join("out.txt");
    let mock = mock(vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            json!({"command": format!("echo x > {}", target.display())}),
        ),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&[
            "run",
            "--sandbox",
            "off",
            "--approve",
            "all",
            "--model",
            MODEL,
            "go",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(target.exists());
}

#[tokio::test]
async fn an_unavailable_sandbox_is_said_once_and_commands_are_refused() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "echo ran > ran.txt"})),
        MockResponse::text("done"),
    ])
    .await;
    let mut env = CliEnv::with_mock(&mock);
    env.set("AGENT_LSP_TEST_SANDBOX_UNAVAILABLE", "1");
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        stderr(&out).matches("sandbox: unavailable").count(),
        1,
        "{}",
        stderr(&out)
    );
    assert!(!env.project().join("ran.txt").exists());
    let texts = tool_texts(&mock);
    assert!(texts[0].contains("the sandbox is unavailable"), "{texts:?}");
}
