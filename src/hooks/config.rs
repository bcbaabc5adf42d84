//! What is configured: the `hooks` key of the settings files, in Claude Code's shape.
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}}
//! ```
//!
//! Read from `$XDG_CONFIG_HOME/agent-lsp/settings.json` (the user's), then the project's
//! `.agent-lsp/settings.json` (shared) and `.agent-lsp/settings.local.json` (personal). Every
//! file's hooks run (none replaces another's); `disableAllHooks: true` in any of them turns all
//! off. A broken file or entry is reported, naming the file and the key, and the rest still
//! loads. Events agent-lsp does not fire (Claude Code has more) and hook types other than
//! `command` are reported and ignored.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::hooks::matcher::Matcher;

/// Claude Code's default timeout of a hook command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The events hooks run at (Claude Code's names).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[cfg_attr(test, derive(strum::EnumIter, strum::VariantNames))]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SubagentStop,
    SessionStart,
    SessionEnd,
    PreCompact,
    Notification,
}

impl HookEvent {
    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        name.parse().ok()
    }

    /// Whether a hook's exit code 2 or `decision: "block"` blocks something at this event;
    /// at the others it is only shown to the user.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::UserPromptSubmit
                | HookEvent::Stop
                | HookEvent::SubagentStop
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which settings file a hook comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HookSource {
    /// `$XDG_CONFIG_HOME/agent-lsp/settings.json`: runs without asking.
    User,
    /// `.agent-lsp/settings.json`: runs once the user trusted the project's hooks.
    Project,
    /// `.agent-lsp/settings.local.json`: the same.
    ProjectLocal,
}

impl HookSource {
    pub fn is_project(self) -> bool {
        self != HookSource::User
    }
}

/// One configured hook command.
#[derive(Clone, Debug)]
pub struct HookCommand {
    pub event: HookEvent,
    pub matcher: Matcher,
    pub command: String,
    pub timeout: Duration,
    pub source: HookSource,
    /// The settings file it is written in.
    pub file: PathBuf,
}

/// The hooks of one settings file.
#[derive(Clone, Debug)]
pub struct SettingsHooks {
    pub file: PathBuf,
    pub source: HookSource,
    pub hooks: Vec<HookCommand>,
    /// The file's `hooks` object as written: what a project's trust is given for.
    pub written: Map<String, Value>,
    /// `disableAllHooks: true`.
    pub disable_all: bool,
}

/// The settings files hooks are read from, with their source, in order.
pub fn settings_files(cwd: &Path, config_dir: Option<&Path>) -> Vec<(PathBuf, HookSource)> {
    let mut files = Vec::new();
    if let Some(dir) = config_dir {
        files.push((dir.join("settings.json"), HookSource::User));
    }
    let project = cwd.join(".agent-lsp");
    files.push((project.join("settings.json"), HookSource::Project));
    files.push((
        project.join("settings.local.json"),
        HookSource::ProjectLocal,
    ));
    files
}

/// The hooks of every settings file that has any (or sets `disableAllHooks`), and what could
/// not be used, one line each naming the file and the key.
pub fn load(cwd: &Path, config_dir: Option<&Path>) -> (Vec<SettingsHooks>, Vec<String>) {
    let mut loaded = Vec::new();
    let mut problems = Vec::new();
    for (file, source) in settings_files(cwd, config_dir) {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                problems.push(format!("cannot read {}: {e}", file.display()));
                continue;
            }
        };
        let mut found = Vec::new();
        if let Some(hooks) = parse_file(&text, &file, source, &mut found) {
            loaded.push(hooks);
        }
        let shown = file.display();
        problems.extend(found.into_iter().map(|p| format!("{shown}: {p}")));
    }
    (loaded, problems)
}

/// One file's hooks; problems are pushed as `key: what` (a broken file: why, and nothing loads).
fn parse_file(
    text: &str,
    file: &Path,
    source: HookSource,
    problems: &mut Vec<String>,
) -> Option<SettingsHooks> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            problems.push(format!("{e} (its hooks are ignored)"));
            return None;
        }
    };
    let disable_all = value.get("disableAllHooks").and_then(Value::as_bool) == Some(true);
    let written = match value.get("hooks") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(hooks)) => hooks.clone(),
        Some(_) => {
            problems.push("hooks: expected an object of events".into());
            Map::new()
        }
    };
    if written.is_empty() && !disable_all {
        return None;
    }
    let mut hooks = Vec::new();
    for (event_name, groups) in &written {
        let Some(event) = HookEvent::parse(event_name) else {
            problems.push(format!(
                "hooks.{event_name}: not an event agent-lsp fires (ignored)"
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            problems.push(format!("hooks.{event_name}: expected an array"));
            continue;
        };
        for (i, group) in groups.iter().enumerate() {
            let at = format!("hooks.{event_name}[{i}]");
            let place = Place {
                event,
                source,
                file,
            };
            hooks.extend(parse_group(group, &at, &place, problems));
        }
    }
    Some(SettingsHooks {
        file: file.to_path_buf(),
        source,
        hooks,
        written,
        disable_all,
    })
}

/// Where a group stands: its event and file.
struct Place<'a> {
    event: HookEvent,
    source: HookSource,
    file: &'a Path,
}

