//! One session file (pi's JSONL v3), open: the entry tree in memory, appended to disk entry by
//! entry.

use std::collections::HashSet;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent::message::{AgentMessage, ThinkingLevel, Usage};

use super::SessionError;
use super::context::{SessionContext, build_context, path_to};
use super::entry::{CURRENT_VERSION, EntryKind, SessionEntry, SessionHeader};
use super::file::{Writer, read_lines, repair_tail};
use super::migrate::{migrate, stamp_header};
use super::time::iso_now;

/// An open session. Every `append_*` writes and syncs one line before returning, so what a
/// caller has appended survives a crash. In-memory sessions (`--no-session`) have no file.
pub struct SessionFile {
    path: Option<PathBuf>,
    header: SessionHeader,
    entries: Vec<SessionEntry>,
    ids: HashSet<String>,
    leaf: Option<String>,
    writer: Option<Writer>,
}

impl std::fmt::Debug for SessionFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFile")
            .field("id", &self.header.id)
            .field("path", &self.path)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl SessionFile {
    /// A new session in `dir`, named as pi names it (`<ISO time>_<session id>.jsonl`, with `:`
    /// and `.` replaced by `-`); the header is written at once.
    pub fn create_in(
        dir: &Path,
        cwd: &Path,
        parent_session: Option<String>,
    ) -> Result<SessionFile, SessionError> {
        let header = new_header(cwd, parent_session);
        let stamp = header.timestamp.replace([':', '.'], "-");
        let path = dir.join(format!("{stamp}_{}.jsonl", header.id));
        SessionFile::create_with(path, header)
    }

    /// A new session at exactly `path` (pi's `--session <path>` for a file that does not exist).
    pub fn create_at(path: &Path, cwd: &Path) -> Result<SessionFile, SessionError> {
        if path.exists() {
            return Err(SessionError::Refused(format!(
                "{} already exists; open it instead",
                path.display()
            )));
        }
        SessionFile::create_with(path.to_path_buf(), new_header(cwd, None))
    }

    fn create_with(path: PathBuf, header: SessionHeader) -> Result<SessionFile, SessionError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Conversations can hold secrets from the project: private to the user.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| SessionError::io(dir, e))?;
        }
        let mut writer = Writer::open(&path)?;
        writer.append(&header)?;
        Ok(SessionFile {
            path: Some(path),
            header,
            entries: Vec::new(),
            ids: HashSet::new(),
            leaf: None,
            writer: Some(writer),
        })
    }

    /// A session that is never written (`--no-session`).
    pub fn in_memory(cwd: &Path) -> SessionFile {
        SessionFile {
            path: None,
            header: new_header(cwd, None),
            entries: Vec::new(),
            ids: HashSet::new(),
            leaf: None,
            writer: None,
        }
    }

    /// Opens an existing file for writing: takes the writer lock, repairs a torn tail, migrates
    /// older versions to v3 (rewriting the file atomically). The leaf is the last entry.
    pub fn open_path(path: &Path) -> Result<SessionFile, SessionError> {
        if !path.is_file() {
            return Err(SessionError::NotFound(path.display().to_string()));
        }
        let mut writer = Writer::open(path)?;
        // Check that this is a session before repairing anything: a file that is not one (a
        // mistyped path, another JSONL file, a binary) is refused untouched, never "repaired"
        // into an empty file (pi refuses to overwrite a non-empty invalid file, #6002).
        // The file is parsed once: checked, then repaired from the same lines.
        let loaded = read_lines(path)?;
        check_header(path, &loaded.lines)?;
        if loaded.torn {
            repair_tail(path, &loaded.lines)?;
            // The repair replaced the file by rename; append to the new one.
            writer.reopen()?;
        }
        let (mut header_raw, mut raw_entries) = split_header(path, loaded.lines)?;
        let version = header_raw
            .get("version")
            .and_then(Value::as_u64)
            .unwrap_or(1);
        if version > CURRENT_VERSION {
            return Err(SessionError::UnsupportedVersion {
                path: path.to_path_buf(),
                version,
            });
        }
        let mut taken: HashSet<String> = HashSet::new();
        let migrated = migrate(version, &mut raw_entries, &mut || new_entry_id(&mut taken));
        if migrated {
            stamp_header(&mut header_raw);
        }
        let header: SessionHeader = serde_json::from_value(Value::Object(header_raw))
            .map_err(|e| SessionError::invalid(path, format!("bad header: {e}")))?;
        let entries = raw_entries
            .into_iter()
            .map(SessionEntry::from_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SessionError::invalid(path, e.to_string()))?;
        let mut session = SessionFile {
            path: Some(path.to_path_buf()),
            ids: entries.iter().map(|e| e.id.clone()).collect(),
            leaf: entries.last().map(|e| e.id.clone()),
            header,
            entries,
            writer: None,
        };
        if migrated {
            writer.rewrite(&session.serialize_all()?)?;
        }
        session.writer = Some(writer);
        Ok(session)
    }

    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// Stops writing the file: the last sync is done and the writer lock released now (a
    /// process that ends with `exit` runs no destructors). Later appends stay in memory.
    pub fn close(&mut self) {
        self.writer = None;
    }

    /// The session file, `None` for an in-memory session.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    pub fn cwd(&self) -> &str {
        &self.header.cwd
    }

    /// Every entry in file order (abandoned branches included).
    pub fn entries(&self) -> &[SessionEntry] {
        &self.entries
    }

    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    pub fn entry(&self, id: &str) -> Option<&SessionEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// The entries on the path from the root to the leaf.
    pub fn branch_path(&self) -> Vec<&SessionEntry> {
        path_to(&self.entries, self.leaf.as_deref())
    }

    /// Model, thinking level and messages of the current branch (spec §C5).
    pub fn context(&self) -> SessionContext {
        build_context(&self.entries, self.leaf.as_deref())
    }

    /// The messages to give the loop: the current branch, summaries and extended roles converted.
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.context().messages
    }

    /// The display name (last `session_info` entry), if any.
    pub fn name(&self) -> Option<String> {
        self.entries
            .iter()
            .rev()
            .find_map(|e| match &e.kind {
                EntryKind::SessionInfo { name } => Some(name.clone().unwrap_or_default()),
                _ => None,
            })
            .filter(|n| !n.is_empty())
    }

    /// Number of `message` entries in the file.
    pub fn message_count(&self) -> usize {
        count_messages(&self.entries)
    }

    /// Tokens and cost of every assistant message in the session, all branches.
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for entry in &self.entries {
            if let Some(AgentMessage::Assistant(a)) = entry.kind.message() {
                total.accumulate(&a.usage);
            }
        }
        total
    }

    /// Appends an entry as a child of the leaf, writes and syncs it; returns its id.
    pub fn append(&mut self, kind: EntryKind) -> Result<String, SessionError> {
        let id = self.reserve_id();
        self.append_as(id, kind)
    }

    /// A new entry id, kept free for an entry appended later with [`SessionFile::append_as`]
    /// (a front end names a message before it is recorded).
    pub fn reserve_id(&mut self) -> String {
        new_entry_id(&mut self.ids)
    }

    /// [`SessionFile::append`] with an id from [`SessionFile::reserve_id`].
    pub fn append_as(&mut self, id: String, kind: EntryKind) -> Result<String, SessionError> {
        self.ids.insert(id.clone());
        let entry = SessionEntry {
            id,
            parent_id: self.leaf.clone(),
            timestamp: iso_now(),
            kind,
        };
        if let Some(writer) = &mut self.writer {
            writer.append(&entry)?;
        }
        let id = entry.id.clone();
        self.entries.push(entry);
        self.leaf = Some(id.clone());
        Ok(id)
    }

    /// Appends a message entry. Summary roles are synthesized from their own entry types and are
    /// refused here, as pi's `appendMessage` does.
    /// The message is shared with its other holders, not copied.
    pub fn append_message(&mut self, message: &AgentMessage) -> Result<String, SessionError> {
        let role = message.role();
        if role == "compactionSummary" || role == "branchSummary" {
            return Err(SessionError::Refused(format!(
                "a {role} message is not stored as a message entry"
            )));
        }
        self.append(EntryKind::Message {
            message: message.clone(),
        })
    }

    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<String, SessionError> {
        self.append(EntryKind::ModelChange {
            provider: provider.into(),
            model_id: model_id.into(),
        })
    }

    pub fn append_thinking_level(&mut self, level: ThinkingLevel) -> Result<String, SessionError> {
        self.append(EntryKind::ThinkingLevelChange {
            thinking_level: level.as_str().into(),
        })
    }

    /// Sets the display name; newlines become spaces (as pi normalizes since 0.80).
    pub fn set_name(&mut self, name: &str) -> Result<String, SessionError> {
        let name = name.split(['\r', '\n']).collect::<Vec<_>>().join(" ");
        let name = name.trim();
        if name.is_empty() {
            return Err(SessionError::Refused(
                "a session name cannot be empty".into(),
            ));
        }
        self.append(EntryKind::SessionInfo {
            name: Some(name.to_string()),
        })
    }

    pub fn append_label(
        &mut self,
        target_id: &str,
        label: Option<&str>,
    ) -> Result<String, SessionError> {
        if !self.ids.contains(target_id) {
            return Err(SessionError::UnknownEntry(target_id.into()));
        }
        self.append(EntryKind::Label {
            target_id: target_id.into(),
            label: label.map(str::to_string),
        })
    }

    /// Moves the leaf so the next append creates a sibling branch (`None`: before the root).
    pub fn branch(&mut self, entry_id: Option<&str>) -> Result<(), SessionError> {
        if let Some(id) = entry_id
            && !self.ids.contains(id)
        {
            return Err(SessionError::UnknownEntry(id.into()));
        }
        self.leaf = entry_id.map(str::to_string);
        Ok(())
    }

    /// Header and entries as file bytes.
    pub(super) fn serialize_all(&self) -> Result<Vec<u8>, SessionError> {
        let invalid = |e: serde_json::Error| {
            SessionError::invalid(self.path.as_deref().unwrap_or(Path::new("")), e.to_string())
        };
        let mut out = serde_json::to_vec(&self.header).map_err(invalid)?;
        out.push(b'\n');
        for entry in &self.entries {
            serde_json::to_writer(&mut out, entry).map_err(invalid)?;
            out.push(b'\n');
        }
        Ok(out)
    }
}

