//! `agent-lsp sessions list | fork | rename | changes | revert | gc | delete`: the stored
//! sessions.

use std::io::Write;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex};

use anyhow::Context;

use crate::agent::message::AgentMessage;
use crate::core::SharedRecord;
use crate::core::journal::gc;
use crate::core::journal::git::GitRepo;
use crate::core::journal::review::{self, Selection};
use crate::store::{ForkPoint, SessionStore, SessionSummary, time::iso_from_ms};
use crate::tools::{DiskWorkspace, Workspace};

/// Prints one line per session, newest first: id, updated time, message count, title (the name,
/// else the first prompt), cwd.
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
        "ID", "UPDATED", "MSGS", "TITLE"
    )?;
    for s in &sessions {
        writeln!(
            out,
            "{:<36}  {:<24}  {:>4}  {:<24}  {}",
            s.id,
            iso_from_ms(s.updated_ms),
            s.message_count,
            clip(&s.title(), 24),
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
        "title": s.title(),
        "created": s.created,
        "updated": iso_from_ms(s.updated_ms),
        "messageCount": s.message_count,
    })
}

/// `--cwd` made absolute, so it matches the cwd stored in session headers.
pub fn absolute(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(dir).with_context(|| format!("no such directory: {}", dir.display()))
}

fn clip(text: &str, width: usize) -> String {
    match text.chars().count() {
        0 => "-".into(),
        n if n <= width => text.into(),
        _ => format!("{}…", text.chars().take(width - 1).collect::<String>()),
    }
}

/// Forks `session` before the user message `message_id` and prints the new session's id and
/// file; without a message id, prints the user messages of its branch (id, first line).
pub fn fork(
    store: &SessionStore,
    session: &str,
    message_id: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let source = store.open(session)?;
    let mut out = std::io::stdout().lock();
    let Some(message_id) = message_id else {
        for entry in source.branch_path() {
            if let Some(AgentMessage::User(user)) = entry.kind.message() {
                let text = user.content.to_text();
                let line = text.lines().next().unwrap_or_default();
                match json {
                    true => writeln!(
                        out,
                        "{}",
                        serde_json::json!({"messageId": entry.id, "text": text})
                    )?,
                    false => writeln!(out, "{}  {line}", entry.id)?,
                }
            }
        }
        return Ok(());
    };
    let (fork, _) = store
        .fork(&source, ForkPoint::BeforeUserMessage(message_id))
        .with_context(|| format!("cannot fork {session} at {message_id}"))?;
    let path = fork
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    match json {
        true => writeln!(
            out,
            "{}",
            serde_json::json!({"id": fork.id(), "path": path})
        )?,
        false => writeln!(out, "{}  {path}", fork.id())?,
    }
    Ok(())
}

/// Names `session` (pi's `session_info` entry).
pub fn rename(store: &SessionStore, session: &str, name: &str) -> anyhow::Result<()> {
    let mut record = store.open(session)?;
    record.set_name(name)?;
    writeln!(
        std::io::stdout(),
        "{}  {}",
        record.id(),
        record.name().unwrap_or_default()
    )?;
    Ok(())
}

/// Collects the journal's unreferenced images: of every folder, or of `cwd`'s.
pub fn gc(store: &SessionStore, cwd: Option<&Path>, json: bool) -> anyhow::Result<()> {
    let report = match cwd {
        Some(cwd) => gc::collect_folder(&store.dir_for_cwd(cwd), gc::GRACE),
        None => gc::collect_store(store.root(), gc::GRACE),
    }
    .context("cannot collect the journal's images")?;
    let mut out = std::io::stdout();
    match json {
        true => writeln!(out, "{}", report_json(&report))?,
        false => writeln!(out, "{}", report.line())?,
    }
    Ok(())
}

fn report_json(report: &gc::GcReport) -> serde_json::Value {
    serde_json::json!({
        "folders": report.folders,
        "removed": report.removed,
        "freedBytes": report.freed,
        "kept": report.kept,
        "keptBytes": report.kept_bytes,
    })
}

