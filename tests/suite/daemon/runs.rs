//! Daemon tests: Runs: streaming, reading unsaved buffers, busy prompts, follow-ups, steering, failures, many sessions.

use super::*;

#[tokio::test]
async fn prompt_streams_text_and_reads_the_unsaved_buffer() {
    let read = MockResponse::tool_call("call_1", "read", json!({"path": "notes.txt"}));
    let mut answer = MockResponse::text("The notes say hello.");
    answer.chunk_size = Some(4);
    let (mock, client) =
        agent_setup(vec![read, answer], LspClient::agent_caps(false), json!({})).await;
    let path = client.workspace.path().join("notes.txt");
    std::fs::write(&path, "on disk\n").unwrap();
    let uri = client.did_open(&path, "on disk\n").await;
    client.edit_buffer(&uri, "unsaved hello\n").await;

    let (id, rx) = client
        .request_start("agent/prompt", json!({"message": "What do the notes say?"}))
        .await;
    let resp = rx.await.unwrap();
    let result = &resp["result"];
    assert_eq!(result["disposition"], "started", "{resp}");
    let (session, run) = (
        result["sessionId"].as_str().unwrap(),
        result["runId"].as_str().unwrap(),
    );
    let events = client.wait_settled(session, run).await;
    assert_run_invariants(&client, session, run, id);

    let tool_end = events
        .iter()
        .find(|e| e["event"]["type"] == "tool_execution_end")
        .unwrap();
    let output = tool_end["event"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        output.contains("unsaved hello"),
        "read must see the buffer: {output}"
    );
    let deltas: String = events
        .iter()
        .filter(|e| {
            e["event"]["type"] == "message_update"
                && e["event"]["assistantMessageEvent"]["type"] == "text_delta"
        })
        .map(|e| {
            e["event"]["assistantMessageEvent"]["delta"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(deltas, "The notes say hello.");
    assert!(
        events
            .iter()
            .filter(|e| e["event"]["type"] == "message_update")
            .all(|e| e["event"].get("message").is_none()),
        "message_update carries deltas only"
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["lastSeq"], events.len());
}

#[tokio::test]
async fn busy_prompt_fails_with_pis_text_and_streaming_behavior_queues() {
    // The run is held at a pending approval while the busy prompt and the follow-up arrive
    // (event-driven: no race against a slow stream on a loaded machine).
    let (mock, client) = agent_setup(
        vec![
            bash_call("c1", "echo held"),
            MockResponse::text("after the tool"),
            MockResponse::text("follow-up answer"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "first"})).await;
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    let busy = client
        .request_raw(
            "agent/prompt",
            json!({"sessionId": session, "message": "second"}),
        )
        .await;
    assert_eq!(busy["error"]["code"], -32001);
    assert_eq!(
        busy["error"]["message"],
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    let queued = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "later",
        "streamingBehavior": "followUp"}),
        )
        .await;
    assert_eq!(queued["disposition"], "followUp");
    assert_eq!(queued["runId"], run.as_str());
    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    // The response announcing the messageId is written before the event carrying it.
    let log = client.log();
    let message_id = queued["messageId"].as_str().unwrap();
    let response_at = log
        .iter()
        .position(|m| m["result"]["messageId"] == message_id)
        .unwrap();
    let event_at = log
        .iter()
        .position(|m| m["params"]["event"]["followUp"][0]["messageId"] == message_id)
        .unwrap();
    assert!(
        response_at < event_at,
        "response {response_at} before event {event_at}"
    );
    let updates: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"]["type"] == "queue_update")
        .collect();
    assert_eq!(
        updates[0]["event"]["followUp"][0]["messageId"],
        queued["messageId"]
    );
    assert_eq!(
        updates.last().unwrap()["event"]["followUp"],
        json!([]),
        "delivered"
    );
    let k = kinds(
        &events
            .iter()
            .filter(|e| e["runId"] == run.as_str())
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(k.iter().filter(|t| *t == "agent_end").count(), 1);
    assert_eq!(
        mock.requests().len(),
        3,
        "the follow-up was answered in the same run"
    );
    let texts = serde_json::to_string(&mock.requests()[2].body).unwrap();
    assert!(texts.contains("later"));
}

#[tokio::test]
async fn follow_up_and_steer_when_idle_start_a_run() {
    let (_mock, client) = agent_setup(
        vec![MockResponse::text("one"), MockResponse::text("two")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "first"})).await;
    client.wait_settled(&session, &run).await;
    let (id, rx) = client
        .request_start(
            "agent/followUp",
            json!({"sessionId": session, "message": "again"}),
        )
        .await;
    let r = rx.await.unwrap()["result"].clone();
    assert_eq!(r["disposition"], "started");
    assert_ne!(r["runId"], run.as_str());
    let run2 = r["runId"].as_str().unwrap();
    client.wait_settled(&session, run2).await;
    assert_run_invariants(&client, &session, run2, id);
    let messages = client
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    let roles: Vec<&str> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
}

#[tokio::test]
async fn steering_during_a_tool_batch_is_delivered_after_the_tool() {
    let responses = vec![
        // Holds the tool until the test has steered (a file as the signal, bounded at 30 s),
        // so a loaded machine cannot finish the tool before the steer arrives.
        bash_call(
            "c1",
            "for i in $(seq 600); do [ -f go ] && break; sleep 0.05; done; echo slept",
        ),
        MockResponse::text("steered answer"),
    ];
    let (mock, client) = agent_setup(
        responses,
        LspClient::agent_caps(false),
        json!({"approval": {"bash": "allow"}}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "work"})).await;
    client
        .wait_for("tool start", |m| {
            m["params"]["event"]["type"] == "tool_execution_start"
        })
        .await;
    let steer = client
        .request(
            "agent/steer",
            json!({"sessionId": session, "message": "focus on tests"}),
        )
        .await;
    assert_eq!(steer["disposition"], "steered");
    assert_eq!(steer["steering"][0]["text"], "focus on tests");
    std::fs::write(client.workspace.path().join("go"), "").unwrap();
    let events = client.wait_settled(&session, &run).await;
    let k = kinds(&events);
    let tool_end = k.iter().position(|t| t == "tool_execution_end").unwrap();
    let delivered = events
        .iter()
        .position(|e| {
            e["event"]["type"] == "message_start"
                && e["event"]["message"]["role"] == "user"
                && e["event"]["message"]["content"][0]["text"] == "focus on tests"
        })
        .unwrap();
    assert!(delivered > tool_end, "{k:?}");
    let emptied = events
        .iter()
        .rposition(|e| e["event"]["type"] == "queue_update")
        .unwrap();
    assert!(emptied < delivered && events[emptied]["event"]["steering"] == json!([]));
    assert!(
        serde_json::to_string(&mock.requests()[1].body)
            .unwrap()
            .contains("focus on tests")
    );
}

