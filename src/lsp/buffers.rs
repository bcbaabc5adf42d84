//! The tools' [`Workspace`] over the editor's buffers.
//!
//! Reads of open documents see the mirror (unsaved text); other files come from disk. Writes to
//! an open document become one `workspace/applyEdit` with a minimal edit, versioned with the
//! mirror's version, confirmed by the `didChange` that follows (the `applied` flag is not
//! trusted), retried once from the fresh buffer (unless the change is already in it: never
//! applied twice), then saved as `saveAfterEdit` says (`saving`). The disk behind an open
//! buffer is never written. Files that are not open are written on disk atomically, beneath
//! the session's roots (`DiskWorkspace`: never through a symlink swapped in after the check).
//!
//! `edit` on an open document (`rope_edit`) matches in the buffer's text, sends the matched
//! ranges, and confirms by the mirror's version and fingerprint (maintained per change).

mod rope_edit;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use ls_types::{
    ApplyWorkspaceEditParams, ApplyWorkspaceEditResponse, DeleteFile, DeleteFileOptions,
    DocumentChangeOperation, DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier,
    Range, ResourceOp, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};
use tokio_util::sync::CancellationToken;

use crate::agent::tool::ToolError;
use crate::lsp::config::ConnConfig;
use crate::lsp::documents::{DocStore, Document};
use crate::lsp::position::{self, Encoding};
use crate::lsp::protocol::{SaveAfterEdit, SaveDocumentsParams, SaveDocumentsResult, method};
use crate::lsp::saving::{DiskFingerprints, keep_unsaved};
use crate::rpc::outgoing::{Outgoing, RequestError};
use crate::tools::diff::{common_prefix, common_suffix};
use crate::tools::paths::Roots;
use crate::tools::workspace::{
    EditOutcome, EditRequest, check_abort, edit_by_rewrite, edit_write_error, seen_conflict,
};
use crate::tools::{
    Capture, ContentHash, ContentId, DiskWorkspace, FileSnapshot, Unsaved, Workspace,
    WorkspaceError, WriteOutcome, WriteRequest,
};

/// A workspace whose open files live in the editor.
#[derive(Clone)]
pub struct BufferWorkspace {
    editor: Arc<Editor>,
}

struct Editor {
    /// Files that are not open: on disk, beneath the session's roots.
    disk: DiskWorkspace,
    docs: DocStore,
    out: Outgoing,
    config: ConnConfig,
    /// The disk's side of "does this buffer hold unsaved changes of the user".
    on_disk: DiskFingerprints,
}

impl BufferWorkspace {
    pub fn new(disk: DiskWorkspace, docs: DocStore, out: Outgoing, config: ConnConfig) -> Self {
        BufferWorkspace {
            editor: Arc::new(Editor {
                disk,
                docs,
                out,
                config,
                on_disk: DiskFingerprints::default(),
            }),
        }
    }
}

impl Workspace for BufferWorkspace {
    fn roots(&self) -> &Roots {
        self.editor.disk.roots()
    }

