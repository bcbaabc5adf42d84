//! `ls {path?, limit?}`: a directory's entries (dotfiles included), sorted case-insensitively,
//! `/` after directories.

use serde::Deserialize;
use serde_json::{Value, json};

use super::args::Limit;
use super::common::{self, Call, ToolArgs, ToolContext};
use crate::agent::tool::{AgentToolResult, ToolError};

/// An `ls` call's arguments.
#[derive(Deserialize)]
pub struct LsArgs {
    path: Option<String>,
    limit: Limit<500>,
}

impl ToolArgs for LsArgs {
    const NAME: &str = "ls";
    const DESCRIPTION: &str = "List a directory's entries (including dotfiles), sorted alphabetically, with a trailing '/' on directories. \
Defaults to the workspace root; at most 500 entries unless limit says otherwise. Use find to search by name pattern across subdirectories.";
    type State = ToolContext;

    async fn run(self, ctx: ToolContext, _: Call) -> Result<AgentToolResult, ToolError> {
        let (path, dir) = common::listing_start(&*ctx.ws, self.path)?;
        let limit = self.limit.0;
        common::blocking("ls", move || list(&dir, &path, limit)).await?
    }

    fn parameters(_: &ToolContext) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "Directory to list (default: the workspace root)"},
            "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
        }})
    }
}

fn list(dir: &std::path::Path, shown: &str, limit: usize) -> Result<AgentToolResult, ToolError> {
    let meta =
        std::fs::metadata(dir).map_err(|_| ToolError::new(format!("Path not found: {shown}")))?;
    if !meta.is_dir() {
        return Err(ToolError::new(format!("Not a directory: {shown}")));
    }
    let read = std::fs::read_dir(dir)
        .map_err(|e| ToolError::new(format!("Cannot read directory: {e}")))?;
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by_key(|n| n.to_lowercase());
    let mut lines = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if lines.len() >= limit {
            limit_reached = true;
            break;
        }
        // `metadata` follows symlinks, so a link to a directory is listed as a directory.
        match std::fs::metadata(dir.join(&name)) {
            Ok(m) if m.is_dir() => lines.push(format!("{name}/")),
            Ok(_) => lines.push(name),
            Err(_) => continue,
        }
    }
    if lines.is_empty() {
        return Ok(AgentToolResult::text("(empty directory)"));
    }
    let count_limit =
        limit_reached.then(|| common::count_limit(limit, "entries", "entryLimitReached", ""));
    Ok(common::Listing::new(&lines, count_limit).into_result())
}
