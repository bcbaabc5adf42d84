//! Ropey mirrors of the editor's open documents.
//!
//! **Invariant:** the documents change only through [`Documents`], which the main loop
//! (`main_loop.rs`) owns, in wire order, under a std mutex that is never held across an `.await`. Waiters (edit confirmation)
//! are woken through a watch channel bumped after every change.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

use ls_types::{
    Diagnostic, DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    Uri,
};
use ropey::Rope;
use tokio::sync::watch;

use crate::lsp::position::{self, Encoding};
use crate::lsp::protocol::DiagnosticsParams;
use crate::tools::workspace::{
    ContentHash, ContentId, FINGERPRINT_CONTEXT, Fingerprint, FingerprintHasher, folds_or_trims,
};

/// One open document as the editor holds it (unsaved text included).
#[derive(Clone, Debug)]
pub struct Document {
    pub uri: String,
    pub version: i32,
    pub rope: Rope,
    /// Facts about `rope`'s text, kept current by every change.
    pub facts: DocFacts,
    /// This opening of the document (a new one each `didOpen`) and its count of changes: the
    /// exact identity of the text, with nothing hashed (the editor's own `version` is the
    /// client's to number).
    pub open_id: u64,
    pub rev: u64,
}

impl Document {
    pub fn new(uri: String, version: i32, rope: Rope) -> Self {
        static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Document {
            uri,
            version,
            facts: DocFacts::of(&rope),
            rope,
            open_id: OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            rev: 0,
        }
    }

    /// The version of the text this is.
    pub fn content_id(&self) -> ContentId {
        ContentId::Buffer {
            doc: self.open_id,
            rev: self.rev,
        }
    }

    /// The SHA-256 of the text (a pass over it: for the rare comparison with a file's hash).
    pub fn content_hash(&self) -> ContentHash {
        ContentHash::of_pieces(self.rope.chunks().map(str::as_bytes))
    }

    /// Whether the text is the version `id` names (hashing it only against a file's hash).
    pub fn is(&self, id: &ContentId) -> bool {
        match self.content_id().same(id) {
            Some(same) => same,
            None => id.hash().is_some_and(|h| h == self.content_hash()),
        }
    }

    /// Replaces the whole text.
    pub fn set_text(&mut self, text: &str) {
        self.rope = Rope::from_str(text);
        self.facts = DocFacts::of(&self.rope);
        self.rev += 1;
    }

    /// Replaces the chars `chars` (clamped to the text) with `text`, updating the facts from
    /// the replaced bytes and a few bytes around them: O(change), never O(document).
    pub fn replace(&mut self, chars: std::ops::Range<usize>, text: &str) {
        let n = self.rope.len_chars();
        let (cs, ce) = (chars.start.min(n), chars.end.min(n));
        let (cs, ce) = (cs.min(ce), cs.max(ce));
        let (s, e) = (self.rope.char_to_byte(cs), self.rope.char_to_byte(ce));
        let len = self.rope.len_bytes();
        let head = self.bytes(s.saturating_sub(FINGERPRINT_CONTEXT)..s);
        let old = self.bytes(s..e);
        let tail = self.bytes(e..(e + FINGERPRINT_CONTEXT).min(len));
        self.facts = self.facts.replaced(&head, &old, text.as_bytes(), &tail);
        self.rope.remove(cs..ce);
        self.rope.insert(cs, text);
        self.rev += 1;
    }

    /// The bytes `range` of the text (any byte offsets, not only char boundaries), clamped to
    /// the text. Copied chunk by chunk (a byte iterator costs ~40 instructions per byte; an
    /// edit's diff excerpt and every change's context go through here).
    pub fn bytes(&self, range: std::ops::Range<usize>) -> Vec<u8> {
        let len = self.rope.len_bytes();
        let start = range.start.min(len);
        let end = range.end.min(len).max(start);
        let mut out = Vec::with_capacity(end - start);
        if start == end {
            return out;
        }
        let (chunks, mut at, _, _) = self.rope.chunks_at_byte(start);
        for chunk in chunks {
            let c = chunk.as_bytes();
            out.extend_from_slice(&c[start.saturating_sub(at)..(end - at).min(c.len())]);
            at += c.len();
            if at >= end {
                break;
            }
        }
        out
    }
}

/// How a document ends its lines, as `edit` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEndings {
    /// No `\r` at all: the text is its own LF form.
    Lf,
    /// Every line break is `\r\n` (and there is at least one).
    Crlf,
    /// Anything else (lone `\r`, or both kinds).
    Mixed,
}

