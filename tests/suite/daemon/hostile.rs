//! Daemon tests: input from a hostile or broken client. Each of these was a defect of the
//! framework-based daemon (issue 13 §4); each is checked through the real binary.

use super::*;

/// The `-32700` errors the daemon sent so far (answers to input that was not a message).
fn parse_errors(client: &LspClient) -> usize {
    client
        .log()
        .iter()
        .filter(|m| m["error"]["code"] == -32700)
        .count()
}

async fn initialized() -> LspClient {
    let client = spawn_plain().await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    client
}

#[tokio::test]
async fn a_request_to_an_unknown_dollar_method_is_method_not_found() {
    let client = initialized().await;
    let unknown = client.request_raw("$/unknownThing", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    // Only `$/` notifications are ignored silently.
    client.notify("$/unknownThing", json!({})).await;
    let path = client.workspace.path().join("a.txt");
    let uri = client.did_open(&path, "still here").await;
    let doc = client
        .request("agent/getDocument", json!({"uri": uri}))
        .await;
    assert_eq!(doc["text"], "still here");
}

/// 16 MB without a single header: skipped in one pass and reported once, and the request
/// after it is answered (the framework's reader rescanned from the start on every read).
#[tokio::test]
async fn megabytes_of_garbage_are_skipped_and_reported_once() {
    let client = initialized().await;
    // Blank lines and header-like text included: nothing here is a Content-Length header.
    let pattern = b"garbage: {\"a\":1}\r\n\r\n";
    let garbage: Vec<u8> = pattern.iter().copied().cycle().take(16 << 20).collect();
    client.send_raw(&garbage).await;
    let path = client.workspace.path().join("b.txt");
    let uri = client.did_open(&path, "after the garbage").await;
    let doc = client
        .request("agent/getDocument", json!({"uri": uri}))
        .await;
    assert_eq!(doc["text"], "after the garbage");
    assert_eq!(parse_errors(&client), 1, "one error for one run of garbage");
}

/// A frame whose Content-Length is shorter than its body: the rest of the body is garbage,
/// and the valid request after it still gets its answer.
#[tokio::test]
async fn a_short_content_length_does_not_swallow_the_next_request() {
    let client = initialized().await;
    let body = json!({"jsonrpc": "2.0", "id": 999_999, "method": "agent/getState",
                      "params": {"sessionId": "x"}})
    .to_string();
    let short = format!("Content-Length: {}\r\n\r\n{body}", body.len() / 2);
    client.send_raw(short.as_bytes()).await;
    let unknown = client
        .request_raw("agent/getState", json!({"sessionId": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "answered: {unknown}");
    assert!(parse_errors(&client) >= 1, "the broken frame was reported");
    assert!(
        client.log().iter().all(|m| m["id"] != 999_999),
        "the broken frame was not run"
    );
}

/// `agent/diagnostics` without its `diagnostics` field is malformed: logged and ignored, and
/// the stored list stays as it was (it used to be wiped by a default).
#[tokio::test]
async fn diagnostics_without_their_list_are_ignored_not_a_wipe() {
    let mut caps = LspClient::agent_caps(false);
    caps["experimental"]["agent"]["diagnostics"] = json!(true);
    let (_mock, client) = agent_setup(
        vec![
            MockResponse::tool_call("d1", "diagnostics", json!({})),
            MockResponse::text("seen"),
        ],
        caps,
        json!({}),
    )
    .await;
    let root = client.workspace.path().to_path_buf();
    std::fs::write(root.join("a.rs"), "fn main() {}\n").unwrap();
    let uri = path_uri(&root.join("a.rs"));
    let one = json!([{"range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 7}},
                      "severity": 2, "message": "kept"}]);
    client
        .notify("agent/diagnostics", json!({"uri": uri, "diagnostics": one}))
        .await;
    client
        .notify("agent/diagnostics", json!({"uri": uri}))
        .await;
    let (session, run, _) = prompt(&client, json!({"message": "check"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(
        tool_results(&events)[0],
        ("a.rs:1:4: warning: kept".to_owned(), false)
    );
}
