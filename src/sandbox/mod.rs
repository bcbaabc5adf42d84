//! Commands in a sandbox (issues 19 and 30): every `bash` command that runs confined is started
//! by the launcher (`jail/`), a layered jail built with well-kept parts — Landlock (the best
//! ABI the kernel offers), user, mount, PID, IPC and network namespaces, and a seccomp filter
//! (seccompiler) — so "always allow" does not mean "anything, anywhere".
//!
//! - `workspaceWrite`: read everything the user can, write only inside the session's roots
//!   (but their protected paths) and the command's own `/tmp`; no network unless allowed, or
//!   only to allowed domains through the daemon's proxy.
//! - `readOnly`: write nowhere but `/tmp`; no network.
//! - `off`: the user's full rights, as before.
//!
//! This module is the daemon's side: the session's setting and the calls the user approved
//! (`Sandbox`), what an approval gate asks of it, and the spec of one command's jail
//! (`launch.rs`); `layers.rs` says what this machine offers, `refusal.rs` what a refusal
//! means, `proxy.rs` is the allowlist proxy.

pub mod jail;
pub mod launch;
pub mod layers;
mod policy;
pub mod proxy;
mod refusal;
mod stale;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use layers::{FORCE_NO_NAMESPACES_ENV, FORCE_UNAVAILABLE_ENV, LANDLOCK_ABI_ENV, Layers};
pub use policy::{
    CallMode, DEFAULT_PROTECTED, Network, SandboxMode, SandboxPolicy, SandboxSetting, UserSandbox,
    normalize_domain, user_sandbox,
};
pub use refusal::{refusal_lines, refusal_note};

use crate::model_registry::EnvSource;

/// Whether this machine can enforce the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    Available,
    Unavailable(String),
}

impl Availability {
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available)
    }

    /// `{"available": bool, "reason"?: string}` for status reports.
    pub fn to_json(&self) -> Value {
        match self {
            Availability::Available => json!({"available": true}),
            Availability::Unavailable(reason) => json!({"available": false, "reason": reason}),
        }
    }
}

/// This machine's layers, with the test switches of `env` applied.
pub fn machine_layers(env: &EnvSource) -> Layers {
    layers::layers(env, launch::launcher())
}

/// Files in the home folder that run or configure programs at the user's next login, shell or
/// `git`: protected, with every other dot entry of the home folder, where a writable root
/// contains the home folder.
const HOME_STARTUP: [&str; 14] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".gitconfig",
    ".ssh",
    ".config",
    ".local",
    ".pam_environment",
];

