//! Daemon tests: Generic clients (no agent capability): commands, progress, messages, transcript, approvals.

use super::*;

fn generic_caps(message_actions: bool) -> Value {
    let mut caps = json!({"general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": true, "showDocument": {"support": true}},
        "textDocument": {"codeAction": {}}});
    if message_actions {
        caps["window"]["showMessage"] =
            json!({"messageActionItem": {"additionalPropertiesSupport": false}});
    }
    caps
}

fn notifications(client: &LspClient, method: &str) -> Vec<Value> {
    client
        .log()
        .into_iter()
        .filter(|m| m["method"] == method && m.get("id").is_none())
        .map(|m| m["params"].clone())
        .collect()
}

#[tokio::test]
async fn generic_client_end_to_end_with_message_action_approvals() {
    let responses = vec![
        bash_call("c1", "echo generic-ok"),
        MockResponse::text("final answer"),
    ];
    let (_mock, client) = agent_setup(responses, generic_caps(true), json!({})).await;
    client.set_reply("window/showMessageRequest", json!({"title": "Allow"}));
    let result = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.prompt", "arguments": ["run it"]}),
        )
        .await;
    assert_eq!(result["disposition"], "started");
    let shown = client
        .wait_for("final message", |m| {
            m["method"] == "window/showMessage" && m["params"]["message"] == "final answer"
        })
        .await;
    assert_eq!(shown["params"]["type"], 3);
    let doc = client
        .wait_for("transcript", |m| m["method"] == "window/showDocument")
        .await;
    let transcript = std::fs::read_to_string(crate::suite::support::lsp_client::uri_path(
        doc["params"]["uri"].as_str().unwrap(),
    ))
    .unwrap();
    assert!(
        transcript.contains("final answer") && transcript.contains("generic-ok"),
        "{transcript}"
    );
    assert!(
        doc["params"]["uri"]
            .as_str()
            .unwrap()
            .contains(client.home.path().to_str().unwrap())
    );
    let ask = &requests_of(&client, "window/showMessageRequest")[0]["params"];
    assert!(
        ask["message"]
            .as_str()
            .unwrap()
            .contains("Run: echo generic-ok"),
        "{ask}"
    );
    // The default sandbox runs a command approved by hand with the user's rights: it says so.
    assert!(
        ask["message"].as_str().unwrap().ends_with(
            "Once approved, this command runs outside the sandbox, with your full rights."
        ),
        "{ask}"
    );
    assert_eq!(ask["actions"].as_array().unwrap().len(), 4);
    let progress: Vec<String> = notifications(&client, "$/progress")
        .iter()
        .map(|p| p["value"]["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(progress.first().map(String::as_str), Some("begin"));
    assert_eq!(progress.last().map(String::as_str), Some("end"));
    assert_eq!(
        requests_of(&client, "window/workDoneProgress/create").len(),
        1
    );
    assert!(
        notifications(&client, "$/agentEvent").is_empty(),
        "no custom notifications to generic clients"
    );
    assert!(requests_of(&client, "agent/beforeToolCall").is_empty());
}

#[tokio::test]
async fn generic_client_approves_through_a_diagnostic_code_action() {
    let responses = vec![
        bash_call("c1", "echo via-code-action"),
        MockResponse::text("done"),
    ];
    let (_mock, client) = agent_setup(responses, generic_caps(false), json!({})).await;
    let path = client.workspace.path().join("open.txt");
    let uri = client.did_open(&path, "text\n").await;
    let started = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.prompt", "arguments": [{"message": "run it"}]}),
        )
        .await;
    let session = started["sessionId"].as_str().unwrap().to_owned();
    let diag = client
        .wait_for("approval diagnostic", |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|d| !d.is_empty())
        })
        .await;
    assert_eq!(diag["params"]["uri"], uri.as_str());
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []}}),
        )
        .await;
    let approve = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["command"]["command"] == "agent.approve")
        .unwrap();
    let resolved = client
        .request("workspace/executeCommand", approve["command"].clone())
        .await;
    assert_eq!(resolved, json!({"resolved": true}));
    client
        .wait_for("final message", |m| {
            m["method"] == "window/showMessage" && m["params"]["message"] == "done"
        })
        .await;
    let messages = client
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    let result = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "toolResult")
        .unwrap();
    assert_eq!(result["isError"], false, "the command ran: {result}");
    assert_eq!(result["content"][0]["text"], "via-code-action");
    let cleared = client
        .log()
        .into_iter()
        .rev()
        .find(|m| m["method"] == "textDocument/publishDiagnostics")
        .unwrap();
    assert_eq!(cleared["params"]["diagnostics"], json!([]));
    let again = client
        .request("workspace/executeCommand", approve["command"].clone())
        .await;
    assert_eq!(again, json!({"resolved": false}));
}

