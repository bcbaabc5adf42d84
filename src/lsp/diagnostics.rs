//! The read-only `diagnostics` tool: the editor's diagnostics, as clients forward them
//! (`agent/diagnostics`, kept with the documents: `documents::DiagnosticStore`), shown to the
//! model. It converts LSP positions (in the negotiated
//! encoding) to 1-based line and character columns through `position.rs`, against the open
//! buffer or else the file on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ls_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Position};
use ropey::Rope;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::tool::{AgentToolResult, ToolError};
use crate::lsp::documents::{DocStore, uri_to_path};
use crate::lsp::position::{self, Encoding};
use crate::tools::{Call, ToolArgs, TypedTool, Workspace, blocking};

/// The tool's name (also known to the approval policy as a read-only tool).
pub const TOOL_NAME: &str = crate::tools::DIAGNOSTICS;

/// At most this many lines are shown; the rest is counted.
const MAX_LINES: usize = 300;

const DESCRIPTION: &str = "Show the editor's diagnostics (compiler errors, warnings, lint findings) \
for a file or directory, or for everything the editor reported when no path is given. One line per \
diagnostic: path:line:column: severity: message [source], 1-based. The editor reports diagnostics \
for files that are open or that you read or edited; they update asynchronously, so right after an \
edit they may lag a moment.";

/// A `diagnostics` call's arguments.
#[derive(Deserialize)]
pub struct DiagnosticsArgs {
    path: Option<String>,
}

/// The `diagnostics` tool over the connection's workspace and store.
pub type DiagnosticsTool = TypedTool<DiagnosticsArgs>;

impl ToolArgs for DiagnosticsArgs {
    const NAME: &str = TOOL_NAME;
    const DESCRIPTION: &str = DESCRIPTION;
    type State = (Arc<dyn Workspace>, DocStore);
    /// The report is quick and read-only, so it ignores cancellation.
    const ABORTS_BEFORE_START: bool = false;

    async fn run(self, (ws, docs): Self::State, _: Call) -> Result<AgentToolResult, ToolError> {
        let filter = match &self.path {
            Some(p) => Some(ws.resolve(p).map_err(|e| ToolError::new(e.to_string()))?),
            None => None,
        };
        let root = ws.root().to_path_buf();
        let text = blocking(TOOL_NAME, move || report(&docs, &root, filter.as_deref())).await?;
        Ok(AgentToolResult::text(match (text, self.path) {
            (Some(text), _) => text,
            (None, Some(p)) => format!("No diagnostics reported by the editor for {p}."),
            (None, None) => "No diagnostics reported by the editor.".to_owned(),
        }))
    }

    fn parameters(_: &Self::State) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "File or directory to show diagnostics for (default: all)"}
        }})
    }
}

/// The report lines for every stored document under `filter` (all when `None`).
fn report(docs: &DocStore, root: &Path, filter: Option<&Path>) -> Option<String> {
    let mut lines: Vec<(String, u64, u64, String)> = Vec::new();
    for (uri, diagnostics) in docs.diagnostics().all() {
        let Some(path) = uri_to_path(&uri) else {
            continue;
        };
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        if filter.is_some_and(|f| !path.starts_with(f)) {
            continue;
        }
        let shown = shown_path(&path, root);
        let rope = text_of(docs, &uri, &path);
        for d in diagnostics {
            let (line, col) = one_based(rope.as_ref(), d.range.start, docs.encoding());
            let text = format!("{shown}:{line}:{col}: {}", describe(&d));
            lines.push((shown.clone(), line, col, text));
        }
    }
    if lines.is_empty() {
        return None;
    }
    lines.sort();
    let total = lines.len();
    let mut out: Vec<String> = lines.into_iter().take(MAX_LINES).map(|l| l.3).collect();
    if total > MAX_LINES {
        out.push(format!(
            "({} more diagnostics not shown; pass a path to narrow)",
            total - MAX_LINES
        ));
    }
    Some(out.join("\n"))
}

/// Relative to the workspace root when under it, else absolute.
pub(crate) fn shown_path(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| PathBuf::from(path))
        .display()
        .to_string()
}

/// The editor's buffer when open, else the file on disk; `None` when neither is readable.
pub(crate) fn text_of(docs: &DocStore, uri: &str, path: &Path) -> Option<Rope> {
    match docs.get(uri) {
        Some(doc) => Some(doc.rope),
        None => std::fs::read_to_string(path)
            .ok()
            .map(|t| Rope::from_str(&t)),
    }
}

/// 1-based line and character column of an LSP position (clamped as the position module does).
pub(crate) fn one_based(rope: Option<&Rope>, pos: Position, enc: Encoding) -> (u64, u64) {
    let Some(rope) = rope else {
        return (u64::from(pos.line) + 1, u64::from(pos.character) + 1);
    };
    let idx = position::to_char_idx(rope, pos, enc);
    let line = rope.char_to_line(idx);
    let col = idx - rope.line_to_char(line);
    (line as u64 + 1, col as u64 + 1)
}

/// `severity: message [source]` (the code joins the source when there is one).
fn describe(d: &Diagnostic) -> String {
    let severity = match d.severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        // LSP leaves a missing severity to the client; editors show it as an error.
        _ => "error",
    };
    let code = d.code.as_ref().map(|c| match c {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.clone(),
    });
    let message = d.message.replace('\n', " ");
    match (&d.source, code) {
        (Some(source), Some(code)) => format!("{severity}: {message} [{source} {code}]"),
        (Some(source), None) => format!("{severity}: {message} [{source}]"),
        (None, Some(code)) => format!("{severity}: {message} [{code}]"),
        (None, None) => format!("{severity}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ls_types::Range;

    #[test]
    fn columns_count_characters_from_utf16_positions() {
        let rope = Rope::from_str("a\r\n😀x = 1\n");
        // UTF-16: the emoji is two units, so `x` is at character 2 of line 1.
        let pos = Position::new(1, 2);
        assert_eq!(one_based(Some(&rope), pos, Encoding::Utf16), (2, 2));
        assert_eq!(
            one_based(Some(&rope), Position::new(1, 4), Encoding::Utf8),
            (2, 2)
        );
        // Past the end clamps to the last line's end.
        assert_eq!(
            one_based(Some(&rope), Position::new(9, 9), Encoding::Utf16),
            (3, 1)
        );
        assert_eq!(
            one_based(None, Position::new(4, 7), Encoding::Utf16),
            (5, 8)
        );
    }

    #[test]
    fn describe_names_severity_and_source() {
        let mut d = Diagnostic::new_simple(Range::default(), "bad\nthing".into());
        assert_eq!(describe(&d), "error: bad thing");
        d.severity = Some(DiagnosticSeverity::WARNING);
        d.source = Some("rustc".into());
        assert_eq!(describe(&d), "warning: bad thing [rustc]");
        d.code = Some(NumberOrString::String("E0308".into()));
        assert_eq!(describe(&d), "warning: bad thing [rustc E0308]");
    }

    #[test]
    fn reads_the_arguments_its_schema_declares() {
        let ws = crate::tools::DiskWorkspace::new(std::env::temp_dir(), Vec::new()).unwrap();
        let sources = (Arc::new(ws) as Arc<dyn Workspace>, DocStore::default());
        let parameters = DiagnosticsArgs::declaration(&sources).parameters;
        crate::tools::assert_args_match_schema::<DiagnosticsArgs>(&parameters);
    }
}