    /// An open buffer's rope is captured as it is (an O(1) clone) and hashed later.
    fn capture(
        &self,
        path: PathBuf,
    ) -> BoxFuture<'static, Result<Option<Capture>, WorkspaceError>> {
        match self.editor.docs.get_path(&path) {
            Some(doc) => {
                let rope = doc.rope;
                let capture =
                    Capture::new(move || ContentHash::of_pieces(rope.chunks().map(str::as_bytes)));
                Box::pin(std::future::ready(Ok(Some(capture))))
            }
            None => self.editor.disk.capture(path),
        }
    }

    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<FileSnapshot, WorkspaceError>> {
        let open = self.editor.docs.get_path(&path);
        let editor = self.editor.clone();
        Box::pin(async move {
            match open {
                Some(doc) => Ok(FileSnapshot {
                    bytes: String::from(&doc.rope).into_bytes(),
                    id: doc.content_id(),
                    from_editor: true,
                }),
                None => editor.disk.read_disk(path).await,
            }
        })
    }

    fn write(&self, req: WriteRequest) -> BoxFuture<'static, Result<WriteOutcome, WorkspaceError>> {
        let editor = self.editor.clone();
        Box::pin(async move {
            if editor.docs.get_path(&req.path).is_none() {
                return editor
                    .disk
                    .write_disk(req.path, req.content, req.expected)
                    .await;
            }
            editor
                .write_open(&req.path, req.content, req.expected)
                .await
        })
    }

    fn edit<'a>(
        &'a self,
        path: PathBuf,
        request: EditRequest<'a>,
    ) -> BoxFuture<'a, Result<EditOutcome, ToolError>> {
        Box::pin(self.edit_open(path, request))
    }

    fn open_documents(&self) -> Vec<(PathBuf, String)> {
        self.editor.docs.open_files()
    }

    /// An open document is deleted by the editor (a `DeleteFile` operation), which closes its
    /// buffer too; without the client's support, or not open, on disk.
    fn remove(&self, path: PathBuf) -> BoxFuture<'static, Result<(), WorkspaceError>> {
        let editor = self.editor.clone();
        Box::pin(async move {
            if let Some(doc) = editor.docs.get_path(&path)
                && editor.config.delete_files
            {
                editor.delete_open(&path, &doc.uri).await?;
            }
            editor.disk.remove_disk(path).await
        })
    }
}

impl BufferWorkspace {
    /// `edit` on the rope when the document is open and the edit is a plain one (see
    /// [`rope_edit`]); otherwise, and for files not open, the whole-text path.
    async fn edit_open(
        &self,
        path: PathBuf,
        req: EditRequest<'_>,
    ) -> Result<EditOutcome, ToolError> {
        let Some(mut doc) = self.editor.docs.get_path(&path) else {
            return edit_by_rewrite(self, path, req).await;
        };
        if req.seen.is_some_and(|seen| !doc.is(&seen)) {
            return Err(seen_conflict(req.shown));
        }
        check_abort(req.cancel)?;
        let Some(mut plan) = rope_edit::plan(&doc, req.edits) else {
            return edit_by_rewrite(self, path, req).await;
        };
        if !req.apply {
            let after = rope_edit::applied(&doc, &plan);
            return Ok(EditOutcome {
                id: doc.content_id(),
                diff: rope_edit::diff_of(&doc, &after, &plan, req.shown),
                unsaved: None,
            });
        }
        let editor = &self.editor;
        let mut user_changes = editor.user_changes_before(&doc, &path).await;
        let mut failure = String::new();
        for attempt in 0..2 {
            let after = rope_edit::applied(&doc, &plan);
            let edits = rope_edit::text_edits(&doc, &plan, editor.config.encoding);
            let expected = after.facts.fingerprint;
            let confirmed = move |d: &Document| d.facts.fingerprint == expected;
            // The buffer's version holding the edit (unknown when it was found by looking,
            // next to the user's typing: then it never matches, and the next edit reads again).
            let mut landed = ContentId::Buffer {
                doc: doc.open_id,
                rev: u64::MAX,
            };
            let (mut is_in, claimed) = match editor.send_and_confirm(&doc, edits, confirmed).await {
                Ok(id) => {
                    landed = id;
                    (true, true)
                }
                Err(f) => {
                    tracing::info!(attempt, path = %path.display(), reason = %f.reason, "edit not confirmed");
                    failure = f.reason;
                    (false, f.claimed)
                }
            };
            let fresh = editor.docs.get_path(&path);
            if let Some(fresh) = fresh.as_ref().filter(|_| !is_in && claimed) {
                // An editor that said `applied: true` may have applied it next to a keystroke
                // of the user: look for the change before retrying, never apply it twice.
                match landed_in(&doc, &after, fresh) {
                    Landed::Yes => is_in = true,
                    Landed::No => {}
                    Landed::Unknown => {
                        let e = WorkspaceError::Unverified(path.display().to_string());
                        return Err(edit_write_error(req.shown, e));
                    }
                }
            }
            if is_in {
                let diff = rope_edit::diff_of(&doc, &after, &plan, req.shown);
                let unsaved = editor
                    .save_edit(&path, user_changes, landed, || {
                        String::from(&after.rope).into_bytes()
                    })
                    .await
                    .map_err(|e| edit_write_error(req.shown, e))?;
                return Ok(EditOutcome {
                    id: landed,
                    diff,
                    unsaved,
                });
            }
            if attempt == 1 {
                break;
            }
            // The user may have typed meanwhile: match again on the fresh buffer.
            let Some(fresh) = fresh else {
                let req = EditRequest { seen: None, ..req };
                return edit_by_rewrite(self, path, req).await;
            };
            let Some(fresh_plan) = rope_edit::plan(&fresh, req.edits) else {
                let conflict = WorkspaceError::Conflict(path.display().to_string());
                return Err(edit_write_error(req.shown, conflict));
            };
            // What the user typed meanwhile is theirs, unsaved: `ifClean` does not save it.
            user_changes |= fresh.rope != doc.rope;
            (doc, plan) = (fresh, fresh_plan);
        }
        let e = editor_error(&path, format!("{failure} (tried twice)"));
        Err(edit_write_error(req.shown, e))
    }
}