#[tokio::test]
async fn generic_commands_cover_sessions_queues_and_abort() {
    let mut slow = MockResponse::text("word ".repeat(2000));
    slow.chunk_size = Some(5);
    slow.delay_ms = Some(20);
    let (_mock, client) = agent_setup(
        vec![slow, MockResponse::text("steered")],
        generic_caps(true),
        json!({}),
    )
    .await;
    let exec = |command: &str, args: Value| json!({"command": command, "arguments": args});
    let created = client
        .request(
            "workspace/executeCommand",
            exec("agent.newSession", json!([])),
        )
        .await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let idle = client
        .request(
            "workspace/executeCommand",
            exec("agent.abort", json!([{"sessionId": session}])),
        )
        .await;
    assert_eq!(idle, json!({"aborted": false}));
    let started = client
        .request(
            "workspace/executeCommand",
            exec(
                "agent.steer",
                json!([{"sessionId": session, "message": "go"}]),
            ),
        )
        .await;
    assert_eq!(
        started["disposition"], "started",
        "an idle steer starts a run"
    );
    let queued = client
        .request(
            "workspace/executeCommand",
            exec(
                "agent.followUp",
                json!([{"sessionId": session, "message": "next"}]),
            ),
        )
        .await;
    assert_eq!(queued["disposition"], "followUp");
    assert_eq!(queued["followUp"][0]["text"], "next");
    let aborted = client
        .request(
            "workspace/executeCommand",
            exec("agent.abort", json!([{"sessionId": session}])),
        )
        .await;
    assert_eq!(aborted, json!({"aborted": true}));
    client
        .wait_for("aborted message", |m| {
            m["method"] == "window/showMessage" && m["params"]["message"] == "agent-lsp: aborted"
        })
        .await;
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(
        state["followUp"][0]["text"], "next",
        "abort keeps the queue: {state}"
    );
    let bad = client
        .request_raw("workspace/executeCommand", exec("agent.prompt", json!([])))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let unknown = client
        .request_raw("workspace/executeCommand", exec("agent.nope", json!([])))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[tokio::test]
async fn cancelling_the_progress_aborts_the_run() {
    let mut slow = MockResponse::text("word ".repeat(2000));
    slow.chunk_size = Some(5);
    slow.delay_ms = Some(20);
    let (_mock, client) = agent_setup(vec![slow], generic_caps(true), json!({})).await;
    let started = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.prompt", "arguments": ["talk"]}),
        )
        .await;
    let begin = client
        .wait_for("progress begin", |m| {
            m["method"] == "$/progress" && m["params"]["value"]["kind"] == "begin"
        })
        .await;
    assert_eq!(begin["params"]["value"]["cancellable"], true);
    assert_eq!(
        begin["params"]["token"],
        format!("agent-lsp/{}", started["runId"].as_str().unwrap())
    );
    client
        .notify(
            "window/workDoneProgress/cancel",
            json!({"token": begin["params"]["token"]}),
        )
        .await;
    client
        .wait_for("aborted", |m| {
            m["method"] == "window/showMessage" && m["params"]["message"] == "agent-lsp: aborted"
        })
        .await;
}

#[tokio::test]
async fn rejecting_through_the_code_action_blocks_the_call() {
    let (_mock, client) = agent_setup(
        vec![bash_call("c1", "echo rejected"), MockResponse::text("done")],
        generic_caps(false),
        json!({}),
    )
    .await;
    client
        .did_open(&client.workspace.path().join("r.txt"), "r\n")
        .await;
    let started = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.prompt", "arguments": ["go"]}),
        )
        .await;
    let diag = client
        .wait_for("approval diagnostic", |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|d| !d.is_empty())
        })
        .await;
    let approval_id = diag["params"]["diagnostics"][0]["code"].clone();
    let resolved = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.reject", "arguments": [approval_id]}),
        )
        .await;
    assert_eq!(resolved, json!({"resolved": true}));
    client
        .wait_for("final", |m| {
            m["method"] == "window/showMessage" && m["params"]["message"] == "done"
        })
        .await;
    let messages = client
        .request(
            "agent/getMessages",
            json!({"sessionId": started["sessionId"]}),
        )
        .await;
    let result = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "toolResult")
        .unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "Tool execution was blocked");
}

#[tokio::test]
async fn a_generic_client_is_asked_about_project_servers_again_by_command() {
    let (_mock, client) = agent_setup(vec![], generic_caps(true), json!({})).await;
    let entry = crate::suite::mcp::fault_entry(json!({}));
    std::fs::write(
        client.workspace.path().join(".mcp.json"),
        json!({"mcpServers": {"proj": entry}}).to_string(),
    )
    .unwrap();
    let trust_questions = |client: &LspClient| {
        requests_of(client, "window/showMessageRequest")
            .into_iter()
            .filter(|r| (r["params"]["message"].as_str().unwrap()).contains(".mcp.json"))
            .count()
    };
    client.set_reply(
        "window/showMessageRequest",
        json!({"title": "Block always"}),
    );
    let created = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.newSession", "arguments": []}),
        )
        .await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client
        .wait_for("the trust question", |m| {
            m["method"] == "window/showMessageRequest"
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = client
        .request("agent/mcpStatus", json!({"sessionId": session}))
        .await;
    assert_eq!(status["servers"][0]["state"], "untrusted", "{status}");

    client.set_reply("window/showMessageRequest", json!({"title": "Allow"}));
    let asked = client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.mcpAskTrust", "arguments": [{"sessionId": session}]}),
        )
        .await;
    assert_eq!(asked["asked"], true, "{asked}");
    let ready = first_server_in(&client, &session, "ready").await;
    assert!(
        (ready["servers"][0]["tools"].as_array().unwrap()).contains(&json!("echo")),
        "{ready}"
    );
    assert_eq!(trust_questions(&client), 2);
}
