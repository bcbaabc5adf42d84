//! The language servers' answers as the model reads them: places as `path:line:col: <the
//! line's text>` (1-based, the text from the live buffer or the disk), sorted by path and
//! position and bounded like `grep`'s output; symbols, hovers. Every result also carries its
//! structure in `details`.

use std::collections::HashMap;

use ls_types::{
    DocumentSymbol, Hover, HoverContents, Location, LocationLink, MarkedString, OneOf, Position,
    SymbolInformation, SymbolKind, WorkspaceSymbol,
};
use ropey::Rope;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Lang;
use super::position_args::{Target, line_text};
use crate::lsp::diagnostics::one_based;
use crate::lsp::documents::uri_to_path;

pub(crate) use crate::lsp::diagnostics::shown_path;

/// At most this many places are listed (definitions, references, workspace symbols).
pub const MAX_PLACES: usize = 100;
/// At most this many lines of document symbols.
pub const MAX_SYMBOL_LINES: usize = 300;
/// A line's text is cut at this many characters.
const MAX_LINE_CHARS: usize = 500;
/// Hover text is cut at this many characters.
const MAX_HOVER_CHARS: usize = 20_000;

/// One place in a file, 1-based, with its line's text (`None`: not readable here).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Place {
    pub path: String,
    pub line: u64,
    pub column: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Place {
    /// `path:line:col: text`.
    pub fn render(&self) -> String {
        match &self.text {
            Some(text) => format!("{}:{}:{}: {text}", self.path, self.line, self.column),
            None => format!("{}:{}:{}", self.path, self.line, self.column),
        }
    }
}

/// A file's text as the user sees it, and its shown path.
struct FileText {
    shown: String,
    rope: Option<Rope>,
}

/// The texts of the files an answer names, each read once: an open buffer by its URI or
/// path, else the disk, only inside the workspace roots (a place elsewhere is named without
/// its text, as `read` would refuse it).
pub struct Texts<'a> {
    lang: &'a Lang,
    files: HashMap<String, FileText>,
}

impl<'a> Texts<'a> {
    pub fn new(lang: &'a Lang) -> Self {
        Texts {
            lang,
            files: HashMap::new(),
        }
    }

    async fn file(&mut self, uri: &str) -> &FileText {
        if !self.files.contains_key(uri) {
            let file = self.read(uri).await;
            self.files.insert(uri.to_owned(), file);
        }
        &self.files[uri]
    }

    async fn read(&self, uri: &str) -> FileText {
        let lang = self.lang;
        let open = lang.docs.get(uri).map(|doc| doc.rope);
        let Some(path) = uri_to_path(uri) else {
            return FileText {
                shown: uri.to_owned(),
                rope: open,
            };
        };
        let inside = path.to_str().and_then(|p| lang.ws.resolve(p).ok());
        let Some(abs) = inside else {
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            return FileText {
                shown: path.display().to_string(),
                rope: None,
            };
        };
        let shown = shown_path(&abs, lang.ws.root());
        let rope = match open.or_else(|| lang.docs.get_path(&abs).map(|doc| doc.rope)) {
            Some(rope) => Some(rope),
            None => lang.ws.read(abs).await.ok().map(|snapshot| {
                let text = String::from_utf8_lossy(&snapshot.bytes);
                Rope::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
            }),
        };
        FileText { shown, rope }
    }

    /// The place `pos` of `uri`, with its line's text.
    pub async fn place(&mut self, uri: &str, pos: Position) -> Place {
        let encoding = self.lang.encoding;
        let file = self.file(uri).await;
        let (line, column) = one_based(file.rope.as_ref(), pos, encoding);
        let text = (file.rope.as_ref()).map(|rope| cut(line_text(rope, line as usize - 1).trim()));
        Place {
            path: file.shown.clone(),
            line,
            column,
            text,
        }
    }

    /// The shown path of `uri`.
    pub async fn shown(&mut self, uri: &str) -> String {
        self.file(uri).await.shown.clone()
    }
}

/// `text` cut at [`MAX_LINE_CHARS`] characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A location of any shape the servers answer.
#[derive(Deserialize)]
#[serde(untagged)]
enum AnyLocation {
    Link(LocationLink),
    Plain(Location),
}

/// `Location | Location[] | LocationLink[] | null` (also mixed, from several servers) as
/// `(uri, start)` pairs; a link stands for its target's selection range.
pub fn locations(result: Value) -> Result<Vec<(String, Position)>, String> {
    let items = match result {
        Value::Null => Vec::new(),
        Value::Array(items) => items,
        one => vec![one],
    };
    items
        .into_iter()
        .map(|item| {
            let location: AnyLocation = serde_json::from_value(item)
                .map_err(|e| format!("a location is malformed: {e}"))?;
            Ok(match location {
                AnyLocation::Link(link) => (
                    link.target_uri.as_str().to_owned(),
                    link.target_selection_range.start,
                ),
                AnyLocation::Plain(l) => (l.uri.as_str().to_owned(), l.range.start),
            })
        })
        .collect()
}

