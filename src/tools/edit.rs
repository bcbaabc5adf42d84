//! `edit {path, edits: [{oldText, newText}]}`: exact (or fuzzy) replacements, all matched
//! against the original content and applied together or not at all. BOM, CRLF and permissions
//! are kept; the write is atomic and refused if the file changed since the agent read it.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, de};
use serde_json::{Value, json};

use super::args::parse_args;
use super::common::{
    self, Call, ToolArgs, ToolContext, check_abort, conflict_text, detect_crlf, normalize_to_lf,
    restore_line_endings, strip_bom, ws_error,
};
use super::diff::{DiffResult, diff};
use super::edit_match::{Edit, Span, match_edits, no_change, splice};
use super::workspace::{EditOutcome, EditRequest, Workspace, WorkspaceError};
use crate::agent::tool::{AgentToolResult, ToolError};

/// An `edit` call's arguments.
#[derive(Deserialize)]
pub struct EditArgs {
    pub path: String,
    /// Texts converted to LF.
    #[serde(deserialize_with = "edit_list")]
    pub edits: Vec<Edit>,
}

impl ToolArgs for EditArgs {
    const NAME: &str = "edit";
    const DESCRIPTION: &str = "Edit a file by replacing exact text. Give one or more edits; each oldText must match the file exactly \
(including whitespace and newlines) and appear exactly once. All edits are matched against the original file, not applied one after another, \
and either all apply or none does. Make several changes to one file in a single call with multiple disjoint edits; \
keep each oldText minimal but unique (add surrounding lines only to disambiguate), and merge nearby changes into one edit. \
Read the file first; if the file was modified since you last read it, the edit is refused and you must read it again.";
    type State = ToolContext;

    async fn run(self, ctx: ToolContext, call: Call) -> Result<AgentToolResult, ToolError> {
        let EditArgs { path, edits } = self;
        let (abs, _turn) = ctx.lock_file(&path, &call.cancel).await?;
        let request = EditRequest {
            shown: &path,
            edits: &edits,
            seen: ctx.tracker.get(&abs),
            apply: true,
            cancel: &call.cancel,
        };
        let outcome = ctx.ws.edit(abs.clone(), request).await?;
        ctx.tracker.record(&abs, outcome.id);
        let text = format!("Successfully replaced {} block(s) in {path}.", edits.len());
        let d = outcome.diff;
        Ok(AgentToolResult {
            details: Some(json!({
                "diff": d.diff,
                "patch": d.patch,
                "firstChangedLine": d.first_changed_line,
            })),
            ..AgentToolResult::text(common::with_unsaved_note(text, outcome.unsaved, &path))
        })
    }

    fn parameters(_: &ToolContext) -> Value {
        json!({"type": "object", "required": ["path", "edits"], "properties": {
            "path": {"type": "string", "description": "Path to the file to edit (relative to the workspace root, or absolute inside it)"},
            "edits": {
                "type": "array",
                "description": "Replacements, each matched against the original file content",
                "items": {
                    "type": "object",
                    "required": ["oldText", "newText"],
                    "properties": {
                        "oldText": {"type": "string", "description": "Exact text to replace; must occur exactly once in the file"},
                        "newText": {"type": "string", "description": "The text to put in its place"}
                    }
                }
            }
        }})
    }

    fn prepare_arguments(args: Value) -> Value {
        prepare_edit_arguments(args)
    }
}

/// `edits`: a non-empty array of `{oldText, newText}`, with pi's texts when it is not.
fn edit_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Edit>, D::Error> {
    let Some(Value::Array(list)) = Option::<Value>::deserialize(d)? else {
        return Err(de::Error::custom(
            "Edit tool input is invalid. edits must be an array.",
        ));
    };
    if list.is_empty() {
        return Err(de::Error::custom(
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ));
    }
    list.into_iter()
        .map(|entry| {
            let edit: Edit = parse_args(entry).map_err(|e| de::Error::custom(e.message))?;
            Ok(Edit {
                old_text: normalize_to_lf(&edit.old_text),
                new_text: normalize_to_lf(&edit.new_text),
            })
        })
        .collect()
}

/// pi's `prepareArguments`: `edits` sent as a JSON string is parsed, and a legacy top-level
/// `{oldText, newText}` pair is appended to `edits`.
pub fn prepare_edit_arguments(mut args: Value) -> Value {
    let Some(obj) = args.as_object_mut() else {
        return args;
    };
    if let Some(Value::String(s)) = obj.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(s)
    {
        obj.insert("edits".into(), parsed);
    }
    if let (Some(Value::String(_)), Some(Value::String(_))) =
        (obj.get("oldText"), obj.get("newText"))
    {
        let old = obj.remove("oldText").unwrap_or(Value::Null);
        let new = obj.remove("newText").unwrap_or(Value::Null);
        let entry = json!({"oldText": old, "newText": new});
        match obj.get_mut("edits") {
            Some(Value::Array(list)) => list.push(entry),
            _ => {
                obj.insert("edits".into(), Value::Array(vec![entry]));
            }
        }
    }
    args
}

/// The edits of validated arguments, texts converted to LF.
pub fn parse_edits(args: &Value) -> Result<Vec<Edit>, ToolError> {
    parse_args::<EditArgs>(args.clone()).map(|args| args.edits)
}

