//! Integration tests: the real `agent-lsp` binary against the loopback mock provider, in a sealed
//! environment (temp HOME and XDG dirs, no inherited variables; see `support::cli_run`).

use std::time::Duration;

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::support::cli_run::{
    CliEnv, json_lines, request_texts, session_lines, stderr, stdout, types,
};
use super::support::pi_session::assert_valid_pi_v3;

const MODEL: &str = "openai/mock-model";

async fn mock(responses: Vec<MockResponse>) -> MockProvider {
    MockProvider::start(MockScript { responses }).await.unwrap()
}

/// A response that streams `text` slowly: 4-byte deltas, 80 ms apart.
fn slow_text(text: &str) -> MockResponse {
    MockResponse {
        text: Some(text.into()),
        chunk_size: Some(4),
        delay_ms: Some(80),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_text_only_run_streams_the_answer_and_records_the_session() {
    let mock = mock(vec![MockResponse {
        text: Some("Hello from the mock.".into()),
        usage: Some(serde_json::from_value(json!({"input": 1000, "output": 50})).unwrap()),
        ..Default::default()
    }])
    .await;
    let env = CliEnv::with_mock(&mock);
    let out = env.run(&["run", "--model", MODEL, "say", "hello"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("Hello from the mock.\n"), "{text}");
    assert!(text.contains("tokens: 1000 in, 50 out"), "{text}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
    let texts = request_texts(&requests[0].body);
    assert_eq!(texts[0].0, "system");
    assert!(
        texts[0].1.contains(env.project().to_str().unwrap()),
        "the prompt names the cwd"
    );
    assert_eq!(
        texts.last().unwrap(),
        &("user".to_string(), "say hello".to_string())
    );
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["read", "bash", "edit", "write", "grep", "find", "ls"]
    );

    let files = env.session_files();
    assert_eq!(files.len(), 1);
    assert_valid_pi_v3(&files[0]);
    let lines = session_lines(&files[0]);
    assert_eq!(lines[0]["cwd"], env.project().to_str().unwrap());
    let kinds: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["model_change", "message", "message"]);
    assert_eq!(lines[1]["modelId"], "mock-model");
    assert_eq!(
        lines[3]["message"]["content"][0]["text"],
        "Hello from the mock."
    );
}

#[tokio::test]
async fn json_output_is_the_daemon_event_stream_ending_in_agent_settled() {
    let mock = mock(vec![
        MockResponse::tool_call("call_1", "ls", json!({})),
        MockResponse::text("Two files."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "a").unwrap();
    let out = env.run(&["run", "--json", "--model", MODEL, "list"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let events = json_lines(&out);
    let kinds = types(&events);
    assert_eq!(kinds.first().map(String::as_str), Some("agent_start"));
    assert_eq!(kinds.last().map(String::as_str), Some("agent_settled"));
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
    assert_eq!(kinds.iter().filter(|k| *k == "agent_end").count(), 1);
    assert_eq!(kinds[kinds.len() - 2], "agent_end");
    for event in events.iter().filter(|e| e["type"] == "message_update") {
        let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["type", "assistantMessageEvent"],
            "delta only: {event}"
        );
    }
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_execution_start")
        .unwrap();
    assert_eq!(start["toolCallId"], "call_1");
    assert_eq!(start["toolName"], "ls");
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], false);
    assert!(
        end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("a.txt")
    );
    assert!(kinds.contains(&"turn_end".to_string()));
}

/// read → edit → bash → answer: the model's calls run in order and each result reaches the next
/// request.
#[tokio::test]
async fn a_multi_turn_tool_run_with_approve_all_reads_edits_and_runs_bash() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "read", json!({"path": "notes.txt"})),
        MockResponse::tool_call(
            "c2",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "helo", "newText": "hello"}]}),
        ),
        MockResponse::tool_call("c3", "bash", json!({"command": "tr a-z A-Z < notes.txt"})),
        MockResponse::text("Fixed and checked."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("notes.txt"), "helo world\n").unwrap();
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "fix notes.txt"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(env.project().join("notes.txt")).unwrap(),
        "hello world\n"
    );
    let text = stdout(&out);
    for line in [
        "[read notes.txt] ok",
        "[edit notes.txt] ok",
        "[bash tr a-z A-Z < notes.txt] ok",
    ] {
        assert!(text.contains(line), "missing {line:?} in {text}");
    }
    assert!(text.contains("Fixed and checked."));
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
    let last = request_texts(&requests[3].body);
    let tool_texts: Vec<&str> = last
        .iter()
        .filter(|(r, _)| r == "tool")
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(tool_texts.len(), 3);
    assert!(tool_texts[0].contains("helo world"), "{tool_texts:?}");
    assert!(tool_texts[2].contains("HELLO WORLD"), "{tool_texts:?}");
    let files = env.session_files();
    assert_valid_pi_v3(&files[0]);
    let roles: Vec<String> = session_lines(&files[0])
        .iter()
        .filter_map(|l| l["message"]["role"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
}

#[tokio::test]
async fn read_only_by_default_refuses_edits_and_bash_with_the_fix() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "read", json!({"path": "notes.txt"})),
        MockResponse::tool_call(
            "c2",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "helo", "newText": "hello"}]}),
        ),
        MockResponse::tool_call("c3", "bash", json!({"command": "touch created.txt"})),
        MockResponse::text("I could not change it."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("notes.txt"), "helo\n").unwrap();
    let out = env.run(&["run", "--model", MODEL, "fix notes.txt"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(env.project().join("notes.txt")).unwrap(),
        "helo\n"
    );
    assert!(
        !env.project().join("created.txt").exists(),
        "bash must not run"
    );
    let text = stdout(&out);
    assert!(text.contains("[read notes.txt] ok"), "{text}");
    assert!(
        text.contains("[edit notes.txt] refused: run again with --approve all"),
        "{text}"
    );
    assert!(
        text.contains("[bash touch created.txt] refused: run again with --approve all"),
        "{text}"
    );
    // The model is told why and how to allow it.
    let last = request_texts(&mock.requests()[3].body);
    let refusals: Vec<&str> = last
        .iter()
        .filter(|(r, t)| r == "tool" && t.contains("was not run"))
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(refusals.len(), 2);
    assert!(
        refusals.iter().all(|t| t.contains("--approve all")),
        "{refusals:?}"
    );
}