/// Facts about a document's text that the edit path needs, maintained per change in
/// O(change) so an edit never scans the whole text for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocFacts {
    /// The content fingerprint (the same as the disk's for the same bytes).
    pub fingerprint: Fingerprint,
    cr: usize,
    lf: usize,
    crlf: usize,
    /// Places where pi's fuzzy normalisation would change the LF text: ASCII whitespace before
    /// a line break, and non-ASCII chars that fold or are whitespace.
    fuzzy: usize,
}

/// Counts that change with a replacement; pairs straddling its ends are counted with one byte
/// of context on each side.
#[derive(Default)]
struct Counts {
    cr: usize,
    lf: usize,
    crlf: usize,
    fuzzy: usize,
}

fn ascii_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | 0x0b | 0x0c)
}

impl Counts {
    /// Chars of `mid` (whole chars) and pairs of adjacent bytes of `before ++ mid ++ after`.
    fn of(before: Option<u8>, mid: &[u8], after: Option<u8>) -> Counts {
        let mut c = Counts::default();
        for &b in mid {
            c.cr += usize::from(b == b'\r');
            c.lf += usize::from(b == b'\n');
        }
        if !mid.is_ascii() {
            c.fuzzy += match std::str::from_utf8(mid) {
                Ok(text) => {
                    let mut buf = String::with_capacity(8);
                    text.chars()
                        .filter(|&ch| folds_or_trims(ch, &mut buf))
                        .count()
                }
                // Not char-aligned (never from the rope): count conservatively.
                Err(_) => mid.iter().filter(|b| !b.is_ascii()).count(),
            };
        }
        let mut prev = before;
        for &b in mid.iter().chain(after.as_slice()) {
            if let Some(p) = prev {
                c.crlf += usize::from(p == b'\r' && b == b'\n');
                c.fuzzy += usize::from(ascii_blank(p) && (b == b'\n' || b == b'\r'));
            }
            prev = Some(b);
        }
        c
    }
}

impl DocFacts {
    /// The facts of a whole text (one pass over its chunks).
    pub fn of(rope: &Rope) -> DocFacts {
        let mut hasher = FingerprintHasher::default();
        let mut facts = Counts::default();
        let mut prev = None;
        for chunk in rope.chunks() {
            let bytes = chunk.as_bytes();
            hasher.feed(bytes);
            let c = Counts::of(prev, bytes, None);
            facts.cr += c.cr;
            facts.lf += c.lf;
            facts.crlf += c.crlf;
            facts.fuzzy += c.fuzzy;
            prev = bytes.last().copied().or(prev);
        }
        DocFacts {
            fingerprint: hasher.finish(),
            cr: facts.cr,
            lf: facts.lf,
            crlf: facts.crlf,
            fuzzy: facts.fuzzy,
        }
    }

    /// The facts after `old` is replaced by `new`; `head`/`tail` are the
    /// [`FINGERPRINT_CONTEXT`] bytes around `old` (fewer only at the text's ends).
    pub fn replaced(self, head: &[u8], old: &[u8], new: &[u8], tail: &[u8]) -> DocFacts {
        let (before, after) = (head.last().copied(), tail.first().copied());
        let (o, n) = (
            Counts::of(before, old, after),
            Counts::of(before, new, after),
        );
        let update = |v: usize, o: usize, n: usize| v.saturating_sub(o) + n;
        DocFacts {
            fingerprint: self.fingerprint.replaced(head, old, new, tail),
            cr: update(self.cr, o.cr, n.cr),
            lf: update(self.lf, o.lf, n.lf),
            crlf: update(self.crlf, o.crlf, n.crlf),
            fuzzy: update(self.fuzzy, o.fuzzy, n.fuzzy),
        }
    }

    pub fn line_endings(&self) -> LineEndings {
        if self.cr == 0 {
            LineEndings::Lf
        } else if self.crlf == self.cr && self.crlf == self.lf {
            LineEndings::Crlf
        } else {
            LineEndings::Mixed
        }
    }

    /// `\n` in the text: its LF form has this many line breaks when it is not mixed.
    pub fn line_feeds(&self) -> usize {
        self.lf
    }

    /// Whether pi's fuzzy normalisation leaves the LF form of `rope` (whose facts these are)
    /// unchanged, so exact matches and their count are what the fuzzy rules would find.
    pub fn fuzzy_invariant(&self, rope: &Rope) -> bool {
        let len = rope.len_bytes();
        let last_blank =
            len > 0 && (ascii_blank(rope.byte(len - 1)) || rope.byte(len - 1) == b'\r');
        self.fuzzy == 0 && !last_blank
    }
}