/// The new full content of a file after `edits`, plus the diff (on LF text).
///
/// Matching happens on LF text, but the spans are mapped back to the original bytes and only
/// they are replaced (new text takes the file's line ending), so every untouched byte, including
/// the line endings of a mixed-ending file, stays as it was.
pub fn compute_edit(
    raw: &[u8],
    edits: &[Edit],
    path: &str,
) -> Result<(Vec<u8>, DiffResult), ToolError> {
    let text = std::str::from_utf8(raw).map_err(|_| {
        ToolError::new(format!(
            "Could not edit {path}: it is not UTF-8 text. Use write to replace it, or bash for binary files."
        ))
    })?;
    let (bom, body) = strip_bom(text);
    let crlf = detect_crlf(body);
    // Most files have no `\r`: then the LF text is the body itself and offsets map to
    // themselves, which saves a copy and an offset table as large as the file.
    let has_cr = body.contains('\r');
    let (lf, original) = if has_cr {
        let (lf, map) = lf_with_map(body);
        let spans = match_edits(&lf, edits, path).map_err(ToolError::new)?;
        let original: Vec<Span> = spans.iter().map(|&(s, e, i)| (map[s], map[e], i)).collect();
        (Cow::Owned(lf), original)
    } else {
        let spans = match_edits(body, edits, path).map_err(ToolError::new)?;
        (Cow::Borrowed(body), spans)
    };
    let new_body = splice(body, &original, |i| {
        restore_line_endings(&edits[i].new_text, crlf)
    });
    if new_body == body {
        return Err(ToolError::new(no_change(path, edits.len() > 1)));
    }
    let d = if has_cr {
        diff(&lf, &normalize_to_lf(&new_body), path)
    } else {
        diff(&lf, &new_body, path)
    };
    let bytes = if bom.is_empty() {
        new_body.into_bytes()
    } else {
        format!("{bom}{new_body}").into_bytes()
    };
    Ok((bytes, d))
}

/// `text` with `\r\n` and lone `\r` turned into `\n`, and for each byte offset of the result
/// (plus its end) the matching offset in `text`.
fn lf_with_map(text: &str) -> (String, Vec<usize>) {
    let bytes = text.as_bytes();
    let mut lf = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len() + 1);
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        let len = c.len_utf8();
        if c == '\r' {
            map.push(i);
            lf.push('\n');
            i += if bytes.get(i + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            continue;
        }
        map.extend(i..i + len);
        lf.push(c);
        i += len;
    }
    map.push(text.len());
    (lf, map)
}

fn errno(e: &WorkspaceError) -> &'static str {
    match e {
        WorkspaceError::NotFound(_) => "ENOENT",
        WorkspaceError::PermissionDenied(_) => "EACCES",
        WorkspaceError::IsDirectory(_) => "EISDIR",
        _ => "EIO",
    }
}

/// The tool's error for a failed write of the edited content.
pub fn edit_write_error(shown: &str, e: WorkspaceError) -> ToolError {
    match e {
        WorkspaceError::PermissionDenied(_) => {
            ToolError::new(format!("Could not edit file: {shown}. Error code: EACCES."))
        }
        other => ws_error(shown, other),
    }
}

/// The tool's error when the file is not what the agent last saw.
pub fn seen_conflict(shown: &str) -> ToolError {
    ToolError::new(conflict_text(shown))
}

/// [`Workspace::edit`] by reading the whole file, computing the new content and writing it
/// back (refused if the file changed meanwhile). Every workspace can do this; the daemon does
/// better for open buffers.
pub async fn edit_by_rewrite<W: Workspace + ?Sized>(
    ws: &W,
    abs: PathBuf,
    req: EditRequest<'_>,
) -> Result<EditOutcome, ToolError> {
    let shown = req.shown;
    let snap = match ws.read(abs.clone()).await {
        Ok(snap) if req.seen.is_some_and(|seen| !snap.is(&seen)) => {
            return Err(seen_conflict(shown));
        }
        Ok(snap) => snap,
        Err(e @ WorkspaceError::NotFound(_)) => {
            return Err(ToolError::new(format!(
                "Could not edit file: {shown}. Error code: {}.",
                errno(&e)
            )));
        }
        Err(e) => return Err(ws_error(shown, e)),
    };
    check_abort(req.cancel)?;
    let (bytes, diff) = compute_edit(&snap.bytes, req.edits, shown)?;
    if !req.apply {
        return Ok(EditOutcome {
            id: snap.id,
            diff,
            unsaved: None,
        });
    }
    let outcome = ws
        .write(abs, bytes, Some(snap.id))
        .await
        .map_err(|e| edit_write_error(shown, e))?;
    Ok(EditOutcome {
        id: outcome.id,
        diff,
        unsaved: outcome.unsaved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn mixed_line_endings_keep_untouched_bytes() {
        let raw = b"a\r\nb\nc\r\nd\n";
        let (out, d) = compute_edit(raw, &[edit("c\nd", "C\nD")], "m").unwrap();
        assert_eq!(out, b"a\r\nb\nC\r\nD\n");
        assert_eq!(d.first_changed_line, Some(3));
        let (out, _) =
            compute_edit("x\ry\u{e9}\r\n".as_bytes(), &[edit("y\u{e9}", "z")], "m").unwrap();
        assert_eq!(out, b"x\rz\r\n");
    }
}
