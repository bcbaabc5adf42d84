//! Whether the user allowed a project's `.mcp.json` to start its servers.
//!
//! A project file can start programs, so its servers start only after the user said yes for that
//! project. The answer is remembered under `$XDG_STATE_HOME/agent-lsp/mcp-trust.json`, per project
//! root, together with the servers it was given for: a file that later adds a server or changes a
//! command asks again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::mcp::config::ServerConfig;
use crate::model_registry::EnvSource;

/// The remembered answer for a project's current servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    Allowed,
    Denied,
    /// Never asked, or asked about other servers than the file has now.
    Unknown,
}

#[derive(Default, Serialize, Deserialize)]
struct Stored {
    #[serde(default)]
    projects: BTreeMap<String, Decision>,
}

#[derive(Serialize, Deserialize)]
struct Decision {
    allowed: bool,
    /// `name: command line` of each server the answer was given for.
    servers: Vec<String>,
}

/// The trust file (none without a state directory: then every project is unknown).
#[derive(Clone, Debug)]
pub struct TrustStore {
    path: Option<PathBuf>,
}

impl TrustStore {
    pub fn new(env: &EnvSource) -> Self {
        let state = env
            .get_nonempty("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from(env.get_nonempty("HOME")?).join(".local/state")));
        TrustStore {
            path: state.map(|s| s.join("agent-lsp").join("mcp-trust.json")),
        }
    }

    pub fn at(path: PathBuf) -> Self {
        TrustStore { path: Some(path) }
    }

    /// The answer remembered for `root` with exactly these `servers`.
    pub fn decision<'a>(
        &self,
        root: &Path,
        servers: impl IntoIterator<Item = &'a ServerConfig>,
    ) -> Trust {
        let stored = self.read();
        match stored.projects.get(&key(root)) {
            Some(d) if d.servers == fingerprint(servers) => match d.allowed {
                true => Trust::Allowed,
                false => Trust::Denied,
            },
            _ => Trust::Unknown,
        }
    }

    /// Remembers the user's answer for `root`'s current `servers`.
    pub fn remember<'a>(
        &self,
        root: &Path,
        servers: impl IntoIterator<Item = &'a ServerConfig>,
        allowed: bool,
    ) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut stored = self.read();
        let decision = Decision {
            allowed,
            servers: fingerprint(servers),
        };
        stored.projects.insert(key(root), decision);
        let text = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let temp = path.with_extension("json.tmp");
        std::fs::write(&temp, text)?;
        std::fs::rename(&temp, path)
    }

    fn read(&self) -> Stored {
        let Some(text) = self.path.as_ref().and_then(|p| std::fs::read(p).ok()) else {
            return Stored::default();
        };
        serde_json::from_slice(&text).unwrap_or_else(|e| {
            tracing::warn!(%e, "the MCP trust file is malformed; asking again");
            Stored::default()
        })
    }
}

fn key(root: &Path) -> String {
    std::fs::canonicalize(root)
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}

fn fingerprint<'a>(servers: impl IntoIterator<Item = &'a ServerConfig>) -> Vec<String> {
    let mut lines: Vec<String> = servers
        .into_iter()
        .map(|s| format!("{}: {}", s.name, s.describe()))
        .collect();
    lines.sort();
    lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mcp::config::{Origin, parse_servers};

    fn servers(value: serde_json::Value) -> Vec<ServerConfig> {
        let origin = Origin::Project(PathBuf::from("/p/.mcp.json"));
        parse_servers(&value, &origin, &EnvSource::default()).0
    }

    #[test]
    fn answers_are_remembered_per_project_and_a_changed_file_asks_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::at(dir.path().join("state/trust.json"));
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let first = servers(json!({"fs": {"command": "npx", "args": ["fs"]}}));
        assert_eq!(store.decision(&project, &first), Trust::Unknown);
        store.remember(&project, &first, true).unwrap();
        assert_eq!(store.decision(&project, &first), Trust::Allowed);
        let other = dir.path();
        assert_eq!(store.decision(other, &first), Trust::Unknown, "per project");
        let changed = servers(json!({"fs": {"command": "npx", "args": ["evil"]}}));
        assert_eq!(store.decision(&project, &changed), Trust::Unknown);
        store.remember(&project, &changed, false).unwrap();
        assert_eq!(store.decision(&project, &changed), Trust::Denied);
    }
}
