//! A place as the model names it — `path`, a 1-based `line`, and a 1-based `column` or the
//! `symbol` on that line (models are bad at columns) — as an LSP position in the connection's
//! encoding, read against the live buffer when the file is open in the editor, else the disk
//! (through `lsp/position.rs`). Errors name the problem and show the line.

use ls_types::Position;
use ropey::Rope;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Lang;
use crate::agent::tool::ToolError;
use crate::lsp::diagnostics::shown_path;
use crate::lsp::documents::path_to_uri;
use crate::lsp::position;

/// A document as the tools ask about it.
pub struct Doc {
    /// Relative to the workspace root when under it, else absolute.
    pub shown: String,
    /// The editor's URI for it (an open buffer's own).
    pub uri: String,
    /// Its text as the user sees it (byte-order mark left out, as editors do).
    pub rope: Rope,
}

/// The position arguments the position tools share (their schema: [`schema`]).
#[derive(Deserialize)]
pub struct Spot {
    pub path: String,
    pub line: usize,
    #[serde(deserialize_with = "crate::tools::count_arg")]
    pub column: Option<usize>,
    pub symbol: Option<String>,
}

/// A required 1-based number argument (`line`): any non-negative JSON number.
pub fn required_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    crate::tools::count_arg(d)?.ok_or_else(|| serde::de::Error::missing_field("line"))
}

/// A resolved position.
pub struct Target {
    pub doc: Doc,
    /// 0-based line and character column.
    pub line: usize,
    pub column: usize,
    /// The name there: the `symbol` given, else the identifier at the column.
    pub name: Option<String>,
    /// In the connection's encoding.
    pub position: Position,
}

impl Target {
    /// `src/a.ts:5:10`, 1-based.
    pub fn place(&self) -> String {
        format!("{}:{}:{}", self.doc.shown, self.line + 1, self.column + 1)
    }

    /// `src/a.ts:5:10 (greet)`.
    pub fn described(&self) -> String {
        match &self.name {
            Some(name) => format!("{} ({name})", self.place()),
            None => self.place(),
        }
    }

    /// `{textDocument, position}`.
    pub fn params(&self) -> Value {
        json!({"textDocument": {"uri": self.doc.uri}, "position": self.position})
    }
}

/// The JSON Schema properties of [`Spot`].
pub fn schema_properties() -> serde_json::Map<String, Value> {
    let properties = json!({
        "path": {"type": "string", "description": "The file (relative to the workspace root, or absolute)"},
        "line": {"type": "number", "description": "Line number (1-based, as read and grep show lines)"},
        "column": {"type": "number", "description": "Column (1-based, in characters); or give symbol"},
        "symbol": {"type": "string", "description": "The name on that line to ask about (its first occurrence, or the one nearest column)"}
    });
    match properties {
        Value::Object(map) => map,
        _ => unreachable!("a JSON object literal"),
    }
}

