//! The `Workspace`: the one door through which every tool touches files.
//!
//! Tools compute whole new contents; the workspace decides how they land. The disk
//! implementation ([`DiskWorkspace`]) writes atomically (temp file + rename, permissions kept);
//! the daemon implements the same trait over the editor's open buffers (`workspace/applyEdit`)
//! and falls back to the disk for files that are not open. On disk every file is reached from
//! its root's directory handle without following symlinks ([`super::beneath`]), so a path
//! swapped after [`Workspace::resolve`] checked it fails instead of leading out.

use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use std::borrow::Cow;

use super::diff::diff;
use super::edit_match::{Span, match_edits, splice};
use super::error::{conflict_text, ws_error};
use super::paths::Roots;
use super::text::detect_crlf;
use crate::agent::tool::ToolError;

// What another `Workspace` implementation needs to edit in place with `edit`'s exact rules.
pub use super::content::{Capture, ContentHash, ContentId};
pub use super::diff::DiffResult;
pub use super::disk::{DiskWorkspace, is_own_temp_file};
pub use super::edit_match::{Edit, folds_or_trims, is_fuzzy_invariant, no_change};
pub use super::error::{FileOp, WorkspaceError, check_abort};
pub use super::text::{normalize_to_lf, restore_line_endings, strip_bom};

/// A cheap hint of a file's content, kept current per change for an open buffer: when two
/// fingerprints differ the contents differ; when they are equal the contents may still differ
/// (see below), so it never decides on its own — [`ContentId`] does.
///
/// Content-based (length + a 64-bit hash), so the disk and an editor buffer holding the same
/// text agree.
///
/// The hash is the wrapping sum of a mixed value of every 8-byte window of the text (the
/// windows starting in its last 7 bytes are shorter, tagged with their length). A sum of
/// windows can be updated when a range is replaced by looking only at the replaced bytes and
/// 7 bytes on each side ([`Fingerprint::replaced`]), so the daemon keeps the fingerprint of a
/// 10 MB buffer current per change instead of hashing the whole text per edit. A sum of
/// windows is blind to the order of pieces whose boundaries look alike: two lines swapped
/// between lines indented by 7 spaces or more keep it (issue 31).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    pub len: u64,
    pub hash: u64,
}

/// Bytes of context on each side of a replaced range that [`Fingerprint::replaced`] needs.
pub const FINGERPRINT_CONTEXT: usize = 7;

/// The mixed value of one window: `w` holds its `n` bytes (little-endian, zero-padded).
fn mix(w: u64, n: usize) -> u64 {
    const TAG: [u64; 9] = [
        0,
        0xA076_1D64_78BD_642F,
        0xE703_7ED1_A0B4_28DB,
        0x8EBC_6AF0_9C88_C6E3,
        0x5899_65CC_7537_4CC3,
        0x1D8E_4E27_C47D_124F,
        0x72BE_5D74_F33B_CB77,
        0x4E0C_8A6B_AD6D_3F31,
        0x9E37_79B9_7F4A_7C15,
    ];
    const K: u64 = 0xBF58_476D_1CE4_E5B9;
    // A folded 64×64→128 multiply: one instruction, non-linear in the window's bits.
    let m = u128::from(w ^ TAG[n.min(8)]) * u128::from(K);
    ((m >> 64) as u64) ^ (m as u64)
}

fn window(bytes: &[u8], at: usize) -> u64 {
    let end = (at + 8).min(bytes.len());
    let mut w = [0u8; 8];
    w[..end - at].copy_from_slice(&bytes[at..end]);
    mix(u64::from_le_bytes(w), end - at)
}

/// The sum of the windows starting in `bytes[..starts]`, where `bytes` continues to the end
/// of the text or at least 7 bytes past `starts`.
fn window_sum(bytes: &[u8], starts: usize) -> u64 {
    let full = bytes.len().saturating_sub(7).min(starts);
    let mut sum = bytes[..full + 7.min(bytes.len())]
        .windows(8)
        .take(full)
        .fold(0u64, |acc, w| {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            acc.wrapping_add(mix(u64::from_le_bytes(a), 8))
        });
    for at in full..starts {
        sum = sum.wrapping_add(window(bytes, at));
    }
    sum
}

