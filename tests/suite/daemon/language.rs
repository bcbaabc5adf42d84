//! Daemon tests: the editor's language servers as the `lsp_*` tools, through
//! `agent/languageRequest` answered by the scripted editor: positions in both encodings on an
//! unsaved buffer, results as text (grouped, sorted, bounded), the failures (no server, an
//! error, a timeout), which tools a client gets, and `lsp_rename` proposed, approved, blocked
//! and refused when stale.

use std::sync::{Arc, Mutex};

use super::*;

const ALL_FEATURES: [&str; 7] = [
    "textDocument/definition",
    "textDocument/references",
    "textDocument/hover",
    "textDocument/documentSymbol",
    "workspace/symbol",
    "textDocument/implementation",
    "textDocument/rename",
];

fn language_caps(utf8: bool, features: &[&str]) -> Value {
    let mut caps = LspClient::agent_caps(utf8);
    caps["experimental"]["agent"]["languageFeatures"] = json!(features);
    caps
}

fn call(id: &str, tool: &str, args: Value) -> MockResponse {
    MockResponse::tool_call(id, tool, args)
}

fn range(line: u32, from: u32, to: u32) -> Value {
    json!({"start": {"line": line, "character": from}, "end": {"line": line, "character": to}})
}

/// Answers `agent/languageRequest` with `answers` in order (each the whole result).
fn answer_in_order(client: &LspClient, answers: Vec<Value>) {
    let answers = Arc::new(Mutex::new(answers));
    client.set_responder(
        "agent/languageRequest",
        Box::new(move |_| Some(answers.lock().unwrap().remove(0))),
    );
}

fn typescript(result: Value) -> Value {
    json!({"servers": ["typescript"], "result": result})
}

/// A daemon whose model makes the one tool call `first`, then answers `done`.
async fn one_call(first: MockResponse, caps: Value) -> (MockProvider, LspClient) {
    agent_setup(vec![first, MockResponse::text("done")], caps, json!({})).await
}

