//! The `mcpServers` configuration, in the shape users already write for other agents:
//! `{"mcpServers": {"NAME": {"command", "args"?, "env"?, "cwd"?} | {"url", "headers"?}}}`, each
//! entry optionally with `enabled`, `startupTimeoutMs`, `toolTimeoutMs` and `approval`.
//!
//! Sources, later overriding earlier by name: the user's file, the project's `.mcp.json`, the
//! editor's `initializationOptions.mcpServers`, `run --mcp-config FILE`s, and an ACP client's
//! list. A broken file or entry is an error naming the file and the key; the rest still loads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::model_registry::EnvSource;

/// How long a server may take to start before the run goes on without it.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);

/// Where an entry came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `$XDG_CONFIG_HOME/agent-lsp/mcp.json`.
    User(PathBuf),
    /// A project's `.mcp.json`: its servers start only once the user trusts the project.
    Project(PathBuf),
    /// `initializationOptions.mcpServers` of the editor.
    Editor,
    /// `agent-lsp run --mcp-config FILE`.
    File(PathBuf),
    /// The list an ACP client sent with the session.
    Client,
}

impl Origin {
    fn describe(&self) -> String {
        match self {
            Origin::User(p) | Origin::Project(p) | Origin::File(p) => p.display().to_string(),
            Origin::Editor => "initializationOptions.mcpServers".into(),
            Origin::Client => "the client's mcpServers".into(),
        }
    }
}

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (`headers` already expanded).
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// `allow | ask | block`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Allow,
    Ask,
    Block,
}

/// The `approval` of an entry: for the whole server, or per tool (the rest ask).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Approval {
    pub server: Option<Policy>,
    pub tools: BTreeMap<String, Policy>,
}

impl Approval {
    /// The configured policy for `tool` of this server, if any.
    pub fn for_tool(&self, tool: &str) -> Option<Policy> {
        self.tools.get(tool).copied().or(self.server)
    }
}

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    pub approval: Approval,
    pub origin: Origin,
    /// The entry as written in its source, before `${VAR}` expansion: what the user's trust in
    /// a project's server covers (`trust.rs`), every field of it.
    pub written: Map<String, Value>,
}

impl ServerConfig {
    /// What identifies a running server: two sessions with the same key share it. Everything
    /// that decides how the server runs or how its tools are approved is in it, so a session
    /// whose entry changed any of that gets a server of its own.
    pub fn key(&self) -> String {
        format!(
            "{}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
            self.name, self.transport, self.approval, self.startup_timeout, self.tool_timeout
        )
    }

    /// The command line or URL, as shown to the user in a trust prompt.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// A broken file or entry: where, which key, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {key}: {message}")]
pub struct ConfigError {
    pub origin: String,
    pub key: String,
    pub message: String,
}

/// The merged configuration of a session: servers by name (later sources won).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
}

impl McpConfig {
    /// Adds the servers of one source, replacing earlier ones of the same name.
    pub fn merge(&mut self, servers: Vec<ServerConfig>) {
        for server in servers {
            self.servers.insert(server.name.clone(), server);
        }
    }

    /// The servers that come from a project's `.mcp.json`.
    pub fn project_servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers
            .values()
            .filter(|s| matches!(s.origin, Origin::Project(_)))
    }
}

/// The user's file: `$XDG_CONFIG_HOME/agent-lsp/mcp.json` (else `~/.config/…`).
pub fn user_file(env: &EnvSource) -> Option<PathBuf> {
    Some(env.config_dir()?.join("mcp.json"))
}

/// The project's file: `.mcp.json` in the project root.
pub fn project_file(root: &Path) -> PathBuf {
    root.join(".mcp.json")
}

/// Reads a file holding `{"mcpServers": {…}}`; a missing file is no servers.
pub fn load_file(
    path: &Path,
    origin: Origin,
    env: &EnvSource,
) -> (Vec<ServerConfig>, Vec<ConfigError>) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => {
            return (
                Vec::new(),
                vec![error(&origin, "", format!("cannot read: {e}"))],
            );
        }
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => {
            return (
                Vec::new(),
                vec![error(&origin, "", format!("not JSON: {e}"))],
            );
        }
    };
    match value.get("mcpServers") {
        Some(servers) => parse_servers(servers, &origin, env),
        None if value.is_object() => (Vec::new(), Vec::new()),
        None => (Vec::new(), vec![error(&origin, "", "expected an object")]),
    }
}

/// Parses an `mcpServers` object: each good entry, and an error per broken one.
pub fn parse_servers(
    servers: &Value,
    origin: &Origin,
    env: &EnvSource,
) -> (Vec<ServerConfig>, Vec<ConfigError>) {
    let Some(map) = servers.as_object() else {
        return (
            Vec::new(),
            vec![error(origin, "mcpServers", "expected an object")],
        );
    };
    let mut good = Vec::new();
    let mut errors = Vec::new();
    for (name, entry) in map {
        match parse_entry(name, entry, origin, env) {
            Ok(server) => good.push(server),
            Err((key, message)) => errors.push(error(origin, &key, message)),
        }
    }
    (good, errors)
}

