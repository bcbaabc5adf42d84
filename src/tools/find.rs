//! `find {pattern, path?, limit?}`: files and directories whose name (or, for a pattern with
//! `/`, relative path) matches a glob, honouring `.gitignore`, dotfiles included.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::Limit;
use super::common::{self, Call, ToolArgs, ToolContext};
use super::walk::{self, Walked};
use crate::agent::tool::{AgentToolResult, ToolError};

/// A `find` call's arguments.
#[derive(Deserialize)]
pub struct FindArgs {
    pattern: String,
    path: Option<String>,
    limit: Limit<1000>,
}

impl ToolArgs for FindArgs {
    const NAME: &str = "find";
    const DESCRIPTION: &str = "Find files by glob pattern, recursively from the workspace root or path. A pattern without '/' matches file names \
(e.g. '*.rs', 'Cargo.toml'); a pattern with '/' matches paths relative to the search directory (e.g. 'src/**/*.ts'). \
Respects .gitignore, includes dotfiles, lists directories with a trailing '/'. Returns at most 1000 paths unless limit says otherwise.";
    type State = ToolContext;

    async fn run(self, ctx: ToolContext, call: Call) -> Result<AgentToolResult, ToolError> {
        let (path, dir) = common::listing_start(&*ctx.ws, self.path)?;
        if !dir.is_dir() {
            return Err(ToolError::new(format!("Path not found: {path}")));
        }
        let limit = self.limit.0;
        let open: Vec<PathBuf> = ctx
            .ws
            .open_documents()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let cancel = call.cancel;
        common::blocking("find", move || {
            find(&dir, &self.pattern, limit, &open, &cancel)
        })
        .await?
    }

    fn parameters(_: &ToolContext) -> Value {
        json!({"type": "object", "required": ["pattern"], "properties": {
            "pattern": {"type": "string", "description": "Glob pattern, e.g. '*.rs', '**/test_*.py' or 'src/**/mod.rs'"},
            "path": {"type": "string", "description": "Directory to search in (default: the workspace root)"},
            "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
        }})
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
        common::count_limit(
            limit,
            "results",
            "resultLimitReached",
            ", or refine pattern",
        )
    });
    Ok(common::Listing::new(&found, count_limit).into_result())
}
