//! Daemon tests: MCP servers as a session's tools through the real binary: the tools reach the
//! model, MCP calls go through the approval path naming the server, status and events, the
//! project file's trust question (asked once, remembered), and clear errors for broken entries.

use super::*;
use crate::suite::mcp::{fault_entry, npm_servers};

async fn daemon_with(
    servers: Value,
    responses: Vec<MockResponse>,
    env: Vec<(String, String)>,
) -> (MockProvider, LspClient) {
    let mock = MockProvider::start(MockScript { responses }).await.unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env,
    })
    .await;
    client
        .initialize(LspClient::agent_caps(false), json!({"mcpServers": servers}))
        .await;
    (mock, client)
}

fn mcp_updates(client: &LspClient, session: &str) -> Vec<Value> {
    client
        .events(session)
        .into_iter()
        .filter(|e| e["event"]["type"] == "mcp_update")
        .map(|e| e["event"]["servers"].clone())
        .collect()
}

#[tokio::test]
async fn mcp_tools_reach_the_model_after_an_approval_naming_the_server() {
    let (mock, client) = daemon_with(
        json!({"fault": fault_entry(json!({}))}),
        vec![
            MockResponse::tool_call("c1", "fault__echo", json!({"text": "hi"})),
            MockResponse::tool_call("c2", "fault__read_only", json!({})),
            MockResponse::text("done"),
        ],
        vec![],
    )
    .await;
    let (session, run, id) = prompt(&client, json!({"message": "use it"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert_eq!(tool_results(&events)[0], ("echo: hi".to_owned(), false));
    let asked = requests_of(&client, "agent/beforeToolCall");
    assert_eq!(
        asked.len(),
        2,
        "MCP tools ask by default, read-only hinted ones too"
    );
    assert_eq!(asked[0]["params"]["toolName"], "fault__echo");
    assert_eq!(asked[0]["params"]["kind"], "other");
    assert!(
        asked[0]["params"]["title"]
            .as_str()
            .unwrap()
            .contains("MCP server fault"),
        "{}",
        asked[0]["params"]
    );
    assert_eq!(asked[1]["params"]["kind"], "read");
    let status = client
        .request("agent/mcpStatus", json!({"sessionId": session}))
        .await;
    assert_eq!(status["servers"][0]["name"], "fault");
    assert_eq!(status["servers"][0]["state"], "ready");
    assert!(
        status["servers"][0]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("echo"))
    );
    let updates = mcp_updates(&client, &session);
    assert!(
        updates.iter().any(|s| s[0]["state"] == "ready"),
        "an mcp_update says the server is ready: {updates:?}"
    );
    let first = &mock.requests()[0].body;
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"fault__echo"),
        "declared before the first request: {names:?}"
    );
}

#[tokio::test]
async fn server_filesystem_through_the_daemon() {
    let fs = npm_servers().join("@modelcontextprotocol/server-filesystem/dist/index.js");
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root.join("data.txt"), "filesystem via the daemon\n").unwrap();
    let path = root.join("data.txt").display().to_string();
    let (_mock, client) = daemon_with(
        json!({"fs": {"command": "node", "args": [fs.display().to_string(), root.display().to_string()],
                      "approval": {"tools": {"read_text_file": "allow"}}}}),
        vec![
            MockResponse::tool_call("c1", "fs__read_text_file", json!({"path": path})),
            MockResponse::text("done"),
        ],
        vec![],
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "read"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(
        tool_results(&events)[0],
        ("filesystem via the daemon\n".to_owned(), false)
    );
    assert!(
        requests_of(&client, "agent/beforeToolCall").is_empty(),
        "allowed by its entry"
    );
}