/// The daemon's own folders, protected where a writable root contains them (a workspace that
/// is the home folder): its configuration (`models.json` can run commands), its MCP trust and
/// other state, and its sessions; and, for the same case, the home folder's dot entries.
pub fn own_paths(env: &EnvSource) -> Vec<PathBuf> {
    let home = env.get_nonempty("HOME").map(PathBuf::from);
    let xdg = |var: &str, fallback: &str| {
        env.get_nonempty(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(fallback)))
            .map(|base| base.join("agent-lsp"))
    };
    let mut paths: Vec<PathBuf> = [
        env.config_dir(),
        xdg("XDG_STATE_HOME", ".local/state"),
        xdg("XDG_DATA_HOME", ".local/share"),
        env.get_nonempty("AGENT_LSP_SESSION_DIR").map(PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(home) = &home {
        paths.extend(HOME_STARTUP.iter().map(|name| home.join(name)));
        let dot_entries = std::fs::read_dir(home).into_iter().flatten().flatten();
        paths.extend(
            dot_entries
                .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path()),
        );
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Folders no sandboxed command may read: the keys `agent-lsp login` stored
/// ([`crate::credentials`]).
pub fn hidden_paths(env: &EnvSource) -> Vec<PathBuf> {
    crate::credentials::dir(env.config_dir())
        .into_iter()
        .collect()
}

/// Where a session's sandbox keeps copies of the protected paths its commands created (under
/// the daemon's state folder, protected itself).
pub fn quarantine_dir(env: &EnvSource, session_id: &str) -> Option<PathBuf> {
    let state = crate::state_file::dir(env)?;
    let safe: String = session_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    Some(state.join("sandbox-removed").join(safe))
}

/// Whether this machine can enforce the sandbox at all.
pub fn availability(env: &EnvSource) -> Availability {
    match machine_layers(env).unavailable() {
        None => Availability::Available,
        Some(reason) => Availability::Unavailable(reason),
    }
}

/// The one-time message of a front end whose sessions would sandbox commands on a machine that
/// cannot, or can only with fewer layers: `None` when every layer holds or the sandbox is off.
pub fn startup_warning(mode: Option<SandboxMode>, env: &EnvSource) -> Option<String> {
    if mode == Some(SandboxMode::Off) {
        return None;
    }
    let layers = machine_layers(env);
    if let Some(reason) = layers.unavailable() {
        return Some(format!(
            "agent-lsp: the command sandbox is unavailable ({reason}); commands that would have \
             run sandboxed ask first"
        ));
    }
    let policy = SandboxPolicy {
        mode: mode.unwrap_or_default(),
        network: Network::Off,
    };
    let gaps = gaps(&layers, &policy);
    (!gaps.is_empty()).then(|| {
        format!(
            "agent-lsp: the command sandbox has fewer layers on this machine ({}); not isolated: {}",
            fewer_layers_reason(&layers),
            gaps.join("; ")
        )
    })
}

/// Why a machine offers fewer layers, in a few words.
fn fewer_layers_reason(layers: &Layers) -> String {
    let mut why = Vec::new();
    if let Err(e) = &layers.namespaces {
        why.push(format!("no namespaces: {e}"));
    }
    if let Ok(l) = &layers.landlock
        && !l.scopes
    {
        why.push(format!("Landlock ABI {}", l.abi));
    }
    why.join("; ")
}

/// What a confined command is not kept from with these layers, in plain words.
pub fn gaps(layers: &Layers, policy: &SandboxPolicy) -> Vec<String> {
    if !policy.confines() {
        return vec!["everything: commands run with your full rights".into()];
    }
    if let Some(_reason) = layers.unavailable() {
        return vec!["everything: the sandbox is unavailable, so commands ask first".into()];
    }
    let mut gaps = Vec::new();
    if let Ok(l) = &layers.landlock {
        if !l.scopes && layers.namespaces.is_err() {
            gaps.push("signals to your other processes (Landlock ABI 6 scopes are missing and there is no PID namespace)".into());
        }
        if !l.ioctl_dev && layers.namespaces.is_err() {
            gaps.push(
                "ioctls on devices (Landlock ABI 5 is missing); the terminal is still detached"
                    .into(),
            );
        }
    }
    if layers.namespaces.is_err() {
        gaps.extend(
            [
                "metadata outside the writable roots (chmod, touch, extended attributes): no read-only mount namespace",
                "protected paths inside the workspace (.git, AGENTS.md, .mcp.json, …) can be changed; only their creation is undone",
                "System V IPC of your other processes: no IPC namespace",
                "the shared /tmp (the command's TMPDIR is private, /tmp itself is not)",
                "a command that is killed may leave background processes (no PID namespace)",
            ]
            .map(String::from),
        );
        if policy.effective_network().allowed().is_some() {
            gaps.push(
                "the network allowlist: without a network namespace commands get no network at all"
                    .into(),
            );
        }
    }
    gaps
}

/// Errors while preparing a command's jail (the command is then not run).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox's temporary directory {path} could not be created: {source}")]
    TempDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the sandbox could not be prepared: {0}")]
    Prepare(String),
}

/// One session's sandbox: its setting, the roots it may write, its own temp dir, the calls the
/// user approved to run outside it, and the machine's layers.
#[derive(Debug)]
pub struct Sandbox {
    /// The session's setting; `agent/setSandbox` changes it live (from the next command on).
    setting: Mutex<SandboxSetting>,
    pub writable_roots: Vec<PathBuf>,
    pub temp_dir: PathBuf,
    pub availability: Availability,
    pub layers: Layers,
    /// Environment variables holding the daemon's secrets (the providers' keys), removed from
    /// sandboxed commands unless the setting passes them.
    secret_env: Vec<String>,
    /// Absolute paths protected besides the setting's (the daemon's own configuration and
    /// state, where they lie inside a writable root).
    own_paths: Vec<PathBuf>,
    /// Where protected paths a command created are copied before they are removed.
    quarantine: Option<PathBuf>,
    /// Folders commands must not read (the stored keys).
    hidden: Vec<PathBuf>,
    approved: Mutex<HashSet<String>>,
    proxy: proxy::SessionProxy,
}

/// What a session's sandbox is made of, for [`Sandbox::new`].
pub struct SandboxParts {
    pub setting: SandboxSetting,
    pub writable_roots: Vec<PathBuf>,
    pub temp_dir: PathBuf,
    pub layers: Layers,
    pub secret_env: Vec<String>,
    pub own_paths: Vec<PathBuf>,
    /// Where protected paths a command created are copied before they are removed (`None`: not
    /// kept).
    pub quarantine: Option<PathBuf>,
    /// Folders commands must not read ([`hidden_paths`]).
    pub hidden: Vec<PathBuf>,
}

impl Sandbox {
    pub fn new(parts: SandboxParts) -> Arc<Sandbox> {
        // What killed daemons left in the temp folder goes first (once per process).
        stale::sweep_once(&std::env::temp_dir());
        let availability = match parts.layers.unavailable() {
            None => Availability::Available,
            Some(reason) => Availability::Unavailable(reason),
        };
        Arc::new(Sandbox {
            setting: Mutex::new(parts.setting),
            writable_roots: parts.writable_roots,
            proxy: proxy::SessionProxy::new(parts.temp_dir.with_extension("proxy")),
            temp_dir: parts.temp_dir,
            availability,
            layers: parts.layers,
            secret_env: parts.secret_env,
            own_paths: parts.own_paths,
            quarantine: parts.quarantine,
            hidden: parts.hidden,
            approved: Mutex::default(),
        })
    }

    /// A temp dir for a session's sandbox, under the system temp dir.
    pub fn temp_dir_for(session_id: &str) -> PathBuf {
        let safe: String = session_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        std::env::temp_dir().join(format!("agent-lsp-sandbox-{}-{safe}", std::process::id()))
    }

    /// The policy commands run under now.
    pub fn policy(&self) -> SandboxPolicy {
        self.setting().policy()
    }

    /// The mode was set (not defaulted): then commands the user approves by hand are sandboxed
    /// too, and only an escalation runs them outside.
    pub fn explicit(&self) -> bool {
        self.setting().mode.is_some()
    }

    pub fn setting(&self) -> SandboxSetting {
        self.setting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Changes the mode and network for the commands that start from now on (the environment
    /// passed through and the protected paths stay as the session started).
    pub fn set(&self, mode: Option<SandboxMode>, network: Network) {
        let mut setting = self.setting.lock().unwrap_or_else(|e| e.into_inner());
        setting.mode = mode;
        setting.network = network;
    }

    pub fn confines(&self) -> bool {
        self.policy().confines()
    }

    /// `agent/getState.sandbox`: `{mode, network, allowedDomains?, explicit, available,
    /// reason?, layers, notIsolated}`.
    pub fn status_json(&self) -> Value {
        let policy = self.policy();
        let mut v = self.availability.to_json();
        if let Value::Object(map) = &mut v {
            map.insert("mode".into(), json!(policy.mode.as_str()));
            let network = policy.effective_network();
            map.insert("network".into(), json!(network.is_on()));
            if let Some(domains) = network.allowed() {
                map.insert("allowedDomains".into(), json!(domains));
            }
            map.insert("explicit".into(), json!(self.explicit()));
            map.insert("layers".into(), self.active_layers(&policy));
            map.insert("notIsolated".into(), json!(self.not_isolated(&policy)));
            let refused = self.proxy.refused();
            if !refused.is_empty() {
                map.insert("refusedHosts".into(), json!(refused));
            }
        }
        v
    }

    /// Which layers a command gets under `policy` on this machine.
    fn active_layers(&self, policy: &SandboxPolicy) -> Value {
        let confined = policy.confines() && self.availability.is_available();
        let mut layers = self.layers.to_json();
        let namespaces = confined && self.layers.namespaces.is_ok();
        if let Some(map) = layers.as_object_mut() {
            for (name, on) in [
                ("landlock", confined),
                ("namespaces", namespaces),
                ("seccomp", confined),
            ] {
                if let Some(Value::Object(layer)) = map.get_mut(name) {
                    layer.insert("active".into(), json!(on));
                }
            }
            if let Some(Value::Object(ns)) = map.get_mut("namespaces")
                && namespaces
            {
                let mut kinds = vec!["user", "mount", "pid", "ipc"];
                if !policy.effective_network().is_on() {
                    kinds.push("net");
                }
                ns.insert("kinds".into(), json!(kinds));
            }
            let allowlist = policy.effective_network().allowed().is_some();
            map.insert(
                "proxy".into(),
                json!({"active": confined && allowlist && namespaces,
                       "available": self.layers.namespaces.is_ok()}),
            );
        }
        layers
    }

    /// What a confined command is not kept from on this machine, in plain words.
    pub fn not_isolated(&self, policy: &SandboxPolicy) -> Vec<String> {
        gaps(&self.layers, policy)
    }

    /// Whether a call the approval gate lets through without asking may run as the policy says:
    /// false when it would run sandboxed but the sandbox is unavailable (then it must ask).
    pub fn can_run_unasked(&self) -> bool {
        !self.confines() || self.availability.is_available()
    }

    /// The user approved `call_id` to run outside the sandbox (an escalation, an unavailable
    /// sandbox, or a hand-approved command under the default setting).
    pub fn approve_unsandboxed(&self, call_id: &str) {
        self.approved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(call_id.to_owned());
    }

    /// How `call_id` runs; an unsandboxed request without the user's approval is refused.
    pub fn call_mode(&self, call_id: &str, asks_unsandboxed: bool) -> Result<CallMode, String> {
        if !self.confines() {
            return Ok(CallMode::Unconfined);
        }
        let approved = self
            .approved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(call_id);
        match (approved, asks_unsandboxed) {
            (true, _) => Ok(CallMode::Approved),
            (false, true) => Err(
                "Not run: running a command outside the sandbox needs the user's approval, and \
                 this front end could not ask for it (or the user was not asked). The user can \
                 turn the sandbox off for the session instead."
                    .into(),
            ),
            (false, false) => Ok(CallMode::Confined(self.policy())),
        }
    }

    /// The environment variables removed from sandboxed commands.
    pub fn removed_env(&self) -> Vec<String> {
        let pass = self.setting().pass_env.unwrap_or_default();
        self.secret_env
            .iter()
            .filter(|name| !pass.contains(name))
            .cloned()
            .collect()
    }

    /// The paths relative to every writable root that are protected, plus the daemon's own
    /// folders that lie inside one (relative to it).
    pub fn protected_paths(&self) -> Vec<String> {
        let mut list = self.setting().protected_paths();
        for own in &self.own_paths {
            for root in &self.writable_roots {
                if let Ok(rel) = own.strip_prefix(root)
                    && !rel.as_os_str().is_empty()
                {
                    list.push(rel.display().to_string());
                }
            }
        }
        list.sort();
        list.dedup();
        list
    }

    /// The quarantine folder, made if needed (`None`: none configured, or it cannot be made).
    pub fn quarantine(&self) -> Option<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.quarantine.as_ref()?;
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
        made.ok().map(|()| dir.clone())
    }

    /// The session's allowlist proxy (started for the first command that needs it).
    pub fn proxy(&self) -> &proxy::SessionProxy {
        &self.proxy
    }
}

impl Drop for Sandbox {
    /// The temp dir goes with the session (best effort: a command still running may hold it).
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.temp_dir);
    }
}