fn error(origin: &Origin, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        origin: origin.describe(),
        key: key.to_owned(),
        message: message.into(),
    }
}

type EntryError = (String, String);

fn parse_entry(
    name: &str,
    entry: &Value,
    origin: &Origin,
    env: &EnvSource,
) -> Result<ServerConfig, EntryError> {
    let at = |key: &str| {
        format!(
            "mcpServers.{name}{}{key}",
            if key.is_empty() { "" } else { "." }
        )
    };
    let fail = |key: &str, message: &str| (at(key), message.to_owned());
    if name.is_empty() {
        return Err(fail("", "a server needs a name"));
    }
    let entry = entry
        .as_object()
        .ok_or_else(|| fail("", "expected an object with `command` or `url`"))?;
    let transport = match (entry.get("command"), entry.get("url")) {
        (Some(_), Some(_)) => return Err(fail("", "has both `command` and `url`; choose one")),
        (Some(command), None) => Transport::Stdio {
            command: string(command, env).map_err(|m| fail("command", &m))?,
            args: strings(entry.get("args"), env).map_err(|m| fail("args", &m))?,
            env: string_map(entry.get("env"), env).map_err(|m| fail("env", &m))?,
            cwd: match entry.get("cwd") {
                None | Some(Value::Null) => None,
                Some(cwd) => Some(PathBuf::from(
                    string(cwd, env).map_err(|m| fail("cwd", &m))?,
                )),
            },
        },
        (None, Some(url)) => {
            let url = string(url, env).map_err(|m| fail("url", &m))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(fail("url", "must start with http:// or https://"));
            }
            Transport::Http {
                url,
                headers: string_map(entry.get("headers"), env).map_err(|m| fail("headers", &m))?,
            }
        }
        (None, None) => return Err(fail("", "needs `command` (a program to start) or `url`")),
    };
    let millis = |key: &str, default: Duration| match entry.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| fail(key, "expected a positive number of milliseconds")),
    };
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        enabled: match entry.get("enabled") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(fail("enabled", "expected true or false")),
        },
        startup_timeout: millis("startupTimeoutMs", DEFAULT_STARTUP_TIMEOUT)?,
        tool_timeout: millis("toolTimeoutMs", DEFAULT_TOOL_TIMEOUT)?,
        approval: approval(entry.get("approval")).map_err(|(key, m)| fail(&key, &m))?,
        origin: origin.clone(),
        written: entry.clone(),
    })
}

fn approval(value: Option<&Value>) -> Result<Approval, EntryError> {
    let policy = |v: &Value, key: &str| {
        serde_json::from_value::<Policy>(v.clone()).map_err(|_| {
            (
                key.to_owned(),
                "expected \"allow\", \"ask\" or \"block\"".to_owned(),
            )
        })
    };
    match value {
        None | Some(Value::Null) => Ok(Approval::default()),
        Some(v @ Value::String(_)) => Ok(Approval {
            server: Some(policy(v, "approval")?),
            tools: BTreeMap::new(),
        }),
        Some(Value::Object(o)) => {
            let mut tools = BTreeMap::new();
            let listed = o.get("tools").and_then(Value::as_object);
            if o.keys().any(|k| k != "tools") || (o.contains_key("tools") && listed.is_none()) {
                let why = "expected a policy or {\"tools\": {\"NAME\": policy}}";
                return Err(("approval".into(), why.into()));
            }
            for (tool, v) in listed.into_iter().flatten() {
                tools.insert(tool.clone(), policy(v, &format!("approval.tools.{tool}"))?);
            }
            Ok(Approval {
                server: None,
                tools,
            })
        }
        Some(_) => Err((
            "approval".into(),
            "expected a policy or {\"tools\": {…}}".into(),
        )),
    }
}

fn string(value: &Value, env: &EnvSource) -> Result<String, String> {
    let text = value.as_str().ok_or("expected a string")?;
    expand(text, env)
}

fn strings(value: Option<&Value>, env: &EnvSource) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(|v| string(v, env)).collect(),
        Some(_) => Err("expected an array of strings".into()),
    }
}

fn string_map(value: Option<&Value>, env: &EnvSource) -> Result<BTreeMap<String, String>, String> {
    let empty = Map::new();
    let map = match value {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(map)) => map,
        Some(_) => return Err("expected an object of strings".into()),
    };
    map.iter()
        .map(|(k, v)| Ok((k.clone(), string(v, env).map_err(|e| format!("{k}: {e}"))?)))
        .collect()
}

/// Expands `${VAR}` from the environment (so a token never sits in a file); `$${` is a literal
/// `${`. An unset variable is an error naming it.
pub fn expand(text: &str, env: &EnvSource) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            out.push_str(&rest[..at - 1]);
            out.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find('}') else {
            return Err(format!("unclosed ${{ in {text:?}"));
        };
        let name = &rest[at + 2..at + end];
        let value = env
            .get(name)
            .ok_or_else(|| format!("the environment variable {name} is not set"))?;
        out.push_str(value);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