#[tokio::test]
async fn approve_none_refuses_even_reads() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "read", json!({"path": "notes.txt"})),
        MockResponse::text("No tools."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("notes.txt"), "secret\n").unwrap();
    let out = env
        .run(&["run", "--approve", "none", "--model", MODEL, "read it"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("[read notes.txt] refused: run again with --approve read-only (reads only) or --approve all"), "{text}");
    let last = request_texts(&mock.requests()[1].body);
    assert!(!last.iter().any(|(_, t)| t.contains("secret")));
}

#[tokio::test]
async fn a_provider_error_exits_1_with_the_message_on_stderr() {
    let mock = mock(vec![MockResponse::status(
        401,
        r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}"#,
    )])
    .await;
    let env = CliEnv::with_mock(&mock);
    let out = env.run(&["run", "--json", "--model", MODEL, "hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("Incorrect API key provided"), "{err}");
    let events = json_lines(&out);
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
    assert!(
        !stdout(&out).contains("Incorrect API key")
            || events.iter().any(|e| e["type"] == "message_end")
    );
}

/// Reads `--json` stdout lines until one matches, returning the lines read.
async fn read_until(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    pred: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
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

#[tokio::test]
async fn sigint_aborts_cleanly_with_one_agent_end_and_exit_130() {
    let mock = mock(vec![slow_text(
        &"a long answer that keeps streaming ".repeat(20),
    )])
    .await;
    let env = CliEnv::with_mock(&mock);
    let mut child = env.spawn(&["run", "--json", "--model", MODEL, "talk"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = read_until(&mut lines, is_text_delta).await;
    kill(Pid::from_raw(child.id().unwrap() as i32), Signal::SIGINT).unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        events.push(serde_json::from_str(&line).unwrap());
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(130));
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
}

/// `kill -9` mid-stream loses only the streaming message; `--continue` resumes the session with
/// the earlier prompt in context.
#[tokio::test]
async fn a_killed_run_resumes_with_continue() {
    let mock = mock(vec![
        slow_text(&"never finished ".repeat(40)),
        MockResponse::text("Resumed."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let mut child = env.spawn(&["run", "--json", "--model", MODEL, "first prompt"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    read_until(&mut lines, is_text_delta).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let files = env.session_files();
    assert_eq!(files.len(), 1);
    assert!(
        std::path::PathBuf::from(format!("{}.lock", files[0].display())).exists(),
        "stale lock left by kill -9"
    );

    let out = env.run(&["run", "--continue", "second prompt"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("Resumed."));
    assert_eq!(env.session_files(), files, "the same session continued");
    let texts = request_texts(&mock.requests()[1].body);
    let users: Vec<&str> = texts
        .iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(users, ["first prompt", "second prompt"]);
    assert_valid_pi_v3(&files[0]);
    let lines = session_lines(&files[0]);
    let roles: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["message"]["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "user", "assistant"]);
    // The model recorded by the first run was reused without --model.
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "model_change").count(),
        1
    );
}

#[tokio::test]
async fn session_and_fork_continue_stored_sessions() {
    let mock = mock(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    assert_eq!(
        env.run(&["run", "--model", MODEL, "q1"])
            .await
            .status
            .code(),
        Some(0)
    );
    let file = env.session_files().remove(0);
    let id = session_lines(&file)[0]["id"].as_str().unwrap().to_string();
    let out = env.run(&["run", "--session", &id[..13], "q2"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.run(&["run", "--fork", &id, "q3"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = env.session_files();
    assert_eq!(files.len(), 2);
    let fork = files.iter().find(|f| **f != file).unwrap();
    assert_valid_pi_v3(fork);
    let header = &session_lines(fork)[0];
    assert_eq!(header["parentSession"], file.to_str().unwrap());
    let users = |body: &Value| {
        request_texts(body)
            .into_iter()
            .filter(|(r, _)| r == "user")
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
    };
    assert_eq!(users(&mock.requests()[1].body), ["q1", "q2"]);
    assert_eq!(users(&mock.requests()[2].body), ["q1", "q2", "q3"]);
    // The source session is unchanged by the fork.
    let source_users = session_lines(&file)
        .iter()
        .filter(|l| l["message"]["role"] == "user")
        .count();
    assert_eq!(source_users, 2);
}

#[tokio::test]
async fn sessions_list_shows_id_cwd_name_time_and_count() {
    let mock = mock(vec![MockResponse::text("ok")]).await;
    let env = CliEnv::with_mock(&mock);
    assert_eq!(
        env.run(&["run", "--model", MODEL, "hello"])
            .await
            .status
            .code(),
        Some(0)
    );
    let file = env.session_files().remove(0);
    let id = session_lines(&file)[0]["id"].as_str().unwrap().to_string();
    let out = env.run(&["sessions", "list"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(env.project().to_str().unwrap()), "{row}");
    assert!(row.contains("  2  "), "two messages: {row}");
    let out = env
        .run(&[
            "sessions",
            "list",
            "--json",
            "--cwd",
            env.project().to_str().unwrap(),
        ])
        .await;
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], id.as_str());
    assert_eq!(rows[0]["messageCount"], 2);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = env
        .run(&[
            "sessions",
            "list",
            "--json",
            "--cwd",
            elsewhere.path().to_str().unwrap(),
        ])
        .await;
    assert!(json_lines(&out).is_empty());
}

#[tokio::test]
async fn no_model_configured_says_what_to_set_and_creates_nothing() {
    let env = CliEnv::new();
    let out = env.run(&["run", "hello"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    for needle in [
        "no model is configured",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "models.json",
        "--model",
    ] {
        assert!(err.contains(needle), "missing {needle}: {err}");
    }
    assert!(stdout(&out).is_empty());
    assert!(env.session_files().is_empty());
}

#[tokio::test]
async fn the_demo_reads_edits_checks_and_answers_without_a_model() {
    let env = CliEnv::new();
    let out = env.run(&["demo", "--keep"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "[read hello.sh] ok",
        "[edit hello.sh] ok",
        "[bash sh hello.sh] ok",
        "Fixed:",
        "tokens:",
    ] {
        assert!(text.contains(needle), "missing {needle}: {text}");
    }
    let kept = text.lines().find_map(|l| l.strip_prefix("kept: ")).unwrap();
    let script = std::fs::read_to_string(std::path::Path::new(kept).join("hello.sh")).unwrap();
    assert!(script.contains("echo \"Hello, world\""), "{script}");
    std::fs::remove_dir_all(kept).unwrap();

    let out = env.run(&["demo", "--json"]).await;
    assert_eq!(out.status.code(), Some(0));
    let events = json_lines(&out);
    let bash_end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end" && e["toolName"] == "bash")
        .unwrap();
    assert!(
        bash_end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Hello, world")
    );
    assert_eq!(events.last().unwrap()["type"], "agent_settled");
}

#[tokio::test]
async fn help_and_version_go_to_stdout() {
    let env = CliEnv::new();
    let out = env.run(&["--version"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out).trim(),
        format!("agent-lsp {}", env!("CARGO_PKG_VERSION"))
    );
    let out = env.run(&["run", "--help"]).await;
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for flag in [
        "--model",
        "--cwd",
        "--json",
        "--approve",
        "--session",
        "--continue",
        "--fork",
        "--session-dir",
        "--no-session",
        "--thinking",
    ] {
        assert!(help.contains(flag), "missing {flag}");
    }
    let out = env.run(&["run", "--continue", "--no-session", "x"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "conflicting flags are a usage error"
    );
    let mut child = env.spawn(&["-v", "run", "--no-session", "--model", "nosuch/model", "x"]);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .await
        .unwrap();
    assert!(err.contains("unknown provider \"nosuch\""), "{err}");
}