/// The workspace root, with `files` (path under it, text) written to disk.
fn write_files(client: &LspClient, files: &[(&str, &str)]) -> std::path::PathBuf {
    let root = client.workspace.path().canonicalize().unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

/// The text of each tool result and whether it is an error.
fn results(events: &[Value]) -> Vec<(String, bool)> {
    tool_results(events)
}

/// Every text of `role: tool` messages the model was sent, in order.
fn tool_messages(mock: &MockProvider) -> Vec<String> {
    let last = mock.requests().last().unwrap().body.clone();
    (last["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The unsaved buffer of `src/a.ts`, differing from the disk, with non-ASCII characters before
/// `greet` on line 2.
const A_BUFFER: &str = "import { greet } from \"./b\";\nconst é = \"😀\"; greet();\nfunction greet() { return \"é\"; }\n";

async fn definition_on_an_unsaved_buffer(utf8: bool) {
    let (mock, client) = one_call(
        call(
            "c1",
            "lsp_definition",
            json!({"path": "src/a.ts", "line": 2, "symbol": "greet"}),
        ),
        language_caps(utf8, &ALL_FEATURES),
    )
    .await;
    let root = write_files(
        &client,
        &[
            ("src/a.ts", "// on disk\n"),
            ("src/b.ts", "export function greet() {}\n"),
        ],
    );
    let a = client.did_open(&root.join("src/a.ts"), "// typed\n").await;
    client.edit_buffer(&a, A_BUFFER).await;
    let b = path_uri(&root.join("src/b.ts"));
    let link = json!({"targetUri": b, "targetRange": range(0, 0, 26), "targetSelectionRange": range(0, 16, 21)});
    // Line 3 (0-based 2) `function greet`: `greet` at 9 in either encoding.
    let location = json!({"uri": a, "range": range(2, 9, 14)});
    answer_in_order(&client, vec![typescript(json!([location, link]))]);

    let (session, run, _) = prompt(&client, json!({"message": "where is greet?"})).await;
    let events = client.wait_settled(&session, &run).await;
    let asked = requests_of(&client, "agent/languageRequest");
    assert_eq!(asked.len(), 1);
    // `const é = "😀"; ` is 15 characters: 16 UTF-16 units (the emoji is two), 19 UTF-8 bytes.
    let character = if utf8 { 19 } else { 16 };
    assert_eq!(
        asked[0]["params"],
        json!({"sessionId": session, "runId": run, "toolCallId": "c1",
               "method": "textDocument/definition",
               "params": {"textDocument": {"uri": a}, "position": {"line": 1, "character": character}}})
    );
    let expected = "2 definitions in 2 files:\n\
                    src/a.ts:3:10: function greet() { return \"é\"; }\n\
                    src/b.ts:1:17: export function greet() {}";
    assert_eq!(results(&events), [(expected.to_owned(), false)]);
    assert_eq!(tool_messages(&mock), [expected]);
    let details = (events.iter())
        .find(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| e["event"]["result"]["details"].clone())
        .unwrap();
    assert_eq!(
        details["places"][0],
        json!({"path": "src/a.ts", "line": 3, "column": 10, "text": "function greet() { return \"é\"; }"})
    );
    assert!(
        requests_of(&client, "agent/beforeToolCall").is_empty(),
        "a lookup is read-only and not asked about"
    );
}

#[tokio::test]
async fn definition_by_symbol_on_an_unsaved_buffer_in_utf16() {
    definition_on_an_unsaved_buffer(false).await;
}

#[tokio::test]
async fn definition_by_symbol_on_an_unsaved_buffer_in_utf8() {
    definition_on_an_unsaved_buffer(true).await;
}

#[tokio::test]
async fn references_are_grouped_sorted_and_bounded() {
    let (_mock, client) = one_call(
        call(
            "r1",
            "lsp_references",
            json!({"path": "lib.ts", "line": 1, "column": 17}),
        ),
        language_caps(false, &ALL_FEATURES),
    )
    .await;
    let root = client.workspace.path().canonicalize().unwrap();
    let lines: String = (0..100).map(|i| format!("use_{i}(value);\n")).collect();
    std::fs::write(
        root.join("lib.ts"),
        format!("export function value() {{}}\n{lines}"),
    )
    .unwrap();
    std::fs::write(root.join("app.ts"), &lines).unwrap();
    let (lib, app) = (
        path_uri(&root.join("lib.ts")),
        path_uri(&root.join("app.ts")),
    );
    // 150 places, in no order, one of them twice (two servers answering the same).
    let mut found: Vec<Value> = Vec::new();
    for i in (0..75).rev() {
        found.push(json!({"uri": app, "range": range(i, 7, 12)}));
        found.push(json!({"uri": lib, "range": range(i + 1, 7, 12)}));
    }
    found.push(found[0].clone());
    answer_in_order(&client, vec![typescript(json!(found))]);
    let (session, run, _) = prompt(&client, json!({"message": "who uses value?"})).await;
    let events = client.wait_settled(&session, &run).await;
    let asked = &requests_of(&client, "agent/languageRequest")[0]["params"];
    assert_eq!(asked["method"], "textDocument/references");
    assert_eq!(
        asked["params"],
        json!({"textDocument": {"uri": lib}, "position": {"line": 0, "character": 16},
               "context": {"includeDeclaration": true}})
    );
    let (text, is_error) = &results(&events)[0];
    assert!(!is_error, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "150 references in 2 files:");
    assert_eq!(lines[1], "app.ts:1:8: use_0(value);");
    assert_eq!(lines[2], "app.ts:2:8: use_1(value);");
    assert_eq!(lines[75], "app.ts:75:8: use_74(value);");
    assert_eq!(lines[76], "lib.ts:2:8: use_0(value);");
    assert_eq!(lines.len(), 102, "100 places and the rest counted");
    assert_eq!(lines[101], "(50 more not shown)");
}

#[tokio::test]
async fn symbols_and_hover_read_as_text() {
    let responses = vec![
        call("w1", "lsp_workspace_symbols", json!({"query": "Greeter"})),
        call("d1", "lsp_document_symbols", json!({"path": "g.ts"})),
        call(
            "h1",
            "lsp_hover",
            json!({"path": "g.ts", "line": 2, "symbol": "hello"}),
        ),
        call(
            "i1",
            "lsp_implementations",
            json!({"path": "g.ts", "line": 1, "symbol": "Greeter"}),
        ),
        MockResponse::text("done"),
    ];
    let (_mock, client) =
        agent_setup(responses, language_caps(false, &ALL_FEATURES), json!({})).await;
    let root = write_files(&client, &[("g.ts", "class Greeter {\n  hello() {}\n}\n")]);
    let g = path_uri(&root.join("g.ts"));
    let info = |name: &str, kind: u32, line: u32, container: Option<&str>| {
        let mut s =
            json!({"name": name, "kind": kind, "location": {"uri": g, "range": range(line, 0, 5)}});
        if let Some(c) = container {
            s["containerName"] = json!(c);
        }
        s
    };
    let workspace = json!([info("hello", 6, 1, Some("Greeter")), info("Greeter", 5, 0, None),
        {"name": "GreeterFactory", "kind": 12, "location": {"uri": path_uri(&root.join("f.ts"))}}]);
    let nested = json!([{"name": "Greeter", "kind": 5, "range": range(0, 0, 1), "selectionRange": range(0, 6, 13),
        "children": [{"name": "hello", "kind": 6, "range": range(1, 2, 12), "selectionRange": range(1, 2, 7)}]}]);
    let hover = json!({"contents": {"kind": "markdown", "value": "```ts\n(method) Greeter.hello(): void\n```"}});
    answer_in_order(
        &client,
        vec![
            typescript(workspace),
            typescript(nested),
            typescript(hover),
            typescript(Value::Null),
        ],
    );
    let (session, run, _) = prompt(&client, json!({"message": "outline"})).await;
    let events = client.wait_settled(&session, &run).await;
    let texts: Vec<String> = results(&events).into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        texts,
        [
            "3 symbols matching \"Greeter\":\n\
             f.ts: function GreeterFactory\n\
             g.ts:1:1: class Greeter\n\
             g.ts:2:1: method hello in Greeter",
            "Symbols in g.ts:\nclass Greeter 1:7\n  method hello 2:3",
            "g.ts:2:3:\n```ts\n(method) Greeter.hello(): void\n```",
            "No implementation found at g.ts:1:7 (Greeter).",
        ]
    );
    let asked = requests_of(&client, "agent/languageRequest");
    assert_eq!(asked[0]["params"]["params"], json!({"query": "Greeter"}));
    assert_eq!(
        asked[1]["params"]["params"],
        json!({"textDocument": {"uri": g}})
    );
}

#[tokio::test]
async fn no_server_an_error_and_a_timeout_are_said_plainly() {
    let definition = || json!({"path": "a.ts", "line": 1, "symbol": "a"});
    let responses = vec![
        call("n1", "lsp_definition", definition()),
        call("e1", "lsp_definition", definition()),
        call("t1", "lsp_definition", definition()),
        MockResponse::text("done"),
    ];
    let options = json!({"languageTimeoutMs": 300});
    let (_mock, client) =
        agent_setup(responses, language_caps(false, &ALL_FEATURES), options).await;
    write_files(&client, &[("a.ts", "let a = 1;\n")]);
    let seen = Arc::new(Mutex::new(0));
    let count = seen.clone();
    client.set_responder(
        "agent/languageRequest",
        Box::new(move |_| {
            let mut n = count.lock().unwrap();
            *n += 1;
            match *n {
                1 => Some(json!({"servers": [], "result": null})),
                // The second is answered with an error below; the third never.
                _ => None,
            }
        }),
    );
    let (session, run, _) = prompt(&client, json!({"message": "look"})).await;
    let second = client
        .wait_for("the second request", |m| {
            m["method"] == "agent/languageRequest" && m["params"]["toolCallId"] == "e1"
        })
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": second["id"],
                      "error": {"code": -32603, "message": "tsserver crashed"}}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    let third = requests_of(&client, "agent/languageRequest")[2].clone();
    assert_eq!(third["params"]["toolCallId"], "t1");
    client
        .wait_for("$/cancelRequest", |m| {
            m["method"] == "$/cancelRequest" && m["params"]["id"] == third["id"]
        })
        .await;
    assert_eq!(
        results(&events),
        [
            (
                "No language server in the editor answers definitions for a.ts.".to_owned(),
                false
            ),
            (
                "The editor's language servers failed: tsserver crashed".to_owned(),
                true
            ),
            (
                "No answer from the editor's language servers within 300 ms.".to_owned(),
                true
            ),
        ]
    );
}

fn lsp_tools_offered(mock: &MockProvider) -> Vec<String> {
    (mock.requests()[0].body["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with("lsp_"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_session_gets_the_tools_of_the_listed_methods_only() {
    let caps = language_caps(
        false,
        &["textDocument/definition", "textDocument/formatting"],
    );
    let (mock, client) = agent_setup(vec![MockResponse::text("hi")], caps, json!({})).await;
    let (session, run, _) = prompt(&client, json!({"message": "hi"})).await;
    client.wait_settled(&session, &run).await;
    assert_eq!(lsp_tools_offered(&mock), ["lsp_definition"]);

    let caps = language_caps(false, &ALL_FEATURES);
    let (mock, client) = agent_setup(vec![MockResponse::text("hi")], caps, json!({})).await;
    let (session, run, _) = prompt(&client, json!({"message": "hi"})).await;
    client.wait_settled(&session, &run).await;
    assert_eq!(
        lsp_tools_offered(&mock),
        [
            "lsp_definition",
            "lsp_references",
            "lsp_hover",
            "lsp_document_symbols",
            "lsp_workspace_symbols",
            "lsp_implementations",
            "lsp_rename"
        ]
    );

    let (mock, client) = agent_setup(
        vec![MockResponse::text("hi")],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    let (session, run, _) = prompt(&client, json!({"message": "hi"})).await;
    client.wait_settled(&session, &run).await;
    assert!(lsp_tools_offered(&mock).is_empty());
}

#[tokio::test]
async fn an_explore_subagent_gets_the_lookups_but_not_the_rename() {
    let task = call(
        "t1",
        "task",
        json!({"description": "Find greet", "prompt": "Where is greet defined?", "agent": "explore"}),
    );
    let responses = vec![
        task,
        MockResponse::text("In a.ts."),
        MockResponse::text("done"),
    ];
    let mut caps = language_caps(false, &ALL_FEATURES);
    caps["experimental"]["agent"]["diagnostics"] = json!(true);
    let (mock, client) = agent_setup(responses, caps, json!({})).await;
    let (session, run, _) = prompt(&client, json!({"message": "where is greet?"})).await;
    client.wait_settled(&session, &run).await;
    let child = &mock.requests()[1].body;
    assert!(child.to_string().contains("exploration agent"), "{child}");
    let mut tools: Vec<String> = (child["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["function"]["name"].as_str())
        .map(str::to_owned)
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "diagnostics",
            "find",
            "grep",
            "ls",
            "lsp_definition",
            "lsp_document_symbols",
            "lsp_hover",
            "lsp_implementations",
            "lsp_references",
            "lsp_workspace_symbols",
            "read"
        ]
    );
}

#[tokio::test]
async fn bad_arguments_get_clear_errors_and_the_daemon_goes_on() {
    let at =
        |path: &str, line: u64, symbol: &str| json!({"path": path, "line": line, "symbol": symbol});
    let responses = vec![
        call("b1", "lsp_definition", at("a.ts", 1, "greet")),
        call("b2", "lsp_definition", at("a.ts", 90, "greet")),
        call("b3", "lsp_definition", at("../outside.ts", 1, "greet")),
        call("b4", "lsp_definition", json!({"path": "a.ts", "line": 1})),
        call("b5", "lsp_workspace_symbols", json!({"query": " "})),
        call(
            "b6",
            "lsp_definition",
            json!({"path": "a.ts", "line": "one", "symbol": "x"}),
        ),
        MockResponse::text("done"),
    ];
    let (_mock, client) =
        agent_setup(responses, language_caps(false, &ALL_FEATURES), json!({})).await;
    write_files(&client, &[("a.ts", "let greeting = 1;\nlet b = 2;\n")]);
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = results(&events);
    assert!(results.iter().all(|(_, is_error)| *is_error), "{results:?}");
    assert_eq!(
        results[0].0,
        "\"greet\" does not occur on line 1 of a.ts: let greeting = 1;"
    );
    assert_eq!(results[1].0, "line 90 is past the end of a.ts (2 lines)");
    assert!(results[2].0.contains("outside"), "{}", results[2].0);
    assert_eq!(
        results[3].0,
        "Give column or symbol: the name to ask about on line 1 of a.ts: let greeting = 1;"
    );
    assert_eq!(results[4].0, "query must not be empty");
    assert!(
        results[5].0.contains("line: expected number"),
        "{}",
        results[5].0
    );
    assert!(requests_of(&client, "agent/languageRequest").is_empty());
    // The daemon goes on.
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["isStreaming"], false);
}

/// Two files: `src/a.ts` open with unsaved text, `src/b.ts` only on disk; the servers' rename of
/// `greet` to `welcome` (versioned for the open buffer at `version`).
struct RenameSetup {
    mock: MockProvider,
    client: LspClient,
    root: std::path::PathBuf,
    a: String,
}

const A_RENAME: &str = "import { greet } from \"./b\";\nconst é = 1; greet();\n";
const B_RENAME: &str = "export function greet() {}\n";

async fn rename_setup(responses: Vec<MockResponse>, version: Option<i32>) -> RenameSetup {
    let (mock, client) =
        agent_setup(responses, language_caps(false, &ALL_FEATURES), json!({})).await;
    let root = write_files(
        &client,
        &[("src/a.ts", "// on disk\n"), ("src/b.ts", B_RENAME)],
    );
    let a = client.did_open(&root.join("src/a.ts"), "// typed\n").await;
    client.edit_buffer(&a, A_RENAME).await;
    let b = path_uri(&root.join("src/b.ts"));
    let edit =
        |line: u32, from: u32| json!({"range": range(line, from, from + 5), "newText": "welcome"});
    let rename = json!({"documentChanges": [
        {"textDocument": {"uri": a, "version": version}, "edits": [edit(0, 9), edit(1, 13)]},
        {"textDocument": {"uri": b, "version": null}, "edits": [edit(0, 16)]}]});
    let answer = typescript(rename);
    client.set_responder(
        "agent/languageRequest",
        Box::new(move |_| Some(answer.clone())),
    );
    RenameSetup {
        mock,
        client,
        root,
        a,
    }
}

impl RenameSetup {
    /// No edit was sent, and both files read as before.
    fn assert_nothing_changed(&self) {
        assert!(requests_of(&self.client, "workspace/applyEdit").is_empty());
        assert_eq!(self.client.buffer(&self.a).1, A_RENAME);
        let b = std::fs::read_to_string(self.root.join("src/b.ts")).unwrap();
        assert_eq!(b, B_RENAME);
    }
}

fn rename_call(id: &str, apply: bool) -> MockResponse {
    call(
        id,
        "lsp_rename",
        json!({"path": "src/a.ts", "line": 2, "symbol": "greet", "newName": "welcome", "apply": apply}),
    )
}

const PLACES: &str = "src/a.ts:1:10: import { welcome } from \"./b\";\n\
                      src/a.ts:2:14: const é = 1; welcome();\n\
                      src/b.ts:1:17: export function welcome() {}";

#[tokio::test]
async fn a_rename_without_apply_proposes_and_changes_nothing() {
    let s = rename_setup(
        vec![rename_call("p1", false), MockResponse::text("done")],
        Some(2),
    )
    .await;
    let (session, run, _) = prompt(&s.client, json!({"message": "rename"})).await;
    let events = s.client.wait_settled(&session, &run).await;
    assert_eq!(
        results(&events),
        [(
            format!(
                "Renaming greet to welcome would change 3 places in 2 files (not applied; call \
                 lsp_rename again with apply: true to apply):\n{PLACES}"
            ),
            false
        )]
    );
    let asked = &requests_of(&s.client, "agent/languageRequest")[0]["params"];
    assert_eq!(asked["method"], "textDocument/rename");
    assert_eq!(asked["params"]["newName"], "welcome");
    assert_eq!(
        asked["params"]["position"],
        json!({"line": 1, "character": 13})
    );
    assert!(
        requests_of(&s.client, "agent/beforeToolCall").is_empty(),
        "a proposal is a read"
    );
    s.assert_nothing_changed();
    assert!(s.mock.violations().is_empty(), "{:?}", s.mock.violations());
}

#[tokio::test]
async fn an_approved_rename_lands_through_the_edit_path_and_reverts() {
    let s = rename_setup(
        vec![rename_call("a1", true), MockResponse::text("done")],
        Some(2),
    )
    .await;
    let (session, run, _) = prompt(&s.client, json!({"message": "rename"})).await;
    let events = s.client.wait_settled(&session, &run).await;
    let (text, is_error) = results(&events).remove(0);
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(&format!(
            "Renamed greet to welcome: 3 places in 2 files.\n{PLACES}\n\n"
        )),
        "{text}"
    );
    // The buffer held the user's unsaved text, so the edit stays unsaved there (saveAfterEdit).
    assert!(
        text.contains("Note: the change is in the editor's buffer of src/a.ts but not saved"),
        "{text}"
    );
    let approvals = requests_of(&s.client, "agent/beforeToolCall");
    assert_eq!(approvals.len(), 1);
    let approval = &approvals[0]["params"];
    assert_eq!(approval["kind"], "edit");
    assert_eq!(approval["title"], "Rename greet to welcome in 2 files");
    let (a_abs, b_abs) = (s.root.join("src/a.ts"), s.root.join("src/b.ts"));
    let preview = &approval["preview"];
    assert_eq!(preview["type"], "diff");
    assert_eq!(preview["path"], a_abs.display().to_string());
    assert_eq!(
        preview["paths"],
        json!([a_abs.display().to_string(), b_abs.display().to_string()])
    );
    let diff = preview["diff"].as_str().unwrap();
    for needle in [
        "--- src/a.ts\n+++ src/a.ts\n",
        "-const é = 1; greet();",
        "+const é = 1; welcome();",
        "--- src/b.ts\n+++ src/b.ts\n",
        "+export function welcome() {}",
    ] {
        assert!(diff.contains(needle), "{needle} not in {diff}");
    }
    // The servers were asked once: the call applies what the approval showed.
    assert_eq!(requests_of(&s.client, "agent/languageRequest").len(), 1);
    let edits = requests_of(&s.client, "workspace/applyEdit");
    assert_eq!(edits.len(), 1, "the open buffer is edited by the editor");
    let renamed_a = A_RENAME.replace("greet", "welcome");
    assert_eq!(s.client.buffer(&s.a).1, renamed_a);
    assert_eq!(
        std::fs::read_to_string(&b_abs).unwrap(),
        "export function welcome() {}\n"
    );

    let changes = s
        .client
        .request(
            "agent/runChanges",
            json!({"sessionId": session, "runId": run}),
        )
        .await;
    let mut changed: Vec<&str> = (changes["files"].as_array().unwrap().iter())
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    changed.sort();
    let (a_shown, b_shown) = (a_abs.display().to_string(), b_abs.display().to_string());
    assert!(
        changed.iter().any(|p| p.ends_with("src/a.ts"))
            && changed.iter().any(|p| p.ends_with("src/b.ts")),
        "{changes} ({a_shown}, {b_shown})"
    );
    let reverted = s
        .client
        .request("agent/revert", json!({"sessionId": session, "runId": run}))
        .await;
    assert_eq!(
        reverted["reverted"].as_array().unwrap().len(),
        2,
        "{reverted}"
    );
    assert_eq!(s.client.buffer(&s.a).1, A_RENAME);
    assert_eq!(std::fs::read_to_string(&b_abs).unwrap(), B_RENAME);
}

#[tokio::test]
async fn a_blocked_rename_changes_nothing() {
    let s = rename_setup(
        vec![rename_call("k1", true), MockResponse::text("done")],
        Some(2),
    )
    .await;
    s.client.set_approvals(Box::new(|_| {
        Some(json!({"decision": "block", "reason": "not now"}))
    }));
    let (session, run, _) = prompt(&s.client, json!({"message": "rename"})).await;
    let events = s.client.wait_settled(&session, &run).await;
    let (text, is_error) = &results(&events)[0];
    assert!(*is_error && text.contains("not now"), "{text}");
    s.assert_nothing_changed();
}

#[tokio::test]
async fn a_rename_of_a_stale_version_is_refused_whole() {
    // The buffer is at version 2; the servers' edit names version 1.
    let s = rename_setup(
        vec![rename_call("s1", true), MockResponse::text("done")],
        Some(1),
    )
    .await;
    let (session, run, _) = prompt(&s.client, json!({"message": "rename"})).await;
    let events = s.client.wait_settled(&session, &run).await;
    let results = results(&events);
    assert_eq!(
        results[0],
        (
            "src/a.ts changed after the language servers computed the rename; nothing was \
             applied. Call lsp_rename again."
                .to_owned(),
            true
        )
    );
    s.assert_nothing_changed();
}

#[tokio::test]
async fn a_rename_allowed_by_policy_applies_and_later_edits_see_it() {
    let responses = vec![
        call("r1", "read", json!({"path": "src/b.ts"})),
        rename_call("a1", true),
        call(
            "e1",
            "edit",
            json!({"path": "src/b.ts", "edits": [{"oldText": "welcome()", "newText": "welcome(name: string)"}]}),
        ),
        MockResponse::text("done"),
    ];
    let (mock, client) = agent_setup(
        responses,
        language_caps(true, &ALL_FEATURES),
        json!({"approval": {"edit": "allow"}}),
    )
    .await;
    let root = write_files(&client, &[("src/a.ts", A_RENAME), ("src/b.ts", B_RENAME)]);
    let (a, b) = (
        path_uri(&root.join("src/a.ts")),
        path_uri(&root.join("src/b.ts")),
    );
    let edit =
        |line: u32, from: u32| json!({"range": range(line, from, from + 5), "newText": "welcome"});
    // `changes`, unversioned; UTF-8 columns (`é` is two bytes).
    let rename =
        json!({"changes": {a.clone(): [edit(0, 9), edit(1, 14)], b.clone(): [edit(0, 16)]}});
    answer_in_order(&client, vec![typescript(rename)]);
    let (session, run, _) = prompt(&client, json!({"message": "rename"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = results(&events);
    assert!(results.iter().all(|(_, is_error)| !is_error), "{results:?}");
    assert!(
        results[1]
            .0
            .starts_with("Renamed greet to welcome: 3 places in 2 files."),
        "{results:?}"
    );
    assert!(
        requests_of(&client, "agent/beforeToolCall").is_empty(),
        "the policy allows edits without asking"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/a.ts")).unwrap(),
        A_RENAME.replace("greet", "welcome")
    );
    // The edit after the rename checks the file against the rename's version, not the read's.
    assert_eq!(
        std::fs::read_to_string(root.join("src/b.ts")).unwrap(),
        "export function welcome(name: string) {}\n"
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

/// A rename the approval policy lets through unasked, under the permission rules `rules`: its
/// result, and whether the files stayed as they were.
async fn rename_under_rules(rules: Value) -> (String, bool) {
    let responses = vec![rename_call("p1", true), MockResponse::text("done")];
    let options = json!({"approval": {"edit": "allow"}, "permissions": rules});
    let (_mock, client) =
        agent_setup(responses, language_caps(false, &ALL_FEATURES), options).await;
    let root = write_files(&client, &[("src/a.ts", A_RENAME), ("src/b.ts", B_RENAME)]);
    let (a, b) = (
        path_uri(&root.join("src/a.ts")),
        path_uri(&root.join("src/b.ts")),
    );
    let edit =
        |line: u32, from: u32| json!({"range": range(line, from, from + 5), "newText": "welcome"});
    let rename = json!({"changes": {a: [edit(0, 9)], b: [edit(0, 16)]}});
    answer_in_order(&client, vec![typescript(rename)]);
    let (session, run, _) = prompt(&client, json!({"message": "rename"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (text, is_error) = results(&events).remove(0);
    assert!(is_error, "{text}");
    let unchanged = std::fs::read_to_string(root.join("src/a.ts")).unwrap() == A_RENAME
        && std::fs::read_to_string(root.join("src/b.ts")).unwrap() == B_RENAME
        && requests_of(&client, "workspace/applyEdit").is_empty();
    (text, unchanged)
}

#[tokio::test]
async fn permission_rules_on_a_renamed_file_hold() {
    // The gate sees `lsp_rename`, not its files: the rename itself checks each file as an edit.
    let (denied, unchanged) = rename_under_rules(json!({"deny": ["Edit(**/b.ts)"]})).await;
    assert!(unchanged, "{denied}");
    assert!(
        denied.starts_with("The rename was not applied: it would edit src/b.ts, and the permission rule `Edit(**/b.ts)`")
            && denied.ends_with("denies editing it."),
        "{denied}"
    );
    let (asks, unchanged) = rename_under_rules(json!({"ask": ["Edit(**/b.ts)"]})).await;
    assert!(unchanged, "{asks}");
    assert!(
        asks.ends_with("asks before editing it, and this rename was not asked about."),
        "{asks}"
    );
}

#[tokio::test]
async fn an_abort_withdraws_a_pending_request() {
    let (_mock, client) = one_call(
        call(
            "x1",
            "lsp_hover",
            json!({"path": "a.ts", "line": 1, "symbol": "a"}),
        ),
        language_caps(false, &ALL_FEATURES),
    )
    .await;
    write_files(&client, &[("a.ts", "let a = 1;\n")]);
    client.set_responder("agent/languageRequest", Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "hover"})).await;
    let asked = client
        .wait_for("the request", |m| m["method"] == "agent/languageRequest")
        .await;
    let aborted = client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    assert_eq!(aborted["aborted"], true);
    client
        .wait_for("$/cancelRequest", |m| {
            m["method"] == "$/cancelRequest" && m["params"]["id"] == asked["id"]
        })
        .await;
    let events = client.wait_settled(&session, &run).await;
    assert!(settled_aborted(&events, &run));
    // A late answer is ignored and the daemon goes on.
    client.reply(&asked["id"], typescript(Value::Null)).await;
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["isStreaming"], false);
}
