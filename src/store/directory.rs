//! Where sessions live and how they are found: one directory per working directory, named as pi
//! names it (`--<cwd with / replaced by ->--/<ISO time>_<uuid>.jsonl`), under the store root.

use std::path::{Path, PathBuf};

use crate::agent::model::Model;
use crate::model_registry::EnvSource;

use super::SessionError;
use super::entry::{EntryKind, SessionEntry, SessionHeader};
use super::file::read_lines;
use super::session_file::{SessionFile, count_messages, split_header};

/// A directory of sessions.
#[derive(Clone, Debug)]
pub struct SessionStore {
    root: PathBuf,
}

/// One line of `agent-lsp sessions list`.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub cwd: String,
    pub name: Option<String>,
    /// ISO time the session was created.
    pub created: String,
    /// Last modification of the file (milliseconds since the epoch).
    pub updated_ms: i64,
    pub message_count: usize,
    /// The first line of the first user message, if any.
    pub first_prompt: Option<String>,
}

impl SessionSummary {
    /// What a listing shows: the session's name, else its first prompt.
    pub fn title(&self) -> String {
        self.name
            .clone()
            .or_else(|| self.first_prompt.clone())
            .unwrap_or_default()
    }
}

/// Where a fork starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkPoint<'a> {
    /// Copy the whole current branch (pi's `clone`).
    Leaf,
    /// pi's `fork(entryId)`: the entry must be a user message; the new session holds the path up
    /// to its parent, and the message's text is returned for re-editing.
    BeforeUserMessage(&'a str),
}

impl SessionStore {
    pub fn new(root: impl Into<PathBuf>) -> SessionStore {
        SessionStore { root: root.into() }
    }

