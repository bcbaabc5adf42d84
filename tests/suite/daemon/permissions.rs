//! Daemon tests: permission rules (protocol.md §3.22): each file and their precedence, trust of
//! a project's allow rules, compound commands, "always" answers saved per scope and honoured by
//! the next session, Claude Code's project file read and never written.

use std::path::{Path, PathBuf};

use super::*;

fn write_json(path: &Path, value: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

fn user_settings(client: &LspClient) -> PathBuf {
    client.home.path().join("config/agent-lsp/settings.json")
}

fn project(client: &LspClient) -> PathBuf {
    std::fs::canonicalize(client.workspace.path()).unwrap()
}

/// The beforeToolCall params the daemon sent for `bash` calls, by command.
fn bash_questions(client: &LspClient) -> Vec<Value> {
    requests_of(client, "agent/beforeToolCall")
        .into_iter()
        .map(|r| r["params"].clone())
        .filter(|p| p["toolName"] == "bash")
        .collect()
}

async fn state(client: &LspClient, session: &str) -> Value {
    client
        .request("agent/getState", json!({ "sessionId": session }))
        .await
}

/// Waits until every project allow rule of `session` has an answer applied (`trusted` set as
/// `expected`).
async fn wait_trusted(client: &LspClient, session: &str, expected: bool) -> Value {
    let deadline = tokio::time::Instant::now() + HANG_BOUND;
    loop {
        let state = state(client, session).await;
        let rules = state["permissions"]["rules"].as_array().unwrap().clone();
        let project_allows: Vec<&Value> = (rules.iter())
            .filter(|r| r.get("trusted").is_some())
            .collect();
        if !project_allows.is_empty() && project_allows.iter().all(|r| r["trusted"] == expected) {
            return state;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the trust answer was never applied: {state}"
        );
        tokio::task::yield_now().await;
    }
}

fn result_of(events: &[Value], id: &str) -> (String, bool) {
    let end = events
        .iter()
        .find(|e| e["event"]["type"] == "tool_execution_end" && e["event"]["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    (
        end["event"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        end["event"]["isError"] == true,
    )
}

#[tokio::test]
async fn rules_from_each_file_and_their_precedence() {
    let responses = vec![
        bash_call("c1", "echo user one"),         // user allow
        bash_call("c2", "echo user denied"),      // the project's deny beats the user's allow
        bash_call("c3", "echo ask me"),           // the user's ask beats the front end's allow
        bash_call("c4", "echo project two"),      // project allow, once trusted
        bash_call("c5", "echo local three"),      // projectLocal allow, once trusted
        bash_call("c6", "echo claude four"),      // .claude allow, once trusted
        bash_call("c7", "echo secret"),           // .claude deny
        bash_call("c8", "echo other && touch x"), // each simple command must be allowed
        bash_call("c9", "echo init five"),        // initializationOptions allow
        MockResponse::text("done"),
    ];
    let options = json!({"sandbox": "off", "permissions": {
        "allow": ["Bash(echo ask:*)", "Bash(echo other:*)", "Bash(echo init:*)"]}});
    let (_mock, client) = agent_setup(responses, LspClient::agent_caps(false), options).await;
    let root = project(&client);
    write_json(
        &user_settings(&client),
        json!({"model": "kept", "permissions": {"allow": ["Bash(echo user:*)"],
               "ask": ["Bash(echo ask:*)"]}}),
    );
    write_json(
        &root.join(".agent-lsp/settings.json"),
        json!({"permissions": {"allow": ["Bash(echo project:*)"],
               "deny": ["Bash(echo user denied:*)"]}}),
    );
    write_json(
        &root.join(".agent-lsp/settings.local.json"),
        json!({"permissions": {"allow": ["Bash(echo local:*)"]}}),
    );
    write_json(
        &root.join(".claude/settings.json"),
        json!({"permissions": {"allow": ["Bash(echo claude:*)"], "deny": ["Bash(echo secret:*)"],
               "defaultMode": "acceptEdits"}, "hooks": {}}),
    );
    let claude_before = std::fs::read(root.join(".claude/settings.json")).unwrap();
    client.set_approvals(Box::new(|params| {
        Some(match params["toolName"].as_str() {
            Some("permission_rules") => json!({"decision": "allow"}),
            _ if params["args"]["command"] == "echo ask me" => json!({"decision": "allow"}),
            _ => json!({"decision": "block", "reason": "not that"}),
        })
    }));
    let created = client.request("agent/newSession", json!({})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let state = wait_trusted(&client, &session, true).await;

    // The trust question named the three project files' allow rules.
    let trust = requests_of(&client, "agent/beforeToolCall")
        .into_iter()
        .map(|r| r["params"].clone())
        .find(|p| p["toolName"] == "permission_rules")
        .unwrap();
    assert_eq!(trust["runId"], "");
    assert_eq!(trust["kind"], "other");
    assert!(
        trust["toolCallId"]
            .as_str()
            .unwrap()
            .starts_with("rules-trust-"),
        "{trust}"
    );
    assert!(
        trust["title"]
            .as_str()
            .unwrap()
            .starts_with("Apply the permission rules of"),
        "{trust}"
    );
    let asked: Vec<(&str, &str)> = (trust["args"]["rules"].as_array().unwrap().iter())
        .map(|r| (r["rule"].as_str().unwrap(), r["source"].as_str().unwrap()))
        .collect();
    assert_eq!(
        asked,
        [
            ("Bash(echo project:*)", "project"),
            ("Bash(echo local:*)", "projectLocal"),
            ("Bash(echo claude:*)", "claudeProject")
        ]
    );
    assert_eq!(trust["preview"]["type"], "command");
    assert!(
        (trust["preview"]["command"].as_str().unwrap())
            .contains(".claude/settings.json:\n  allow Bash(echo claude:*)"),
        "{trust}"
    );

    // getState lists every rule with its source and file.
    let rules = state["permissions"]["rules"].as_array().unwrap();
    let user_file = user_settings(&client).display().to_string();
    assert!(
        rules.contains(&json!({"rule": "Bash(echo user:*)", "behavior": "allow",
        "source": "user", "file": user_file}))
    );
    assert!(
        rules.contains(&json!({"rule": "Bash(echo secret:*)", "behavior": "deny",
        "source": "claudeProject",
        "file": root.join(".claude/settings.json").display().to_string()}))
    );
    assert!(
        rules.contains(&json!({"rule": "Bash(echo init:*)", "behavior": "allow",
        "source": "initializationOptions"}))
    );
    assert!(
        rules.contains(&json!({"rule": "Bash(echo project:*)", "behavior": "allow",
        "source": "project", "trusted": true,
        "file": root.join(".agent-lsp/settings.json").display().to_string()}))
    );
    assert_eq!(state["permissions"]["errors"], json!([]));

    let (_, run, _) = prompt(&client, json!({"sessionId": session, "message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    for ok in ["c1", "c3", "c4", "c5", "c6", "c9"] {
        let (text, is_error) = result_of(&events, ok);
        assert!(!is_error, "{ok}: {text}");
    }
    let (denied, is_error) = result_of(&events, "c2");
    assert!(is_error, "{denied}");
    assert!(
        denied.contains("`Bash(echo user denied:*)`")
            && denied.contains(".agent-lsp/settings.json"),
        "{denied}"
    );
    let (secret, _) = result_of(&events, "c7");
    assert!(secret.contains(".claude/settings.json"), "{secret}");
    assert_eq!(result_of(&events, "c8"), ("not that".to_owned(), true));

    // Only the ask rule's call and the compound command were asked about.
    let asked = bash_questions(&client);
    let commands: Vec<&str> = asked
        .iter()
        .map(|p| p["args"]["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["echo ask me", "echo other && touch x"]);
    // The compound command's "always" would save a rule for the command not allowed yet.
    assert_eq!(
        asked[1]["alwaysRules"],
        json!({"session": ["Bash(touch x:*)"], "project": ["Bash(touch x:*)"],
               "user": ["Bash(touch x:*)"]})
    );
    assert_eq!(
        std::fs::read(root.join(".claude/settings.json")).unwrap(),
        claude_before
    );
}

#[tokio::test]
async fn untrusted_project_allow_rules_do_not_apply_and_a_refusal_is_remembered() {
    let responses = vec![
        bash_call("c1", "echo project one"),
        bash_call("c2", "echo denied"),
        MockResponse::text("done"),
        bash_call("c3", "echo project two"),
        MockResponse::text("done"),
    ];
    let options = json!({"sandbox": "off"});
    let (_mock, client) = agent_setup(responses, LspClient::agent_caps(false), options).await;
    write_json(
        &project(&client).join(".agent-lsp/settings.json"),
        json!({"permissions": {"allow": ["Bash(echo project:*)"], "deny": ["Bash(echo denied)"]}}),
    );
    client.set_approvals(Box::new(|params| {
        Some(match params["toolName"].as_str() {
            Some("permission_rules") => json!({"decision": "blockAlways"}),
            _ => json!({"decision": "block", "reason": "asked"}),
        })
    }));
    let created = client.request("agent/newSession", json!({})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    // The refusal is remembered in the state folder once the answer is applied.
    let remembered = client
        .home
        .path()
        .join("state/agent-lsp/permission-trust.json");
    let deadline = tokio::time::Instant::now() + HANG_BOUND;
    while !remembered.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the refusal was never remembered"
        );
        state(&client, &session).await;
    }
    wait_trusted(&client, &session, false).await;
    let (_, run, _) = prompt(&client, json!({"sessionId": session, "message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(result_of(&events, "c1"), ("asked".to_owned(), true));
    let (denied, _) = result_of(&events, "c2");
    assert!(
        denied.contains("denies it"),
        "deny rules need no trust: {denied}"
    );

    // A second session of the project is not asked again: the refusal was remembered.
    let second = client.request("agent/newSession", json!({})).await;
    let second = second["sessionId"].as_str().unwrap().to_owned();
    let (_, run, _) = prompt(&client, json!({"sessionId": second, "message": "again"})).await;
    let events = client.wait_settled(&second, &run).await;
    assert_eq!(result_of(&events, "c3"), ("asked".to_owned(), true));
    let trust_questions = requests_of(&client, "agent/beforeToolCall")
        .iter()
        .filter(|r| r["params"]["toolName"] == "permission_rules")
        .count();
    assert_eq!(trust_questions, 1);
}

#[tokio::test]
async fn always_for_this_project_is_saved_and_honoured_by_the_next_session() {
    let responses = vec![
        bash_call("c1", "echo build one"),
        MockResponse::tool_call("c2", "write", json!({"path": "notes.md", "content": "x"})),
        MockResponse::text("done"),
        bash_call("c3", "echo build two"),
        MockResponse::tool_call("c4", "write", json!({"path": "notes.md", "content": "y"})),
        MockResponse::text("done again"),
    ];
    let mock = MockProvider::start(MockScript { responses }).await.unwrap();
    let mut first = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![],
    })
    .await;
    first
        .initialize(LspClient::agent_caps(false), json!({"sandbox": "off"}))
        .await;
    let root = project(&first);
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .env("HOME", first.home.path())
        .status()
        .unwrap();
    assert!(git.success());
    write_json(&user_settings(&first), json!({"theme": "dark"}));
    first.set_approvals(Box::new(|params| {
        Some(match params["toolName"].as_str() {
            Some("bash") => json!({"decision": "allowAlways", "scope": "project"}),
            _ => json!({"decision": "allowAlways", "scope": "user"}),
        })
    }));
    let (session, run, _) = prompt(&first, json!({"message": "build"})).await;
    let events = first.wait_settled(&session, &run).await;
    assert!(!result_of(&events, "c1").1 && !result_of(&events, "c2").1);
    let asked: Vec<Value> = requests_of(&first, "agent/beforeToolCall")
        .into_iter()
        .map(|r| r["params"].clone())
        .collect();
    assert_eq!(
        asked[0]["alwaysRules"],
        json!({"session": ["Bash(echo build:*)"], "project": ["Bash(echo build:*)"],
               "user": ["Bash(echo build:*)"]})
    );
    let notes = root.join("notes.md").display().to_string();
    assert_eq!(
        asked[1]["alwaysRules"],
        json!({"session": ["write"], "project": ["Edit(/notes.md)"],
               "user": [format!("Edit(/{notes})")]})
    );
    let local = root.join(".agent-lsp/settings.local.json");
    let saved: Value = serde_json::from_slice(&std::fs::read(&local).unwrap()).unwrap();
    assert_eq!(
        saved,
        json!({"permissions": {"allow": ["Bash(echo build:*)"]}})
    );
    let user: Value =
        serde_json::from_slice(&std::fs::read(user_settings(&first)).unwrap()).unwrap();
    assert_eq!(
        user,
        json!({"theme": "dark", "permissions": {"allow": [format!("Edit(/{notes})")]}})
    );
    let exclude = std::fs::read_to_string(root.join(".git/info/exclude")).unwrap();
    assert!(
        exclude.ends_with("/.agent-lsp/settings.local.json\n"),
        "{exclude}"
    );
    first.stop().await;

    // A new daemon over the same home, in the same project: both rules apply unasked, and the
    // rule saved for the project needs no trust question (the user wrote it).
    let second = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: same_home(&first),
    })
    .await;
    second
        .initialize(
            LspClient::agent_caps(false),
            json!({"sandbox": "off", "cwd": root.display().to_string()}),
        )
        .await;
    second.set_approvals(Box::new(|_| {
        Some(json!({"decision": "block", "reason": "asked"}))
    }));
    let (session, run, _) = prompt(&second, json!({"message": "build again"})).await;
    let events = second.wait_settled(&session, &run).await;
    assert!(
        !result_of(&events, "c3").1,
        "{:?}",
        result_of(&events, "c3")
    );
    assert!(
        !result_of(&events, "c4").1,
        "{:?}",
        result_of(&events, "c4")
    );
    assert!(requests_of(&second, "agent/beforeToolCall").is_empty());
    assert_eq!(std::fs::read_to_string(root.join("notes.md")).unwrap(), "y");
    let state = state(&second, &session).await;
    assert!(
        state["permissions"]["rules"]
            .as_array()
            .unwrap()
            .contains(&json!({"rule": "Bash(echo build:*)", "behavior": "allow",
                "source": "projectLocal", "file": local.display().to_string(), "trusted": true}))
    );
}

#[tokio::test]
async fn a_broken_settings_file_is_named_never_overwritten_and_the_answer_kept_for_the_session() {
    let responses = vec![
        bash_call("c1", "echo same one"),
        bash_call("c2", "echo same two"),
        MockResponse::text("done"),
    ];
    let (_mock, client) = agent_setup(
        responses,
        LspClient::agent_caps(false),
        json!({"sandbox": "off"}),
    )
    .await;
    std::fs::create_dir_all(user_settings(&client).parent().unwrap()).unwrap();
    std::fs::write(user_settings(&client), "{\"permissions\": ").unwrap();
    client.set_approvals(Box::new(|_| {
        Some(json!({"decision": "allowAlways", "scope": "user"}))
    }));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert!(!result_of(&events, "c1").1 && !result_of(&events, "c2").1);
    assert_eq!(bash_questions(&client).len(), 1, "kept for the session");
    assert_eq!(
        std::fs::read_to_string(user_settings(&client)).unwrap(),
        "{\"permissions\": "
    );
    let warning = client
        .wait_for("a warning naming the file", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains("settings.json: its permissions cannot be read"))
        })
        .await;
    assert_eq!(warning["params"]["type"], 2);
    let state = state(&client, &session).await;
    let errors = state["permissions"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[1].as_str().unwrap().contains("not valid JSON"),
        "{errors:?}"
    );
}
