//! Daemon tests: the effect journal — `agent/runChanges`, `agent/revert`, `changes_update`,
//! checkpoints, conflicts, and what a resumed session says after a kill -9.

use super::*;
use agent_lsp::testing::MockToolCall;

async fn prompt_in(
    client: &LspClient,
    session: Option<&str>,
    text: &str,
) -> (String, String, String) {
    let mut params = json!({"message": text});
    if let Some(session) = session {
        params["sessionId"] = json!(session);
    }
    let r = client.request("agent/prompt", params).await;
    let session = r["sessionId"].as_str().unwrap().to_owned();
    let run = r["runId"].as_str().unwrap().to_owned();
    client.wait_settled(&session, &run).await;
    (session, run, r["messageId"].as_str().unwrap().to_owned())
}

fn write_call(id: &str, path: &str, content: &str) -> MockResponse {
    MockResponse::tool_call(id, "write", json!({"path": path, "content": content}))
}

fn by_name<'a>(files: &'a Value, name: &str) -> &'a Value {
    files
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("{name} not in {files}"))
}

#[tokio::test]
async fn a_run_is_reviewed_and_reverted_across_buffer_disk_and_bash_with_conflicts() {
    let edit = MockResponse::tool_call(
        "call_1",
        "edit",
        json!({"path": "open.txt", "edits": [{"oldText": "one", "newText": "uno"}]}),
    );
    let (_mock, client) = agent_setup(
        vec![
            edit,
            write_call("call_2", "closed.txt", "agent\n"),
            bash_call("call_3", "printf 'made\\n' > made.txt"),
            MockResponse::text("done"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let root = client.workspace.path().to_path_buf();
    std::fs::write(root.join("open.txt"), "one\n").unwrap();
    std::fs::write(root.join("closed.txt"), "old\n").unwrap();
    let uri = client.did_open(&root.join("open.txt"), "one\n").await;
    let (session, run, _) = prompt_in(&client, None, "change things").await;
    assert_eq!(client.buffer(&uri).1, "uno\n");
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt")).unwrap(),
        "made\n"
    );

    let update = client
        .events(&session)
        .into_iter()
        .find(|e| e["event"]["type"] == "changes_update")
        .expect("changes_update after the run");
    assert_eq!(update["runId"], run.as_str());
    assert_eq!(
        update["event"]["files"].as_array().unwrap().len(),
        3,
        "{update}"
    );

    let changes = client
        .request("agent/runChanges", json!({"sessionId": session}))
        .await;
    assert_eq!(changes["runId"], run.as_str(), "{changes}");
    let files = &changes["files"];
    let open = by_name(files, "open.txt");
    assert_eq!(open["change"], "modified");
    assert!(open["diff"].as_str().unwrap().contains("+uno"), "{open}");
    assert_eq!(by_name(files, "closed.txt")["change"], "modified");
    assert_eq!(by_name(files, "made.txt")["change"], "created");
    assert!(
        files
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["userChanged"] == false),
        "{files}"
    );

    // The user changes a file after the agent: reported, and a revert leaves it alone.
    std::fs::write(root.join("closed.txt"), "user\n").unwrap();
    let changes = client
        .request(
            "agent/runChanges",
            json!({"sessionId": session, "runId": run}),
        )
        .await;
    assert_eq!(
        by_name(&changes["files"], "closed.txt")["userChanged"],
        true
    );
    let applies = requests_of(&client, "workspace/applyEdit").len();
    let reverted = client
        .request("agent/revert", json!({"sessionId": session, "runId": run}))
        .await;
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        2,
        "{reverted}"
    );
    assert_eq!(
        reverted["conflicts"].as_array().unwrap().len(),
        1,
        "{reverted}"
    );
    assert!(
        reverted["conflicts"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("closed.txt")
    );
    assert_eq!(
        client.buffer(&uri).1,
        "one\n",
        "the open buffer reverted by an editor edit"
    );
    assert_eq!(
        requests_of(&client, "workspace/applyEdit").len(),
        applies + 1
    );
    assert!(!root.join("made.txt").exists(), "the created file is gone");
    assert_eq!(
        std::fs::read_to_string(root.join("closed.txt")).unwrap(),
        "user\n"
    );

    let forced = client
        .request(
            "agent/revert",
            json!({"sessionId": session, "runId": run, "paths": ["closed.txt"], "force": true}),
        )
        .await;
    assert_eq!(forced["reverted"].as_array().unwrap().len(), 1, "{forced}");
    assert_eq!(
        std::fs::read_to_string(root.join("closed.txt")).unwrap(),
        "old\n"
    );
    let unknown = client
        .request_raw(
            "agent/runChanges",
            json!({"sessionId": session, "runId": "nope"}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// A created file the user opened is deleted through the editor on revert (a `DeleteFile`
/// operation), so its buffer closes too; a client that cannot delete files has it deleted on
/// disk, its buffer left as it is.
#[tokio::test]
async fn reverting_a_created_file_the_user_opened_closes_its_buffer_through_the_editor() {
    for deletes in [true, false] {
        let mut caps = LspClient::agent_caps(false);
        if deletes {
            caps["workspace"]["workspaceEdit"]["resourceOperations"] = json!(["create", "delete"]);
        }
        let (_mock, client) = agent_setup(
            vec![
                write_call("call_1", "made.txt", "agent\n"),
                MockResponse::text("done"),
            ],
            caps,
            json!({}),
        )
        .await;
        let root = client.workspace.path().to_path_buf();
        let (session, run, _) = prompt_in(&client, None, "make a file").await;
        let made = root.join("made.txt");
        let uri = client.did_open(&made, "agent\n").await;

        let reverted = client
            .request("agent/revert", json!({"sessionId": session, "runId": run}))
            .await;
        assert_eq!(
            reverted["reverted"].as_array().unwrap().len(),
            1,
            "{reverted}"
        );
        assert!(!made.exists(), "the created file is gone ({deletes})");
        let deletions: Vec<Value> = requests_of(&client, "workspace/applyEdit")
            .into_iter()
            .filter(|r| r["params"]["edit"]["documentChanges"][0]["kind"] == "delete")
            .collect();
        if deletes {
            assert_eq!(deletions.len(), 1, "one DeleteFile");
            let op = &deletions[0]["params"]["edit"]["documentChanges"][0];
            assert_eq!(op["uri"], uri.as_str(), "{op}");
            assert_eq!(op["options"]["ignoreIfNotExists"], true, "{op}");
            assert!(!client.has_buffer(&uri), "the editor closed the buffer");
        } else {
            assert!(deletions.is_empty(), "{deletions:?}");
            assert!(
                client.has_buffer(&uri),
                "the buffer is the editor's to close"
            );
        }
        // The daemon's mirror follows the editor: closed with the buffer, or still open.
        let mirror = client
            .request_raw("agent/getDocument", json!({"uri": uri}))
            .await;
        assert_eq!(mirror.get("error").is_some(), deletes, "{mirror}");
    }
}

/// Files no journaled tool wrote before: `bash` changes one and deletes another, both get
/// before-images before the command, are reviewed with diffs and restored byte for byte; a
/// file over the size limit is reported not revertible, with why.
#[tokio::test]
async fn files_bash_changes_or_deletes_untouched_before_are_reviewed_and_reverted() {
    let (_mock, client) = agent_setup(
        vec![
            bash_call(
                "call_1",
                "printf 'changed\\n' > kept.txt; rm gone.txt; printf more >> big.bin",
            ),
            MockResponse::text("done"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let root = client.workspace.path().to_path_buf();
    let kept = "kept\r\nno final newline";
    let gone = "gone\n\u{e9}t\u{e9}\n";
    let big = vec![b'x'; (1 << 20) + 1];
    std::fs::write(root.join("kept.txt"), kept).unwrap();
    std::fs::write(root.join("gone.txt"), gone).unwrap();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    let (session, run, _) = prompt_in(&client, None, "change things").await;
    assert_eq!(
        std::fs::read_to_string(root.join("kept.txt")).unwrap(),
        "changed\n"
    );
    assert!(!root.join("gone.txt").exists(), "the command ran");

    let changes = client
        .request("agent/runChanges", json!({"sessionId": session}))
        .await;
    assert_eq!(changes["runId"], run.as_str(), "{changes}");
    let files = &changes["files"];
    assert_eq!(files.as_array().unwrap().len(), 3, "{changes}");
    let modified = by_name(files, "kept.txt");
    assert_eq!(modified["change"], "modified", "{modified}");
    assert_eq!(modified["revertible"], true, "{modified}");
    let diff = modified["diff"].as_str().unwrap();
    assert!(
        diff.contains("-kept") && diff.contains("+changed"),
        "{diff}"
    );
    let deleted = by_name(files, "gone.txt");
    assert_eq!(deleted["change"], "deleted", "{deleted}");
    assert_eq!(deleted["revertible"], true, "{deleted}");
    assert!(
        deleted["diff"].as_str().unwrap().contains("-gone"),
        "{deleted}"
    );
    let large = by_name(files, "big.bin");
    assert_eq!(large["change"], "modified", "{large}");
    assert_eq!(large["revertible"], false, "{large}");
    assert!(
        large["reason"]
            .as_str()
            .unwrap()
            .contains("larger than 1 MiB"),
        "{large}"
    );

    let reverted = client
        .request("agent/revert", json!({"sessionId": session, "runId": run}))
        .await;
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        2,
        "{reverted}"
    );
    assert_eq!(
        std::fs::read(root.join("kept.txt")).unwrap(),
        kept.as_bytes()
    );
    assert_eq!(
        std::fs::read(root.join("gone.txt")).unwrap(),
        gone.as_bytes()
    );
    let skipped = reverted["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{reverted}");
    assert!(
        skipped[0]["path"].as_str().unwrap().ends_with("big.bin")
            && skipped[0]["reason"]
                .as_str()
                .unwrap()
                .contains("larger than 1 MiB"),
        "{reverted}"
    );
    assert_eq!(
        std::fs::metadata(root.join("big.bin")).unwrap().len(),
        big.len() as u64 + 4,
        "the large file is left as the command made it"
    );
}

#[tokio::test]
async fn a_checkpoint_two_prompts_back_reverts_both_runs_and_forks_there() {
    let (_mock, client) = agent_setup(
        vec![
            write_call("c1", "f.txt", "v1\n"),
            MockResponse::text("one"),
            write_call("c2", "f.txt", "v2\n"),
            MockResponse::text("two"),
            write_call("c3", "g.txt", "g\n"),
            MockResponse::text("three"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let root = client.workspace.path().to_path_buf();
    let (session, _, _) = prompt_in(&client, None, "first").await;
    let (_, _, second) = prompt_in(&client, Some(&session), "second").await;
    prompt_in(&client, Some(&session), "third").await;
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "v2\n");
    let reverted = client
        .request(
            "agent/revert",
            json!({"sessionId": session, "messageId": second, "fork": true}),
        )
        .await;
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        2,
        "{reverted}"
    );
    assert!(
        reverted["conflicts"].as_array().unwrap().is_empty(),
        "{reverted}"
    );
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "v1\n");
    assert!(!root.join("g.txt").exists());
    assert_eq!(reverted["fork"]["text"], "second", "{reverted}");
    let fork = reverted["fork"]["sessionId"].as_str().unwrap();
    let messages = client
        .request("agent/getMessages", json!({"sessionId": fork}))
        .await;
    let text = serde_json::to_string(&messages["messages"]).unwrap();
    assert!(
        text.contains(r#""text":"first""#) && !text.contains(r#""text":"second""#),
        "{text}"
    );
}

#[tokio::test]
async fn after_kill_9_during_a_write_and_a_bash_the_resumed_session_says_what_ran() {
    let calls = MockResponse {
        tool_calls: vec![
            MockToolCall {
                id: "w1".into(),
                name: "write".into(),
                arguments: json!({"path": "held.txt", "content": "agent\n"}),
                raw_arguments: None,
            },
            MockToolCall {
                id: "b1".into(),
                name: "bash".into(),
                arguments: json!({"command": "printf changed > kept.txt; rm gone.txt; printf x > made.txt; sleep 60"}),
                raw_arguments: None,
            },
        ],
        ..MockResponse::default()
    };
    let mock = MockProvider::start(MockScript {
        responses: vec![calls, MockResponse::text("after")],
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
    let root = first.workspace.path().to_path_buf();
    std::fs::write(root.join("held.txt"), "old\n").unwrap();
    std::fs::write(root.join("kept.txt"), "before\n").unwrap();
    std::fs::write(root.join("gone.txt"), "doomed\n").unwrap();
    let uri = first.did_open(&root.join("held.txt"), "old\n").await;
    // The write reaches the buffer, then waits for a save that never comes.
    first.set_save_documents(false);
    let r = first
        .request("agent/prompt", json!({"message": "go"}))
        .await;
    let session = r["sessionId"].as_str().unwrap().to_owned();
    first
        .wait_for("the write's save request", |m| {
            m["method"] == "agent/saveDocuments"
        })
        .await;
    for _ in 0..600 {
        if root.join("made.txt").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(root.join("made.txt").exists(), "the command ran");
    assert_eq!(first.buffer(&uri).1, "agent\n");
    let mut first = first;
    first.child.start_kill().unwrap();
    first.child.wait().await.unwrap();

    let (second, _) = resume_in_new_daemon(same_home(&first), &mock, &session).await;
    let messages = second
        .request("agent/getMessages", json!({"sessionId": session}))
        .await;
    let results: Vec<&Value> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 2, "{messages}");
    let of = |id: &str| *results.iter().find(|m| m["toolCallId"] == id).unwrap();
    let write = of("w1");
    assert_eq!(write["details"]["status"], "notRun", "{write}");
    assert!(
        write["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("held.txt"),
        "{write}"
    );
    let bash = of("b1");
    assert_eq!(bash["details"]["status"], "mayHaveHalfRun", "{bash}");
    assert_eq!(bash["isError"], true);
    // What the command did before the kill is known: the workspace from before it was in the
    // journal, and what differs from it now is its run's changes, reviewable and revertible.
    let said = bash["content"][0]["text"].as_str().unwrap();
    for named in [
        "kept.txt (modified)",
        "made.txt (created)",
        "gone.txt (deleted)",
    ] {
        assert!(said.contains(named), "{named}: {said}");
    }
    assert!(!said.contains("held.txt"), "{said}");
    let changes = second
        .request("agent/runChanges", json!({"sessionId": session}))
        .await;
    assert_eq!(changes["files"].as_array().unwrap().len(), 3, "{changes}");
    let reverted = second
        .request(
            "agent/revert",
            json!({"sessionId": session, "runId": changes["runId"], "paths": ["kept.txt", "made.txt", "gone.txt"]}),
        )
        .await;
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        3,
        "{reverted}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("kept.txt")).unwrap(),
        "before\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("gone.txt")).unwrap(),
        "doomed\n"
    );
    assert!(!root.join("made.txt").exists());

    // The model reads the statements with its next prompt.
    let r = second
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "continue"}),
        )
        .await;
    second
        .wait_settled(&session, r["runId"].as_str().unwrap())
        .await;
    let body = serde_json::to_string(&mock.requests().last().unwrap().body).unwrap();
    assert!(body.contains("stopped unexpectedly"), "{body}");
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}
