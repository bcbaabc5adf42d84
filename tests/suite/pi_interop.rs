//! Genuine pi 1.6.0 output (written by `tests/interop/pi.sh --update-fixtures`, case 2: a read
//! tool call and an answer) opens and continues through the real session store. The live
//! round trips with pi itself run in `tests/interop/pi.sh`.

use std::path::Path;

use agent_lsp::agent::message::{AgentMessage, ContentBlock, ThinkingLevel};
use agent_lsp::store::SessionFile;

use super::support::pi_session::assert_valid_pi_v3;

const FIXTURE: &str = "tests/fixtures/sessions/pi-1.6.0-read.jsonl";

fn copy_fixture(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("pi-1.6.0-read.jsonl");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE), &path).unwrap();
    path
}

#[test]
fn a_genuine_pi_1_6_0_session_opens_with_its_tool_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_fixture(dir.path());
    let original = std::fs::read_to_string(&path).unwrap();
    let session = SessionFile::open_path(&path).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        original,
        "opening rewrites nothing"
    );
    let context = session.context();
    assert_eq!(context.thinking_level, ThinkingLevel::Off);
    assert_eq!(context.model.unwrap().model_id, "mock-model");
    let summary: Vec<(String, String)> = context
        .messages
        .iter()
        .filter(|m| m.role() != "system")
        .map(|m| {
            let text = match m {
                AgentMessage::User(u) => u.content.to_text(),
                AgentMessage::Assistant(a) if a.text().is_empty() => {
                    let calls: Vec<String> = a.tool_calls().map(|c| c.name.clone()).collect();
                    format!("calls {}", calls.join(","))
                }
                AgentMessage::Assistant(a) => a.text(),
                AgentMessage::ToolResult(r) => {
                    let texts: Vec<&str> = r
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(t.text.as_str()),
                            _ => None,
                        })
                        .collect();
                    format!("{}: {}", r.tool_name, texts.concat())
                }
                other => panic!("unexpected {other:?}"),
            };
            (m.role().to_string(), text)
        })
        .collect();
    let expected = [
        ("user", "read a.txt"),
        ("assistant", "calls read"),
        ("toolResult", "read: hello world\n"),
        ("assistant", "The file says hello world."),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    assert_eq!(summary, expected);
}

#[test]
fn a_genuine_pi_1_6_0_session_continues_as_valid_v3() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_fixture(dir.path());
    let original = std::fs::read_to_string(&path).unwrap();
    let mut session = SessionFile::open_path(&path).unwrap();
    let leaf = session.leaf_id().unwrap().to_string();
    let id = session
        .append_message(&AgentMessage::user_text("what next?"))
        .unwrap();
    assert_eq!(
        session.entry(&id).unwrap().parent_id.as_deref(),
        Some(leaf.as_str())
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(&original),
        "pi's lines are kept byte for byte"
    );
    assert_valid_pi_v3(&path);
}

/// Two shape fixes found by comparing against `pi --mode json` (tests/interop/pi.sh, case 3):
/// `turn_end` messages carry their `role`, and final assistant messages carry the request's
/// `durationMs`, as pi 1.6.0's do.
#[tokio::test]
async fn run_json_events_carry_pi_1_6_0_roles_and_durations() {
    use agent_lsp::testing::{MockProvider, MockResponse, MockScript};
    use serde_json::json;

    use super::support::cli_run::{CliEnv, json_lines, stderr};

    let mock = MockProvider::start(MockScript {
        responses: vec![
            MockResponse::tool_call("call_1", "read", json!({"path": "a.txt"})),
            MockResponse {
                text: Some("Done.".into()),
                delay_ms: Some(20),
                ..Default::default()
            },
        ],
    })
    .await
    .unwrap();
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "hello\n").unwrap();
    let out = env
        .run(&[
            "run",
            "--json",
            "--no-session",
            "--model",
            "openai/mock-model",
            "read a.txt",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let events = json_lines(&out);
    let turn_ends: Vec<_> = events.iter().filter(|e| e["type"] == "turn_end").collect();
    assert_eq!(turn_ends.len(), 2);
    assert_eq!(turn_ends[0]["message"]["role"], "assistant");
    assert_eq!(turn_ends[0]["toolResults"][0]["role"], "toolResult");
    let assistant_ends: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .collect();
    assert_eq!(assistant_ends.len(), 2);
    for end in &assistant_ends {
        assert!(end["message"]["durationMs"].is_u64(), "{end}");
    }
    // The second response waits 20 ms before each chunk, so its request took at least that.
    assert!(assistant_ends[1]["message"]["durationMs"].as_u64().unwrap() >= 20);
}
