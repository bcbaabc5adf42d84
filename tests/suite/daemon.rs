//! Integration tests of the daemon: the real binary over stdio, driven like an editor.

use std::time::Duration;

use serde_json::{Value, json};

use crate::suite::support::lsp_client::{ApplyMode, LspClient, Spawn, frame, path_uri};

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

// ---------------------------------------------------------------------------------------------
// Agent runs against the loopback mock provider.

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};

async fn agent_setup(
    responses: Vec<MockResponse>,
    caps: Value,
    options: Value,
) -> (MockProvider, LspClient) {
    let mock = MockProvider::start(MockScript { responses }).await.unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![],
    })
    .await;
    client.initialize(caps, options).await;
    (mock, client)
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The guarantees every finished run must satisfy.
fn assert_run_invariants(client: &LspClient, session: &str, run: &str, response_id: i64) {
    let log = client.log();
    let response_at = log
        .iter()
        .position(|m| m["id"] == response_id && m.get("method").is_none())
        .expect("response written");
    let first_event_at = log
        .iter()
        .position(|m| m["method"] == "$/agentEvent" && m["params"]["runId"] == run)
        .expect("events written");
    assert!(
        response_at < first_event_at,
        "the response must precede the run's events"
    );
    let events = client.events(session);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "seq has no gaps"
    );
    let run_events: Vec<&Value> = events.iter().filter(|e| e["runId"] == run).collect();
    let k: Vec<&str> = run_events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(k.iter().filter(|t| **t == "agent_end").count(), 1, "{k:?}");
    assert_eq!(
        k.iter().filter(|t| **t == "agent_settled").count(),
        1,
        "{k:?}"
    );
    assert_eq!(k.last(), Some(&"agent_settled"), "{k:?}");
    assert_eq!(k[k.len() - 2], "agent_end", "{k:?}");
    assert_eq!(k[0], "agent_start", "{k:?}");
}

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

fn requests_of(client: &LspClient, method: &str) -> Vec<Value> {
    client
        .log()
        .into_iter()
        .filter(|m| m["method"] == method && m.get("id").is_some())
        .collect()
}

async fn prompt(client: &LspClient, params: Value) -> (String, String, i64) {
    let (id, rx) = client.request_start("agent/prompt", params).await;
    let resp = tokio::time::timeout(Duration::from_secs(20), rx)
        .await
        .unwrap()
        .unwrap();
    let r = &resp["result"];
    assert!(r.is_object(), "{resp}");
    (
        r["sessionId"].as_str().unwrap().to_owned(),
        r["runId"].as_str().unwrap().to_owned(),
        id,
    )
}

