//! What the daemon tells the launcher about one command: built in the daemon
//! ([`crate::sandbox::launch`]), read by the launcher from its environment.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::sandbox::layers::Landlock;

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