fn editor_error(path: &Path, reason: impl Into<String>) -> WorkspaceError {
    WorkspaceError::Editor {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

impl Editor {
    /// Whether `doc` holds unsaved changes of the user, when the save mode depends on it
    /// (`ifClean`); `false` otherwise, so the other modes never look at the disk for it.
    async fn user_changes_before(&self, doc: &Document, path: &Path) -> bool {
        self.config.save_after_edit() == SaveAfterEdit::IfClean
            && self.on_disk.has_unsaved_changes(doc, path).await
    }

    async fn write_open(
        &self,
        path: &Path,
        content: Vec<u8>,
        expected: Option<ContentId>,
    ) -> Result<WriteOutcome, WorkspaceError> {
        let mut target = String::from_utf8(content)
            .map_err(|_| editor_error(path, "the new content is not UTF-8 text"))?;
        let mut last_failure = String::new();
        let mut sent_against: Option<(String, bool)> = None;
        let mut user_changes = match self.docs.get_path(path) {
            Some(doc) => self.user_changes_before(&doc, path).await,
            None => false,
        };
        // The buffer's version holding the target text, when it is known exactly.
        let mut landed_at: Option<ContentId> = None;
        for attempt in 0..2 {
            let Some(doc) = self.docs.get_path(path) else {
                // Closed meanwhile: the disk is the truth again.
                return self
                    .disk
                    .write_disk(path.to_path_buf(), target.into_bytes(), None)
                    .await;
            };
            let current = String::from(&doc.rope);
            match &sent_against {
                // First attempt: the tool computed `target` from the text it read; if the user
                // changed the buffer since, writing it would clobber their change.
                None if expected.is_some_and(|e| !doc.is(&e)) => {
                    return Err(WorkspaceError::Conflict(path.display().to_string()));
                }
                // The editor said it applied the change but the buffer changed otherwise too (the
                // user typed): look for the change before retrying, never apply it twice.
                Some((old, true)) if *old != current && current != target => {
                    match landed(old, &target, &current) {
                        Landed::Yes => {
                            last_failure.clear();
                            break;
                        }
                        Landed::Unknown => {
                            return Err(WorkspaceError::Unverified(path.display().to_string()));
                        }
                        Landed::No => {
                            user_changes = true;
                            target = rebase(old, &target, &current).ok_or_else(|| {
                                WorkspaceError::Conflict(path.display().to_string())
                            })?;
                        }
                    }
                }
                // Retry after the user typed meanwhile: carry the agent's change over.
                Some((old, false)) if *old != current && current != target => {
                    user_changes = true;
                    target = rebase(old, &target, &current)
                        .ok_or_else(|| WorkspaceError::Conflict(path.display().to_string()))?;
                }
                _ => {}
            }
            if current == target {
                landed_at = Some(doc.content_id());
                last_failure.clear();
                break;
            }
            match self.apply_once(&doc, &current, &target).await {
                Ok(id) => {
                    landed_at = Some(id);
                    last_failure.clear();
                    break;
                }
                Err(f) => {
                    tracing::info!(attempt, path = %path.display(), reason = %f.reason, "edit not confirmed");
                    last_failure = f.reason;
                    sent_against = Some((current, f.claimed));
                }
            }
        }
        if let Some((old, true)) = sent_against.as_ref().filter(|_| !last_failure.is_empty()) {
            // The retry too was said to be applied: it may be in the buffer.
            let current = self.docs.get_path(path).map(|d| String::from(&d.rope));
            match current.map(|c| landed(old, &target, &c)) {
                Some(Landed::Yes) => last_failure.clear(),
                Some(Landed::Unknown) => {
                    return Err(WorkspaceError::Unverified(path.display().to_string()));
                }
                Some(Landed::No) | None => {}
            }
        }
        if !last_failure.is_empty() {
            return Err(editor_error(path, format!("{last_failure} (tried twice)")));
        }
        let bytes = target.into_bytes();
        // Found by looking, next to the user's typing: the text's hash names what the agent left.
        let id = landed_at.unwrap_or_else(|| ContentId::of(&bytes));
        let unsaved = self.save_edit(path, user_changes, id, || bytes).await?;
        Ok(WriteOutcome {
            id,
            created: false,
            via_editor: true,
            unsaved,
        })
    }

    /// Asks the editor to delete the open document at `uri` (its buffer with it).
    async fn delete_open(&self, path: &Path, uri: &str) -> Result<(), WorkspaceError> {
        let uri: Uri = uri
            .parse()
            .map_err(|e| editor_error(path, format!("{uri}: {e}")))?;
        let delete = DeleteFile {
            uri,
            options: Some(DeleteFileOptions {
                recursive: None,
                ignore_if_not_exists: Some(true),
            }),
            annotation_id: None,
        };
        let params = ApplyWorkspaceEditParams {
            label: Some("agent-lsp revert".into()),
            edit: WorkspaceEdit {
                document_changes: Some(DocumentChanges::Operations(vec![
                    DocumentChangeOperation::Op(ResourceOp::Delete(delete)),
                ])),
                ..Default::default()
            },
        };
        let never = CancellationToken::new();
        let reply: Result<ApplyWorkspaceEditResponse, RequestError> = self
            .out
            .request(
                "workspace/applyEdit",
                params,
                self.config.edit_timeout(),
                &never,
            )
            .await;
        match reply {
            Ok(r) if r.applied => Ok(()),
            Ok(r) => {
                let reason = r.failure_reason.as_deref().unwrap_or("no reason given");
                Err(editor_error(
                    path,
                    format!("the editor refused to delete it ({reason})"),
                ))
            }
            Err(e) => Err(editor_error(
                path,
                format!("workspace/applyEdit failed: {e}"),
            )),
        }
    }

    /// Sends one applyEdit and waits for the mirror to hold `new_text`.
    async fn apply_once(
        &self,
        doc: &Document,
        old: &str,
        new_text: &str,
    ) -> Result<ContentId, Failure> {
        let edit = minimal_edit(doc, old, new_text, self.config.encoding);
        let new_text = new_text.to_owned();
        self.send_and_confirm(doc, vec![edit], move |d| d.rope == new_text.as_str())
            .await
    }

    /// Sends one applyEdit with `edits` (relative to `doc`) and waits for a change of the
    /// mirror after which `confirmed` holds; the version of the mirror it held for.
    async fn send_and_confirm(
        &self,
        doc: &Document,
        edits: Vec<TextEdit>,
        confirmed: impl Fn(&Document) -> bool,
    ) -> Result<ContentId, Failure> {
        let mut changes = self.docs.subscribe();
        let params = self.apply_params(doc, edits).map_err(Failure::refused)?;
        let timeout = self.config.edit_timeout();
        let never = CancellationToken::new();
        let reply: Result<ApplyWorkspaceEditResponse, RequestError> = self
            .out
            .request("workspace/applyEdit", params, timeout, &never)
            .await;
        match reply {
            Ok(r) if !r.applied => {
                let reason = r.failure_reason.as_deref().unwrap_or("no reason given");
                return Err(Failure::refused(format!(
                    "the editor refused the edit ({reason})"
                )));
            }
            Ok(_) => {}
            Err(e) => {
                return Err(Failure::refused(format!("workspace/applyEdit failed: {e}")));
            }
        }
        // `applied: true` is only a hint: wait for the didChange that makes the mirror match.
        let confirmed = tokio::time::timeout(timeout, async {
            loop {
                if let Some(d) = self.docs.get(&doc.uri)
                    && d.version != doc.version
                    && confirmed(&d)
                {
                    return Some(d.content_id());
                }
                if changes.changed().await.is_err() {
                    return None;
                }
            }
        })
        .await;
        match confirmed {
            Ok(Some(id)) => Ok(id),
            _ => Err(Failure {
                reason: format!("the buffer did not change to the edited text within {timeout:?}"),
                claimed: true,
            }),
        }
    }

    fn apply_params(
        &self,
        doc: &Document,
        edits: Vec<TextEdit>,
    ) -> Result<ApplyWorkspaceEditParams, String> {
        let uri: Uri = (doc.uri.parse()).map_err(|e| format!("{}: {e}", doc.uri))?;
        let edit = if self.config.document_changes {
            let text_document = OptionalVersionedTextDocumentIdentifier {
                uri,
                version: Some(doc.version),
            };
            let edits = edits.into_iter().map(OneOf::Left).collect();
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                    text_document,
                    edits,
                }])),
                ..Default::default()
            }
        } else {
            WorkspaceEdit {
                changes: Some([(uri, edits)].into()),
                ..Default::default()
            }
        };
        Ok(ApplyWorkspaceEditParams {
            label: Some("agent-lsp edit".into()),
            edit,
        })
    }

    /// Saves the buffer the agent just edited, as `saveAfterEdit` says, through the editor
    /// only: the disk behind an open buffer is never written (that would make the editor warn
    /// that the file changed on disk, and clobber on the next save). `Some(why)` when the edit
    /// stays unsaved. `user_changes`: the buffer held the user's unsaved changes before the
    /// edit; a buffer that is no longer `expected` has new ones. `bytes` is the text to write
    /// when the document was closed meanwhile.
    async fn save_edit(
        &self,
        path: &Path,
        user_changes: bool,
        expected: ContentId,
        bytes: impl FnOnce() -> Vec<u8>,
    ) -> Result<Option<Unsaved>, WorkspaceError> {
        let mode = self.config.save_after_edit();
        let Some(doc) = self.docs.get_path(path) else {
            // Closed meanwhile: the disk is the truth again.
            if let Some(why) = keep_unsaved(mode, user_changes) {
                return Ok(Some(why));
            }
            return self
                .disk
                .write_disk(path.to_path_buf(), bytes(), None)
                .await
                .map(|_| None);
        };
        let user_changes = user_changes || !doc.is(&expected);
        if let Some(why) = keep_unsaved(mode, user_changes) {
            return Ok(Some(why));
        }
        if !self.config.save_documents() {
            return Ok(Some(Unsaved::CannotSave));
        }
        let params = SaveDocumentsParams {
            uris: vec![doc.uri.clone()],
        };
        let never = CancellationToken::new();
        let reply: Result<SaveDocumentsResult, _> = self
            .out
            .request(
                method::SAVE_DOCUMENTS,
                params,
                self.config.edit_timeout(),
                &never,
            )
            .await;
        match reply {
            Ok(r) if r.saved.contains(&doc.uri) => {
                // The editor wrote its buffer: the agent's text, unless it changed meanwhile (the
                // user typed, or the editor formatted on save), which the next edit reads again.
                let now = self.docs.get_path(path).map(|d| d.content_id());
                let known = now.filter(|id| id.same(&expected) == Some(true));
                self.on_disk.saved(path, known).await;
                Ok(None)
            }
            Ok(_) => {
                tracing::info!(
                    uri = doc.uri,
                    "the client did not save; the edit stays unsaved"
                );
                Ok(Some(Unsaved::EditorDeclined))
            }
            Err(e) => {
                tracing::info!(uri = doc.uri, %e, "saveDocuments failed; the edit stays unsaved");
                Ok(Some(Unsaved::EditorDeclined))
            }
        }
    }
}