impl Fingerprint {
    /// The fingerprint of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Fingerprint {
            len: bytes.len() as u64,
            hash: window_sum(bytes, bytes.len()),
        }
    }

    /// The fingerprint after `old` (in the text this is the fingerprint of) is replaced by
    /// `new`. `head` is the (up to) [`FINGERPRINT_CONTEXT`] bytes before `old`, `tail` the (up to)
    /// [`FINGERPRINT_CONTEXT`] bytes after it: fewer only at the start or end of the text.
    pub fn replaced(self, head: &[u8], old: &[u8], new: &[u8], tail: &[u8]) -> Self {
        let sum = |mid: &[u8]| {
            let mut buf = Vec::with_capacity(head.len() + mid.len() + tail.len());
            buf.extend_from_slice(head);
            buf.extend_from_slice(mid);
            buf.extend_from_slice(tail);
            window_sum(&buf, head.len() + mid.len())
        };
        Fingerprint {
            len: (self.len + new.len() as u64).saturating_sub(old.len() as u64),
            hash: self.hash.wrapping_sub(sum(old)).wrapping_add(sum(new)),
        }
    }
}

/// Computes a [`Fingerprint`] of a text given in pieces (a rope's chunks), without joining them.
#[derive(Debug, Default)]
pub struct FingerprintHasher {
    len: u64,
    hash: u64,
    /// The last (up to) 7 bytes seen, whose windows are not complete yet.
    carry: Vec<u8>,
}

impl FingerprintHasher {
    pub fn feed(&mut self, chunk: &[u8]) {
        self.len += chunk.len() as u64;
        // Windows starting in the carry that this chunk completes.
        let take = chunk.len().min(7);
        let mut joined = std::mem::take(&mut self.carry);
        let carried = joined.len();
        joined.extend_from_slice(&chunk[..take]);
        let complete = (carried + chunk.len()).saturating_sub(7).min(carried);
        for at in 0..complete {
            self.hash = self.hash.wrapping_add(window(&joined, at));
        }
        // Windows starting in the chunk that end in it.
        if chunk.len() >= 8 {
            let n = chunk.len() - 7;
            self.hash = self.hash.wrapping_add(window_sum(&chunk[..n + 7], n));
        }
        // The last 7 bytes of everything so far start windows still open.
        if chunk.len() >= 7 {
            joined.clear();
            joined.extend_from_slice(&chunk[chunk.len() - 7..]);
        } else {
            joined.drain(..complete);
            let keep = joined.len().saturating_sub(7);
            joined.drain(..keep);
        }
        self.carry = joined;
    }

    pub fn finish(mut self) -> Fingerprint {
        for at in 0..self.carry.len() {
            self.hash = self.hash.wrapping_add(window(&self.carry, at));
        }
        Fingerprint {
            len: self.len,
            hash: self.hash,
        }
    }
}

/// A file's content as the user sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSnapshot {
    pub bytes: Vec<u8>,
    /// Which version this is: what decides whether the file changed since.
    pub id: ContentId,
    /// True when the bytes came from an open editor buffer rather than the disk.
    pub from_editor: bool,
}

impl FileSnapshot {
    /// Content read from a file (or from a client that has no buffer revisions): identified by
    /// its hash.
    pub fn from_disk(bytes: Vec<u8>) -> Self {
        FileSnapshot {
            id: ContentId::of(&bytes),
            bytes,
            from_editor: false,
        }
    }

    /// Whether this is the content the agent saw as `seen` (its bytes hashed only when the ids
    /// are of different kinds; a revision of a buffer is never this file's hash).
    pub fn is(&self, seen: &ContentId) -> bool {
        match self.id.same(seen) {
            Some(same) => same,
            None => seen
                .hash()
                .is_some_and(|hash| hash == ContentHash::of(&self.bytes)),
        }
    }
}

/// One whole-content write, as [`Workspace::write`] takes it (and an implementation that
/// falls back to another passes it on whole).
#[derive(Clone, Debug)]
pub struct WriteRequest {
    /// The canonical absolute path ([`Workspace::resolve`]).
    pub path: PathBuf,
    /// The new content, whole.
    pub content: Vec<u8>,
    /// The version the write replaces: a different current content is a conflict.
    pub expected: Option<ContentId>,
}

