//! Commands in a sandbox (issue 19): `bash` runs under Landlock rules that the child applies to
//! itself between fork and exec, so "always allow" does not mean "anything, anywhere".
//!
//! - `workspaceWrite`: read everything the user can, write only inside the session's roots and
//!   the sandbox's own temporary directory; no TCP unless the policy allows network.
//! - `readOnly`: write nowhere but the temporary directory; no TCP.
//! - `off`: the user's full rights, as before.
//!
//! The rules (file system: Landlock ABI 4's rights, TCP bind/connect: ABI 4's network rights)
//! are built in the parent, where allocating and opening paths is safe; the child only calls
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`, two system calls. A kernel
//! without those rights is reported as unavailable and nothing is pretended: the caller asks
//! the user instead of running the command sandboxed.
//!
//! Landlock's network rights cover TCP only; where network is off the child also moves into a
//! new user and network namespace (its own ids mapped to themselves), whose only interface is a
//! loopback that is down, so UDP fails too. Where user namespaces are not allowed, only TCP is
//! refused.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::model_registry::EnvSource;

/// The Landlock ABI whose rights the sandbox needs (Linux 6.7: file system, truncate, TCP).
const NEEDED_ABI: ABI = ABI::V4;

/// Test-only switch: when set to `1` the sandbox reports itself unavailable.
pub const FORCE_UNAVAILABLE_ENV: &str = "AGENT_LSP_TEST_SANDBOX_UNAVAILABLE";

/// Device files every shell writes to, writable in every sandboxed mode.
const WRITABLE_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// A session's sandbox setting for commands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SandboxMode {
    #[default]
    WorkspaceWrite,
    ReadOnly,
    Off,
}

impl SandboxMode {
    pub fn parse(s: &str) -> Option<SandboxMode> {
        match s {
            "workspaceWrite" => Some(SandboxMode::WorkspaceWrite),
            "readOnly" => Some(SandboxMode::ReadOnly),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspaceWrite",
            SandboxMode::ReadOnly => "readOnly",
            SandboxMode::Off => "off",
        }
    }
}

/// Mode plus network switch (`sandboxNetwork`; `readOnly` never has network).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    pub network: bool,
}

impl SandboxPolicy {
    pub fn off() -> Self {
        SandboxPolicy {
            mode: SandboxMode::Off,
            network: true,
        }
    }

    pub fn confines(self) -> bool {
        self.mode != SandboxMode::Off
    }

    fn network_allowed(self) -> bool {
        match self.mode {
            SandboxMode::WorkspaceWrite => self.network,
            SandboxMode::ReadOnly => false,
            SandboxMode::Off => true,
        }
    }

    /// Plain words for results and approvals.
    pub fn describe(self) -> String {
        match self.mode {
            SandboxMode::Off => "not sandboxed".into(),
            SandboxMode::WorkspaceWrite if self.network => {
                "sandboxed (workspaceWrite: writes only inside the workspace and its temp dir; network allowed)".into()
            }
            SandboxMode::WorkspaceWrite => {
                "sandboxed (workspaceWrite: writes only inside the workspace and its temp dir; no network)".into()
            }
            SandboxMode::ReadOnly => {
                "sandboxed (readOnly: no writes except its temp dir; no network)".into()
            }
        }
    }
}

/// Whether this kernel can enforce the sandbox.
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

/// Probes the kernel: a ruleset with every right the sandbox handles must be creatable.
pub fn availability(env: &EnvSource) -> Availability {
    if env.get(FORCE_UNAVAILABLE_ENV) == Some("1") {
        return Availability::Unavailable(format!("forced by {FORCE_UNAVAILABLE_ENV}"));
    }
    match base_ruleset(false).and_then(|r| r.create()) {
        Ok(_) => Availability::Available,
        Err(e) => Availability::Unavailable(format!(
            "this kernel cannot enforce Landlock ABI 4 (file system and TCP rules): {e}"
        )),
    }
}

/// The one-time message of a front end whose sessions would sandbox commands on a kernel that
/// cannot: `None` when the sandbox is available or turned off.
pub fn startup_warning(mode: Option<SandboxMode>, env: &EnvSource) -> Option<String> {
    if mode == Some(SandboxMode::Off) {
        return None;
    }
    match availability(env) {
        Availability::Available => None,
        Availability::Unavailable(reason) => Some(format!(
            "agent-lsp: the command sandbox is unavailable ({reason}); commands that would have \
             run sandboxed ask first"
        )),
    }
}

/// Errors while preparing the rules (the command is then not run).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox could not be prepared: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("the sandbox's temporary directory {path} could not be created: {source}")]
    TempDir {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a session asked for: `mode: None` is the default (commands that run without asking are
/// sandboxed `workspaceWrite`; a command the user approves by hand runs as approved).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SandboxSetting {
    pub mode: Option<SandboxMode>,
    pub network: bool,
}

impl SandboxSetting {
    pub fn policy(self) -> SandboxPolicy {
        SandboxPolicy {
            mode: self.mode.unwrap_or_default(),
            network: self.network,
        }
    }
}

/// How one `bash` call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallMode {
    /// Under the session's policy.
    Confined(SandboxPolicy),
    /// With the user's full rights: the policy is `off`.
    Unconfined,
    /// With the user's full rights because the user approved exactly this call.
    Approved,
}

/// One session's sandbox: its policy, the roots it may write, its own temp dir, and the calls
/// the user approved to run outside it.
#[derive(Debug)]
pub struct Sandbox {
    /// The session's setting; `agent/setSandbox` changes it live (from the next command on).
    setting: Mutex<SandboxSetting>,
    pub writable_roots: Vec<PathBuf>,
    pub temp_dir: PathBuf,
    pub availability: Availability,
    approved: Mutex<HashSet<String>>,
}

impl Sandbox {
    pub fn new(
        setting: SandboxSetting,
        writable_roots: Vec<PathBuf>,
        temp_dir: PathBuf,
        availability: Availability,
    ) -> Arc<Sandbox> {
        Arc::new(Sandbox {
            setting: Mutex::new(setting),
            writable_roots,
            temp_dir,
            availability,
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

    fn setting(&self) -> SandboxSetting {
        *self.setting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the setting for the commands that start from now on.
    pub fn set(&self, setting: SandboxSetting) {
        *self.setting.lock().unwrap_or_else(|e| e.into_inner()) = setting;
    }

    pub fn confines(&self) -> bool {
        self.policy().confines()
    }

    /// `{"mode", "network", "explicit", "available", "reason"?}` for status reports.
    pub fn status_json(&self) -> Value {
        let mut v = self.availability.to_json();
        if let Value::Object(map) = &mut v {
            map.insert("mode".into(), json!(self.policy().mode.as_str()));
            map.insert("network".into(), json!(self.policy().network));
            map.insert("explicit".into(), json!(self.explicit()));
        }
        v
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

    /// Builds the rules in the parent; the child applies them with [`install`].
    pub fn prepare(&self, policy: SandboxPolicy) -> Result<Prepared, SandboxError> {
        create_private_dir(&self.temp_dir)?;
        let read = AccessFs::from_read(NEEDED_ABI);
        let all = AccessFs::from_all(NEEDED_ABI);
        let mut writable: Vec<&Path> = vec![&self.temp_dir];
        if policy.mode == SandboxMode::WorkspaceWrite {
            writable.extend(self.writable_roots.iter().map(PathBuf::as_path));
        }
        let mut ruleset = base_ruleset(!policy.network_allowed())?.create()?;
        // Paths that cannot be opened (a root removed meanwhile, no /dev/tty) get no rule:
        // the sandbox then refuses them, which is the safe direction.
        if let Ok(fd) = PathFd::new("/") {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, read))?;
        }
        for path in writable {
            if let Ok(fd) = PathFd::new(path) {
                ruleset = ruleset.add_rule(PathBeneath::new(fd, all))?;
            }
        }
        for dev in WRITABLE_DEVICES {
            if let Ok(fd) = PathFd::new(dev) {
                ruleset =
                    ruleset.add_rule(PathBeneath::new(fd, AccessFs::from_file(NEEDED_ABI)))?;
            }
        }
        Ok(Prepared {
            ruleset,
            leave_network: (!policy.network_allowed()).then(IdMaps::current),
        })
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
    /// The model's reason for running it outside the sandbox (an escalation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub justification: Option<String>,
    /// Why the sandbox cannot be used here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
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
        Some(ApprovalSandbox {
            sandboxed,
            mode: if sandboxed {
                self.policy().mode
            } else {
                SandboxMode::Off
            },
            network: !sandboxed || self.policy().network_allowed(),
            justification,
            unavailable,
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
        match (&self.availability, self.confines()) {
            (_, false) => "sandbox: off (commands run with your full rights)".into(),
            (Availability::Available, true) => format!(
                "sandbox: {} for commands that run without asking{}",
                self.policy().describe(),
                if self.explicit() {
                    " and for approved ones"
                } else {
                    ""
                }
            ),
            (Availability::Unavailable(reason), true) => format!(
                "sandbox: unavailable ({reason}); commands that would have run sandboxed ask first"
            ),
        }
    }
}

/// A ruleset handling every file right of [`NEEDED_ABI`] (and TCP bind/connect when `no_net`),
/// refusing to be created on a kernel that cannot enforce all of them.
fn base_ruleset(no_net: bool) -> Result<Ruleset, landlock::RulesetError> {
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(NEEDED_ABI))?;
    if no_net {
        ruleset.handle_access(AccessNet::from_all(NEEDED_ABI))
    } else {
        Ok(ruleset)
    }
}

fn create_private_dir(path: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::DirBuilderExt;
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path);
    made.map_err(|source| SandboxError::TempDir {
        path: path.to_path_buf(),
        source,
    })
}

/// What the child applies to itself before it execs the shell, all built in the parent.
pub struct Prepared {
    ruleset: RulesetCreated,
    /// `Some`: leave the network too (a new user and network namespace, where only a loopback
    /// that is down exists), so UDP is cut as well as TCP.
    leave_network: Option<IdMaps>,
}

/// The user's own ids, mapped to themselves in the new user namespace (so files keep their
/// owner as tools such as git see it), as the lines `/proc/self/{u,g}id_map` take.
struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdMaps {
    fn current() -> IdMaps {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        IdMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// In the child: a new user and network namespace with the ids mapped. Where user namespaces
/// are not allowed, the command keeps the network namespace it has (Landlock still refuses
/// TCP); once inside a new namespace, a failed id map fails the spawn.
fn leave_network(maps: &IdMaps) -> std::io::Result<()> {
    use nix::sched::{CloneFlags, unshare};
    if unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).is_err() {
        return Ok(());
    }
    write_proc(c"/proc/self/setgroups", b"deny")?;
    write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
    write_proc(c"/proc/self/gid_map", &maps.gid_map)
}

/// open + write + close: three system calls, nothing allocated.
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    use nix::fcntl::{OFlag, open};
    use nix::sys::stat::Mode;
    let errno = |e: nix::errno::Errno| std::io::Error::from_raw_os_error(e as i32);
    let fd = open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty()).map_err(errno)?;
    match nix::unistd::write(&fd, bytes).map_err(errno)? {
        n if n == bytes.len() => Ok(()),
        _ => Err(std::io::Error::from_raw_os_error(libc::EIO)),
    }
}

/// Makes the child apply `prepared` to itself before it execs the shell.
#[allow(unsafe_code)]
pub fn install(cmd: &mut tokio::process::Command, prepared: Prepared) {
    let Prepared {
        ruleset,
        leave_network: maps,
    } = prepared;
    let mut slot = Some(ruleset);
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // work is allowed. It allocates nothing: the ruleset and the id maps were built (paths
    // opened, memory allocated) in the parent; leaving the network is `unshare` plus open,
    // write and close of three /proc files; `restrict_self` makes two system calls (`prctl`,
    // `landlock_restrict_self`) and closes the ruleset's fd. Errors are errno values (no
    // allocation), and any failure fails the spawn instead of running unconfined.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(maps) = &maps {
                leave_network(maps)?;
            }
            match slot.take().map(RulesetCreated::restrict_self) {
                Some(Ok(_)) => Ok(()),
                Some(Err(_)) | None => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
            }
        });
    }
}

/// Lines of `output` that look like the sandbox refusing something (Landlock answers EACCES,
/// which shells and tools print as "Permission denied"). Not proof: the user's own
/// permissions give the same error, which is why the note says "may".
pub fn refusal_lines(output: &str) -> Vec<&str> {
    const MARKS: [&str; 4] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        // No network: outside TCP's Landlock rules (UDP), the namespace has no usable interface.
        "Network is unreachable",
    ];
    output
        .lines()
        .filter(|l| MARKS.iter().any(|m| l.contains(m)))
        .take(5)
        .collect()
}

/// The plain-words note appended to a failed sandboxed command's result.
pub fn refusal_note(policy: SandboxPolicy, output: &str) -> Option<String> {
    let lines = refusal_lines(output);
    if lines.is_empty() {
        return None;
    }
    let quoted: Vec<String> = lines.iter().map(|l| format!("  {l}")).collect();
    Some(format!(
        "This command ran {}. It may have failed because the sandbox refused an access:\n{}\n\
         If the command really needs that access, call bash again with the same command, \
         \"sandbox\": false and a \"justification\" saying why: the user will be asked to \
         approve running it outside the sandbox.",
        policy.describe(),
        quoted.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_their_wire_names() {
        for m in [
            SandboxMode::WorkspaceWrite,
            SandboxMode::ReadOnly,
            SandboxMode::Off,
        ] {
            assert_eq!(SandboxMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(SandboxMode::parse("workspace-write"), None);
    }

    #[test]
    fn this_kernel_has_the_sandbox_and_the_switch_forces_it_off() {
        assert_eq!(
            availability(&EnvSource::from_pairs::<&str, &str>([])),
            Availability::Available
        );
        let forced = availability(&EnvSource::from_pairs([(FORCE_UNAVAILABLE_ENV, "1")]));
        assert!(!forced.is_available());
    }

    #[test]
    fn refusal_note_quotes_permission_errors_only() {
        let policy = SandboxPolicy::default();
        assert_eq!(refusal_note(policy, "make: *** [all] Error 2"), None);
        let note = refusal_note(policy, "ok\nbash: /etc/x: Permission denied\n");
        assert!(note.is_some_and(|n| n.contains("/etc/x: Permission denied")));
    }
}
