//! A test client that drives the real `agent-lsp` binary over stdio the way an editor does.
//!
//! It frames JSON-RPC with Content-Length, records every message it receives (in arrival order)
//! and answers the server's requests like an editor: `workspace/applyEdit` is applied to its own
//! copy of the buffer and followed by `didChange` (or refused / lied about, per [`ApplyMode`]),
//! `agent/saveDocuments` writes the buffer to disk, and `agent/beforeToolCall` (or any other
//! request, `set_responder`) is answered by a scriptable closure (or held for the test to answer).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Notify, oneshot};

/// How long a test waits for something that must happen before it calls the daemon hung. It
/// only bounds a hang: on a loaded 2-core CI machine a 40-turn run can take well over 20 s.
pub const HANG_BOUND: Duration = Duration::from_secs(90);

/// How the client reacts to `workspace/applyEdit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyMode {
    /// Apply, answer `applied: true`, send `didChange`.
    Apply,
    /// Answer `applied: false` (as VS Code does on a version mismatch).
    Refuse,
    /// Answer `applied: true` without applying (as Neovim does after skipping a stale edit).
    Lie,
    /// The user types a line at the top first (a `didChange`), so the edit's version is stale
    /// and refused; then back to `Apply`.
    UserTypesFirst,
    /// Apply and answer `applied: true`, then the user types `// typed` at the end of the
    /// buffer (a second `didChange`), so the mirror never equals the edited text.
    ApplyThenUserTypes,
}

/// Decides the answer to a server request; `None` holds it for the test (`held_requests`).
pub type Responder = Box<dyn FnMut(&Value) -> Option<Value> + Send>;

struct State {
    log: Vec<Value>,
    pending: HashMap<i64, oneshot::Sender<Value>>,
    buffers: HashMap<String, (i32, String)>,
    apply_mode: ApplyMode,
    approvals: Responder,
    save_documents: bool,
    other: HashMap<String, Value>,
    /// Scripted answers to other server requests, by method (over `other`).
    responders: HashMap<String, Responder>,
    /// The negotiated position encoding (`utf-16` until `initialize` answers).
    utf8: bool,
}

/// A running daemon plus its scripted editor.
pub struct LspClient {
    pub child: Child,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
    next_id: Mutex<i64>,
    pub home: tempfile::TempDir,
    pub workspace: tempfile::TempDir,
}

/// Options for spawning the daemon.
pub struct Spawn {
    pub provider_url: Option<String>,
    pub env: Vec<(String, String)>,
}