/// Why an applyEdit was not confirmed.
struct Failure {
    reason: String,
    /// The editor answered `applied: true`: the change may be in the buffer anyway.
    claimed: bool,
}

impl Failure {
    fn refused(reason: String) -> Failure {
        Failure {
            reason,
            claimed: false,
        }
    }
}

/// Whether a buffer that is not the expected text holds the agent's change anyway.
#[derive(Debug, PartialEq, Eq)]
enum Landed {
    Yes,
    No,
    /// Neither the text before the change nor the one after it is found unambiguously.
    Unknown,
}

/// [`landed`] for the edit of `doc` into `after`, in `fresh`.
fn landed_in(doc: &Document, after: &Document, fresh: &Document) -> Landed {
    if fresh.version == doc.version || fresh.rope == doc.rope {
        return Landed::No;
    }
    let (old, new) = (String::from(&doc.rope), String::from(&after.rope));
    landed(&old, &new, &String::from(&fresh.rope))
}

/// Whether `fresh` (the buffer after the editor said it applied `old → new`, changed otherwise
/// too) holds the change: the changed region with context on each side (first [`ANCHOR`] chars,
/// then fewer) occurs exactly once as after the change and not as before it, or the reverse.
fn landed(old: &str, new: &str, fresh: &str) -> Landed {
    if fresh == new {
        return Landed::Yes;
    }
    if fresh == old {
        return Landed::No;
    }
    let r = region(old, new);
    for context in [ANCHOR, ANCHOR / 4] {
        let (before, after) = anchors(old, &r, context);
        let was = format!("{before}{}{after}", &old[r.start..r.old_end]);
        let now = format!("{before}{}{after}", &new[r.start..r.new_end]);
        match (fresh.matches(&was).count(), fresh.matches(&now).count()) {
            (0, 1) => return Landed::Yes,
            (1, 0) => return Landed::No,
            _ => {}
        }
    }
    Landed::Unknown
}

