//! pi's events as ACP `session/update`s (the table in protocol.md, "ACP"): text and thinking
//! deltas become message and thought chunks under one `messageId` per assistant message, a
//! finished tool call in the stream becomes a pending `tool_call`, its execution's end a
//! `tool_call_update` (completed or failed, with its output and, for `edit`/`write`, the diff),
//! and every finished response a `usage_update`. The same builders replay a stored conversation
//! (`session/load`).

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, AssistantMessage, ContentBlock, MessageContent};
use crate::agent::model::Model;
use crate::agent::stream_contract::AssistantMessageEvent;

use crate::core::SessionTools;
use crate::tools::Workspace;

/// What the live translation remembers between events.
#[derive(Default)]
pub struct Translator {
    /// The `messageId` of the assistant message being streamed.
    message_id: Option<String>,
}

impl Translator {
    /// The updates one event shows (most events show none).
    pub fn updates(
        &mut self,
        event: &AgentEvent,
        look: &ToolLook<'_>,
        model_of: impl FnOnce(&AssistantMessage) -> Model,
    ) -> Vec<acp::SessionUpdate> {
        match event {
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(_),
            } => {
                self.message_id = Some(uuid::Uuid::now_v7().to_string());
                Vec::new()
            }
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => self.stream_update(assistant_message_event, look),
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(a),
            } => vec![usage_update(a, &model_of(a))],
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                let fields = acp::ToolCallUpdateFields::new()
                    .content(result_content(&partial_result.content));
                vec![acp::SessionUpdate::ToolCallUpdate(
                    acp::ToolCallUpdate::new(tool_call_id.clone(), fields),
                )]
            }
            _ => Vec::new(),
        }
    }

    fn stream_update(
        &mut self,
        event: &AssistantMessageEvent,
        look: &ToolLook<'_>,
    ) -> Vec<acp::SessionUpdate> {
        let chunk = |text: &str| {
            let chunk = acp::ContentChunk::new(text_block(text));
            match &self.message_id {
                Some(id) => chunk.message_id(acp::MessageId::new(id.as_str())),
                None => chunk,
            }
        };
        match event {
            AssistantMessageEvent::TextDelta { delta, .. } => {
                vec![acp::SessionUpdate::AgentMessageChunk(chunk(delta))]
            }
            AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                vec![acp::SessionUpdate::AgentThoughtChunk(chunk(delta))]
            }
            AssistantMessageEvent::ToolCallEnd { tool_call, .. } => {
                let call = look.tool_call(&tool_call.id, &tool_call.name, &tool_call.arguments);
                vec![acp::SessionUpdate::ToolCall(call)]
            }
            _ => Vec::new(),
        }
    }
}

/// How a tool call looks in ACP: kind, title, locations (the session's tools and directory).
pub struct ToolLook<'a> {
    pub tools: &'a SessionTools,
    pub workspace: &'a dyn Workspace,
}

