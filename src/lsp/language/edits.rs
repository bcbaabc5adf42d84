//! A rename's `WorkspaceEdit` as new file texts: each file's edits (`changes`, or
//! `documentChanges` of `TextDocumentEdit`s) applied to the text the user sees (the live
//! buffer, else the disk), inside the workspace roots, in the connection's encoding. A versioned
//! edit of a buffer that changed since, overlapping edits, and resource operations are refused
//! before anything is applied.

use std::path::PathBuf;

use ls_types::{DocumentChangeOperation, DocumentChanges, OneOf, TextEdit, WorkspaceEdit};
use ropey::Rope;
use serde_json::Value;

use super::Lang;
use super::position_args::line_text;
use super::results::{Place, shown_path};
use crate::lsp::documents::uri_to_path;
use crate::lsp::position::{self, Encoding};
use crate::tools::{ContentId, normalize_to_lf};

/// The words for a rename that also creates, renames or deletes files.
pub const RESOURCE_OPERATIONS: &str =
    "The rename also creates, renames or deletes files; agent-lsp does not apply that.";

/// One document's edits, as the servers sent them.
#[derive(Debug)]
pub struct DocumentEdits {
    pub uri: String,
    /// The buffer version they were computed on (a versioned `TextDocumentEdit`).
    pub version: Option<i32>,
    pub edits: Vec<TextEdit>,
}

/// A rename's edits by document (`None`: the servers propose none). Refused: resource
/// operations; malformed: anything but a `WorkspaceEdit`.
pub fn document_edits(result: Value) -> Result<Option<Vec<DocumentEdits>>, String> {
    if result.is_null() {
        return Ok(None);
    }
    let edit: WorkspaceEdit = serde_json::from_value(result)
        .map_err(|e| format!("the rename's edit is malformed: {e}"))?;
    let mut out: Vec<DocumentEdits> = Vec::new();
    let mut add = |uri: String, version: Option<i32>, edits: Vec<TextEdit>| match out
        .iter_mut()
        .find(|d| d.uri == uri)
    {
        Some(doc) => doc.edits.extend(edits),
        None => out.push(DocumentEdits {
            uri,
            version,
            edits,
        }),
    };
    let plain = |edits: Vec<OneOf<TextEdit, ls_types::AnnotatedTextEdit>>| -> Vec<TextEdit> {
        (edits.into_iter())
            .map(|e| match e {
                OneOf::Left(edit) => edit,
                OneOf::Right(annotated) => annotated.text_edit,
            })
            .collect()
    };
    match edit.document_changes {
        Some(DocumentChanges::Edits(docs)) => {
            for doc in docs {
                let id = doc.text_document;
                add(id.uri.as_str().to_owned(), id.version, plain(doc.edits));
            }
        }
        Some(DocumentChanges::Operations(ops)) => {
            for op in ops {
                match op {
                    DocumentChangeOperation::Op(_) => return Err(RESOURCE_OPERATIONS.into()),
                    DocumentChangeOperation::Edit(doc) => {
                        let id = doc.text_document;
                        add(id.uri.as_str().to_owned(), id.version, plain(doc.edits));
                    }
                }
            }
        }
        // `documentChanges` wins when both are sent (LSP: clients that support it use it).
        None => {
            let mut changes: Vec<_> = edit.changes.unwrap_or_default().into_iter().collect();
            changes.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            for (uri, edits) in changes {
                add(uri.as_str().to_owned(), None, edits);
            }
        }
    }
    out.retain(|d| !d.edits.is_empty());
    Ok(Some(out))
}

/// One file as the rename would leave it.
pub struct FileChange {
    pub abs: PathBuf,
    pub shown: String,
    /// The content the edits were computed on, and its version.
    pub before: Vec<u8>,
    pub before_id: ContentId,
    pub after: Vec<u8>,
    /// Each changed place, in the text after the rename.
    pub places: Vec<Place>,
}

impl FileChange {
    /// The unified diff of the change (LF text, `---`/`+++` header).
    pub fn patch(&self) -> String {
        let text = |b: &[u8]| normalize_to_lf(&String::from_utf8_lossy(b));
        crate::tools::diff::diff(&text(&self.before), &text(&self.after), &self.shown).patch
    }
}

