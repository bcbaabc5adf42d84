//! Previews for approval prompts: what a tool call would do, computed without doing it.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::args::parse_args;
use super::bash::BashArgs;
use super::common;
use super::diff::{DiffResult, diff};
use super::edit::{EditArgs, prepare_edit_arguments};
use super::workspace::{EditRequest, Workspace, WorkspaceError};
use super::write::{WriteArgs, adapt_to_existing};

/// What a pending tool call would do.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToolPreview {
    /// `edit`/`write`: the change as a unified patch and pi's numbered display diff.
    #[serde(rename_all = "camelCase")]
    Diff {
        /// The path as the model wrote it.
        path: String,
        /// The resolved absolute path.
        abs_path: PathBuf,
        /// Unified patch (LF, 4 lines of context).
        patch: String,
        /// pi's numbered display diff.
        diff: String,
        first_changed_line: Option<usize>,
        /// The file does not exist yet.
        new_file: bool,
    },
    /// `bash`: the command and where it would run.
    #[serde(rename_all = "camelCase")]
    Command {
        command: String,
        cwd: PathBuf,
        timeout: Option<f64>,
    },
    /// `web_fetch`: the URL as it will be requested (hosts in their ASCII form, so a look-alike
    /// name shows as what it is), its host, and whether that is this machine or a local network.
    Fetch {
        url: String,
        host: String,
        local: bool,
    },
}

impl ToolPreview {
    fn diff(path: String, abs_path: PathBuf, d: DiffResult, new_file: bool) -> Self {
        ToolPreview::Diff {
            path,
            abs_path,
            patch: d.patch,
            diff: d.diff,
            first_changed_line: d.first_changed_line,
            new_file,
        }
    }
}

/// Computes the preview of calling tool `name` with `args` (raw or prepared), or `None` for
/// tools without one and for calls that would fail (bad path, text not found…: the tool
/// reports those itself when run).
pub async fn preview(ws: &Arc<dyn Workspace>, name: &str, args: &Value) -> Option<ToolPreview> {
    match name {
        "bash" => {
            let BashArgs {
                command, timeout, ..
            } = parse_args(args.clone()).ok()?;
            let cwd = ws.root().to_path_buf();
            Some(ToolPreview::Command {
                command,
                cwd,
                timeout,
            })
        }
        "edit" => preview_edit(ws, parse_args(prepare_edit_arguments(args.clone())).ok()?).await,
        "write" => preview_write(ws, parse_args(args.clone()).ok()?).await,
        super::web::WEB_FETCH => {
            let url = args.get("url").and_then(Value::as_str)?;
            let target = super::web::Target::parse(url).ok()?;
            Some(ToolPreview::Fetch {
                url: target.url.to_string(),
                host: target.host(),
                local: target.is_local(),
            })
        }
        _ => None,
    }
}

async fn current(ws: &Arc<dyn Workspace>, abs: &std::path::Path) -> Option<Option<Vec<u8>>> {
    match ws.read(abs.to_path_buf()).await {
        Ok(snap) => Some(Some(snap.bytes)),
        Err(WorkspaceError::NotFound(_)) => Some(None),
        Err(_) => None,
    }
}

/// The edit's diff from a dry run of the workspace's own edit (the daemon computes it on the
/// buffer's changed region only).
async fn preview_edit(ws: &Arc<dyn Workspace>, args: EditArgs) -> Option<ToolPreview> {
    let EditArgs { path, edits } = args;
    let abs = ws.resolve(&path).ok()?;
    let never = CancellationToken::new();
    let request = EditRequest {
        shown: &path,
        edits: &edits,
        seen: None,
        apply: false,
        cancel: &never,
    };
    let d = ws.edit(abs.clone(), request).await.ok()?.diff;
    Some(ToolPreview::diff(path, abs, d, /*new_file*/ false))
}

async fn preview_write(ws: &Arc<dyn Workspace>, args: WriteArgs) -> Option<ToolPreview> {
    let WriteArgs { path, content } = args;
    let abs = ws.resolve(&path).ok()?;
    let old = current(ws, &abs).await?;
    let old_text = old
        .as_deref()
        .map(|b| common::normalize_to_lf(common::strip_bom(&String::from_utf8_lossy(b)).1))
        .unwrap_or_default();
    let snapshot = old.clone().map(super::workspace::FileSnapshot::from_disk);
    let new_bytes = adapt_to_existing(&content, snapshot.as_ref());
    let new_text =
        common::normalize_to_lf(common::strip_bom(&String::from_utf8_lossy(&new_bytes)).1);
    let d = diff(&old_text, &new_text, &path);
    Some(ToolPreview::diff(path, abs, d, old.is_none()))
}
