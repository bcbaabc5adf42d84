//! `edit {path, edits: [{oldText, newText}]}`: exact (or fuzzy) replacements, all matched
//! against the original content and applied together or not at all. BOM, CRLF and permissions
//! are kept; the write is atomic and refused if the file changed since the agent read it.

use serde::{Deserialize, Deserializer, de};
use serde_json::{Value, json};

use super::args::parse_args;
use super::common::{self, Call, ToolArgs, ToolContext, normalize_to_lf};
use super::edit_match::Edit;
use super::workspace::EditRequest;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::workspace::compute_edit;

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