/// Why an approval gate must ask about a `bash` call although it could run unasked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MustAsk {
    /// The model asked to rerun it outside the sandbox (with its justification).
    Escalation(String),
    /// It would run sandboxed, but the sandbox is unavailable.
    Unavailable(String),
}

/// What an approval request says about the sandbox (`sandbox` in `agent/beforeToolCall`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalSandbox {
    /// Whether the command runs sandboxed once approved.
    pub sandboxed: bool,
    /// `workspaceWrite`, `readOnly` or `off`: what it runs under once approved.
    pub mode: SandboxMode,
    pub network: bool,
    /// The domains a sandboxed command may reach (a network allowlist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_domains: Option<Vec<String>>,
    /// The model's reason for running it outside the sandbox (an escalation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub justification: Option<String>,
    /// Why the sandbox cannot be used here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The layers a sandboxed command runs in here (`Landlock ABI 7`, `user/mount/pid/ipc/net
    /// namespaces`, `seccomp`, `allowlist proxy`); empty when it runs unsandboxed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<String>,
    /// What a sandboxed command is not kept from on this machine (empty when nothing, or when
    /// it runs unsandboxed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_isolated: Vec<String>,
}

impl ApprovalSandbox {
    /// What approving the call means, in one sentence or two, for clients that show text only
    /// (ACP's permission request, generic LSP clients' message): sandboxed (under which rules
    /// and layers, and what is not isolated on this machine) or with the user's full rights.
    pub fn note(&self) -> String {
        if !self.sandboxed {
            return "Once approved, this command runs outside the sandbox, with your full rights."
                .into();
        }
        let network = match (&self.allowed_domains, self.network) {
            (Some(domains), _) => format!("network only to {}", domains.join(", ")),
            (None, true) => "network allowed".into(),
            (None, false) => "no network".into(),
        };
        let mut note = format!(
            "Once approved, this command runs sandboxed ({}, {network}; {}).",
            self.mode.as_str(),
            self.layers.join(", ")
        );
        if !self.not_isolated.is_empty() {
            note.push_str(" Not isolated on this machine: ");
            note.push_str(&self.not_isolated.join("; "));
            note.push('.');
        }
        note
    }
}

