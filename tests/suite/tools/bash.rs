//! `bash`: real processes: exit codes, merged output, streaming, truncation and spill files,
//! timeouts, aborts and process-group kills.

use agent_lsp::agent::tool::ToolUpdater;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::suite::support::tool_harness::{Harness, dir_names, process_alive, text, wait_gone};

#[tokio::test]
async fn runs_in_the_workspace_root_and_merges_streams_in_order() {
    let h = Harness::new();
    let out = h
        .ok_text(
            "bash",
            json!({"command": "pwd; echo out1; echo err1 >&2; echo out2"}),
        )
        .await;
    assert_eq!(out, format!("{}\nout1\nerr1\nout2", h.root.display()));
    assert_eq!(
        h.ok_text("bash", json!({"command": "true"})).await,
        "(no output)"
    );
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_output() {
    let h = Harness::new();
    assert_eq!(
        h.err_text("bash", json!({"command": "echo oops; exit 3"}))
            .await,
        "oops\n\nCommand exited with code 3"
    );
    assert_eq!(
        h.err_text("bash", json!({"command": "exit 1"})).await,
        "(no output)\n\nCommand exited with code 1"
    );
}

#[tokio::test]
async fn timeout_kills_and_reports() {
    let h = Harness::new();
    let e = h
        .err_text(
            "bash",
            json!({"command": "echo started; sleep 30", "timeout": 0.5}),
        )
        .await;
    assert_eq!(e, "started\n\nCommand timed out after 0.5 seconds");
    let e = h
        .err_text("bash", json!({"command": "true", "timeout": -1}))
        .await;
    assert!(e.starts_with("Invalid timeout: -1."), "{e}");
}

/// Runs `command` until its output contains a line `pid:N`, then aborts it.
async fn start_then_abort(h: &Harness, command: &str) -> (u32, String) {
    let cancel = CancellationToken::new();
    let (updater, mut updates) = ToolUpdater::channel();
    let call = h.call_with("bash", json!({"command": command}), cancel.clone(), updater);
    tokio::pin!(call);
    let pid = loop {
        tokio::select! {
            r = &mut call => panic!("command ended early: {r:?}"),
            Some(u) = updates.recv() => {
                if let Some(pid) = text(&u).lines().find_map(|l| l.strip_prefix("pid:")) {
                    break pid.trim().parse::<u32>().unwrap();
                }
            }
        }
    };
    assert!(process_alive(pid));
    cancel.cancel();
    let err = call.await.unwrap_err();
    (pid, err.message)
}

#[tokio::test]
async fn abort_kills_the_whole_group_without_orphans() {
    let h = Harness::new();
    let (pid, msg) = start_then_abort(&h, "sleep 1000 & echo pid:$!; wait").await;
    assert!(msg.ends_with("\n\nCommand aborted"), "{msg}");
    assert!(
        wait_gone(pid, 5).await,
        "background child {pid} survived the abort"
    );
}

#[tokio::test]
async fn processes_ignoring_sigterm_get_sigkill() {
    let h = Harness::new();
    let (pid, msg) =
        start_then_abort(&h, "trap '' TERM; sleep 1000 & echo pid:$!; wait; wait").await;
    assert!(msg.ends_with("Command aborted"), "{msg}");
    assert!(
        wait_gone(pid, 5).await,
        "SIGTERM-immune child {pid} survived"
    );
}

#[tokio::test]
async fn streams_throttled_updates_while_running() {
    let h = Harness::new();
    let (updater, mut rx) = ToolUpdater::channel();
    let out = h
        .call_with(
            "bash",
            json!({"command": "for i in 1 2 3; do echo line$i; sleep 0.3; done"}),
            CancellationToken::new(),
            updater,
        )
        .await
        .unwrap();
    assert_eq!(text(&out), "line1\nline2\nline3");
    let mut seen = Vec::new();
    while let Ok(u) = rx.try_recv() {
        seen.push(text(&u));
    }
    assert!(seen.len() >= 2, "expected streamed updates, got {seen:?}");
    assert_eq!(seen[0], "line1");
    assert!(seen.iter().all(|s| s.starts_with("line1")));
}

#[tokio::test]
async fn huge_output_is_tail_truncated_and_spilled() {
    let h = Harness::new();
    let r = h
        .call("bash", json!({"command": "seq 1 100000"}))
        .await
        .unwrap();
    let out = text(&r);
    let details = r.details.unwrap();
    let spill = details["fullOutputPath"].as_str().unwrap().to_string();
    assert!(spill.starts_with(&h.spill_dir().display().to_string()));
    assert!(out.starts_with("98001\n98002\n"), "{}", &out[..40]);
    assert!(out.ends_with(&format!(
        "100000\n\n[Showing lines 98001-100000 of 100000. Full output: {spill}]"
    )));
    let full = std::fs::read_to_string(&spill).unwrap();
    let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    assert!(full == expected, "spill file must hold the whole output");
    assert_eq!(details["truncation"]["truncatedBy"], "lines");

    let r = h
        .call(
            "bash",
            json!({"command": "head -c 200000 /dev/zero | tr '\\0' a"}),
        )
        .await
        .unwrap();
    let out = text(&r);
    let spill = r.details.unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        out.ends_with(&format!(
            "\n\n[Showing last 50.0KB of line 1 (line is 195.3KB). Full output: {spill}]"
        )),
        "{}",
        &out[out.len() - 150..]
    );
    assert_eq!(dir_names(&h.spill_dir()).len(), 2);
}

#[tokio::test]
async fn missing_working_directory_is_reported() {
    let h = Harness::new();
    std::fs::remove_dir(&h.root).unwrap();
    let e = h.err_text("bash", json!({"command": "echo hi"})).await;
    assert_eq!(
        e,
        format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            h.root.display()
        )
    );
}

#[tokio::test]
async fn dropping_a_running_call_kills_its_group() {
    let h = std::sync::Arc::new(Harness::new());
    let (updater, mut updates) = ToolUpdater::channel();
    let h2 = h.clone();
    let task = tokio::spawn(async move {
        h2.call_with(
            "bash",
            json!({"command": "sleep 1000 & echo pid:$!; wait"}),
            CancellationToken::new(),
            updater,
        )
        .await
    });
    let pid = loop {
        let u = updates.recv().await.expect("an update with the pid");
        if let Some(pid) = text(&u).lines().find_map(|l| l.strip_prefix("pid:")) {
            break pid.trim().parse::<u32>().unwrap();
        }
    };
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert!(
        wait_gone(pid, 5).await,
        "child {pid} outlived the dropped call"
    );
}

#[tokio::test]
async fn a_burst_followed_by_silence_is_still_streamed() {
    let h = Harness::new();
    let (updater, mut rx) = ToolUpdater::channel();
    let cancel = CancellationToken::new();
    let call = h.call_with(
        "bash",
        json!({"command": "echo a; sleep 0.02; echo b; sleep 1000"}),
        cancel.clone(),
        updater,
    );
    tokio::pin!(call);
    // The second line arrives inside the first throttle window; it must still be sent.
    let seen = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            tokio::select! {
                r = &mut call => panic!("ended early: {r:?}"),
                Some(u) = rx.recv() => if text(&u) == "a\nb" { break },
            }
        }
    })
    .await;
    assert!(seen.is_ok(), "the trailing output was never streamed");
    cancel.cancel();
    assert!(call.await.unwrap_err().message.ends_with("Command aborted"));
}
