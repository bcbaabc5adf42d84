//! Daemon tests: `saveAfterEdit` with clean and modified buffers (protocol.md §4.4).

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