fn tool_results(events: &[Value]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| {
            (
                e["event"]["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["event"]["isError"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn edit_lands_on_the_unsaved_buffer_versioned_then_saved() {
    let edit = MockResponse::tool_call(
        "call_1",
        "edit",
        json!({"path": "src.txt", "edits": [{"oldText": "beta unsaved", "newText": "beta edited"}]}),
    );
    let (mock, client) = agent_setup(
        vec![edit, MockResponse::text("done")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let path = client.workspace.path().join("src.txt");
    std::fs::write(&path, "alpha\nbeta\n").unwrap();
    let uri = client.did_open(&path, "alpha\nbeta\n").await;
    client.edit_buffer(&uri, "alpha\nbeta unsaved\n").await;

    let (session, run, id) = prompt(&client, json!({"message": "edit it"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    assert!(!results[0].1, "edit failed: {}", results[0].0);

    let approval = &requests_of(&client, "agent/beforeToolCall")[0]["params"];
    assert_eq!(approval["kind"], "edit");
    assert_eq!(approval["runId"], run.as_str());
    assert_eq!(approval["preview"]["type"], "diff");
    assert!(
        approval["preview"]["diff"]
            .as_str()
            .unwrap()
            .contains("+beta edited"),
        "{approval}"
    );
    let apply =
        &requests_of(&client, "workspace/applyEdit")[0]["params"]["edit"]["documentChanges"][0];
    assert_eq!(
        apply["textDocument"]["version"], 2,
        "versioned with the mirror: {apply}"
    );
    assert_eq!(client.buffer(&uri).1, "alpha\nbeta edited\n");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "alpha\nbeta edited\n",
        "saved to disk"
    );
    assert_eq!(requests_of(&client, "agent/saveDocuments").len(), 1);
    assert!(mock.violations().is_empty());
}

#[tokio::test]
async fn without_save_documents_the_server_writes_the_disk() {
    let write = MockResponse::tool_call(
        "call_1",
        "write",
        json!({"path": "w.txt", "content": "new text\n"}),
    );
    let mut caps = LspClient::agent_caps(true);
    caps["experimental"]["agent"]["saveDocuments"] = json!(false);
    let (_mock, client) = agent_setup(vec![write, MockResponse::text("ok")], caps, json!({})).await;
    let path = client.workspace.path().join("w.txt");
    std::fs::write(&path, "old\n").unwrap();
    let uri = client.did_open(&path, "old\n").await;
    let (session, run, _) = prompt(&client, json!({"message": "write"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert!(!tool_results(&events)[0].1, "{:?}", tool_results(&events));
    assert_eq!(client.buffer(&uri).1, "new text\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new text\n");
    assert!(requests_of(&client, "agent/saveDocuments").is_empty());
}

#[tokio::test]
async fn refused_and_lying_apply_edit_are_retried_once_then_reported() {
    for mode in [ApplyMode::Refuse, ApplyMode::Lie] {
        let edit = MockResponse::tool_call(
            "call_1",
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
        );
        let (_mock, client) = agent_setup(
            vec![edit, MockResponse::text("ok")],
            LspClient::agent_caps(false),
            json!({"editTimeoutMs": 300}),
        )
        .await;
        client.set_apply_mode(mode);
        let path = client.workspace.path().join("f.txt");
        std::fs::write(&path, "one\n").unwrap();
        let uri = client.did_open(&path, "one\n").await;
        let (session, run, _) = prompt(&client, json!({"message": "edit"})).await;
        let events = client.wait_settled(&session, &run).await;
        let (text, is_error) = tool_results(&events).remove(0);
        assert!(is_error, "{mode:?}: {text}");
        assert!(text.contains("tried twice"), "{mode:?}: {text}");
        assert_eq!(
            requests_of(&client, "workspace/applyEdit").len(),
            2,
            "{mode:?}: one retry"
        );
        assert_eq!(client.buffer(&uri).1, "one\n");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "one\n",
            "{mode:?}: disk untouched"
        );
    }
}

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

fn bash_call(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({"command": command}))
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
        json!({"approvalTimeoutMs": 300, "approval": {"edit": "allow"}}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert!(
        results[0].1 && results[0].0.contains("No approval within"),
        "{results:?}"
    );
    assert!(!results[1].1, "edit allowed by policy: {results:?}");
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

#[tokio::test]
async fn busy_prompt_fails_with_pis_text_and_streaming_behavior_queues() {
    let mut slow = MockResponse::text("a slow answer that takes a while");
    slow.chunk_size = Some(2);
    slow.delay_ms = Some(40);
    let (mock, client) = agent_setup(
        vec![slow, MockResponse::text("follow-up answer")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "first"})).await;
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
    let events = client.wait_settled(&session, &run).await;
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
        2,
        "the follow-up was answered in the same run"
    );
    let texts = serde_json::to_string(&mock.requests()[1].body).unwrap();
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
        bash_call("c1", "sleep 1; echo slept"),
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

fn settled_aborted(events: &[Value], run: &str) -> bool {
    events.iter().any(|e| {
        e["runId"] == run && e["event"]["type"] == "agent_settled" && e["event"]["aborted"] == true
    })
}

#[tokio::test]
async fn abort_during_streaming_ends_the_run_once_and_keeps_the_session_usable() {
    let mut slow = MockResponse::text("word ".repeat(200));
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
        started.elapsed() < Duration::from_secs(10),
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
    let mut slow = MockResponse::text("word ".repeat(400));
    slow.chunk_size = Some(5);
    slow.delay_ms = Some(20);
    let (mock, mut client) = agent_setup(vec![slow], LspClient::agent_caps(false), json!({})).await;
    prompt(&client, json!({"message": "talk"})).await;
    client
        .wait_for("a delta", |m| {
            m["params"]["event"]["assistantMessageEvent"]["type"] == "text_delta"
        })
        .await;
    client.close_stdin().await;
    let status = tokio::time::timeout(Duration::from_secs(10), client.child.wait())
        .await
        .expect("the daemon exits after a disconnect")
        .unwrap();
    assert_eq!(status.code(), Some(1));
    assert_eq!(mock.requests().len(), 1);
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
    let text = serde_json::to_string(&messages).unwrap();
    assert!(
        text.contains("via-code-action\\n"),
        "the command ran: {text}"
    );
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
