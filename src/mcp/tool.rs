//! An MCP server's tool as an agent tool: its name (`SERVER__TOOL`, as providers accept names),
//! its schema (normalised to what providers require), what approval it needs, and its result
//! converted to the agent's content blocks.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::agent::message::{ContentBlock, ImageContent, ToolDeclaration};
use crate::agent::tool::{AgentTool, AgentToolResult, ToolError, ToolInput};
use crate::mcp::config::Policy;
use crate::mcp::elicit::Caller;
use crate::mcp::server::{CallError, Server};
use crate::tools::AskHandle;
use crate::tools::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_tail};

/// Providers accept tool names matching `^[A-Za-z0-9_-]{1,64}$`.
const MAX_NAME: usize = 64;

/// What an MCP tool is, for approvals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpToolInfo {
    pub server: String,
    pub tool: String,
    /// `read` for `readOnlyHint`, `delete` / `edit` for `destructiveHint`, else `other`.
    pub kind: &'static str,
    /// The configured policy for this tool, if any (MCP tools ask by default).
    pub policy: Option<Policy>,
    /// A one-line title for the approval prompt, naming the server.
    pub title: String,
}

/// One MCP tool, callable by the agent.
pub struct McpTool {
    declaration: ToolDeclaration,
    info: McpToolInfo,
    server: Arc<Server>,
    /// The session's way to the user, for the server's elicitations during a call.
    ask: Option<AskHandle>,
}

impl McpTool {
    pub fn new(server: Arc<Server>, tool: &Tool, name: String) -> Self {
        let annotations = tool.annotations.as_ref();
        let read_only = annotations.and_then(|a| a.read_only_hint).unwrap_or(false);
        let destructive = annotations
            .and_then(|a| a.destructive_hint)
            .unwrap_or(false);
        let idempotent = annotations.and_then(|a| a.idempotent_hint).unwrap_or(false);
        let kind = match (read_only, destructive, idempotent) {
            (true, _, _) => "read",
            (false, true, false) => "delete",
            (false, true, true) => "edit",
            _ => "other",
        };
        let label = tool
            .title
            .clone()
            .or_else(|| annotations.and_then(|a| a.title.clone()))
            .unwrap_or_else(|| tool.name.to_string());
        let info = McpToolInfo {
            server: server.name().to_owned(),
            tool: tool.name.to_string(),
            kind,
            policy: server.config.approval.for_tool(&tool.name),
            title: format!("{label} (MCP server {})", server.name()),
        };
        let declaration = ToolDeclaration {
            name,
            description: tool
                .description
                .as_deref()
                .unwrap_or(&info.title)
                .to_owned(),
            parameters: normalize_schema(Value::Object((*tool.input_schema).clone())),
            constrained_sampling: None,
        };
        McpTool {
            declaration,
            info,
            server,
            ask: None,
        }
    }

    /// The tool of a session whose user answers the server's elicitations through `ask`.
    pub fn asking(mut self, ask: Option<AskHandle>) -> Self {
        self.ask = ask;
        self
    }

    pub fn info(&self) -> &McpToolInfo {
        &self.info
    }
}

impl AgentTool for McpTool {
    fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    fn label(&self) -> &str {
        &self.info.title
    }

    fn execute(&self, input: ToolInput) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let ToolInput {
            tool_call_id,
            args,
            cancel,
            on_update,
        } = input;
        let server = self.server.clone();
        let info = self.info.clone();
        let caller = (self.ask.clone()).map(|ask| Caller { ask, tool_call_id });
        Box::pin(async move {
            let outcome = (server.call(&info.tool, args, &cancel, on_update, caller)).await;
            // Notifications the server sent before its answer (a changed tool list, progress)
            // are handled on tasks of their own: let them run before the loop goes on.
            tokio::task::yield_now().await;
            match outcome {
                Ok(result) => Ok(convert_result(&result, &info)),
                Err(CallError::Aborted) => Err(ToolError::new("Operation aborted")),
                Err(e) => Err(ToolError::new(format!(
                    "MCP tool {} of server {} failed: {e}",
                    info.tool, info.server
                ))),
            }
        })
    }
}

/// `SERVER__TOOL` with characters providers refuse mapped to `_`, shortened to 64 characters
/// with a hash of the full name when longer.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| match c {
                'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-' => c,
                _ => '_',
            })
            .collect()
    };
    let name = format!("{}__{}", clean(server), clean(tool));
    if name.len() <= MAX_NAME {
        return name;
    }
    with_hash(&name[..MAX_NAME - 9], &format!("{server}/{tool}"))
}

