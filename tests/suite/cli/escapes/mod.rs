//! The sandbox tried as an attacker would (issue 30): a hostile repository or a prompt
//! injection makes the model run commands under `agent-lsp run --approve all` (the default
//! sandbox: `workspaceWrite`, no network). Each test is one way out that the sandbox of issue
//! 19 left open, driven through the real binary and checked from outside the sandbox.

mod fallback;
mod files;
mod network;
mod processes;
mod secrets;
mod sockets;
mod terminal;

use std::process::Output;

use agent_lsp::testing::{MockProvider, MockResponse};
use serde_json::json;

use super::super::support::cli_run::{CliEnv, request_texts, stderr};
use super::{MODEL, mock};

/// A run of scripted `bash` calls and what came of it.
pub struct Attack {
    pub env: CliEnv,
    pub mock: MockProvider,
    pub out: Output,
}

/// The tool results the model got from `mock`, in call order.
pub fn results_of(mock: &MockProvider) -> Vec<String> {
    let requests = mock.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    request_texts(&last.body)
        .into_iter()
        .filter(|(role, _)| role == "tool")
        .map(|(_, text)| text)
        .collect()
}

/// `agent-lsp run --approve all --model … go`: the run of an attack, as a command line.
pub const RUN: [&str; 6] = ["run", "--approve", "all", "--model", MODEL, "go"];

impl Attack {
    /// The tool results the model got, in call order.
    pub fn results(&self) -> Vec<String> {
        results_of(&self.mock)
    }

    /// The one tool result of a single-command attack.
    pub fn result(&self) -> String {
        self.results().into_iter().next().unwrap_or_default()
    }

    pub fn assert_ran(&self) {
        assert_eq!(
            self.out.status.code(),
            Some(0),
            "stderr: {}",
            stderr(&self.out)
        );
    }
}

/// The model calls `bash` with each of `commands` in turn, then answers "done".
pub fn script(commands: &[String]) -> Vec<MockResponse> {
    let mut responses: Vec<MockResponse> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| MockResponse::tool_call(&format!("c{i}"), "bash", json!({"command": c})))
        .collect();
    responses.push(MockResponse::text("done"));
    responses
}

/// Runs `commands` through `agent-lsp run --approve all --model … <args> go`, with `setup`
/// applied to the environment first.
pub async fn attack(commands: &[String], args: &[&str], setup: impl FnOnce(&mut CliEnv)) -> Attack {
    let mock = mock(script(commands)).await;
    let mut env = CliEnv::with_mock(&mock);
    setup(&mut env);
    let mut argv = vec!["run", "--approve", "all", "--model", MODEL];
    argv.extend_from_slice(args);
    argv.push("go");
    let out = env.run(&argv).await;
    Attack { env, mock, out }
}

/// Like [`attack`], the binary started through `wrapper` (see `CliEnv::command_through`).
pub async fn attack_through(
    wrapper: &[&str],
    commands: &[String],
    setup: impl FnOnce(&mut CliEnv),
) -> Attack {
    let mock = mock(script(commands)).await;
    let mut env = CliEnv::with_mock(&mock);
    setup(&mut env);
    let out = env.command_through(wrapper, &RUN).output().await.unwrap();
    Attack { env, mock, out }
}

/// A Python one-liner as a shell word (the probes are written in Python: it is on every
/// machine this runs on, and says exactly which call failed).
pub fn py(code: &str) -> String {
    format!("python3 -c '{}'", code.replace('\'', r"'\''"))
}
