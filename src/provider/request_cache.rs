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

use crate::agent::message::{AgentMessage, ContentBlock, MessageContent, ToolDeclaration};
use crate::agent::transcript::declarations_equal;

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
            && cached
                .decls
                .iter()
                .zip(decls)
                .all(|(a, b)| declarations_equal(a, b))
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
        prefix.messages.extend(new.iter().map(|m| (**m).clone()));
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

/// Equality that implies equal serialisations: `==` plus JSON key order and number spelling
/// for every JSON value a message carries.
pub fn same_message(a: &AgentMessage, b: &AgentMessage) -> bool {
    a == b && same_values(a, b)
}

/// Given `a == b` (so both have the same shape), whether their JSON values also match in key
/// order and number spelling.
fn same_values(a: &AgentMessage, b: &AgentMessage) -> bool {
    match (a, b) {
        (AgentMessage::System(x), AgentMessage::System(y)) => {
            same_map(x.sections.as_ref(), y.sections.as_ref())
                && x.tools_added
                    .iter()
                    .flatten()
                    .zip(y.tools_added.iter().flatten())
                    .all(|(p, q): (&ToolDeclaration, &ToolDeclaration)| {
                        same_text(&p.parameters, &q.parameters)
                            && same_opt(
                                p.constrained_sampling.as_ref(),
                                q.constrained_sampling.as_ref(),
                            )
                    })
        }
        (AgentMessage::User(x), AgentMessage::User(y)) => same_content(&x.content, &y.content),
        (AgentMessage::Assistant(x), AgentMessage::Assistant(y)) => {
            same_blocks(&x.content, &y.content)
                && same_opt(x.diagnostics.as_ref(), y.diagnostics.as_ref())
                && same_opt(x.deferred.as_ref(), y.deferred.as_ref())
        }
        (AgentMessage::ToolResult(x), AgentMessage::ToolResult(y)) => {
            same_blocks(&x.content, &y.content) && same_opt(x.details.as_ref(), y.details.as_ref())
        }
        (AgentMessage::Custom(x), AgentMessage::Custom(y)) => {
            same_map(Some(&x.fields), Some(&y.fields))
        }
        _ => false,
    }
}

fn same_content(a: &MessageContent, b: &MessageContent) -> bool {
    match (a, b) {
        (MessageContent::Blocks(x), MessageContent::Blocks(y)) => same_blocks(x, y),
        _ => true,
    }
}

fn same_blocks(a: &[ContentBlock], b: &[ContentBlock]) -> bool {
    a.iter().zip(b).all(|pair| match pair {
        (ContentBlock::ToolCall(x), ContentBlock::ToolCall(y)) => {
            same_text(&x.arguments, &y.arguments)
        }
        _ => true,
    })
}

fn same_opt(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => same_text(x, y),
        _ => true,
    }
}

fn same_map(
    a: Option<&serde_json::Map<String, Value>>,
    b: Option<&serde_json::Map<String, Value>>,
) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_text(va, vb))
        }
        _ => true,
    }
}

/// Same JSON text: same shape, keys in the same order, numbers spelled the same.
pub fn same_text(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => same_map(Some(x), Some(y)),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_text(p, q))
        }
        // `Number`'s equality says 0.0 == -0.0, whose texts differ: floats compare by bits.
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            _ if x.is_f64() != y.is_f64() => false,
            (Some(p), Some(q)) if x.is_f64() => p.to_bits() == q.to_bits(),
            _ => x == y,
        },
        _ => a == b,
    }
}
