//! `find {pattern, path?, limit?}`: files and directories whose name (or, for a pattern with
//! `/`, relative path) matches a glob, honouring `.gitignore`, dotfiles included.

use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common::{self, ToolContext, check_abort};
use super::walk::{self, Walked};
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolUpdater};

const DEFAULT_LIMIT: usize = 1000;

const DESCRIPTION: &str = "Find files by glob pattern, recursively from the workspace root or path. A pattern without '/' matches file names \
(e.g. '*.rs', 'Cargo.toml'); a pattern with '/' matches paths relative to the search directory (e.g. 'src/**/*.ts'). \
Respects .gitignore, includes dotfiles, lists directories with a trailing '/'. Returns at most 1000 paths unless limit says otherwise.";

/// The `find` tool.
pub struct FindTool {
    ctx: ToolContext,
    decl: ToolDeclaration,
}

impl FindTool {
    pub fn new(ctx: ToolContext) -> Self {
        let params = json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. '*.rs', '**/test_*.py' or 'src/**/mod.rs'"},
                "path": {"type": "string", "description": "Directory to search in (default: the workspace root)"},
                "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
            }
        });
        FindTool {
            ctx,
            decl: common::declaration("find", DESCRIPTION, params),
        }
    }
}

impl AgentTool for FindTool {
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
            let pattern = common::req_str(&args, "pattern")?;
            let path = common::opt_str(&args, "path")?.unwrap_or_else(|| ".".into());
            let limit = common::opt_count(&args, "limit")?
                .unwrap_or(DEFAULT_LIMIT)
                .max(1);
            check_abort(&cancel)?;
            let dir = ctx
                .ws
                .resolve(&path)
                .map_err(|e| ToolError::new(e.to_string()))?;
            if !dir.is_dir() {
                return Err(ToolError::new(format!("Path not found: {path}")));
            }
            let open: Vec<PathBuf> = ctx
                .ws
                .open_documents()
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            tokio::task::spawn_blocking(move || find(&dir, &pattern, limit, &open, &cancel))
                .await
                .map_err(|e| ToolError::new(format!("find failed: {e}")))?
        })
    }
}

fn compile(pattern: &str) -> Result<(GlobMatcher, bool), ToolError> {
    let by_path = pattern.contains('/');
    let glob = GlobBuilder::new(pattern.trim_start_matches("./"))
        .literal_separator(by_path)
        .build()
        .map_err(|e| ToolError::new(format!("Invalid glob pattern '{pattern}': {e}")))?;
    Ok((glob.compile_matcher(), by_path))
}

fn find(
    dir: &Path,
    pattern: &str,
    limit: usize,
    open: &[PathBuf],
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let (glob, by_path) = compile(pattern)?;
    let matches = |rel: &Path| {
        if by_path {
            glob.is_match(rel)
        } else {
            rel.file_name().is_some_and(|n| glob.is_match(n))
        }
    };
    let keep = |w: &Walked| matches(&w.path);
    let walked =
        walk::walk(dir, None, &keep, cancel).ok_or_else(|| ToolError::new(common::ABORTED))?;
    let limit_reached = walked.len() > limit;
    let mut found: Vec<String> = (walked.into_iter().take(limit))
        .map(|w| format!("{}{}", w.path.display(), if w.is_dir { "/" } else { "" }))
        .collect();
    // Unsaved new documents open in the editor exist for the user even if not on disk.
    for p in open {
        if let Ok(rel) = p.strip_prefix(dir)
            && !p.exists()
            && matches(rel)
            && !limit_reached
        {
            found.push(rel.display().to_string());
        }
    }
    if found.is_empty() {
        return Ok(AgentToolResult::text("No files found matching pattern"));
    }
    let count_limit = limit_reached.then(|| {
        let notice = format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        );
        (notice, "resultLimitReached", json!(limit))
    });
    Ok(common::Listing::new(&found, count_limit).into_result())
}