/// What a list of places is of: `definition`, `reference`, `implementation`.
#[derive(Clone, Copy)]
pub struct Noun(pub &'static str);

impl Noun {
    fn counted(self, n: usize) -> String {
        match n {
            1 => format!("1 {}", self.0),
            n => format!("{n} {}s", self.0),
        }
    }
}

/// The text and details of a list of places: sorted, duplicates removed, bounded.
pub fn places_text(noun: Noun, target: &Target, mut places: Vec<Place>) -> (String, Value) {
    places.sort();
    places.dedup();
    if places.is_empty() {
        let text = format!("No {} found at {}.", noun.0, target.described());
        return (text, serde_json::json!({"places": []}));
    }
    let mut files: Vec<&str> = places.iter().map(|p| p.path.as_str()).collect();
    files.dedup();
    let header = match (places.len(), files.len()) {
        (1, _) => format!("{}:", noun.counted(1)),
        (n, 1) => format!("{} in 1 file:", noun.counted(n)),
        (n, m) => format!("{} in {m} files:", noun.counted(n)),
    };
    let mut lines = vec![header];
    lines.extend(places.iter().take(MAX_PLACES).map(Place::render));
    if places.len() > MAX_PLACES {
        lines.push(format!("({} more not shown)", places.len() - MAX_PLACES));
    }
    let details = serde_json::json!({"places": places, "files": files.len()});
    (lines.join("\n"), details)
}

/// The hover contents as text: markup as it is, marked strings' code as fenced blocks.
pub fn hover_text(result: Value) -> Result<Option<String>, String> {
    let hovers: Vec<Hover> = match result {
        Value::Null => Vec::new(),
        Value::Array(items) => (items.into_iter())
            .filter(|h| !h.is_null())
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("a hover is malformed: {e}"))?,
        one => vec![serde_json::from_value(one).map_err(|e| format!("a hover is malformed: {e}"))?],
    };
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    let parts: Vec<String> = (hovers.into_iter())
        .flat_map(|h| match h.contents {
            HoverContents::Scalar(m) => vec![marked(m)],
            HoverContents::Array(ms) => ms.into_iter().map(marked).collect(),
            HoverContents::Markup(m) => vec![m.value],
        })
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        return Ok(None);
    }
    let text = parts.join("\n\n");
    Ok(Some(match text.char_indices().nth(MAX_HOVER_CHARS) {
        Some((at, _)) => format!(
            "{}\n(hover text cut at {MAX_HOVER_CHARS} characters)",
            &text[..at]
        ),
        None => text,
    }))
}

/// The lowercase LSP name of a symbol kind (`function`, `class`, `enummember`).
pub fn kind_name(kind: SymbolKind) -> String {
    format!("{kind:?}").to_lowercase()
}

/// A document symbol of either shape.
#[derive(Deserialize)]
#[serde(untagged)]
enum AnyDocumentSymbol {
    Nested(DocumentSymbol),
    Flat(SymbolInformation),
}

/// One line of a document's outline.
#[derive(Serialize)]
pub struct OutlineEntry {
    pub depth: usize,
    pub kind: String,
    pub name: String,
    pub line: u64,
    pub column: u64,
}

/// `DocumentSymbol[] | SymbolInformation[] | null` as the outline of a document (`rope`):
/// nested symbols depth first, flat ones by position.
pub fn outline(result: Value, rope: &Rope, lang: &Lang) -> Result<Vec<OutlineEntry>, String> {
    let items = match result {
        Value::Null => Vec::new(),
        Value::Array(items) => items,
        other => return Err(format!("document symbols must be a list, not {other}")),
    };
    let mut entries = Vec::new();
    let mut flat = Vec::new();
    for item in items {
        let symbol: AnyDocumentSymbol = serde_json::from_value(item)
            .map_err(|e| format!("a document symbol is malformed: {e}"))?;
        match symbol {
            AnyDocumentSymbol::Nested(s) => walk(&s, 0, rope, lang, &mut entries),
            AnyDocumentSymbol::Flat(s) => {
                flat.push(entry(0, s.kind, s.name, s.location.range.start, rope, lang))
            }
        }
    }
    flat.sort_by_key(|e| (e.line, e.column));
    entries.extend(flat);
    Ok(entries)
}

fn entry(
    depth: usize,
    kind: SymbolKind,
    name: String,
    at: Position,
    rope: &Rope,
    lang: &Lang,
) -> OutlineEntry {
    let (line, column) = one_based(Some(rope), at, lang.encoding);
    OutlineEntry {
        depth,
        kind: kind_name(kind),
        name,
        line,
        column,
    }
}

fn walk(s: &DocumentSymbol, depth: usize, rope: &Rope, lang: &Lang, out: &mut Vec<OutlineEntry>) {
    out.push(entry(
        depth,
        s.kind,
        s.name.clone(),
        s.selection_range.start,
        rope,
        lang,
    ));
    for child in s.children.iter().flatten() {
        walk(child, depth + 1, rope, lang, out);
    }
}

