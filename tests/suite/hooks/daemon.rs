//! Hooks in the daemon: `hook` events, a `PreToolUse` `ask` forcing the question and the
//! `Notification` it brings, `PreCompact` on `agent/compact`, `SessionEnd` at shutdown,
//! `agent/getState`'s `hooks`, a refused prompt, and the project's hooks asked about.

use std::time::Duration;

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};
use serde_json::{Value, json};

use super::{LOG, events_of, group, hook, input, logged, project_hooks, user_hooks};
use crate::suite::support::lsp_client::{HANG_BOUND, LspClient, Spawn};

async fn daemon(responses: Vec<MockResponse>) -> (MockProvider, LspClient) {
    let mock = MockProvider::start(MockScript { responses }).await.unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![],
    })
    .await;
    (mock, client)
}

async fn prompt(client: &LspClient, text: &str) -> (String, String) {
    let reply = client
        .request("agent/prompt", json!({"message": text}))
        .await;
    let field = |k: &str| {
        reply[k]
            .as_str()
            .unwrap_or_else(|| panic!("{reply}"))
            .to_owned()
    };
    (field("sessionId"), field("runId"))
}

/// The session's `hook` events.
fn hook_events(client: &LspClient, session: &str) -> Vec<Value> {
    (client.events(session).into_iter())
        .filter(|e| e["event"]["type"] == "hook")
        .collect()
}

async fn wait_hook_event(client: &LspClient, event: &str) -> Value {
    client
        .wait_for(event, |m| {
            m["method"] == "$/agentEvent"
                && m["params"]["event"]["type"] == "hook"
                && m["params"]["event"]["event"] == event
        })
        .await["params"]
        .clone()
}

#[tokio::test]
async fn a_pre_tool_use_ask_asks_and_notifies_and_each_event_is_shown() {
    let (mock, client) = daemon(vec![
        MockResponse::tool_call("r1", "read", json!({"path": "a.txt"})),
        MockResponse::text("read it"),
        MockResponse::text("SUMMARY"),
    ])
    .await;
    std::fs::write(client.workspace.path().join("a.txt"), "alpha").unwrap();
    let ask = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "ask", "permissionDecisionReason": "reads are watched"}});
    user_hooks(
        client.home.path(),
        json!({
            "PreToolUse": [group(Some("Read"), &[hook(&format!("echo '{ask}'"))])],
            "Notification": [group(Some("permission_prompt"), &[hook(LOG)])],
            "PreCompact": [group(None, &[hook(LOG)])],
            "SessionEnd": [group(None, &[hook(LOG)])],
        }),
    );
    client
        .initialize(
            LspClient::agent_caps(false),
            json!({"compaction": {"keepRecentTokens": 1}}),
        )
        .await;
    let (session, run) = prompt(&client, "read a.txt").await;
    client.wait_settled(&session, &run).await;

    // `read` runs unasked by default: the hook's `ask` made it ask.
    let asked: Vec<Value> = (client.log().into_iter())
        .filter(|m| m["method"] == "agent/beforeToolCall")
        .map(|m| m["params"]["toolName"].clone())
        .collect();
    assert_eq!(asked, [json!("read")]);
    assert_eq!(mock.requests().len(), 2);
    // In the background: its event may come after the run settled (`runId` null then).
    let notified = wait_hook_event(&client, "Notification").await;
    assert_eq!(notified["event"]["outcome"], "continue");
    let logged_now = logged(client.home.path());
    let notification = input(&logged_now, "Notification");
    assert_eq!(notification["notification_type"], "permission_prompt");
    assert_eq!(
        notification["message"],
        "agent-lsp needs your permission to use read"
    );
    assert_eq!(notification["title"], "agent-lsp");
    let pre = (hook_events(&client, &session).into_iter())
        .find(|e| e["event"]["event"] == "PreToolUse")
        .unwrap();
    assert_eq!(pre["runId"], run);
    assert_eq!(
        pre["event"],
        json!({"type": "hook", "event": "PreToolUse", "hook": pre["event"]["hook"],
               "outcome": "ask", "message": "reads are watched",
               "durationMs": pre["event"]["durationMs"], "toolCallId": "r1"})
    );

    let compacted = client
        .request(
            "agent/compact",
            json!({"sessionId": session, "instructions": "keep the file name"}),
        )
        .await;
    assert!(compacted["summary"].is_string(), "{compacted}");
    let compact = input(&logged(client.home.path()), "PreCompact").clone();
    assert_eq!(compact["trigger"], "manual");
    assert_eq!(compact["custom_instructions"], "keep the file name");

    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    let hooks: Vec<(&str, &str, &str)> = (state["hooks"].as_array().unwrap().iter())
        .map(|h| {
            let f = |k: &str| h[k].as_str().unwrap();
            (f("event"), f("source"), f("status"))
        })
        .collect();
    assert_eq!(
        hooks,
        [
            ("PreToolUse", "user", "active"),
            ("Notification", "user", "active"),
            ("PreCompact", "user", "active"),
            ("SessionEnd", "user", "active"),
        ]
    );
    assert_eq!(state["hooks"][0]["matcher"], "Read");
    assert_eq!(state["hooks"][0]["timeoutSec"], 60.0);

    let mut client = client;
    assert!(client.stop().await.success());
    let logged = logged(client.home.path());
    assert_eq!(
        events_of(&logged),
        ["Notification", "PreCompact", "SessionEnd"]
    );
    assert_eq!(input(&logged, "SessionEnd")["reason"], "other");
}

