//! `write {path, content}`: creates or replaces a whole file, atomically, keeping the existing
//! file's line endings, BOM and permissions, and refusing to clobber a file that changed since
//! the agent read it.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::common::{
    self, Call, ToolArgs, ToolContext, check_abort, conflict_text, detect_crlf, normalize_to_lf,
    restore_line_endings, strip_bom, ws_error,
};
use super::workspace::{FileSnapshot, WorkspaceError, WriteRequest};
use crate::agent::tool::{AgentToolResult, ToolError};

/// A `write` call's arguments.
#[derive(Deserialize)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
}

impl ToolArgs for WriteArgs {
    const NAME: &str = "write";
    const DESCRIPTION: &str = "Write a file in the workspace: creates it (and missing parent directories) or replaces its whole content. \
Prefer edit for changing part of an existing file. An existing file keeps its line endings (CRLF stays CRLF), byte-order mark and permissions. \
If the file was modified since you last read it, the write is refused: read it again first.";
    type State = ToolContext;

    async fn run(self, ctx: ToolContext, call: Call) -> Result<AgentToolResult, ToolError> {
        let WriteArgs { path, content } = self;
        let (abs, _turn) = ctx.lock_file(&path, &call.cancel).await?;
        let existing = load_checked(&ctx, &path, &abs).await?;
        check_abort(&call.cancel)?;
        let bytes = adapt_to_existing(&content, existing.as_ref());
        let len = bytes.len();
        let expected = existing.as_ref().map(|s| s.id);
        let outcome = ctx
            .ws
            .write(WriteRequest::new(abs.clone(), bytes, expected))
            .await
            .map_err(|e| ws_error(&path, e))?;
        ctx.tracker.record(&abs, outcome.id);
        let text = format!("Successfully wrote {len} bytes to {path}");
        Ok(AgentToolResult::text(common::with_unsaved_note(
            text,
            outcome.unsaved,
            &path,
        )))
    }

    fn parameters(_: &ToolContext) -> Value {
        json!({"type": "object", "required": ["path", "content"], "properties": {
            "path": {"type": "string", "description": "Path to the file to write (relative to the workspace root, or absolute inside it)"},
            "content": {"type": "string", "description": "The complete new content of the file"}
        }})
    }
}

/// The current content of a file about to be mutated (`None` if it does not exist), after
/// checking it is still what the agent last saw.
pub async fn load_checked(
    ctx: &ToolContext,
    shown: &str,
    abs: &Path,
) -> Result<Option<FileSnapshot>, ToolError> {
    match ctx.ws.read(abs.to_path_buf()).await {
        Ok(snap) => {
            if let Some(seen) = ctx.tracker.get(abs)
                && !snap.is(&seen)
            {
                return Err(ToolError::new(conflict_text(shown)));
            }
            Ok(Some(snap))
        }
        Err(WorkspaceError::NotFound(_)) => Ok(None),
        Err(e) => Err(ws_error(shown, e)),
    }
}

/// The bytes to write: the model's text with the existing file's line endings and BOM.
pub fn adapt_to_existing(content: &str, existing: Option<&FileSnapshot>) -> Vec<u8> {
    let Some(old) = existing else {
        return content.as_bytes().to_vec();
    };
    let old_text = String::from_utf8_lossy(&old.bytes);
    let (bom, old_body) = strip_bom(&old_text);
    let (new_bom, new_body) = strip_bom(content);
    let body = if detect_crlf(old_body) && !new_body.contains("\r\n") {
        restore_line_endings(&normalize_to_lf(new_body), true)
    } else {
        new_body.to_string()
    };
    let bom = if new_bom.is_empty() { bom } else { new_bom };
    format!("{bom}{body}").into_bytes()
}
