//! What every tool shares: the context (workspace, read tracker, bash settings), argument
//! readers and result builders.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::ToolOptions;
use super::tracker::{FileMutationQueue, ReadTracker};
use super::workspace::{Unsaved, Workspace, WorkspaceError};
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::ToolError;

/// pi's text for an aborted read/write/edit.
pub const ABORTED: &str = "Operation aborted";

/// Shared by the tools one [`super::coding_tools`] call builds.
#[derive(Clone)]
pub struct ToolContext {
    pub ws: Arc<dyn Workspace>,
    pub tracker: Arc<ReadTracker>,
    pub queue: &'static FileMutationQueue,
    pub bash: BashSettings,
}

/// `bash` configuration taken from [`ToolOptions`].
#[derive(Clone, Debug, Default)]
pub struct BashSettings {
    pub shell: Option<PathBuf>,
    pub command_prefix: Option<String>,
    pub env: Vec<(String, String)>,
    pub spill_dir: Option<PathBuf>,
    /// The session's command sandbox; `None`: commands run with the user's full rights.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

impl ToolContext {
    pub fn new(ws: Arc<dyn Workspace>, opts: &ToolOptions) -> Self {
        ToolContext {
            ws,
            tracker: opts.read_tracker.clone().unwrap_or_default(),
            queue: FileMutationQueue::global(),
            bash: BashSettings {
                shell: opts.shell.clone(),
                command_prefix: opts.command_prefix.clone(),
                env: opts.env.clone(),
                spill_dir: opts.spill_dir.clone(),
                sandbox: opts.sandbox.clone(),
            },
        }
    }
}

/// Builds a declaration from a name, a description and a JSON Schema.
pub fn declaration(name: &str, description: &str, parameters: Value) -> ToolDeclaration {
    ToolDeclaration {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
        constrained_sampling: None,
    }
}

/// The arguments as an object (schema validation normally guarantees it).
pub fn object(args: &Value) -> Result<&Map<String, Value>, ToolError> {
    args.as_object()
        .ok_or_else(|| ToolError::new("Tool arguments must be a JSON object."))
}

/// A required string argument.
pub fn req_str(args: &Value, key: &str) -> Result<String, ToolError> {
    match object(args)?.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ToolError::new(format!(
            "Argument '{key}' must be a string."
        ))),
        None => Err(ToolError::new(format!(
            "Missing required argument '{key}'."
        ))),
    }
}

/// An optional string argument (`null` counts as absent).
pub fn opt_str(args: &Value, key: &str) -> Result<Option<String>, ToolError> {
    match object(args)?.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ToolError::new(format!(
            "Argument '{key}' must be a string."
        ))),
    }
}

/// An optional number argument (`null` counts as absent).
pub fn opt_num(args: &Value, key: &str) -> Result<Option<f64>, ToolError> {
    match object(args)?.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| ToolError::new(format!("Argument '{key}' must be a number."))),
    }
}

/// An optional non-negative integer argument (fractions are truncated, as JS `slice` does).
pub fn opt_count(args: &Value, key: &str) -> Result<Option<usize>, ToolError> {
    match opt_num(args, key)? {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n.trunc() as usize)),
        Some(_) => Err(ToolError::new(format!(
            "Argument '{key}' must be a non-negative number."
        ))),
    }
}

/// An optional boolean argument.
pub fn opt_bool(args: &Value, key: &str) -> Result<Option<bool>, ToolError> {
    match object(args)?.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ToolError::new(format!(
            "Argument '{key}' must be a boolean."
        ))),
    }
}

/// Fails with pi's abort text when `cancel` fired.
pub fn check_abort(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        Err(ToolError::new(ABORTED))
    } else {
        Ok(())
    }
}

/// A workspace error as the model should read it, naming the path the model used.
pub fn ws_error(path: &str, e: WorkspaceError) -> ToolError {
    match e {
        WorkspaceError::NotFound(_) => ToolError::new(format!("File not found: {path}")),
        WorkspaceError::IsDirectory(_) => ToolError::new(format!(
            "{path} is a directory, not a file. Use ls to list it."
        )),
        WorkspaceError::PermissionDenied(_) => ToolError::new(format!("Permission denied: {path}")),
        WorkspaceError::Conflict(_) => ToolError::new(conflict_text(path)),
        // The path as the model wrote it; where the symlink appeared stays absolute.
        WorkspaceError::PathChanged { at, op, .. } => ToolError::new(
            WorkspaceError::PathChanged {
                path: path.to_string(),
                at,
                op,
            }
            .to_string(),
        ),
        other => ToolError::new(other.to_string()),
    }
}

/// A mutating tool's result text, with the note saying the change is not on disk when it was
/// left unsaved in an editor buffer.
pub fn with_unsaved_note(text: String, unsaved: Option<Unsaved>, path: &str) -> String {
    match unsaved {
        None => text,
        Some(why) => format!("{text}\n\n{}", why.note(path)),
    }
}

/// The message for a file that changed since the agent last read it.
pub fn conflict_text(path: &str) -> String {
    format!(
        "File {path} has been modified since you last read it (by the user, an editor or another process). \
         Its current content was not changed. Read the file again, then redo the change against the current content."
    )
}

/// Splits a leading UTF-8 byte-order mark from `text`.
pub fn strip_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", text),
    }
}

/// pi's `detectLineEnding`: CRLF if the first `\n` is preceded by `\r`.
pub fn detect_crlf(text: &str) -> bool {
    match text.find('\n') {
        Some(i) => i > 0 && text.as_bytes()[i - 1] == b'\r',
        None => false,
    }
}

/// `\r\n` and lone `\r` → `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// `\n` → `\r\n` when `crlf`.
pub fn restore_line_endings(text: &str, crlf: bool) -> String {
    if crlf {
        text.replace('\n', "\r\n")
    } else {
        text.to_string()
    }
}

/// A listing (`grep`, `find`, `ls`) cut to pi's 50 KB, with pi's bracketed notices and the
/// matching `details` keys, in the order the notices are added.
pub struct Listing {
    content: String,
    notices: Vec<String>,
    details: Map<String, Value>,
}

impl Listing {
    /// Head-truncates `lines`; `count_limit` is the count limit's notice and `details` entry,
    /// when that limit was reached (it comes first, as in pi).
    pub fn new(lines: &[String], count_limit: Option<(String, &str, Value)>) -> Self {
        use super::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};
        let trunc = truncate_head(
            &lines.join("\n"),
            Limits {
                max_lines: usize::MAX,
                max_bytes: DEFAULT_MAX_BYTES,
            },
        );
        let mut listing = Listing {
            content: trunc.content.clone(),
            notices: Vec::new(),
            details: Map::new(),
        };
        if let Some((notice, key, value)) = count_limit {
            listing.note(notice, key, value);
        }
        if trunc.truncated {
            let notice = format!("{} limit reached", format_size(DEFAULT_MAX_BYTES));
            listing.note(notice, "truncation", serde_json::json!(trunc));
        }
        listing
    }

    pub fn note(&mut self, notice: String, key: &str, value: Value) {
        self.notices.push(notice);
        self.details.insert(key.to_string(), value);
    }

    pub fn into_result(self) -> crate::agent::tool::AgentToolResult {
        let mut out = self.content;
        if !self.notices.is_empty() {
            out.push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        crate::agent::tool::AgentToolResult {
            details: Some(Value::Object(self.details)),
            ..crate::agent::tool::AgentToolResult::text(out)
        }
    }
}