fn is_escalation(tool: &str, args: &Value) -> Option<String> {
    (tool == "bash" && args.get("sandbox").and_then(Value::as_bool) == Some(false)).then(|| {
        args.get("justification")
            .and_then(Value::as_str)
            .unwrap_or("(no reason given)")
            .to_owned()
    })
}

impl Sandbox {
    /// For a call the gate's policy, mode or memory would let through unasked: `Some` when it
    /// must ask anyway. Only `bash` is sandboxed; an escalation always asks, and so does a
    /// command that would run sandboxed where the sandbox is unavailable.
    pub fn must_ask(&self, tool: &str, args: &Value) -> Option<MustAsk> {
        if tool != "bash" || !self.confines() {
            return None;
        }
        if let Some(why) = is_escalation(tool, args) {
            return Some(MustAsk::Escalation(why));
        }
        match &self.availability {
            Availability::Available => None,
            Availability::Unavailable(reason) => Some(MustAsk::Unavailable(reason.clone())),
        }
    }

    /// Whether an answer about this call may be remembered ("always"): never for an escalation,
    /// which is about one run of one command.
    pub fn may_remember(&self, tool: &str, args: &Value) -> bool {
        !(self.confines() && is_escalation(tool, args).is_some())
    }

    /// What an approval of `bash` with `args` means for the sandbox; `None` for other tools.
    /// A hand-approved command runs unsandboxed under the default setting, sandboxed under an
    /// explicit one, and unsandboxed when the sandbox is unavailable or the model escalated.
    pub fn describe_approval(&self, tool: &str, args: &Value) -> Option<ApprovalSandbox> {
        if tool != "bash" {
            return None;
        }
        let justification = is_escalation(tool, args).filter(|_| self.confines());
        let unavailable = match &self.availability {
            Availability::Unavailable(reason) if self.confines() => Some(reason.clone()),
            _ => None,
        };
        let sandboxed =
            self.confines() && self.explicit() && justification.is_none() && unavailable.is_none();
        let policy = self.policy();
        let network = policy.effective_network();
        Some(ApprovalSandbox {
            sandboxed,
            mode: if sandboxed {
                policy.mode
            } else {
                SandboxMode::Off
            },
            network: !sandboxed || network.is_on(),
            allowed_domains: network.allowed().filter(|_| sandboxed).map(|d| d.to_vec()),
            justification,
            unavailable,
            layers: match sandboxed {
                true => self.layer_names(&policy),
                false => Vec::new(),
            },
            not_isolated: match sandboxed {
                true => self.not_isolated(&policy),
                false => Vec::new(),
            },
        })
    }

