//! Honest saving (`saveAfterEdit`, protocol.md §4.4): whether an open buffer holds unsaved
//! changes of the user, and whether saving after the agent's edit would save them.
//!
//! "Unsaved" is known by comparing the mirror with the file on disk (no `didSave` bookkeeping,
//! so it holds for every client and after a reconnect): a buffer whose text differs from the
//! disk has changes nobody saved. What the disk holds is cached per file version
//! ([`DiskFingerprints`]): the buffer's version the editor saved, or the file's fingerprint (a
//! hint: different means different) and hash (which decides when the fingerprints agree).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use crate::lsp::documents::Document;
use crate::lsp::protocol::SaveAfterEdit;
use crate::tools::{ContentHash, ContentId, Fingerprint, Unsaved};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What is known of a file's content.
#[derive(Clone, Copy)]
enum OnDisk {
    /// Read: its fingerprint and hash, with and without a leading byte-order mark.
    Read {
        raw: (Fingerprint, ContentHash),
        without_bom: Option<(Fingerprint, ContentHash)>,
    },
    /// The editor saved this version of the open buffer into it.
    Saved(ContentId),
}

impl OnDisk {
    fn of(bytes: &[u8]) -> OnDisk {
        let both = |b: &[u8]| (Fingerprint::of(b), ContentHash::of(b));
        OnDisk::Read {
            raw: both(bytes),
            without_bom: bytes.strip_prefix(BOM).map(both),
        }
    }

    /// Whether `doc` holds this content. Editors hold the text without the byte-order mark they
    /// write back, so a buffer without one is compared with the content after it. The
    /// fingerprint only rules out; equal fingerprints are confirmed by the hash.
    fn holds(&self, doc: &Document) -> bool {
        match self {
            OnDisk::Saved(id) => doc.content_id().same(id) == Some(true),
            OnDisk::Read { raw, without_bom } => {
                let doc_has_bom = doc.rope.len_bytes() > 0 && doc.rope.byte(0) == BOM[0];
                let (fingerprint, hash) = match without_bom {
                    Some(after_bom) if !doc_has_bom => *after_bom,
                    _ => *raw,
                };
                fingerprint == doc.facts.fingerprint && hash == doc.content_hash()
            }
        }
    }
}

/// What identifies a version of a file on disk without reading it.
type Stamp = (Option<SystemTime>, u64);

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    (meta.modified().ok(), meta.len())
}

/// The fingerprints of the files edited buffers belong to, keyed by their modification time and
/// length: while a file is unchanged, checking a buffer against it costs a `stat`, not a read
/// of the whole file (a 10 MB document is edited at interactive speed).
#[derive(Default)]
pub struct DiskFingerprints {
    known: Mutex<HashMap<PathBuf, (Stamp, OnDisk)>>,
}

impl DiskFingerprints {
    fn known(&self) -> MutexGuard<'_, HashMap<PathBuf, (Stamp, OnDisk)>> {
        // A poisoned map only lost an insert; the entries are still usable.
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `doc` (open for `path`) differs from the file on disk. A file missing on disk
    /// counts as unsaved unless the buffer is empty too; an unreadable one counts as unsaved
    /// (in doubt, nothing is saved for the user).
    pub async fn has_unsaved_changes(&self, doc: &Document, path: &Path) -> bool {
        // The stamp is taken before the read: a change in between makes the next stamp differ.
        let meta = match tokio::fs::metadata(path).await {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return doc.rope.len_bytes() > 0,
            Err(_) => return true,
        };
        let now = stamp(&meta);
        let cached = self
            .known()
            .get(path)
            .filter(|(s, _)| *s == now)
            .map(|(_, d)| *d);
        if let Some(disk) = cached {
            return !disk.holds(doc);
        }
        let Ok(bytes) = tokio::fs::read(path).await else {
            return true;
        };
        let disk = OnDisk::of(&bytes);
        self.known().insert(path.to_path_buf(), (now, disk));
        !disk.holds(doc)
    }

    /// The editor saved the file: it now holds the buffer's version `text`, or, `None`,
    /// something not known for sure (read again next time).
    pub async fn saved(&self, path: &Path, text: Option<ContentId>) {
        let (Some(id), Ok(meta)) = (text, tokio::fs::metadata(path).await) else {
            self.known().remove(path);
            return;
        };
        self.known()
            .insert(path.to_path_buf(), (stamp(&meta), OnDisk::Saved(id)));
    }
}

