//! `read {path, offset?, limit?}`: a text file's lines (head-truncated with continuation hints)
//! or an image (sniffed by content).

use serde::Deserialize;
use serde_json::{Value, json};

use super::args::count;
use super::common::{Call, ToolArgs, ToolContext, check_abort, ws_error};
use super::image::{base64, looks_binary, sniff_image};
use super::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};
use crate::agent::message::{ContentBlock, ImageContent};
use crate::agent::tool::{AgentToolResult, ToolError};

/// Largest image attached as-is: base64 of it stays under the 5 MB providers accept.
pub const MAX_IMAGE_BYTES: usize = 3_750_000;

/// A `read` call's arguments.
#[derive(Deserialize)]
pub struct ReadArgs {
    path: String,
    #[serde(default, deserialize_with = "count")]
    offset: Option<usize>,
    #[serde(default, deserialize_with = "count")]
    limit: Option<usize>,
}

impl ToolArgs for ReadArgs {
    const NAME: &str = "read";
    const DESCRIPTION: &str = "Read a file from the workspace. Text files are returned as-is (no line numbers added), \
at most 2000 lines or 50KB per call: when the output is cut, a notice at the end gives the offset to continue from. \
Use offset (1-indexed line number) and limit (number of lines) to read a specific part of a large file. \
Images (PNG, JPEG, GIF, WebP) are returned as image attachments. \
Paths are relative to the workspace root; an absolute path must lie inside the workspace. \
Read a file before editing it, and again if an edit reports it was modified.";
    type State = ToolContext;

    async fn run(self, ctx: ToolContext, call: Call) -> Result<AgentToolResult, ToolError> {
        let path = self.path;
        let abs = ctx.ws.resolve(&path).map_err(|e| ws_error(&path, e))?;
        let snap = ctx
            .ws
            .read(abs.clone())
            .await
            .map_err(|e| ws_error(&path, e))?;
        check_abort(&call.cancel)?;
        ctx.tracker.record(&abs, snap.id);
        if let Some(mime) = sniff_image(&snap.bytes) {
            if snap.bytes.len() > MAX_IMAGE_BYTES {
                return Err(ToolError::new(format!(
                    "Cannot attach {path}: the {mime} image is {}, over the {} limit (images are not resized). \
                     Use bash to make a smaller copy if an image tool is installed.",
                    format_size(snap.bytes.len()),
                    format_size(MAX_IMAGE_BYTES)
                )));
            }
            return Ok(image_result(mime, &snap.bytes));
        }
        if looks_binary(&snap.bytes) {
            return Err(ToolError::new(format!(
                "Cannot read {path}: it is a binary file ({}). Use bash (for example `file` or `xxd | head`) to inspect it.",
                format_size(snap.bytes.len())
            )));
        }
        let text = String::from_utf8_lossy(&snap.bytes);
        read_text(&path, &text, self.offset, self.limit)
    }

    fn parameters(_: &ToolContext) -> Value {
        json!({"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string", "description": "Path to the file to read (relative to the workspace root, or absolute inside it)"},
            "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
            "limit": {"type": "number", "description": "Maximum number of lines to read"}
        }})
    }
}

fn image_result(mime: &str, bytes: &[u8]) -> AgentToolResult {
    AgentToolResult {
        content: vec![
            ContentBlock::text(format!("Read image file [{mime}]")),
            ContentBlock::Image(ImageContent {
                data: base64(bytes),
                mime_type: mime.to_string(),
            }),
        ],
        details: Some(json!({})),
        ..Default::default()
    }
}

/// pi's text path: select lines, head-truncate, append the continuation notice.
pub fn read_text(
    path: &str,
    text: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<AgentToolResult, ToolError> {
    let lines: Vec<&str> = text.split('\n').collect();
    let total = lines.len();
    let start = offset.map_or(0, |o| o.saturating_sub(1));
    if start >= total {
        return Err(ToolError::new(format!(
            "Offset {} is beyond end of file ({total} lines total)",
            offset.unwrap_or(0)
        )));
    }
    let end = limit.map_or(total, |l| (start.saturating_add(l)).min(total));
    let selected = lines[start..end].join("\n");
    let trunc = truncate_head(&selected, Limits::default());
    let first = start + 1;
    let out = if trunc.first_line_exceeds_limit {
        format!(
            "[Line {first} is {}, exceeds {} limit. Use bash: sed -n '{first}p' {path} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(lines[start].len()),
            format_size(DEFAULT_MAX_BYTES)
        )
    } else if trunc.truncated {
        let last = first + trunc.output_lines - 1;
        let bytes_note = if trunc.truncated_by == Some(super::truncate::TruncatedBy::Bytes) {
            format!(" ({} limit)", format_size(DEFAULT_MAX_BYTES))
        } else {
            String::new()
        };
        format!(
            "{}\n\n[Showing lines {first}-{last} of {total}{bytes_note}. Use offset={} to continue.]",
            trunc.content,
            last + 1
        )
    } else if limit.is_some() && end < total {
        format!(
            "{}\n\n[{} more lines in file. Use offset={} to continue.]",
            trunc.content,
            total - end,
            end + 1
        )
    } else {
        trunc.content.clone()
    };
    let details = if trunc.truncated {
        json!({ "truncation": trunc })
    } else {
        json!({})
    };
    Ok(AgentToolResult {
        details: Some(details),
        ..AgentToolResult::text(out)
    })
}
