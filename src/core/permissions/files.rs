//! The settings files that hold permission rules: where they are, reading them (again when they
//! change on disk) and adding a rule to one.
//!
//! - user: `$XDG_CONFIG_HOME/agent-lsp/settings.json`;
//! - project (shared, committed): `<project>/.agent-lsp/settings.json`;
//! - project, personal: `<project>/.agent-lsp/settings.local.json`, where "always for this
//!   project" answers are saved; created git-ignored (`.git/info/exclude`) as Claude Code does
//!   for its own `settings.local.json`;
//! - Claude Code's project file `<project>/.claude/settings.json`: read, never written.
//!
//! Each holds `{"permissions": {"allow": […], "ask": […], "deny": […]}}` among other settings.
//! A rule is added by reading the file, changing the one list and writing it whole through a
//! temporary file and a rename, so every other key stays as it was; a file that is not a JSON
//! object is refused, never overwritten.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::rule::Behavior;

/// Where a rule comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    User,
    Project,
    ProjectLocal,
    ClaudeProject,
    InitializationOptions,
    Session,
}

impl Source {
    /// Files in the project, which anyone with commit access (or a command run there) can
    /// write: their allow rules need the user's trust.
    pub fn in_project(self) -> bool {
        matches!(
            self,
            Source::Project | Source::ProjectLocal | Source::ClaudeProject
        )
    }

    pub fn key(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
            Source::ProjectLocal => "projectLocal",
            Source::ClaudeProject => "claudeProject",
            Source::InitializationOptions => "initializationOptions",
            Source::Session => "session",
        }
    }
}

/// The three lists, as written in a settings file or `initializationOptions.permissions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RuleLists {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

impl RuleLists {
    /// Each rule with what it says, deny first.
    pub fn entries(&self) -> impl Iterator<Item = (Behavior, &String)> {
        let tag = |behavior| move |rule| (behavior, rule);
        (self.deny.iter().map(tag(Behavior::Deny)))
            .chain(self.ask.iter().map(tag(Behavior::Ask)))
            .chain(self.allow.iter().map(tag(Behavior::Allow)))
    }
}

/// The settings files of a session, user first.
pub fn locations(config_dir: Option<&Path>, project: &Path) -> Vec<(Source, PathBuf)> {
    let mut files = Vec::new();
    if let Some(dir) = config_dir {
        files.push((Source::User, dir.join("settings.json")));
    }
    files.push((Source::Project, project.join(".agent-lsp/settings.json")));
    files.push((
        Source::ProjectLocal,
        project.join(".agent-lsp/settings.local.json"),
    ));
    files.push((Source::ClaudeProject, project.join(".claude/settings.json")));
    files
}

#[derive(Deserialize)]
struct Settings {
    #[serde(default)]
    permissions: RuleLists,
}

/// A file's rules, read again whenever the file changes.
pub struct Watched {
    pub source: Source,
    pub path: PathBuf,
    stamp: Option<Stamp>,
    read: Result<RuleLists, String>,
}

/// What tells a changed file: its modification time, length and inode.
type Stamp = (SystemTime, u64, u64);

impl Watched {
    pub fn new(source: Source, path: PathBuf) -> Self {
        Watched {
            source,
            path,
            stamp: None,
            read: Ok(RuleLists::default()),
        }
    }

    /// Reads the file again if it changed; `true` when it did.
    pub fn refresh(&mut self) -> bool {
        let stamp = std::fs::metadata(&self.path).ok().map(|m| {
            use std::os::unix::fs::MetadataExt;
            (
                m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                m.len(),
                m.ino(),
            )
        });
        if stamp == self.stamp && stamp.is_some() {
            return false;
        }
        let changed = stamp.is_some() || self.stamp.is_some();
        self.stamp = stamp;
        self.read = read(&self.path);
        changed
    }

    /// The file's lists, or why it cannot be read.
    pub fn lists(&self) -> Result<&RuleLists, &str> {
        self.read.as_ref().map_err(String::as_str)
    }
}

/// A file's lists: none for a missing file, an error naming the file for a broken one.
fn read(path: &Path) -> Result<RuleLists, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RuleLists::default()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    serde_json::from_slice::<Settings>(&bytes)
        .map(|s| s.permissions)
        .map_err(|e| format!("{}: its permissions cannot be read: {e}", path.display()))
}

/// Why a rule could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid JSON ({error}); the rule was not saved, and the file was left as it is", path.display())]
    NotJson { path: PathBuf, error: String },
    #[error("{}: {what} is not {expected}; the rule was not saved, and the file was left as it is", path.display())]
    Shape {
        path: PathBuf,
        what: String,
        expected: &'static str,
    },
    #[error("no user settings folder: HOME and XDG_CONFIG_HOME are unset")]
    NoUserFolder,
}

