//! A per-conversation cache of the request body's serialised messages (issue 6, scenario 4).
//!
//! Every request sends the whole history, so serialising it (JSON escaping of every message)
//! made each turn's cost grow with the conversation. The cache keeps the serialised JSON of the
//! history's longest prefix that a request rendered, plus the (transformed) messages it was made
//! from, and a later request reuses the part of that text whose messages are still equal,
//! position by position, rendered in the same form.
//!
//! Why reuse is exact: both request converters are left-to-right over the transformed history,
//! and the output of a position depends only on that message, the earlier messages and the
//! rendering settings (the "form": compat flags, model reasoning, tool strategy). The cache
//! compares all of them: the form by `==`, every message of the reused prefix by an equality
//! that also compares JSON key order and number spelling (serde_json's `Value` equality ignores
//! both, the serialised text does not). A prefix may only end at a *cut*: a position where the
//! converter holds no pending state that later messages could still change (tool-result images
//! waiting for their user message, an Anthropic tool-result message later results merge into).
//! Output that depends on the whole history (the system prompt, Anthropic's cache breakpoint on
//! the last user message) is kept out of the cached text by the converters.
//!
//! The handle is opaque to the agent loop: it travels in [`super::StreamOptions`], so each
//! agent (whose options are cloned for every request) shares one cache across its requests. A
//! request that finds the cache busy (another request of the same options building its body at
//! the same moment) builds its body without it.

use std::any::Any;
use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use serde_json::Value;

use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, CustomMessage, ImageContent, MessageContent,
    SystemMessage, TextContent, ThinkingContent, ToolCall, ToolDeclaration, ToolResultMessage,
    UserMessage,
};
use crate::agent::transcript::same_text;

/// The shared cache handle (cloning shares it; `Default` makes a new empty one).
#[derive(Clone, Default)]
pub struct RequestCache {
    inner: Arc<Slots>,
}

#[derive(Default)]
struct Slots {
    messages: Mutex<Option<Prefix>>,
    tools: Mutex<Option<ToolsText>>,
}

/// The serialised top-level tool list (the same every turn while the tools stay).
struct ToolsText {
    form: Box<dyn Any + Send>,
    decls: Vec<ToolDeclaration>,
    text: String,
}

impl std::fmt::Debug for RequestCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestCache")
    }
}

/// The cached rendering of a history prefix.
struct Prefix {
    /// The rendering settings, compared with `==` (a converter-specific type).
    form: Box<dyn Any + Send>,
    /// The transformed messages the text was rendered from.
    messages: Vec<AgentMessage>,
    /// The output messages of `messages`, each followed by a comma.
    text: String,
    /// `cuts[p]`: the length of `text` covering exactly `messages[..p]`, when `p` is a cut.
    cuts: Vec<Option<usize>>,
}

/// Exclusive use of the cache for one body (or no cache at all when it is busy or absent).
pub(crate) struct Lease<'c> {
    guard: Option<MutexGuard<'c, Option<Prefix>>>,
}

/// What a request may reuse: `messages[..position]` rendered as `text`.
pub(crate) struct Reuse<'l> {
    pub position: usize,
    pub text: &'l str,
}

/// Where the fresh rendering of a request may end up in the cache.
pub(crate) struct Fresh<'h, 'a> {
    /// The whole transformed history of the request.
    pub history: &'h [Cow<'a, AgentMessage>],
    /// The output messages from the reused position on, each followed by a comma.
    pub text: &'h str,
    /// `(p, length of text covering history[reused..p])` for every cut `p` from `reused` on.
    pub cuts: &'h [(usize, usize)],
    /// Cuts beyond this position are not stored (their text holds request-specific output).
    pub limit: usize,
}

impl RequestCache {
    /// Takes the cache for one body; busy (or poisoned) caches give an empty lease.
    /// Appends the history's output messages to `out` (inside an open JSON array, each
    /// followed by a comma): the cached text of the longest prefix still rendered the same, then
    /// `convert(start, cuts)`'s messages from `start` on, which are cached for the next request.
    /// `convert` records its cut points as `(position, output messages before it)`.
    pub(crate) fn append_messages<F: PartialEq + Send + 'static, M: serde::Serialize>(
        &self,
        out: &mut String,
        form: F,
        history: &[Cow<'_, AgentMessage>],
        limit: usize,
        convert: impl FnOnce(usize, &mut Vec<(usize, usize)>) -> Vec<M>,
    ) -> Result<(), serde_json::Error> {
        let mut lease = self.lease();
        let reuse = lease.reuse(&form, history, limit);
        let start = reuse.position;
        let mut cuts = Vec::new();
        let converted = convert(start, &mut cuts);
        let (fresh, ends) = each_with_comma(&converted)?;
        // One allocation for the array (it is most of the body, and grows every turn).
        out.reserve_exact(reuse.text.len() + fresh.len() + 1);
        out.push_str(reuse.text);
        out.push_str(&fresh);
        let cuts = cut_offsets(&cuts, &ends);
        let fresh = Fresh {
            history,
            text: &fresh,
            cuts: &cuts,
            limit,
        };
        lease.store(form, start, fresh);
        Ok(())
    }

