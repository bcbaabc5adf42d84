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

async fn signal_aborts_cleanly(signal: Signal, code: i32) {
    let mock = mock(vec![slow_text(
        &"a long answer that keeps streaming ".repeat(20),
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
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
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
        slow_text(&"never finished ".repeat(40)),
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

fn usage(input: u64, output: u64) -> Option<agent_lsp::testing::MockUsage> {
    Some(serde_json::from_value(json!({"input": input, "output": output})).unwrap())
}

/// Built-in prices apply to the mock's usage; the session total spans runs.
#[tokio::test]
async fn usage_and_cost_are_reported_per_run_and_per_session() {
    let mock = mock(vec![
        MockResponse {
            text: Some("one".into()),
            usage: usage(1000, 50),
            ..Default::default()
        },
        MockResponse {
            text: Some("two".into()),
            usage: usage(2000, 100),
            ..Default::default()
        },
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    // gpt-4.1: $2 input, $8 output per million tokens.
    let out = env.run(&["run", "--model", "openai/gpt-4.1", "q1"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("tokens: 1000 in, 50 out · cost $0.0024 · session $0.0024"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["run", "--continue", "q2"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("tokens: 2000 in, 100 out · cost $0.0048 · session $0.0072"),
        "{}",
        stdout(&out)
    );
    let file = env.session_files().remove(0);
    let costs: Vec<f64> = session_lines(&file)
        .iter()
        .filter(|l| l["message"]["role"] == "assistant")
        .map(|l| l["message"]["usage"]["cost"]["total"].as_f64().unwrap())
        .collect();
    assert_eq!(costs.len(), 2);
    assert!(
        (costs[0] - 0.0024).abs() < 1e-9 && (costs[1] - 0.0048).abs() < 1e-9,
        "{costs:?}"
    );
}

/// A session file as pi writes it (tree, branch summary, compaction, custom entries) continues
/// through the binary: the model sees pi's context and the new entries hang off pi's leaf.
#[tokio::test]
async fn a_pi_session_file_continues_through_the_binary() {
    let mock = mock(vec![MockResponse::text("Continuing.")]).await;
    let env = CliEnv::with_mock(&mock);
    let dir = env.home.path().join("pi");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pi-session.jsonl");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sessions/pi-v3.jsonl"),
        &file,
    )
    .unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let project = env.project();
    let args = [
        "run",
        "--session",
        file.to_str().unwrap(),
        "--cwd",
        project.to_str().unwrap(),
        "--model",
        MODEL,
        "and now?",
    ];
    let out = env.run(&args).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let texts = request_texts(&mock.requests()[0].body);
    let users: Vec<&str> = texts
        .iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(
        users[0].starts_with("The conversation history before this point was compacted"),
        "{users:?}"
    );
    assert_eq!(users.last(), Some(&"and now?"));
    assert!(users.contains(&"Continue please"));
    assert!(
        !texts.iter().any(|(_, t)| t.contains("Branch A answer")),
        "abandoned branch left out"
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&before),
        "pi's lines are kept byte for byte"
    );
    let lines = session_lines(&file);
    let new: Vec<&Value> = lines[before.lines().count()..].iter().collect();
    let kinds: Vec<&str> = new.iter().map(|l| l["type"].as_str().unwrap()).collect();
    // pi's session used openai/gpt-4.1 at thinking "low"; this run's model (no reasoning, so
    // thinking off) is recorded before its messages.
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message"
        ]
    );
    assert_eq!(new[0]["parentId"], "a0000011");
    assert_eq!(new[1]["thinkingLevel"], "off");
    assert_valid_pi_v3(&file);
}

#[tokio::test]
async fn thinking_levels_are_clamped_recorded_and_validated() {
    let mock = mock(vec![MockResponse::text("a"), MockResponse::text("b")]).await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "--model", "openai/gpt-5", "--thinking", "xhigh", "q"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mock.requests()[0].body["reasoning_effort"], "high");
    let file = env.session_files().remove(0);
    let levels: Vec<Value> = session_lines(&file)
        .iter()
        .filter(|l| l["type"] == "thinking_level_change")
        .map(|l| l["thinkingLevel"].clone())
        .collect();
    assert_eq!(
        levels,
        [json!("high")],
        "xhigh is clamped to what gpt-5 accepts"
    );
    // A model without reasoning runs with thinking off.
    let out = env
        .run(&[
            "run",
            "--no-session",
            "--model",
            "openai/gpt-4.1",
            "--thinking",
            "high",
            "q",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(mock.requests()[1].body.get("reasoning_effort").is_none());
    let out = env
        .run(&[
            "run",
            "--no-session",
            "--model",
            MODEL,
            "--thinking",
            "lots",
            "q",
        ])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown thinking level \"lots\""),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn anthropic_and_models_json_providers_resolve_through_the_binary() {
    let mock = mock(vec![
        MockResponse::text("from claude"),
        MockResponse::text("from local"),
    ])
    .await;
    let mut env = CliEnv::new();
    env.set("ANTHROPIC_BASE_URL", &mock.anthropic_base_url());
    env.set("ANTHROPIC_API_KEY", "ant-key");
    let out = env
        .run(&[
            "run",
            "--no-session",
            "--model",
            "anthropic/claude-haiku-4-5",
            "hi",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("from claude"));
    let request = &mock.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("ant-key"));
    assert_eq!(request.body["model"], "claude-haiku-4-5");

    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    let models = json!({"providers": {"local": {
        "baseUrl": mock.openai_base_url(), "api": "openai-completions",
        "models": [{"id": "qwen-local", "contextWindow": 32768}]}}});
    std::fs::write(config.join("models.json"), models.to_string()).unwrap();
    // The first models.json model is the default when no key picks one.
    let mut env2 = CliEnv::new();
    env2.home = env.home;
    let out = env2.run(&["run", "--no-session", "hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("from local"));
    assert_eq!(mock.requests()[1].body["model"], "qwen-local");
    assert_eq!(mock.requests()[1].header("authorization"), None);
}
