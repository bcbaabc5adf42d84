//! Daemon tests: Edits to open buffers through workspace/applyEdit: versioned, confirmed, saved, retried.

use super::*;

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
async fn an_edit_refused_because_the_user_typed_is_carried_over_and_retried() {
    let edit = MockResponse::tool_call(
        "call_1",
        "edit",
        json!({"path": "g.txt", "edits": [{"oldText": "fn b() {}", "newText": "fn b() { todo!() }"}]}),
    );
    let (_mock, client) = agent_setup(
        vec![edit, MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_apply_mode(ApplyMode::UserTypesFirst);
    let path = client.workspace.path().join("g.txt");
    std::fs::write(&path, "fn a() {}\nfn b() {}\n").unwrap();
    let uri = client.did_open(&path, "fn a() {}\nfn b() {}\n").await;
    let (session, run, _) = prompt(&client, json!({"message": "edit"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, is_error) = tool_results(&events).remove(0);
    assert!(!is_error, "{text}");
    let expected = "// user\nfn a() {}\nfn b() { todo!() }\n";
    assert_eq!(
        client.buffer(&uri).1,
        expected,
        "both the user's and the agent's change"
    );
    let applies = requests_of(&client, "workspace/applyEdit");
    assert_eq!(applies.len(), 2);
    let versions: Vec<&Value> = applies
        .iter()
        .map(|a| &a["params"]["edit"]["documentChanges"][0]["textDocument"]["version"])
        .collect();
    assert_eq!(
        versions,
        [&json!(1), &json!(2)],
        "the retry uses the fresh version"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
}

/// A Neovim-like client: UTF-8 positions and no `documentChanges`.
#[tokio::test]
async fn utf8_client_without_document_changes_gets_unversioned_changes() {
    let edit = MockResponse::tool_call(
        "call_1",
        "edit",
        json!({"path": "u.txt", "edits": [{"oldText": "héllo 😀 wörld", "newText": "héllo 😀 there"}]}),
    );
    let mut caps = LspClient::agent_caps(true);
    caps["workspace"] = json!({});
    let (_mock, client) = agent_setup(vec![edit, MockResponse::text("ok")], caps, json!({})).await;
    let path = client.workspace.path().join("u.txt");
    std::fs::write(&path, "x\r\nhéllo 😀 wörld\r\n").unwrap();
    let uri = client.did_open(&path, "x\r\nhéllo 😀 wörld\r\n").await;
    let (session, run, _) = prompt(&client, json!({"message": "edit"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, is_error) = tool_results(&events).remove(0);
    assert!(!is_error, "{text}");
    let apply = &requests_of(&client, "workspace/applyEdit")[0]["params"]["edit"];
    assert!(apply.get("documentChanges").is_none(), "{apply}");
    let edits = &apply["changes"][uri.as_str()];
    assert_eq!(
        edits[0]["range"]["start"],
        json!({"line": 1, "character": 12}),
        "UTF-8 bytes"
    );
    assert_eq!(client.buffer(&uri).1, "x\r\nhéllo 😀 there\r\n");
    let mirror = client
        .request("agent/getDocument", json!({"uri": uri}))
        .await;
    assert_eq!(mirror["text"], "x\r\nhéllo 😀 there\r\n");
}

#[tokio::test]
async fn an_unanswered_save_documents_falls_back_to_writing_the_disk() {
    let write = MockResponse::tool_call(
        "call_1",
        "write",
        json!({"path": "s.txt", "content": "saved by server\n"}),
    );
    let (_mock, client) = agent_setup(
        vec![write, MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({"editTimeoutMs": 300}),
    )
    .await;
    client.set_save_documents(false);
    let path = client.workspace.path().join("s.txt");
    std::fs::write(&path, "old\n").unwrap();
    client.did_open(&path, "old\n").await;
    let (session, run, _) = prompt(&client, json!({"message": "write"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert!(!tool_results(&events)[0].1, "{:?}", tool_results(&events));
    assert_eq!(
        requests_of(&client, "agent/saveDocuments").len(),
        1,
        "the client was asked"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "saved by server\n");
}
