//! Tool names and arguments as hooks see them.
//!
//! Scripts written for Claude Code test `tool_name == "Bash"` and read `tool_input.command` or
//! `tool_input.file_path`; ours are named `bash` and take `path`. So a hook's `tool_name` is
//! Claude Code's name for the tool where it has one (`Bash`, `Read`, `Edit`, `Write`, `Grep`,
//! `Glob` for `find`, `LS`, `WebFetch`, `WebSearch`, `TodoWrite`, `AskUserQuestion`,
//! `BashOutput`, `KillShell` for `bash_kill`, `mcp__<server>__<tool>` for an MCP tool), else
//! ours; a matcher matches when it matches either name; and `tool_input` is our arguments with
//! Claude Code's names for the same values added (`file_path`, absolute; `old_string` and
//! `new_string` for a single edit). An `updatedInput` a hook returns is read back the same way.

use std::path::Path;

use serde_json::{Map, Value, json};

/// Claude Code's name for one of our tools, if it has one (`mcp`: an MCP tool's server and
/// tool name as the server gives them).
pub fn claude_name(tool: &str, mcp: Option<(&str, &str)>) -> Option<String> {
    if let Some((server, name)) = mcp {
        return Some(format!("mcp__{server}__{name}"));
    }
    let name = match tool {
        "bash" => "Bash",
        "read" => "Read",
        "edit" => "Edit",
        "write" => "Write",
        "grep" => "Grep",
        "find" => "Glob",
        "ls" => "LS",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        "todo_write" => "TodoWrite",
        "ask_user" => "AskUserQuestion",
        "bash_output" => "BashOutput",
        "bash_kill" => "KillShell",
        _ => return None,
    };
    Some(name.to_owned())
}

/// Tools whose `path` is a file Claude Code calls `file_path`.
fn has_file_path(tool: &str) -> bool {
    matches!(tool, "read" | "write" | "edit")
}

/// `tool_input`: the call's arguments plus Claude Code's names for them.
pub fn hook_input(tool: &str, args: &Value, cwd: &Path) -> Value {
    let Value::Object(fields) = args else {
        return args.clone();
    };
    let mut input = fields.clone();
    if has_file_path(tool)
        && let Some(path) = fields.get("path").and_then(Value::as_str)
    {
        let absolute = cwd.join(path);
        input.insert("file_path".into(), json!(absolute.display().to_string()));
    }
    if tool == "edit"
        && let Some((old, new)) = single_edit(fields)
    {
        input.insert("old_string".into(), old);
        input.insert("new_string".into(), new);
    }
    Value::Object(input)
}

/// The one edit's texts, when the call makes exactly one.
fn single_edit(fields: &Map<String, Value>) -> Option<(Value, Value)> {
    let edit = match fields.get("edits") {
        Some(Value::Array(edits)) if edits.len() == 1 => edits[0].as_object()?,
        Some(_) => return None,
        None => fields,
    };
    Some((edit.get("oldText")?.clone(), edit.get("newText")?.clone()))
}

/// A hook's `updatedInput` as our tool's arguments: the names [`hook_input`] added are taken
/// out, and where our own field is missing, Claude Code's stands in for it.
pub fn from_hook_input(tool: &str, updated: &Value) -> Value {
    let Value::Object(fields) = updated else {
        return updated.clone();
    };
    let mut args = fields.clone();
    let file_path = args.remove("file_path");
    if has_file_path(tool)
        && !args.contains_key("path")
        && let Some(path) = file_path
    {
        args.insert("path".into(), path);
    }
    let (old, new) = (args.remove("old_string"), args.remove("new_string"));
    if tool == "edit"
        && !args.contains_key("edits")
        && !args.contains_key("oldText")
        && let (Some(old), Some(new)) = (old, new)
    {
        args.insert("edits".into(), json!([{"oldText": old, "newText": new}]));
    }
    Value::Object(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_names() {
        assert_eq!(claude_name("bash", None).as_deref(), Some("Bash"));
        assert_eq!(claude_name("find", None).as_deref(), Some("Glob"));
        assert_eq!(claude_name("diagnostics", None), None);
        assert_eq!(
            claude_name("fs__read_file", Some(("fs", "read_file"))).as_deref(),
            Some("mcp__fs__read_file")
        );
    }

    #[test]
    fn inputs_carry_claude_codes_field_names_and_come_back_as_ours() {
        let cwd = Path::new("/p");
        let args = json!({"path": "src/a.rs", "edits": [{"oldText": "a", "newText": "b"}]});
        let input = hook_input("edit", &args, cwd);
        assert_eq!(input["file_path"], "/p/src/a.rs");
        assert_eq!(input["old_string"], "a");
        assert_eq!(input["new_string"], "b");
        assert_eq!(from_hook_input("edit", &input), args);
        let bash = json!({"command": "ls", "timeout": 5});
        assert_eq!(hook_input("bash", &bash, cwd), bash);
        let claude_only = json!({"file_path": "/p/b.rs", "old_string": "x", "new_string": "y"});
        assert_eq!(
            from_hook_input("edit", &claude_only),
            json!({"path": "/p/b.rs", "edits": [{"oldText": "x", "newText": "y"}]})
        );
        let two = json!({"path": "a", "edits": [{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}]});
        assert!(hook_input("edit", &two, cwd).get("old_string").is_none());
    }
}