impl ToolLook<'_> {
    pub fn kind(&self, tool: &str) -> acp::ToolKind {
        let kind = match self.tools.mcp_info(tool) {
            Some(info) => info.kind,
            // Planning is ACP's `think`: clients show the plan itself from the `plan` update.
            None if tool == crate::tools::TODO_WRITE => "think",
            // ACP's name for what reaches the network: `fetch`.
            None if crate::tools::tool_kind(tool) == crate::tools::ToolKind::Network => "fetch",
            None => crate::tools::tool_kind(tool).as_str(),
        };
        serde_json::from_value(Value::from(kind)).unwrap_or(acp::ToolKind::Other)
    }

    /// A new, pending tool call as the model made it.
    pub fn tool_call(&self, id: &str, tool: &str, args: &Value) -> acp::ToolCall {
        acp::ToolCall::new(id.to_owned(), self.title(tool, args))
            .kind(self.kind(tool))
            .status(acp::ToolCallStatus::Pending)
            .locations(self.locations(args))
            .raw_input(args.clone())
    }

    /// The same call as a `ToolCallUpdate` (what `session/request_permission` carries).
    pub fn as_update(&self, id: &str, tool: &str, args: &Value) -> acp::ToolCallUpdate {
        let fields = acp::ToolCallUpdateFields::new()
            .title(self.title(tool, args))
            .kind(self.kind(tool))
            .status(acp::ToolCallStatus::Pending)
            .locations(self.locations(args))
            .raw_input(args.clone());
        acp::ToolCallUpdate::new(id.to_owned(), fields)
    }

    pub fn title(&self, tool: &str, args: &Value) -> String {
        let arg = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or_default();
        if let Some(info) = self.tools.mcp_info(tool) {
            return info.title;
        }
        match tool {
            "bash" if args.get("background").and_then(Value::as_bool) == Some(true) => {
                format!("Run in the background: {}", arg("command"))
            }
            "bash" => format!("Run: {}", arg("command")),
            crate::tools::BASH_OUTPUT => format!("Read the output of {}", arg("jobId")),
            crate::tools::BASH_KILL => format!("Stop {}", arg("jobId")),
            "write" => format!("Write {}", arg("path")),
            "edit" => format!("Edit {}", arg("path")),
            "read" => format!("Read {}", arg("path")),
            "grep" => format!("Search for {:?}", arg("pattern")),
            "find" => format!("Find {}", arg("pattern")),
            "ls" => format!(
                "List {}",
                args.get("path").and_then(Value::as_str).unwrap_or(".")
            ),
            crate::tools::TODO_WRITE => "Update the plan".to_owned(),
            crate::tools::ASK_USER => format!("Ask: {}", arg("question")),
            crate::tools::TASK => {
                let agent = args
                    .get("agent")
                    .and_then(Value::as_str)
                    .unwrap_or("general");
                format!("Task ({agent}): {}", arg("description"))
            }
            crate::tools::web::WEB_FETCH | crate::tools::web::WEB_SEARCH => {
                crate::tools::web::approval_title(tool, args)
            }
            _ => format!("{tool} {args}"),
        }
    }

    /// The file a call works on (`path`), absolute, with `read`'s 1-based `offset` as its line.
    pub fn locations(&self, args: &Value) -> Vec<acp::ToolCallLocation> {
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            return Vec::new();
        };
        let Some(abs) = self.resolve(path) else {
            return Vec::new();
        };
        let line = args
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        vec![acp::ToolCallLocation::new(abs).line(line)]
    }

    pub fn resolve(&self, path: &str) -> Option<PathBuf> {
        self.workspace.resolve(path).ok()
    }
}

/// The final state of a tool call: its output, and the diff when it changed a file.
pub fn finished(
    id: &str,
    content: &[ContentBlock],
    is_error: bool,
    diff: Option<acp::Diff>,
) -> acp::SessionUpdate {
    let status = if is_error {
        acp::ToolCallStatus::Failed
    } else {
        acp::ToolCallStatus::Completed
    };
    let mut shown = Vec::new();
    shown.extend(diff.map(acp::ToolCallContent::Diff));
    shown.extend(result_content(content));
    let fields = acp::ToolCallUpdateFields::new()
        .status(status)
        .content(shown);
    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id.to_owned(), fields))
}

/// The final update of a call that ran in a client terminal keeps showing it (a tool call's
/// content is replaced by each update).
pub fn with_terminal(update: acp::SessionUpdate, terminal: Option<String>) -> acp::SessionUpdate {
    match (update, terminal) {
        (acp::SessionUpdate::ToolCallUpdate(mut u), Some(terminal)) => {
            let shown = acp::ToolCallContent::Terminal(acp::Terminal::new(terminal));
            u.fields
                .content
                .get_or_insert_with(Vec::new)
                .insert(0, shown);
            acp::SessionUpdate::ToolCallUpdate(u)
        }
        (update, _) => update,
    }
}

/// A `task` call's final update keeps its subagent's steps above its answer.
pub fn with_steps(
    update: acp::SessionUpdate,
    steps: Vec<acp::ToolCallContent>,
) -> acp::SessionUpdate {
    match update {
        acp::SessionUpdate::ToolCallUpdate(mut u) if !steps.is_empty() => {
            let content = u.fields.content.get_or_insert_with(Vec::new);
            content.splice(0..0, steps);
            acp::SessionUpdate::ToolCallUpdate(u)
        }
        update => update,
    }
}

/// A status change alone (`in_progress` once a call may run).
pub fn status(id: &str, status: acp::ToolCallStatus) -> acp::SessionUpdate {
    let fields = acp::ToolCallUpdateFields::new().status(status);
    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id.to_owned(), fields))
}

