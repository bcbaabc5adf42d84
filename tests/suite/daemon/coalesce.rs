//! Back-pressure coalescing of `$/agentEvent` deltas: a client that stops reading while a long
//! answer streams later receives fewer, larger `text_delta` events whose concatenation is the
//! exact answer, with `seq` still gap-free.

use std::process::Stdio;
use std::time::Duration;

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdout, Command};

use crate::suite::support::lsp_client::{HANG_BOUND, LspClient, frame, path_uri};

const DELTAS: usize = 20_000;

/// One framed message from the daemon.
pub(super) async fn read_frame(reader: &mut BufReader<ChildStdout>) -> Value {
    let mut len = 0;
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).await.unwrap() > 0, "eof");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = v.parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn a_slow_client_gets_merged_deltas_with_exact_text_and_gap_free_seq() {
    let text: String = (0..DELTAS).map(|i| format!("{:04}", i % 10_000)).collect();
    let mut answer = MockResponse::text(text.clone());
    answer.chunk_size = Some(4);
    let mock = MockProvider::start(MockScript {
        responses: vec![answer],
    })
    .await
    .unwrap();
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
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .env("OPENAI_API_KEY", "test-key")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let root = path_uri(workspace.path());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": null, "rootUri": root, "capabilities": LspClient::agent_caps(false),
        "initializationOptions": {}, "workspaceFolders": [{"uri": root, "name": "ws"}]}});
    stdin.write_all(&frame(&init)).await.unwrap();
    while read_frame(&mut out).await["id"] != 1 {}
    let initialized = json!({"jsonrpc": "2.0", "method": "initialized", "params": {}});
    stdin.write_all(&frame(&initialized)).await.unwrap();
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "agent/prompt",
                        "params": {"message": "Count."}});
    stdin.write_all(&frame(&prompt)).await.unwrap();

    // Not reading: the pipe fills and the daemon's event writer falls behind the stream.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let (mut streamed, mut delta_events, mut seqs) = (String::new(), 0, Vec::new());
    tokio::time::timeout(HANG_BOUND, async {
        loop {
            let msg = read_frame(&mut out).await;
            if msg.get("id").is_some() && msg.get("method").is_some() {
                let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": null});
                stdin.write_all(&frame(&reply)).await.unwrap();
            }
            if msg["method"] != "$/agentEvent" {
                continue;
            }
            let params = &msg["params"];
            seqs.push(params["seq"].as_u64().unwrap());
            let event = &params["event"];
            if event["assistantMessageEvent"]["type"] == "text_delta" {
                streamed.push_str(event["assistantMessageEvent"]["delta"].as_str().unwrap());
                delta_events += 1;
            }
            if event["type"] == "agent_settled" {
                break;
            }
        }
    })
    .await
    .expect("the run settles");

    assert!(
        streamed == text,
        "the merged deltas rebuild the answer exactly"
    );
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "seq gap-free"
    );
    assert!(
        delta_events < DELTAS,
        "a client that fell behind gets merged deltas ({delta_events} events for {DELTAS} deltas)"
    );
    assert!(delta_events > 0);
}
