//! Daemon tests: Abort and disconnect: every path ends the run exactly once.

use super::*;

#[tokio::test]
async fn abort_during_streaming_ends_the_run_once_and_keeps_the_session_usable() {
    let mut slow = MockResponse::text("word ".repeat(2000));
    slow.chunk_size = Some(5);
    slow.delay_ms = Some(20);
    let (_mock, client) = agent_setup(
        vec![slow, MockResponse::text("after abort")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, id) = prompt(&client, json!({"message": "talk"})).await;
    client
        .wait_for("a delta", |m| {
            m["params"]["event"]["assistantMessageEvent"]["type"] == "text_delta"
        })
        .await;
    let aborted = client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    assert_eq!(aborted, json!({"aborted": true}));
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert!(settled_aborted(&events, &run));
    let idle = client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    assert_eq!(idle, json!({"aborted": false}), "abort is safe when idle");
    let (_, run2, _) = prompt(&client, json!({"sessionId": session, "message": "again"})).await;
    let events = client.wait_settled(&session, &run2).await;
    assert!(!settled_aborted(&events, &run2));
}

#[tokio::test]
async fn abort_during_a_pending_approval_cancels_the_request() {
    let (_mock, client) = agent_setup(
        vec![bash_call("c1", "echo hi"), MockResponse::text("x")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, id) = prompt(&client, json!({"message": "go"})).await;
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    let cancel = client
        .wait_for("cancel", |m| m["method"] == "$/cancelRequest")
        .await;
    assert_eq!(cancel["params"]["id"], asked["id"]);
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert!(settled_aborted(&events, &run));
    // A late answer is ignored and the daemon keeps serving.
    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
}

#[tokio::test]
async fn abort_during_a_bash_command_kills_it() {
    let (_mock, client) = agent_setup(
        vec![bash_call("c1", "sleep 30"), MockResponse::text("x")],
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    client
        .wait_for("tool start", |m| {
            m["params"]["event"]["type"] == "tool_execution_start"
        })
        .await;
    let started = std::time::Instant::now();
    client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the command was not left running"
    );
    assert!(settled_aborted(&events, &run));
    assert!(
        tool_results(&events)[0].1,
        "the aborted command is an error result"
    );
}

#[tokio::test]
async fn client_disconnect_mid_run_ends_the_daemon() {
    let mut slow = MockResponse::text("word ".repeat(2000));
    slow.chunk_size = Some(5);
    slow.delay_ms = Some(20);
    let (mock, mut client) = agent_setup(vec![slow], LspClient::agent_caps(false), json!({})).await;
    let (session, _, _) = prompt(&client, json!({"message": "talk"})).await;
    client
        .wait_for("a delta", |m| {
            m["params"]["event"]["assistantMessageEvent"]["type"] == "text_delta"
        })
        .await;
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    let file = state["sessionFile"].as_str().unwrap().to_owned();
    client.close_stdin().await;
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .expect("the daemon exits after a disconnect")
        .unwrap();
    assert_eq!(status.code(), Some(1));
    assert_eq!(mock.requests().len(), 1);
    // The run was aborted and ended: its aborted response is stored in the session.
    let stored = std::fs::read_to_string(file).unwrap();
    assert!(stored.contains(r#""stopReason":"aborted""#), "{stored}");
}

/// The message count of a session is one number, whoever asks: `agent/getState` counts what
/// `agent/listSessions` (the session picker) counts, after an aborted run too.
#[tokio::test]
async fn get_state_and_list_sessions_count_the_messages_of_an_aborted_session_alike() {
    let mut slow = MockResponse::text("word ".repeat(2000));
    slow.chunk_size = Some(5);
    slow.delay_ms = Some(20);
    let (_mock, client) = agent_setup(
        vec![slow, MockResponse::text("after abort")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "talk"})).await;
    client
        .wait_for("a delta", |m| {
            m["params"]["event"]["assistantMessageEvent"]["type"] == "text_delta"
        })
        .await;
    client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    client.wait_settled(&session, &run).await;
    let (_, run2, _) = prompt(&client, json!({"sessionId": session, "message": "again"})).await;
    client.wait_settled(&session, &run2).await;
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    let cwd = client.workspace.path().display().to_string();
    let listed = client
        .request("agent/listSessions", json!({"cwd": cwd}))
        .await;
    let stored = &listed["sessions"][0];
    assert_eq!(stored["sessionId"], session.as_str(), "{listed}");
    // talk, the aborted answer, again, its answer.
    assert_eq!(stored["messageCount"], 4, "{listed}");
    assert_eq!(state["messageCount"], 4, "{state}");
}
