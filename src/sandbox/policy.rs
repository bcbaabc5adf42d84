//! What a session asks of the sandbox: the mode, the network, the environment passed through
//! and the protected paths, as settings and as the policy one command runs under.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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

/// What sandboxed commands may reach on the network (`sandboxNetwork`: `false`, `true` or a
/// list of domains).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// No sockets out at all (the default).
    #[default]
    Off,
    /// Everything the user's machine reaches.
    On,
    /// Only these hosts, through a proxy the daemon runs (`*.example.com` matches subdomains).
    Allow(Vec<String>),
}

impl Network {
    /// `true`, `false`, or a list of domains; anything else is a wire error.
    pub fn from_json(value: &Value) -> Result<Network, String> {
        match value {
            Value::Null | Value::Bool(false) => Ok(Network::Off),
            Value::Bool(true) => Ok(Network::On),
            Value::Array(items) => {
                let mut domains = Vec::with_capacity(items.len());
                for item in items {
                    let domain = item
                        .as_str()
                        .ok_or("sandboxNetwork: a domain must be a string")?;
                    domains.push(normalize_domain(domain)?);
                }
                Ok(Network::Allow(domains))
            }
            _ => Err("sandboxNetwork must be true, false or a list of domains".into()),
        }
    }

    /// Unrestricted network.
    pub fn is_on(&self) -> bool {
        matches!(self, Network::On)
    }

    /// The allowed domains, when the network goes through the allowlist proxy.
    pub fn allowed(&self) -> Option<&[String]> {
        match self {
            Network::Allow(domains) => Some(domains),
            Network::Off | Network::On => None,
        }
    }

    fn words(&self) -> String {
        match self {
            Network::Off => "no network".into(),
            Network::On => "network allowed".into(),
            Network::Allow(domains) if domains.is_empty() => {
                "network only through the proxy, which allows no host".into()
            }
            Network::Allow(domains) => format!("network only to {}", domains.join(", ")),
        }
    }
}

/// `sandboxNetwork` on the wire: `true`, `false` (or `null`), or a list of domains.
impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Network::from_json(&value).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::Off => s.serialize_bool(false),
            Network::On => s.serialize_bool(true),
            Network::Allow(domains) => domains.serialize(s),
        }
    }
}

/// A domain as the allowlist compares it: lower case, no trailing dot; `*.` prefixes allowed.
pub fn normalize_domain(domain: &str) -> Result<String, String> {
    let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let bare = d.strip_prefix("*.").unwrap_or(&d);
    let valid = !bare.is_empty()
        && bare
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if valid {
        Ok(d)
    } else {
        Err(format!(
            "sandboxNetwork: '{domain}' is not a domain (letters, digits, '-', '.', an optional '*.' prefix)"
        ))
    }
}

/// Paths inside every writable root that sandboxed commands may read but not change or
/// create: what would let a command persist past itself (git hooks and config, instructions
/// the next session loads, MCP servers it starts, editors' project settings that run programs).
pub const DEFAULT_PROTECTED: [&str; 11] = [
    ".git",
    ".agent-lsp",
    ".mcp.json",
    "AGENTS.md",
    "CLAUDE.md",
    ".agents",
    ".claude",
    ".vscode",
    ".idea",
    ".zed",
    ".helix",
];

/// Mode plus network: what one command runs under (`readOnly` never has network).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    pub network: Network,
}

impl SandboxPolicy {
    pub fn off() -> Self {
        SandboxPolicy {
            mode: SandboxMode::Off,
            network: Network::On,
        }
    }