/// One writer at a time in this process: two answers must not lose each other's rule.
static WRITING: Mutex<()> = Mutex::new(());

/// Adds `rules` to the `behavior` list of the settings file at `path` (created with its folder
/// when missing); the file's other keys and rules stay. `Ok(true)` when the file was created.
pub fn add_rules(path: &Path, behavior: Behavior, rules: &[String]) -> Result<bool, SaveError> {
    let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    // A settings file linked from elsewhere (a dotfiles checkout) is written where it lives.
    let path = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    let io = |source| SaveError::Io {
        path: path.clone(),
        source,
    };
    let (mut root, created) = match std::fs::read(&path) {
        Ok(bytes) => {
            let value: Value = serde_json::from_slice(&bytes).map_err(|e| SaveError::NotJson {
                path: path.clone(),
                error: e.to_string(),
            })?;
            (value, false)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Value::Object(Map::new()), true),
        Err(e) => return Err(io(e)),
    };
    let shape = |what: &str, expected| SaveError::Shape {
        path: path.clone(),
        what: what.to_owned(),
        expected,
    };
    let object = root
        .as_object_mut()
        .ok_or_else(|| shape("the file", "an object"))?;
    let permissions = object
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| shape("`permissions`", "an object"))?;
    let list = permissions
        .entry(behavior.key())
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| shape(&format!("`permissions.{}`", behavior.key()), "a list"))?;
    for rule in rules {
        if !list.iter().any(|r| r.as_str() == Some(rule)) {
            list.push(Value::from(rule.as_str()));
        }
    }
    let mut text = serde_json::to_vec_pretty(&root).map_err(|e| io(std::io::Error::other(e)))?;
    text.push(b'\n');
    replace(&path, &text).map_err(io)?;
    Ok(created)
}

/// Writes `path` whole through a temporary file beside it and a rename, keeping its mode.
fn replace(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    std::fs::write(&temp, text)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

/// Makes git ignore the personal settings file `file` of `project` (a git work tree), through
/// `info/exclude`, unless git ignores it already. Best effort: without git nothing happens.
pub fn exclude_from_git(project: &Path, file: &Path) {
    let Ok(relative) = file.strip_prefix(project) else {
        return;
    };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(project)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
    };
    let relative = relative.to_string_lossy();
    match git(&["check-ignore", "-q", "--", &relative]) {
        Some(out) if out.status.code() == Some(1) => {}
        _ => return, // ignored already (0), or not a git work tree / no git (128, None)
    }
    let Some(out) = git(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "info/exclude",
    ])
    .filter(|out| out.status.success()) else {
        return;
    };
    let exclude = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("/{relative}\n"));
    let written = exclude
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&exclude, text));
    if let Err(e) = written {
        tracing::warn!(%e, file = %exclude.display(), "cannot add the personal settings file to git's excludes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn adding_keeps_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(
            &path,
            r#"{"model": "x", "permissions": {"deny": ["Bash(rm:*)"], "defaultMode": "plan"}}"#,
        )
        .unwrap();
        let rules = vec!["Bash(git status:*)".to_owned()];
        assert!(!add_rules(&path, Behavior::Allow, &rules).unwrap());
        add_rules(&path, Behavior::Allow, &rules).unwrap();
        let value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            value,
            json!({"model": "x", "permissions": {"deny": ["Bash(rm:*)"], "defaultMode": "plan",
                "allow": ["Bash(git status:*)"]}})
        );
        let lists = read(&path).unwrap();
        assert_eq!(lists.allow, ["Bash(git status:*)"]);
        assert_eq!(lists.deny, ["Bash(rm:*)"]);
    }

    #[test]
    fn a_broken_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{not json").unwrap();
        let err = add_rules(&path, Behavior::Allow, &["Bash".into()]).unwrap_err();
        assert!(matches!(err, SaveError::NotJson { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
        std::fs::write(&path, r#"{"permissions": {"allow": "Bash"}}"#).unwrap();
        let err = add_rules(&path, Behavior::Allow, &["Bash".into()]).unwrap_err();
        assert!(err.to_string().contains("permissions.allow"), "{err}");
        assert!(read(&path).is_err());
    }

    #[test]
    fn a_new_file_is_created_with_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".agent-lsp/settings.local.json");
        assert!(add_rules(&path, Behavior::Deny, &["Edit(/a)".into()]).unwrap());
        assert_eq!(read(&path).unwrap().deny, ["Edit(/a)"]);
        let mut watched = Watched::new(Source::ProjectLocal, path.clone());
        assert!(watched.refresh());
        assert!(!watched.refresh());
        add_rules(&path, Behavior::Deny, &["Edit(/b)".into()]).unwrap();
        assert!(watched.refresh());
        assert_eq!(watched.lists().unwrap().deny, ["Edit(/a)", "Edit(/b)"]);
    }
}
