//! A scripted in-process `StreamFn` (upstream's `MockAssistantStream`), pi's test fixtures
//! (`createModel`, `createAssistantMessage`, tools) and an event recorder with pi's trace
//! notation (`ms/me:<role>`, `tes/tee:<id>`, `turn_end[ids]`, `agent_end(n)`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_lsp::agent::config::Emit;
use agent_lsp::agent::event::AgentEvent;
use agent_lsp::agent::hooks::ConvertToLlmHook;
use agent_lsp::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, StopReason, ToolCall,
    ToolDeclaration, UserMessage, now_ms,
};
use agent_lsp::agent::model::Model;
use agent_lsp::agent::stream_contract::{
    AssistantEventStream, AssistantMessageEvent, StreamFn, StreamRequest,
};
use agent_lsp::agent::tool::{
    AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolInput, ToolUpdater,
};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One recorded provider call.
pub type Call = StreamRequest;

type Script = dyn Fn(usize, &Call) -> AssistantEventStream + Send + Sync;

/// A `StreamFn` whose responses come from a script `(call index, call) -> stream`.
pub struct MockStream {
    script: Box<Script>,
    calls: Mutex<Vec<Call>>,
    count: AtomicUsize,
}

impl MockStream {
    pub fn new(
        script: impl Fn(usize, &Call) -> AssistantEventStream + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(MockStream {
            script: Box::new(script),
            calls: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
        })
    }

    /// Responds with the messages in order; after the last one, repeats it.
    pub fn responses(messages: Vec<AssistantMessage>) -> Arc<Self> {
        Self::new(move |i, _| {
            let m = messages[i.min(messages.len() - 1)].clone();
            terminal(m)
        })
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

impl StreamFn for MockStream {
    fn stream(&self, request: StreamRequest) -> AssistantEventStream {
        let i = self.count.fetch_add(1, Ordering::SeqCst);
        self.calls.lock().unwrap().push(request.clone());
        (self.script)(i, &request)
    }
}

/// Exactly one terminal event: `done` for success reasons, `error` for error/aborted.
pub fn terminal(message: AssistantMessage) -> AssistantEventStream {
    let event = if message.stop_reason.is_hard_exit() {
        AssistantMessageEvent::Error {
            reason: message.stop_reason,
            error: Box::new(message),
        }
    } else {
        AssistantMessageEvent::Done {
            reason: message.stop_reason,
            message: Box::new(message),
        }
    };
    AssistantEventStream::from_events(vec![event])
}

/// pi's `createModel()`.
pub fn create_model() -> Model {
    Model {
        id: "mock".into(),
        name: "mock".into(),
        api: "openai-responses".into(),
        provider: "openai".into(),
        base_url: "https://example.invalid".into(),
        reasoning: false,
        input: vec!["text".into()],
        context_window: 8192,
        max_tokens: 2048,
        ..Model::default()
    }
}

/// pi's loop-test `createAssistantMessage(content, stopReason)`.
pub fn assistant(content: Vec<ContentBlock>, stop_reason: StopReason) -> AssistantMessage {
    AssistantMessage {
        content,
        api: "openai-responses".into(),
        provider: "openai".into(),
        model: "mock".into(),
        stop_reason,
        timestamp: now_ms(),
        ..Default::default()
    }
}

pub fn text_reply(text: &str) -> AssistantMessage {
    assistant(vec![ContentBlock::text(text)], StopReason::Stop)
}

pub fn tool_call(id: &str, name: &str, args: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
        ..Default::default()
    })
}

pub fn tool_use(calls: Vec<ContentBlock>) -> AssistantMessage {
    assistant(calls, StopReason::ToolUse)
}

pub fn user(text: &str) -> AgentMessage {
    AgentMessage::from(UserMessage {
        content: MessageContent::Text(text.into()),
        timestamp: now_ms(),
    })
}

/// The user message's string content, if it is one.
pub fn user_text(m: &AgentMessage) -> Option<String> {
    match m {
        AgentMessage::User(u) => Some(u.content.to_text()),
        _ => None,
    }
}

pub fn roles(messages: &[AgentMessage]) -> Vec<String> {
    messages.iter().map(|m| m.role().to_string()).collect()
}

/// pi's `identityConverter`: keeps the LLM roles only (no protocol projection).
pub fn identity_converter() -> ConvertToLlmHook {
    Arc::new(|messages: Vec<AgentMessage>, _| {
        Box::pin(async move {
            Ok(messages
                .into_iter()
                .filter(|m| matches!(m.role(), "system" | "user" | "assistant" | "toolResult"))
                .collect())
        })
    })
}