impl LspClient {
    /// Spawns the real binary with HOME/XDG dirs in a temp dir and the given provider URL.
    pub async fn spawn(opts: Spawn) -> LspClient {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-lsp"));
        super::seal(&mut cmd, home.path());
        cmd.arg("--stdio")
            .current_dir(workspace.path())
            .env("XDG_STATE_HOME", home.path().join("state"))
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("RUST_LOG", "agent_lsp=debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(url) = &opts.provider_url {
            cmd.env("OPENAI_BASE_URL", url)
                .env("OPENAI_API_KEY", "test-key");
        }
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take()));
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[daemon] {line}");
            }
        });
        let state = Arc::new(Mutex::new(State {
            log: Vec::new(),
            pending: HashMap::new(),
            buffers: HashMap::new(),
            apply_mode: ApplyMode::Apply,
            approvals: Box::new(|_| Some(json!({"decision": "allow"}))),
            save_documents: true,
            other: HashMap::new(),
            responders: HashMap::new(),
            utf8: false,
        }));
        let changed = Arc::new(Notify::new());
        tokio::spawn(read_loop(
            stdout,
            stdin.clone(),
            state.clone(),
            changed.clone(),
        ));
        LspClient {
            child,
            stdin,
            state,
            changed,
            next_id: Mutex::new(1),
            home,
            workspace,
        }
    }

    /// Writes raw bytes to the daemon's stdin.
    pub async fn send_raw(&self, bytes: &[u8]) {
        let mut stdin = self.stdin.lock().await;
        let stdin = stdin.as_mut().expect("stdin was closed");
        stdin.write_all(bytes).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Closes the daemon's stdin, as an editor that dies does.
    pub async fn close_stdin(&self) {
        self.stdin.lock().await.take();
    }

    pub async fn send(&self, msg: &Value) {
        self.send_raw(&frame(msg)).await;
    }

    pub async fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc":"2.0","method":method,"params":params}))
            .await;
    }

    /// Sends a request and returns its id and a receiver for the whole response message.
    pub async fn request_start(
        &self,
        method: &str,
        params: Value,
    ) -> (i64, oneshot::Receiver<Value>) {
        let id = {
            let mut n = self.next_id.lock().unwrap();
            *n += 1;
            *n
        };
        let (tx, rx) = oneshot::channel();
        self.state.lock().unwrap().pending.insert(id, tx);
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        (id, rx)
    }

    /// Sends a request and awaits the whole response message (`result` or `error`).
    pub async fn request_raw(&self, method: &str, params: Value) -> Value {
        let (_, rx) = self.request_start(method, params).await;
        tokio::time::timeout(HANG_BOUND, rx)
            .await
            .unwrap_or_else(|_| panic!("no response to {method}"))
            .unwrap()
    }

    /// Sends a request and returns its `result`, panicking on an error response.
    pub async fn request(&self, method: &str, params: Value) -> Value {
        let resp = self.request_raw(method, params).await;
        assert!(resp.get("error").is_none(), "{method} failed: {resp}");
        resp["result"].clone()
    }

    /// `initialize` + `initialized` with the given capabilities and options.
    pub async fn initialize(&self, capabilities: Value, options: Value) -> Value {
        let root = path_uri(self.workspace.path());
        let result = self
            .request(
                "initialize",
                json!({"processId": null, "rootUri": root, "capabilities": capabilities,
                       "initializationOptions": options,
                       "workspaceFolders": [{"uri": root, "name": "ws"}]}),
            )
            .await;
        self.state.lock().unwrap().utf8 = result["capabilities"]["positionEncoding"] == "utf-8";
        self.notify("initialized", json!({})).await;
        result
    }

    /// Capabilities of an agent-aware editor (VS Code-like, UTF-16 unless `utf8`).
    pub fn agent_caps(utf8: bool) -> Value {
        let encodings = if utf8 {
            json!(["utf-8", "utf-16"])
        } else {
            json!(["utf-16"])
        };
        json!({"general": {"positionEncodings": encodings},
               "workspace": {"workspaceEdit": {"documentChanges": true}},
               "experimental": {"agent": {"events": true, "approvals": true, "saveDocuments": true}}})
    }

    pub async fn did_open(&self, path: &Path, text: &str) -> String {
        let uri = path_uri(path);
        self.state
            .lock()
            .unwrap()
            .buffers
            .insert(uri.clone(), (1, text.to_owned()));
        self.notify("textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "plaintext", "version": 1, "text": text}}))
            .await;
        uri
    }

    /// Replaces the client's buffer text (full sync) and tells the server.
    pub async fn edit_buffer(&self, uri: &str, text: &str) {
        let version = {
            let mut st = self.state.lock().unwrap();
            let buf = st.buffers.get_mut(uri).unwrap();
            buf.0 += 1;
            buf.1 = text.to_owned();
            buf.0
        };
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}]}),
        )
        .await;
    }

    pub fn buffer(&self, uri: &str) -> (i32, String) {
        self.state.lock().unwrap().buffers[uri].clone()
    }

    /// Whether the editor has `uri` open.
    pub fn has_buffer(&self, uri: &str) -> bool {
        self.state.lock().unwrap().buffers.contains_key(uri)
    }

    pub fn set_apply_mode(&self, mode: ApplyMode) {
        self.state.lock().unwrap().apply_mode = mode;
    }

    pub fn set_save_documents(&self, on: bool) {
        self.state.lock().unwrap().save_documents = on;
    }

    pub fn set_approvals(&self, responder: Responder) {
        self.state.lock().unwrap().approvals = responder;
    }

    /// Answers for other server requests by method (e.g. `window/showMessageRequest`).
    pub fn set_reply(&self, method: &str, result: Value) {
        self.state
            .lock()
            .unwrap()
            .other
            .insert(method.to_owned(), result);
    }

    /// Answers a server request of `method` by a closure of its params (`None`: held).
    pub fn set_responder(&self, method: &str, responder: Responder) {
        let mut st = self.state.lock().unwrap();
        st.responders.insert(method.to_owned(), responder);
    }

    /// Answers a held server request.
    pub async fn reply(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"result":result}))
            .await;
    }

    /// Every message received so far, in arrival order.
    pub fn log(&self) -> Vec<Value> {
        self.state.lock().unwrap().log.clone()
    }

    /// Waits until some received message satisfies `pred`; returns it.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + HANG_BOUND;
        loop {
            let notified = self.changed.notified();
            if let Some(found) = self.log().into_iter().find(|m| pred(m)) {
                return found;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("timed out waiting for {what}; log: {:#?}", self.log());
            }
        }
    }

    /// `$/agentEvent` params received so far for `session`.
    pub fn events(&self, session: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|m| m["method"] == "$/agentEvent" && m["params"]["sessionId"] == session)
            .map(|m| m["params"].clone())
            .collect()
    }

    /// Waits for the `agent_settled` event of `run`; returns all events of the session.
    pub async fn wait_settled(&self, session: &str, run: &str) -> Vec<Value> {
        self.wait_for("agent_settled", |m| {
            m["method"] == "$/agentEvent"
                && m["params"]["runId"] == run
                && m["params"]["event"]["type"] == "agent_settled"
        })
        .await;
        self.events(session)
    }

    pub async fn shutdown_exit(mut self) -> std::process::ExitStatus {
        self.request("shutdown", Value::Null).await;
        self.notify("exit", Value::Null).await;
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .unwrap()
            .unwrap()
    }
}

