//! `agent-lsp run` and background jobs: a line (or a `job_update` JSON event) per start and end,
//! and no process of a job left once the run is over.

use agent_lsp::testing::MockResponse;
use serde_json::json;

use super::super::support::cli_run::{CliEnv, json_lines, request_texts, stderr, stdout, types};
use super::super::support::jobs::{gone, marker, sleepers};
use super::{MODEL, mock};

/// A job that prints a line every 50 ms, with a child of its own; the model starts it and says
/// it is done.
fn script(mark: &str) -> Vec<MockResponse> {
    let command = format!("sleep 900.{mark} & while true; do echo tick; sleep 0.05; done");
    vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            json!({"command": command, "background": true}),
        ),
        MockResponse::text("done"),
    ]
}

/// The pid `bash` reported in its result (the sandbox launcher's).
fn launcher(mock: &agent_lsp::testing::MockProvider) -> u32 {
    let requests = mock.requests();
    let texts = request_texts(&requests.last().unwrap().body);
    let (_, result) = texts.iter().find(|(role, _)| role == "tool").unwrap();
    let after = result.split("(pid ").nth(1).expect("a pid in the result");
    after.split(')').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn the_runs_jobs_end_with_it_and_each_start_and_end_is_a_line() {
    let mark = marker();
    let mock = mock(script(&mark)).await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "start it"])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    gone(&mark, &[launcher(&mock)]).await;
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let started = format!(
        "[job-1 started in the background: sleep 900.{mark} & while true; do echo tick; sleep 0.05; done]"
    );
    let at = |line: &str| lines.iter().position(|l| *l == line);
    let (start, end) = (at(&started), at("[job-1 killed]"));
    assert!(start.is_some() && end.is_some(), "{text}");
    // Killed once the run is over, before the usage line.
    assert!(start < at("done") && at("done") < end, "{text}");
    assert!(lines.last().unwrap().contains("tokens"), "{text}");
}

#[tokio::test]
async fn json_runs_tell_each_job_update_before_agent_settled() {
    let mark = marker();
    let mock = mock(script(&mark)).await;
    let env = CliEnv::with_mock(&mock);
    let out = env
        .run(&[
            "run",
            "--json",
            "--approve",
            "all",
            "--model",
            MODEL,
            "start it",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    gone(&mark, &[launcher(&mock)]).await;
    assert!(sleepers(&mark).is_empty());
    let events = json_lines(&out);
    let kinds = types(&events);
    assert_eq!(kinds.last().unwrap(), "agent_settled", "{kinds:?}");
    let updates: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "job_update")
        .collect();
    assert_eq!(updates.len(), 2, "{kinds:?}");
    assert_eq!(updates[0]["job"]["jobId"], "job-1");
    assert_eq!(updates[0]["job"]["status"], "running");
    assert_eq!(updates[0]["job"]["exitCode"], serde_json::Value::Null);
    assert_eq!(updates[1]["job"]["status"], "killed");
    assert!(updates[1]["job"]["endedAt"].is_number());
    // The start comes within the call that started the job, the end after the run's end.
    let at = |kind: &str| kinds.iter().position(|k| k == kind).unwrap();
    let first_update = kinds.iter().position(|k| k == "job_update").unwrap();
    let last_update = kinds.iter().rposition(|k| k == "job_update").unwrap();
    assert!(at("tool_execution_start") < first_update, "{kinds:?}");
    assert!(first_update < at("tool_execution_end"), "{kinds:?}");
    assert!(at("agent_end") < last_update, "{kinds:?}");
}
