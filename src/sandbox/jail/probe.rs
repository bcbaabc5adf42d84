//! `agent-lsp __sandbox-exec --probe`: what a jail can use on this machine, found by doing it
//! (a disposable process enters the namespaces and builds a real view; a child installs the
//! seccomp filter). Prints a [`Probe`] as JSON.

use std::path::PathBuf;

use nix::sys::wait::{WaitStatus, waitpid};

use super::spec::{JailNetwork, JailSpec};
use super::spec::{Landlock, Probe};
use super::{mounts, seccomp, sys};

/// `dir`: an empty folder the caller made and removes (the view is built over it).
pub fn run(dir: Option<PathBuf>) -> ! {
    let dir = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("agent-lsp-probe-{}", std::process::id()))
    });
    let probe = Probe {
        seccomp: in_child(|| seccomp::install(&JailNetwork::Off)).err(),
        namespaces: namespaces(dir).err(),
    };
    println!("{}", serde_json::to_string(&probe).unwrap_or_default());
    std::process::exit(0)
}

/// Enters the namespaces here (this process is thrown away), then lets a child — PID 1 of the
/// new PID namespace — build the view a jail builds.
fn namespaces(temp: PathBuf) -> Result<(), String> {
    super::enter_namespaces(true)?;
    std::fs::create_dir_all(&temp).map_err(|e| format!("{}: {e}", temp.display()))?;
    let spec = JailSpec {
        program: "/bin/true".into(),
        args: Vec::new(),
        cwd: "/".into(),
        roots: Vec::new(),
        writable: Vec::new(),
        protected: Vec::new(),
        hidden: Vec::new(),
        temp_dir: temp.clone(),
        quarantine: None,
        namespaces: true,
        network: JailNetwork::Off,
        landlock: Landlock {
            abi: 4,
            ioctl_dev: false,
            scopes: false,
            resolve_unix: false,
        },
    };
    in_child(|| mounts::build(&spec).map_err(|e| e.to_string()))
}

/// Runs `f` in a child; its error comes back through a pipe.
fn in_child(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let (read, write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    match sys::fork().map_err(|e| format!("fork: {e}"))? {
        sys::Forked::Child => {
            drop(read);
            let code = match f() {
                Ok(()) => 0,
                Err(e) => {
                    let _ = nix::unistd::write(&write, e.as_bytes());
                    1
                }
            };
            std::process::exit(code)
        }
        sys::Forked::Parent(child) => {
            drop(write);
            let mut message = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::fs::File::from(read), &mut message);
            match waitpid(child, None) {
                Ok(WaitStatus::Exited(_, 0)) => Ok(()),
                Ok(status) if message.is_empty() => Err(format!("the probe ended with {status:?}")),
                Ok(_) => Err(String::from_utf8_lossy(&message).into_owned()),
                Err(e) => Err(format!("waitpid: {e}")),
            }
        }
    }
}