    pub fn confines(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// The network the command really gets (`readOnly` has none).
    pub fn effective_network(&self) -> Network {
        match self.mode {
            SandboxMode::WorkspaceWrite => self.network.clone(),
            SandboxMode::ReadOnly => Network::Off,
            SandboxMode::Off => Network::On,
        }
    }

    /// Plain words for results and approvals.
    pub fn describe(&self) -> String {
        match self.mode {
            SandboxMode::Off => "not sandboxed".into(),
            SandboxMode::WorkspaceWrite => format!(
                "sandboxed (workspaceWrite: writes only inside the workspace and its temp dir; {})",
                self.effective_network().words()
            ),
            SandboxMode::ReadOnly => {
                "sandboxed (readOnly: no writes except its temp dir; no network)".into()
            }
        }
    }

    /// `details.sandbox` of a sandboxed command's result: `{mode, network, allowedDomains?}`.
    pub fn details(&self) -> Value {
        let network = self.effective_network();
        let mut v = json!({"mode": self.mode.as_str(), "network": network.is_on()});
        if let (Some(domains), Value::Object(map)) = (network.allowed(), &mut v) {
            map.insert("allowedDomains".into(), json!(domains));
        }
        v
    }
}

/// What a session asked for: `mode: None` is the default (commands that run without asking are
/// sandboxed `workspaceWrite`; a command the user approves by hand runs as approved).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxSetting {
    pub mode: Option<SandboxMode>,
    pub network: Network,
    /// Environment variables passed to sandboxed commands although they hold secrets of the
    /// daemon (the providers' keys are removed otherwise); `None`: the user's settings.
    pub pass_env: Option<Vec<String>>,
    /// Paths (relative to each writable root) kept read-only; `None`: the user's settings,
    /// else [`DEFAULT_PROTECTED`].
    pub protected: Option<Vec<String>>,
}

impl SandboxSetting {
    pub fn policy(&self) -> SandboxPolicy {
        SandboxPolicy {
            mode: self.mode.unwrap_or_default(),
            network: self.network.clone(),
        }
    }

    /// The protected paths in effect.
    pub fn protected_paths(&self) -> Vec<String> {
        match &self.protected {
            Some(list) => list.clone(),
            None => DEFAULT_PROTECTED.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The user's own sandbox settings: `sandbox` in `$XDG_CONFIG_HOME/agent-lsp/settings.json`
/// (`{"env": [...], "protectedPaths": [...]}`), used where the front end sets neither. Only the
/// user's file counts: a project's files never loosen the sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserSandbox {
    #[serde(default)]
    pub env: Option<Vec<String>>,
    #[serde(default)]
    pub protected_paths: Option<Vec<String>>,
}

impl SandboxSetting {
    /// Fills what the front end left unset from the user's settings.
    pub fn with_user(mut self, user: &UserSandbox) -> SandboxSetting {
        if self.pass_env.is_none() {
            self.pass_env = user.env.clone();
        }
        if self.protected.is_none() {
            self.protected = user.protected_paths.clone();
        }
        self
    }
}

/// Reads the user's [`UserSandbox`] from `settings.json` in `config_dir`; a missing file or key
/// is the default, a broken one an error for the user (and the default).
pub fn user_sandbox(config_dir: Option<&std::path::Path>) -> Result<UserSandbox, String> {
    let Some(path) = config_dir.map(|d| d.join("settings.json")) else {
        return Ok(UserSandbox::default());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(UserSandbox::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        sandbox: Option<UserSandbox>,
    }
    serde_json::from_str::<File>(&text)
        .map(|f| f.sandbox.unwrap_or_default())
        .map_err(|e| format!("{}: {e} (its sandbox settings are ignored)", path.display()))
}

/// How one `bash` call runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallMode {
    /// Under the session's policy.
    Confined(SandboxPolicy),
    /// With the user's full rights: the policy is `off`.
    Unconfined,
    /// With the user's full rights because the user approved exactly this call.
    Approved,
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
    fn network_takes_a_switch_or_a_list_of_domains() {
        assert_eq!(Network::from_json(&json!(false)), Ok(Network::Off));
        assert_eq!(Network::from_json(&json!(true)), Ok(Network::On));
        assert_eq!(
            Network::from_json(&json!(["Crates.io.", "*.npmjs.org"])),
            Ok(Network::Allow(vec![
                "crates.io".into(),
                "*.npmjs.org".into()
            ]))
        );
        assert!(Network::from_json(&json!(["a b"])).is_err());
        assert!(Network::from_json(&json!(3)).is_err());
    }

    #[test]
    fn read_only_never_has_network() {
        let policy = SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            network: Network::On,
        };
        assert_eq!(policy.effective_network(), Network::Off);
        assert_eq!(
            policy.details(),
            json!({"mode": "readOnly", "network": false})
        );
    }
}
