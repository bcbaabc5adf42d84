//! Sessions persisted as JSONL in pi's session format v3 (spec §C).
//!
//! A [`SessionStore`] is a directory of session files; a [`SessionFile`] is one open file holding an
//! entry tree (`id`/`parentId`) whose current branch ends at the leaf. Files are append-only and
//! synced per entry, with one writer per file (a pid lock file) and torn-tail repair on open, so
//! a killed run loses at most the message that was still streaming.
//!
//! Entry points: [`SessionStore::create`], [`SessionStore::open`],
//! [`SessionStore::latest_for_cwd`], [`SessionStore::list`], [`SessionStore::fork`],
//! [`SessionFile::append_message`], [`SessionFile::messages`].

pub mod context;
mod directory;
mod entry;
mod file;
mod migrate;
mod session_file;
pub mod time;

use std::path::{Path, PathBuf};

pub use context::{ModelRef, SessionContext};
pub use directory::{ForkPoint, SessionStore, SessionSummary};
pub use entry::{CURRENT_VERSION, EntryKind, SessionEntry, SessionHeader};
pub use session_file::SessionFile;

/// Why a session could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("session file {path} is corrupt at line {line}: {message}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path} is not a valid session file: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("session file {path} has version {version}; this agent-lsp reads versions 1 to 3")]
    UnsupportedVersion { path: PathBuf, version: u64 },
    #[error("session {path} is in use by another agent-lsp process{}", holder(*.pid))]
    Locked { path: PathBuf, pid: Option<i32> },
    #[error("no session matches {0:?} (see `agent-lsp sessions list`)")]
    NotFound(String),
    #[error("{1} sessions match {0:?}; give more of the id or the file path")]
    Ambiguous(String, usize),
    #[error("no entry {0:?} in this session")]
    UnknownEntry(String),
    #[error("{0}")]
    Refused(String),
}

/// " (pid N)" when the lock file names its holder.
fn holder(pid: Option<i32>) -> String {
    pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
}

impl SessionError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> SessionError {
        SessionError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn invalid(path: &Path, message: String) -> SessionError {
        SessionError::Invalid {
            path: path.to_path_buf(),
            message,
        }
    }
}
