//! Daemon tests: the session file's writer lock is released on every way the daemon ends, and
//! a lock file left by a killed daemon (naming a pid that is now another live process) never
//! blocks resuming.

use std::path::{Path, PathBuf};

use super::*;

/// How the first daemon ends.
#[derive(Clone, Copy, Debug)]
enum End {
    ShutdownExit,
    StdinClosed,
    Kill9,
}

/// A daemon sharing `home` (its sessions) with the one before it.
async fn spawn_in(home: &Path, mock: &MockProvider) -> LspClient {
    let mut env: Vec<(String, String)> = vec![("HOME".into(), home.display().to_string())];
    for dir in ["config", "data", "state", "cache"] {
        env.push((
            format!("XDG_{}_HOME", dir.to_uppercase()),
            home.join(dir).display().to_string(),
        ));
    }
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env,
    })
    .await;
    client
        .initialize(LspClient::agent_caps(false), json!({}))
        .await;
    client
}

/// Every `*.jsonl.lock` under `dir`.
fn lock_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.to_string_lossy().ends_with(".jsonl.lock") {
                found.push(path);
            }
        }
    }
    found
}

async fn resume_after(end: End) {
    let mock = MockProvider::start(MockScript {
        responses: vec![MockResponse::text("first"), MockResponse::text("second")],
    })
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut first = spawn_in(home.path(), &mock).await;
    let (session, run, _) = prompt(&first, json!({"message": "hello"})).await;
    first.wait_settled(&session, &run).await;
    assert_eq!(lock_files(home.path()).len(), 1, "{end:?}: held while open");

    // While the first daemon lives, a second one cannot take the session over.
    let second = spawn_in(home.path(), &mock).await;
    let busy = second
        .request_raw("agent/newSession", json!({"resume": session}))
        .await;
    assert!(
        busy["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("in use")),
        "{end:?}: {busy}"
    );

    match end {
        End::ShutdownExit => {
            first.request("shutdown", Value::Null).await;
            first.notify("exit", Value::Null).await;
        }
        End::StdinClosed => first.close_stdin().await,
        End::Kill9 => first.child.start_kill().unwrap(),
    }
    let status = tokio::time::timeout(HANG_BOUND, first.child.wait())
        .await
        .unwrap()
        .unwrap();
    match end {
        End::Kill9 => {
            // The lock file stays, naming a pid that a live process (our parent) now has.
            let locks = lock_files(home.path());
            assert_eq!(locks.len(), 1, "{locks:?}");
            std::fs::write(&locks[0], std::os::unix::process::parent_id().to_string()).unwrap();
        }
        _ => {
            assert!(status.code().is_some(), "{end:?}: {status}");
            assert!(
                lock_files(home.path()).is_empty(),
                "{end:?}: the session was closed on the way out"
            );
        }
    }

    let resumed = second
        .request("agent/newSession", json!({"resume": session}))
        .await;
    assert_eq!(resumed["sessionId"], session.as_str(), "{end:?}");
    let (_, run2, _) = prompt(&second, json!({"sessionId": session, "message": "again"})).await;
    let events = second.wait_settled(&session, &run2).await;
    assert!(kinds(&events).contains(&"agent_end".to_owned()), "{end:?}");
}

#[tokio::test]
async fn the_lock_is_released_after_shutdown_and_exit() {
    resume_after(End::ShutdownExit).await;
}

#[tokio::test]
async fn the_lock_is_released_when_stdin_closes() {
    resume_after(End::StdinClosed).await;
}

#[tokio::test]
async fn a_killed_daemons_lock_file_with_a_reused_pid_does_not_block_resuming() {
    resume_after(End::Kill9).await;
}
