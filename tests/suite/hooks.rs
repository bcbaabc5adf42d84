//! Hooks (issue 35): Claude Code's hook configuration through the real binary: `agent-lsp run`,
//! the daemon and ACP. Every hook here is a shell command that appends its input to
//! `$HOME/hooks.jsonl` (one JSON line per run) and answers as the test needs.

mod acp;
mod daemon;
mod run;

use std::path::Path;

use serde_json::{Value, json};

/// Appends the hook's input to `$HOME/hooks.jsonl`.
const LOG: &str = r#"cat >> "$HOME/hooks.jsonl"; echo >> "$HOME/hooks.jsonl""#;

/// A `command` hook entry.
fn hook(command: &str) -> Value {
    json!({"type": "command", "command": command})
}

/// One group of an event: `matcher` (or none) and its hooks.
fn group(matcher: Option<&str>, hooks: &[Value]) -> Value {
    match matcher {
        Some(m) => json!({"matcher": m, "hooks": hooks}),
        None => json!({"hooks": hooks}),
    }
}

/// Writes `hooks` as the `hooks` of the user's `settings.json` in the sealed `home`.
fn user_hooks(home: &Path, hooks: Value) {
    let dir = home.join("config/agent-lsp");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({ "hooks": hooks });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// Writes `hooks` as the `hooks` of the project's `.agent-lsp/settings.json`.
fn project_hooks(project: &Path, hooks: Value) {
    let dir = project.join(".agent-lsp");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({ "hooks": hooks });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// Every input the logging hooks received, in order.
fn logged(home: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(home.join("hooks.jsonl")).unwrap_or_default();
    (text.lines())
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The events of the logged inputs, in order.
fn events_of(logged: &[Value]) -> Vec<&str> {
    (logged.iter())
        .map(|l| l["hook_event_name"].as_str().unwrap())
        .collect()
}

/// The logged input of `event` (the first).
fn input<'a>(logged: &'a [Value], event: &str) -> &'a Value {
    (logged.iter())
        .find(|l| l["hook_event_name"] == event)
        .unwrap_or_else(|| panic!("no {event} hook ran: {logged:?}"))
}

/// A session file's `agent-lsp.hook` entries.
fn hook_entries(lines: &[Value]) -> Vec<&Value> {
    (lines.iter())
        .filter(|l| l["type"] == "custom" && l["customType"] == "agent-lsp.hook")
        .map(|l| &l["data"])
        .collect()
}