#[tokio::test]
async fn provider_and_tool_failures_still_end_each_run_exactly_once() {
    let failing_tool = MockResponse::tool_call("c1", "read", json!({"path": "missing.txt"}));
    let responses = vec![
        failing_tool,
        MockResponse::text("recovered"),
        MockResponse::status(400, "bad request"),
    ];
    let (_mock, client) = agent_setup(responses, LspClient::agent_caps(false), json!({})).await;
    let (session, run, id) = prompt(&client, json!({"message": "read it"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert!(
        tool_results(&events)[0].1,
        "reading a missing file is a tool error"
    );
    let (_, run2, id2) = prompt(&client, json!({"sessionId": session, "message": "again"})).await;
    let events = client.wait_settled(&session, &run2).await;
    assert_run_invariants(&client, &session, &run2, id2);
    let end = events
        .iter()
        .find(|e| e["runId"] == run2.as_str() && e["event"]["type"] == "agent_end")
        .unwrap();
    let last = end["event"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["stopReason"], "error", "{last}");
    assert!(!settled_aborted(&events, &run2));
}

#[tokio::test]
async fn twenty_sessions_run_concurrently_on_one_connection() {
    let responses = (0..20)
        .map(|i| {
            let mut r = MockResponse::text(format!("answer {i}"));
            r.chunk_size = Some(3);
            r
        })
        .collect();
    let (mock, client) = agent_setup(responses, LspClient::agent_caps(false), json!({})).await;
    let mut sessions = Vec::new();
    for _ in 0..20 {
        let s = client.request("agent/newSession", json!({})).await;
        sessions.push(s["sessionId"].as_str().unwrap().to_owned());
    }
    let mut pending = Vec::new();
    for (i, session) in sessions.iter().enumerate() {
        pending.push(
            client
                .request_start(
                    "agent/prompt",
                    json!({"sessionId": session, "message": format!("q{i}")}),
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
    assert_eq!(mock.requests().len(), 20);
    assert!(mock.violations().is_empty());
}

/// Many pipelined follow-ups: each response precedes the first event that carries its id.
#[tokio::test]
async fn pipelined_follow_ups_are_announced_before_their_events() {
    let mut slow = MockResponse::text("word ".repeat(60));
    slow.chunk_size = Some(3);
    slow.delay_ms = Some(10);
    let mut responses = vec![slow];
    responses.extend((0..40).map(|i| MockResponse::text(format!("answer {i}"))));
    let (_mock, client) = agent_setup(responses, LspClient::agent_caps(false), json!({})).await;
    let (session, run, _) = prompt(&client, json!({"message": "first"})).await;
    let mut batch = Vec::new();
    for i in 0..40 {
        batch.extend(frame(
            &json!({"jsonrpc": "2.0", "id": 10_000 + i, "method": "agent/followUp",
            "params": {"sessionId": session, "message": format!("f{i}")}}),
        ));
    }
    client.send_raw(&batch).await;
    client.wait_settled(&session, &run).await;
    let log = client.log();
    for i in 0..40 {
        let response_at = log
            .iter()
            .position(|m| m["id"] == 10_000 + i && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response {i}"));
        let message_id = &log[response_at]["result"]["messageId"];
        let first_event = log.iter().position(|m| {
            m["method"] == "$/agentEvent"
                && m["params"]["event"]["followUp"]
                    .as_array()
                    .is_some_and(|q| q.iter().any(|x| x["messageId"] == *message_id))
        });
        if let Some(event_at) = first_event {
            assert!(
                response_at < event_at,
                "follow-up {i}: response {response_at} after event {event_at}"
            );
        }
    }
}

/// The run is held at a pending approval (event-driven, not a race against a slow stream) while
/// messages are queued and cleared; after the approval the loop polls both queues and must find
/// them empty.
#[tokio::test]
async fn clear_queue_drops_queued_messages_before_delivery() {
    let (mock, client) = agent_setup(
        vec![bash_call("c1", "echo held"), MockResponse::text("done")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "first"})).await;
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    let a = client
        .request(
            "agent/followUp",
            json!({"sessionId": session, "message": "a"}),
        )
        .await;
    let b = client
        .request("agent/steer", json!({"sessionId": session, "message": "b"}))
        .await;
    let removed = client
        .request("agent/clearQueue", json!({"sessionId": session}))
        .await;
    assert_eq!(removed["followUp"][0]["messageId"], a["messageId"]);
    assert_eq!(removed["steering"][0]["messageId"], b["messageId"]);
    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    let user_messages = events
        .iter()
        .filter(|e| {
            e["event"]["type"] == "message_start" && e["event"]["message"]["role"] == "user"
        })
        .count();
    assert_eq!(user_messages, 1, "only the prompt entered the transcript");
    let last_update = events
        .iter()
        .rev()
        .find(|e| e["event"]["type"] == "queue_update")
        .unwrap();
    assert_eq!(last_update["event"]["steering"], json!([]));
    assert_eq!(last_update["event"]["followUp"], json!([]));
    assert_eq!(
        mock.requests().len(),
        2,
        "the tool result's request only: nothing queued was delivered"
    );
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(
        (state["steering"].clone(), state["followUp"].clone()),
        (json!([]), json!([]))
    );
}

#[tokio::test]
async fn a_stored_session_is_resumed_by_a_new_daemon() {
    let mock = MockProvider::start(MockScript {
        responses: vec![
            MockResponse::text("first answer"),
            MockResponse::text("second answer"),
        ],
    })
    .await
    .unwrap();
    let first = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![],
    })
    .await;
    first
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    let (session, run, _) = prompt(&first, json!({"message": "remember 42"})).await;
    first.wait_settled(&session, &run).await;
    let before = first
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    let env = same_home(&first);
    let workspace = first.workspace.path().to_path_buf();
    // The session file is locked while its daemon lives; a second daemon may resume it after.
    let mut first = first;
    assert!(first.stop().await.success());
    let (second, resumed) = resume_in_new_daemon(env, &mock, &session).await;
    assert_eq!(resumed["sessionId"], session.as_str());
    assert_eq!(
        resumed["cwd"],
        std::fs::canonicalize(&workspace)
            .unwrap()
            .display()
            .to_string()
    );
    let after = second
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    assert_eq!(after["messages"], before["messages"]);
    let (_, run2, _) = prompt(
        &second,
        json!({"sessionId": session, "message": "what number?"}),
    )
    .await;
    second.wait_settled(&session, &run2).await;
    let body = serde_json::to_string(&mock.requests()[1].body).unwrap();
    assert!(
        body.contains("remember 42") && body.contains("first answer"),
        "{body}"
    );
    let missing = second
        .request_raw("agent/newSession", json!({"resume": "no-such-session"}))
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    drop(first);
}
