//! The read-only language tools: `lsp_definition`, `lsp_references`, `lsp_implementations`,
//! `lsp_hover` (a position each), `lsp_document_symbols {path}` and `lsp_workspace_symbols
//! {query}`.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::Lang;
use super::position_args::{Spot, Target, document, locate, schema_properties};
use super::request::{ask, no_server};
use super::results::{self, Noun, Texts};
use crate::agent::tool::{AgentToolResult, ToolError, ToolRef};
use crate::tools::{Call, ToolArgs, TypedTool};

/// How to name the place to ask about (the end of every position tool's description).
macro_rules! position_help {
    () => {
        " Give path and line (1-based, as read and grep show them) and the symbol's name on \
         that line (or its 1-based column). The answers come from the editor's language \
         servers, which see unsaved buffers."
    };
}
pub(super) use position_help;

/// A lookup at a position: its tool, its method and what it finds.
pub trait Lookup: Send + Sync + 'static {
    const NAME: &'static str;
    const METHOD: &'static str;
    const DESCRIPTION: &'static str;
    /// What it lists; `None`: a hover, shown as text.
    const NOUN: Option<Noun>;
    /// What the method answers (`No language server in the editor answers <what> for …`).
    const WHAT: &'static str;
}

pub struct Definition;
impl Lookup for Definition {
    const NAME: &'static str = "lsp_definition";
    const METHOD: &'static str = "textDocument/definition";
    const DESCRIPTION: &'static str = concat!(
        "Find where a symbol is defined, as the editor's Go to Definition does.",
        position_help!()
    );
    const NOUN: Option<Noun> = Some(Noun("definition"));
    const WHAT: &'static str = "definitions";
}

pub struct References;
impl Lookup for References {
    const NAME: &'static str = "lsp_references";
    const METHOD: &'static str = "textDocument/references";
    const DESCRIPTION: &'static str = concat!(
        "Find every reference to a symbol (its declaration included) in the workspace, as the \
         editor's Find All References does: more precise than grep.",
        position_help!()
    );
    const NOUN: Option<Noun> = Some(Noun("reference"));
    const WHAT: &'static str = "references";
}

pub struct Implementations;
impl Lookup for Implementations {
    const NAME: &'static str = "lsp_implementations";
    const METHOD: &'static str = "textDocument/implementation";
    const DESCRIPTION: &'static str = concat!(
        "Find the implementations of an interface, trait or abstract method, as the editor's \
         Go to Implementations does.",
        position_help!()
    );
    const NOUN: Option<Noun> = Some(Noun("implementation"));
    const WHAT: &'static str = "implementations";
}

pub struct HoverInfo;
impl Lookup for HoverInfo {
    const NAME: &'static str = "lsp_hover";
    const METHOD: &'static str = "textDocument/hover";
    const DESCRIPTION: &'static str = concat!(
        "Show what the editor shows when hovering a symbol: its type or signature and its \
         documentation.",
        position_help!()
    );
    const NOUN: Option<Noun> = None;
    const WHAT: &'static str = "hover";
}

/// The tool asking `method` at a position.
/// The lookup tool of an LSP method (`lsp_definition` for any other method).
pub fn for_method(method: &str, lang: Lang) -> ToolRef {
    match method {
        "textDocument/documentSymbol" => tool::<DocumentSymbolsArgs>(lang),
        "workspace/symbol" => tool::<WorkspaceSymbolsArgs>(lang),
        "textDocument/references" => tool::<AtArgs<References>>(lang),
        "textDocument/implementation" => tool::<AtArgs<Implementations>>(lang),
        "textDocument/hover" => tool::<AtArgs<HoverInfo>>(lang),
        _ => tool::<AtArgs<Definition>>(lang),
    }
}

fn tool<A: ToolArgs<State = Lang>>(lang: Lang) -> ToolRef {
    Arc::new(TypedTool::<A>::new(lang))
}

fn at_parameters() -> Value {
    json!({"type": "object", "properties": schema_properties(), "required": ["path", "line"]})
}

/// A position lookup's arguments.
#[derive(Deserialize)]
#[serde(bound = "")]
pub struct AtArgs<K: Lookup> {
    path: String,
    #[serde(deserialize_with = "super::position_args::required_count")]
    line: usize,
    #[serde(deserialize_with = "crate::tools::count_arg")]
    column: Option<usize>,
    symbol: Option<String>,
    #[serde(skip)]
    kind: PhantomData<K>,
}

impl<K: Lookup> ToolArgs for AtArgs<K> {
    const NAME: &'static str = K::NAME;
    const DESCRIPTION: &'static str = K::DESCRIPTION;
    type State = Lang;

    fn parameters(_: &Lang) -> Value {
        at_parameters()
    }

    async fn run(self, lang: Lang, call: Call) -> Result<AgentToolResult, ToolError> {
        let spot = Spot {
            path: self.path,
            line: self.line,
            column: self.column,
            symbol: self.symbol,
        };
        let target = locate(&lang, &spot).await?;
        let mut params = target.params();
        if K::METHOD == "textDocument/references" {
            params["context"] = json!({"includeDeclaration": true});
        }
        let answer = ask(&lang, &call.id, K::METHOD, params, &call.cancel).await?;
        let Some(result) = answer.result else {
            return Ok(AgentToolResult::text(no_server(K::WHAT, &target.doc.shown)));
        };
        match K::NOUN {
            Some(noun) => places(&lang, noun, &target, result).await,
            None => hover(&target, result),
        }
    }
}

