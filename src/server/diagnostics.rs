//! The editor's diagnostics, as clients forward them (`agent/diagnostics`), and the read-only
//! `diagnostics` tool that shows them to the model.
//!
//! The store keeps the latest list per URI (an empty list or `didClose` removes it). It is
//! written from the ordered-sync shim, so a `didClose` and a later `agent/diagnostics` for the
//! same document apply in wire order. The tool converts LSP positions (in the negotiated
//! encoding) to 1-based line and character columns through `position.rs`, against the open
//! buffer or else the file on disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::BoxFuture;
use ls_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Position};
use ropey::Rope;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolUpdater};
use crate::server::documents::{DocStore, uri_to_path};
use crate::server::position::{self, Encoding};
use crate::server::protocol::DiagnosticsParams;
use crate::tools::Workspace;

/// The tool's name (also known to the approval policy as a read-only tool).
pub const TOOL_NAME: &str = crate::tools::DIAGNOSTICS;

/// At most this many lines are shown; the rest is counted.
const MAX_LINES: usize = 300;

/// The latest diagnostics per document URI.
#[derive(Clone, Default)]
pub struct DiagnosticStore {
    inner: Arc<Mutex<HashMap<String, Vec<Diagnostic>>>>,
}

impl DiagnosticStore {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<Diagnostic>>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the URI's diagnostics (latest wins); an empty list forgets the URI.
    pub fn set(&self, p: DiagnosticsParams) {
        let mut map = self.lock();
        if p.diagnostics.is_empty() {
            map.remove(&p.uri);
        } else {
            map.insert(p.uri, p.diagnostics);
        }
    }

    pub fn clear(&self, uri: &str) {
        self.lock().remove(uri);
    }

    /// A snapshot of every URI's diagnostics.
    pub fn all(&self) -> Vec<(String, Vec<Diagnostic>)> {
        self.lock()
            .iter()
            .map(|(u, d)| (u.clone(), d.clone()))
            .collect()
    }
}

const DESCRIPTION: &str = "Show the editor's diagnostics (compiler errors, warnings, lint findings) \
for a file or directory, or for everything the editor reported when no path is given. One line per \
diagnostic: path:line:column: severity: message [source], 1-based. The editor reports diagnostics \
for files that are open or that you read or edited; they update asynchronously, so right after an \
edit they may lag a moment.";

/// The `diagnostics` tool over the connection's store.
pub struct DiagnosticsTool {
    ws: Arc<dyn Workspace>,
    docs: DocStore,
    decl: ToolDeclaration,
}

impl DiagnosticsTool {
    pub fn new(ws: Arc<dyn Workspace>, docs: DocStore) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File or directory to show diagnostics for (default: all)"}
            }
        });
        DiagnosticsTool {
            ws,
            docs,
            decl: ToolDeclaration {
                name: TOOL_NAME.into(),
                description: DESCRIPTION.into(),
                parameters,
                constrained_sampling: None,
            },
        }
    }
}

impl AgentTool for DiagnosticsTool {
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
        _cancel: CancellationToken,
        _on_update: ToolUpdater,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let ws = self.ws.clone();
        let docs = self.docs.clone();
        Box::pin(async move {
            let path = match args.get("path") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) => Some(p.clone()),
                Some(_) => return Err(ToolError::new("path must be a string")),
            };
            let filter = match &path {
                Some(p) => Some(ws.resolve(p).map_err(|e| ToolError::new(e.to_string()))?),
                None => None,
            };
            let root = ws.root().to_path_buf();
            let text = tokio::task::spawn_blocking(move || report(&docs, &root, filter.as_deref()))
                .await
                .map_err(|e| ToolError::new(format!("diagnostics failed: {e}")))?;
            Ok(AgentToolResult::text(match (text, path) {
                (Some(text), _) => text,
                (None, Some(p)) => format!("No diagnostics reported by the editor for {p}."),
                (None, None) => "No diagnostics reported by the editor.".to_owned(),
            }))
        })
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
fn shown_path(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| PathBuf::from(path))
        .display()
        .to_string()
}

/// The editor's buffer when open, else the file on disk; `None` when neither is readable.
fn text_of(docs: &DocStore, uri: &str, path: &Path) -> Option<Rope> {
    match docs.get(uri) {
        Some(doc) => Some(doc.rope),
        None => std::fs::read_to_string(path)
            .ok()
            .map(|t| Rope::from_str(&t)),
    }
}

/// 1-based line and character column of an LSP position (clamped as the position module does).
fn one_based(rope: Option<&Rope>, pos: Position, enc: Encoding) -> (u64, u64) {
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
    fn latest_list_wins_and_empty_forgets() {
        let store = DiagnosticStore::default();
        let d = Diagnostic::new_simple(Range::default(), "x".into());
        let params = |n: usize| DiagnosticsParams {
            uri: "file:///a".into(),
            diagnostics: vec![d.clone(); n],
        };
        store.set(params(2));
        store.set(params(1));
        assert_eq!(store.all()[0].1.len(), 1);
        store.set(params(0));
        assert!(store.all().is_empty());
    }
}
