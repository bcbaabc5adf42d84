//! `grep {pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}`: regex or literal
//! search with ripgrep's libraries, honouring `.gitignore`, over the text the user sees (open
//! editor documents overlay the disk).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{SearcherBuilder, sinks::Lossy};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::{Limit, count};
use super::common::{self, Call, ToolArgs, ToolContext};
use super::image::looks_binary;
use super::truncate::{GREP_MAX_LINE_LENGTH, truncate_line};
use super::walk;
use crate::agent::tool::{AgentToolResult, ToolError};

/// A `grep` call's arguments.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    ignore_case: Option<bool>,
    literal: Option<bool>,
    #[serde(default, deserialize_with = "count")]
    context: Option<usize>,
    limit: Limit<100>,
}

impl ToolArgs for GrepArgs {
    const NAME: &str = "grep";
    const DESCRIPTION: &str = "Search file contents for a regular expression (Rust regex syntax, like ripgrep) or, with literal=true, a plain string. \
Searches the workspace root or path recursively, respecting .gitignore and including dotfiles; glob filters files (e.g. '*.rs', '**/*.test.ts'). \
Output lines are 'path:line: text' for matches and 'path-line- text' for context lines. Returns at most 100 matches unless limit says otherwise; \
long lines are cut to 500 characters.";
    type State = ToolContext;

    async fn run(self, ctx: ToolContext, call: Call) -> Result<AgentToolResult, ToolError> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(self.ignore_case.unwrap_or(false))
            .fixed_strings(self.literal.unwrap_or(false))
            .line_terminator(Some(b'\n'))
            .build(&self.pattern)
            .map_err(|e| ToolError::new(format!("Invalid regex pattern: {e}")))?;
        let query = Query {
            matcher,
            glob: self.glob,
            context: self.context.unwrap_or(0),
            limit: self.limit.0,
        };
        let (path, target) = common::listing_start(&*ctx.ws, self.path)?;
        if !target.exists() && !ctx.ws.open_documents().iter().any(|(p, _)| *p == target) {
            return Err(ToolError::new(format!("Path not found: {path}")));
        }
        let open: HashMap<PathBuf, String> = ctx.ws.open_documents().into_iter().collect();
        let cancel = call.cancel;
        common::blocking("grep", move || search(&target, &query, &open, &cancel)).await?
    }

    fn parameters(_: &ToolContext) -> Value {
        json!({"type": "object", "required": ["pattern"], "properties": {
            "pattern": {"type": "string", "description": "Regular expression (or literal string with literal=true) to search for"},
            "path": {"type": "string", "description": "File or directory to search (default: the workspace root)"},
            "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.rs' or 'src/**/*.ts'"},
            "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
            "literal": {"type": "boolean", "description": "Treat pattern as a literal string, not a regex (default: false)"},
            "context": {"type": "number", "description": "Lines of context to show before and after each match (default: 0)"},
            "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
        }})
    }
}

/// What to search for, from the arguments.
struct Query {
    matcher: RegexMatcher,
    glob: Option<String>,
    context: usize,
    limit: usize,
}

/// Match state across files.
struct Collector {
    lines: Vec<String>,
    matches: usize,
    limit_reached: bool,
    lines_truncated: bool,
}

/// One match in a file: its line and the context around it, as shown.
struct Hit {
    lines: Vec<String>,
    truncated: bool,
}

fn search(
    target: &Path,
    q: &Query,
    open: &HashMap<PathBuf, String>,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let files: Vec<(PathBuf, String)> =
        if target.is_file() || (!target.exists() && open.contains_key(target)) {
            let name = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            vec![(target.to_path_buf(), name)]
        } else {
            (files(target, q, open, cancel)?.into_iter())
                .map(|rel| (target.join(&rel), rel.display().to_string()))
                .collect()
        };
    // Every core searches, in path order as far as the output goes: files after the one that
    // reaches the limit are not searched.
    let found = walk::in_order(
        &files,
        q.limit,
        Vec::len,
        || Reader {
            searcher: SearcherBuilder::new().line_number(true).build(),
            bytes: Vec::new(),
        },
        |reader, (abs, shown)| search_file(reader, abs, shown, q, open),
        cancel,
    )
    .ok_or_else(aborted)?;
    let mut c = Collector {
        lines: Vec::new(),
        matches: 0,
        limit_reached: false,
        lines_truncated: false,
    };
    for hit in found.into_iter().flatten() {
        c.matches += 1;
        c.lines_truncated |= hit.truncated;
        c.lines.extend(hit.lines);
        if c.matches >= q.limit {
            c.limit_reached = true;
            break;
        }
    }
    render(c, q.limit)
}