/// The outline's text: `Symbols in <path>:` and a line per symbol, bounded.
pub fn outline_text(shown: &str, entries: &[OutlineEntry]) -> String {
    if entries.is_empty() {
        return format!("No symbols in {shown}.");
    }
    let mut lines = vec![format!("Symbols in {shown}:")];
    lines.extend(entries.iter().take(MAX_SYMBOL_LINES).map(|e| {
        let indent = "  ".repeat(e.depth);
        format!("{indent}{} {} {}:{}", e.kind, e.name, e.line, e.column)
    }));
    if entries.len() > MAX_SYMBOL_LINES {
        lines.push(format!(
            "({} more not shown)",
            entries.len() - MAX_SYMBOL_LINES
        ));
    }
    lines.join("\n")
}

/// A workspace symbol of either shape.
#[derive(Deserialize)]
#[serde(untagged)]
enum AnyWorkspaceSymbol {
    Info(SymbolInformation),
    Symbol(WorkspaceSymbol),
}

/// One symbol found in the workspace (`line`/`column` absent when the server named only its
/// file).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FoundSymbol {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

/// `SymbolInformation[] | WorkspaceSymbol[] | null` as found symbols, sorted.
pub async fn workspace_symbols(
    result: Value,
    texts: &mut Texts<'_>,
) -> Result<Vec<FoundSymbol>, String> {
    let items = match result {
        Value::Null => Vec::new(),
        Value::Array(items) => items,
        other => return Err(format!("workspace symbols must be a list, not {other}")),
    };
    let mut found = Vec::new();
    for item in items {
        let symbol: AnyWorkspaceSymbol = serde_json::from_value(item)
            .map_err(|e| format!("a workspace symbol is malformed: {e}"))?;
        let (name, kind, container, uri, at) = match symbol {
            AnyWorkspaceSymbol::Info(s) => (
                s.name,
                s.kind,
                s.container_name,
                s.location.uri,
                Some(s.location.range.start),
            ),
            AnyWorkspaceSymbol::Symbol(s) => match s.location {
                OneOf::Left(l) => (s.name, s.kind, s.container_name, l.uri, Some(l.range.start)),
                OneOf::Right(w) => (s.name, s.kind, s.container_name, w.uri, None),
            },
        };
        let (path, line, column) = match at {
            Some(at) => {
                let place = texts.place(uri.as_str(), at).await;
                (place.path, Some(place.line), Some(place.column))
            }
            None => (texts.shown(uri.as_str()).await, None, None),
        };
        found.push(FoundSymbol {
            path,
            line,
            column,
            kind: kind_name(kind),
            name,
            container: container.filter(|c| !c.is_empty()),
        });
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// The found symbols' text, bounded.
pub fn workspace_symbols_text(query: &str, found: &[FoundSymbol]) -> String {
    if found.is_empty() {
        return format!("No symbols matching {query:?}.");
    }
    let header = match found.len() {
        1 => format!("1 symbol matching {query:?}:"),
        n => format!("{n} symbols matching {query:?}:"),
    };
    let mut lines = vec![header];
    lines.extend(found.iter().take(MAX_PLACES).map(|s| {
        let at = match (s.line, s.column) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}", s.path),
            _ => s.path.clone(),
        };
        let container = (s.container.as_ref()).map_or(String::new(), |c| format!(" in {c}"));
        format!("{at}: {} {}{container}", s.kind, s.name)
    }));
    if found.len() > MAX_PLACES {
        lines.push(format!("({} more not shown)", found.len() - MAX_PLACES));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_location_shape_is_read() {
        let range =
            json!({"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 9}});
        let one = json!({"uri": "file:///a.ts", "range": range});
        let link = json!({"targetUri": "file:///b.ts", "targetRange": {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}},
            "targetSelectionRange": range});
        assert_eq!(locations(Value::Null).unwrap(), []);
        assert_eq!(
            locations(one.clone()).unwrap(),
            [("file:///a.ts".to_owned(), Position::new(2, 4))]
        );
        let both = locations(json!([one, link])).unwrap();
        assert_eq!(both[1], ("file:///b.ts".to_owned(), Position::new(2, 4)));
        assert!(locations(json!([{"uri": 3}])).is_err());
    }

    #[test]
    fn hover_contents_become_text() {
        let hover =
            json!({"contents": [{"language": "ts", "value": "function greet(): void"}, "Greets."]});
        assert_eq!(
            hover_text(hover).unwrap().unwrap(),
            "```ts\nfunction greet(): void\n```\n\nGreets."
        );
        let markup = json!([{"contents": {"kind": "markdown", "value": "**x**"}}, null]);
        assert_eq!(hover_text(markup).unwrap().unwrap(), "**x**");
        assert_eq!(hover_text(Value::Null).unwrap(), None);
        assert_eq!(hover_text(json!({"contents": ""})).unwrap(), None);
    }

    #[test]
    fn symbol_kinds_are_lowercase_names() {
        assert_eq!(kind_name(SymbolKind::FUNCTION), "function");
        assert_eq!(kind_name(SymbolKind::ENUM_MEMBER), "enummember");
    }

    #[test]
    fn long_lines_are_cut() {
        let long = "x".repeat(600);
        assert_eq!(cut(&long).chars().count(), MAX_LINE_CHARS + 1);
        assert_eq!(cut("short"), "short");
    }
}