impl WriteRequest {
    pub fn new(path: PathBuf, content: Vec<u8>, expected: Option<ContentId>) -> Self {
        WriteRequest {
            path,
            content,
            expected,
        }
    }
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The version of the content now in place.
    pub id: ContentId,
    /// The file did not exist before.
    pub created: bool,
    /// The change went to an editor buffer (not yet saved) rather than the disk.
    pub via_editor: bool,
    /// The change is in an editor buffer and was not saved: why (`None`: on disk).
    pub unsaved: Option<Unsaved>,
}

/// Why an edit of an open buffer was left unsaved (`saveAfterEdit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsaved {
    /// The buffer held unsaved changes of the user; saving would have saved them too.
    UserChanges,
    /// `saveAfterEdit` is `never`.
    Never,
    /// The editor was asked to save and did not.
    EditorDeclined,
    /// The editor cannot be asked to save (no `saveDocuments`).
    CannotSave,
}

impl Unsaved {
    /// The note appended to the tool result, for the model.
    pub fn note(self, path: &str) -> String {
        let why = match self {
            Unsaved::UserChanges => {
                "the buffer had unsaved changes of the user, and saving would have saved them without their say"
            }
            Unsaved::Never => {
                "the editor is configured not to save the agent's edits (saveAfterEdit: never)"
            }
            Unsaved::EditorDeclined => "the editor did not save it when asked",
            Unsaved::CannotSave => "this editor cannot be asked to save",
        };
        format!(
            "Note: the change is in the editor's buffer of {path} but not saved to disk, because {why}. \
             Commands (bash: builds, tests, git) see the file on disk without this change until the user saves it."
        )
    }
}

/// One `edit` call as the workspace carries it out.
pub struct EditRequest<'a> {
    /// The path as the model wrote it (for messages).
    pub shown: &'a str,
    /// The replacements (texts in LF), matched against the current content.
    pub edits: &'a [Edit],
    /// The version the agent last saw at this path: a different current content is a
    /// conflict.
    pub seen: Option<ContentId>,
    /// False for a dry run (an approval preview): compute the diff, change nothing.
    pub apply: bool,
    pub cancel: &'a CancellationToken,
}

/// What an `edit` did (or, dry, would do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditOutcome {
    /// The version of the content now in place (dry run: of the current content).
    pub id: ContentId,
    /// The change, on LF text without BOM.
    pub diff: DiffResult,
    /// The change is in an editor buffer and was not saved: why.
    pub unsaved: Option<Unsaved>,
}

/// Where tools read and write files. Implementations must be cheap to share (`Arc<dyn Workspace>`).
pub trait Workspace: Send + Sync {
    /// The folders its files are beneath (the workspace folder and the extra roots), and the
    /// rules resolving a path into them: every implementation's files are on one disk's.
    fn roots(&self) -> &Roots;

    /// The workspace folder (canonical).
    fn root(&self) -> &Path {
        self.roots().root()
    }