/// The differing middle of two texts, in bytes: `old[start..old_end]` became
/// `new[start..new_end]`. Every bound is a char boundary, and never between a `\r` and its
/// `\n`. Found by comparing the common prefix and suffix (memcmp speed, no copies), so it costs
/// one pass over the unchanged text at most.
struct Region {
    start: usize,
    old_end: usize,
    new_end: usize,
}

fn region(old: &str, new: &str) -> Region {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let mut prefix = common_prefix(ob, nb);
    // Equal bytes up to here, so a boundary in `old` is one in `new`.
    while !old.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max = ob.len().min(nb.len()) - prefix;
    let mut suffix = common_suffix(ob, nb, max);
    while !old.is_char_boundary(ob.len() - suffix) {
        suffix -= 1;
    }
    if prefix > 0 && ob[prefix - 1] == b'\r' && ob.get(prefix) == Some(&b'\n') {
        prefix -= 1;
    }
    let old_end = ob.len() - suffix;
    if old_end > 0 && ob[old_end - 1] == b'\r' && ob.get(old_end) == Some(&b'\n') {
        suffix -= 1;
    }
    Region {
        start: prefix,
        old_end: ob.len() - suffix,
        new_end: nb.len() - suffix,
    }
}

/// One `TextEdit` replacing the differing middle of `old` (common prefix and suffix kept).
/// `old` is the text of `doc.rope`.
pub fn minimal_edit(doc: &Document, old: &str, new: &str, enc: Encoding) -> TextEdit {
    let r = region(old, new);
    let start = position::to_position(&doc.rope, doc.rope.byte_to_char(r.start), enc);
    let end = position::to_position(&doc.rope, doc.rope.byte_to_char(r.old_end), enc);
    TextEdit::new(Range::new(start, end), new[r.start..r.new_end].to_owned())
}