fn parse_group(
    group: &Value,
    at: &str,
    place: &Place<'_>,
    problems: &mut Vec<String>,
) -> Vec<HookCommand> {
    let Some(group) = group.as_object() else {
        problems.push(format!("{at}: expected an object"));
        return Vec::new();
    };
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => Matcher::all(),
        Some(Value::String(text)) => match Matcher::parse(Some(text)) {
            Ok(matcher) => matcher,
            Err(e) => {
                problems.push(format!("{at}.matcher: not a valid pattern ({e}); ignored"));
                return Vec::new();
            }
        },
        Some(_) => {
            problems.push(format!("{at}.matcher: expected a string"));
            return Vec::new();
        }
    };
    let Some(entries) = group.get("hooks").and_then(Value::as_array) else {
        problems.push(format!("{at}.hooks: expected an array"));
        return Vec::new();
    };
    let mut commands = Vec::new();
    for (j, entry) in entries.iter().enumerate() {
        let at = format!("{at}.hooks[{j}]");
        match parse_command(entry, &at, problems) {
            Some((command, timeout)) => commands.push(HookCommand {
                event: place.event,
                matcher: matcher.clone(),
                command,
                timeout,
                source: place.source,
                file: place.file.to_path_buf(),
            }),
            None => continue,
        }
    }
    commands
}

/// A `{type: "command", command, timeout?}` entry: its command and timeout.
fn parse_command(
    entry: &Value,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<(String, Duration)> {
    let Some(entry) = entry.as_object() else {
        problems.push(format!("{at}: expected an object"));
        return None;
    };
    match entry.get("type").and_then(Value::as_str) {
        Some("command") | None => {}
        Some(other) => {
            problems.push(format!(
                "{at}.type: \"{other}\" hooks are not supported (only \"command\"); ignored"
            ));
            return None;
        }
    }
    let command = match entry.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        _ => {
            problems.push(format!("{at}.command: expected a non-empty string"));
            return None;
        }
    };
    let timeout = match entry.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(t) => match t.as_f64().filter(|s| s.is_finite() && *s > 0.0) {
            Some(seconds) => Duration::from_secs_f64(seconds.min(24.0 * 3600.0)),
            None => {
                problems.push(format!(
                    "{at}.timeout: expected a positive number of seconds; 60 is used"
                ));
                DEFAULT_TIMEOUT
            }
        },
    };
    Some((command, timeout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_names_are_the_serde_tags_and_parse_back() {
        crate::testing::tags::assert_unit_names_are_serde_tags::<HookEvent>();
        for event in <HookEvent as strum::IntoEnumIterator>::iter() {
            assert_eq!(HookEvent::parse(event.name()), Some(event));
        }
        assert_eq!(HookEvent::parse("preToolUse"), None);
    }

    fn parse(value: Value) -> (Option<SettingsHooks>, Vec<String>) {
        let mut problems = Vec::new();
        let file = Path::new("/p/.agent-lsp/settings.json");
        let parsed = parse_file(&value.to_string(), file, HookSource::Project, &mut problems);
        (parsed, problems)
    }

    #[test]
    fn claude_codes_shape_is_read_with_defaults() {
        let (hooks, problems) = parse(json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "check.sh", "timeout": 5},
                {"command": "log.sh"}
            ]}],
            "Stop": [{"hooks": [{"type": "command", "command": "more.sh"}]}]
        }}));
        assert!(problems.is_empty(), "{problems:?}");
        let hooks = hooks.unwrap();
        let commands: Vec<(&str, u64)> = (hooks.hooks.iter())
            .map(|h| (h.command.as_str(), h.timeout.as_secs()))
            .collect();
        assert_eq!(commands, [("check.sh", 5), ("log.sh", 60), ("more.sh", 60)]);
        assert_eq!(hooks.hooks[0].event, HookEvent::PreToolUse);
        assert!(hooks.hooks[0].matcher.matches(&["Bash"]));
        assert!(!hooks.hooks[0].matcher.matches(&["Read"]));
        assert!(hooks.hooks[2].matcher.matches(&["anything"]));
        assert_eq!(hooks.written.len(), 2);
    }

    #[test]
    fn problems_name_the_key_and_the_rest_loads() {
        let (hooks, problems) = parse(json!({"hooks": {
            "PostToolUseFailure": [],
            "PreToolUse": [
                {"matcher": "(", "hooks": [{"command": "a"}]},
                {"hooks": [{"type": "http", "url": "http://x"}, {"command": ""},
                           {"command": "b", "timeout": -1}]}
            ],
            "Stop": {}
        }}));
        assert_eq!(
            problems,
            [
                "hooks.PostToolUseFailure: not an event agent-lsp fires (ignored)",
                "hooks.PreToolUse[0].matcher: not a valid pattern (regex parse error:\n    (\n    ^\nerror: unclosed group); ignored",
                "hooks.PreToolUse[1].hooks[0].type: \"http\" hooks are not supported (only \"command\"); ignored",
                "hooks.PreToolUse[1].hooks[1].command: expected a non-empty string",
                "hooks.PreToolUse[1].hooks[2].timeout: expected a positive number of seconds; 60 is used",
                "hooks.Stop: expected an array",
            ]
        );
        let hooks = hooks.unwrap().hooks;
        assert_eq!(hooks.len(), 1);
        assert_eq!(hooks[0].command, "b");
    }

    #[test]
    fn a_file_without_hooks_is_none_and_a_broken_one_says_so() {
        assert!(parse(json!({"permissions": {}})).0.is_none());
        let (off, _) = parse(json!({"disableAllHooks": true}));
        assert!(off.unwrap().disable_all);
        let mut problems = Vec::new();
        let file = Path::new("/p/settings.json");
        assert!(parse_file("{", file, HookSource::User, &mut problems).is_none());
        assert!(
            problems[0].ends_with("(its hooks are ignored)"),
            "{problems:?}"
        );
    }
}
