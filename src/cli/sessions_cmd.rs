//! `agent-lsp sessions list`: the stored sessions, newest first.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::session::{SessionStore, SessionSummary, time::iso_from_ms};

/// Prints one line per session: id, updated time, message count, name, cwd.
pub fn list(store: &SessionStore, cwd: Option<&Path>, json: bool) -> anyhow::Result<()> {
    let sessions = match cwd {
        Some(cwd) => store.list_for_cwd(cwd),
        None => store.list(),
    }
    .with_context(|| format!("cannot list sessions in {}", store.root().display()))?;
    let mut out = std::io::stdout().lock();
    if json {
        for s in &sessions {
            writeln!(out, "{}", summary_json(s))?;
        }
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(out, "no sessions in {}", store.root().display())?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<36}  {:<24}  {:>4}  {:<24}  CWD",
        "ID", "UPDATED", "MSGS", "NAME"
    )?;
    for s in &sessions {
        writeln!(
            out,
            "{:<36}  {:<24}  {:>4}  {:<24}  {}",
            s.id,
            iso_from_ms(s.updated_ms),
            s.message_count,
            s.name.as_deref().unwrap_or("-"),
            s.cwd
        )?;
    }
    Ok(())
}

fn summary_json(s: &SessionSummary) -> serde_json::Value {
    serde_json::json!({
        "id": s.id,
        "path": s.path,
        "cwd": s.cwd,
        "name": s.name,
        "created": s.created,
        "updated": iso_from_ms(s.updated_ms),
        "messageCount": s.message_count,
    })
}

/// `--cwd` made absolute, so it matches the cwd stored in session headers.
pub fn absolute(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(dir).with_context(|| format!("no such directory: {}", dir.display()))
}
