//! Daemon tests: Lifecycle, framing and errors: initialize, document sync order, malformed input, exit paths.

use super::*;

#[tokio::test]
async fn initialize_negotiates_encoding_and_advertises_the_agent_protocol() {
    let client = spawn_plain().await;
    let result = client
        .initialize(LspClient::agent_caps(true), json!({}))
        .await;
    let caps = &result["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-8");
    assert_eq!(caps["experimental"]["agent"]["protocolVersion"], 1);
    assert_eq!(caps["textDocumentSync"]["change"], 2);
    assert_eq!(
        caps["executeCommandProvider"]["commands"],
        json!([
            "agent.prompt",
            "agent.steer",
            "agent.followUp",
            "agent.abort",
            "agent.newSession",
            "agent.approve",
            "agent.reject",
            "agent.mcpAskTrust"
        ])
    );
    assert!(client.shutdown_exit().await.success());

    let client = spawn_plain().await;
    let result = client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    assert_eq!(result["capabilities"]["positionEncoding"], "utf-16");
}

/// 50 dependent incremental edits in one write: any reordering changes the final text.
#[tokio::test]
async fn fifty_did_change_in_one_write_apply_in_order() {
    let client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    let path = client.workspace.path().join("a.txt");
    let uri = client.did_open(&path, "😀\r\n").await;
    let mut batch = Vec::new();
    let mut expected = String::new();
    for i in 0..50u32 {
        let ch = char::from(b'a' + (i % 26) as u8);
        // Each insert goes right after the previous one (UTF-16: the emoji counts 2 units).
        let col = 2 + i;
        batch.extend(frame(&json!({"jsonrpc":"2.0","method":"textDocument/didChange","params":{
            "textDocument": {"uri": uri, "version": 2 + i},
            "contentChanges": [{"range": {"start": {"line": 0, "character": col},
                                          "end": {"line": 0, "character": col}}, "text": ch.to_string()}]}})));
        expected.push(ch);
    }
    client.send_raw(&batch).await;
    let doc = client
        .request("agent/getDocument", json!({"uri": uri}))
        .await;
    assert_eq!(doc["text"], format!("😀{expected}\r\n"));
    assert_eq!(doc["version"], 51);
}

#[tokio::test]
async fn malformed_messages_unknown_methods_and_bad_params_get_clear_errors() {
    let client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;

    client
        .send_raw(b"Content-Length: 9\r\n\r\n{\"a\": nul")
        .await;
    let parse_error = client
        .wait_for("parse error", |m| m["error"]["code"] == -32700)
        .await;
    assert_eq!(parse_error["id"], Value::Null);

    let unknown = client.request_raw("agent/doesNotExist", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);

    let bad = client
        .request_raw("agent/prompt", json!({"message": 5}))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let missing = client.request_raw("agent/abort", json!({})).await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sessionId"),
        "{missing}"
    );

    // Unknown notifications are ignored; the daemon keeps serving.
    client.notify("custom/whatever", json!({"x": 1})).await;
    let path = client.workspace.path().join("b.txt");
    let uri = client.did_open(&path, "ok").await;
    let doc = client
        .request("agent/getDocument", json!({"uri": uri}))
        .await;
    assert_eq!(doc["text"], "ok");
    assert!(client.shutdown_exit().await.success());
}

#[tokio::test]
async fn exits_when_stdin_closes_and_on_exit_without_shutdown() {
    let mut client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    client.close_stdin().await;
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(1), "stdin closed without shutdown");

    let mut client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    client.notify("exit", Value::Null).await;
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(1), "exit without shutdown is code 1");
}

#[tokio::test]
async fn get_document_of_a_closed_file_is_invalid_params() {
    let client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    let uri = path_uri(&client.workspace.path().join("nope.txt"));
    let resp = client
        .request_raw("agent/getDocument", json!({"uri": uri}))
        .await;
    assert_eq!(resp["error"]["code"], -32602);
}

#[tokio::test]
async fn shutdown_during_a_run_aborts_it_and_exits_cleanly() {
    let mut slow = MockResponse::text("word ".repeat(2000));
    slow.chunk_size = Some(5);
    slow.delay_ms = Some(20);
    let (_mock, client) = agent_setup(vec![slow], LspClient::agent_caps(false), json!({})).await;
    let (session, run, _) = prompt(&client, json!({"message": "talk"})).await;
    client
        .wait_for("a delta", |m| {
            m["params"]["event"]["assistantMessageEvent"]["type"] == "text_delta"
        })
        .await;
    client.request("shutdown", Value::Null).await;
    let events = client.wait_settled(&session, &run).await;
    assert!(settled_aborted(&events, &run));
    let mut client = client;
    client.notify("exit", Value::Null).await;
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit after shutdown is code 0");
}

