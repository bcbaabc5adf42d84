//! Finding 2: Landlock has no right for `connect` on a path Unix socket, so `tmux -S`, D-Bus,
//! `docker.sock`, `ssh-agent` or `nvim --listen` ran commands outside; and classes found on the
//! way: abstract sockets (not scoped when the network is on) and `io_uring`, which makes sockets
//! without the system calls a filter sees.

use std::io::ErrorKind;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};

use super::super::super::support::outside_tmp;
use super::{attack, py};

fn connect_probe(path_or_abstract: &str) -> String {
    py(&format!(
        r#"
import socket
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect({path_or_abstract})
    s.sendall(b"pwned")
    print("connected")
except OSError as e:
    print("refused:", e.strerror)
"#
    ))
}

/// Nobody connected to `listener` (the command ended before the check, so a connection it
/// made would be waiting).
fn assert_never_connected(listener: &UnixListener) {
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the sandboxed command connected: {other:?}"),
    }
}

#[tokio::test]
async fn unix_sockets_outside_are_unreachable_with_or_without_network() {
    let dir = outside_tmp();
    let path = dir.path().join("agent.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let name = format!("agent-lsp-test-{}", std::process::id());
    let abstract_listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    let probes = [
        connect_probe(&format!("{:?}", path.display().to_string())),
        connect_probe(&format!("\"\\0{name}\"")),
    ];
    for args in [&[][..], &["--sandbox-network"][..]] {
        let a = attack(&probes, args, |_| {}).await;
        a.assert_ran();
        for result in a.results() {
            assert!(
                result.starts_with("refused: Operation not permitted"),
                "{args:?}: {result}"
            );
        }
    }
    assert_never_connected(&listener);
    assert_never_connected(&abstract_listener);
}

#[tokio::test]
async fn a_tmux_server_outside_gets_no_keys() {
    let dir = outside_tmp();
    let socket = dir.path().join("tmux.sock");
    let marker = dir.path().join("PWNED");
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(args)
            .status()
            .expect("tmux is installed (Debian's tmux)")
    };
    assert!(tmux(&["new-session", "-d", "sh"]).success());
    let send = format!(
        "tmux -S {} send-keys 'touch {}' Enter",
        socket.display(),
        marker.display()
    );
    let a = attack(&[send], &[], |_| {}).await;
    // Let the server's shell run whatever it got, then ask it: a command it ran is done by the
    // time it answers a second, later one.
    let probe = dir.path().join("probe");
    tmux(&["send-keys", &format!("touch {}", probe.display()), "Enter"]);
    let waited = (0..500).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        probe.exists()
    });
    tmux(&["kill-server"]);
    a.assert_ran();
    assert!(waited, "the tmux server did not run the test's own command");
    assert!(!marker.exists(), "{}", a.result());
    assert!(
        a.result().contains("Operation not permitted"),
        "{}",
        a.result()
    );
}

/// `io_uring_setup`, the kernel keyring and an x32 system call, made directly (no library
/// wraps them).
const RAW_CALLS: &str = r#"
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(void) {
    char params[120];
    memset(params, 0, sizeof params);
    long ring = syscall(SYS_io_uring_setup, 4, params);
    printf("io_uring: %s\n", ring >= 0 ? "created" : strerror(errno));
    long key = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
    printf("keyring: %s\n", key >= 0 ? "readable" : strerror(errno));
#ifdef __x86_64__
    /* getpid through the x32 ABI: a filter keyed on x86-64 numbers would not see it. The
       guard refuses it before the kernel looks (a kernel without x32 would say ENOSYS). */
    long x32 = syscall(0x40000000 | SYS_getpid);
    printf("x32: %s\n", x32 >= 0 ? "ran" : strerror(errno));
#else
    printf("x32: Operation not permitted\n");
#endif
    return 0;
}
"#;

#[tokio::test]
async fn io_uring_the_kernel_keyring_and_x32_calls_are_refused() {
    let dir = outside_tmp();
    let source = dir.path().join("raw.c");
    let binary = dir.path().join("raw");
    std::fs::write(&source, RAW_CALLS).unwrap();
    let built = std::process::Command::new("cc")
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .status()
        .expect("a C compiler (cc) is installed");
    assert!(built.success());
    let a = attack(
        &[binary.display().to_string()],
        &["--sandbox-network"],
        |_| {},
    )
    .await;
    a.assert_ran();
    assert_eq!(
        a.result(),
        "io_uring: Operation not permitted\nkeyring: Operation not permitted\n\
         x32: Operation not permitted"
    );
}
