//! pi's `get_session_stats`: message counts, tokens and cost of a session, and how full the
//! model's context window is.

use serde::Serialize;

use crate::agent::message::{AgentMessage, ContentBlock, MessageContent, Usage};
use crate::agent::model::Model;
use crate::store::{EntryKind, SessionFile};

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    pub session_file: Option<String>,
    pub session_id: String,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub total_messages: usize,
    pub tokens: TokenStats,
    /// USD.
    pub cost: f64,
    pub context_usage: Option<ContextUsage>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenStats {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

/// pi's `ContextUsage`: `tokens` and `percent` are `null` right after a compaction, until a
/// response reports the new size.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    pub tokens: Option<u64>,
    pub context_window: u64,
    pub percent: Option<f64>,
}

/// The stats of the session's current branch (compacted messages included, so tokens and cost
/// are the whole conversation's), with the context usage of `context`, the messages the next
/// request sends to `model`.
pub fn session_stats(
    record: &SessionFile,
    context: &[AgentMessage],
    model: &Model,
) -> SessionStats {
    let mut stats = SessionStats {
        session_file: record.path().map(|p| p.display().to_string()),
        session_id: record.id().to_string(),
        ..SessionStats::default()
    };
    let mut usage = Usage::default();
    let branch = record.branch_path();
    for entry in &branch {
        let EntryKind::Message { message } = &entry.kind else {
            continue;
        };
        stats.total_messages += 1;
        match message {
            AgentMessage::User(_) => stats.user_messages += 1,
            AgentMessage::ToolResult(_) => stats.tool_results += 1,
            AgentMessage::Assistant(a) => {
                stats.assistant_messages += 1;
                stats.tool_calls += a.tool_calls().count();
                usage.accumulate(&a.usage);
            }
            _ => {}
        }
    }
    stats.tokens = TokenStats {
        input: usage.input,
        output: usage.output,
        cache_read: usage.cache_read,
        cache_write: usage.cache_write,
        total: usage.input + usage.output + usage.cache_read + usage.cache_write,
    };
    stats.cost = usage.cost.total;
    // After a compaction the last reported size is the one before it: unknown until a response.
    let compacted = branch
        .iter()
        .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let answered_since = compacted.is_none_or(|at| {
        branch[at..].iter().any(|e| {
            matches!(e.kind.message(), Some(AgentMessage::Assistant(a))
                if !a.stop_reason.is_hard_exit())
        })
    });
    stats.context_usage = (model.context_window > 0).then(|| {
        let tokens = answered_since.then(|| context_tokens(context));
        ContextUsage {
            tokens,
            context_window: model.context_window,
            percent: tokens.map(|t| t as f64 / model.context_window as f64 * 100.0),
        }
    });
    stats
}

/// pi's `estimateContextTokens`: the size the last answered request reported, plus an estimate
/// of the messages after it (the whole context when nothing was answered yet).
pub fn context_tokens(messages: &[AgentMessage]) -> u64 {
    let reported = messages.iter().rposition(|m| {
        matches!(m, AgentMessage::Assistant(a) if !a.stop_reason.is_hard_exit()
            && a.usage.input + a.usage.output + a.usage.cache_read + a.usage.cache_write > 0)
    });
    let (base, rest) = match reported {
        Some(at) => {
            let Some(AgentMessage::Assistant(a)) = messages.get(at) else {
                return 0;
            };
            let u = &a.usage;
            (
                u.input + u.output + u.cache_read + u.cache_write,
                &messages[at + 1..],
            )
        }
        None => (0, messages),
    };
    base + rest.iter().map(estimate_tokens).sum::<u64>()
}

/// pi's `estimateTokens`: about four characters per token; an image counts 1200 tokens.
fn estimate_tokens(message: &AgentMessage) -> u64 {
    let blocks = |content: &[ContentBlock]| -> u64 {
        (content.iter())
            .map(|block| match block {
                ContentBlock::Text(t) => chars(&t.text),
                ContentBlock::Thinking(t) => chars(&t.thinking),
                ContentBlock::ToolCall(c) => chars(&c.name) + chars(&c.arguments.to_string()),
                ContentBlock::Image(_) => 4800,
            })
            .sum()
    };
    let chars = match message {
        AgentMessage::User(u) => match &u.content {
            MessageContent::Text(text) => chars(text),
            MessageContent::Blocks(b) => blocks(b),
        },
        AgentMessage::Assistant(a) => blocks(&a.content),
        AgentMessage::ToolResult(r) => blocks(&r.content),
        other => serde_json::to_string(other).map_or(0, |s| chars(&s)),
    };
    chars.div_ceil(4)
}

fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}
