//! `bash` in the sandbox (issue 19): real Landlock rules on this machine's kernel, real
//! processes, temp dirs and a loopback TCP listener only.

use agent_lsp::agent::tool::AgentToolResult;
use agent_lsp::sandbox::{Availability, Network, SandboxMode, SandboxPolicy};
use serde_json::{Value, json};

use crate::suite::support::outside_tmp;
use crate::suite::support::tool_harness::{Harness, text};

fn policy(mode: SandboxMode, network: bool) -> SandboxPolicy {
    let network = match network {
        true => Network::On,
        false => Network::Off,
    };
    SandboxPolicy { mode, network }
}

fn workspace_write(network: bool) -> Harness {
    Harness::sandboxed(
        policy(SandboxMode::WorkspaceWrite, network),
        Availability::Available,
    )
}

async fn run(h: &Harness, command: &str) -> AgentToolResult {
    match h.call("bash", json!({"command": command})).await {
        Ok(r) => r,
        Err(e) => panic!("a sandboxed run is always a result, got the error {e}"),
    }
}

fn sandbox_details(r: &AgentToolResult) -> Value {
    r.details
        .as_ref()
        .and_then(|d| d.get("sandbox"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn workspace_write_writes_inside_reads_outside_and_refuses_writes_outside() {
    let h = workspace_write(false);
    let far = outside_tmp();
    let outside = far.path().to_path_buf();
    std::fs::write(outside.join("notes.txt"), "outside text").unwrap();

    let ok = run(
        &h,
        "echo inside > in.txt && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    )
    .await;
    assert_eq!(ok.is_error, None, "{}", text(&ok));
    assert_eq!(text(&ok), "tmp");
    assert_eq!(h.get_str("in.txt"), "inside\n");
    assert_eq!(
        sandbox_details(&ok),
        json!({"mode": "workspaceWrite", "network": false})
    );

    let read = run(&h, &format!("cat {}/notes.txt", outside.display())).await;
    assert_eq!(text(&read), "outside text");

    let refused = run(&h, &format!("echo x > {}/new.txt", outside.display())).await;
    assert_eq!(refused.is_error, Some(true));
    let t = text(&refused);
    assert!(t.contains("new.txt: Read-only file system"), "{t}");
    assert!(t.contains("the sandbox refused"), "{t}");
    assert!(!outside.join("new.txt").exists());
    assert_eq!(
        sandbox_details(&refused),
        json!({"mode": "workspaceWrite", "network": false})
    );
}

#[tokio::test]
async fn loopback_tcp_is_refused_without_network_and_allowed_with_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let refused = run(&workspace_write(false), &connect).await;
    assert_eq!(refused.is_error, Some(true));
    let t = text(&refused);
    assert!(t.contains("socket: Operation not permitted"), "{t}");
    assert!(t.contains("no network"), "{t}");

    let allowed = run(&workspace_write(true), &connect).await;
    assert_eq!(text(&allowed), "connected");
    assert_eq!(
        sandbox_details(&allowed),
        json!({"mode": "workspaceWrite", "network": true})
    );
}

#[tokio::test]
async fn udp_is_cut_without_network_and_allowed_with_it() {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let send = format!("exec 3<>/dev/udp/127.0.0.1/{port} && echo ping >&3 && echo sent");

    let cut = run(&workspace_write(false), &send).await;
    assert_eq!(cut.is_error, Some(true));
    let t = text(&cut);
    assert!(t.contains("socket: Operation not permitted"), "{t}");
    assert!(t.contains("the sandbox refused"), "{t}");

    let allowed = run(&workspace_write(true), &send).await;
    assert_eq!(text(&allowed), "sent");
    let mut buf = [0u8; 16];
    let (n, _) = socket.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"ping\n");
}

#[tokio::test]
async fn files_made_in_the_sandbox_keep_the_users_ownership() {
    use std::os::unix::fs::MetadataExt;
    let h = workspace_write(false);
    let ok = run(&h, "touch owned.txt && stat -c %u owned.txt && id -u").await;
    let me = std::fs::metadata(h.root.as_path()).unwrap().uid();
    assert_eq!(text(&ok), format!("{me}\n{me}"));
    assert_eq!(std::fs::metadata(h.path("owned.txt")).unwrap().uid(), me);
}

#[tokio::test]
async fn read_only_refuses_writes_in_the_workspace_but_not_in_its_temp_dir() {
    let h = Harness::sandboxed(policy(SandboxMode::ReadOnly, true), Availability::Available);
    h.put("kept.txt", "old");
    let refused = run(&h, "echo new > kept.txt").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("kept.txt: Read-only file system"),
        "{}",
        text(&refused)
    );
    assert_eq!(h.get_str("kept.txt"), "old");
    let tmp = run(&h, "echo t > \"$TMPDIR/scratch\" && cat kept.txt").await;
    assert_eq!(text(&tmp), "old");
    // The temp dir is the session's: it goes when the session (its tools and sandbox) goes.
    let temp_dir = h.sandbox.as_ref().unwrap().temp_dir.clone();
    assert!(temp_dir.join("scratch").exists());
    let Harness {
        base,
        tools,
        sandbox,
        ..
    } = h;
    drop((tools, sandbox));
    assert!(base.path().join("root").exists());
    assert!(!temp_dir.exists());
}

#[tokio::test]
async fn off_runs_unconfined_and_says_nothing_about_a_sandbox() {
    let h = Harness::sandboxed(SandboxPolicy::off(), Availability::Available);
    let outside = h.outside();
    let ok = h
        .ok_text(
            "bash",
            json!({"command": format!("echo x > {}/free.txt", outside.display())}),
        )
        .await;
    assert_eq!(ok, "(no output)");
    assert!(outside.join("free.txt").exists());
}

#[tokio::test]
async fn an_unavailable_sandbox_refuses_to_run_rather_than_pretend() {
    let h = Harness::sandboxed(
        policy(SandboxMode::WorkspaceWrite, false),
        Availability::Unavailable("forced for the test".into()),
    );
    let e = h
        .err_text("bash", json!({"command": "echo ran > ran.txt"}))
        .await;
    assert!(
        e.contains("sandbox is unavailable (forced for the test)"),
        "{e}"
    );
    assert!(!h.path("ran.txt").exists());
}

#[tokio::test]
async fn an_unsandboxed_rerun_runs_only_once_the_user_approved_that_call() {
    let h = workspace_write(false);
    let far = outside_tmp();
    let target = far.path().join("escalated.txt");
    let command = format!("echo x > {}", target.display());
    let refused = run(&h, &command).await;
    assert!(
        text(&refused).contains("\"sandbox\": false"),
        "{}",
        text(&refused)
    );
    assert!(!target.exists());

    let ask = json!({"command": command, "sandbox": false, "justification": "needs it"});
    let e = h.call("bash", ask.clone()).await.unwrap_err().message;
    assert!(e.contains("needs the user's approval"), "{e}");
    assert!(!target.exists());

    // The approval gate records the user's yes for this call id; the harness calls "call-1".
    let sandbox = h.sandbox.clone().unwrap();
    sandbox.approve_unsandboxed("call-1");
    let ran = run_args(&h, ask.clone()).await;
    assert_eq!(ran.is_error, None, "{}", text(&ran));
    assert!(target.exists());
    assert_eq!(
        sandbox_details(&ran),
        json!({"mode": "off", "approvedByUser": true})
    );
    // One approval, one run.
    std::fs::remove_file(&target).unwrap();
    assert!(h.call("bash", ask).await.is_err());
    assert!(!target.exists());
}

async fn run_args(h: &Harness, args: Value) -> AgentToolResult {
    match h.call("bash", args).await {
        Ok(r) => r,
        Err(e) => panic!("unexpected error {e}"),
    }
}

#[tokio::test]
async fn the_allowlist_proxy_refuses_other_hosts_and_the_status_lists_them() {
    let h = Harness::sandboxed(
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            network: Network::Allow(vec!["crates.io".into()]),
        },
        Availability::Available,
    );
    let refused = run(
        &h,
        "curl -sS -o /dev/null -w '%{http_code}' http://example.com/",
    )
    .await;
    assert_eq!(text(&refused), "403");
    assert_eq!(
        sandbox_details(&refused),
        json!({"mode": "workspaceWrite", "network": false, "allowedDomains": ["crates.io"]})
    );
    let status = h.sandbox.as_ref().unwrap().status_json();
    assert_eq!(status["refusedHosts"], json!(["example.com:80"]));
    assert_eq!(status["allowedDomains"], json!(["crates.io"]));
    assert_eq!(status["layers"]["proxy"]["active"], true);
    assert_eq!(
        status["layers"]["namespaces"]["kinds"],
        json!(["user", "mount", "pid", "ipc", "net"])
    );
}

/// The probe of what a jail can use builds a view over a folder inside namespaces that die with
/// it; the folder must not stay behind (it did once per process: thousands in a day of tests).
#[test]
fn the_probe_leaves_no_folder_behind() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_agent-lsp"));
    let ours = format!("agent-lsp-probe-{}-", std::process::id());
    let left = || {
        std::fs::read_dir(std::env::temp_dir())
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&ours))
                    .count()
            })
            .unwrap_or(0)
    };
    for _ in 0..3 {
        let probe = agent_lsp::sandbox::launch::probe(exe);
        assert_eq!(probe.namespaces, None, "namespaces unavailable: {probe:?}");
    }
    assert_eq!(
        left(),
        0,
        "probe folders left in {}",
        std::env::temp_dir().display()
    );
}
