//! Ctrl-C, SIGTERM and `kill -9` during a run.

use std::time::Duration;

use agent_lsp::testing::MockResponse;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::super::support::cli_run::{CliEnv, request_texts, session_lines, stderr, stdout, types};
use super::super::support::pi_session::assert_valid_pi_v3;
use super::{MODEL, mock, slow_text};

/// Reads `--json` stdout lines until one matches, returning the lines read.
async fn read_until(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    pred: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .expect("timed out waiting for output")
            .unwrap()
            .expect("stdout closed early");
        let value: Value = serde_json::from_str(&line).unwrap();
        let done = pred(&value);
        seen.push(value);
        if done {
            return seen;
        }
    }
}

fn is_text_delta(e: &Value) -> bool {
    e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta"
}

async fn signal_aborts_cleanly(signal: Signal, code: i32) {
    let mock = mock(vec![slow_text(
        &"a long answer that keeps streaming ".repeat(60),
    )])
    .await;
    let env = CliEnv::with_mock(&mock);
    let mut child = env.spawn(&["run", "--json", "--model", MODEL, "talk"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = read_until(&mut lines, is_text_delta).await;
    kill(Pid::from_raw(child.id().unwrap() as i32), signal).unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        events.push(serde_json::from_str(&line).unwrap());
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(code));
    let kinds = types(&events);
    assert_eq!(
        kinds.iter().filter(|k| *k == "agent_end").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": true})
    );
    let end = events.iter().find(|e| e["type"] == "agent_end").unwrap();
    let last = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["stopReason"], "aborted");
    // The aborted run is recorded like any other.
    let lines = session_lines(&env.session_files()[0]);
    assert_eq!(lines.last().unwrap()["message"]["stopReason"], "aborted");
}

#[tokio::test]
async fn sigint_aborts_cleanly_with_one_agent_end_and_exit_130() {
    signal_aborts_cleanly(Signal::SIGINT, 130).await;
}

#[tokio::test]
async fn sigterm_aborts_cleanly_with_exit_143() {
    signal_aborts_cleanly(Signal::SIGTERM, 143).await;
}

/// `kill -9` while the second response streams loses only that message: the prompt, the tool
/// call and its result are on disk, and `--continue` resumes the session with them in context.
#[tokio::test]
async fn a_killed_run_resumes_with_continue() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "ls", json!({})),
        slow_text(&"never finished ".repeat(150)),
        MockResponse::text("Resumed."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("seen.txt"), "x").unwrap();
    let mut child = env.spawn(&["run", "--json", "--model", MODEL, "first prompt"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let seen = read_until(&mut lines, is_text_delta).await;
    assert!(seen.iter().any(|e| e["type"] == "tool_execution_end"));
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let files = env.session_files();
    assert_eq!(files.len(), 1);
    let lock = std::path::PathBuf::from(format!("{}.lock", files[0].display()));
    assert!(lock.exists(), "kill -9 leaves a stale lock behind");

    let out = env.run(&["run", "--continue", "second prompt"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("Resumed."));
    assert_eq!(env.session_files(), files, "the same session continued");
    assert!(!lock.exists(), "the lock is released at exit");
    let texts = request_texts(&mock.requests()[2].body);
    let roles: Vec<&str> = texts.iter().skip(1).map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{texts:?}");
    assert_eq!(texts[1].1, "first prompt");
    assert!(
        texts[3].1.contains("seen.txt"),
        "the tool result survived: {texts:?}"
    );
    assert_eq!(texts[4].1, "second prompt");
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
    assert_valid_pi_v3(&files[0]);
    let lines = session_lines(&files[0]);
    let roles: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["message"]["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
    // The model recorded by the first run was reused without --model.
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "model_change").count(),
        1
    );
}

/// `kill -9` while a tool runs: the call is on disk without its result; the resumed session
/// records the journal's statement as its result (the command may have run partly), so the
/// history is valid and the model is told. The orphaned `sleep` ends on its own within seconds.
#[tokio::test]
async fn a_run_killed_during_a_tool_resumes_with_a_valid_history() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "touch started; sleep 5"})),
        MockResponse::text("Resumed."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let mut child = env.spawn(&[
        "run",
        "--json",
        "--approve",
        "all",
        "--model",
        MODEL,
        "wait",
    ]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    read_until(&mut lines, |e| e["type"] == "tool_execution_start").await;
    // Killed once the command runs (not between the event and the command's start).
    for _ in 0..600 {
        if env.project().join("started").exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        env.project().join("started").exists(),
        "the command started"
    );
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    let out = env
        .run(&["run", "--continue", "--approve", "all", "go on"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
    let texts = request_texts(&mock.requests()[1].body);
    let roles: Vec<&str> = texts.iter().skip(1).map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{texts:?}");
    assert!(
        texts[3].1.contains("stopped unexpectedly") && texts[3].1.contains("may have run partly"),
        "{texts:?}"
    );
    let file = &env.session_files()[0];
    assert_valid_pi_v3(file);
    let roles: Vec<String> = session_lines(file)
        .iter()
        .filter_map(|l| l["message"]["role"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
}