#[tokio::test]
async fn a_refused_prompt_ends_its_run_at_once_and_the_model_never_sees_it() {
    let (mock, client) = daemon(vec![MockResponse::text("never")]).await;
    user_hooks(
        client.home.path(),
        json!({"UserPromptSubmit": [group(None, &[hook("echo 'not today' >&2; exit 2")])]}),
    );
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    let (session, run) = prompt(&client, "hello").await;
    let events = client.wait_settled(&session, &run).await;
    let kinds: Vec<&str> = (events.iter())
        .filter(|e| e["runId"] == run)
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["hook", "agent_start", "agent_end", "agent_settled"]);
    let hook = &events[0]["event"];
    assert_eq!(hook["event"], "UserPromptSubmit");
    assert_eq!(hook["outcome"], "block");
    assert_eq!(hook["message"], "not today");
    assert!(mock.requests().is_empty());
    let messages = client
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    let users = (messages["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 0, "{messages}");
    // The session takes the next prompt (refused again: the hook is still there).
    let second = client
        .request(
            "agent/prompt",
            json!({"message": "again", "sessionId": session}),
        )
        .await;
    let second = second["runId"]
        .as_str()
        .unwrap_or_else(|| panic!("{second}"));
    client.wait_settled(&session, second).await;
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_projects_hooks_run_once_the_user_trusts_them() {
    let (mock, client) = daemon(vec![MockResponse::text("one")]).await;
    let project = std::fs::canonicalize(client.workspace.path()).unwrap();
    project_hooks(
        &project,
        json!({"UserPromptSubmit": [group(None, &[hook(LOG)])]}),
    );
    client.set_approvals(Box::new(|_| None));
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    let created = client.request("agent/newSession", json!({})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let question = client
        .wait_for("the hooks trust question", |m| {
            m["method"] == "agent/beforeToolCall" && m["params"]["toolName"] == "project_hooks"
        })
        .await;
    let params = &question["params"];
    let shown = project.display().to_string();
    assert_eq!(params["runId"], "");
    assert_eq!(params["kind"], "execute");
    assert_eq!(
        params["title"],
        format!("Run the hooks of {shown}/.agent-lsp?")
    );
    assert_eq!(
        params["args"],
        json!({"project": shown, "changes": [], "hooks": [{"event": "UserPromptSubmit",
            "matcher": null, "command": LOG, "file": ".agent-lsp/settings.json"}]})
    );
    assert_eq!(
        params["preview"],
        json!({"type": "command", "cwd": shown,
               "command": format!("UserPromptSubmit: {LOG} (.agent-lsp/settings.json)")})
    );
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["hooks"][0]["status"], "untrusted");
    assert_eq!(state["hooks"][0]["source"], "project");
    client
        .reply(&question["id"], json!({"decision": "allowAlways"}))
        .await;
    tokio::time::timeout(HANG_BOUND, async {
        loop {
            let state = client
                .request("agent/getState", json!({"sessionId": session}))
                .await;
            if state["hooks"][0]["status"] == "active" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the answer was taken");
    let reply = client
        .request(
            "agent/prompt",
            json!({"message": "hi", "sessionId": session}),
        )
        .await;
    let run = reply["runId"].as_str().unwrap().to_owned();
    client.wait_settled(&session, &run).await;
    assert_eq!(mock.requests().len(), 1);
    let logged = logged(client.home.path());
    assert_eq!(input(&logged, "UserPromptSubmit")["prompt"], "hi");
    // Remembered for the project, as the hooks are written.
    let trust = client.home.path().join("state/agent-lsp/hooks-trust.json");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(trust).unwrap()).unwrap();
    let answer = &stored["projects"][shown.as_str()];
    assert_eq!(answer["allowed"], true, "{stored}");
    assert!(answer["entries"][".agent-lsp/settings.json"]["UserPromptSubmit"].is_string());
}
