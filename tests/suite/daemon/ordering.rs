//! Daemon tests: every event of a run emitted before a server → client request of that run
//! (approval, applyEdit) is on the wire before that request.

use super::*;

/// The wire index of the first `$/agentEvent` of `session` matching `pred`.
fn event_at(log: &[Value], session: &str, pred: impl Fn(&Value) -> bool) -> Option<usize> {
    log.iter().position(|m| {
        m["method"] == "$/agentEvent"
            && m["params"]["sessionId"] == session
            && pred(&m["params"]["event"])
    })
}

fn calls_tool(event: &Value, call_id: &str) -> bool {
    event["type"] == "message_end"
        && event["message"]["role"] == "assistant"
        && event["message"]["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b["id"] == call_id))
}

/// Asserts that the assistant message making `call_id` and its `tool_execution_start` were
/// written before the request at wire index `at`.
fn assert_events_precede(log: &[Value], at: usize, session: &str, call_id: &str) {
    let end = event_at(log, session, |e| calls_tool(e, call_id));
    assert!(
        end.is_some_and(|i| i < at),
        "{}: the assistant message_end calling {call_id} (at {end:?}) must precede it (at {at})",
        log[at]["method"]
    );
    let start = event_at(log, session, |e| {
        e["type"] == "tool_execution_start" && e["toolCallId"] == call_id
    });
    assert!(
        start.is_some_and(|i| i < at),
        "{}: tool_execution_start of {call_id} (at {start:?}) must precede it (at {at})",
        log[at]["method"]
    );
}

/// Many sessions, many tool calls, streamed in small deltas so the event writer has a backlog:
/// every approval and every applyEdit comes after the events that led to it.
#[tokio::test]
async fn requests_never_overtake_the_events_before_them() {
    const SESSIONS: usize = 8;
    const CALLS: usize = 48;
    let mut responses = Vec::new();
    for i in 0..CALLS {
        let id = format!("call_{i}");
        let mut r = if i % 2 == 0 {
            MockResponse::tool_call(&id, "read", json!({"path": format!("r{i}.txt")}))
        } else {
            MockResponse::tool_call(
                &id,
                "write",
                json!({"path": format!("w{i}.txt"), "content": format!("v{i}")}),
            )
        };
        r.text = Some(format!(
            "Working on step {i} of the plan, one small delta at a time."
        ));
        r.chunk_size = Some(2);
        responses.push(r);
    }
    responses.extend((0..SESSIONS).map(|i| MockResponse::text(format!("done {i}"))));
    let (mock, client) = agent_setup(
        responses,
        LspClient::agent_caps(false),
        json!({"approval": {"read": "ask", "edit": "allow"}}),
    )
    .await;
    let mut uris = std::collections::HashMap::new();
    for i in (1..CALLS).step_by(2) {
        let path = client.workspace.path().join(format!("w{i}.txt"));
        uris.insert(client.did_open(&path, "old").await, format!("call_{i}"));
    }
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        let s = client.request("agent/newSession", json!({})).await;
        sessions.push(s["sessionId"].as_str().unwrap().to_owned());
    }
    let mut pending = Vec::new();
    for session in &sessions {
        pending.push(
            client
                .request_start(
                    "agent/prompt",
                    json!({"sessionId": session, "message": "go"}),
                )
                .await,
        );
    }
    for (i, (id, rx)) in pending.into_iter().enumerate() {
        let resp = rx.await.unwrap();
        let run = resp["result"]["runId"].as_str().unwrap().to_owned();
        client.wait_settled(&sessions[i], &run).await;
        assert_run_invariants(&client, &sessions[i], &run, id);
    }
    let log = client.log();
    let mut approvals = 0;
    let mut edits = 0;
    for (at, m) in log.iter().enumerate() {
        if m.get("id").is_none() {
            continue;
        }
        if m["method"] == "agent/beforeToolCall" {
            let p = &m["params"];
            assert_events_precede(
                &log,
                at,
                p["sessionId"].as_str().unwrap(),
                p["toolCallId"].as_str().unwrap(),
            );
            approvals += 1;
        } else if m["method"] == "workspace/applyEdit" {
            let uri = m["params"]["edit"]["documentChanges"][0]["textDocument"]["uri"]
                .as_str()
                .unwrap();
            let call = &uris[uri];
            let session = sessions
                .iter()
                .find(|s| event_at(&log, s, |e| calls_tool(e, call)).is_some())
                .expect("a session made the call");
            assert_events_precede(&log, at, session, call);
            edits += 1;
        }
    }
    assert_eq!(approvals, CALLS / 2);
    assert_eq!(edits, CALLS / 2);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}
