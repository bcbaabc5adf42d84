//! Runs one scenario of `tests/acp/client.mjs` (the SDK's client, as an editor) against the real
//! binary in a sealed environment, and checks the ordering rules on every transcript.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use agent_lsp::testing::{MockProvider, MockScript};
use serde_json::{Value, json};

/// The SDK's node_modules, installed once per test process by the repository's script; a
/// missing node or SDK fails the test loudly.
fn sdk() -> &'static PathBuf {
    static SDK: OnceLock<PathBuf> = OnceLock::new();
    SDK.get_or_init(|| {
        let root = env!("CARGO_MANIFEST_DIR");
        let out = std::process::Command::new("bash")
            .arg(format!("{root}/scripts/install-acp-sdk.sh"))
            .output()
            .expect("cannot run scripts/install-acp-sdk.sh");
        assert!(
            out.status.success(),
            "installing the ACP SDK failed (node and npm are needed): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// A sealed environment: temp HOME and XDG dirs, the mock as the OpenAI provider.
pub struct AcpEnv {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
    pub mock: Option<MockProvider>,
    pub extra: Vec<(String, String)>,
}

impl AcpEnv {
    pub async fn with_script(script: Value) -> AcpEnv {
        let mock = MockProvider::start(MockScript::from_json(&script.to_string()).unwrap())
            .await
            .unwrap();
        let mut env = AcpEnv::without_model();
        env.extra
            .push(("OPENAI_BASE_URL".into(), mock.openai_base_url()));
        env.extra.push(("OPENAI_API_KEY".into(), "test-key".into()));
        env.mock = Some(mock);
        env
    }

    pub fn without_model() -> AcpEnv {
        AcpEnv {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
            mock: None,
            extra: Vec::new(),
        }
    }

    /// The project directory, canonical.
    pub fn project(&self) -> PathBuf {
        std::fs::canonicalize(self.project.path()).unwrap()
    }

    pub fn file(&self, name: &str) -> String {
        self.project().join(name).display().to_string()
    }

    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.project().join(name), text).unwrap();
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.project().join(name)).unwrap()
    }

    /// Runs a scenario (`client` and `steps`, see client.mjs) to its end.
    pub async fn run(&self, scenario: Value) -> Transcript {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("scenario.json");
        std::fs::write(&file, scenario.to_string()).unwrap();
        let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/client.mjs");
        let mut cmd = tokio::process::Command::new("node");
        super::super::support::seal(&mut cmd, self.home.path());
        cmd.arg(client)
            .arg(&file)
            .env("AGENT_LSP_BIN", env!("CARGO_BIN_EXE_agent-lsp"))
            .env("ACP_SDK", sdk())
            .current_dir(self.project())
            .kill_on_drop(true);
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        let out = cmd.output().await.expect("node is not installed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let value: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("the client printed no transcript ({e}):\n{stdout}\nstderr:\n{stderr}")
        });
        let transcript = Transcript(value);
        assert!(
            transcript.0["error"].is_null(),
            "the client failed: {}\nstderr:\n{stderr}",
            transcript.0["error"]
        );
        assert_eq!(transcript.0["exitCode"], 0, "agent exit; stderr:\n{stderr}");
        if let Some(line) = stderr.lines().find(|l| l.contains("panicked")) {
            panic!("the agent panicked: {line}");
        }
        transcript.check_ordering();
        transcript
    }
}

/// What the client saw.
pub struct Transcript(pub Value);

impl Transcript {
    pub fn wire(&self) -> &Vec<Value> {
        self.0["wire"].as_array().unwrap()
    }

    /// The messages from the agent, in order.
    pub fn incoming(&self) -> Vec<&Value> {
        (self.wire().iter())
            .filter(|w| w["dir"] == "in")
            .map(|w| &w["msg"])
            .collect()
    }

    /// Every `session/update`'s `update`, in order.
    pub fn updates(&self) -> Vec<&Value> {
        (self.incoming().into_iter())
            .filter(|m| m["method"] == "session/update")
            .map(|m| &m["params"]["update"])
            .collect()
    }

    #[allow(dead_code)]
    pub fn kinds(&self) -> Vec<String> {
        (self.updates().iter())
            .map(|u| u["sessionUpdate"].as_str().unwrap().to_owned())
            .collect()
    }

    pub fn result(&self, name: &str) -> &Value {
        let r = &self.0["results"][name];
        assert!(r["error"].is_null(), "{name} failed: {}", r["error"]);
        &r["result"]
    }

    pub fn error(&self, name: &str) -> &Value {
        let r = &self.0["results"][name];
        assert!(
            !r["error"].is_null(),
            "{name} did not fail: {}",
            r["result"]
        );
        &r["error"]
    }

    pub fn stop_reason(&self, name: &str) -> String {
        self.result(name)["stopReason"].as_str().unwrap().to_owned()
    }

    /// The text of every agent message chunk, joined.
    pub fn agent_text(&self) -> String {
        self.chunks("agent_message_chunk")
    }

    pub fn chunks(&self, kind: &str) -> String {
        (self.updates().iter())
            .filter(|u| u["sessionUpdate"] == kind)
            .map(|u| u["content"]["text"].as_str().unwrap_or_default())
            .collect()
    }

