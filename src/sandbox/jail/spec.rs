//! What the daemon and the launcher tell each other: one command's jail, built in the daemon
//! ([`crate::sandbox::launch`]) and read by the launcher from its environment; and what the
//! launcher found it could do (its `--probe` answer), with the Landlock features in use.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use landlock::ABI;

/// The environment variable the spec travels in (removed before the command starts).
pub const SPEC_ENV: &str = "AGENT_LSP_JAIL_SPEC";

/// One command's jail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JailSpec {
    /// The shell and its arguments (`["-c", script]`).
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The session's roots: visible to the command wherever they are (a root under `/tmp` too),
    /// read-only unless also in `writable`.
    pub roots: Vec<PathBuf>,
    /// Folders the command may write (the session's roots; none in `readOnly`).
    pub writable: Vec<PathBuf>,
    /// Paths relative to every writable root that stay read-only and may not be created.
    pub protected: Vec<String>,
    /// Folders the command must not read (the keys `agent-lsp login` stored): covered by an
    /// empty read-only tmpfs where namespaces are used; Landlock alone cannot hide them.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// The command's private temporary directory (its `/tmp` when namespaces are used).
    pub temp_dir: PathBuf,
    /// Where protected paths the command created are copied before they are removed (an
    /// existing folder of the daemon's); `None`: not copied.
    pub quarantine: Option<PathBuf>,
    /// User, mount, PID, IPC (and network) namespaces; `false`: Landlock and seccomp only.
    pub namespaces: bool,
    pub network: JailNetwork,
    /// The Landlock features to use (never more than the kernel has).
    pub landlock: Landlock,
}

/// The command's network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum JailNetwork {
    /// No sockets out: a network namespace with a loopback that is down (when namespaces are
    /// used), TCP refused by Landlock, `connect`/`bind`/`sendto` by seccomp.
    Off,
    /// The user's network.
    On,
    /// Only the daemon's allowlist proxy: in a network namespace whose loopback carries
    /// `127.0.0.1:<port>`, relayed by the jail's init to the proxy's Unix socket.
    Proxy { socket: PathBuf, port: u16 },
}

impl JailSpec {
    pub fn to_env_value(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    pub fn from_env_value(value: &str) -> Result<JailSpec, serde_json::Error> {
        serde_json::from_str(value)
    }
}

/// The Landlock features the sandbox uses, by the ABI that brought them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Landlock {
    /// The kernel's ABI (4 at least: Linux 6.7's file system, truncate and TCP rights).
    pub abi: u8,
    /// ABI 5: ioctls on devices (a terminal's `TIOCSTI`) are refused.
    pub ioctl_dev: bool,
    /// ABI 6: signals and abstract Unix sockets stay inside the sandbox.
    pub scopes: bool,
    /// ABI 9: connecting to path Unix sockets needs a rule (seccomp refuses them below).
    pub resolve_unix: bool,
}

impl Landlock {
    pub(crate) fn at(abi: u8) -> Landlock {
        Landlock {
            abi,
            ioctl_dev: abi >= 5,
            scopes: abi >= 6,
            resolve_unix: abi >= 9,
        }
    }

    /// The crate's ABI for the rights this level handles.
    pub fn crate_abi(self) -> ABI {
        match self.abi {
            9.. => ABI::V9,
            6..=8 => ABI::V6,
            5 => ABI::V5,
            _ => ABI::V4,
        }
    }
}

/// What the launcher found it could do (its `--probe` answer).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// `None`: user, mount, PID, IPC and network namespaces, a private `/proc` and `/dev`
    /// all work; else why not.
    pub namespaces: Option<String>,
    /// `None`: a seccomp filter can be installed; else why not.
    pub seccomp: Option<String>,
}