#[tokio::test]
async fn exits_when_the_editor_process_dies() {
    let mut editor = tokio::process::Command::new("sleep")
        .arg("1")
        .spawn()
        .unwrap();
    let pid = editor.id().unwrap();
    let mut client = spawn_plain().await;
    let root = path_uri(client.workspace.path());
    client
        .request(
            "initialize",
            json!({"processId": pid, "rootUri": root, "capabilities": {}}),
        )
        .await;
    client.notify("initialized", json!({})).await;
    editor.wait().await.unwrap(); // reaped: the pid no longer exists
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .expect("the daemon notices the editor is gone")
        .unwrap();
    assert_eq!(status.code(), Some(1));
}

#[tokio::test]
async fn unknown_session_ids_are_invalid_params() {
    let (_mock, client) = agent_setup(vec![], LspClient::agent_caps(false), json!({})).await;
    for method in ["agent/steer", "agent/followUp"] {
        let r = client
            .request_raw(method, json!({"sessionId": "nope", "message": "x"}))
            .await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("unknown sessionId"),
            "{r}"
        );
    }
    for method in [
        "agent/abort",
        "agent/clearQueue",
        "agent/getState",
        "agent/getMessages",
    ] {
        let r = client
            .request_raw(method, json!({"sessionId": "nope"}))
            .await;
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
    }
    let bad_cwd = client
        .request_raw("agent/newSession", json!({"cwd": "/definitely/not/here"}))
        .await;
    assert_eq!(bad_cwd["error"]["code"], -32602, "{bad_cwd}");
}

#[tokio::test]
async fn no_model_is_a_clear_error() {
    let client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    let r = client
        .request_raw("agent/prompt", json!({"message": "hi"}))
        .await;
    assert_eq!(r["error"]["code"], -32003, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("model"),
        "{r}"
    );
}

/// A prompt given as content blocks reaches the model with its image; blocks a user message
/// cannot carry (thinking, toolCall) are invalid params, for prompts and queued messages alike,
/// and create nothing.
#[tokio::test]
async fn prompt_blocks_reach_the_model_and_non_user_blocks_are_invalid_params() {
    let (mock, client) = agent_setup(
        vec![MockResponse::text("seen")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let tool_call = json!([{"type": "text", "text": "hi"},
        {"type": "toolCall", "id": "x", "name": "bash", "arguments": {"command": "ls"}}]);
    let bad = client
        .request_raw("agent/prompt", json!({"message": tool_call}))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(
        bad["error"]["message"],
        "message[1] is a toolCall block; a prompt may only contain text and image blocks"
    );
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    let (session, run, _) = prompt(
        &client,
        json!({"message": [{"type": "text", "text": "look"}, image]}),
    )
    .await;
    client.wait_settled(&session, &run).await;
    let thinking = json!([{"type": "thinking", "thinking": "secret"}]);
    let bad = client
        .request_raw(
            "agent/followUp",
            json!({"sessionId": session, "message": thinking}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "only the valid prompt was sent");
    let body = serde_json::to_string(&requests[0].body).unwrap();
    assert!(
        body.contains("look") && body.contains("iVBORw0KGgo="),
        "{body}"
    );
    let messages = client
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    let roles: Vec<&Value> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["role"])
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant"],
        "nothing from the refused messages"
    );
}

/// `agent/newSession {cwd}` roots that session's tools in `cwd`, not in the workspace.
#[tokio::test]
async fn a_new_session_with_a_cwd_runs_its_tools_there() {
    let other = tempfile::tempdir().unwrap();
    let other_dir = std::fs::canonicalize(other.path()).unwrap();
    std::fs::write(other_dir.join("here.txt"), "in the other dir\n").unwrap();
    let (_mock, client) = agent_setup(
        vec![
            MockResponse::tool_call("c1", "read", json!({"path": "here.txt"})),
            bash_call("c2", "pwd"),
            MockResponse::text("done"),
        ],
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}}),
    )
    .await;
    let created = client
        .request(
            "agent/newSession",
            json!({"cwd": other_dir.display().to_string()}),
        )
        .await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["cwd"], other_dir.display().to_string(), "{state}");
    let (_, run, _) = prompt(&client, json!({"sessionId": session, "message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert_eq!(results[0], ("in the other dir\n".to_owned(), false));
    assert_eq!(results[1], (other_dir.display().to_string(), false));
}
