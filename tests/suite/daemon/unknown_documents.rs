//! A client that floods `didChange`s for a document it never opened: the daemon ignores them,
//! logs one warning per document (again only after the document was opened, so a later flood
//! is seen), and keeps answering requests.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdout, Command};

use super::coalesce::read_frame;
use crate::suite::support::lsp_client::{HANG_BOUND, LspClient, frame, path_uri};

const WARNING: &str = "didChange for a document that is not open";

fn did_change(uri: &str, version: i32) -> Vec<u8> {
    let zero = json!({"line": 0, "character": 0});
    let insert = json!({"range": {"start": zero, "end": zero}, "text": "x"});
    let params = json!({"textDocument": {"uri": uri, "version": version},
                        "contentChanges": [insert]});
    frame(&json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params}))
}

/// The response to request `id` (server requests and notifications before it are skipped).
async fn response(out: &mut BufReader<ChildStdout>, id: i64) -> Value {
    tokio::time::timeout(HANG_BOUND, async {
        loop {
            let msg = read_frame(out).await;
            if msg["id"] == id && msg.get("method").is_none() {
                return msg;
            }
        }
    })
    .await
    .expect("the daemon answers")
}

#[tokio::test]
async fn a_flood_of_changes_to_an_unknown_document_logs_one_warning() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-lsp"))
        .arg("--stdio")
        .current_dir(workspace.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("XDG_CACHE_HOME", home.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let stderr_lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let collected = stderr_lines.clone();
    let stderr_done = tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            collected.lock().unwrap().push(line);
        }
    });

    let root = path_uri(workspace.path());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": null, "rootUri": root, "capabilities": LspClient::agent_caps(false),
        "initializationOptions": {}, "workspaceFolders": [{"uri": root, "name": "ws"}]}});
    stdin.write_all(&frame(&init)).await.unwrap();
    response(&mut out, 1).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "initialized", "params": {}});
    stdin.write_all(&frame(&initialized)).await.unwrap();

    let ghost = path_uri(&workspace.path().join("ghost.txt"));
    let flood: Vec<u8> = (1..=5_000).flat_map(|v| did_change(&ghost, v)).collect();
    stdin.write_all(&flood).await.unwrap();
    let get = |id: i64| {
        let params = json!({"uri": ghost});
        frame(&json!({"jsonrpc": "2.0", "id": id, "method": "agent/getDocument", "params": params}))
    };
    stdin.write_all(&get(2)).await.unwrap();
    let reply = response(&mut out, 2).await;
    assert_eq!(reply["error"]["code"], -32602, "still not open: {reply}");

    // Opened and closed: a later flood is worth one warning again.
    let open = json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": ghost, "languageId": "plaintext", "version": 1, "text": "hi"}}});
    stdin.write_all(&frame(&open)).await.unwrap();
    stdin.write_all(&get(3)).await.unwrap();
    let reply = response(&mut out, 3).await;
    assert_eq!(reply["result"]["text"], "hi", "{reply}");
    let close = json!({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {
        "textDocument": {"uri": ghost}}});
    stdin.write_all(&frame(&close)).await.unwrap();
    let flood: Vec<u8> = (2..=1_000).flat_map(|v| did_change(&ghost, v)).collect();
    stdin.write_all(&flood).await.unwrap();
    stdin.write_all(&get(4)).await.unwrap();
    let reply = response(&mut out, 4).await;
    assert_eq!(reply["error"]["code"], -32602, "closed: {reply}");

    let shutdown = json!({"jsonrpc": "2.0", "id": 5, "method": "shutdown", "params": null});
    stdin.write_all(&frame(&shutdown)).await.unwrap();
    response(&mut out, 5).await;
    let exit = json!({"jsonrpc": "2.0", "method": "exit", "params": null});
    stdin.write_all(&frame(&exit)).await.unwrap();
    let status = tokio::time::timeout(HANG_BOUND, child.wait()).await;
    assert!(status.expect("the daemon exits").unwrap().success());
    tokio::time::timeout(HANG_BOUND, stderr_done)
        .await
        .expect("stderr closes")
        .unwrap();

    let lines = stderr_lines.lock().unwrap();
    let warnings: Vec<&String> = lines.iter().filter(|l| l.contains(WARNING)).collect();
    assert_eq!(
        warnings.len(),
        2,
        "one warning per flood (5,000 then 999 changes): {warnings:#?}"
    );
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("WARN") && w.contains(&ghost))
    );
}
