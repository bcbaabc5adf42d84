//! Hooks in `agent-lsp run`: every event of a run with Claude Code's input, context reaching the
//! model, blocks reaching it, a hanging and a failing hook, `Stop` keeping the agent going, a
//! refused prompt, `PreCompact`, and a project's hooks only with `--trust-project-hooks`.

use std::time::{Duration, Instant};

use agent_lsp::testing::{MockProvider, MockResponse, MockScript, MockUsage};
use serde_json::{Value, json};

use super::{LOG, events_of, group, hook, hook_entries, input, logged, project_hooks, user_hooks};
use crate::suite::support::cli_run::{
    CliEnv, json_lines, request_texts, session_lines, stderr, stdout,
};

const MODEL: &str = "openai/mock-model";

async fn mock(responses: Vec<MockResponse>) -> MockProvider {
    MockProvider::start(MockScript { responses }).await.unwrap()
}

fn hook_events(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "hook").collect()
}

/// The text of the tool result for `call` in a request.
fn tool_result(body: &Value, call: &str) -> String {
    let messages = body["messages"].as_array().unwrap();
    let result = (messages.iter())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call)
        .unwrap_or_else(|| panic!("no result for {call}: {body}"));
    match &result["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn every_event_of_a_run_gets_claude_codes_input_and_context_reaches_the_model() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "echo hi"})),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let home = env.home.path();
    let start = json!({"hookSpecificOutput": {"hookEventName": "SessionStart",
        "additionalContext": "The build uses make."}});
    user_hooks(
        home,
        json!({
            "SessionStart": [group(None, &[hook(&format!("{LOG}; echo '{start}'"))])],
            "UserPromptSubmit": [group(None, &[hook(&format!("{LOG}; echo Today is hook day."))])],
            "PreToolUse": [group(Some("Bash"), &[hook(LOG)])],
            "PostToolUse": [group(Some("Bash"), &[hook(LOG)]), group(Some("Read"), &[hook(LOG)])],
            "Stop": [group(None, &[hook(LOG)])],
            "SessionEnd": [group(None, &[hook(LOG)])],
        }),
    );
    let out = env
        .run(&[
            "run",
            "--json",
            "--approve",
            "all",
            "--model",
            MODEL,
            "list it",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let logged = logged(home);
    assert_eq!(
        events_of(&logged),
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd"
        ]
    );
    let file = env.session_files().remove(0);
    let lines = session_lines(&file);
    let session_id = lines[0]["id"].as_str().unwrap();
    for input in &logged {
        assert_eq!(input["session_id"], session_id, "{input}");
        assert_eq!(
            input["transcript_path"],
            file.display().to_string(),
            "{input}"
        );
        assert_eq!(input["cwd"], env.project().display().to_string(), "{input}");
    }
    let start = input(&logged, "SessionStart");
    assert_eq!(start["source"], "startup");
    assert_eq!(start["model"], MODEL);
    assert_eq!(input(&logged, "UserPromptSubmit")["prompt"], "list it");
    let pre = input(&logged, "PreToolUse");
    assert_eq!(pre["tool_name"], "Bash");
    assert_eq!(pre["agent_lsp_tool_name"], "bash");
    assert_eq!(pre["tool_input"], json!({"command": "echo hi"}));
    assert_eq!(pre["tool_use_id"], "c1");
    let post = input(&logged, "PostToolUse");
    assert_eq!(post["tool_name"], "Bash");
    let output = post["tool_response"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(output.contains("hi"), "{post}");
    let stop = input(&logged, "Stop");
    assert_eq!(stop["stop_hook_active"], false);
    assert_eq!(stop["last_assistant_message"], "done");
    assert_eq!(input(&logged, "SessionEnd")["reason"], "other");

    // Both contexts are part of the prompt the model reads (and the session file keeps).
    let requests = mock.requests();
    let prompt = &request_texts(&requests[0].body)[1];
    assert_eq!(prompt.0, "user");
    assert!(
        prompt.1
            == "list it\n[Context from the user's SessionStart hook]\nThe build uses make.\n\
                [Context from the user's UserPromptSubmit hook]\nToday is hook day.",
        "{prompt:?}"
    );
    let user = lines
        .iter()
        .find(|l| l["message"]["role"] == "user")
        .unwrap();
    assert_eq!(user["message"]["content"].as_array().unwrap().len(), 3);

    let events = json_lines(&out);
    let hooks = hook_events(&events);
    let shown: Vec<(&str, &str)> = (hooks.iter())
        .map(|h| (h["event"].as_str().unwrap(), h["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            ("SessionStart", "continue"),
            ("UserPromptSubmit", "continue"),
            ("PreToolUse", "continue"),
            ("PostToolUse", "continue"),
            ("Stop", "continue"),
            ("SessionEnd", "continue"),
        ]
    );
    assert_eq!(hooks[0]["additionalContext"], "The build uses make.");
    assert_eq!(hooks[2]["toolCallId"], "c1");
    assert!(
        hooks
            .iter()
            .all(|h| h["durationMs"].is_u64() && h["hook"].is_string())
    );
    let recorded: Vec<&str> = (hook_entries(&lines).iter())
        .map(|d| d["event"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, ["SessionStart", "UserPromptSubmit"]);
}

#[tokio::test]
async fn a_blocking_pre_tool_use_hooks_reason_reaches_the_model() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "touch blocked.txt"})),
        MockResponse::tool_call("c2", "write", json!({"path": "w.txt", "content": "x"})),
        MockResponse::text("understood"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "docs are frozen"}});
    user_hooks(
        env.home.path(),
        json!({"PreToolUse": [
            group(Some("Bash"), &[hook("echo 'no touching here' >&2; exit 2")]),
            group(Some("Edit|Write"), &[hook(&format!("echo '{deny}'"))]),
        ]}),
    );
    let out = env
        .run(&["run", "--json", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!env.project().join("blocked.txt").exists());
    assert!(!env.project().join("w.txt").exists());
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        tool_result(&requests[1].body, "c1"),
        "Blocked by a PreToolUse hook: no touching here"
    );
    assert_eq!(
        tool_result(&requests[2].body, "c2"),
        "Blocked by a PreToolUse hook: docs are frozen"
    );
    let events = json_lines(&out);
    let hooks = hook_events(&events);
    let shown: Vec<(&str, &str, &str)> = (hooks.iter())
        .map(|h| {
            let field = |k: &str| h[k].as_str().unwrap();
            (field("outcome"), field("toolCallId"), field("message"))
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("block", "c1", "no touching here"),
            ("deny", "c2", "docs are frozen")
        ]
    );
    let lines = session_lines(&env.session_files()[0]);
    assert_eq!(hook_entries(&lines).len(), 2);
}

