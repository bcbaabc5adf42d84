//! `run`'s loop guards (`--max-turns`, `--loop-guard-*`) against a model that repeats one call
//! forever, and `sessions fork | rename`.

use agent_lsp::testing::MockResponse;
use serde_json::{Value, json};

use super::super::support::cli_run::{
    CliEnv, json_lines, request_texts, session_lines, stderr, stdout, types,
};
use super::{MODEL, mock};

fn looping(tool: &str, args: Value) -> MockResponse {
    MockResponse {
        repeat: true,
        ..MockResponse::tool_call("loop", tool, args)
    }
}

fn guard_events(events: &[Value]) -> Vec<(String, String, u64)> {
    (events.iter())
        .filter(|e| e["type"] == "loop_guard")
        .map(|e| {
            let field = |k: &str| e[k].as_str().unwrap().to_owned();
            (
                field("guard"),
                field("action"),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_repeated_call_guard_notes_the_third_call_and_stops_the_sixth() {
    let mock = mock(vec![looping("read", json!({"path": "a.txt"}))]).await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "same").unwrap();
    let out = env
        .run(&["run", "--json", "--model", MODEL, "read a.txt"])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Stopped: the model made the same read call 6 times in a row."),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 6);
    let events = json_lines(&out);
    let repeated = |action: &str, n| ("repeated_call".to_string(), action.to_string(), n);
    assert_eq!(
        guard_events(&events),
        [
            repeated("warned", 3),
            repeated("warned", 4),
            repeated("warned", 5),
            repeated("stopped", 6)
        ]
    );
    // The stop comes before the turn's end; the run still ends with one agent_end.
    let kinds = types(&events);
    let stop = (events.iter())
        .position(|e| e["action"] == "stopped")
        .unwrap();
    assert_eq!(kinds[stop + 1], "turn_end");
    assert_eq!(kinds.iter().filter(|k| *k == "agent_end").count(), 1);
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false, "stopReason": "repeated_call"})
    );
    // The notes are in the transcript the model saw and in the session file.
    let fourth = request_texts(&mock.requests()[3].body);
    let tool_texts: Vec<&str> = (fourth.iter())
        .filter(|(role, _)| role == "tool")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(!tool_texts[1].contains("[agent-lsp]"));
    assert!(tool_texts[2].starts_with("same"), "{tool_texts:?}");
    assert!(tool_texts[2].contains("3 times in a row. Its result will not change."));
    let file = env.session_files().remove(0);
    let noted = (session_lines(&file).iter())
        .filter(|l| l["message"]["role"] == "toolResult")
        .filter(|l| l.to_string().contains("[agent-lsp]"))
        .count();
    assert_eq!(noted, 4);
    // Without --json: warnings and the stop on stderr.
    let human = env.run(&["run", "--model", MODEL, "read a.txt"]).await;
    assert_eq!(human.status.code(), Some(1));
    let err = stderr(&human);
    assert!(
        err.contains("loop guard: The model made the same read call 3 times in a row.")
            && err.contains("agent-lsp: Stopped: the model made the same read call 6 times"),
        "{err}"
    );
}

#[tokio::test]
async fn max_turns_ends_the_run_and_both_guard_numbers_are_flags() {
    let mock = mock(vec![looping("ls", json!({}))]).await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "--json", "--max-turns", "2", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Stopped: the run reached its turn limit (2)."),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 2);
    let events = json_lines(&out);
    assert_eq!(
        guard_events(&events),
        [("max_turns".to_string(), "stopped".to_string(), 2)]
    );
    assert_eq!(events.last().unwrap()["stopReason"], "max_turns");

    let out = env
        .run(&[
            "run",
            "--json",
            "--loop-guard-warn",
            "2",
            "--loop-guard-stop",
            "4",
            "--model",
            MODEL,
            "go",
        ])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 2 + 4);
    let repeated = |action: &str, n| ("repeated_call".to_string(), action.to_string(), n);
    assert_eq!(
        guard_events(&json_lines(&out)),
        [
            repeated("warned", 2),
            repeated("warned", 3),
            repeated("stopped", 4)
        ]
    );
    let refused = env.run(&["run", "--max-turns", "0", "go"]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
}

