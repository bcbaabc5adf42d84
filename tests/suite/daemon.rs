//! Integration tests of the daemon: the real binary over stdio, driven like an editor, against
//! the loopback mock provider. Shared helpers live here; the tests are split by area.

mod abort;
mod approvals;
mod ask_user;
mod coalesce;
mod commands;
mod compaction;
mod controls;
mod diagnostics;
mod edits;
mod generic;
mod hostile;
mod indexed_edits;
mod jobs;
mod journal;
mod language;
mod lifecycle;
mod mcp;
mod ordering;
mod pacing;
mod permissions;
mod plan;
mod queue;
mod responses;
mod rope_edits;
mod runs;
mod sandbox;
mod saving;
mod session_lock;
mod subagents;
mod unknown_documents;
mod web;

use std::time::Duration;

use agent_lsp::testing::{MockProvider, MockResponse, MockScript};
use serde_json::{Value, json};

use crate::suite::support::lsp_client::{ApplyMode, HANG_BOUND, LspClient, Spawn, frame, path_uri};

async fn spawn_plain() -> LspClient {
    LspClient::spawn(Spawn {
        provider_url: None,
        env: vec![],
    })
    .await
}

async fn agent_setup(
    responses: Vec<MockResponse>,
    caps: Value,
    options: Value,
) -> (MockProvider, LspClient) {
    let mock = MockProvider::start(MockScript { responses }).await.unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![],
    })
    .await;
    client.initialize(caps, options).await;
    (mock, client)
}

/// A daemon whose default model is the mock's OpenAI API, with the mock's Anthropic API (and
/// its own key) configured too, for model switches.
async fn two_provider_setup(responses: Vec<MockResponse>) -> (MockProvider, LspClient) {
    let mock = MockProvider::start(MockScript { responses }).await.unwrap();
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env: vec![
            ("ANTHROPIC_BASE_URL".into(), mock.anthropic_base_url()),
            ("ANTHROPIC_API_KEY".into(), "anthropic-key".into()),
        ],
    })
    .await;
    client
        .initialize(
            LspClient::agent_caps(false),
            json!({"model": "openai/mock-model"}),
        )
        .await;
    (mock, client)
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The guarantees every finished run must satisfy.
fn assert_run_invariants(client: &LspClient, session: &str, run: &str, response_id: i64) {
    let log = client.log();
    let response_at = log
        .iter()
        .position(|m| m["id"] == response_id && m.get("method").is_none())
        .expect("response written");
    let first_event_at = log
        .iter()
        .position(|m| m["method"] == "$/agentEvent" && m["params"]["runId"] == run)
        .expect("events written");
    assert!(
        response_at < first_event_at,
        "the response must precede the run's events"
    );
    let events = client.events(session);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "seq has no gaps"
    );
    let run_events: Vec<&Value> = events.iter().filter(|e| e["runId"] == run).collect();
    let k: Vec<&str> = run_events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(k.iter().filter(|t| **t == "agent_end").count(), 1, "{k:?}");
    assert_eq!(
        k.iter().filter(|t| **t == "agent_settled").count(),
        1,
        "{k:?}"
    );
    assert_eq!(k.last(), Some(&"agent_settled"), "{k:?}");
    // Between the two: only the run's `changes_update`, when it changed files.
    let end = k.iter().position(|t| *t == "agent_end").unwrap();
    assert!(
        k[end + 1..k.len() - 1]
            .iter()
            .all(|t| *t == "changes_update")
            && end + 3 >= k.len(),
        "{k:?}"
    );
    assert_eq!(k[0], "agent_start", "{k:?}");
}

/// Polls `agent/mcpStatus` until the first server is in `state`.
async fn first_server_in(client: &LspClient, session: &str, state: &str) -> Value {
    tokio::time::timeout(HANG_BOUND, async {
        loop {
            let status = client
                .request("agent/mcpStatus", json!({"sessionId": session}))
                .await;
            if status["servers"][0]["state"] == state {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the server never became {state}"))
}

fn requests_of(client: &LspClient, method: &str) -> Vec<Value> {
    client
        .log()
        .into_iter()
        .filter(|m| m["method"] == method && m.get("id").is_some())
        .collect()
}

/// The environment of a daemon sharing `first`'s home (its session directory).
pub(super) fn same_home(first: &LspClient) -> Vec<(String, String)> {
    let home = first.home.path().to_path_buf();
    let mut env: Vec<(String, String)> = vec![("HOME".into(), home.display().to_string())];
    for dir in ["config", "data", "state", "cache"] {
        env.push((
            format!("XDG_{}_HOME", dir.to_uppercase()),
            home.join(dir).display().to_string(),
        ));
    }
    env
}

/// A new daemon over the home `env` names (see [`same_home`]), initialized as an agent client,
/// with the stored `session` resumed; and `agent/newSession`'s answer.
pub(super) async fn resume_in_new_daemon(
    env: Vec<(String, String)>,
    mock: &MockProvider,
    session: &str,
) -> (LspClient, Value) {
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env,
    })
    .await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    let resumed = client
        .request("agent/newSession", json!({"resume": session}))
        .await;
    (client, resumed)
}

async fn prompt(client: &LspClient, params: Value) -> (String, String, i64) {
    let (id, rx) = client.request_start("agent/prompt", params).await;
    let resp = tokio::time::timeout(HANG_BOUND, rx).await.unwrap().unwrap();
    let r = &resp["result"];
    assert!(r.is_object(), "{resp}");
    (
        r["sessionId"].as_str().unwrap().to_owned(),
        r["runId"].as_str().unwrap().to_owned(),
        id,
    )
}

fn tool_results(events: &[Value]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| {
            (
                e["event"]["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["event"]["isError"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn bash_call(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({"command": command}))
}

fn settled_aborted(events: &[Value], run: &str) -> bool {
    events.iter().any(|e| {
        e["runId"] == run && e["event"]["type"] == "agent_settled" && e["event"]["aborted"] == true
    })
}
