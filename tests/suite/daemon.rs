//! Integration tests of the daemon: the real binary over stdio, driven like an editor.

use std::time::Duration;

use serde_json::{Value, json};

use crate::suite::support::lsp_client::{LspClient, Spawn, frame, path_uri};

async fn spawn_plain() -> LspClient {
    LspClient::spawn(Spawn {
        provider_url: None,
        env: vec![],
    })
    .await
}

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
            "agent.reject"
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
    let status = tokio::time::timeout(Duration::from_secs(10), client.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(1), "stdin closed without shutdown");

    let mut client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    client.notify("exit", Value::Null).await;
    let status = tokio::time::timeout(Duration::from_secs(10), client.child.wait())
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