/// Characters of context that anchor a change when it is carried over to a changed buffer.
const ANCHOR: usize = 64;

/// Up to `n` chars of `old` before and after the region `r` (both unchanged by it).
fn anchors<'a>(old: &'a str, r: &Region, n: usize) -> (&'a str, &'a str) {
    let before_start = old[..r.start]
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let after_end = old[r.old_end..]
        .char_indices()
        .nth(n)
        .map_or(old.len(), |(i, _)| r.old_end + i);
    (&old[before_start..r.start], &old[r.old_end..after_end])
}

/// Carries the change `old → new` over to `fresh` (the buffer after the user typed): the changed
/// region with up to `ANCHOR` chars of context on each side must occur exactly once in
/// `fresh`. `None` when it does not (the user changed the same place).
pub fn rebase(old: &str, new: &str, fresh: &str) -> Option<String> {
    let r = region(old, new);
    let (before, after) = anchors(old, &r, ANCHOR);
    let old_mid = &old[r.start..r.old_end];
    let new_mid = &new[r.start..r.new_end];
    let needle = format!("{before}{old_mid}{after}");
    if needle.is_empty() || fresh.matches(&needle).count() != 1 {
        return None;
    }
    Some(fresh.replacen(&needle, &format!("{before}{new_mid}{after}"), 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ropey::Rope;
    use serde_json::{Value, json};

    fn edit(old: &str, new: &str, enc: Encoding) -> Value {
        let doc = Document::new("file:///a".into(), 1, Rope::from_str(old));
        serde_json::to_value(minimal_edit(&doc, old, new, enc)).unwrap()
    }

    #[test]
    fn minimal_edits() {
        let e = edit("hello world\n", "hello there\n", Encoding::Utf16);
        assert_eq!(
            e,
            json!({"range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 11}}, "newText": "there"})
        );
        let e = edit("a\r\nb", "a\r\nx\r\nb", Encoding::Utf16);
        assert_eq!(e["range"]["start"], json!({"line": 1, "character": 0}));
        assert_eq!(e["newText"], "x\r\n");
        let e = edit("😀a", "😀b", Encoding::Utf16);
        assert_eq!(e["range"]["start"], json!({"line": 0, "character": 2}));
        let e = edit("😀a", "😀b", Encoding::Utf8);
        assert_eq!(e["range"]["start"], json!({"line": 0, "character": 4}));
        let e = edit("aaa", "aa", Encoding::Utf16);
        assert_eq!(e["newText"], "");
        assert_eq!(
            e["range"]["end"]["character"].as_u64().unwrap()
                - e["range"]["start"]["character"].as_u64().unwrap(),
            1
        );
        // Inserting a "\r" before "\r\n" never splits the pair.
        let e = edit("a\r\nb", "a\r\r\nb", Encoding::Utf16);
        assert_eq!(e["range"]["start"], json!({"line": 0, "character": 1}));
    }

    #[test]
    fn a_change_next_to_a_keystroke_is_found_and_never_guessed() {
        let old = "let count = 1;\nfn main() {}\n";
        let new = "let count = 1 + 1;\nfn main() {}\n";
        // Applied, and the user typed elsewhere: found, although `count = 1` is still there.
        assert_eq!(landed(old, new, &format!("{new}// typed")), Landed::Yes);
        assert_eq!(landed(old, new, new), Landed::Yes);
        // Not applied, the user typed elsewhere: the retry may go ahead.
        assert_eq!(landed(old, new, &format!("// typed\n{old}")), Landed::No);
        assert_eq!(landed(old, new, old), Landed::No);
        // The user typed inside the very place: neither is found, no guess.
        let fresh = "let count = 1 + 1x;\nfn main() {}\n";
        assert_eq!(landed(old, new, fresh), Landed::Unknown);
        // The text after the change occurs twice: no guess either.
        let twice = format!("{new}{new}");
        assert_eq!(landed(old, new, &twice), Landed::Unknown);
    }

    #[test]
    fn rebase_carries_a_change_over_unrelated_typing() {
        let old = "fn a() {}\nfn b() {}\n";
        let new = "fn a() {}\nfn b() { todo!() }\n";
        let fresh = "// typed by the user\nfn a() {}\nfn b() {}\n";
        assert_eq!(
            rebase(old, new, fresh).unwrap(),
            "// typed by the user\nfn a() {}\nfn b() { todo!() }\n"
        );
        // The user changed the very place: no guess.
        assert_eq!(rebase(old, new, "fn a() {}\nfn c() {}\n"), None);
    }
}
