//! What the tools say when a file cannot be reached or changed: the workspace's errors
//! ([`WorkspaceError`]), as the model reads them, and pi's abort text.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::agent::tool::ToolError;

/// pi's text for an aborted read/write/edit.
pub const ABORTED: &str = "Operation aborted";

/// Why a workspace operation failed. Every message is written for the model to read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The path leaves the workspace root and every extra root (`..`, absolute, symlink).
    #[error(
        "Path '{path}' is outside the workspace ({root}). Only files under the workspace folder{extra} can be accessed."
    )]
    OutsideWorkspace {
        path: String,
        root: String,
        /// Text naming the extra roots, empty when there are none.
        extra: String,
    },
    /// The path is agent-lsp's store of keys (`agent-lsp login`), which no tool touches.
    #[error(
        "Path '{0}' is agent-lsp's store of API keys (agent-lsp login): no tool reads, lists or writes it."
    )]
    KeyStore(String),
    /// The path could not be interpreted at all (empty, `~user`, NUL byte…).
    #[error("Invalid path '{path}': {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("File not found: {0}")]
    NotFound(String),
    #[error("Is a directory: {0}")]
    IsDirectory(String),
    #[error("Permission denied: {0}")]
    PermissionDenied(String),
    /// The file changed since the caller's snapshot: it must be read again.
    #[error(
        "File {0} has been modified since it was last read (by the user, an editor or another tool). Read it again before changing it."
    )]
    Conflict(String),
    /// The editor refused or failed to apply the change.
    #[error("The editor did not apply the change to {path}: {reason}")]
    Editor { path: String, reason: String },
    /// The editor said it applied the change, but the buffer changed otherwise too and the
    /// change could not be found in it for sure; it was not sent again (never applied twice).
    #[error(
        "The editor answered that it applied the change to {0}, but the buffer also changed otherwise (the user typed meanwhile), so whether it holds the change could not be verified. It was not applied again. Read the file to see whether the change is in it before editing it again."
    )]
    Unverified(String),
    /// A symlink appeared on the path after it was checked (another process swapped a
    /// directory or the file for one): nothing was done, inside or outside the workspace.
    #[error(
        "The path {path} changed while it was being {op} (a symlink appeared at {at}); nothing was {op}."
    )]
    PathChanged {
        path: String,
        at: String,
        op: FileOp,
    },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// What was being done to a file, for [`WorkspaceError::PathChanged`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    Read,
    Write,
    Delete,
}

impl std::fmt::Display for FileOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileOp::Read => "read",
            FileOp::Write => "written",
            FileOp::Delete => "deleted",
        })
    }
}

impl WorkspaceError {
    /// Maps an I/O error on `path` to the most specific variant.
    pub fn from_io(path: &Path, e: &std::io::Error) -> Self {
        let shown = path.display().to_string();
        match e.kind() {
            std::io::ErrorKind::NotFound => WorkspaceError::NotFound(shown),
            std::io::ErrorKind::PermissionDenied => WorkspaceError::PermissionDenied(shown),
            std::io::ErrorKind::IsADirectory => WorkspaceError::IsDirectory(shown),
            _ => WorkspaceError::Io {
                path: shown,
                message: e.to_string(),
            },
        }
    }
}

/// Fails with pi's abort text when `cancel` fired.
pub fn check_abort(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        Err(ToolError::new(ABORTED))
    } else {
        Ok(())
    }
}

/// A workspace error as the model should read it, naming the path the model used.
pub fn ws_error(path: &str, e: WorkspaceError) -> ToolError {
    match e {
        WorkspaceError::NotFound(_) => ToolError::new(format!("File not found: {path}")),
        WorkspaceError::IsDirectory(_) => ToolError::new(format!(
            "{path} is a directory, not a file. Use ls to list it."
        )),
        WorkspaceError::PermissionDenied(_) => ToolError::new(format!("Permission denied: {path}")),
        WorkspaceError::Conflict(_) => ToolError::new(conflict_text(path)),
        // The path as the model wrote it; where the symlink appeared stays absolute.
        WorkspaceError::PathChanged { at, op, .. } => ToolError::new(
            WorkspaceError::PathChanged {
                path: path.to_string(),
                at,
                op,
            }
            .to_string(),
        ),
        other => ToolError::new(other.to_string()),
    }
}

/// The message for a file that changed since the agent last read it.
pub fn conflict_text(path: &str) -> String {
    format!(
        "File {path} has been modified since you last read it (by the user, an editor or another process). \
         Its current content was not changed. Read the file again, then redo the change against the current content."
    )
}
