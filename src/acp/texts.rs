//! The text of a file an `edit` or `write` call changes, as ACP diffs show it: before the call
//! (kept when it is approved) and after it.

use std::path::PathBuf;

use serde_json::Value;

use crate::tools::{self, Workspace, WorkspaceError};

/// The file an `edit` or `write` works on, and its text now (`None`: it does not exist).
pub async fn current_text(
    ws: &dyn Workspace,
    tool: &str,
    args: &Value,
) -> Option<(PathBuf, Option<String>)> {
    if tool != "edit" && tool != "write" {
        return None;
    }
    let path = args.get("path").and_then(Value::as_str)?;
    let abs = ws.resolve(path).ok()?;
    match ws.read(abs.clone()).await {
        Ok(snapshot) => Some((abs, Some(lf_text(&snapshot.bytes)))),
        Err(WorkspaceError::NotFound(_)) => Some((abs, None)),
        Err(_) => None,
    }
}

pub fn lf_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    tools::normalize_to_lf(tools::strip_bom(&text).1)
}
