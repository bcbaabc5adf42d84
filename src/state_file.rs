//! A small JSON file in agent-lsp's state folder (`$XDG_STATE_HOME/agent-lsp`, else
//! `~/.local/state/agent-lsp`) that remembers the user's answers per project: read whole,
//! written whole. The trust files of `.mcp.json` servers, hooks and permission rules use it.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model_registry::EnvSource;

/// agent-lsp's state folder; none without `XDG_STATE_HOME` or `HOME`.
pub fn dir(env: &EnvSource) -> Option<PathBuf> {
    let state = env
        .get_nonempty("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(env.get_nonempty("HOME")?).join(".local/state")))?;
    Some(state.join("agent-lsp"))
}

/// What the file at `path` holds; the default when there is none (or no path), or when it is
/// malformed, which is logged as `what` being malformed, so the user is asked again.
pub fn read<T: DeserializeOwned + Default>(path: Option<&Path>, what: &str) -> T {
    let Some(text) = path.and_then(|p| std::fs::read(p).ok()) else {
        return T::default();
    };
    serde_json::from_slice(&text).unwrap_or_else(|e| {
        tracing::warn!(%e, "{what} is malformed; asking again");
        T::default()
    })
}

/// Writes `value` to `path` as pretty JSON, through a temporary file renamed over it (a reader
/// never sees half of it), creating the folder.
pub fn write<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temp = path.with_extension(format!("json.{}.tmp", uuid::Uuid::new_v4().simple()));
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path)
}

/// The key a project's answers are kept under: its folder, canonical where it can be.
pub fn project_key(root: &Path) -> String {
    std::fs::canonicalize(root)
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}