/// Applies one document's edits to its text as the user sees it now.
pub async fn plan_file(lang: &Lang, doc: DocumentEdits) -> Result<FileChange, String> {
    let path = uri_to_path(&doc.uri)
        .ok_or_else(|| format!("The rename changes {}, which is not a file.", doc.uri))?;
    let abs = (path.to_str())
        .and_then(|p| lang.ws.resolve(p).ok())
        .ok_or_else(|| {
            format!(
                "The rename changes {}, outside the workspace; agent-lsp does not apply that.",
                path.display()
            )
        })?;
    let shown = shown_path(&abs, lang.ws.root());
    if let (Some(version), Some(open)) = (doc.version, lang.docs.get_path(&abs))
        && open.version != version
    {
        return Err(stale(&shown));
    }
    let snapshot = (lang.ws.read(abs.clone()).await).map_err(|e| e.to_string())?;
    let text = std::str::from_utf8(&snapshot.bytes)
        .map_err(|_| format!("{shown} is not UTF-8 text; agent-lsp does not rename in it."))?;
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(body) => ("\u{feff}", body),
        None => ("", text),
    };
    let (new_text, starts) = apply(body, &doc.edits, lang.encoding)
        .map_err(|why| format!("The rename's edits of {shown} {why}."))?;
    let rope = Rope::from_str(&new_text);
    let places = (starts.into_iter())
        .map(|idx| {
            let line = rope.char_to_line(idx.min(rope.len_chars()));
            let column = idx - rope.line_to_char(line);
            Place {
                path: shown.clone(),
                line: line as u64 + 1,
                column: column as u64 + 1,
                text: Some(line_text(&rope, line).trim().to_owned()),
            }
        })
        .collect();
    Ok(FileChange {
        abs,
        shown,
        before_id: snapshot.id,
        before: snapshot.bytes,
        after: format!("{bom}{new_text}").into_bytes(),
        places,
    })
}

/// The words for a file that changed after the servers computed its edits.
pub fn stale(shown: &str) -> String {
    format!(
        "{shown} changed after the language servers computed the rename; nothing was applied. \
         Call lsp_rename again."
    )
}

/// `text` with `edits` applied, and where each edit's new text starts in the result (chars).
fn apply(
    text: &str,
    edits: &[TextEdit],
    encoding: Encoding,
) -> Result<(String, Vec<usize>), &'static str> {
    let rope = Rope::from_str(text);
    let mut spans: Vec<(std::ops::Range<usize>, &str)> = (edits.iter())
        .map(|e| {
            (
                position::to_char_range(&rope, e.range, encoding),
                e.new_text.as_str(),
            )
        })
        .collect();
    spans.sort_by_key(|(r, _)| (r.start, r.end));
    if spans.windows(2).any(|w| w[0].0.end > w[1].0.start) {
        return Err("overlap");
    }
    let mut out = String::with_capacity(text.len());
    let mut starts = Vec::with_capacity(spans.len());
    let (mut at, mut chars) = (0usize, 0usize);
    for (range, new_text) in spans {
        let kept = rope.slice(at..range.start);
        out.extend(kept.chunks());
        chars += kept.len_chars();
        starts.push(chars);
        out.push_str(new_text);
        chars += new_text.chars().count();
        at = range.end;
    }
    out.extend(rope.slice(at..).chunks());
    Ok((out, starts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(line: u32, from: u32, to: u32, text: &str) -> Value {
        json!({"range": {"start": {"line": line, "character": from}, "end": {"line": line, "character": to}}, "newText": text})
    }

    #[test]
    fn both_shapes_of_workspace_edit_are_read() {
        let changes = json!({"changes": {"file:///b.ts": [edit(0, 0, 1, "x")], "file:///a.ts": [edit(1, 0, 1, "y")]}});
        let docs = document_edits(changes).unwrap().unwrap();
        assert_eq!(docs[0].uri, "file:///a.ts");
        assert_eq!(docs[1].version, None);
        let versioned = json!({"documentChanges": [{"textDocument": {"uri": "file:///a.ts", "version": 4},
            "edits": [edit(0, 0, 1, "x"), {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 1}},
            "newText": "z", "annotationId": "a"}]}]});
        let docs = document_edits(versioned).unwrap().unwrap();
        assert_eq!((docs[0].version, docs[0].edits.len()), (Some(4), 2));
        assert!(document_edits(Value::Null).unwrap().is_none());
        let create = json!({"documentChanges": [{"kind": "create", "uri": "file:///c.ts"}]});
        assert_eq!(document_edits(create).unwrap_err(), RESOURCE_OPERATIONS);
        assert!(document_edits(json!({"changes": 3})).is_err());
    }

    #[test]
    fn edits_apply_in_the_connections_encoding() {
        let parse = |v: Value| serde_json::from_value::<TextEdit>(v).unwrap();
        let text = "😀 greet();\ngreet();\n";
        // UTF-16: the emoji is two units, so `greet` starts at 3.
        let edits = [
            parse(edit(0, 3, 8, "welcome")),
            parse(edit(1, 0, 5, "welcome")),
        ];
        let (out, starts) = apply(text, &edits, Encoding::Utf16).unwrap();
        assert_eq!(out, "😀 welcome();\nwelcome();\n");
        assert_eq!(starts, [2, 13]);
        // UTF-8: four bytes.
        let edits = [parse(edit(0, 5, 10, "w"))];
        assert_eq!(
            apply(text, &edits, Encoding::Utf8).unwrap().0,
            "😀 w();\ngreet();\n"
        );
        let overlapping = [parse(edit(1, 0, 3, "a")), parse(edit(1, 2, 4, "b"))];
        assert!(apply(text, &overlapping, Encoding::Utf8).is_err());
    }
}
