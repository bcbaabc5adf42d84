//! Whether the user allowed a project's `.mcp.json` to start its servers.
//!
//! A project file can start programs, so its servers start only after the user said yes for that
//! project. The answer is remembered under `$XDG_STATE_HOME/agent-lsp/mcp-trust.json`, per project
//! root, together with what it was given for: each server's whole entry as written (command,
//! args, env, cwd, url, headers, approval, enabled, timeouts, and any other field), so a change
//! to any of them asks again, naming what changed. A sandboxed command or a commit can edit the
//! file; neither can make a trusted entry start something else unasked.
//!
//! - Values are compared as written, before `${VAR}` expansion: the environment is the user's,
//!   so a new value of their variable asks nothing, while a changed reference (`${A}` → `${B}`)
//!   or literal asks again.
//! - The file holds a SHA-256 per field (per variable of `env` and per header of `headers`, so
//!   the change names its key), never a value: a token written in an entry is not copied into
//!   the state directory. Server, field, variable and header names are kept as they are.
//! - A server gone from the file asks nothing (the others were answered for); a new one asks.
//! - An answer of an older agent-lsp (`servers: ["name: command line"]`) asks again: it covered
//!   command lines only, and which env or cwd it saw is not known.
//!
//! The same store, under a file of its own, remembers whether a project's hooks may run
//! (`hooks::trust`): entries there are settings files, their fields the events.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::mcp::config::ServerConfig;
use crate::model_registry::EnvSource;
use crate::state_file::{self, project_key};

/// The remembered answer for a project's current servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    Allowed,
    Denied,
    /// Never asked, or asked about servers other than the file has now.
    Unknown,
}

/// What is remembered for a project's servers, and why an earlier answer no longer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remembered {
    pub trust: Trust,
    /// What changed since the last answer (empty when it holds, or when none was given).
    pub changes: Vec<Change>,
}

impl Remembered {
    fn unknown(changes: Vec<Change>) -> Self {
        Remembered {
            trust: Trust::Unknown,
            changes,
        }
    }
}

/// One difference between the project's servers now and those the last answer was given for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A server the answer did not cover: `new server db`.
    NewServer(String),
    /// A field of a server's entry (`key`: the variable of `env`, the header of `headers`):
    /// `fs: env added PYTHONPATH`, `fs: args changed`.
    Field {
        server: String,
        field: String,
        key: Option<String>,
        how: How,
    },
    /// The answer was an older agent-lsp's, which covered command lines only.
    OlderAnswer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Added,
    Changed,
    Removed,
}

impl How {
    fn of(before: bool, after: bool) -> How {
        match (before, after) {
            (false, _) => How::Added,
            (_, false) => How::Removed,
            _ => How::Changed,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::NewServer(name) => write!(f, "new server {name}"),
            Change::Field {
                server,
                field,
                key,
                how,
            } => {
                let how = match how {
                    How::Added => "added",
                    How::Changed => "changed",
                    How::Removed => "removed",
                };
                write!(f, "{server}: {field} {how}")?;
                match key {
                    Some(key) => write!(f, " {key}"),
                    None => Ok(()),
                }
            }
            Change::OlderAnswer => f.write_str(
                "trust now covers each server's whole entry (env, cwd, headers, approval, …), \
                 not only its command line",
            ),
        }
    }
}

/// A session's side of a project-trust question (its `.mcp.json` servers, its hooks): what is
/// remembered and what changed since, and whether the question is open (one at a time, however
/// often a client asks again).
pub struct SessionTrust {
    remembered: Mutex<Remembered>,
    asking: AtomicBool,
}

impl SessionTrust {
    /// What the session found remembered as it started.
    pub fn new(remembered: Remembered) -> SessionTrust {
        SessionTrust {
            remembered: Mutex::new(remembered),
            asking: AtomicBool::new(false),
        }
    }

    fn remembered(&self) -> MutexGuard<'_, Remembered> {
        self.remembered.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer remembered now.
    pub fn trust(&self) -> Trust {
        self.remembered().trust
    }

    /// What changed since the last answer, each told by `describe`.
    pub fn changes(&self, describe: impl Fn(&Change) -> String) -> Vec<String> {
        self.remembered().changes.iter().map(describe).collect()
    }

    /// Claims the one open trust question: `false` when one is open already.
    pub fn begin_question(&self) -> bool {
        !self.asking.swap(true, Ordering::AcqRel)
    }