    /// Resolves a model-supplied path (`@` prefix stripped, `~` expanded, special spaces
    /// normalised, relative to the root) to a canonical absolute path. Refuses escapes (`..`,
    /// absolute paths elsewhere, symlinks pointing out) unless under a configured extra root.
    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.roots().resolve(path)
    }

    /// The content as the user sees it: the editor buffer when open, else the disk.
    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<FileSnapshot, WorkspaceError>>;

    /// Replaces the whole content (creating parent directories). Fails with
    /// [`WorkspaceError::Conflict`] if `req.expected` no longer matches the current content; a
    /// file that does not exist has nothing to clobber, so `expected` is then ignored.
    fn write(&self, req: WriteRequest) -> BoxFuture<'static, Result<WriteOutcome, WorkspaceError>>;

    /// Applies `edit`'s replacements to the file (all or none), with pi's matching rules and
    /// error texts. The default reads the whole file, computes the new content and writes it
    /// back ([`edit_by_rewrite`]); the daemon edits open buffers in place.
    fn edit<'a>(
        &'a self,
        path: PathBuf,
        request: EditRequest<'a>,
    ) -> BoxFuture<'a, Result<EditOutcome, ToolError>> {
        Box::pin(edit_by_rewrite(self, path, request))
    }

    /// The content as the user sees it now, held to be hashed later (`None`: no such file).
    /// The default reads it; the daemon captures an open buffer's rope without copying it.
    fn capture(
        &self,
        path: PathBuf,
    ) -> BoxFuture<'static, Result<Option<Capture>, WorkspaceError>> {
        let read = self.read(path);
        Box::pin(async move {
            match read.await {
                Ok(snapshot) => Ok(Some(match snapshot.id {
                    ContentId::Hash(hash) => Capture::Ready(hash),
                    ContentId::Buffer { .. } => Capture::bytes(snapshot.bytes),
                })),
                Err(WorkspaceError::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
            }
        })
    }

    /// Open documents overlaying the disk (path → text), for `grep`/`find`. Disk: none.
    fn open_documents(&self) -> Vec<(PathBuf, String)> {
        Vec::new()
    }

    /// Deletes a file (a revert of the agent's creating it); a file already gone is no error.
    /// The disk deletes it beneath its root; the daemon asks the editor for an open one, so its
    /// buffer goes too.
    fn remove(&self, path: PathBuf) -> BoxFuture<'static, Result<(), WorkspaceError>>;
}

/// The new full content of a file after `edits`, plus the diff (on LF text).
///
/// Matching happens on LF text, but the spans are mapped back to the original bytes and only
/// they are replaced (new text takes the file's line ending), so every untouched byte, including
/// the line endings of a mixed-ending file, stays as it was.
pub fn compute_edit(
    raw: &[u8],
    edits: &[Edit],
    path: &str,
) -> Result<(Vec<u8>, DiffResult), ToolError> {
    let text = std::str::from_utf8(raw).map_err(|_| {
        ToolError::new(format!(
            "Could not edit {path}: it is not UTF-8 text. Use write to replace it, or bash for binary files."
        ))
    })?;
    let (bom, body) = strip_bom(text);
    let crlf = detect_crlf(body);
    // Most files have no `\r`: then the LF text is the body itself and offsets map to
    // themselves, which saves a copy and an offset table as large as the file.
    let has_cr = body.contains('\r');
    let (lf, original) = if has_cr {
        let (lf, map) = lf_with_map(body);
        let spans = match_edits(&lf, edits, path).map_err(ToolError::new)?;
        let original: Vec<Span> = spans.iter().map(|&(s, e, i)| (map[s], map[e], i)).collect();
        (Cow::Owned(lf), original)
    } else {
        let spans = match_edits(body, edits, path).map_err(ToolError::new)?;
        (Cow::Borrowed(body), spans)
    };
    let new_body = splice(body, &original, |i| {
        restore_line_endings(&edits[i].new_text, crlf)
    });
    if new_body == body {
        return Err(ToolError::new(no_change(path, edits.len() > 1)));
    }
    let d = if has_cr {
        diff(&lf, &normalize_to_lf(&new_body), path)
    } else {
        diff(&lf, &new_body, path)
    };
    let bytes = if bom.is_empty() {
        new_body.into_bytes()
    } else {
        format!("{bom}{new_body}").into_bytes()
    };
    Ok((bytes, d))
}

/// `text` with `\r\n` and lone `\r` turned into `\n`, and for each byte offset of the result
/// (plus its end) the matching offset in `text`.
fn lf_with_map(text: &str) -> (String, Vec<usize>) {
    let bytes = text.as_bytes();
    let mut lf = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len() + 1);
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        let len = c.len_utf8();
        if c == '\r' {
            map.push(i);
            lf.push('\n');
            i += if bytes.get(i + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            continue;
        }
        map.extend(i..i + len);
        lf.push(c);
        i += len;
    }
    map.push(text.len());
    (lf, map)
}

fn errno(e: &WorkspaceError) -> &'static str {
    match e {
        WorkspaceError::NotFound(_) => "ENOENT",
        WorkspaceError::PermissionDenied(_) => "EACCES",
        WorkspaceError::IsDirectory(_) => "EISDIR",
        _ => "EIO",
    }
}

