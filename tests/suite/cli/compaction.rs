//! `run --compact-threshold` with the user's `settings.json`: a threshold compaction between
//! two requests of one run, in `--json` and in the session file.

use agent_lsp::testing::{MockResponse, MockUsage};
use serde_json::json;

use super::super::support::cli_run::{CliEnv, json_lines, request_texts, session_lines, stderr};
use super::{MODEL, mock};

/// The tool turn's usage passes `--compact-threshold`; `keepRecentTokens: 1` from
/// `settings.json` keeps only the call and its result, so the turn is split: its prompt is
/// summarised ("No prior history." before it) and the run goes on from the summary.
#[tokio::test]
async fn run_compacts_past_compact_threshold_in_the_middle_of_a_run() {
    let read = MockResponse {
        usage: Some(MockUsage {
            input: 500,
            output: 20,
            ..Default::default()
        }),
        ..MockResponse::tool_call("r1", "read", json!({"path": "a.txt"}))
    };
    let mock = mock(vec![
        read,
        MockResponse::text("PREFIX"),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    std::fs::write(env.project().join("a.txt"), "alpha").unwrap();
    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    let out = env
        .run(&[
            "run",
            "--json",
            "--model",
            MODEL,
            "--compact-threshold",
            "100",
            "read a.txt",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let prefix = &request_texts(&requests[1].body)[1].1;
    assert!(
        prefix.starts_with("# Conversation\n[User]: read a.txt\n\n# Instructions"),
        "{prefix}"
    );
    let summary = "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX";
    let last = request_texts(&requests[2].body);
    let roles: Vec<&str> = last.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"], "{last:?}");
    assert!(last[1].1.contains(summary), "{last:?}");

    let events = json_lines(&out);
    let compactions: Vec<_> = (events.iter())
        .filter(|e| e["type"].as_str().unwrap().starts_with("compaction_"))
        .collect();
    assert_eq!(compactions.len(), 2, "{compactions:?}");
    assert_eq!(
        compactions[0],
        &json!({"type": "compaction_start", "reason": "threshold"})
    );
    assert_eq!(compactions[1]["result"]["summary"], summary);
    assert_eq!(compactions[1]["willRetry"], false);
    let files = env.session_files();
    let lines = session_lines(&files[0]);
    let entry = lines.iter().find(|l| l["type"] == "compaction").unwrap();
    assert_eq!(entry["summary"], summary);
    let call = lines
        .iter()
        .find(|l| l["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(entry["firstKeptEntryId"], call["id"]);
}

/// A broken `settings.json` is reported and ignored; the run goes on.
#[tokio::test]
async fn a_broken_settings_file_is_reported_not_fatal() {
    let mock = mock(vec![MockResponse::text("fine")]).await;
    let env = CliEnv::with_mock(&mock);
    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        "{\"compaction\": {\"enabled\": 3}}",
    )
    .unwrap();
    let out = env.run(&["run", "--model", MODEL, "hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("settings.json"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("compaction settings are ignored"),
        "{}",
        stderr(&out)
    );
}

/// `run -c /compact [instructions]` compacts the latest session and prints pi's result: the
/// compaction's events, then the command's line with the summary; nothing reaches the loop.
#[tokio::test]
async fn run_slash_compact_compacts_the_session() {
    let mock = mock(vec![
        MockResponse::text("answer one"),
        MockResponse::text("answer two"),
        MockResponse::text("SUMMARY"),
        MockResponse::text("PREFIX"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    for (i, prompt) in ["first task", "second task"].iter().enumerate() {
        let mut args = vec!["run", "--model", MODEL];
        if i > 0 {
            args.push("-c");
        }
        args.push(prompt);
        let out = env.run(&args).await;
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = env
        .run(&["run", "--json", "-c", "/compact", "keep", "the", "API"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["compaction_start", "compaction_end", "command"],
        "{lines:?}"
    );
    assert_eq!(lines[2]["command"], "compact");
    let summary = "SUMMARY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX";
    assert_eq!(lines[2]["summary"], summary);
    assert_eq!(lines[1]["result"]["summary"], summary);
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "only the summary requests were added");
    let text = &request_texts(&requests[2].body).last().unwrap().1.clone();
    assert!(text.ends_with("Additional focus: keep the API"), "{text}");
}
