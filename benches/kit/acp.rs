//! A minimal synchronous ACP client for scenario 8: newline-delimited JSON-RPC over the child's
//! stdio (`agent-lsp acp`), every incoming line timestamped on arrival, `session/update`s left
//! unparsed (raw bytes) so that the client's JSON work does not compete with the agent while
//! it streams; the scenario parses them after the turn.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::lsp::{Incoming, WAIT, contains};

/// A running `agent-lsp acp`.
pub struct AcpAgent {
    child: Child,
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    rx: Receiver<Incoming>,
    next_id: i64,
}

/// One prompt's turn as the client saw it.
pub struct Turn {
    pub sent: Instant,
    pub answered: Instant,
    pub stop_reason: String,
    /// The turn's `session/update`s, unparsed, in order.
    pub updates: Vec<Incoming>,
}

impl Turn {
    /// When the first `agent_message_chunk` arrived.
    pub fn first_chunk(&self) -> anyhow::Result<Instant> {
        (self.updates.iter())
            .find(|u| contains(&u.raw, b"\"agent_message_chunk\""))
            .map(|u| u.at)
            .context("the turn showed no agent_message_chunk")
    }

    /// The text of its agent message chunks, and how many there were.
    pub fn agent_text(&self) -> anyhow::Result<(String, usize)> {
        let (mut text, mut chunks) = (String::new(), 0);
        for update in &self.updates {
            let value = update.parse()?;
            let update = &value["params"]["update"];
            if update["sessionUpdate"] == "agent_message_chunk" {
                text.push_str(update["content"]["text"].as_str().unwrap_or_default());
                chunks += 1;
            }
        }
        Ok((text, chunks))
    }
}

impl AcpAgent {
    pub fn spawn(bin: &Path, env: &[(String, String)], cwd: &Path) -> anyhow::Result<AcpAgent> {
        let mut child = Command::new(bin)
            .arg("acp")
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {} acp", bin.display()))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            let mut raw = Vec::new();
            while reader.read_until(b'\n', &mut raw).is_ok_and(|n| n > 0) {
                let at = Instant::now();
                let line = std::mem::take(&mut raw);
                let head = &line[..line.len().min(64)];
                let value = if contains(head, b"\"session/update\"") {
                    None
                } else {
                    Some(serde_json::from_slice(&line).unwrap_or(Value::Null))
                };
                if tx
                    .send(Incoming {
                        at,
                        raw: line,
                        value,
                    })
                    .is_err()
                {
                    return;
                }
            }
        });
        Ok(AcpAgent {
            child,
            stdin: Some(stdin),
            rx,
            next_id: 0,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn start(&mut self, method: &str, params: Value) -> anyhow::Result<i64> {
        self.next_id += 1;
        let id = self.next_id;
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )?;
        line.push(b'\n');
        let stdin = self.stdin.as_mut().context("the connection is closed")?;
        stdin
            .write_all(&line)
            .and_then(|()| stdin.flush())
            .context("the agent closed its stdin")?;
        Ok(id)
    }

    fn next(&mut self) -> anyhow::Result<Incoming> {
        match self.rx.recv_timeout(WAIT) {
            Ok(m) => Ok(m),
            Err(RecvTimeoutError::Timeout) => bail!("the agent said nothing for {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => bail!("the agent closed its stdout"),
        }
    }

    /// Sends a request; collects the updates until its response (the agent makes no
    /// requests of its own here: no tools, no client capabilities).
    fn exchange(
        &mut self,
        method: &str,
        params: Value,
    ) -> anyhow::Result<(Instant, Value, Vec<Incoming>)> {
        let id = self.start(method, params)?;
        let mut updates = Vec::new();
        loop {
            let message = self.next()?;
            let Some(value) = &message.value else {
                updates.push(message);
                continue;
            };
            if value.get("id") == Some(&json!(id)) && value.get("method").is_none() {
                if let Some(error) = value.get("error") {
                    bail!("{method} failed: {error}");
                }
                let result = value.get("result").cloned().unwrap_or(Value::Null);
                return Ok((message.at, result, updates));
            }
            bail!("unexpected from the agent: {value}");
        }
    }

    pub fn initialize(&mut self) -> anyhow::Result<Value> {
        let params = json!({"protocolVersion": 1, "clientCapabilities": {}});
        Ok(self.exchange("initialize", params)?.1)
    }

    /// `session/new` in `cwd`; returns the session id. Its `available_commands_update`
    /// follows the response and is collected with the next turn's updates.
    pub fn new_session(&mut self, cwd: &Path) -> anyhow::Result<String> {
        let params = json!({"cwd": cwd.display().to_string(), "mcpServers": []});
        let (_, created, _) = self.exchange("session/new", params)?;
        Ok(created["sessionId"]
            .as_str()
            .context("session/new without sessionId")?
            .to_string())
    }

    pub fn prompt(&mut self, session: &str, text: &str) -> anyhow::Result<Turn> {
        let sent = Instant::now();
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        let (answered, result, updates) = self.exchange("session/prompt", params)?;
        Ok(Turn {
            sent,
            answered,
            stop_reason: result["stopReason"].as_str().unwrap_or_default().into(),
            updates,
        })
    }

    /// Closes stdin (the end of the connection) and waits for the agent to exit cleanly.
    pub fn shutdown(mut self) -> anyhow::Result<()> {
        self.stdin = None;
        let status = self.child.wait()?;
        anyhow::ensure!(status.success(), "the ACP agent exited with {status}");
        Ok(())
    }
}

impl Drop for AcpAgent {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