    /// The tool call updates of one call, in order (the `tool_call` first).
    pub fn tool_call(&self, id: &str) -> Vec<&Value> {
        (self.updates().into_iter())
            .filter(|u| u["toolCallId"] == id)
            .collect()
    }

    pub fn final_status(&self, id: &str) -> String {
        (self.tool_call(id).iter().rev())
            .find_map(|u| u["status"].as_str())
            .unwrap_or("pending")
            .to_owned()
    }

    /// Requests the agent made to the client (method, params).
    pub fn agent_requests(&self, method: &str) -> Vec<&Value> {
        (self.incoming().into_iter())
            .filter(|m| m["method"] == method && m.get("id").is_some())
            .map(|m| &m["params"])
            .collect()
    }

    /// The raw error responses with a `null` id (answers to lines that were not messages).
    pub fn null_id_errors(&self) -> Vec<&Value> {
        (self.incoming().into_iter())
            .filter(|m| m.get("id") == Some(&Value::Null) && m.get("error").is_some())
            .map(|m| &m["error"])
            .collect()
    }

    /// ACP's ordering rules, on the raw wire: every client request gets exactly one response;
    /// a `session/update` arrives only while one of its session's requests is open (so every
    /// update of a turn precedes the turn's response), and never for a new session before the
    /// response that created it. `available_commands_update` is the one update that belongs
    /// to no turn: it follows the response that opened the session, and MCP prompts arriving.
    fn check_ordering(&self) {
        let mut open: HashMap<String, Option<String>> = HashMap::new();
        let mut known: HashSet<String> = HashSet::new();
        for w in self.wire() {
            let msg = &w["msg"];
            let id = msg.get("id").map(|i| i.to_string());
            let method = msg["method"].as_str();
            let session = msg["params"]["sessionId"].as_str().map(str::to_owned);
            match (w["dir"].as_str(), method, id) {
                // The client's requests: a load or resume names a session it knows.
                (Some("out"), Some(method), Some(id)) => {
                    if matches!(method, "session/load" | "session/resume") {
                        known.extend(session.clone());
                    }
                    assert!(open.insert(id, session).is_none(), "a reused id: {msg}");
                }
                (Some("in"), Some("session/update"), None) => {
                    let session = session.unwrap();
                    assert!(
                        known.contains(&session),
                        "an update before its session: {msg}"
                    );
                    let busy = open
                        .values()
                        .any(|s| s.as_deref() == Some(session.as_str()));
                    let any_time =
                        msg["params"]["update"]["sessionUpdate"] == "available_commands_update";
                    assert!(
                        busy || any_time,
                        "an update outside any request of its session: {msg}"
                    );
                }
                // A response from the agent (a `null` id answers a line that was no message).
                (Some("in"), None, Some(id)) if id != "null" => {
                    assert!(
                        open.remove(&id).is_some(),
                        "a response to no open request: {msg}"
                    );
                    if let Some(created) = msg["result"]["sessionId"].as_str() {
                        known.insert(created.to_owned());
                    }
                }
                _ => {}
            }
        }
        assert!(open.is_empty(), "requests never answered: {open:?}");
    }
}

/// `{"op": "initialize"}, {"op": "new", "cwd": …}`: the opening every scenario shares.
pub fn opening(env: &AcpEnv) -> Vec<Value> {
    vec![
        json!({"op": "initialize"}),
        json!({"op": "new", "cwd": env.project()}),
    ]
}

pub fn steps(env: &AcpEnv, more: Vec<Value>) -> Value {
    let mut all = opening(env);
    all.extend(more);
    Value::Array(all)
}

/// The ordering check itself fails on the violations it is there for.
#[test]
fn the_ordering_check_catches_late_updates_and_missing_answers() {
    let request = json!({"dir": "out", "msg": {"jsonrpc": "2.0", "id": 5,
        "method": "session/prompt", "params": {"sessionId": "s"}}});
    let load = json!({"dir": "out", "msg": {"jsonrpc": "2.0", "id": 4,
        "method": "session/load", "params": {"sessionId": "s"}}});
    let loaded = json!({"dir": "in", "msg": {"jsonrpc": "2.0", "id": 4, "result": {}}});
    let update = json!({"dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}}});
    let answer = json!({"dir": "in", "msg": {"jsonrpc": "2.0", "id": 5,
        "result": {"stopReason": "end_turn"}}});
    let check = |wire: Vec<&Value>| {
        let t = Transcript(json!({"wire": wire}));
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.check_ordering())).is_ok()
    };
    assert!(check(vec![&load, &loaded, &request, &update, &answer]));
    assert!(
        !check(vec![&load, &loaded, &request, &answer, &update]),
        "an update after the answer"
    );
    assert!(!check(vec![&load, &loaded, &request, &update]), "no answer");
    assert!(
        !check(vec![&load, &loaded, &request, &answer, &answer]),
        "two answers"
    );
    assert!(
        !check(vec![&request, &update, &answer]),
        "an update of an unknown session"
    );
    let commands = json!({"dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "available_commands_update"}}}});
    assert!(
        check(vec![&load, &loaded, &commands]),
        "commands at any time"
    );
    assert!(
        !check(vec![&request, &commands, &answer]),
        "commands of an unknown session"
    );
}