/// A run that finishes on its own within the limit is not reported as stopped.
#[tokio::test]
async fn a_run_within_the_turn_limit_ends_normally() {
    let mock = mock(vec![MockResponse::text("hi")]).await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "--json", "--max-turns", "1", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        json_lines(&out).last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
}

#[tokio::test]
async fn sessions_fork_lists_user_messages_and_forks_before_one_and_rename_names() {
    let mock = mock(vec![
        MockResponse::text("a1"),
        MockResponse::text("a2"),
        MockResponse::text("a3"),
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
    let out = env.run(&["run", "--session", &id, "q2"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let listed = env.run(&["sessions", "fork", &id, "--json"]).await;
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let users = json_lines(&listed);
    let texts: Vec<&str> = users.iter().map(|u| u["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["q1", "q2"]);
    let q2 = users[1]["messageId"].as_str().unwrap();
    let forked = env.run(&["sessions", "fork", &id, q2, "--json"]).await;
    assert_eq!(forked.status.code(), Some(0), "{}", stderr(&forked));
    let fork = &json_lines(&forked)[0];
    let fork_lines = session_lines(std::path::Path::new(fork["path"].as_str().unwrap()));
    assert_eq!(fork_lines[0]["parentSession"], file.to_str().unwrap());
    let roles: Vec<&str> = (fork_lines.iter())
        .filter_map(|l| l["message"]["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);
    let fork_id = fork["id"].as_str().unwrap();
    let out = env.run(&["run", "--session", fork_id, "q3"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let users: Vec<String> = (request_texts(&mock.requests()[2].body).into_iter())
        .filter(|(role, _)| role == "user")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(users, ["q1", "q3"]);

    let renamed = env.run(&["sessions", "rename", &id, "my", "work"]).await;
    assert_eq!(renamed.status.code(), Some(0), "{}", stderr(&renamed));
    let rows = json_lines(&env.run(&["sessions", "list", "--json"]).await);
    let title = |id: &str| {
        let row = rows.iter().find(|r| r["id"] == id).unwrap();
        row["title"].as_str().unwrap().to_owned()
    };
    assert_eq!(title(&id), "my work");
    assert_eq!(title(fork_id), "q1");
    let text = stdout(&env.run(&["sessions", "list"]).await);
    let row = text.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(row.contains("my work"), "{row}");
    let bad = env.run(&["sessions", "fork", &id, "nope"]).await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("nope"), "{}", stderr(&bad));
}

/// `todo_write` in a headless run: a `plan_update` line with `--json`, the checklist in the
/// human transcript, and the plan stored in the session file.
#[tokio::test]
async fn the_plan_is_a_json_line_a_checklist_and_a_stored_entry() {
    let todos = json!([
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix it", "status": "in_progress"}
    ]);
    let plan = || MockResponse::tool_call("t1", "todo_write", json!({"todos": todos}));
    let mock = mock(vec![
        plan(),
        MockResponse::text("done"),
        plan(),
        MockResponse::text("done again"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let out = env.run(&["run", "--json", "--model", MODEL, "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json_lines(&out);
    let update = (events.iter())
        .find(|e| e["type"] == "plan_update")
        .expect("a plan_update line");
    assert_eq!(update["todos"], todos);
    let stored: Vec<Value> = (session_lines(&env.session_files()[0]).into_iter())
        .filter(|e| e["customType"] == "agent-lsp.plan")
        .collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["data"]["todos"], todos);

    let out = env.run(&["run", "--model", MODEL, "again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("Plan updated (1/2 done):\n[x] Read the code\n[>] Fix it\n"),
        "{text}"
    );
}
