//! Stored sessions through the binary: `--session`, `--fork`, `sessions list`, pi files.

use agent_lsp::testing::MockResponse;
use serde_json::Value;

use super::super::support::cli_run::{
    CliEnv, json_lines, request_texts, session_lines, stderr, stdout,
};
use super::super::support::pi_session::assert_valid_pi_v3;
use super::{MODEL, mock};

#[tokio::test]
async fn session_and_fork_continue_stored_sessions() {
    let mock = mock(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    assert_eq!(
        env.run(&["run", "--model", MODEL, "q1"])
            .await
            .status
            .code(),
        Some(0)
    );
    let file = env.session_files().remove(0);
    let id = session_lines(&file)[0]["id"].as_str().unwrap().to_string();
    let out = env.run(&["run", "--session", &id[..13], "q2"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.run(&["run", "--fork", &id, "q3"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = env.session_files();
    assert_eq!(files.len(), 2);
    let fork = files.iter().find(|f| **f != file).unwrap();
    assert_valid_pi_v3(fork);
    let header = &session_lines(fork)[0];
    assert_eq!(header["parentSession"], file.to_str().unwrap());
    let users = |body: &Value| {
        request_texts(body)
            .into_iter()
            .filter(|(r, _)| r == "user")
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
    };
    assert_eq!(users(&mock.requests()[1].body), ["q1", "q2"]);
    assert_eq!(users(&mock.requests()[2].body), ["q1", "q2", "q3"]);
    // The source session is unchanged by the fork.
    let source_users = session_lines(&file)
        .iter()
        .filter(|l| l["message"]["role"] == "user")
        .count();
    assert_eq!(source_users, 2);
}

#[tokio::test]
async fn sessions_list_shows_id_cwd_name_time_and_count() {
    let mock = mock(vec![MockResponse::text("ok")]).await;
    let env = CliEnv::with_mock(&mock);
    assert_eq!(
        env.run(&["run", "--model", MODEL, "hello"])
            .await
            .status
            .code(),
        Some(0)
    );
    let file = env.session_files().remove(0);
    let id = session_lines(&file)[0]["id"].as_str().unwrap().to_string();
    let out = env.run(&["sessions", "list"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(env.project().to_str().unwrap()), "{row}");
    assert!(row.contains("  2  "), "two messages: {row}");
    let out = env
        .run(&[
            "sessions",
            "list",
            "--json",
            "--cwd",
            env.project().to_str().unwrap(),
        ])
        .await;
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], id.as_str());
    assert_eq!(rows[0]["messageCount"], 2);
    // `--cwd` alone means the current directory (the project, where the binary runs).
    let rows = json_lines(&env.run(&["sessions", "list", "--cwd", "--json"]).await);
    assert_eq!(rows.len(), 1);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = env
        .run(&[
            "sessions",
            "list",
            "--json",
            "--cwd",
            elsewhere.path().to_str().unwrap(),
        ])
        .await;
    assert!(json_lines(&out).is_empty());
}

/// A session file as pi writes it (tree, branch summary, compaction, custom entries) continues
/// through the binary: the model sees pi's context and the new entries hang off pi's leaf.
#[tokio::test]
async fn a_pi_session_file_continues_through_the_binary() {
    let mock = mock(vec![MockResponse::text("Continuing.")]).await;
    let env = CliEnv::with_mock(&mock);
    let dir = env.home.path().join("pi");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pi-session.jsonl");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sessions/pi-v3.jsonl"),
        &file,
    )
    .unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let project = env.project();
    let args = [
        "run",
        "--session",
        file.to_str().unwrap(),
        "--cwd",
        project.to_str().unwrap(),
        "--model",
        MODEL,
        "and now?",
    ];
    let out = env.run(&args).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let texts = request_texts(&mock.requests()[0].body);
    let users: Vec<&str> = texts
        .iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(
        users[0].starts_with("The conversation history before this point was compacted"),
        "{users:?}"
    );
    assert_eq!(users.last(), Some(&"and now?"));
    assert!(users.contains(&"Continue please"));
    assert!(
        !texts.iter().any(|(_, t)| t.contains("Branch A answer")),
        "abandoned branch left out"
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&before),
        "pi's lines are kept byte for byte"
    );
    let lines = session_lines(&file);
    let new: Vec<&Value> = lines[before.lines().count()..].iter().collect();
    let kinds: Vec<&str> = new.iter().map(|l| l["type"].as_str().unwrap()).collect();
    // pi's session used openai/gpt-4.1 at thinking "low"; this run's model (no reasoning, so
    // thinking off) is recorded before its messages.
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message"
        ]
    );
    assert_eq!(new[0]["parentId"], "a0000011");
    assert_eq!(new[1]["thinkingLevel"], "off");
    assert_valid_pi_v3(&file);
}

