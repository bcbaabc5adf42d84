//! Where the machine offers fewer layers: no user namespaces (a sysctl, AppArmor, a container),
//! an older Landlock, an unprivileged user. The tests force the missing feature with the test
//! switches (they only ever take a layer away) and check that what still holds holds, and that
//! the status says exactly what does not.

use std::os::unix::net::UnixListener;

use super::super::super::support::cli_run::stderr;
use super::super::super::support::outside_tmp;
use super::{attack, py};

const NO_NAMESPACES: (&str, &str) = ("AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES", "1");

#[tokio::test]
async fn without_namespaces_landlock_and_seccomp_still_hold_and_the_status_says_what_does_not() {
    let dir = outside_tmp();
    let socket = dir.path().join("s.sock");
    let _listener = UnixListener::bind(&socket).unwrap();
    let marker = format!(
        "{}.{}",
        6000 + std::process::id() % 1000,
        std::process::id()
    );
    let a = attack(
        &[
            format!("echo x > {}/out.txt", dir.path().display()),
            py(&format!(
                "import socket\ntry:\n    socket.socket(socket.AF_UNIX).connect({:?})\n    print(\"connected\")\nexcept OSError as e:\n    print(e.strerror)",
                socket.display().to_string()
            )),
            format!("setsid sleep {marker} & echo \"key=${{OPENAI_API_KEY:-none}} tmp=$TMPDIR\""),
            "echo x > CLAUDE.md".into(),
        ],
        &["-v"],
        |env| env.set(NO_NAMESPACES.0, NO_NAMESPACES.1),
    )
    .await;
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(&marker))
        .count();
    let _ = std::process::Command::new("pkill")
        .args(["-f", &marker])
        .status();
    a.assert_ran();
    let status = stderr(&a.out);
    assert!(status.contains("no namespaces (forced by"), "{status}");
    assert!(
        status.contains("not isolated: metadata outside the writable roots"),
        "{status}"
    );
    assert!(status.contains("System V IPC"), "{status}");
    let results = a.results();
    assert!(
        results[0].contains("out.txt: Permission denied"),
        "{results:?}"
    );
    assert!(!dir.path().join("out.txt").exists());
    assert_eq!(results[1], "Operation not permitted");
    assert!(
        results[2].starts_with("key=none tmp=/tmp/agent-lsp-sandbox-"),
        "{results:?}"
    );
    assert_eq!(left, 0, "a background process outlived its command");
    assert!(!a.env.project().join("CLAUDE.md").exists());
    assert!(
        results[3].contains("which the sandbox protects"),
        "{results:?}"
    );
}

#[tokio::test]
async fn an_older_landlock_without_namespaces_says_signals_are_not_isolated() {
    let a = attack(&["true".into()], &["-v"], |env| {
        env.set(NO_NAMESPACES.0, NO_NAMESPACES.1);
        env.set("AGENT_LSP_TEST_LANDLOCK_ABI", "4");
    })
    .await;
    a.assert_ran();
    let status = stderr(&a.out);
    assert!(status.contains("layers: Landlock ABI 4"), "{status}");
    assert!(
        status.contains("signals to your other processes"),
        "{status}"
    );
    assert!(status.contains("ioctls on devices"), "{status}");
    assert_eq!(a.result(), "(no output)");
}

#[tokio::test]
async fn with_every_layer_run_v_lists_them_and_nothing_is_left_out() {
    let a = attack(&["true".into()], &["-v"], |_| {}).await;
    a.assert_ran();
    let status = stderr(&a.out);
    assert!(
        status.contains("user/mount/pid/ipc/net namespaces, seccomp"),
        "{status}"
    );
    assert!(!status.contains("not isolated"), "{status}");
}

/// The jail needs no privilege: the same attack as an unprivileged user, whose ids map to
/// themselves (the tests run as root here, and switch to `nobody` for this one).
#[tokio::test]
async fn an_unprivileged_user_gets_the_same_jail() {
    let root = nix::unistd::getuid().is_root();
    let uid = match root {
        true => 65534,
        false => nix::unistd::getuid().as_raw(),
    };
    let wrapper: &[&str] = match root {
        true => &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ],
        false => &[],
    };
    let dir = outside_tmp();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let target = dir.path().join("out.txt");
    let command = format!(
        "id -u; echo in > in.txt && cat in.txt; echo x > {}",
        target.display()
    );
    let a = super::attack_through(wrapper, &[command], |env| {
        if root {
            for owned in [env.home.path(), env.project.path()] {
                chown_tree(owned, uid);
            }
        }
    })
    .await;
    a.assert_ran();
    let result = a.result();
    assert!(result.starts_with(&format!("{uid}\nin\n")), "{result}");
    assert!(
        result.contains("out.txt: Read-only file system"),
        "{result}"
    );
    assert!(!target.exists());
}

fn chown_tree(path: &std::path::Path, uid: u32) {
    let status = std::process::Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{uid}"))
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}