/// Whether `doc` (open for `path`) differs from the file on disk (see
/// [`DiskFingerprints::has_unsaved_changes`]), without a cache.
pub async fn has_unsaved_changes(doc: &Document, path: &Path) -> bool {
    DiskFingerprints::default()
        .has_unsaved_changes(doc, path)
        .await
}

/// Why the buffer must stay unsaved after the agent's edit, before asking the editor: `None`
/// when it may be saved. `user_changes`: the buffer held unsaved changes of the user before
/// the edit, or the user typed during it.
pub fn keep_unsaved(mode: SaveAfterEdit, user_changes: bool) -> Option<Unsaved> {
    match mode {
        SaveAfterEdit::Never => Some(Unsaved::Never),
        SaveAfterEdit::IfClean if user_changes => Some(Unsaved::UserChanges),
        SaveAfterEdit::IfClean | SaveAfterEdit::Always => None,
    }
}

/// Whether approving an edit of this buffer saves the user's unsaved changes with it
/// (`savesUnsavedChanges` in `agent/beforeToolCall`).
pub async fn saves_unsaved_changes(mode: SaveAfterEdit, doc: &Document, path: &Path) -> bool {
    mode == SaveAfterEdit::Always && has_unsaved_changes(doc, path).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use ropey::Rope;

    fn doc(text: &str) -> Document {
        Document::new("file:///a".into(), 1, Rope::from_str(text))
    }

    #[tokio::test]
    async fn unsaved_is_the_mirror_against_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        assert!(!has_unsaved_changes(&doc(""), &path).await, "new and empty");
        assert!(has_unsaved_changes(&doc("x"), &path).await, "never saved");
        std::fs::write(&path, "same\n").unwrap();
        assert!(!has_unsaved_changes(&doc("same\n"), &path).await);
        assert!(has_unsaved_changes(&doc("same\nmore"), &path).await);
        std::fs::write(&path, b"\xEF\xBB\xBFsame\n").unwrap();
        assert!(!has_unsaved_changes(&doc("same\n"), &path).await, "BOM");
        assert!(!has_unsaved_changes(&doc("\u{feff}same\n"), &path).await);
    }

    #[tokio::test]
    async fn the_cache_follows_the_file_and_the_editors_saves() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one\n").unwrap();
        let cache = DiskFingerprints::default();
        assert!(!cache.has_unsaved_changes(&doc("one\n"), &path).await);
        assert!(cache.has_unsaved_changes(&doc("two\n"), &path).await);
        // Changed on disk (another length): read again.
        std::fs::write(&path, "two!\n").unwrap();
        assert!(!cache.has_unsaved_changes(&doc("two!\n"), &path).await);
        // The editor saved the buffer: that version of it is what the disk holds now, and
        // any other (another opening of the file, a later change) is not known to be.
        std::fs::write(&path, "three\n").unwrap();
        let mut saved = doc("three\n");
        cache.saved(&path, Some(saved.content_id())).await;
        assert!(!cache.has_unsaved_changes(&saved, &path).await);
        assert!(cache.has_unsaved_changes(&doc("three\n"), &path).await);
        saved.replace(0..0, "!");
        assert!(cache.has_unsaved_changes(&saved, &path).await);
    }

    #[tokio::test]
    async fn a_swap_the_fingerprint_misses_is_unsaved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.py");
        let disk = "def f():\n        a = 1\n        b = 2\n        c()\n";
        let buffer = "def f():\n        b = 2\n        a = 1\n        c()\n";
        std::fs::write(&path, disk).unwrap();
        assert_eq!(doc(disk).facts.fingerprint, doc(buffer).facts.fingerprint);
        assert!(has_unsaved_changes(&doc(buffer), &path).await);
    }

    #[test]
    fn modes() {
        assert_eq!(keep_unsaved(SaveAfterEdit::IfClean, false), None);
        assert_eq!(
            keep_unsaved(SaveAfterEdit::IfClean, true),
            Some(Unsaved::UserChanges)
        );
        assert_eq!(keep_unsaved(SaveAfterEdit::Always, true), None);
        assert_eq!(
            keep_unsaved(SaveAfterEdit::Never, false),
            Some(Unsaved::Never)
        );
    }
}