#[derive(Default)]
struct Inner {
    encoding: Encoding,
    docs: HashMap<String, Document>,
    by_path: HashMap<PathBuf, String>,
    /// URIs not open whose `didChange` was already logged (a flood logs one line each).
    warned: HashSet<String>,
}

/// [`Inner::warned`] is cleared when it grows past this many URIs.
const WARNED_LIMIT: usize = 256;

/// The editor's latest diagnostics per document URI (`agent/diagnostics`; an empty list or
/// `didClose` removes them). Written from the loop in wire order, so a `didClose` and a later
/// `agent/diagnostics` for the same document apply in that order.
#[derive(Clone, Default)]
pub struct DiagnosticStore {
    inner: Arc<Mutex<HashMap<String, Vec<Diagnostic>>>>,
}

impl DiagnosticStore {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<Diagnostic>>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the URI's diagnostics (latest wins); an empty list forgets the URI.
    fn set(&self, p: DiagnosticsParams) {
        let mut map = self.lock();
        if p.diagnostics.is_empty() {
            map.remove(&p.uri);
        } else {
            map.insert(p.uri, p.diagnostics);
        }
    }

    fn clear(&self, uri: &str) {
        self.lock().remove(uri);
    }

    /// A snapshot of every URI's diagnostics.
    pub fn all(&self) -> Vec<(String, Vec<Diagnostic>)> {
        self.lock()
            .iter()
            .map(|(u, d)| (u.clone(), d.clone()))
            .collect()
    }
}

/// The connection's document mirrors, shared by the shim, the handlers and the tools.
#[derive(Clone)]
pub struct DocStore {
    inner: Arc<Mutex<Inner>>,
    changed: Arc<watch::Sender<u64>>,
    diagnostics: DiagnosticStore,
}