/// Names for a whole tool set, made unique deterministically: when two tools map to the same
/// name, each one after the first (in the order of their original names) gets a hash suffix.
pub fn unique_names(pairs: &[(String, String)]) -> Vec<String> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|a, b| pairs[*a].cmp(&pairs[*b]));
    let mut taken = std::collections::HashSet::new();
    let mut names = vec![String::new(); pairs.len()];
    for i in order {
        let (server, tool) = &pairs[i];
        let mut name = tool_name(server, tool);
        if !taken.insert(name.clone()) {
            let base: String = name.chars().take(MAX_NAME - 9).collect();
            name = with_hash(&base, &format!("{server}/{tool}"));
            taken.insert(name.clone());
        }
        names[i] = name;
    }
    names
}

fn with_hash(base: &str, full: &str) -> String {
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let hash = full.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{base}_{hash:08x}")
}

/// A schema providers accept: an object schema at the top (`type: object`, `properties`).
pub fn normalize_schema(schema: Value) -> Value {
    let mut schema = match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    schema.insert("type".into(), json!("object"));
    schema.entry("properties").or_insert_with(|| json!({}));
    Value::Object(schema)
}

/// The content blocks (and error flag) of an MCP `CallToolResult`: text stays text, images are
/// image blocks, an embedded resource becomes its text (or a note for binary data), a resource
/// link a line, `structuredContent` JSON text when there is no text; text is truncated as pi
/// truncates `bash` output.
pub fn convert_result(result: &Value, info: &McpToolInfo) -> AgentToolResult {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for item in result["content"].as_array().into_iter().flatten() {
        let text = |key: &str| item[key].as_str().unwrap_or_default().to_owned();
        match item["type"].as_str().unwrap_or_default() {
            "text" => texts.push(text("text")),
            "image" => images.push(ContentBlock::Image(ImageContent {
                data: text("data"),
                mime_type: text("mimeType"),
            })),
            "audio" => texts.push(format!(
                "[audio ({}) not shown: {} bytes of base64]",
                text("mimeType"),
                text("data").len()
            )),
            "resource" => {
                let resource = &item["resource"];
                let uri = resource["uri"].as_str().unwrap_or("?");
                match resource["text"].as_str() {
                    Some(body) => texts.push(body.to_owned()),
                    None => texts.push(format!(
                        "[binary resource {uri} ({}) not shown]",
                        resource["mimeType"].as_str().unwrap_or("unknown type")
                    )),
                }
            }
            "resource_link" => {
                let name = text("name");
                let described = item["description"]
                    .as_str()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                texts.push(format!(
                    "[resource link: {name} ({}){described}]",
                    text("uri")
                ));
            }
            other => texts.push(format!("[{other} content not shown]")),
        }
    }
    if texts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        texts.push(structured.to_string());
    }
    let (text, truncation) = truncated(&texts.join("\n"));
    let mut content = Vec::new();
    if !text.is_empty() || images.is_empty() {
        content.push(ContentBlock::text(text));
    }
    content.extend(images);
    let mut details = json!({"server": info.server, "tool": info.tool});
    if let Some(t) = truncation {
        details["truncation"] = t;
    }
    AgentToolResult {
        content,
        details: Some(details),
        structured_content: result.get("structuredContent").cloned(),
        is_error: result["isError"].as_bool().filter(|e| *e),
        ..Default::default()
    }
}

/// A `prompts/get` result as one prompt text: the text of its messages (and of embedded text
/// resources), in order, separated by blank lines.
pub fn prompt_text(result: &Value) -> String {
    let messages = result.get("messages").and_then(Value::as_array);
    let texts = messages.into_iter().flatten().filter_map(|m| {
        let content = m.get("content")?;
        (content.get("text"))
            .or_else(|| content.pointer("/resource/text"))
            .and_then(Value::as_str)
    });
    texts.collect::<Vec<_>>().join("\n\n")
}

/// The text for the model, cut like `bash` output (the tail kept) with pi's notice.
fn truncated(text: &str) -> (String, Option<Value>) {
    // A final newline ends the last line rather than starting an empty one.
    let lines = text.strip_suffix('\n').unwrap_or(text);
    let trunc = truncate_tail(lines, Limits::default());
    if !trunc.truncated {
        return (text.to_owned(), None);
    }
    let total_lines = trunc.total_lines;
    let start = total_lines.saturating_sub(trunc.output_lines) + 1;
    let notice = if trunc.last_line_partial {
        format!(
            "[Showing last {} of line {total_lines}.]",
            format_size(trunc.output_bytes)
        )
    } else {
        format!(
            "[Showing lines {start}-{total_lines} of {total_lines} ({} limit).]",
            format_size(DEFAULT_MAX_BYTES)
        )
    };
    let details = serde_json::to_value(&trunc).ok();
    (format!("{}\n\n{notice}", trunc.content), details)
}

#[cfg(test)]
#[path = "tool_tests.rs"]
mod tests;