pub(super) fn count_messages(entries: &[SessionEntry]) -> usize {
    entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::Message { .. }))
        .count()
}

fn new_header(cwd: &Path, parent_session: Option<String>) -> SessionHeader {
    SessionHeader {
        kind: "session".into(),
        version: Some(CURRENT_VERSION),
        id: uuid::Uuid::now_v7().to_string(),
        timestamp: iso_now(),
        cwd: cwd.to_string_lossy().into_owned(),
        parent_session,
    }
}

/// Splits raw lines into the header object and entry values; refuses a file without a header.
pub(super) fn split_header(
    path: &Path,
    mut lines: Vec<Value>,
) -> Result<(serde_json::Map<String, Value>, Vec<Value>), SessionError> {
    check_header(path, &lines)?;
    let entries = lines.split_off(1);
    match lines.pop() {
        Some(Value::Object(header)) => Ok((header, entries)),
        _ => Err(SessionError::invalid(
            path,
            "line 1 is not a session header".into(),
        )),
    }
}

/// The lines start with a session header.
fn check_header(path: &Path, lines: &[Value]) -> Result<(), SessionError> {
    match lines.first() {
        None => Err(SessionError::invalid(path, "the file is empty".into())),
        Some(Value::Object(h)) if h.get("type").and_then(Value::as_str) == Some("session") => {
            Ok(())
        }
        Some(_) => Err(SessionError::invalid(
            path,
            "line 1 is not a session header".into(),
        )),
    }
}

/// pi's entry ids: the first 8 hex digits of a random UUID, collision-checked 100 times, then a
/// full UUID.
pub(super) fn new_entry_id(taken: &mut HashSet<String>) -> String {
    for _ in 0..100 {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        if taken.insert(id.clone()) {
            return id;
        }
    }
    let id = uuid::Uuid::new_v4().to_string();
    taken.insert(id.clone());
    id
}
