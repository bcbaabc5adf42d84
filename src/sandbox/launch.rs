//! The daemon's side of a jail: which binary launches it, what it can use here (the probe),
//! and the spec and command for one `bash` call.

use std::io::PipeWriter;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use super::jail::SUBCOMMAND;
use super::jail::spec::{JailNetwork, JailSpec, Probe, SPEC_ENV};
use super::{Network, Sandbox, SandboxError, SandboxMode, SandboxPolicy};

/// The port of the proxy relay inside the command's network namespace.
pub const RELAY_PORT: u16 = 3128;

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Names the agent-lsp binary that launches jails: `agent-lsp` itself (`/proc/self/exe`, so a
/// binary replaced on disk while the daemon runs still launches the same code) or, in a
/// process that embeds the library (tests), the path of an agent-lsp binary. The first call
/// wins.
pub fn use_launcher(path: impl Into<PathBuf>) {
    let _ = LAUNCHER.set(path.into());
}

/// The launcher, if this process named one.
pub fn launcher() -> Option<&'static Path> {
    LAUNCHER.get().map(PathBuf::as_path)
}

/// Asks the launcher what it can use on this machine.
pub fn probe(exe: &Path) -> Probe {
    let failed = |why: String| Probe {
        namespaces: Some(why.clone()),
        seccomp: Some(why),
    };
    // The probe builds a jail's view over this folder inside namespaces that die with it, where
    // the folder stays busy: only this side can remove it.
    let dir = probe_dir();
    if let Err(e) = std::fs::create_dir(&dir) {
        return failed(format!("{}: {e}", dir.display()));
    }
    let output = std::process::Command::new(exe)
        .arg(SUBCOMMAND)
        .arg("--probe")
        .arg(&dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let _ = std::fs::remove_dir(&dir);
    match output {
        Ok(out) if out.status.success() => serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| failed(format!("the sandbox probe answered nonsense: {e}"))),
        Ok(out) => failed(format!(
            "the sandbox probe failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => failed(format!("cannot run {}: {e}", exe.display())),
    }
}

/// A name for one probe's folder that nobody can have planted in the shared temp folder ahead
/// of it (it is made with `create_dir`, which fails on anything already there).
fn probe_dir() -> PathBuf {
    let unique = uuid::Uuid::new_v4().simple();
    std::env::temp_dir().join(format!("agent-lsp-probe-{}-{unique}", std::process::id()))
}

/// One command's jail, ready to spawn: the launcher's command (stdout and stderr are the
/// caller's to set) and the write end of its lifeline, which the caller keeps until the
/// command has ended (dropping it ends the jail).
pub struct JailCommand {
    pub command: tokio::process::Command,
    pub lifeline: PipeWriter,
}

impl Sandbox {
    /// The jail of `script` run by `shell` in `cwd` under `policy`.
    pub fn jail(
        &self,
        policy: &SandboxPolicy,
        shell: &Path,
        script: &str,
        cwd: &Path,
    ) -> Result<JailCommand, SandboxError> {
        let launcher = launcher().ok_or_else(|| {
            SandboxError::Prepare("no sandbox launcher is configured in this process".into())
        })?;
        let landlock = self
            .layers
            .landlock
            .clone()
            .map_err(SandboxError::Prepare)?;
        create_private_dir(&self.temp_dir)?;
        let namespaces = self.layers.namespaces.is_ok();
        let network = match (policy.effective_network(), namespaces) {
            (Network::Off, _) | (Network::Allow(_), false) => JailNetwork::Off,
            (Network::On, _) => JailNetwork::On,
            (Network::Allow(domains), true) => JailNetwork::Proxy {
                socket: self.proxy().ensure(&domains)?,
                port: RELAY_PORT,
            },
        };
        let spec = JailSpec {
            program: shell.to_path_buf(),
            args: vec!["-c".into(), script.into()],
            cwd: cwd.to_path_buf(),
            roots: self.writable_roots.clone(),
            writable: match policy.mode {
                SandboxMode::WorkspaceWrite => self.writable_roots.clone(),
                SandboxMode::ReadOnly | SandboxMode::Off => Vec::new(),
            },
            protected: self.protected_paths(),
            hidden: self.hidden.clone(),
            temp_dir: self.temp_dir.clone(),
            quarantine: self.quarantine(),
            namespaces,
            network,
            landlock,
        };
        let value = spec
            .to_env_value()
            .map_err(|e| SandboxError::Prepare(format!("a path is not UTF-8: {e}")))?;
        let (reader, lifeline) = std::io::pipe()
            .map_err(|e| SandboxError::Prepare(format!("cannot make a pipe: {e}")))?;
        let mut command = tokio::process::Command::new(launcher);
        command
            .arg(SUBCOMMAND)
            .current_dir(cwd)
            .stdin(Stdio::from(reader))
            .env(SPEC_ENV, value)
            .env("AGENT_LSP_SANDBOX", policy.mode.as_str())
            .env(
                "TMPDIR",
                match namespaces {
                    true => Path::new("/tmp"),
                    false => self.temp_dir.as_path(),
                },
            );
        for name in self.removed_env() {
            command.env_remove(name);
        }
        if let JailNetwork::Proxy { port, .. } = &spec.network {
            let url = format!("http://127.0.0.1:{port}");
            for var in PROXY_VARS {
                command.env(var, &url);
            }
            command
                .env("NO_PROXY", "localhost,127.0.0.1,::1")
                .env("no_proxy", "localhost,127.0.0.1,::1")
                .env("NODE_USE_ENV_PROXY", "1");
        }
        Ok(JailCommand { command, lifeline })
    }
}

/// The variables HTTP clients read their proxy from (curl, git, npm, pip, cargo, Go, Python).
const PROXY_VARS: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

fn create_private_dir(path: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| SandboxError::TempDir {
            path: path.to_path_buf(),
            source,
        })
}
