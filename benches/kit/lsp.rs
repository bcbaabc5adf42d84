//! A minimal synchronous LSP client for the daemon scenarios: frames JSON-RPC over the child's
//! stdio, timestamps every incoming message on arrival, and leaves `$/agentEvent` notifications
//! unparsed (raw bytes) so that the client's own JSON work does not compete with the daemon for
//! the two cores while it streams; the scenario parses them after the run.

use std::collections::{BTreeMap, HashSet};
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
    backlog: Vec<Incoming>,
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

    /// `agent/newSession` in `cwd`; returns the session id.
    pub fn new_session(&mut self, cwd: &Path) -> anyhow::Result<String> {
        let created = self.request(
            "agent/newSession",
            json!({"cwd": cwd.display().to_string()}),
        )?;
        Ok(created["sessionId"]
            .as_str()
            .context("agent/newSession without sessionId")?
            .to_string())
    }

    /// Prompts every session at once; returns the wall time until the last `agent_settled`
    /// and every event received meanwhile (unparsed).
    pub fn prompt_all(&mut self, sessions: &[String]) -> anyhow::Result<(Duration, Vec<Incoming>)> {
        let started = Instant::now();
        let mut prompts = HashSet::new();
        for session in sessions {
            prompts.insert(self.request_start(
                "agent/prompt",
                json!({"sessionId": session, "message": "Stream your answer"}),
            )?);
        }
        let (mut events, mut settled, mut last) = (Vec::new(), 0, started);
        while settled < sessions.len() {
            let message = self.next()?;
            if message.is_event() {
                if contains(&message.raw, b"\"agent_settled\"") {
                    settled += 1;
                    last = message.at;
                }
                events.push(message);
                continue;
            }
            let value = message.parse()?;
            if let Some(id) = value.get("id").and_then(Value::as_i64)
                && prompts.contains(&id)
                && let Some(error) = value.get("error")
            {
                bail!("agent/prompt failed: {error}");
            }
        }
        Ok((last.saturating_duration_since(started), events))
    }

    /// CPU time the daemon has used so far (all threads), from `/proc/PID/stat`.
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        process_cpu(self.pid())
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

/// What a check of the daemon's events found.
#[derive(Default)]
pub struct EventCheck {
    pub events: usize,
    /// Text-delta notifications (each may carry several provider deltas).
    pub notifications: usize,
    /// Events lost, repeated or out of order, and answers not rebuilt exactly.
    pub anomalies: usize,
    /// The last `seq` seen per session, across checks.
    last_seq: BTreeMap<String, u64>,
}

impl EventCheck {
    /// Every session's `seq` runs on by one, and each session's text deltas rebuild exactly
    /// one of `texts`, each used once. The daemon may merge the deltas of a client that falls
    /// behind (protocol.md, `$/agentEvent`): fewer notifications are fine, the text must be
    /// exact.
    pub fn check(&mut self, events: &[Incoming], texts: &[String]) -> anyhow::Result<()> {
        let mut streamed: BTreeMap<String, String> = BTreeMap::new();
        for incoming in events {
            let value = incoming.parse()?;
            let params = &value["params"];
            let session = params["sessionId"].as_str().unwrap_or_default().to_string();
            let seq = params["seq"].as_u64().unwrap_or(0);
            let last = self.last_seq.entry(session.clone()).or_insert(0);
            self.anomalies += usize::from(seq != *last + 1);
            *last = seq;
            self.events += 1;
            let event = &params["event"]["assistantMessageEvent"];
            if event["type"] == "text_delta" {
                let text = streamed.entry(session).or_default();
                text.push_str(event["delta"].as_str().unwrap_or_default());
                self.notifications += 1;
            }
        }
        let mut unused: HashSet<&str> = texts.iter().map(String::as_str).collect();
        for text in streamed.values() {
            self.anomalies += usize::from(!unused.remove(text.as_str()));
        }
        self.anomalies += unused.len();
        Ok(())
    }
}

/// CPU time process `pid` has used so far (all threads), from `/proc/PID/stat`.
pub fn process_cpu(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name (which may hold spaces) in parentheses; utime and
    // stime are fields 14 and 15, in USER_HZ ticks (100 per second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| -> anyhow::Result<u64> {
        Ok(fields.get(i).context("a short /proc stat line")?.parse()?)
    };
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `file://` URI of an absolute path (the bench's temp paths need no escaping).
pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}