impl Default for DocStore {
    fn default() -> Self {
        DocStore {
            inner: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
            diagnostics: DiagnosticStore::default(),
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

/// The documents as the main loop owns them: the only place they change (`didOpen`,
/// `didChange`, `didClose`, `agent/diagnostics`), in wire order, by construction: it is not
/// `Clone`, and its changes take `&mut`. Runs and tools read them through [`DocStore`] handles.
#[derive(Default)]
pub struct Documents {
    store: DocStore,
}

impl Documents {
    /// A handle to read them (a clone shares the same documents).
    pub fn store(&self) -> &DocStore {
        &self.store
    }

    pub fn set_encoding(&mut self, enc: Encoding) {
        self.store.set_encoding(enc);
    }

    pub fn open(&mut self, p: DidOpenTextDocumentParams) {
        self.store.open(p);
    }

    pub fn change(&mut self, p: DidChangeTextDocumentParams) {
        self.store.change(p);
    }

    pub fn close(&mut self, p: DidCloseTextDocumentParams) {
        self.store.close(p);
    }

    /// `agent/diagnostics`: the document's latest diagnostics.
    pub fn set_diagnostics(&mut self, p: DiagnosticsParams) {
        self.store.diagnostics.set(p);
    }
}

impl DocStore {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means another thread panicked mid-update; the map is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// The editor's diagnostics, forwarded with `agent/diagnostics`.
    pub fn diagnostics(&self) -> &DiagnosticStore {
        &self.diagnostics
    }

    fn set_encoding(&self, enc: Encoding) {
        self.lock().encoding = enc;
    }

    pub fn encoding(&self) -> Encoding {
        self.lock().encoding
    }

    /// Subscribes to "some document changed" ticks.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn open(&self, p: DidOpenTextDocumentParams) {
        let uri = p.text_document.uri.as_str().to_owned();
        let doc = Document::new(
            uri.clone(),
            p.text_document.version,
            Rope::from_str(&p.text_document.text),
        );
        let mut inner = self.lock();
        if let Some(path) = lookup_path(&uri) {
            inner.by_path.insert(path, uri.clone());
        }
        inner.warned.remove(&uri);
        inner.docs.insert(uri, doc);
        drop(inner);
        self.bump();
    }

    /// Applies one didChange: events in order, each relative to the previous result.
    fn change(&self, p: DidChangeTextDocumentParams) {
        let uri = p.text_document.uri.as_str();
        let mut inner = self.lock();
        let enc = inner.encoding;
        let Some(doc) = inner.docs.get_mut(uri) else {
            if inner.warned.len() >= WARNED_LIMIT {
                inner.warned.clear();
            }
            if inner.warned.insert(uri.to_owned()) {
                tracing::warn!(
                    uri,
                    "didChange for a document that is not open; ignored (logged once per document)"
                );
            }
            return;
        };
        for change in p.content_changes {
            match change.range {
                None => doc.set_text(&change.text),
                Some(range) => {
                    let chars = position::to_char_range(&doc.rope, range, enc);
                    doc.replace(chars, &change.text);
                }
            }
        }
        doc.version = p.text_document.version;
        drop(inner);
        self.bump();
    }

    fn close(&self, p: DidCloseTextDocumentParams) {
        let uri = p.text_document.uri.as_str();
        let mut inner = self.lock();
        inner.docs.remove(uri);
        inner.by_path.retain(|_, u| u != uri);
        drop(inner);
        // A closed document's diagnostics are stale: the editor stops updating them.
        self.diagnostics.clear(uri);
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Facts kept current per change equal the facts of the resulting text.
        #[test]
        fn incremental_facts_equal_recomputed_facts(
            parts in proptest::collection::vec(
                proptest::prop_oneof!["a", " ", "\t", "\n", "\r", "\r\n", "é", "\u{2019}", "\u{00A0}"],
                0..40,
            ),
            changes in proptest::collection::vec(
                (0usize..50, 0usize..6, proptest::prop_oneof!["", "x", " ", "\n", "\r", "\r\n", " \n", "\u{201C}q"]),
                1..5,
            ),
        ) {
            let mut doc = Document::new("file:///p".into(), 1, Rope::from_str(&parts.concat()));
            for (at, len, text) in changes {
                let n = doc.rope.len_chars();
                let start = at.min(n);
                doc.replace(start..(start + len).min(n), &text);
                proptest::prop_assert_eq!(doc.facts, DocFacts::of(&doc.rope));
            }
        }
    }

    #[test]
    fn line_endings_and_fuzzy_invariance() {
        let facts = |t: &str| {
            let rope = Rope::from_str(t);
            let f = DocFacts::of(&rope);
            (f.line_endings(), f.fuzzy_invariant(&rope))
        };
        assert_eq!(facts("a\nb\n"), (LineEndings::Lf, true));
        assert_eq!(facts("a\r\nb\r\n"), (LineEndings::Crlf, true));
        assert_eq!(facts("a\r\nb\n"), (LineEndings::Mixed, true));
        assert_eq!(facts("a\rb"), (LineEndings::Mixed, true));
        assert_eq!(facts("a \nb"), (LineEndings::Lf, false));
        assert_eq!(facts("a\t\r\nb"), (LineEndings::Crlf, false));
        assert_eq!(facts("a\nb "), (LineEndings::Lf, false));
        assert_eq!(facts("\u{201C}a"), (LineEndings::Lf, false));
        assert_eq!(facts("é 😀 a"), (LineEndings::Lf, true));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// The chunk-wise copy equals the byte iterator for any range, across chunk bounds and
        /// inside multi-byte chars.
        #[test]
        fn bytes_equal_the_byte_iterator(
            parts in proptest::collection::vec(
                proptest::prop_oneof!["a", "\n", "\r\n", "é", "😀", "[a-z]{0,300}"], 0..200),
            a in 0usize..40_000,
            b in 0usize..40_000,
        ) {
            let doc = Document::new("file:///p".into(), 1, Rope::from_str(&parts.concat()));
            let len = doc.rope.len_bytes();
            let start = a.min(len);
            let expected: Vec<u8> =
                doc.rope.bytes_at(start).take(b.min(len).saturating_sub(start)).collect();
            proptest::prop_assert_eq!(doc.bytes(a..b), expected);
            let all: Vec<u8> = doc.rope.bytes().collect();
            proptest::prop_assert_eq!(doc.bytes(0..usize::MAX), all);
        }
    }

    #[test]
    fn change_to_unknown_document_is_ignored() {
        let store = DocStore::default();
        change(&store, 1, json!([{"text":"x"}]));
        assert!(store.get("file:///t/a.txt").is_none());
    }

    #[test]
    fn latest_list_wins_and_empty_forgets() {
        let store = DiagnosticStore::default();
        let d = Diagnostic::new_simple(ls_types::Range::default(), "x".into());
        let params = |n: usize| DiagnosticsParams {
            uri: "file:///a".into(),
            diagnostics: vec![d.clone(); n],
        };
        store.set(params(2));
        store.set(params(1));
        assert_eq!(store.all()[0].1.len(), 1);
        store.set(params(0));
        assert!(store.all().is_empty());
    }
}