#[tokio::test]
async fn a_project_file_is_started_only_once_trusted_and_the_answer_is_remembered() {
    let state = tempfile::tempdir().unwrap();
    let shared = vec![(
        "XDG_STATE_HOME".to_owned(),
        state.path().display().to_string(),
    )];
    let project_file = |client: &LspClient| {
        std::fs::write(
            client.workspace.path().join(".mcp.json"),
            json!({"mcpServers": {"proj": fault_entry(json!({}))}}).to_string(),
        )
        .unwrap();
    };
    // First the user says no: nothing starts, and that is remembered too.
    let (_mock, client) = daemon_with(json!({}), vec![], shared.clone()).await;
    project_file(&client);
    client.set_approvals(Box::new(|p| {
        (p["toolName"] == "mcp_servers").then(|| json!({"decision": "block"}))
    }));
    let created = client.request("agent/newSession", json!({})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let asked = client
        .wait_for("the trust question", |m| {
            m["method"] == "agent/beforeToolCall"
        })
        .await;
    let p = &asked["params"];
    assert_eq!(p["toolName"], "mcp_servers");
    assert!(
        p["preview"]["command"]
            .as_str()
            .unwrap()
            .contains("proj: python3"),
        "{p}"
    );
    assert!(p["title"].as_str().unwrap().contains(".mcp.json"), "{p}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = client
        .request("agent/mcpStatus", json!({"sessionId": session}))
        .await;
    assert_eq!(status["servers"][0]["state"], "untrusted", "{status}");
    drop(client);

    // A new daemon remembers the "no"; then the user allows it in another project copy.
    let (_mock, client) = daemon_with(json!({}), vec![], shared.clone()).await;
    project_file(&client);
    client.set_approvals(Box::new(|p| {
        (p["toolName"] == "mcp_servers").then(|| json!({"decision": "allow"}))
    }));
    let created = client.request("agent/newSession", json!({})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let status = first_server_in(&client, &session, "ready").await;
    assert!(
        status["servers"][0]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("echo"))
    );
    // A second session of the same project is not asked again.
    let before = requests_of(&client, "agent/beforeToolCall").len();
    client.request("agent/newSession", json!({})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(requests_of(&client, "agent/beforeToolCall").len(), before);
}

#[tokio::test]
async fn a_trusted_entry_that_gains_env_waits_and_asks_again_naming_the_change() {
    let state = tempfile::tempdir().unwrap();
    let env = vec![(
        "XDG_STATE_HOME".to_owned(),
        state.path().display().to_string(),
    )];
    let (_mock, client) = daemon_with(json!({}), vec![], env).await;
    // A disabled server is part of what is answered for, too (it never waits, so it is not
    // listed; still, the same file must not ask again because of it).
    let project_file = |entry: Value| {
        let off = json!({"command": "false", "enabled": false});
        let servers = json!({"mcpServers": {"proj": entry, "unused": off}});
        std::fs::write(
            client.workspace.path().join(".mcp.json"),
            servers.to_string(),
        )
        .unwrap();
    };
    let trust_questions = |session: &str| {
        requests_of(&client, "agent/beforeToolCall")
            .into_iter()
            .filter(|r| r["params"]["toolName"] == "mcp_servers")
            .filter(|r| r["params"]["sessionId"] == session)
            .collect::<Vec<_>>()
    };
    project_file(fault_entry(json!({})));
    client.set_approvals(Box::new(|p| {
        (p["toolName"] == "mcp_servers").then(|| json!({"decision": "allowAlways"}))
    }));
    let created = client.request("agent/newSession", json!({})).await;
    let first = created["sessionId"].as_str().unwrap().to_owned();
    first_server_in(&client, &first, "ready").await;
    assert_eq!(
        trust_questions(&first)[0]["params"]["args"]["changes"],
        json!([])
    );

    // Something edits the trusted entry: the next session starts nothing and asks, naming it.
    let evil = client.workspace.path().join("evil").display().to_string();
    project_file(fault_entry(json!({"env": {"PYTHONPATH": evil}})));
    client.set_approvals(Box::new(|_| None));
    let created = client.request("agent/newSession", json!({})).await;
    let changed = created["sessionId"].as_str().unwrap().to_owned();
    let question = client
        .wait_for("the trust question about the change", |m| {
            m["method"] == "agent/beforeToolCall" && m["params"]["sessionId"] == changed.as_str()
        })
        .await;
    let p = &question["params"];
    assert_eq!(
        p["args"]["changes"],
        json!(["proj: env added PYTHONPATH"]),
        "{p}"
    );
    let title = p["title"].as_str().unwrap();
    assert!(
        title.ends_with("Changed since your last answer: proj: env added PYTHONPATH"),
        "{p}"
    );
    let listing = p["preview"]["command"].as_str().unwrap();
    assert!(listing.starts_with("proj: python3"), "{p}");
    assert!(listing.contains("\n  proj: env added PYTHONPATH"), "{p}");
    let status = client
        .request("agent/mcpStatus", json!({"sessionId": changed}))
        .await;
    assert_eq!(status["servers"][0]["state"], "untrusted", "{status}");
    client
        .reply(&question["id"], json!({"decision": "allowAlways"}))
        .await;
    first_server_in(&client, &changed, "ready").await;

    // The same file again: the answer holds, no question.
    let created = client.request("agent/newSession", json!({})).await;
    let again = created["sessionId"].as_str().unwrap().to_owned();
    first_server_in(&client, &again, "ready").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(trust_questions(&again).is_empty());
}

#[tokio::test]
async fn after_a_remembered_no_the_user_can_be_asked_again_and_allow() {
    let state = tempfile::tempdir().unwrap();
    let env = vec![(
        "XDG_STATE_HOME".to_owned(),
        state.path().display().to_string(),
    )];
    let (_mock, client) = daemon_with(json!({}), vec![], env.clone()).await;
    std::fs::write(
        client.workspace.path().join(".mcp.json"),
        json!({"mcpServers": {"proj": fault_entry(json!({}))}}).to_string(),
    )
    .unwrap();
    let trust_questions = |client: &LspClient| {
        requests_of(client, "agent/beforeToolCall")
            .into_iter()
            .filter(|r| r["params"]["toolName"] == "mcp_servers")
            .count()
    };
    client.set_approvals(Box::new(|p| {
        (p["toolName"] == "mcp_servers").then(|| json!({"decision": "blockAlways"}))
    }));
    let created = client.request("agent/newSession", json!({})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client
        .wait_for("the first trust question", |m| {
            m["method"] == "agent/beforeToolCall" && m["params"]["sessionId"] == session.as_str()
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    first_server_in(&client, &session, "untrusted").await;
    assert_eq!(trust_questions(&client), 1);
    // The "no" is remembered: a new session is not asked.
    let other = client.request("agent/newSession", json!({})).await;
    let other = other["sessionId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(trust_questions(&client), 1, "a remembered no asks nothing");

    // The user changes their mind: asked again, with the same question. While it is open,
    // asking once more does not ask twice.
    client.set_approvals(Box::new(|_| None));
    let asked = client
        .request("agent/mcpAskTrust", json!({"sessionId": other}))
        .await;
    assert_eq!(asked, json!({"sessionId": other, "asked": true}));
    let question = client
        .wait_for("the second trust question", |m| {
            m["method"] == "agent/beforeToolCall" && m["params"]["sessionId"] == other.as_str()
        })
        .await;
    assert!(
        (question["params"]["preview"]["command"].as_str().unwrap()).contains("proj: python3"),
        "{question}"
    );
    let again = client
        .request("agent/mcpAskTrust", json!({"sessionId": other}))
        .await;
    assert_eq!(again["asked"], true);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(trust_questions(&client), 2, "one open question at a time");
    client
        .reply(&question["id"], json!({"decision": "allowAlways"}))
        .await;
    let status = first_server_in(&client, &other, "ready").await;
    assert!(
        (status["servers"][0]["tools"].as_array().unwrap()).contains(&json!("echo")),
        "{status}"
    );

    // With nothing waiting, asking again asks nothing.
    let nothing = client
        .request("agent/mcpAskTrust", json!({"sessionId": other}))
        .await;
    assert_eq!(nothing["asked"], false);
    let unknown = client
        .request_raw("agent/mcpAskTrust", json!({"sessionId": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // The yes is remembered: another daemon (its own servers) starts them without asking.
    let (_mock2, second) = daemon_with(json!({}), vec![], env.clone()).await;
    let project = client.workspace.path().display().to_string();
    let created = second
        .request("agent/newSession", json!({"cwd": project}))
        .await;
    let fresh = created["sessionId"].as_str().unwrap().to_owned();
    first_server_in(&second, &fresh, "ready").await;
    assert_eq!(trust_questions(&second), 0);
    assert_eq!(trust_questions(&client), 2);
}

#[tokio::test]
async fn the_mcp_trust_command_is_offered_while_servers_wait_and_asks_again() {
    let state = tempfile::tempdir().unwrap();
    let env = vec![(
        "XDG_STATE_HOME".to_owned(),
        state.path().display().to_string(),
    )];
    let (_mock, client) = daemon_with(json!({}), vec![], env).await;
    std::fs::write(
        client.workspace.path().join(".mcp.json"),
        json!({"mcpServers": {"proj": fault_entry(json!({}))}}).to_string(),
    )
    .unwrap();
    client.set_approvals(Box::new(|p| {
        (p["toolName"] == "mcp_servers").then(|| json!({"decision": "blockAlways"}))
    }));
    let created = client.request("agent/newSession", json!({})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client
        .wait_for("the first trust question", |m| {
            m["method"] == "agent/beforeToolCall" && m["params"]["sessionId"] == session.as_str()
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let names = |listed: &Value| -> Vec<String> {
        (listed["commands"].as_array().unwrap().iter())
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = client
        .request("agent/listCommands", json!({"sessionId": session}))
        .await;
    assert_eq!(
        names(&listed),
        ["compact", "model", "mcp-trust"],
        "{listed}"
    );

    client.set_approvals(Box::new(|p| {
        (p["toolName"] == "mcp_servers").then(|| json!({"decision": "allow"}))
    }));
    let answer = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "/mcp-trust"}),
        )
        .await;
    assert_eq!(answer["disposition"], "command", "{answer}");
    assert_eq!(answer["command"], "mcpTrust", "{answer}");
    assert_eq!(answer["asked"], true, "{answer}");
    first_server_in(&client, &session, "ready").await;
    // Nothing waits now: the command is no longer offered, and a commands_update says so.
    let update = client
        .wait_for("the commands without mcp-trust", |m| {
            m["params"]["event"]["type"] == "commands_update"
                && !m["params"]["event"]["commands"]
                    .to_string()
                    .contains("mcp-trust")
        })
        .await;
    assert_eq!(update["params"]["sessionId"], session.as_str());
    let listed = client
        .request("agent/listCommands", json!({"sessionId": session}))
        .await;
    assert_eq!(names(&listed), ["compact", "model"], "{listed}");
}

#[tokio::test]
async fn broken_entries_and_failing_servers_are_shown_and_the_session_works() {
    let mock = MockProvider::start(MockScript {
        responses: vec![MockResponse::text("fine")],
    })
    .await
    .unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![],
    })
    .await;
    // A generic client: failures reach it as messages.
    let root = path_uri(client.workspace.path());
    client
        .request(
            "initialize",
            json!({"processId": null, "rootUri": root, "capabilities": {},
                   "initializationOptions": {"mcpServers": {
                       "bad": {"command": ["not", "a", "string"]},
                       "crash": fault_entry(json!({"env": {"FAULT_CRASH_ON_START": "1"}}))}}}),
        )
        .await;
    client.notify("initialized", json!({})).await;
    let result = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.prompt", "arguments": ["hi"]}),
        )
        .await;
    assert!(result["runId"].is_string(), "{result}");
    let bad = client
        .wait_for("the broken entry", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("mcpServers.bad.command")
        })
        .await;
    assert_eq!(bad["params"]["type"], 1, "an error");
    client
        .wait_for("the failed server", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("MCP server crash failed")
        })
        .await;
    client
        .wait_for("the answer", |m| {
            m["method"] == "window/showMessage" && m["params"]["message"] == "fine"
        })
        .await;
}