    /// Records the user's yes to `call_id`: it then runs as [`Sandbox::describe_approval`] said.
    pub fn approved(&self, call_id: &str, tool: &str, args: &Value) {
        if self
            .describe_approval(tool, args)
            .is_some_and(|a| !a.sandboxed && self.confines())
        {
            self.approve_unsandboxed(call_id);
        }
    }

    /// A one-line status for people (`run -v`, the one-time message).
    pub fn status_line(&self) -> String {
        let policy = self.policy();
        match (&self.availability, self.confines()) {
            (_, false) => "sandbox: off (commands run with your full rights)".into(),
            (Availability::Available, true) => {
                let gaps = self.not_isolated(&policy);
                format!(
                    "sandbox: {} for commands that run without asking{}; layers: {}{}",
                    policy.describe(),
                    if self.explicit() {
                        " and for approved ones"
                    } else {
                        ""
                    },
                    self.layers_line(&policy),
                    match gaps.is_empty() {
                        true => String::new(),
                        false => format!("; not isolated: {}", gaps.join("; ")),
                    }
                )
            }
            (Availability::Unavailable(reason), true) => format!(
                "sandbox: unavailable ({reason}); commands that would have run sandboxed ask first"
            ),
        }
    }

    fn layers_line(&self, policy: &SandboxPolicy) -> String {
        self.layer_names(policy).join(", ")
    }

    /// The layers a command gets under `policy` here, in a few words each.
    pub fn layer_names(&self, policy: &SandboxPolicy) -> Vec<String> {
        let mut parts = Vec::new();
        if let Ok(l) = &self.layers.landlock {
            parts.push(format!("Landlock ABI {}", l.abi));
        }
        match &self.layers.namespaces {
            Ok(()) => parts.push(match policy.effective_network().is_on() {
                true => "user/mount/pid/ipc namespaces".to_string(),
                false => "user/mount/pid/ipc/net namespaces".to_string(),
            }),
            Err(why) => parts.push(format!("no namespaces ({why})")),
        }
        parts.push("seccomp".into());
        if policy.effective_network().allowed().is_some() && self.layers.namespaces.is_ok() {
            parts.push("allowlist proxy".into());
        }
        parts
    }
}