    pub(crate) fn lease(&self) -> Lease<'_> {
        Lease {
            guard: try_take(&self.inner.messages),
        }
    }

    /// The tool list's JSON text for these declarations in this form: the cached text when
    /// both are equal to the last ones (declarations compared key-order-sensitively), else
    /// `render`'s, which is then cached.
    pub(crate) fn tools_json<F: PartialEq + Send + 'static>(
        &self,
        form: F,
        decls: &[&ToolDeclaration],
        render: impl FnOnce() -> Result<String, serde_json::Error>,
    ) -> Result<String, serde_json::Error> {
        let mut guard = try_take(&self.inner.tools);
        if let Some(cached) = guard.as_deref().and_then(Option::as_ref)
            && cached.form.downcast_ref::<F>() == Some(&form)
            && cached.decls.len() == decls.len()
            && cached.decls.iter().zip(decls).all(|(a, b)| same_decl(a, b))
        {
            return Ok(cached.text.clone());
        }
        let text = render()?;
        if let Some(slot) = guard.as_deref_mut() {
            *slot = Some(ToolsText {
                form: Box::new(form),
                decls: decls.iter().map(|d| (*d).clone()).collect(),
                text: text.clone(),
            });
        }
        Ok(text)
    }

    /// How many (transformed) messages the cached text covers.
    #[cfg(test)]
    pub(crate) fn cached_messages(&self) -> usize {
        let guard = self.inner.messages.lock().unwrap();
        guard.as_ref().map_or(0, |prefix| prefix.messages.len())
    }
}

impl Lease<'_> {
    /// The longest cached prefix usable for `history` rendered in `form`, ending at a cut no
    /// later than `limit`.
    pub(crate) fn reuse<F: PartialEq + 'static>(
        &self,
        form: &F,
        history: &[Cow<'_, AgentMessage>],
        limit: usize,
    ) -> Reuse<'_> {
        let none = Reuse {
            position: 0,
            text: "",
        };
        let Some(prefix) = self.guard.as_deref().and_then(Option::as_ref) else {
            return none;
        };
        if prefix.form.downcast_ref::<F>() != Some(form) {
            return none;
        }
        let same = history
            .iter()
            .zip(&prefix.messages)
            .take(limit)
            .take_while(|(new, old)| same_message(new, old))
            .count();
        let cut = (0..=same)
            .rev()
            .find_map(|p| Some((p, prefix.cuts.get(p).copied()??)));
        match cut {
            Some((position, len)) => Reuse {
                position,
                text: prefix.text.get(..len).unwrap_or_default(),
            },
            None => none,
        }
    }

    /// Records the rendering of this request: the reused prefix plus the fresh part up to its
    /// last cut within `fresh.limit`.
    pub(crate) fn store<F: PartialEq + Send + 'static>(
        &mut self,
        form: F,
        reused: usize,
        fresh: Fresh<'_, '_>,
    ) {
        let Some(guard) = self.guard.as_mut() else {
            return;
        };
        let Some(&(end, text_len)) = fresh.cuts.iter().rev().find(|(p, _)| *p <= fresh.limit)
        else {
            return;
        };
        let prefix = match guard.as_mut() {
            Some(prefix) if prefix.form.downcast_ref::<F>() == Some(&form) => prefix,
            _ => guard.insert(Prefix {
                form: Box::new(form),
                messages: Vec::new(),
                text: String::new(),
                cuts: vec![Some(0)],
            }),
        };
        let base = prefix.cuts.get(reused).copied().flatten().unwrap_or(0);
        prefix.messages.truncate(reused);
        prefix.text.truncate(base);
        prefix.cuts.truncate(reused + 1);
        let new = fresh.history.get(reused..end).unwrap_or_default();
        prefix.messages.extend(new.iter().map(|m| kept_copy(m)));
        prefix
            .text
            .push_str(fresh.text.get(..text_len).unwrap_or_default());
        prefix.cuts.resize(end + 1, None);
        for &(p, len) in fresh.cuts.iter().filter(|(p, _)| *p > reused && *p <= end) {
            prefix.cuts[p] = Some(base + len);
        }
    }
}

