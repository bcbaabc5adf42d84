//! Starting the `agent-lsp-mock` binary from tests (for tests that drive other processes, such as
//! the CLI or editors, against a scripted provider). In-process tests can use
//! `agent_lsp::testing::MockProvider` directly instead.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::Value;

/// A running `agent-lsp-mock`; killed on drop.
pub struct MockProcess {
    child: Child,
    /// Kept open: closing stdin stops the mock.
    _stdin: Option<ChildStdin>,
    pub port: u16,
    pub openai_base_url: String,
    pub anthropic_base_url: String,
    pub log: PathBuf,
}

impl MockProcess {
    /// Writes `script` to `dir/mock-script.json` and serves it, logging to `dir/mock-requests.jsonl`.
    pub fn start(dir: &Path, script: &Value) -> MockProcess {
        let script_path = dir.join("mock-script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let log = dir.join("mock-requests.jsonl");
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-lsp-mock"))
            .arg("--script")
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .env("HOME", dir)
            .env("XDG_CONFIG_HOME", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let announced: Value = serde_json::from_str(&line).unwrap();
        let text = |key: &str| announced[key].as_str().unwrap().to_string();
        MockProcess {
            _stdin: child.stdin.take(),
            port: announced["port"].as_u64().unwrap() as u16,
            openai_base_url: text("openaiBaseUrl"),
            anthropic_base_url: text("anthropicBaseUrl"),
            log,
            child,
        }
    }

    /// The requests logged so far, one JSON object each.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for MockProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