#[tokio::test]
async fn a_hanging_hook_is_timed_out_and_a_failing_one_stops_nothing() {
    let mock = mock(vec![
        MockResponse::tool_call("c1", "bash", json!({"command": "touch ran.txt"})),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    user_hooks(
        env.home.path(),
        json!({"PreToolUse": [group(None, &[
            json!({"type": "command", "command": "sleep 60", "timeout": 1}),
            hook("echo 'broken hook' >&2; exit 1"),
        ])]}),
    );
    let started = Instant::now();
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(45));
    assert!(env.project().join("ran.txt").exists(), "the call still ran");
    let err = stderr(&out);
    assert!(
        err.contains("hook: PreToolUse hook `sleep 60` timed out: timed out after 1."),
        "{err}"
    );
    assert!(
        err.contains("hook: PreToolUse hook `echo 'broken hook' >&2; exit 1` failed: broken hook"),
        "{err}"
    );
    let lines = session_lines(&env.session_files()[0]);
    let outcomes: Vec<&str> = (hook_entries(&lines).iter())
        .map(|d| d["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["timeout", "error"]);
}

#[tokio::test]
async fn a_blocking_stop_hook_keeps_the_agent_going_with_its_reason() {
    let mock = mock(vec![
        MockResponse::text("done"),
        MockResponse::text("tests ran"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let stop = r#"input=$(cat); echo "$input" >> "$HOME/hooks.jsonl"; case "$input" in *'"stop_hook_active":false'*) echo 'Run the tests first.' >&2; exit 2;; esac"#;
    user_hooks(
        env.home.path(),
        json!({"Stop": [group(None, &[hook(stop)])]}),
    );
    let out = env
        .run(&["run", "--json", "--model", MODEL, "fix it"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let texts = request_texts(&requests[1].body);
    assert_eq!(
        texts.last().unwrap(),
        &(
            "user".to_owned(),
            "A Stop hook of the user did not let you stop yet:\nRun the tests first.".to_owned()
        )
    );
    let logged = logged(env.home.path());
    let active: Vec<&Value> = logged.iter().map(|l| &l["stop_hook_active"]).collect();
    assert_eq!(active, [false, true]);
    assert_eq!(logged[1]["last_assistant_message"], "tests ran");
    let events = json_lines(&out);
    let outcomes: Vec<&str> = (hook_events(&events).iter())
        .map(|h| h["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["block", "continue"]);
    // The agent's continuation is one run, recorded as messages of the session.
    assert_eq!(
        events.iter().filter(|e| e["type"] == "agent_end").count(),
        1
    );
    let lines = session_lines(&env.session_files()[0]);
    let roles: Vec<&str> = (lines.iter())
        .filter_map(|l| l["message"]["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
}

#[tokio::test]
async fn a_user_prompt_submit_block_refuses_the_prompt_before_the_model_sees_it() {
    let mock = mock(vec![MockResponse::text("never")]).await;
    let env = CliEnv::with_mock(&mock);
    user_hooks(
        env.home.path(),
        json!({"UserPromptSubmit": [group(None, &[hook("echo 'no secrets in prompts' >&2; exit 2")])]}),
    );
    let out = env
        .run(&["run", "--json", "--model", MODEL, "my password is hunter2"])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "agent-lsp: The prompt was blocked by a UserPromptSubmit hook: no secrets in prompts"
        ),
        "{err}"
    );
    assert!(mock.requests().is_empty());
    let events = json_lines(&out);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // The hook runs before the prompt reaches the agent; the run then ends at once.
    assert_eq!(kinds, ["hook", "agent_start", "agent_end", "agent_settled"]);
    let lines = session_lines(&env.session_files()[0]);
    assert!(
        lines.iter().all(|l| l["type"] != "message"),
        "the prompt is not recorded: {lines:?}"
    );
    assert_eq!(hook_entries(&lines)[0]["outcome"], "block");
}

#[tokio::test]
async fn pre_compact_runs_before_an_automatic_compaction() {
    let read = MockResponse {
        usage: Some(MockUsage {
            input: 500,
            output: 20,
            ..Default::default()
        }),
        ..MockResponse::tool_call("r1", "read", json!({"path": "a.txt"}))
    };
    let mock = mock(vec![
        read,
        MockResponse::text("PREFIX"),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "alpha").unwrap();
    let dir = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({
        "compaction": {"keepRecentTokens": 1},
        "hooks": {"PreCompact": [group(Some("auto"), &[hook(LOG)])]},
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let out = env
        .run(&[
            "run",
            "--json",
            "--model",
            MODEL,
            "--compact-threshold",
            "100",
            "read a.txt",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let logged = logged(env.home.path());
    assert_eq!(events_of(&logged), ["PreCompact"]);
    assert_eq!(logged[0]["trigger"], "auto");
    assert_eq!(logged[0]["custom_instructions"], "");
    // The hook ran before the compaction started.
    let events = json_lines(&out);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let hook_at = kinds.iter().position(|k| *k == "hook").unwrap();
    let start_at = kinds.iter().position(|k| *k == "compaction_start").unwrap();
    assert!(hook_at < start_at, "{kinds:?}");
}

#[tokio::test]
async fn a_projects_hooks_run_only_when_trusted() {
    let mock = mock(vec![MockResponse::text("one"), MockResponse::text("two")]).await;
    let env = CliEnv::with_mock(&mock);
    let marker = env.home.path().join("project-hook-ran");
    project_hooks(
        &env.project(),
        json!({"UserPromptSubmit": [group(None, &[hook(
            r#"printf '%s %s' "$AGENT_LSP_PROJECT_DIR" "$CLAUDE_PROJECT_DIR" > "$HOME/project-hook-ran""#
        )])]}),
    );
    let out = env.run(&["run", "--model", MODEL, "first"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!marker.exists(), "an untrusted project's hook ran");
    assert!(
        stderr(&out).contains("the project's hooks (.agent-lsp/settings.json, settings.local.json) do not run: they are not trusted (run with --trust-project-hooks to run them)"),
        "{}",
        stderr(&out)
    );
    let out = env
        .run(&["run", "--trust-project-hooks", "--model", MODEL, "second"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let project = env.project().display().to_string();
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        format!("{project} {project}")
    );
}

#[tokio::test]
async fn doctor_lists_the_hooks_a_broken_entry_and_an_untrusted_project() {
    let env = CliEnv::new();
    user_hooks(
        env.home.path(),
        json!({"Stop": [group(None, &[hook(LOG), json!({"type": "command"})])]}),
    );
    project_hooks(
        &env.project(),
        json!({"PreToolUse": [group(Some("Bash"), &[hook("./check.sh")])]}),
    );
    let out = env.run(&["doctor", "--json"]).await;
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let hooks: Vec<&Value> = (report["checks"].as_array().unwrap().iter())
        .filter(|c| c["name"] == "hooks")
        .collect();
    assert_eq!(hooks.len(), 2, "{report:#}");
    assert_eq!(hooks[0]["status"], "problem");
    assert!(
        hooks[0]["detail"].as_str().unwrap().ends_with(
            "settings.json: hooks.Stop[0].hooks[1].command: expected a non-empty string"
        ),
        "{}",
        hooks[0]
    );
    assert_eq!(hooks[1]["status"], "warning");
    assert_eq!(
        hooks[1]["detail"],
        "2 configured (Stop, PreToolUse); the project's (.agent-lsp/settings*.json) are not allowed yet"
    );
    assert!(
        hooks[1]["fix"]
            .as_str()
            .unwrap()
            .contains("--trust-project-hooks")
    );
    assert_eq!(out.status.code(), Some(1), "a broken entry is a problem");
}

#[tokio::test]
async fn a_continued_session_starts_with_source_resume() {
    let mock = mock(vec![MockResponse::text("one"), MockResponse::text("two")]).await;
    let env = CliEnv::with_mock(&mock);
    user_hooks(
        env.home.path(),
        json!({"SessionStart": [group(Some("resume"), &[hook(LOG)])]}),
    );
    let first = env.run(&["run", "--model", MODEL, "first"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(
        logged(env.home.path()).is_empty(),
        "a new session is not a resume"
    );
    let second = env.run(&["run", "-c", "--model", MODEL, "second"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let logged = logged(env.home.path());
    assert_eq!(events_of(&logged), ["SessionStart"]);
    assert_eq!(logged[0]["source"], "resume");
    let file = env.session_files().remove(0);
    assert_eq!(logged[0]["transcript_path"], file.display().to_string());
}

/// `SubagentStop`: a subagent that finished gets the session's hooks, with Claude Code's input
/// (`agent_type`, `agent_id`, `stop_hook_active`, `last_assistant_message`); a block keeps the
/// child going with the hook's reason, and the task's answer is the child's last words.
#[tokio::test]
async fn a_blocking_subagent_stop_hook_keeps_the_child_going() {
    let mock = mock(vec![
        MockResponse::tool_call(
            "t1",
            "task",
            json!({"description": "look", "prompt": "Look around", "agent": "explore"}),
        ),
        MockResponse::text("nothing here"),
        MockResponse::text("looked twice"),
        MockResponse::text("The child looked twice."),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let stop = r#"input=$(cat); echo "$input" >> "$HOME/hooks.jsonl"; case "$input" in *'"stop_hook_active":false'*) echo 'Look again.' >&2; exit 2;; esac"#;
    user_hooks(
        env.home.path(),
        json!({"SubagentStop": [group(Some("explore"), &[hook(stop)])]}),
    );
    let out = env.run(&["run", "--json", "--model", MODEL, "go"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let logged = logged(env.home.path());
    assert_eq!(events_of(&logged), ["SubagentStop", "SubagentStop"]);
    let active: Vec<&Value> = logged.iter().map(|l| &l["stop_hook_active"]).collect();
    assert_eq!(active, [false, true]);
    assert_eq!(logged[0]["agent_type"], "explore");
    assert_eq!(logged[0]["last_assistant_message"], "nothing here");
    assert_eq!(logged[1]["last_assistant_message"], "looked twice");
    assert!(
        logged[0]["agent_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let texts = request_texts(&requests[2].body);
    assert_eq!(
        texts.last().unwrap().1,
        "A SubagentStop hook did not let you stop yet:\nLook again."
    );
    assert_eq!(tool_result(&requests[3].body, "t1"), "looked twice");
}
