//! Honest saving (`saveAfterEdit`, protocol.md §4.4): whether an open buffer holds unsaved
//! changes of the user, and whether saving after the agent's edit would save them.
//!
//! "Unsaved" is known by comparing the mirror with the file on disk (no `didSave` bookkeeping,
//! so it holds for every client and after a reconnect): a buffer whose text differs from the
//! disk has changes nobody saved.

use std::path::Path;

use crate::server::documents::Document;
use crate::server::protocol::SaveAfterEdit;
use crate::tools::{Fingerprint, Unsaved};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Whether `doc` (open for `path`) differs from the file on disk. A file missing on disk counts
/// as unsaved unless the buffer is empty too; an unreadable one counts as unsaved (in doubt,
/// nothing is saved for the user).
pub async fn has_unsaved_changes(doc: &Document, path: &Path) -> bool {
    match tokio::fs::read(path).await {
        Ok(bytes) => {
            // Editors hold the text without the byte-order mark they write back.
            let bytes = match bytes.strip_prefix(BOM) {
                Some(rest) if doc.rope.len_bytes() == 0 || doc.rope.byte(0) != BOM[0] => rest,
                _ => &bytes[..],
            };
            Fingerprint::of(bytes) != doc.facts.fingerprint
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => doc.rope.len_bytes() > 0,
        Err(_) => true,
    }
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