type ExecFn = dyn Fn(
        String,
        Value,
        CancellationToken,
        ToolUpdater,
    ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>>
    + Send
    + Sync;

/// A tool built from closures.
pub struct FnTool {
    pub declaration: ToolDeclaration,
    pub mode: Option<ExecutionMode>,
    pub prepare: Option<Box<dyn Fn(Value) -> Value + Send + Sync>>,
    pub exec: Box<ExecFn>,
}

impl FnTool {
    pub fn new(
        name: &str,
        parameters: Value,
        exec: impl Fn(
            String,
            Value,
            CancellationToken,
            ToolUpdater,
        ) -> BoxFuture<'static, Result<AgentToolResult, ToolError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        FnTool {
            declaration: ToolDeclaration {
                name: name.into(),
                description: format!("{name} tool"),
                parameters,
                constrained_sampling: None,
            },
            mode: None,
            prepare: None,
            exec: Box::new(exec),
        }
    }

    pub fn arc(self) -> Arc<dyn AgentTool> {
        Arc::new(self)
    }
}

impl AgentTool for FnTool {
    fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        self.mode
    }

    fn prepare_arguments(&self, args: Value) -> Value {
        match &self.prepare {
            Some(p) => p(args),
            None => args,
        }
    }

    fn execute(&self, input: ToolInput) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        (self.exec)(
            input.tool_call_id,
            input.args,
            input.cancel,
            input.on_update,
        )
    }
}

/// `{value: string}` (pi's `Type.Object({ value: Type.String() })`).
pub fn value_schema() -> Value {
    json!({"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]})
}

/// A tool `echo` returning `echoed: <value>` that records the values it ran with.
pub fn echo_tool(executed: Arc<Mutex<Vec<Value>>>) -> Arc<dyn AgentTool> {
    FnTool::new("echo", value_schema(), move |_, args, _, _| {
        let executed = executed.clone();
        Box::pin(async move {
            let value = args["value"].clone();
            executed.lock().unwrap().push(value.clone());
            let text = format!("echoed: {}", value.as_str().unwrap_or_default());
            Ok(AgentToolResult {
                content: vec![ContentBlock::text(text)],
                details: Some(json!({"value": value})),
                ..Default::default()
            })
        })
    })
    .arc()
}

/// Records every event; optionally fails on a predicate.
#[derive(Clone, Default)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<AgentEvent>>>,
}

impl Recorder {
    pub fn emit(&self) -> Emit {
        let events = self.events.clone();
        Arc::new(move |e| {
            events.lock().unwrap().push(e);
            Box::pin(async { Ok(()) })
        })
    }

    pub fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }

    pub fn kinds(&self) -> Vec<String> {
        self.events().iter().map(|e| e.kind().to_string()).collect()
    }

    pub fn trace(&self) -> Vec<String> {
        trace(&self.events())
    }
}

/// pi's trace notation for a list of events.
pub fn trace(events: &[AgentEvent]) -> Vec<String> {
    events.iter().map(label).collect()
}

fn message_label(m: &AgentMessage) -> String {
    match m {
        AgentMessage::ToolResult(r) => {
            format!(
                "toolResult({}{})",
                r.tool_call_id,
                if r.is_error { ",err" } else { "" }
            )
        }
        AgentMessage::Assistant(a) if a.stop_reason != StopReason::Stop => {
            let reason = serde_json::to_value(a.stop_reason).unwrap();
            format!("assistant({})", reason.as_str().unwrap())
        }
        AgentMessage::User(u) => format!("user({})", u.content.to_text()),
        other => other.role().to_string(),
    }
}

pub fn label(e: &AgentEvent) -> String {
    match e {
        AgentEvent::MessageStart { message } => format!("ms:{}", message_label(message)),
        AgentEvent::MessageEnd { message } => format!("me:{}", message_label(message)),
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => format!("tes:{tool_call_id}"),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            is_error,
            ..
        } => format!("tee:{tool_call_id}{}", if *is_error { "(err)" } else { "" }),
        AgentEvent::TurnEnd { tool_results, .. } => {
            let ids: Vec<&str> = tool_results
                .iter()
                .map(|r| r.tool_call_id.as_str())
                .collect();
            format!("turn_end[{}]", ids.join(","))
        }
        AgentEvent::AgentEnd { messages } => format!("agent_end({})", messages.len()),
        other => other.kind().to_string(),
    }
}

/// Shorthand to build expected traces: `t(&["agent_start", …])`.
pub fn t(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
