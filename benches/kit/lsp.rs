//! A minimal synchronous LSP client for the daemon scenarios: frames JSON-RPC over the child's
//! stdio, timestamps every incoming message on arrival, and leaves `$/agentEvent` notifications
//! unparsed (raw bytes) so that the client's own JSON work does not compete with the daemon for
//! the two cores while it streams; the scenario parses them after the run.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// One message from the daemon.
pub struct Incoming {
    pub at: Instant,
    pub raw: Vec<u8>,
    /// Parsed, except for `$/agentEvent` notifications.
    pub value: Option<Value>,
}

impl Incoming {
    pub fn is_event(&self) -> bool {
        self.value.is_none()
    }

    pub fn method(&self) -> Option<&str> {
        self.value.as_ref()?.get("method")?.as_str()
    }

    pub fn parse(&self) -> anyhow::Result<Value> {
        match &self.value {
            Some(v) => Ok(v.clone()),
            None => serde_json::from_slice(&self.raw).context("the daemon sent a non-JSON frame"),
        }
    }
}

/// A running `agent-lsp --stdio`.
pub struct Daemon {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Incoming>,
    next_id: i64,
    /// Messages received while waiting for a response, in order.
    pub backlog: Vec<Incoming>,
}

/// How long any single wait may take before the scenario fails (never hangs).
pub const WAIT: Duration = Duration::from_secs(120);

impl Daemon {
    pub fn spawn(bin: &Path, env: &[(String, String)], cwd: &Path) -> anyhow::Result<Daemon> {
        let mut child = Command::new(bin)
            .arg("--stdio")
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            while let Ok(Some(raw)) = read_frame(&mut reader) {
                let at = Instant::now();
                let head = &raw[..raw.len().min(96)];
                let value = if contains(head, b"\"$/agentEvent\"") {
                    None
                } else {
                    match serde_json::from_slice(&raw) {
                        Ok(v) => Some(v),
                        Err(_) => Some(Value::Null),
                    }
                };
                if tx.send(Incoming { at, raw, value }).is_err() {
                    return;
                }
            }
        });
        Ok(Daemon {
            child,
            stdin,
            rx,
            next_id: 0,
            backlog: Vec::new(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let body = serde_json::to_vec(message)?;
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        self.stdin
            .write_all(&frame)
            .and_then(|()| self.stdin.flush())
            .context("the daemon closed its stdin")
    }

    pub fn notify(&mut self, method: &str, params: Value) -> anyhow::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Sends a request without waiting; returns its id.
    pub fn request_start(&mut self, method: &str, params: Value) -> anyhow::Result<i64> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Sends a request and waits for its result; other messages go to the backlog.
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.request_start(method, params)?;
        loop {
            let message = self.next()?;
            if let Some(v) = &message.value
                && v.get("id") == Some(&json!(id))
                && v.get("method").is_none()
            {
                if let Some(error) = v.get("error") {
                    bail!("{method} failed: {error}");
                }
                return Ok(v.get("result").cloned().unwrap_or(Value::Null));
            }
            self.backlog.push(message);
        }
    }

    pub fn reply(&mut self, id: &Value, result: Value) -> anyhow::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// The next message (backlog first), or an error after [`WAIT`].
    pub fn next(&mut self) -> anyhow::Result<Incoming> {
        if !self.backlog.is_empty() {
            return Ok(self.backlog.remove(0));
        }
        match self.rx.recv_timeout(WAIT) {
            Ok(m) => Ok(m),
            Err(RecvTimeoutError::Timeout) => bail!("the daemon said nothing for {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => bail!("the daemon closed its stdout"),
        }
    }

    /// `initialize` + `initialized` as an agent client with events (and, if asked, the client
    /// saving documents), UTF-8 positions, versioned edits, every tool allowed.
    pub fn initialize(&mut self, cwd: &Path, save_documents: bool) -> anyhow::Result<Value> {
        let result = self.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": format!("file://{}", cwd.display()),
                "capabilities": {
                    "general": {"positionEncodings": ["utf-8"]},
                    "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}},
                    "experimental": {"agent": {
                        "events": true, "approvals": false, "saveDocuments": save_documents
                    }}
                },
                "initializationOptions": {
                    "model": "openai/gpt-4.1",
                    "approval": {"default": "allow"},
                    "cwd": cwd.display().to_string()
                }
            }),
        )?;
        self.notify("initialized", json!({}))?;
        Ok(result)
    }

    /// Peak and current resident set of the daemon (KiB), from `/proc`.
    pub fn memory_kib(&self) -> (u64, u64) {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        (field("VmHWM:"), field("VmRSS:"))
    }

    /// `shutdown`, `exit`, and wait for the process.
    pub fn shutdown(mut self) -> anyhow::Result<()> {
        self.request("shutdown", Value::Null)?;
        self.notify("exit", Value::Null)?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the daemon exited with {status}");
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // A scenario that failed midway must not leave a daemon behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads one `Content-Length` framed body; `None` at end of stream.
fn read_frame<R: BufRead>(reader: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let Some(length) = length else {
        return Err(std::io::Error::other("a frame without Content-Length"));
    };
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `file://` URI of an absolute path (the bench's temp paths need no escaping).
pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}