    /// The trust question closed (answered or not).
    pub fn end_question(&self) {
        self.asking.store(false, Ordering::Release);
    }

    /// The user's answer, which nothing changed since.
    pub fn answered(&self, allowed: bool) {
        *self.remembered() = Remembered {
            trust: match allowed {
                true => Trust::Allowed,
                false => Trust::Denied,
            },
            changes: Vec::new(),
        };
    }
}

/// What the user is asked before a project's `.mcp.json` servers start, its hooks run or its
/// permission rules apply, worded once for every front end.
pub struct TrustQuestion {
    /// The project directory.
    pub project: String,
    /// What is asked, then (servers, hooks) what changed since the last answer.
    pub title: String,
    /// What the answer covers, a line each (servers, hooks: then what changed).
    pub listing: String,
    /// The `agent/beforeToolCall` args: `{project, servers | hooks | rules: […], …}`.
    pub args: Value,
}

/// `listing`, then what changed since the last answer, a line each.
pub fn with_changes(mut listing: String, changes: &[String]) -> String {
    if !changes.is_empty() {
        listing.push_str("\n\nChanged since your last answer:");
        for change in changes {
            listing.push_str(&format!("\n  {change}"));
        }
    }
    listing
}

#[derive(Default, Serialize, Deserialize)]
struct Stored {
    #[serde(default)]
    projects: BTreeMap<String, Record>,
}

/// One project's remembered answer.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Record {
    Answer(Answer),
    /// An older agent-lsp's answer, or anything else this version cannot compare: kept as
    /// written (another project's answer is not ours to drop), and asked again.
    Other(Value),
}

#[derive(Serialize, Deserialize)]
struct Answer {
    allowed: bool,
    /// Each server of the project's file as answered for, by name.
    entries: BTreeMap<String, EntryPrint>,
}

/// One server's entry, field by field.
type EntryPrint = BTreeMap<String, FieldPrint>;

/// A field's hash, or for `env` and `headers` each key's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum FieldPrint {
    Whole(String),
    Keys(BTreeMap<String, String>),
}

/// Fields whose changes name the key: what a server sees in its environment or requests.
const KEYED: [&str; 2] = ["env", "headers"];

/// The trust file (none without a state directory: then every project is unknown).
#[derive(Clone, Debug)]
pub struct TrustStore {
    path: Option<PathBuf>,
}

impl TrustStore {
    pub fn new(env: &EnvSource) -> Self {
        TrustStore::named(env, "mcp-trust.json")
    }

    /// A trust file of this name in agent-lsp's state folder (a project's hooks keep theirs
    /// apart from its servers', `hooks-trust.json`).
    pub fn named(env: &EnvSource, file: &str) -> Self {
        TrustStore {
            path: state_file::dir(env).map(|dir| dir.join(file)),
        }
    }

    pub fn at(path: PathBuf) -> Self {
        TrustStore { path: Some(path) }
    }

    /// The answer remembered for `root` if it covers these `servers` as they are written now,
    /// else what changed since.
    pub fn decision<'a>(
        &self,
        root: &Path,
        servers: impl IntoIterator<Item = &'a ServerConfig>,
    ) -> Remembered {
        self.decision_of(root, servers.into_iter().map(as_entry))
    }

    /// [`TrustStore::decision`] for any named entries as written (`(name, entry)`).
    pub fn decision_of<'a>(
        &self,
        root: &Path,
        entries: impl IntoIterator<Item = (&'a str, &'a Map<String, Value>)>,
    ) -> Remembered {
        let answer = match self.read().projects.remove(&project_key(root)) {
            None => return Remembered::unknown(Vec::new()),
            Some(Record::Other(old)) if old.get("servers").is_some() => {
                return Remembered::unknown(vec![Change::OlderAnswer]);
            }
            Some(Record::Other(_)) => {
                tracing::warn!("the MCP trust file's answer for this project is malformed");
                return Remembered::unknown(Vec::new());
            }
            Some(Record::Answer(answer)) => answer,
        };
        let changes = changes(&answer.entries, &prints(entries));
        match (changes.is_empty(), answer.allowed) {
            (true, true) => Remembered {
                trust: Trust::Allowed,
                changes,
            },
            (true, false) => Remembered {
                trust: Trust::Denied,
                changes,
            },
            (false, _) => Remembered::unknown(changes),
        }
    }

    /// Remembers the user's answer for `root`'s current `servers`.
    pub fn remember<'a>(
        &self,
        root: &Path,
        servers: impl IntoIterator<Item = &'a ServerConfig>,
        allowed: bool,
    ) -> std::io::Result<()> {
        self.remember_of(root, servers.into_iter().map(as_entry), allowed)
    }

    /// [`TrustStore::remember`] for any named entries as written (`(name, entry)`).
    pub fn remember_of<'a>(
        &self,
        root: &Path,
        entries: impl IntoIterator<Item = (&'a str, &'a Map<String, Value>)>,
        allowed: bool,
    ) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut stored = self.read();
        let answer = Answer {
            allowed,
            entries: prints(entries),
        };
        stored
            .projects
            .insert(project_key(root), Record::Answer(answer));
        state_file::write(path, &stored)
    }

    fn read(&self) -> Stored {
        state_file::read(self.path.as_deref(), "the MCP trust file")
    }
}