/// Deletes a session file (refused while a process has it open), then collects its folder.
pub fn delete(store: &SessionStore, session: &str) -> anyhow::Result<()> {
    // Opened, it holds the writer lock: no session opens the file while it is removed.
    let record = store.open(session)?;
    let id = record.id().to_string();
    let path = record
        .path()
        .map(Path::to_path_buf)
        .context("the session has no file")?;
    let cwd = PathBuf::from(record.cwd());
    std::fs::remove_file(&path).with_context(|| format!("cannot delete {}", path.display()))?;
    drop(record);
    // The git blobs its runs relied on go with it (git collects them once nothing else
    // reaches them).
    let forked = forks_of(&path);
    if !forked.is_empty() {
        eprintln!(
            "agent-lsp: the session's git blobs stay kept: {} forked from it",
            forked.join(", ")
        );
    } else if let Some(repo) = cwd.is_dir().then(|| GitRepo::discover(&cwd)).flatten()
        && let Err(e) = repo.forget(&id)
    {
        eprintln!("agent-lsp: the session's git blobs stay kept: {e}");
    }
    let folder = path.parent().unwrap_or(Path::new("."));
    let report = gc::collect_folder(folder, gc::GRACE)
        .context("deleted; the journal's images were not collected")?;
    writeln!(std::io::stdout(), "deleted {id}; {}", report.line())?;
    Ok(())
}

/// The session files beside `session` forked from it (their entries name its git blobs).
fn forks_of(session: &Path) -> Vec<String> {
    let Some(folder) = session.parent() else {
        return Vec::new();
    };
    let mut forks = Vec::new();
    for file in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = file.path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let first = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.lines().next().map(str::to_string));
        let header = first.and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok());
        if let Some(header) = header
            && header["parentSession"].as_str().map(Path::new) == Some(session)
        {
            forks.push(header["id"].as_str().unwrap_or_default().to_string());
        }
    }
    forks
}

/// The session's journal over its files on disk: the record shared as the journal reads it,
/// the workspace at the session's directory.
fn journaled(
    store: &SessionStore,
    session: &str,
) -> anyhow::Result<(SharedRecord, Arc<dyn Workspace>)> {
    let record = store.open(session)?;
    let cwd = PathBuf::from(record.cwd());
    let ws = DiskWorkspace::new(&cwd, Vec::new())
        .with_context(|| format!("the session's directory {} is gone", cwd.display()))?;
    Ok((Arc::new(Mutex::new(record)), Arc::new(ws)))
}

/// Prints the files a run changed: `created|modified|deleted  path [changed since]`, then the
/// diff of each.
pub async fn changes(
    store: &SessionStore,
    session: &str,
    run: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    let (record, ws) = journaled(store, session)?;
    let changes = review::run_changes(&record, &ws, &Selection::Run(run), true).await?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&changes)?)?;
        return Ok(());
    }
    let Some(run) = &changes.run_id else {
        writeln!(out, "no run of this session changed files")?;
        return Ok(());
    };
    writeln!(out, "run {run}")?;
    for file in &changes.files {
        let mut notes = Vec::new();
        if file.user_changed {
            notes.push("changed since".to_string());
        }
        if !file.revertible {
            notes.push(match &file.reason {
                Some(reason) => format!("not revertible: {reason}"),
                None => "not revertible".into(),
            });
        }
        let kind = serde_json::to_value(file.change)?;
        let notes = match notes.is_empty() {
            true => String::new(),
            false => format!("  ({})", notes.join(", ")),
        };
        writeln!(
            out,
            "{:<9} {}{notes}",
            kind.as_str().unwrap_or_default(),
            file.path
        )?;
    }
    for file in changes.files.iter().filter(|f| !f.diff.is_empty()) {
        writeln!(out)?;
        write!(out, "{}", file.diff)?;
        if !file.diff.ends_with('\n') {
            writeln!(out)?;
        }
    }
    Ok(())
}

/// What `sessions revert` was asked.
pub struct RevertRequest {
    pub selection: Selection,
    pub paths: Option<Vec<String>>,
    pub force: bool,
    pub json: bool,
}

/// Restores the run's before-images and prints what was reverted, what conflicts and what was
/// skipped; fails (exit status 1) when anything was left.
pub async fn revert(
    store: &SessionStore,
    session: &str,
    request: RevertRequest,
) -> anyhow::Result<()> {
    let (record, ws) = journaled(store, session)?;
    let result = review::revert(
        &record,
        &ws,
        &request.selection,
        request.paths.as_deref(),
        request.force,
    )
    .await?;
    let mut out = std::io::stdout().lock();
    if request.json {
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
    } else {
        for path in &result.reverted {
            writeln!(out, "reverted  {path}")?;
        }
        for c in &result.conflicts {
            writeln!(
                out,
                "conflict  {}: {} (--force overwrites it)",
                c.path, c.reason
            )?;
        }
        for s in &result.skipped {
            writeln!(out, "skipped   {}: {}", s.path, s.reason)?;
        }
    }
    if !result.conflicts.is_empty() || !result.skipped.is_empty() {
        anyhow::bail!(
            "{} file(s) not reverted",
            result.conflicts.len() + result.skipped.len()
        );
    }
    Ok(())
}
