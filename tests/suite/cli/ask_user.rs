//! `agent-lsp run` and the `ask_user` tool: on a terminal the question is asked there (the
//! test types the answer once the prompt shows); without one, no one can answer.

use std::sync::{Arc, Mutex};

use agent_lsp::testing::{MockProvider, MockResponse};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use super::super::support::cli_run::{CliEnv, stderr};
use super::super::support::lsp_client::HANG_BOUND;
use super::{MODEL, mock};

fn colours() -> MockResponse {
    MockResponse::tool_call(
        "q1",
        "ask_user",
        json!({"question": "Which colour?",
               "options": [{"label": "red", "description": "warm"}, {"label": "blue"}]}),
    )
}

/// The tool results the model was sent in the last request.
fn tool_results(mock: &MockProvider) -> Vec<String> {
    let requests = mock.requests();
    let body: &Value = &requests.last().unwrap().body;
    (body["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// What the terminal shows so far, as the child writes it.
#[derive(Clone, Default)]
struct Screen {
    text: Arc<Mutex<String>>,
    changed: Arc<Notify>,
}

impl Screen {
    fn follow(&self, mut out: impl AsyncReadExt + Unpin + Send + 'static) {
        let screen = self.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                screen
                    .text
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
                screen.changed.notify_waiters();
            }
            screen.changed.notify_waiters();
        });
    }

    fn text(&self) -> String {
        self.text.lock().unwrap().clone()
    }

    /// Waits until the screen shows `what`.
    async fn wait_for(&self, what: &str) {
        let deadline = tokio::time::Instant::now() + HANG_BOUND;
        loop {
            let changed = self.changed.notified();
            if self.text().contains(what) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                panic!("the terminal never showed {what:?}:\n{}", self.text());
            }
        }
    }
}

#[tokio::test]
async fn on_a_terminal_the_question_is_asked_there_and_a_number_answers_it() {
    let mock = mock(vec![colours(), MockResponse::text("Blue it is.")]).await;
    let env = CliEnv::with_mock(&mock);
    let mut child = env
        .command_on_pty(&["run", "--model", MODEL, "--no-session", "ask", "me"])
        .spawn()
        .expect("util-linux `script` runs the binary on a terminal");
    let screen = Screen::default();
    screen.follow(child.stdout.take().unwrap());
    screen
        .wait_for("Answer with a number or in your own words")
        .await;
    let mut stdin = child.stdin.take().unwrap();
    // Out of range first: asked again.
    stdin.write_all(b"7\n").await.unwrap();
    screen.wait_for("Choose from 1 to 2.").await;
    stdin.write_all(b"2\n").await.unwrap();
    let status = tokio::time::timeout(HANG_BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    screen.wait_for("Blue it is.").await;
    assert!(status.success(), "{}", screen.text());
    let shown = screen.text().replace("\r\n", "\n");
    assert!(
        shown.contains("agent-lsp asks:\nWhich colour?\n  1. red — warm\n  2. blue\n"),
        "{shown}"
    );
    assert_eq!(tool_results(&mock), ["The user answered: blue"]);
}

#[tokio::test]
async fn end_of_input_on_the_terminal_gives_no_answer() {
    let mock = mock(vec![colours(), MockResponse::text("ok")]).await;
    let env = CliEnv::with_mock(&mock);
    let mut child = env
        .command_on_pty(&["run", "--model", MODEL, "--no-session", "ask"])
        .spawn()
        .unwrap();
    let screen = Screen::default();
    screen.follow(child.stdout.take().unwrap());
    screen.wait_for("an empty line gives no answer").await;
    // Ctrl-D at the start of a line: the terminal's end of input.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&[4]).await.unwrap();
    let status = tokio::time::timeout(HANG_BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{}", screen.text());
    assert_eq!(tool_results(&mock), ["The user gave no answer."]);
}

#[tokio::test]
async fn without_a_terminal_no_one_can_answer() {
    let mock = mock(vec![colours(), MockResponse::text("I will pick red.")]).await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "--model", MODEL, "--no-session", "ask"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        tool_results(&mock),
        [
            "No one can answer: stdin is not a terminal (agent-lsp run asks questions only on a terminal)"
        ]
    );
    assert!(!stderr(&out).contains("agent-lsp asks"), "{}", stderr(&out));
}
