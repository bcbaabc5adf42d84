//! Ropey mirrors of the editor's open documents.
//!
//! **Invariant:** the store is mutated only from the ordered-sync shim (`ordered.rs`), in wire
//! order, under a std mutex that is never held across an `.await`. Waiters (edit confirmation)
//! are woken through a watch channel bumped after every change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

use ropey::Rope;
use tokio::sync::watch;
use tower_lsp_server::ls_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, Uri,
};

use crate::server::position::{self, Encoding};

/// One open document as the editor holds it (unsaved text included).
#[derive(Clone, Debug)]
pub struct Document {
    pub uri: String,
    pub version: i32,
    pub rope: Rope,
}

#[derive(Default)]
struct Inner {
    encoding: Encoding,
    docs: HashMap<String, Document>,
    by_path: HashMap<PathBuf, String>,
}

/// The connection's document mirrors, shared by the shim, the handlers and the tools.
#[derive(Clone)]
pub struct DocStore {
    inner: Arc<Mutex<Inner>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for DocStore {
    fn default() -> Self {
        DocStore {
            inner: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
        }
    }
}

/// The file path of a `file:` URI, if it is one.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    Uri::from_str(uri)
        .ok()?
        .to_file_path()
        .map(|p| p.into_owned())
}

/// The path tools resolve to: canonical when the file exists (tools canonicalise their roots).
fn lookup_path(uri: &str) -> Option<PathBuf> {
    let path = uri_to_path(uri)?;
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

/// The `file:` URI of an absolute path.
pub fn path_to_uri(path: &Path) -> Option<String> {
    Uri::from_file_path(path).map(|u| u.as_str().to_owned())
}

impl DocStore {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means another thread panicked mid-update; the map is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn set_encoding(&self, enc: Encoding) {
        self.lock().encoding = enc;
    }

    pub fn encoding(&self) -> Encoding {
        self.lock().encoding
    }

    /// Subscribes to "some document changed" ticks.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn open(&self, p: DidOpenTextDocumentParams) {
        let uri = p.text_document.uri.as_str().to_owned();
        let doc = Document {
            uri: uri.clone(),
            version: p.text_document.version,
            rope: Rope::from_str(&p.text_document.text),
        };
        let mut inner = self.lock();
        if let Some(path) = lookup_path(&uri) {
            inner.by_path.insert(path, uri.clone());
        }
        inner.docs.insert(uri, doc);
        drop(inner);
        self.bump();
    }

    /// Applies one didChange: events in order, each relative to the previous result.
    pub fn change(&self, p: DidChangeTextDocumentParams) {
        let uri = p.text_document.uri.as_str();
        let mut inner = self.lock();
        let enc = inner.encoding;
        let Some(doc) = inner.docs.get_mut(uri) else {
            tracing::warn!(uri, "didChange for a document that is not open; ignored");
            return;
        };
        for change in p.content_changes {
            match change.range {
                None => doc.rope = Rope::from_str(&change.text),
                Some(range) => {
                    let chars = position::to_char_range(&doc.rope, range, enc);
                    doc.rope.remove(chars.clone());
                    doc.rope.insert(chars.start, &change.text);
                }
            }
        }
        doc.version = p.text_document.version;
        drop(inner);
        self.bump();
    }

    pub fn close(&self, p: DidCloseTextDocumentParams) {
        let uri = p.text_document.uri.as_str();
        let mut inner = self.lock();
        inner.docs.remove(uri);
        inner.by_path.retain(|_, u| u != uri);
        drop(inner);
        self.bump();
    }

    /// A snapshot (O(1) rope clone) of the document with this URI.
    pub fn get(&self, uri: &str) -> Option<Document> {
        self.lock().docs.get(uri).cloned()
    }

    /// A snapshot of the open document backed by this file, if any.
    pub fn get_path(&self, path: &Path) -> Option<Document> {
        let inner = self.lock();
        let uri = inner.by_path.get(path)?;
        inner.docs.get(uri).cloned()
    }

    /// Paths and texts of all open `file:` documents.
    pub fn open_files(&self) -> Vec<(PathBuf, String)> {
        let inner = self.lock();
        inner
            .by_path
            .iter()
            .filter_map(|(path, uri)| Some((path.clone(), inner.docs.get(uri)?.rope.to_string())))
            .collect()
    }

    /// URIs of all open documents, sorted.
    pub fn open_uris(&self) -> Vec<String> {
        let mut uris: Vec<String> = self.lock().docs.keys().cloned().collect();
        uris.sort();
        uris
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store_with(text: &str) -> DocStore {
        let store = DocStore::default();
        let open = serde_json::from_value(json!({"textDocument":
            {"uri":"file:///t/a.txt","languageId":"plaintext","version":1,"text":text}}));
        store.open(open.unwrap());
        store
    }

    fn change(store: &DocStore, version: i32, changes: serde_json::Value) {
        let p = serde_json::from_value(
            json!({"textDocument":{"uri":"file:///t/a.txt","version":version},
            "contentChanges":changes}),
        );
        store.change(p.unwrap());
    }

    #[test]
    fn incremental_changes_apply_in_sequence() {
        let store = store_with("hello\r\nworld");
        change(
            &store,
            2,
            json!([
                {"range":{"start":{"line":1,"character":0},"end":{"line":1,"character":5}},"text":"there"},
                {"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"😀 "},
                {"range":{"start":{"line":0,"character":99},"end":{"line":0,"character":99}},"text":"!"}
            ]),
        );
        let doc = store.get("file:///t/a.txt").unwrap();
        assert_eq!(doc.rope.to_string(), "😀 hello!\r\nthere");
        assert_eq!(doc.version, 2);
        assert_eq!(store.get_path(Path::new("/t/a.txt")).unwrap().version, 2);
    }

    #[test]
    fn full_text_change_replaces_everything() {
        let store = store_with("abc");
        change(&store, 5, json!([{"text":"xyz\n"}]));
        assert_eq!(
            store.get("file:///t/a.txt").unwrap().rope.to_string(),
            "xyz\n"
        );
    }

    #[test]
    fn change_to_unknown_document_is_ignored() {
        let store = DocStore::default();
        change(&store, 1, json!([{"text":"x"}]));
        assert!(store.get("file:///t/a.txt").is_none());
    }
}