fn as_entry(server: &ServerConfig) -> (&str, &Map<String, Value>) {
    (&server.name, &server.written)
}

fn prints<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a Map<String, Value>)>,
) -> BTreeMap<String, EntryPrint> {
    (entries.into_iter())
        .map(|(name, written)| (name.to_owned(), entry_print(written)))
        .collect()
}

fn entry_print(entry: &Map<String, Value>) -> EntryPrint {
    (entry.iter())
        .map(|(field, value)| {
            let print = match value {
                Value::Object(keys) if KEYED.contains(&field.as_str()) => FieldPrint::Keys(
                    (keys.iter())
                        .map(|(k, v)| (k.clone(), digest(&[field, k], v)))
                        .collect(),
                ),
                _ => FieldPrint::Whole(digest(&[field], value)),
            };
            (field.clone(), print)
        })
        .collect()
}

/// SHA-256 of `[version, path…, value]` as canonical JSON (keys sorted at every level), in hex.
/// The path keeps equal values of different fields from having equal hashes.
fn digest(path: &[&String], value: &Value) -> String {
    let mut parts = vec![Value::from("agent-lsp mcp-trust 2")];
    parts.extend(path.iter().map(|p| Value::from(p.as_str())));
    parts.push(canonical(value));
    let hash = Sha256::digest(Value::Array(parts).to_string().as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` with every object's keys in sorted order (serde_json keeps the file's order here).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// What differs in `now` from what was answered for; servers gone from `now` are no change.
fn changes(
    answered: &BTreeMap<String, EntryPrint>,
    now: &BTreeMap<String, EntryPrint>,
) -> Vec<Change> {
    let mut changes = Vec::new();
    for (server, print) in now {
        match answered.get(server) {
            None => changes.push(Change::NewServer(server.clone())),
            Some(before) => changes.extend(entry_changes(server, before, print)),
        }
    }
    changes
}

fn entry_changes(server: &str, before: &EntryPrint, after: &EntryPrint) -> Vec<Change> {
    let fields: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut changes = Vec::new();
    for field in fields {
        let (old, new) = (before.get(field), after.get(field));
        if old == new {
            continue;
        }
        let change = |key: Option<&String>, how| Change::Field {
            server: server.to_owned(),
            field: field.clone(),
            key: key.cloned(),
            how,
        };
        let whole = change(None, How::of(old.is_some(), new.is_some()));
        match (keys(old), keys(new)) {
            (Some(old_keys), Some(new_keys)) => {
                let named = key_changes(old_keys, new_keys);
                if named.is_empty() {
                    // `{}` where there was none, or none where there was `{}`.
                    changes.push(whole);
                }
                changes.extend(named.into_iter().map(|(key, how)| change(Some(key), how)));
            }
            _ => changes.push(whole),
        }
    }
    changes
}

/// A keyed field's hashes by key; an absent field has none. `None`: a field hashed whole.
fn keys(print: Option<&FieldPrint>) -> Option<BTreeMap<&String, &String>> {
    match print {
        None => Some(BTreeMap::new()),
        Some(FieldPrint::Keys(keys)) => Some(keys.iter().collect()),
        Some(FieldPrint::Whole(_)) => None,
    }
}

fn key_changes<'a>(
    before: BTreeMap<&'a String, &String>,
    after: BTreeMap<&'a String, &String>,
) -> Vec<(&'a String, How)> {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).copied().collect();
    (names.into_iter())
        .filter(|name| before.get(name) != after.get(name))
        .map(|name| {
            let how = How::of(before.contains_key(name), after.contains_key(name));
            (name, how)
        })
        .collect()
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