fn aborted() -> ToolError {
    ToolError::new(common::ABORTED)
}

/// Files to search under `dir` (relative paths, sorted): the walk plus open documents not on
/// disk, filtered by the glob with ripgrep's `--glob` semantics.
fn files(
    dir: &Path,
    q: &Query,
    open: &HashMap<PathBuf, String>,
    cancel: &CancellationToken,
) -> Result<Vec<PathBuf>, ToolError> {
    let overrides = match &q.glob {
        Some(g) => {
            let mut b = ignore::overrides::OverrideBuilder::new(dir);
            b.add(g)
                .map_err(|e| ToolError::new(format!("Invalid glob '{g}': {e}")))?;
            Some(
                b.build()
                    .map_err(|e| ToolError::new(format!("Invalid glob '{g}': {e}")))?,
            )
        }
        None => None,
    };
    let walked = walk::walk(dir, overrides.clone(), &|w| !w.is_dir, cancel).ok_or_else(aborted)?;
    let mut out: Vec<PathBuf> = walked.into_iter().map(|w| w.path).collect();
    for p in open.keys() {
        if let Ok(rel) = p.strip_prefix(dir)
            && !p.exists()
            && overrides
                .as_ref()
                .is_none_or(|o| !o.matched(p, false).is_ignore())
        {
            out.push(rel.to_path_buf());
        }
    }
    out.sort_by(|a, b| walk::by_path(a, b));
    Ok(out)
}

/// A search thread's searcher and read buffer, made once (a searcher zeroes 72 KB of buffers).
struct Reader {
    searcher: grep_searcher::Searcher,
    bytes: Vec<u8>,
}

/// The matches in one file (at most the limit), as the user sees it.
fn search_file(
    reader: &mut Reader,
    abs: &Path,
    shown: &str,
    q: &Query,
    open: &HashMap<PathBuf, String>,
) -> Vec<Hit> {
    let bytes: &[u8] = match open.get(abs) {
        Some(text) => text.as_bytes(),
        None => {
            use std::io::Read;
            reader.bytes.clear();
            let read = std::fs::File::open(abs).and_then(|mut f| f.read_to_end(&mut reader.bytes));
            if read.is_err() {
                return Vec::new();
            }
            &reader.bytes
        }
    };
    if looks_binary(bytes) {
        return Vec::new();
    }
    let mut hits: Vec<usize> = Vec::new();
    let _ = reader.searcher.search_slice(
        &q.matcher,
        bytes,
        Lossy(|lnum, _line| {
            hits.push(lnum as usize);
            Ok(hits.len() < q.limit)
        }),
    );
    if hits.is_empty() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.split('\n').collect();
    hits.into_iter()
        .map(|n| {
            let start = n.saturating_sub(q.context).max(1);
            let end = (n + q.context).min(lines.len());
            let mut hit = Hit {
                lines: Vec::new(),
                truncated: false,
            };
            for cur in start..=end {
                let raw = lines.get(cur - 1).copied().unwrap_or("").replace('\r', "");
                let (line, cut) = truncate_line(&raw, GREP_MAX_LINE_LENGTH);
                hit.truncated |= cut;
                hit.lines.push(if cur == n {
                    format!("{shown}:{cur}: {line}")
                } else {
                    format!("{shown}-{cur}- {line}")
                });
            }
            hit
        })
        .collect()
}

fn render(c: Collector, limit: usize) -> Result<AgentToolResult, ToolError> {
    if c.matches == 0 {
        return Ok(AgentToolResult::text("No matches found"));
    }
    let count_limit = c
        .limit_reached
        .then(|| common::count_limit(limit, "matches", "matchLimitReached", ", or refine pattern"));
    let mut listing = common::Listing::new(&c.lines, count_limit);
    if c.lines_truncated {
        listing.note(
            format!(
                "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            ),
            "linesTruncated",
            json!(true),
        );
    }
    Ok(listing.into_result())
}
