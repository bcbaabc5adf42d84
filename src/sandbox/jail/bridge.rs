//! The command's only route out under a network allowlist: init listens on the namespace's
//! loopback (`127.0.0.1:<port>`, where `HTTP(S)_PROXY` point) and relays each connection to
//! the daemon's proxy over its Unix socket. Init is PID 1 and outside the command's Landlock
//! domain, so the command can neither kill, trace nor replace the relay (its own `bind` is
//! refused), and the socket it reaches is not one the command could open (`socket(AF_UNIX)`
//! is refused by seccomp).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

pub struct Relay {
    listener: TcpListener,
}

impl Relay {
    pub fn listen(port: u16) -> Result<Relay, String> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        Ok(Relay { listener })
    }

    /// Serves connections on threads of init until it exits. `dir` is the proxy's folder,
    /// opened before the mounts, and `name` the socket in it.
    pub fn serve(self, dir: OwnedFd, name: PathBuf) {
        let target = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
        let spawned = std::thread::Builder::new()
            .name("proxy-relay".into())
            .spawn(move || {
                let _keep = dir;
                for conn in self.listener.incoming().flatten() {
                    let target = target.clone();
                    let _ = std::thread::Builder::new().spawn(move || relay(conn, &target));
                }
            });
        if let Err(e) = spawned {
            eprintln!("agent-lsp sandbox: the proxy relay could not start: {e}");
        }
    }
}

fn relay(tcp: TcpStream, target: &Path) {
    let Ok(unix) = UnixStream::connect(target) else {
        let _ = (&tcp).write_all(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    };
    let (Ok(tcp2), Ok(unix2)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let upstream = std::thread::Builder::new().spawn(move || copy(tcp2, unix2));
    copy_back(unix, tcp);
    if let Ok(handle) = upstream {
        let _ = handle.join();
    }
}

fn copy(mut from: TcpStream, mut to: UnixStream) {
    let _ = pump(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

fn copy_back(mut from: UnixStream, mut to: TcpStream) {
    let _ = pump(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

fn pump(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<u64> {
    std::io::copy(from, to)
}