pub fn path_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

pub fn uri_path(uri: &str) -> PathBuf {
    PathBuf::from(uri.trim_start_matches("file://"))
}

pub fn frame(msg: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(msg).unwrap();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body);
    out
}

async fn read_frame(reader: &mut BufReader<ChildStdout>) -> Option<Value> {
    let mut len = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            len = v.trim().parse().ok();
        }
    }
    let mut body = vec![0; len?];
    reader.read_exact(&mut body).await.ok()?;
    Some(serde_json::from_slice(&body).expect("server wrote invalid JSON"))
}

async fn read_loop(
    stdout: ChildStdout,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
) {
    let mut reader = BufReader::new(stdout);
    while let Some(msg) = read_frame(&mut reader).await {
        let outgoing = {
            let mut st = state.lock().unwrap();
            st.log.push(msg.clone());
            handle(&mut st, &msg)
        };
        for out in outgoing {
            let mut w = stdin.lock().await;
            if let Some(w) = w.as_mut() {
                let _ = w.write_all(&frame(&out)).await;
                let _ = w.flush().await;
            }
        }
        changed.notify_waiters();
    }
    changed.notify_waiters();
}

/// Routes one message; returns the messages the editor sends in reaction.
fn handle(st: &mut State, msg: &Value) -> Vec<Value> {
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str);
    match (id, method) {
        (Some(id), None) => {
            if let Some(tx) = id.as_i64().and_then(|id| st.pending.remove(&id)) {
                let _ = tx.send(msg.clone());
            }
            vec![]
        }
        (Some(id), Some(method)) => server_request(st, &id, method, &msg["params"]),
        _ => vec![],
    }
}

fn reply(id: &Value, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":result})
}

fn server_request(st: &mut State, id: &Value, method: &str, params: &Value) -> Vec<Value> {
    match method {
        "agent/beforeToolCall" => (st.approvals)(params)
            .map(|r| vec![reply(id, r)])
            .unwrap_or_default(),
        "workspace/applyEdit" => apply_edit(st, id, params),
        "agent/saveDocuments" if st.save_documents => {
            let uris: Vec<String> = serde_json::from_value(params["uris"].clone()).unwrap();
            for uri in &uris {
                std::fs::write(uri_path(uri), &st.buffers[uri].1).unwrap();
            }
            vec![reply(id, json!({"saved": uris}))]
        }
        "window/workDoneProgress/create" => vec![reply(id, Value::Null)],
        "window/showDocument" => vec![reply(id, json!({"success": true}))],
        other => match (st.responders.get_mut(other), st.other.get(other)) {
            (Some(responder), _) => responder(params)
                .map(|r| vec![reply(id, r)])
                .unwrap_or_default(),
            (None, Some(result)) => vec![reply(id, result.clone())],
            (None, None) => vec![],
        },
    }
}