/// The slot, unless another request holds it; a slot poisoned by a panic starts over.
fn try_take<T>(slot: &Mutex<Option<T>>) -> Option<MutexGuard<'_, Option<T>>> {
    match slot.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::WouldBlock) => None,
        Err(TryLockError::Poisoned(poisoned)) => {
            let mut guard = poisoned.into_inner();
            *guard = None;
            slot.clear_poison();
            Some(guard)
        }
    }
}

/// `==` made strict enough that equal messages render equal requests: JSON values also compare
/// key order and number spelling (serde_json's `Value` equality ignores both; the text does
/// not). Every struct is destructured without `..`, so a field added to a message type fails to
/// compile here until it is compared.
pub fn same_message(a: &AgentMessage, b: &AgentMessage) -> bool {
    match (a, b) {
        (AgentMessage::System(x), AgentMessage::System(y)) => same_system(x, y),
        (AgentMessage::User(x), AgentMessage::User(y)) => {
            let UserMessage { content, timestamp } = x;
            same_content(content, &y.content) && *timestamp == y.timestamp
        }
        (AgentMessage::Assistant(x), AgentMessage::Assistant(y)) => same_assistant(x, y),
        (AgentMessage::ToolResult(x), AgentMessage::ToolResult(y)) => same_result(x, y),
        (AgentMessage::Custom(x), AgentMessage::Custom(y)) => {
            let CustomMessage { role, fields } = x;
            *role == y.role && same_map(fields, &y.fields)
        }
        _ => false,
    }
}

fn same_system(x: &SystemMessage, y: &SystemMessage) -> bool {
    let SystemMessage {
        content,
        sections,
        timestamp,
        tools_added,
        tools_removed,
    } = x;
    let same_sections = match (sections, &y.sections) {
        (Some(p), Some(q)) => same_map(p, q),
        (None, None) => true,
        _ => false,
    };
    let same_added = match (tools_added, &y.tools_added) {
        (Some(p), Some(q)) => p.len() == q.len() && p.iter().zip(q).all(|(d, e)| same_decl(d, e)),
        (None, None) => true,
        _ => false,
    };
    same_content(content, &y.content)
        && same_sections
        && *timestamp == y.timestamp
        && same_added
        && *tools_removed == y.tools_removed
}

fn same_decl(x: &ToolDeclaration, y: &ToolDeclaration) -> bool {
    let ToolDeclaration {
        name,
        description,
        parameters,
        constrained_sampling,
    } = x;
    *name == y.name
        && *description == y.description
        && same_text(parameters, &y.parameters)
        && same_opt(constrained_sampling, &y.constrained_sampling)
}

fn same_assistant(x: &AssistantMessage, y: &AssistantMessage) -> bool {
    let AssistantMessage {
        content,
        api,
        provider,
        model,
        response_model,
        usage,
        stop_reason,
        error_message,
        timestamp,
        response_id,
        raw_stop_reason,
        provider_thinking_level,
        diagnostics,
        deferred,
        end_turn,
        duration_ms,
        thinking_level,
    } = x;
    same_blocks(content, &y.content)
        && *api == y.api
        && *provider == y.provider
        && *model == y.model
        && *response_model == y.response_model
        && *usage == y.usage
        && *stop_reason == y.stop_reason
        && *error_message == y.error_message
        && *timestamp == y.timestamp
        && *response_id == y.response_id
        && *raw_stop_reason == y.raw_stop_reason
        && *provider_thinking_level == y.provider_thinking_level
        && same_opt(diagnostics, &y.diagnostics)
        && same_opt(deferred, &y.deferred)
        && *end_turn == y.end_turn
        && *duration_ms == y.duration_ms
        && *thinking_level == y.thinking_level
}

fn same_result(x: &ToolResultMessage, y: &ToolResultMessage) -> bool {
    let ToolResultMessage {
        tool_call_id,
        tool_name,
        content,
        details,
        usage,
        is_error,
        duration_ms,
        timestamp,
    } = x;
    // `details` is never rendered (request bodies carry only the content the model sees), and
    // the cache keeps no copy of it (see `kept_copy`).
    let _ = details;
    *tool_call_id == y.tool_call_id
        && *tool_name == y.tool_name
        && same_blocks(content, &y.content)
        && *usage == y.usage
        && *is_error == y.is_error
        && *duration_ms == y.duration_ms
        && *timestamp == y.timestamp
}