/// The tool's error for a failed write of the edited content.
pub fn edit_write_error(shown: &str, e: WorkspaceError) -> ToolError {
    match e {
        WorkspaceError::PermissionDenied(_) => {
            ToolError::new(format!("Could not edit file: {shown}. Error code: EACCES."))
        }
        other => ws_error(shown, other),
    }
}

/// The tool's error when the file is not what the agent last saw.
pub fn seen_conflict(shown: &str) -> ToolError {
    ToolError::new(conflict_text(shown))
}

/// [`Workspace::edit`] by reading the whole file, computing the new content and writing it
/// back (refused if the file changed meanwhile). Every workspace can do this; the daemon does
/// better for open buffers.
pub async fn edit_by_rewrite<W: Workspace + ?Sized>(
    ws: &W,
    abs: PathBuf,
    req: EditRequest<'_>,
) -> Result<EditOutcome, ToolError> {
    let shown = req.shown;
    let snap = match ws.read(abs.clone()).await {
        Ok(snap) if req.seen.is_some_and(|seen| !snap.is(&seen)) => {
            return Err(seen_conflict(shown));
        }
        Ok(snap) => snap,
        Err(e @ WorkspaceError::NotFound(_)) => {
            return Err(ToolError::new(format!(
                "Could not edit file: {shown}. Error code: {}.",
                errno(&e)
            )));
        }
        Err(e) => return Err(ws_error(shown, e)),
    };
    check_abort(req.cancel)?;
    let (bytes, diff) = compute_edit(&snap.bytes, req.edits, shown)?;
    if !req.apply {
        return Ok(EditOutcome {
            id: snap.id,
            diff,
            unsaved: None,
        });
    }
    let outcome = ws
        .write(WriteRequest::new(abs, bytes, Some(snap.id)))
        .await
        .map_err(|e| edit_write_error(shown, e))?;
    Ok(EditOutcome {
        id: outcome.id,
        diff,
        unsaved: outcome.unsaved,
    })
}

#[cfg(test)]
mod fingerprint_tests {
    use super::Fingerprint;
    use std::collections::HashSet;

    #[test]
    fn any_one_byte_change_or_block_swap_changes_the_fingerprint() {
        let base: Vec<u8> = (0..200u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut seen = HashSet::new();
        assert!(seen.insert(Fingerprint::of(&base)));
        for at in 0..base.len() {
            for delta in [1u8, 0x80] {
                let mut b = base.clone();
                b[at] ^= delta;
                assert!(seen.insert(Fingerprint::of(&b)), "collision at {at}");
            }
        }
        let mut swapped = base.clone();
        swapped[..32].rotate_left(8);
        assert_ne!(Fingerprint::of(&swapped), Fingerprint::of(&base));
        let mut lanes = base.clone();
        let (a, b) = lanes[..64].split_at_mut(32);
        a.swap_with_slice(b);
        assert_ne!(Fingerprint::of(&lanes), Fingerprint::of(&base));
        assert_eq!(Fingerprint::of(&base), Fingerprint::of(&base.clone()));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn chunked_and_incremental_fingerprints_equal_the_direct_one(
            text in proptest::collection::vec(0u8..4, 0..60),
            cuts in proptest::collection::vec(0usize..60, 0..6),
            at in 0usize..60,
            removed in 0usize..20,
            inserted in proptest::collection::vec(0u8..4, 0..20),
        ) {
            let mut hasher = super::FingerprintHasher::default();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).collect();
            cuts.sort_unstable();
            let mut from = 0;
            for cut in cuts.into_iter().chain([text.len()]) {
                hasher.feed(&text[from..cut]);
                from = cut;
            }
            proptest::prop_assert_eq!(hasher.finish(), Fingerprint::of(&text));

            let s = at.min(text.len());
            let e = (s + removed).min(text.len());
            let mut new = text[..s].to_vec();
            new.extend_from_slice(&inserted);
            new.extend_from_slice(&text[e..]);
            let k = super::FINGERPRINT_CONTEXT;
            let updated = Fingerprint::of(&text).replaced(
                &text[s.saturating_sub(k)..s],
                &text[s..e],
                &inserted,
                &text[e..(e + k).min(text.len())],
            );
            proptest::prop_assert_eq!(updated, Fingerprint::of(&new));
        }
    }
}
