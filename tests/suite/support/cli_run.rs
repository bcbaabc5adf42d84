//! Running the real `agent-lsp` binary in a sealed environment: an empty environment plus a temp
//! HOME, XDG dirs inside it, and `OLLAMA_HOST` on a closed loopback port, so no test can reach a
//! real key, a real model, the network or the user's files.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use agent_lsp::testing::MockProvider;
use serde_json::Value;
use tokio::process::{Child, Command};

pub struct CliEnv {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
    extra: Vec<(String, String)>,
}

impl CliEnv {
    pub fn new() -> CliEnv {
        CliEnv {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
            extra: Vec::new(),
        }
    }

    /// A sealed environment whose home is outside `/tmp` (a sandboxed command has a `/tmp` of
    /// its own, so what it must not see in the home folder is best placed where it would).
    pub fn with_home_outside_tmp() -> CliEnv {
        CliEnv {
            home: super::outside_tmp(),
            project: tempfile::tempdir().unwrap(),
            extra: Vec::new(),
        }
    }

    /// An environment whose OpenAI provider is the mock.
    pub fn with_mock(mock: &MockProvider) -> CliEnv {
        let mut env = CliEnv::new();
        env.set("OPENAI_BASE_URL", &mock.openai_base_url());
        env.set("OPENAI_API_KEY", "test-key");
        env
    }

    pub fn set(&mut self, key: &str, value: &str) {
        self.extra.push((key.into(), value.into()));
    }

    /// The project directory, canonical as the binary stores it in session headers.
    pub fn project(&self) -> PathBuf {
        std::fs::canonicalize(self.project.path()).unwrap()
    }

    /// Where the binary stores sessions in this environment (`$XDG_DATA_HOME/agent-lsp/sessions`).
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.path().join("data/agent-lsp/sessions")
    }

    /// Every session file, in no particular order.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let Ok(dirs) = std::fs::read_dir(self.sessions_dir()) else {
            return files;
        };
        for dir in dirs.flatten() {
            for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                if file.path().extension().is_some_and(|e| e == "jsonl") {
                    files.push(file.path());
                }
            }
        }
        files
    }

    pub fn command(&self, args: &[&str]) -> Command {
        self.command_through(&[], args)
    }

    /// The binary started by `wrapper` (a program and its first arguments, the binary's path
    /// and `args` follow), in the same sealed environment.
    pub fn command_through(&self, wrapper: &[&str], args: &[&str]) -> Command {
        let binary = env!("CARGO_BIN_EXE_agent-lsp");
        let mut cmd = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut cmd = Command::new(program);
                cmd.args(rest).arg(binary);
                cmd
            }
            None => Command::new(binary),
        };
        super::seal(&mut cmd, self.home.path());
        cmd.args(args)
            .current_dir(self.project())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        cmd
    }

    /// The binary with `args` on a pseudo-terminal (util-linux `script`), as a user at a
    /// terminal runs it: what is written to the child's stdin is typed on the terminal, and its
    /// stdout carries everything the terminal shows.
    pub fn command_on_pty(&self, args: &[&str]) -> Command {
        let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
        let mut line = quote(env!("CARGO_BIN_EXE_agent-lsp"));
        for arg in args {
            line.push(' ');
            line.push_str(&quote(arg));
        }
        let mut cmd = Command::new("script");
        super::seal(&mut cmd, self.home.path());
        cmd.args(["-q", "-e", "-c", &line, "/dev/null"])
            .current_dir(self.project())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().await.unwrap()
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args).spawn().unwrap()
    }
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every stdout line parsed as JSON (panics on a non-JSON line: `--json` prints nothing else).
pub fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

/// The JSON lines of a session file.
pub fn session_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `role` and text of every message in a provider request body (OpenAI shape).
pub fn request_texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap_or_default().to_string(), text)
        })
        .collect()
}
