//! Daemon tests: Edits to open buffers through workspace/applyEdit: versioned, confirmed, saved, retried.

use super::*;

/// `saveAfterEdit: "always"`: the user's unsaved change is saved with the agent's edit, and the
/// approval said so beforehand (`ifClean`, the default, is in `saving.rs`).
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
        json!({"saveAfterEdit": "always"}),
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
    assert_eq!(approval["savesUnsavedChanges"], true, "{approval}");
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

/// A client that cannot be asked to save keeps the edit in its buffer: the disk behind an open
/// buffer is never written, and the model is told.
#[tokio::test]
async fn without_save_documents_the_disk_is_left_alone_and_the_model_told() {
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
    let (text, is_error) = tool_results(&events).remove(0);
    assert!(!is_error, "{text}");
    assert!(
        text.contains("not saved to disk") && text.contains("cannot be asked to save"),
        "{text}"
    );
    assert_eq!(client.buffer(&uri).1, "new text\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
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
            // Long enough that a loaded machine still writes each request before it expires.
            // Long enough that a loaded machine still writes each request before it expires.
            json!({"editTimeoutMs": 2000}),
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
    assert!(text.contains("unsaved changes of the user"), "{text}");
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
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "fn a() {}\nfn b() {}\n",
        "what the user typed meanwhile is not saved for them"
    );
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

/// A client that declines to save keeps the edit unsaved: the server never writes the disk
/// behind the buffer (Neovim would warn that the file changed, W12).
#[tokio::test]
async fn a_declined_save_leaves_the_disk_alone_and_the_model_told() {
    let write = MockResponse::tool_call(
        "call_1",
        "write",
        json!({"path": "s.txt", "content": "saved by server\n"}),
    );
    let (_mock, client) = agent_setup(
        vec![write, MockResponse::text("ok")],
        LspClient::agent_caps(false),
        json!({"editTimeoutMs": 2000}),
    )
    .await;
    client.set_save_documents(false);
    let path = client.workspace.path().join("s.txt");
    std::fs::write(&path, "old\n").unwrap();
    client.did_open(&path, "old\n").await;
    let (session, run, _) = prompt(&client, json!({"message": "write"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, is_error) = tool_results(&events).remove(0);
    assert!(!is_error, "{text}");
    assert!(text.contains("did not save it when asked"), "{text}");
    assert_eq!(
        requests_of(&client, "agent/saveDocuments").len(),
        1,
        "the client was asked"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
}

/// `initializationOptions.extraRoots` lets tools reach a directory outside the session's cwd;
/// any other outside path is still refused, and a missing root is a clear error.
#[tokio::test]
async fn extra_roots_from_initialization_options_are_reachable_and_nothing_else() {
    let dirs = tempfile::tempdir().unwrap();
    let shared = std::fs::canonicalize(dirs.path()).unwrap().join("shared");
    let private = shared.with_file_name("private");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(shared.join("lib.txt"), "from shared\n").unwrap();
    std::fs::write(private.join("secret.txt"), "private data\n").unwrap();
    let read = |id: &str, path: std::path::PathBuf| {
        MockResponse::tool_call(id, "read", json!({"path": path.display().to_string()}))
    };
    let (mock, client) = agent_setup(
        vec![
            read("c1", shared.join("lib.txt")),
            read("c2", private.join("secret.txt")),
            MockResponse::text("done"),
        ],
        LspClient::agent_caps(false),
        json!({"extraRoots": [shared.display().to_string()]}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "read"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert_eq!(results[0], ("from shared\n".to_owned(), false));
    assert!(
        results[1].1
            && results[1]
                .0
                .contains(&format!("and the extra roots ({})", shared.display())),
        "{results:?}"
    );
    assert_eq!(mock.requests().len(), 3);

    let (_mock, client) = agent_setup(
        vec![MockResponse::text("never")],
        LspClient::agent_caps(false),
        json!({"extraRoots": [private.with_file_name("missing").display().to_string()]}),
    )
    .await;
    let refused = client
        .request_raw("agent/prompt", json!({"message": "x"}))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("extraRoots"),
        "{refused}"
    );
}
