//! Daemon tests: `agent/diagnostics` notifications and the read-only `diagnostics` tool.

use super::*;

fn diag(line: u32, character: u32, severity: u8, message: &str, source: Option<&str>) -> Value {
    let mut d = json!({"range": {"start": {"line": line, "character": character},
        "end": {"line": line, "character": character + 1}},
        "severity": severity, "message": message});
    if let Some(source) = source {
        d["source"] = json!(source);
    }
    d
}

fn diagnostics_call(id: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(id, "diagnostics", args)
}

fn offers_diagnostics_tool(mock: &MockProvider) -> bool {
    mock.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["function"]["name"] == "diagnostics")
}

#[tokio::test]
async fn the_diagnostics_tool_reads_what_the_client_forwarded() {
    let responses = vec![
        diagnostics_call("d1", json!({})),
        diagnostics_call("d2", json!({"path": "b.rs"})),
        diagnostics_call("d3", json!({"path": "c.rs"})),
        diagnostics_call("d4", json!({"path": "src"})),
        MockResponse::text("seen"),
    ];
    let mut caps = LspClient::agent_caps(false);
    caps["experimental"]["agent"]["diagnostics"] = json!(true);
    let (mock, client) = agent_setup(responses, caps, json!({})).await;
    let root = client.workspace.path().to_path_buf();
    std::fs::create_dir(root.join("src")).unwrap();
    // An open buffer whose unsaved text differs from the disk: positions are read against it.
    std::fs::write(root.join("src/a.rs"), "old\n").unwrap();
    let a = client
        .did_open(&root.join("src/a.rs"), "😀 let x = 1;\nfn main() {}\n")
        .await;
    // A file that is not open: positions are read against the disk.
    std::fs::write(root.join("b.rs"), "abc\n").unwrap();
    let b = path_uri(&root.join("b.rs"));
    let c = path_uri(&root.join("c.rs"));
    let d = client.did_open(&root.join("d.rs"), "x\n").await;
    let send = |uri: String, list: Value| {
        let client = &client;
        async move {
            client
                .notify(
                    "agent/diagnostics",
                    json!({"uri": uri, "diagnostics": list}),
                )
                .await
        }
    };
    send(a.clone(), json!([diag(0, 0, 1, "superseded", None)])).await;
    let mut typed = diag(0, 3, 1, "mismatched types", Some("rustc"));
    typed["code"] = json!("E0308");
    send(
        a.clone(),
        json!([diag(1, 3, 2, "needless\nthing", Some("clippy")), typed]),
    )
    .await;
    send(b.clone(), json!([diag(0, 1, 4, "unused", None)])).await;
    send(c.clone(), json!([diag(0, 0, 1, "gone", None)])).await;
    send(c.clone(), json!([])).await;
    send(d.clone(), json!([diag(0, 0, 1, "closed", None)])).await;
    client
        .notify("textDocument/didClose", json!({"textDocument": {"uri": d}}))
        .await;

    let (session, run, _) = prompt(&client, json!({"message": "check"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert_eq!(
        results[0],
        (
            "b.rs:1:2: hint: unused\n\
             src/a.rs:1:3: error: mismatched types [rustc E0308]\n\
             src/a.rs:2:4: warning: needless thing [clippy]"
                .to_owned(),
            false
        )
    );
    assert_eq!(results[1], ("b.rs:1:2: hint: unused".to_owned(), false));
    assert_eq!(
        results[2],
        (
            "No diagnostics reported by the editor for c.rs.".to_owned(),
            false
        )
    );
    assert_eq!(results[3].0.lines().count(), 2, "{:?}", results[3]);
    assert!(offers_diagnostics_tool(&mock));
    assert!(
        requests_of(&client, "agent/beforeToolCall").is_empty(),
        "a read-only tool is not asked about"
    );
    let tool_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"]["type"] == "tool_execution_start")
        .collect();
    assert_eq!(tool_events[0]["event"]["toolName"], "diagnostics");
}

#[tokio::test]
async fn without_the_capability_the_tool_is_not_offered() {
    let (mock, client) = agent_setup(
        vec![MockResponse::text("hi")],
        LspClient::agent_caps(true),
        json!({}),
    )
    .await;
    let uri = path_uri(&client.workspace.path().join("x.rs"));
    client
        .notify(
            "agent/diagnostics",
            json!({"uri": uri, "diagnostics": [diag(0, 0, 1, "e", None)]}),
        )
        .await;
    let (session, run, _) = prompt(&client, json!({"message": "hi"})).await;
    client.wait_settled(&session, &run).await;
    assert!(!offers_diagnostics_tool(&mock));
    // A malformed notification is ignored; the connection stays up.
    client.notify("agent/diagnostics", json!({"uri": 5})).await;
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["isStreaming"], false);
}

#[tokio::test]
async fn an_empty_store_says_so() {
    let mut caps = LspClient::agent_caps(true);
    caps["experimental"]["agent"]["diagnostics"] = json!(true);
    let (_mock, client) = agent_setup(
        vec![diagnostics_call("d1", json!({})), MockResponse::text("ok")],
        caps,
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(
        tool_results(&events)[0],
        ("No diagnostics reported by the editor.".to_owned(), false)
    );
}
