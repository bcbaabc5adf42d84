//! Daemon tests: `edit` on open buffers through the rope path (search in the rope, matched
//! ranges sent as `TextEdit`s, confirmation by version and fingerprint, region-only diffs),
//! each compared with the same call through the disk workspace, the reference behaviour.

use super::*;
use crate::suite::support::tool_harness::Harness;

/// What one `edit` call did through the daemon on an open buffer.
struct Through {
    text: String,
    is_error: bool,
    details: Value,
    /// The `TextEdit`s of every `workspace/applyEdit`.
    applies: Vec<Vec<Value>>,
    /// The approval preview's patch, if one was asked.
    preview: Option<Value>,
    buffer: String,
    disk: String,
}

async fn through_daemon(name: &str, text: &str, args: Value, utf8: bool) -> Through {
    let call = MockResponse::tool_call("call_1", "edit", args);
    let (_mock, client) = agent_setup(
        vec![call, MockResponse::text("done")],
        LspClient::agent_caps(utf8),
        json!({}),
    )
    .await;
    let path = client.workspace.path().join(name);
    std::fs::write(&path, text).unwrap();
    let uri = client.did_open(&path, text).await;
    let (session, run, _) = prompt(&client, json!({"message": "edit"})).await;
    let events = client.wait_settled(&session, &run).await;
    let end = events
        .iter()
        .find(|e| e["event"]["type"] == "tool_execution_end")
        .expect("tool ran");
    let applies = requests_of(&client, "workspace/applyEdit")
        .iter()
        .map(|a| {
            a["params"]["edit"]["documentChanges"][0]["edits"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    Through {
        text: end["event"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned(),
        is_error: end["event"]["isError"].as_bool().unwrap(),
        details: end["event"]["result"]["details"].clone(),
        applies,
        preview: requests_of(&client, "agent/beforeToolCall")
            .first()
            .map(|r| r["params"]["preview"]["diff"].clone()),
        buffer: client.buffer(&uri).1,
        disk: String::from_utf8(std::fs::read(&path).unwrap()).unwrap(),
    }
}

/// The same call through the disk workspace: (text, details or null, file after).
async fn through_disk(name: &str, text: &str, args: Value) -> (String, Value, String) {
    let h = Harness::new();
    h.put(name, text);
    let (out, details) = match h.call("edit", args).await {
        Ok(r) => (
            crate::suite::support::tool_harness::text(&r),
            r.details.unwrap_or(Value::Null),
        ),
        Err(e) => (e.to_string(), Value::Null),
    };
    (out, details, h.get_str(name))
}

async fn assert_same_as_disk(name: &str, text: &str, args: Value, utf8: bool) -> Through {
    let got = through_daemon(name, text, args.clone(), utf8).await;
    let (want_text, want_details, want_file) = through_disk(name, text, args).await;
    assert_eq!(got.text, want_text);
    assert!(!got.is_error, "{}", got.text);
    assert_eq!(
        got.details, want_details,
        "details equal the whole-text path's"
    );
    assert_eq!(
        got.preview.as_ref(),
        Some(&want_details["patch"]),
        "the approval preview is the same patch"
    );
    assert_eq!(
        got.buffer, want_file,
        "the buffer equals the disk path's file"
    );
    assert_eq!(got.disk, want_file, "saved");
    got
}

fn lines(n: usize, eol: &str) -> String {
    (0..n)
        .map(|i| format!("fn line_{i:05}() -> u32 {{ {i} }}{eol}"))
        .collect()
}

#[tokio::test]
async fn multi_edit_call_sends_one_text_edit_per_replacement() {
    let text = lines(3000, "\n");
    let args = json!({"path": "m.rs", "edits": [
        {"oldText": "fn line_02500() -> u32 { 2500 }", "newText": "fn line_02500() -> u64 {\n    2500\n}"},
        {"oldText": "line_00010()", "newText": "renamed()"},
    ]});
    let got = assert_same_as_disk("m.rs", &text, args, true).await;
    assert_eq!(got.applies.len(), 1);
    let edits = &got.applies[0];
    assert_eq!(edits.len(), 2, "one TextEdit per replacement: {edits:?}");
    // Each trimmed to its differing middle, in the document's original coordinates.
    assert_eq!(
        edits[0]["range"],
        json!({"start": {"line": 10, "character": 3}, "end": {"line": 10, "character": 13}})
    );
    assert_eq!(edits[0]["newText"], "renamed");
    assert_eq!(edits[1]["range"]["start"]["line"], 2500);
    assert_eq!(got.details["firstChangedLine"], 11);
}

#[tokio::test]
async fn a_match_spanning_many_rope_chunks_in_a_crlf_document() {
    let text = lines(4000, "\r\n");
    // ~3 KB of consecutive lines: longer than a rope chunk, so it spans several.
    let old: String = (1000..1100)
        .map(|i| format!("fn line_{i:05}() -> u32 {{ {i} }}\n"))
        .collect();
    let args = json!({"path": "c.rs", "edits": [{"oldText": old, "newText": "// gone\n"}]});
    let got = assert_same_as_disk("c.rs", &text, args, false).await;
    assert!(got.buffer.contains("{ 999 }\r\n// gone\r\nfn line_01100()"));
    assert!(!got.buffer.replace("\r\n", "").contains('\n'), "CRLF kept");
    assert_eq!(got.applies[0].len(), 1);
}

#[tokio::test]
async fn bom_is_kept_and_not_shown_in_the_diff() {
    let text = format!("\u{FEFF}first line\n{}", lines(50, "\n"));
    let args =
        json!({"path": "b.txt", "edits": [{"oldText": "first line", "newText": "1st line"}]});
    let got = assert_same_as_disk("b.txt", &text, args, false).await;
    assert!(got.buffer.starts_with("\u{FEFF}1st line\n"));
    assert!(!got.details["diff"].as_str().unwrap().contains('\u{FEFF}'));
}

#[tokio::test]
async fn utf16_positions_count_astral_chars_as_two_units() {
    let text = format!(
        "{}😀😀 say(\"hi\") 😀\n{}",
        lines(20, "\n"),
        lines(20, "\n")
    );
    let args =
        json!({"path": "u.txt", "edits": [{"oldText": "say(\"hi\")", "newText": "say(\"bye\")"}]});
    let got = assert_same_as_disk("u.txt", &text, args.clone(), false).await;
    // "😀😀 say(\"" is 2 + 2 + 1 + 5 UTF-16 units before the differing "hi".
    assert_eq!(
        got.applies[0][0]["range"],
        json!({"start": {"line": 20, "character": 10}, "end": {"line": 20, "character": 12}})
    );
    let got = assert_same_as_disk("u.txt", &text, args, true).await;
    assert_eq!(
        got.applies[0][0]["range"]["start"],
        json!({"line": 20, "character": 14}),
        "UTF-8 bytes"
    );
}

#[tokio::test]
async fn duplicates_and_fuzzy_matches_keep_pis_rules() {
    let text = format!("{}dup\nx\ndup\n", lines(100, "\n"));
    let args = json!({"path": "d.txt", "edits": [{"oldText": "dup", "newText": "one"}]});
    let got = through_daemon("d.txt", &text, args.clone(), false).await;
    let (want, _, _) = through_disk("d.txt", &text, args).await;
    assert!(got.is_error);
    assert_eq!(got.text, want);
    assert!(got.text.starts_with("Found 2 occurrences"), "{}", got.text);
    assert!(got.applies.is_empty());
    assert_eq!(got.buffer, text);
    // A document the fuzzy rules would change (trailing spaces, smart quotes) takes the
    // whole-text path and gives the same result.
    let text = format!("{}say(\u{201C}hi\u{201D})   \nend\n", lines(30, "\n"));
    let args =
        json!({"path": "f.txt", "edits": [{"oldText": "say(\"hi\")", "newText": "say(\"bye\")"}]});
    let got = assert_same_as_disk("f.txt", &text, args, false).await;
    assert!(got.buffer.contains("say(\"bye\")   \nend"));
}

#[tokio::test]
async fn a_buffer_changed_since_the_agent_read_it_is_a_conflict() {
    let read = MockResponse::tool_call("call_1", "read", json!({"path": "s.txt"}));
    let edit = MockResponse::tool_call(
        "call_2",
        "edit",
        json!({"path": "s.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}),
    );
    let (_mock, client) = agent_setup(
        vec![read, edit, MockResponse::text("done")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    // Hold the edit's approval: the user types while it is pending, after the read.
    client.set_approvals(Box::new(|_| None));
    let path = client.workspace.path().join("s.txt");
    let text = format!("alpha\nbeta\n{}", lines(100, "\n"));
    std::fs::write(&path, &text).unwrap();
    let uri = client.did_open(&path, &text).await;
    let (session, run, _) = prompt(&client, json!({"message": "edit"})).await;
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    let typed = text.replace("alpha", "alpha typed");
    client.edit_buffer(&uri, &typed).await;
    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 2);
    assert!(results[1].1, "{:?}", results[1]);
    assert!(
        results[1]
            .0
            .starts_with("File s.txt has been modified since you last read it"),
        "{}",
        results[1].0
    );
    assert!(requests_of(&client, "workspace/applyEdit").is_empty());
    assert_eq!(client.buffer(&uri).1, typed);
}