async fn places(
    lang: &Lang,
    noun: Noun,
    target: &Target,
    result: Value,
) -> Result<AgentToolResult, ToolError> {
    let found = results::locations(result).map_err(malformed)?;
    let mut texts = Texts::new(lang);
    let mut places = Vec::with_capacity(found.len());
    for (uri, at) in found {
        places.push(texts.place(&uri, at).await);
    }
    let (text, details) = results::places_text(noun, target, places);
    Ok(with_details(text, details))
}

fn hover(target: &Target, result: Value) -> Result<AgentToolResult, ToolError> {
    let text = match results::hover_text(result).map_err(malformed)? {
        Some(text) => format!("{}:\n{text}", target.place()),
        None => format!("No hover information at {}.", target.place()),
    };
    Ok(AgentToolResult::text(text))
}

/// The tool's error for an answer it cannot read.
pub(super) fn malformed(why: String) -> ToolError {
    ToolError::new(format!(
        "The editor's language servers answered something unreadable: {why}"
    ))
}

pub(super) fn with_details(text: String, details: Value) -> AgentToolResult {
    AgentToolResult {
        details: Some(details),
        ..AgentToolResult::text(text)
    }
}

/// `lsp_document_symbols`'s arguments.
#[derive(Deserialize)]
pub struct DocumentSymbolsArgs {
    path: String,
}

impl ToolArgs for DocumentSymbolsArgs {
    const NAME: &'static str = "lsp_document_symbols";
    const DESCRIPTION: &'static str = "List a file's symbols (classes, functions, methods, \
        variables…) with their nesting and 1-based line:column, as the editor's outline shows \
        them, from the editor's language servers (unsaved buffers included).";
    type State = Lang;

    fn parameters(_: &Lang) -> Value {
        document_symbols_parameters()
    }

    async fn run(self, lang: Lang, call: Call) -> Result<AgentToolResult, ToolError> {
        let doc = document(&lang, &self.path).await?;
        let params = json!({"textDocument": {"uri": doc.uri}});
        let answer = ask(
            &lang,
            &call.id,
            "textDocument/documentSymbol",
            params,
            &call.cancel,
        )
        .await?;
        let Some(result) = answer.result else {
            return Ok(AgentToolResult::text(no_server(
                "document symbols",
                &doc.shown,
            )));
        };
        let entries = results::outline(result, &doc.rope, &lang).map_err(malformed)?;
        let text = results::outline_text(&doc.shown, &entries);
        Ok(with_details(
            text,
            json!({"path": doc.shown, "symbols": entries}),
        ))
    }
}

fn document_symbols_parameters() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string", "description": "The file (relative to the workspace root, or absolute)"}
    }, "required": ["path"]})
}

/// `lsp_workspace_symbols`'s arguments.
#[derive(Deserialize)]
pub struct WorkspaceSymbolsArgs {
    query: String,
}

impl ToolArgs for WorkspaceSymbolsArgs {
    const NAME: &'static str = "lsp_workspace_symbols";
    const DESCRIPTION: &'static str = "Find symbols (classes, functions, types…) by name across \
        the workspace, as the editor's Go to Symbol in Workspace does, from the editor's \
        language servers. Each result is path:line:column: kind name (1-based).";
    type State = Lang;

    fn parameters(_: &Lang) -> Value {
        workspace_symbols_parameters()
    }

    async fn run(self, lang: Lang, call: Call) -> Result<AgentToolResult, ToolError> {
        let query = self.query.trim().to_owned();
        if query.is_empty() {
            return Err(ToolError::new("query must not be empty"));
        }
        let params = json!({"query": query});
        let answer = ask(&lang, &call.id, "workspace/symbol", params, &call.cancel).await?;
        let Some(result) = answer.result else {
            return Ok(AgentToolResult::text(
                "No language server in the editor answers workspace symbols.".to_owned(),
            ));
        };
        let mut texts = Texts::new(&lang);
        let found = results::workspace_symbols(result, &mut texts)
            .await
            .map_err(malformed)?;
        let text = results::workspace_symbols_text(&query, &found);
        Ok(with_details(
            text,
            json!({"query": query, "symbols": found}),
        ))
    }
}

fn workspace_symbols_parameters() -> Value {
    json!({"type": "object", "properties": {
        "query": {"type": "string", "description": "The name or part of it"}
    }, "required": ["query"]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::assert_args_match_schema;

    #[test]
    fn each_tool_reads_the_arguments_its_schema_declares() {
        assert_args_match_schema::<AtArgs<Definition>>(&at_parameters());
        assert_args_match_schema::<DocumentSymbolsArgs>(&document_symbols_parameters());
        assert_args_match_schema::<WorkspaceSymbolsArgs>(&workspace_symbols_parameters());
    }
}