/// A background job started or ended: the `bash` call that started it (`call`) retitled with
/// its state, the job in `_meta["agent-lsp"].job`.
pub fn job_update(call: &str, job: &crate::tools::JobInfo) -> acp::SessionUpdate {
    let state = match (job.status, job.exit_code) {
        (crate::tools::JobStatus::Running, _) => "running".to_owned(),
        (status, Some(code)) => format!("{}, exit code {code}", status.as_str()),
        (status, None) => status.as_str().to_owned(),
    };
    let title = format!(
        "Run in the background: {} ({}: {state})",
        job.command, job.job_id
    );
    let fields = acp::ToolCallUpdateFields::new().title(title);
    let meta = serde_json::json!({"agent-lsp": {"job": job}});
    let update = acp::ToolCallUpdate::new(call.to_owned(), fields).meta(meta.as_object().cloned());
    acp::SessionUpdate::ToolCallUpdate(update)
}

/// A whole-file diff of `path`: `old` is `None` for a new file.
pub fn diff(path: &Path, old: Option<String>, new: String) -> acp::Diff {
    acp::Diff::new(path, new).old_text(old)
}

fn result_content(blocks: &[ContentBlock]) -> Vec<acp::ToolCallContent> {
    blocks
        .iter()
        .filter_map(to_acp_block)
        .map(|block| acp::ToolCallContent::Content(acp::Content::new(block)))
        .collect()
}

pub fn text_block(text: &str) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text))
}

/// pi's text and image blocks as ACP content (thinking and tool calls have their own updates).
pub fn to_acp_block(block: &ContentBlock) -> Option<acp::ContentBlock> {
    match block {
        ContentBlock::Text(t) => Some(text_block(&t.text)),
        ContentBlock::Image(i) => Some(acp::ContentBlock::Image(acp::ImageContent::new(
            i.data.as_str(),
            i.mime_type.as_str(),
        ))),
        ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => None,
    }
}

/// The context the last response used against the model's window, and its cost.
fn usage_update(message: &AssistantMessage, model: &Model) -> acp::SessionUpdate {
    let u = &message.usage;
    let used = u.input + u.cache_read + u.cache_write + u.output;
    let mut usage = u.clone();
    crate::model_registry::apply_cost(model, &mut usage);
    let update = acp::UsageUpdate::new(used, model.context_window)
        .cost(acp::Cost::new(usage.cost.total, "USD"));
    acp::SessionUpdate::UsageUpdate(update)
}

/// A stored conversation as the updates the live session showed: user, agent and thought
/// chunks, and every tool call with its final status and content.
pub fn replay(messages: &[AgentMessage], look: &ToolLook<'_>) -> Vec<acp::SessionUpdate> {
    let mut updates = Vec::new();
    for message in messages {
        match message {
            AgentMessage::User(user) => {
                let blocks: Vec<ContentBlock> = match &user.content {
                    MessageContent::Text(text) => vec![ContentBlock::text(text.as_str())],
                    MessageContent::Blocks(blocks) => blocks.clone(),
                };
                for block in blocks.iter().filter_map(to_acp_block) {
                    updates.push(acp::SessionUpdate::UserMessageChunk(
                        acp::ContentChunk::new(block),
                    ));
                }
            }
            AgentMessage::Assistant(assistant) => replay_assistant(assistant, look, &mut updates),
            AgentMessage::ToolResult(result) => updates.push(finished(
                &result.tool_call_id,
                &result.content,
                result.is_error,
                None,
            )),
            AgentMessage::System(_) | AgentMessage::Custom(_) => {}
        }
    }
    updates
}

fn replay_assistant(
    message: &AssistantMessage,
    look: &ToolLook<'_>,
    updates: &mut Vec<acp::SessionUpdate>,
) {
    let id = acp::MessageId::new(uuid::Uuid::now_v7().to_string());
    for block in &message.content {
        let chunk = |text: &str| acp::ContentChunk::new(text_block(text)).message_id(id.clone());
        match block {
            ContentBlock::Text(t) => {
                updates.push(acp::SessionUpdate::AgentMessageChunk(chunk(&t.text)))
            }
            ContentBlock::Thinking(t) => {
                updates.push(acp::SessionUpdate::AgentThoughtChunk(chunk(&t.thinking)))
            }
            ContentBlock::ToolCall(call) => updates.push(acp::SessionUpdate::ToolCall(
                look.tool_call(&call.id, &call.name, &call.arguments),
            )),
            ContentBlock::Image(_) => {}
        }
    }
}
