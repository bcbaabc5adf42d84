//! Daemon tests: `saveAfterEdit` with clean and modified buffers (protocol.md §4.4), and an
//! edit that the editor applied next to a keystroke of the user (never applied twice).

use super::*;

/// Runs one `edit` of `f.txt` (`beta` → `beta edited`) with these options, the file on disk
/// holding `alpha\nbeta\n` and the buffer `buffer`; returns the client, the buffer's URI, the
/// tool result and the approval request.
async fn edit_with(options: Value, buffer: &str) -> (LspClient, String, (String, bool), Value) {
    let edit = MockResponse::tool_call(
        "call_1",
        "edit",
        json!({"path": "f.txt", "edits": [{"oldText": "beta", "newText": "beta edited"}]}),
    );
    let (_mock, client) = agent_setup(
        vec![edit, MockResponse::text("done")],
        LspClient::agent_caps(false),
        options,
    )
    .await;
    let path = client.workspace.path().join("f.txt");
    std::fs::write(&path, "alpha\nbeta\n").unwrap();
    let uri = client.did_open(&path, "alpha\nbeta\n").await;
    if buffer != "alpha\nbeta\n" {
        client.edit_buffer(&uri, buffer).await;
    }
    let (session, run, _) = prompt(&client, json!({"message": "edit it"})).await;
    let events = client.wait_settled(&session, &run).await;
    let result = tool_results(&events).remove(0);
    let approval = requests_of(&client, "agent/beforeToolCall")[0]["params"].clone();
    (client, uri, result, approval)
}

fn disk(client: &LspClient) -> String {
    std::fs::read_to_string(client.workspace.path().join("f.txt")).unwrap()
}

#[tokio::test]
async fn if_clean_saves_a_clean_buffer() {
    let (client, uri, (text, is_error), approval) = edit_with(json!({}), "alpha\nbeta\n").await;
    assert!(!is_error, "{text}");
    assert!(!text.contains("not saved"), "{text}");
    assert!(approval.get("savesUnsavedChanges").is_none(), "{approval}");
    assert_eq!(client.buffer(&uri).1, "alpha\nbeta edited\n");
    assert_eq!(disk(&client), "alpha\nbeta edited\n");
    assert_eq!(requests_of(&client, "agent/saveDocuments").len(), 1);
}

#[tokio::test]
async fn if_clean_leaves_a_modified_buffer_unsaved_and_says_why() {
    let (client, uri, (text, is_error), approval) =
        edit_with(json!({"saveAfterEdit": "ifClean"}), "alpha typed\nbeta\n").await;
    assert!(!is_error, "{text}");
    assert!(
        text.contains("not saved to disk")
            && text.contains("unsaved changes of the user")
            && text.contains("Commands (bash"),
        "{text}"
    );
    assert!(approval.get("savesUnsavedChanges").is_none(), "{approval}");
    assert_eq!(client.buffer(&uri).1, "alpha typed\nbeta edited\n");
    assert_eq!(
        disk(&client),
        "alpha\nbeta\n",
        "the user's text is not saved"
    );
    assert!(requests_of(&client, "agent/saveDocuments").is_empty());
}

#[tokio::test]
async fn always_saves_a_clean_buffer_without_a_warning() {
    let (client, _uri, (text, is_error), approval) =
        edit_with(json!({"saveAfterEdit": "always"}), "alpha\nbeta\n").await;
    assert!(!is_error && !text.contains("not saved"), "{text}");
    assert!(approval.get("savesUnsavedChanges").is_none(), "{approval}");
    assert_eq!(disk(&client), "alpha\nbeta edited\n");
}

#[tokio::test]
async fn never_leaves_clean_and_modified_buffers_unsaved() {
    for buffer in ["alpha\nbeta\n", "alpha typed\nbeta\n"] {
        let (client, uri, (text, is_error), approval) =
            edit_with(json!({"saveAfterEdit": "never"}), buffer).await;
        assert!(!is_error, "{text}");
        assert!(text.contains("saveAfterEdit: never"), "{text}");
        assert!(approval.get("savesUnsavedChanges").is_none(), "{approval}");
        assert!(client.buffer(&uri).1.ends_with("beta edited\n"));
        assert_eq!(disk(&client), "alpha\nbeta\n", "{buffer:?}");
        assert!(requests_of(&client, "agent/saveDocuments").is_empty());
    }
}

/// The editor applies the edit and answers `applied: true`, and a keystroke of the user lands
/// right after: the mirror never equals the edited text. The change is found in the buffer
/// (not applied again, although `oldText` occurs again inside `newText`), reported as done, and
/// not saved (the keystroke is the user's).
#[tokio::test]
async fn an_edit_applied_next_to_a_keystroke_is_applied_once() {
    for tool in ["edit", "write"] {
        let args = match tool {
            "edit" => {
                json!({"path": "c.rs", "edits": [{"oldText": "count = 1", "newText": "count = 1 + 1"}]})
            }
            _ => json!({"path": "c.rs", "content": "let count = 1 + 1;\nfn main() {}\n"}),
        };
        let call = MockResponse::tool_call("call_1", tool, args);
        let (_mock, client) = agent_setup(
            vec![call, MockResponse::text("ok")],
            LspClient::agent_caps(false),
            json!({"editTimeoutMs": 1000}),
        )
        .await;
        client.set_apply_mode(ApplyMode::ApplyThenUserTypes);
        let path = client.workspace.path().join("c.rs");
        let original = "let count = 1;\nfn main() {}\n";
        std::fs::write(&path, original).unwrap();
        let uri = client.did_open(&path, original).await;
        let (session, run, _) = prompt(&client, json!({"message": "increment"})).await;
        let events = client.wait_settled(&session, &run).await;
        let (text, is_error) = tool_results(&events).remove(0);
        assert!(!is_error, "{tool}: {text}");
        assert!(text.starts_with("Successfully"), "{tool}: {text}");
        assert_eq!(
            requests_of(&client, "workspace/applyEdit").len(),
            1,
            "{tool}: never sent again"
        );
        assert_eq!(
            client.buffer(&uri).1,
            "let count = 1 + 1;\nfn main() {}\n// typed",
            "{tool}: applied once"
        );
        assert!(
            text.contains("unsaved changes of the user"),
            "{tool}: {text}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    }
}
