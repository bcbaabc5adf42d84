//! `agent-lsp run`: text, JSON events, tools per approval mode, provider errors.

use agent_lsp::testing::MockResponse;
use serde_json::json;

use super::super::support::cli_run::{
    CliEnv, json_lines, request_texts, session_lines, stderr, stdout, types,
};
use super::super::support::pi_session::assert_valid_pi_v3;
use super::{MODEL, mock};

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
    // web_search only with a search service configured.
    assert_eq!(
        tools,
        [
            "read",
            "bash",
            "edit",
            "write",
            "grep",
            "find",
            "ls",
            "bash_output",
            "bash_kill",
            "todo_write",
            "ask_user",
            "web_fetch",
            "task"
        ]
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

#[tokio::test]
async fn a_dash_reads_the_prompt_from_stdin() {
    let mock = mock(vec![MockResponse::text("got it")]).await;
    let env = CliEnv::with_mock(&mock);
    let mut cmd = env.command(&["run", "--no-session", "--model", MODEL, "-"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"a prompt\nfrom a pipe\n")
        .await
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let texts = request_texts(&mock.requests()[0].body);
    assert_eq!(texts.last().unwrap().1, "a prompt\nfrom a pipe\n");
    assert!(
        env.session_files().is_empty(),
        "--no-session writes nothing"
    );
    let out = env
        .run(&["run", "--no-session", "--model", MODEL, "  "])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("the prompt is empty"));
}

/// Paths outside --cwd are refused unless the user allowed their directory with --add-dir.
#[tokio::test]
async fn add_dir_allows_a_directory_outside_the_project_and_nothing_else() {
    let env_dirs = tempfile::tempdir().unwrap();
    let shared = std::fs::canonicalize(env_dirs.path())
        .unwrap()
        .join("shared");
    let private = shared.with_file_name("private");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(shared.join("lib.txt"), "from shared\n").unwrap();
    std::fs::write(private.join("secret.txt"), "private data\n").unwrap();
    let shared_file = shared.join("lib.txt").display().to_string();
    let private_file = private.join("secret.txt").display().to_string();
    let mock = mock(vec![
        MockResponse::tool_call("c1", "read", json!({"path": shared_file})),
        MockResponse::tool_call("c2", "read", json!({"path": private_file})),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let shared_arg = shared.display().to_string();
    let out = env
        .run(&[
            "run",
            "--json",
            "--no-session",
            "--add-dir",
            &shared_arg,
            "--model",
            MODEL,
            "read",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let ends: Vec<(bool, String)> = json_lines(&out)
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| {
            let text = e["result"]["content"][0]["text"].as_str().unwrap_or("");
            (e["isError"].as_bool().unwrap(), text.to_owned())
        })
        .collect();
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert_eq!(ends[0], (false, "from shared\n".to_owned()));
    assert!(ends[1].0, "{ends:?}");
    assert!(
        ends[1]
            .1
            .contains(&format!("and the extra roots ({shared_arg})")),
        "the refusal names what is allowed: {ends:?}"
    );
    let last = request_texts(&mock.requests()[2].body);
    assert!(!last.iter().any(|(_, t)| t.contains("private data")));

    let missing = shared.with_file_name("missing").display().to_string();
    let out = env
        .run(&[
            "run",
            "--no-session",
            "--add-dir",
            &missing,
            "--model",
            MODEL,
            "x",
        ])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--add-dir"), "{}", stderr(&out));
}

/// A retried 429 is visible to the user: a `provider_retry` event in `--json`, a line on
/// stderr in human mode; the run then succeeds.
#[tokio::test]
async fn a_retried_rate_limit_is_shown_as_a_provider_retry() {
    let rate_limited = || {
        let mut r = MockResponse::status(429, "slow down");
        r.retry_after = Some(agent_lsp::testing::RetryAfter::Seconds(0));
        r
    };
    let mock = mock(vec![
        rate_limited(),
        MockResponse::text("finally"),
        rate_limited(),
        MockResponse::text("again"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "--json", "--no-session", "--model", MODEL, "x"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let events = json_lines(&out);
    let retry = events
        .iter()
        .find(|e| e["type"] == "provider_retry")
        .unwrap_or_else(|| panic!("no provider_retry in {:?}", types(&events)));
    assert_eq!(retry["attempt"], 1, "{retry}");
    assert!(
        retry["errorMessage"].as_str().unwrap().contains("429"),
        "{retry}"
    );
    let out = env
        .run(&["run", "--no-session", "--model", MODEL, "x"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).starts_with("again"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("retrying (1/") && err.contains("429"), "{err}");
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test]
async fn web_fetch_runs_only_with_approve_all() {
    let site = super::super::support::web_server::WebServer::start(|_| {
        super::super::support::web_server::Reply::ok("text/plain", "the docs")
    })
    .await;
    let url = site.url("/docs.txt");
    let mock = mock(vec![
        MockResponse::tool_call("f1", "web_fetch", json!({"url": url})),
        MockResponse::text("Refused."),
        MockResponse::tool_call("f2", "web_fetch", json!({"url": url})),
        MockResponse::text("Fetched."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let out = env.run(&["run", "--model", MODEL, "read the docs"]).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "[web_fetch {url}] refused: run again with --approve all"
        )),
        "{text}"
    );
    assert!(site.targets().is_empty(), "read-only runs reach no network");
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "read the docs"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("[web_fetch {url}] ok")),
        "{}",
        stdout(&out)
    );
    assert_eq!(site.targets(), ["/docs.txt"]);
}