fn apply_edit(st: &mut State, id: &Value, params: &Value) -> Vec<Value> {
    let mut typed = Vec::new();
    if st.apply_mode == ApplyMode::UserTypesFirst {
        st.apply_mode = ApplyMode::Apply;
        for (uri, buf) in st.buffers.iter_mut() {
            buf.0 += 1;
            buf.1.insert_str(0, "// user\n");
            typed.push(
                json!({"jsonrpc":"2.0","method":"textDocument/didChange","params":{
                "textDocument": {"uri": uri, "version": buf.0},
                "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                    "end": {"line": 0, "character": 0}}, "text": "// user\n"}]}}),
            );
        }
    }
    let mut out = apply_edit_now(st, id, params);
    typed.append(&mut out);
    if st.apply_mode == ApplyMode::ApplyThenUserTypes {
        for (uri, buf) in st.buffers.iter_mut() {
            let line = buf.1.matches('\n').count();
            let character = buf
                .1
                .rsplit('\n')
                .next()
                .map_or(0, |l| l.encode_utf16().count());
            buf.0 += 1;
            buf.1.push_str("// typed");
            typed.push(
                json!({"jsonrpc":"2.0","method":"textDocument/didChange","params":{
                "textDocument": {"uri": uri, "version": buf.0},
                "contentChanges": [{"range": {"start": {"line": line, "character": character},
                    "end": {"line": line, "character": character}}, "text": "// typed"}]}}),
            );
        }
        // The answer last: the daemon sees the keystroke before it learns the edit applied,
        // so its mirror never equals the edited text (the race made deterministic).
        if let Some(at) = typed.iter().position(|m| m.get("result").is_some()) {
            let answer = typed.remove(at);
            typed.push(answer);
        }
    }
    typed
}

fn apply_edit_now(st: &mut State, id: &Value, params: &Value) -> Vec<Value> {
    match st.apply_mode {
        ApplyMode::Refuse => {
            return vec![reply(
                id,
                json!({"applied": false, "failureReason": "refused"}),
            )];
        }
        ApplyMode::Lie => return vec![reply(id, json!({"applied": true}))],
        ApplyMode::Apply | ApplyMode::UserTypesFirst | ApplyMode::ApplyThenUserTypes => {}
    }
    let mut out = vec![reply(id, json!({"applied": true}))];
    // `documentChanges` (versioned) or `changes` (unversioned, as sent to Neovim-like clients).
    let mut changes: Vec<(String, Option<i64>, Vec<Value>)> = Vec::new();
    for change in params["edit"]["documentChanges"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        if change["kind"] == "delete" {
            // As an editor does: the file goes, and its buffer is closed.
            let uri = change["uri"].as_str().unwrap().to_owned();
            match std::fs::remove_file(uri_path(&uri)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("delete {uri}: {e}"),
                _ => {}
            }
            if st.buffers.remove(&uri).is_some() {
                out.push(json!({"jsonrpc":"2.0","method":"textDocument/didClose",
                    "params": {"textDocument": {"uri": uri}}}));
            }
            continue;
        }
        let uri = change["textDocument"]["uri"].as_str().unwrap().to_owned();
        let edits = change["edits"].as_array().cloned().unwrap_or_default();
        changes.push((uri, change["textDocument"]["version"].as_i64(), edits));
    }
    for (uri, edits) in params["edit"]["changes"]
        .as_object()
        .cloned()
        .unwrap_or_default()
    {
        changes.push((uri, None, edits.as_array().cloned().unwrap_or_default()));
    }
    let utf8 = st.utf8;
    for (uri, version, mut edits) in changes {
        let Some(buf) = st.buffers.get_mut(&uri) else {
            continue;
        };
        if version.is_some_and(|v| v != i64::from(buf.0)) {
            out[0] = reply(
                id,
                json!({"applied": false, "failureReason": "version mismatch"}),
            );
            continue;
        }
        // Apply from the end so earlier ranges stay valid (edits refer to the original text).
        edits.sort_by_key(|e| std::cmp::Reverse(offset(&buf.1, &e["range"]["start"], utf8)));
        for edit in &edits {
            let start = offset(&buf.1, &edit["range"]["start"], utf8);
            let end = offset(&buf.1, &edit["range"]["end"], utf8);
            buf.1
                .replace_range(start..end, edit["newText"].as_str().unwrap());
        }
        buf.0 += 1;
        out.push(json!({"jsonrpc":"2.0","method":"textDocument/didChange","params":{
            "textDocument": {"uri": uri, "version": buf.0},
            "contentChanges": edits.iter().map(|e| json!({"range": e["range"], "text": e["newText"]})).collect::<Vec<_>>()}}));
    }
    out
}

/// Byte offset of a position in `text`, in the negotiated encoding (UTF-8 bytes or UTF-16 units).
fn offset(text: &str, pos: &Value, utf8: bool) -> usize {
    let line = pos["line"].as_u64().unwrap() as usize;
    let character = pos["character"].as_u64().unwrap() as usize;
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let line_text = &text[start..text[start..].find('\n').map_or(text.len(), |i| start + i)];
    let mut units = 0;
    for (i, c) in line_text.char_indices() {
        if units >= character {
            return start + i;
        }
        units += if utf8 { c.len_utf8() } else { c.len_utf16() };
    }
    start + line_text.len()
}