fn same_content(a: &MessageContent, b: &MessageContent) -> bool {
    match (a, b) {
        (MessageContent::Text(x), MessageContent::Text(y)) => x == y,
        (MessageContent::Blocks(x), MessageContent::Blocks(y)) => same_blocks(x, y),
        _ => false,
    }
}

fn same_blocks(a: &[ContentBlock], b: &[ContentBlock]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_block(x, y))
}

fn same_block(a: &ContentBlock, b: &ContentBlock) -> bool {
    match (a, b) {
        (ContentBlock::Text(x), ContentBlock::Text(y)) => {
            let TextContent {
                text,
                text_signature,
            } = x;
            *text == y.text && *text_signature == y.text_signature
        }
        (ContentBlock::Thinking(x), ContentBlock::Thinking(y)) => {
            let ThinkingContent {
                thinking,
                thinking_signature,
                redacted,
            } = x;
            *thinking == y.thinking
                && *thinking_signature == y.thinking_signature
                && *redacted == y.redacted
        }
        (ContentBlock::Image(x), ContentBlock::Image(y)) => {
            let ImageContent { data, mime_type } = x;
            *data == y.data && *mime_type == y.mime_type
        }
        (ContentBlock::ToolCall(x), ContentBlock::ToolCall(y)) => {
            let ToolCall {
                id,
                name,
                arguments,
                thought_signature,
                namespace,
                arguments_error,
            } = x;
            *id == y.id
                && *name == y.name
                && same_text(arguments, &y.arguments)
                && *thought_signature == y.thought_signature
                && *namespace == y.namespace
                && *arguments_error == y.arguments_error
        }
        _ => false,
    }
}

/// The copy of a rendered message the cache keeps for comparison: without a tool result's
/// `details` (an `edit`'s diff, a `bash` run's full output), which no request renders, so a long
/// session's cache costs little more than the model-visible transcript.
fn kept_copy(message: &AgentMessage) -> AgentMessage {
    match message {
        AgentMessage::ToolResult(result) => AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: result.tool_call_id.clone(),
            tool_name: result.tool_name.clone(),
            content: result.content.clone(),
            details: None,
            usage: result.usage.clone(),
            is_error: result.is_error,
            duration_ms: result.duration_ms,
            timestamp: result.timestamp,
        }),
        other => other.clone(),
    }
}

fn same_opt(a: &Option<Value>, b: &Option<Value>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => same_text(x, y),
        (None, None) => true,
        _ => false,
    }
}

fn same_map(a: &serde_json::Map<String, Value>, b: &serde_json::Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_text(va, vb))
}

/// Serialises each item, each followed by a comma; returns the text and, per item, the text's
/// length after it (so a caller can cut the list after any item).
fn each_with_comma<T: serde::Serialize>(
    items: &[T],
) -> Result<(String, Vec<usize>), serde_json::Error> {
    let mut out = Vec::new();
    let mut ends = Vec::with_capacity(items.len());
    for item in items {
        crate::json::write(&mut out, item)?;
        out.push(b',');
        ends.push(out.len());
    }
    let text = String::from_utf8(out).map_err(serde::ser::Error::custom)?;
    Ok((text, ends))
}

/// Maps converter cuts `(position, output messages before it)` to `(position, text length)`.
fn cut_offsets(cuts: &[(usize, usize)], ends: &[usize]) -> Vec<(usize, usize)> {
    cuts.iter()
        .map(|&(p, n)| {
            (
                p,
                n.checked_sub(1)
                    .and_then(|i| ends.get(i))
                    .copied()
                    .unwrap_or(0),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Model;
    use crate::provider::transform::fixtures;
    use serde_json::json;

    #[test]
    fn equal_messages_are_the_same_and_differently_written_json_is_not() {
        let messages = fixtures::rich(&Model::default());
        for (i, a) in messages.iter().enumerate() {
            for (j, b) in messages.iter().enumerate() {
                assert_eq!(same_message(a, b), i == j || a == b, "{i} {j}");
            }
        }
        let call = |arguments| {
            AgentMessage::Assistant(AssistantMessage {
                content: vec![ContentBlock::ToolCall(ToolCall {
                    arguments,
                    ..ToolCall::default()
                })],
                ..AssistantMessage::default()
            })
        };
        for (a, b) in [
            (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1})),
            (json!({"x": 0.0}), json!({"x": -0.0})),
            (
                json!([{"k": {"a": 1, "b": 2}}]),
                json!([{"k": {"b": 2, "a": 1}}]),
            ),
        ] {
            let (a, b) = (call(a), call(b));
            assert_eq!(a, b, "serde_json calls them equal");
            assert!(!same_message(&a, &b));
            assert!(same_message(&a, &a.clone()));
        }
    }
}
