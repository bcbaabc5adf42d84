//! `ls {path?, limit?}`: a directory's entries (dotfiles included), sorted case-insensitively,
//! `/` after directories.

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common::{self, ToolContext, check_abort};
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolUpdater};

const DEFAULT_LIMIT: usize = 500;

const DESCRIPTION: &str = "List a directory's entries (including dotfiles), sorted alphabetically, with a trailing '/' on directories. \
Defaults to the workspace root; at most 500 entries unless limit says otherwise. Use find to search by name pattern across subdirectories.";

/// The `ls` tool.
pub struct LsTool {
    ctx: ToolContext,
    decl: ToolDeclaration,
}

impl LsTool {
    pub fn new(ctx: ToolContext) -> Self {
        let params = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default: the workspace root)"},
                "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
            }
        });
        LsTool {
            ctx,
            decl: common::declaration("ls", DESCRIPTION, params),
        }
    }
}

impl AgentTool for LsTool {
    fn declaration(&self) -> &ToolDeclaration {
        &self.decl
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        Some(ExecutionMode::Parallel)
    }

    fn execute(
        &self,
        _id: String,
        args: Value,
        cancel: CancellationToken,
        _on_update: ToolUpdater,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let ctx = self.ctx.clone();
        Box::pin(async move {
            let path = common::opt_str(&args, "path")?.unwrap_or_else(|| ".".into());
            let limit = common::opt_count(&args, "limit")?
                .unwrap_or(DEFAULT_LIMIT)
                .max(1);
            check_abort(&cancel)?;
            let dir = ctx
                .ws
                .resolve(&path)
                .map_err(|e| ToolError::new(e.to_string()))?;
            tokio::task::spawn_blocking(move || list(&dir, &path, limit))
                .await
                .map_err(|e| ToolError::new(format!("ls failed: {e}")))?
        })
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
    let count_limit = limit_reached.then(|| {
        let notice = format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit * 2
        );
        (notice, "entryLimitReached", json!(limit))
    });
    Ok(common::Listing::new(&lines, count_limit).into_result())
}