    /// `AGENT_LSP_SESSION_DIR`, else `$XDG_DATA_HOME/agent-lsp/sessions`, else
    /// `~/.local/share/agent-lsp/sessions`.
    pub fn default_dir(env: &EnvSource) -> Option<PathBuf> {
        if let Some(dir) = env.get_nonempty("AGENT_LSP_SESSION_DIR") {
            return Some(PathBuf::from(dir));
        }
        let data = match env.get_nonempty("XDG_DATA_HOME") {
            Some(dir) => PathBuf::from(dir),
            None => PathBuf::from(env.get_nonempty("HOME")?).join(".local/share"),
        };
        Some(data.join("agent-lsp").join("sessions"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding the sessions of `cwd` (pi's encoding).
    pub fn dir_for_cwd(&self, cwd: &Path) -> PathBuf {
        let text = cwd.to_string_lossy();
        let trimmed = text.strip_prefix(['/', '\\']).unwrap_or(&text);
        let encoded: String = trimmed
            .chars()
            .map(|c| {
                if matches!(c, '/' | '\\' | ':') {
                    '-'
                } else {
                    c
                }
            })
            .collect();
        self.root.join(format!("--{encoded}--"))
    }

    /// Creates a session for `cwd`; with a model, the first entry records it.
    pub fn create(&self, cwd: &Path, model: Option<&Model>) -> Result<SessionFile, SessionError> {
        let mut session = SessionFile::create_in(&self.dir_for_cwd(cwd), cwd, None)?;
        if let Some(model) = model {
            session.append_model_change(&model.provider, &model.id)?;
        }
        Ok(session)
    }

    /// Opens a session by file path, full id, or unique id prefix.
    pub fn open(&self, id_or_path: &str) -> Result<SessionFile, SessionError> {
        let as_path = Path::new(id_or_path);
        if as_path.is_file() {
            return SessionFile::open_path(as_path);
        }
        // Files are named `<stamp>_<id>.jsonl` (as pi names them): a single file whose name
        // carries the id is opened without a listing, which parses every session whole.
        if let [one] = self.files_named(id_or_path).as_slice() {
            let session = SessionFile::open_path(one)?;
            if session.id().starts_with(id_or_path) {
                return Ok(session);
            }
        }
        let matches: Vec<SessionSummary> = self
            .list()?
            .into_iter()
            .filter(|s| s.id.starts_with(id_or_path))
            .collect();
        match matches.as_slice() {
            [one] => SessionFile::open_path(&one.path),
            [] => Err(SessionError::NotFound(id_or_path.into())),
            many => match many.iter().find(|s| s.id == id_or_path) {
                Some(exact) => SessionFile::open_path(&exact.path),
                None => Err(SessionError::Ambiguous(id_or_path.into(), many.len())),
            },
        }
    }

    /// Session files whose name ends in `_<id>.jsonl` with an id starting with `prefix`.
    fn files_named(&self, prefix: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        if prefix.is_empty() {
            return found;
        }
        let Ok(dirs) = std::fs::read_dir(&self.root) else {
            return found;
        };
        for dir in dirs.flatten() {
            let Ok(files) = std::fs::read_dir(dir.path()) else {
                continue;
            };
            for file in files.flatten() {
                let name = file.file_name();
                let id = name
                    .to_str()
                    .and_then(|n| n.strip_suffix(".jsonl"))
                    .and_then(|n| n.rsplit_once('_'))
                    .map(|(_, id)| id);
                if id.is_some_and(|id| id.starts_with(prefix)) {
                    found.push(file.path());
                }
            }
        }
        found
    }

    /// The most recently modified session of `cwd`, if any (`--continue`).
    pub fn latest_for_cwd(&self, cwd: &Path) -> Result<Option<SessionFile>, SessionError> {
        let latest = self
            .list_in(&self.dir_for_cwd(cwd))?
            .into_iter()
            .max_by_key(|s| s.updated_ms);
        latest.map(|s| SessionFile::open_path(&s.path)).transpose()
    }

    /// Every readable session under the root, most recently updated first.
    pub fn list(&self) -> Result<Vec<SessionSummary>, SessionError> {
        let mut all = Vec::new();
        let dirs = match std::fs::read_dir(&self.root) {
            Ok(dirs) => dirs,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(all),
            Err(e) => return Err(SessionError::io(&self.root, e)),
        };
        for dir in dirs.flatten() {
            if dir.path().is_dir() {
                all.extend(self.list_in(&dir.path())?);
            }
        }
        all.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
        Ok(all)
    }

    /// The sessions of one working directory, most recently updated first.
    pub fn list_for_cwd(&self, cwd: &Path) -> Result<Vec<SessionSummary>, SessionError> {
        let mut list = self.list_in(&self.dir_for_cwd(cwd))?;
        list.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
        Ok(list)
    }

    fn list_in(&self, dir: &Path) -> Result<Vec<SessionSummary>, SessionError> {
        let files = match std::fs::read_dir(dir) {
            Ok(files) => files,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(SessionError::io(dir, e)),
        };
        let mut out = Vec::new();
        for file in files.flatten() {
            let path = file.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            // Unreadable or foreign files are skipped in listings; opening one reports why.
            match summarize(&path) {
                Ok(summary) => out.push(summary),
                Err(e) => tracing::debug!(path = %path.display(), "skipping session: {e}"),
            }
        }
        Ok(out)
    }

    /// A new session holding a copy of `source`'s branch (see [`ForkPoint`]), with
    /// `parentSession` set to the source file. Returns the session and, for a fork before a
    /// user message, that message's text.
    pub fn fork(
        &self,
        source: &SessionFile,
        at: ForkPoint<'_>,
    ) -> Result<(SessionFile, Option<String>), SessionError> {
        let (leaf, selected) = match at {
            ForkPoint::Leaf => (source.leaf_id().map(str::to_string), None),
            ForkPoint::BeforeUserMessage(id) => {
                let entry = source
                    .entry(id)
                    .ok_or_else(|| SessionError::UnknownEntry(id.into()))?;
                let Some(crate::agent::message::AgentMessage::User(user)) = entry.kind.message()
                else {
                    return Err(SessionError::Refused(format!(
                        "entry {id} is not a user message; forks start at a user message"
                    )));
                };
                (entry.parent_id.clone(), Some(user.content.to_text()))
            }
        };
        let cwd = PathBuf::from(source.cwd());
        let parent = source.path().map(|p| p.to_string_lossy().into_owned());
        let mut fork = SessionFile::create_in(&self.dir_for_cwd(&cwd), &cwd, parent)?;
        let path: Vec<SessionEntry> = super::context::path_to(source.entries(), leaf.as_deref())
            .into_iter()
            .cloned()
            .collect();
        let on_path: std::collections::HashSet<&str> = path.iter().map(|e| e.id.as_str()).collect();
        let mut ids = std::collections::HashMap::new();
        for entry in &path {
            if matches!(entry.kind, EntryKind::Label { .. }) {
                continue; // Re-emitted below, resolved last-write-wins.
            }
            let new_id = fork.append(entry.kind.clone())?;
            ids.insert(entry.id.clone(), new_id);
        }
        for (target, label) in resolved_labels(source.entries()) {
            if let (true, Some(new_target)) = (on_path.contains(target.as_str()), ids.get(&target))
            {
                fork.append_label(new_target, Some(&label))?;
            }
        }
        Ok((fork, selected))
    }
}

/// Labels per target, last write wins; cleared labels removed.
fn resolved_labels(entries: &[SessionEntry]) -> Vec<(String, String)> {
    let mut labels: Vec<(String, Option<String>)> = Vec::new();
    for entry in entries {
        if let EntryKind::Label { target_id, label } = &entry.kind {
            labels.retain(|(t, _)| t != target_id);
            labels.push((target_id.clone(), label.clone()));
        }
    }
    labels
        .into_iter()
        .filter_map(|(t, l)| l.map(|l| (t, l)))
        .collect()
}

/// Reads a session file without locking or repairing it.
fn summarize(path: &Path) -> Result<SessionSummary, SessionError> {
    let (header, raw) = split_header(path, read_lines(path)?.lines)?;
    let header: SessionHeader = serde_json::from_value(serde_json::Value::Object(header))
        .map_err(|e| SessionError::invalid(path, e.to_string()))?;
    let entries: Vec<SessionEntry> = raw
        .into_iter()
        .filter_map(|v| SessionEntry::from_value(v).ok())
        .collect();
    let name = entries
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EntryKind::SessionInfo { name } => Some(name.clone().unwrap_or_default()),
            _ => None,
        })
        .filter(|n| !n.is_empty());
    let updated_ms = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Ok(SessionSummary {
        id: header.id,
        path: path.to_path_buf(),
        cwd: header.cwd,
        name,
        created: header.timestamp,
        updated_ms,
        message_count: count_messages(&entries),
        first_prompt: entries.iter().find_map(|e| match e.kind.message() {
            Some(crate::agent::message::AgentMessage::User(user)) => Some(
                user.content
                    .to_text()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => None,
        }),
    })
}
