//! Content identity (issue 31): two lines swapped between lines indented by 7 spaces or more
//! keep the tools' fingerprint, which named the journal's images and decided its comparisons.
//! Now a cryptographic hash decides, so the swap is a change everywhere it matters.

use agent_lsp::testing::MockResponse;
use serde_json::json;

use super::super::support::cli_run::{CliEnv, request_texts, session_lines, stderr, stdout};
use super::{MODEL, mock};

/// The user's text, the same with two lines swapped (the same fingerprint), and the
/// command's change of it.
const MINE: &str = "def f():\n        a = 1\n        b = 2\n        c()\n";
const SWAPPED: &str = "def f():\n        b = 2\n        a = 1\n        c()\n";
const CHANGED: &str = "def f():\n        b = 2\n        a = 1\n        d()\n";

fn bash(id: &str, command: &str) -> MockResponse {
    MockResponse::tool_call(id, "bash", json!({"command": command}))
}

#[test]
fn the_fingerprint_really_is_blind_to_this_swap() {
    use agent_lsp::tools::{ContentId, Fingerprint};
    assert_eq!(
        Fingerprint::of(MINE.as_bytes()),
        Fingerprint::of(SWAPPED.as_bytes())
    );
    assert_ne!(
        ContentId::of(MINE.as_bytes()),
        ContentId::of(SWAPPED.as_bytes())
    );
}

/// A session's `bash` stores the file's before-image; the user swaps two lines; the next
/// session's `bash` changes the file; reverting that session restores the user's order, not
/// the first session's.
#[tokio::test]
async fn reverting_the_second_session_restores_the_users_swap_exactly() {
    let mock = mock(vec![
        bash("c1", "true"),
        MockResponse::text("looked"),
        bash("c2", "sed -i 's/c()/d()/' f.py"),
        MockResponse::text("changed"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let file = env.project().join("f.py");
    std::fs::write(&file, MINE).unwrap();
    let first = env
        .run(&["run", "--approve", "all", "--model", MODEL, "look"])
        .await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    std::fs::write(&file, SWAPPED).unwrap();
    let second = env
        .run(&["run", "--approve", "all", "--model", MODEL, "change"])
        .await;
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), CHANGED);
    let mut files = env.session_files();
    files.sort();
    let id = session_lines(&files[1])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.run(&["sessions", "revert", &id]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SWAPPED);
}

/// The agent reads the file, something swaps two of its lines, the agent's `edit` is refused
/// as a change since it read the file.
#[tokio::test]
async fn an_edit_after_a_swap_is_a_change_since_the_read() {
    let swap = "python3 -c \"import pathlib; p = pathlib.Path('f.py'); \
                t = p.read_text().replace('a = 1', 'X').replace('b = 2', 'a = 1').replace('X', 'b = 2'); \
                p.write_text(t)\"";
    let mock = mock(vec![
        MockResponse::tool_call("r", "read", json!({"path": "f.py"})),
        bash("s", swap),
        MockResponse::tool_call(
            "e",
            "edit",
            json!({"path": "f.py", "edits": [{"oldText": "c()", "newText": "d()"}]}),
        ),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let file = env.project().join("f.py");
    std::fs::write(&file, MINE).unwrap();
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SWAPPED);
    let requests = mock.requests();
    let results: Vec<String> = request_texts(&requests[requests.len() - 1].body)
        .into_iter()
        .filter(|(role, _)| role == "tool")
        .map(|(_, t)| t)
        .collect();
    assert!(
        results[2].contains("has been modified since you last read it"),
        "{results:?}"
    );
}