/// One writer per session: a second run on a session in use is refused with a clear error.
#[tokio::test]
async fn a_session_in_use_is_refused_to_a_second_run() {
    let mock = mock(vec![super::slow_text(&"busy ".repeat(600))]).await;
    let env = CliEnv::with_mock(&mock);
    let mut first = env.spawn(&["run", "--model", MODEL, "long"]);
    let mut stdout_pipe = first.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    tokio::io::AsyncReadExt::read_exact(&mut stdout_pipe, &mut byte)
        .await
        .unwrap();
    let file = env.session_files().remove(0);
    let out = env
        .run(&["run", "--session", file.to_str().unwrap(), "second"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("in use by another agent-lsp process"), "{err}");
    first.start_kill().unwrap();
    first.wait().await.unwrap();
}

/// `--session PATH` for a file that does not exist starts a new session there (as pi does).
#[tokio::test]
async fn session_with_a_new_path_creates_it() {
    let mock = mock(vec![MockResponse::text("one"), MockResponse::text("two")]).await;
    let env = CliEnv::with_mock(&mock);
    let file = env.home.path().join("mine/chat.jsonl");
    let arg = file.to_str().unwrap();
    let out = env
        .run(&["run", "--session", arg, "--model", MODEL, "q1"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_valid_pi_v3(&file);
    let out = env.run(&["run", "--session", arg, "q2"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let users = session_lines(&file)
        .iter()
        .filter(|l| l["message"]["role"] == "user")
        .count();
    assert_eq!(users, 2);
    assert!(
        env.session_files().is_empty(),
        "nothing in the default store"
    );
    let out = env.run(&["run", "--session", "no-such-id", "q"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no session matches \"no-such-id\""),
        "{}",
        stderr(&out)
    );
}

/// `--session PATH` naming a file that is not a session is refused and left byte for byte as it
/// was: torn-tail repair only ever touches real session files.
#[tokio::test]
async fn a_file_that_is_not_a_session_is_refused_untouched() {
    let mock = mock(vec![MockResponse::text("never")]).await;
    let env = CliEnv::with_mock(&mock);
    let cases: [(&str, &[u8]); 3] = [
        (
            "notes.jsonl",
            b"{\"todo\": \"buy milk\"}\nnot json either\n",
        ),
        ("one-line.jsonl", b"garbage{\n"),
        ("binary.jsonl", b"\x00\xff\xfe"),
    ];
    for (name, bytes) in cases {
        let file = env.home.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let out = env
            .run(&[
                "run",
                "--session",
                file.to_str().unwrap(),
                "--model",
                MODEL,
                "q",
            ])
            .await;
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(
            stderr(&out).contains("is not a valid session file"),
            "{name}: {}",
            stderr(&out)
        );
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{name} was modified");
    }
    assert!(mock.requests().is_empty());
}

/// `sessions changes` and `sessions revert` over a headless run's journal: a written file, a
/// file `bash` created, a conflict after the user's change, `--force`.
#[tokio::test]
async fn sessions_changes_and_revert_review_and_undo_a_run() {
    let mock = mock(vec![
        MockResponse::tool_call(
            "c1",
            "write",
            serde_json::json!({"path": "notes.txt", "content": "agent\n"}),
        ),
        MockResponse::tool_call(
            "c2",
            "bash",
            serde_json::json!({"command": "printf 'new\\n' > made.txt"}),
        ),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let project = env.project();
    std::fs::write(project.join("notes.txt"), "mine\n").unwrap();
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "change it"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = env.session_files().remove(0);
    let id = session_lines(&file)[0]["id"].as_str().unwrap().to_string();
    assert_valid_pi_v3(&file);

    let out = env.run(&["sessions", "changes", &id]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("modified  ") && text.contains("notes.txt"),
        "{text}"
    );
    assert!(
        text.contains("created") && text.contains("made.txt"),
        "{text}"
    );
    assert!(text.contains("-mine") && text.contains("+agent"), "{text}");

    std::fs::write(project.join("notes.txt"), "user again\n").unwrap();
    let out = env.run(&["sessions", "changes", &id, "--json"]).await;
    let changes: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let notes = changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("notes.txt"))
        .unwrap();
    assert_eq!(notes["userChanged"], true, "{changes}");
    let run = changes["runId"].as_str().unwrap().to_string();

    let out = env.run(&["sessions", "revert", &id, "--run", &run]).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "a conflict is a failure: {}",
        stdout(&out)
    );
    let text = stdout(&out);
    assert!(
        text.contains("conflict") && text.contains("notes.txt"),
        "{text}"
    );
    assert!(
        text.contains("reverted") && text.contains("made.txt"),
        "{text}"
    );
    assert!(!project.join("made.txt").exists());
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "user again\n"
    );

    let out = env.run(&["sessions", "revert", &id, "--force"]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "mine\n"
    );
    assert_valid_pi_v3(&file);
}

/// A file `bash` changed that no journaled tool wrote before is reviewed and reverted from the
/// command line; one over the size limit is listed as not revertible, with why.
#[tokio::test]
async fn sessions_revert_restores_a_file_bash_changed_and_names_a_too_large_one() {
    let mock = mock(vec![
        MockResponse::tool_call(
            "c1",
            "bash",
            serde_json::json!({"command": "printf 'new\\n' > old.txt; printf y >> big.bin"}),
        ),
        MockResponse::text("done"),
    ])
    .await;
    let env = CliEnv::with_mock(&mock);
    let project = env.project();
    std::fs::write(project.join("old.txt"), "old\n").unwrap();
    std::fs::write(project.join("big.bin"), vec![b'x'; (1 << 20) + 1]).unwrap();
    let out = env
        .run(&["run", "--approve", "all", "--model", MODEL, "change it"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = env.session_files().remove(0);
    let id = session_lines(&file)[0]["id"].as_str().unwrap().to_string();

    let out = env.run(&["sessions", "changes", &id]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("-old") && text.contains("+new"), "{text}");
    let big = text
        .lines()
        .find(|l| l.contains("big.bin"))
        .unwrap_or_default();
    assert!(
        big.contains("not revertible: ") && big.contains("larger than 1 MiB"),
        "{text}"
    );

    let out = env.run(&["sessions", "revert", &id]).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "big.bin is skipped: {}",
        stdout(&out)
    );
    let text = stdout(&out);
    assert!(
        text.contains("skipped") && text.contains("big.bin"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("old.txt")).unwrap(),
        "old\n"
    );
}