/// Reads the document at `path` (inside the workspace roots) as the user sees it.
pub async fn document(lang: &Lang, path: &str) -> Result<Doc, ToolError> {
    let abs = lang
        .ws
        .resolve(path)
        .map_err(|e| ToolError::new(e.to_string()))?;
    let snapshot = lang
        .ws
        .read(abs.clone())
        .await
        .map_err(|e| ToolError::new(e.to_string()))?;
    let text = String::from_utf8_lossy(&snapshot.bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let uri = match lang.docs.get_path(&abs) {
        Some(doc) => doc.uri,
        None => {
            path_to_uri(&abs).ok_or_else(|| ToolError::new(format!("{path} has no file URI")))?
        }
    };
    Ok(Doc {
        shown: shown_path(&abs, lang.ws.root()),
        uri,
        rope: Rope::from_str(text),
    })
}

/// Resolves `spot` against the document as the user sees it.
pub async fn locate(lang: &Lang, spot: &Spot) -> Result<Target, ToolError> {
    let doc = document(lang, &spot.path).await?;
    let lines = line_count(&doc.rope);
    let line = match spot.line {
        0 => return Err(ToolError::new("line is 1-based: the first line is 1")),
        n if n > lines => {
            return Err(ToolError::new(format!(
                "line {n} is past the end of {} ({lines} lines)",
                doc.shown
            )));
        }
        n => n - 1,
    };
    let text = line_text(&doc.rope, line);
    let at_line = |what: String| {
        format!(
            "{what} on line {} of {}: {}",
            line + 1,
            doc.shown,
            text.trim()
        )
    };
    let column = match (&spot.symbol, spot.column) {
        (Some(symbol), column) => {
            let found = occurrences(&text, symbol);
            let wanted = column.map(|c| c.saturating_sub(1));
            let nearest = match wanted {
                Some(c) => found.iter().min_by_key(|&&at| at.abs_diff(c)),
                None => found.first(),
            };
            *nearest.ok_or_else(|| ToolError::new(at_line(format!("{symbol:?} does not occur"))))?
        }
        (None, Some(0)) => return Err(ToolError::new("column is 1-based: the first column is 1")),
        (None, Some(c)) => {
            let len = text.chars().count();
            if c > len + 1 {
                return Err(ToolError::new(format!(
                    "column {c} is past the end of line {} of {} ({len} characters): {}",
                    line + 1,
                    doc.shown,
                    text.trim()
                )));
            }
            c - 1
        }
        (None, None) => {
            return Err(ToolError::new(at_line(
                "Give column or symbol: the name to ask about".into(),
            )));
        }
    };
    let name = match &spot.symbol {
        Some(symbol) => Some(symbol.clone()),
        None => identifier_at(&text, column),
    };
    let idx = doc.rope.line_to_char(line) + column;
    let position = position::to_position(&doc.rope, idx, lang.encoding);
    Ok(Target {
        doc,
        line,
        column,
        name,
        position,
    })
}

/// The lines of a text as editors number them (a final line break starts no line).
pub fn line_count(rope: &Rope) -> usize {
    let ends_with_break = (rope.len_chars() > 0)
        .then(|| rope.char(rope.len_chars() - 1))
        .is_some_and(|c| c == '\n' || c == '\r');
    rope.len_lines() - usize::from(ends_with_break)
}

/// Line `line` (0-based) without its line break.
pub fn line_text(rope: &Rope, line: usize) -> String {
    if line >= rope.len_lines() {
        return String::new();
    }
    let text = rope.line(line).to_string();
    text.trim_end_matches(['\n', '\r']).to_owned()
}

/// Characters of identifiers, in most languages.
fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The character columns (0-based) where `symbol` occurs in `text` as a whole word.
fn occurrences(text: &str, symbol: &str) -> Vec<usize> {
    if symbol.is_empty() {
        return Vec::new();
    }
    let bounded_start = symbol.chars().next().is_some_and(is_ident);
    let bounded_end = symbol.chars().next_back().is_some_and(is_ident);
    text.match_indices(symbol)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + symbol.len()..].chars().next();
            let glued_before = bounded_start && before.is_some_and(is_ident);
            let glued_after = bounded_end && after.is_some_and(is_ident);
            !glued_before && !glued_after
        })
        .map(|(i, _)| text[..i].chars().count())
        .collect()
}

/// The identifier the character column `column` is in (or right after), if any.
fn identifier_at(text: &str, column: usize) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let on = |i: usize| chars.get(i).copied().is_some_and(is_ident);
    let at = match (on(column), column.checked_sub(1).is_some_and(on)) {
        (true, _) => column,
        (false, true) => column - 1,
        (false, false) => return None,
    };
    let start = (0..=at).rev().take_while(|&i| on(i)).last()?;
    let end = (at..chars.len()).take_while(|&i| on(i)).last()? + 1;
    Some(chars[start..end].iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_found_as_whole_words() {
        assert_eq!(
            occurrences("const é = 1; greet(greeter, greet)", "greet"),
            [13, 28]
        );
        assert_eq!(occurrences("😀 greet", "greet"), [2]);
        assert!(occurrences("greeting", "greet").is_empty());
        assert_eq!(occurrences("a + b", "+"), [2]);
        assert_eq!(occurrences("$el.x", "$el"), [0]);
    }

    #[test]
    fn identifiers_are_read_around_a_column() {
        assert_eq!(identifier_at("let greet = 1", 5).as_deref(), Some("greet"));
        assert_eq!(identifier_at("let greet = 1", 9).as_deref(), Some("greet"));
        assert_eq!(identifier_at("let greet = 1", 10), None);
    }

    #[test]
    fn lines_are_counted_as_editors_number_them() {
        assert_eq!(line_count(&Rope::from_str("a\nb\n")), 2);
        assert_eq!(line_count(&Rope::from_str("a\r\nb")), 2);
        assert_eq!(line_count(&Rope::from_str("")), 1);
        assert_eq!(line_text(&Rope::from_str("a\r\nb"), 0), "a");
    }
}
