//! Daemon tests: Approvals: decisions, memory, timeouts, policy, clients without an approval channel.

use super::*;

#[tokio::test]
async fn client_without_approvals_gets_a_clear_tool_error() {
    let bash = MockResponse::tool_call("call_1", "bash", json!({"command": "echo hi"}));
    let mut caps = LspClient::agent_caps(false);
    caps["experimental"]["agent"]["approvals"] = json!(false);
    let (_mock, client) = agent_setup(vec![bash, MockResponse::text("ok")], caps, json!({})).await;
    let (session, run, _) = prompt(&client, json!({"message": "run"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, is_error) = tool_results(&events).remove(0);
    assert!(is_error && text.contains("no approval channel"), "{text}");
    assert!(requests_of(&client, "agent/beforeToolCall").is_empty());
    assert_eq!(kinds(&events).last().unwrap(), "agent_settled");
}

#[tokio::test]
async fn approval_decisions_block_allow_and_are_remembered() {
    let responses = vec![
        bash_call("c1", "echo one"),       // block with reason
        bash_call("c2", "ls -a"),          // allowAlways for the prefix "ls"
        bash_call("c3", "ls -l"),          // remembered allow: not asked
        bash_call("c4", "echo x; echo y"), // chained: asked again -> blockAlways
        MockResponse::tool_call("c5", "write", json!({"path": "n.txt", "content": "x"})), // asked -> blockAlways (write)
        MockResponse::tool_call("c6", "write", json!({"path": "m.txt", "content": "y"})), // remembered block
        MockResponse::text("finished"),
    ];
    let (mock, client) = agent_setup(responses, LspClient::agent_caps(false), json!({})).await;
    let answers = std::sync::Arc::new(std::sync::Mutex::new(vec![
        json!({"decision": "block", "reason": "not now"}),
        json!({"decision": "allowAlways"}),
        json!({"decision": "blockAlways"}),
        json!({"decision": "blockAlways", "reason": ""}),
    ]));
    let queue = answers.clone();
    client.set_approvals(Box::new(move |_| Some(queue.lock().unwrap().remove(0))));
    let (session, run, id) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    let results = tool_results(&events);
    assert_eq!(results.len(), 6, "{results:?}");
    assert_eq!(results[0], ("not now".to_owned(), true));
    assert!(!results[1].1, "{:?}", results[1]);
    assert!(!results[2].1, "{:?}", results[2]);
    assert_eq!(results[3], ("Tool execution was blocked".to_owned(), true));
    assert_eq!(results[4], ("Tool execution was blocked".to_owned(), true));
    assert!(
        results[5].1 && results[5].0.contains("blocked for this session"),
        "{:?}",
        results[5]
    );
    let asked: Vec<Value> = requests_of(&client, "agent/beforeToolCall")
        .iter()
        .map(|r| r["params"].clone())
        .collect();
    assert_eq!(asked.len(), 4);
    assert_eq!(asked[0]["kind"], "execute");
    assert_eq!(asked[0]["title"], "Run: echo one");
    assert_eq!(
        asked[0]["preview"],
        json!({"type": "command", "command": "echo one",
        "cwd": std::fs::canonicalize(client.workspace.path()).unwrap().display().to_string()})
    );
    assert!(answers.lock().unwrap().is_empty());
    assert!(!client.workspace.path().join("n.txt").exists());
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

/// A sub-second approval timeout is named in milliseconds, not rounded to "0s".
#[tokio::test]
async fn a_sub_second_approval_timeout_reads_in_milliseconds() {
    let (_mock, client) = agent_setup(
        vec![bash_call("c1", "echo one"), MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({"approvalTimeoutMs": 250}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, is_error) = tool_results(&events).remove(0);
    assert!(
        is_error && text.contains("No approval within 250 ms:"),
        "{text}"
    );
}

#[tokio::test]
async fn approval_timeout_blocks_and_policy_config_is_honoured() {
    let responses = vec![
        bash_call("c1", "echo one"),
        MockResponse::tool_call("c2", "write", json!({"path": "p.txt", "content": "z"})),
        MockResponse::text("ok"),
    ];
    let (_mock, client) = agent_setup(
        responses,
        LspClient::agent_caps(false),
        // The timeout runs from the call, before the request is written: under load a short one
        // can expire before the client ever sees the request, which this test counts.
        json!({"approvalTimeoutMs": 2000, "approval": {"edit": "allow"}}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert!(
        results[0].1 && results[0].0.contains("No approval within 2 s:"),
        "{results:?}"
    );
    assert!(!results[1].1, "edit allowed by policy: {results:?}");
    let written = client.workspace.path().join("p.txt");
    assert_eq!(
        std::fs::read_to_string(written).unwrap(),
        "z",
        "a file that is not open is written on disk"
    );
    assert_eq!(
        requests_of(&client, "agent/beforeToolCall").len(),
        1,
        "write was not asked"
    );
    let cancels: Vec<Value> = client
        .log()
        .into_iter()
        .filter(|m| m["method"] == "$/cancelRequest")
        .collect();
    assert_eq!(
        cancels.len(),
        1,
        "the timed-out approval is cancelled on the client"
    );
}

/// A pending approval never blocks the server: the user keeps typing (hundreds of didChange),
/// requests are still answered, and the run resumes once the approval is answered.
#[tokio::test]
async fn typing_while_an_approval_is_pending_does_not_wedge_the_server() {
    let (_mock, client) = agent_setup(
        vec![bash_call("c1", "echo late"), MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let path = client.workspace.path().join("typing.txt");
    let uri = client.did_open(&path, "").await;
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    let mut batch = Vec::new();
    for i in 0..300u32 {
        batch.extend(frame(
            &json!({"jsonrpc":"2.0","method":"textDocument/didChange","params":{
            "textDocument": {"uri": uri, "version": 2 + i},
            "contentChanges": [{"range": {"start": {"line": 0, "character": i},
                "end": {"line": 0, "character": i}}, "text": "x"}]}}),
        ));
    }
    client.send_raw(&batch).await;
    let doc = client
        .request("agent/getDocument", json!({"uri": uri}))
        .await;
    assert_eq!(doc["text"].as_str().unwrap().len(), 300);
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["isStreaming"], true);
    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(tool_results(&events)[0], ("late".to_owned(), false));
}

#[tokio::test]
async fn block_with_terminate_ends_the_run_after_the_batch() {
    let (mock, client) = agent_setup(
        vec![
            bash_call("c1", "echo no"),
            MockResponse::text("never requested"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_approvals(Box::new(|_| {
        Some(json!({"decision": "block", "reason": "stop here", "terminate": true}))
    }));
    let (session, run, id) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert_eq!(tool_results(&events)[0], ("stop here".to_owned(), true));
    assert_eq!(
        mock.requests().len(),
        1,
        "terminate: no further model request"
    );
}

/// "Always" is remembered per session: another session on the same connection asks again.
#[tokio::test]
async fn always_decisions_are_remembered_per_session_only() {
    let (_mock, client) = agent_setup(
        vec![
            bash_call("a1", "ls -a"),
            bash_call("a2", "ls -l"),
            MockResponse::text("a done"),
            bash_call("b1", "ls -a"),
            MockResponse::text("b done"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let answers = std::sync::Arc::new(std::sync::Mutex::new(vec![
        json!({"decision": "allowAlways"}),
        json!({"decision": "block", "reason": "not in this session"}),
    ]));
    let queue = answers.clone();
    client.set_approvals(Box::new(move |_| Some(queue.lock().unwrap().remove(0))));
    let (first, run, _) = prompt(&client, json!({"message": "a"})).await;
    let events = client.wait_settled(&first, &run).await;
    let results = tool_results(&events);
    assert!(!results[0].1 && !results[1].1, "{results:?}");
    assert_eq!(requests_of(&client, "agent/beforeToolCall").len(), 1);

    let second = client.request("agent/newSession", json!({})).await;
    let second = second["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    let (_, run, _) = prompt(&client, json!({"sessionId": second, "message": "b"})).await;
    let events = client.wait_settled(&second, &run).await;
    assert_eq!(
        tool_results(&events)[0],
        ("not in this session".to_owned(), true)
    );
    let asked = requests_of(&client, "agent/beforeToolCall");
    assert_eq!(asked.len(), 2, "the second session asked again");
    assert_eq!(asked[1]["params"]["sessionId"], second.as_str());
    assert!(answers.lock().unwrap().is_empty());
}
