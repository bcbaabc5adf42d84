//! What a compaction summarises and keeps (pi's `prepareCompaction` and `findCutPoint`), over
//! the session's branch, and pi's token estimates (characters / 4).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::agent::message::{AgentMessage, ContentBlock, MessageContent, StopReason, Usage};
use crate::store::context::entry_message;
use crate::store::{EntryKind, SessionEntry};

use super::{CompactionSettings, FileLists};

/// An image counts as 4800 characters (about 1200 tokens), as pi estimates it.
const IMAGE_CHARS: usize = 4800;

/// What a compaction works from.
#[derive(Clone, Debug, PartialEq)]
pub struct Preparation {
    pub first_kept_entry_id: String,
    /// Summarised into the history part of the summary.
    pub messages_to_summarize: Vec<AgentMessage>,
    /// A split turn's start (its user message onwards, up to the cut), summarised apart.
    pub turn_prefix_messages: Vec<AgentMessage>,
    pub is_split_turn: bool,
    pub tokens_before: u64,
    pub previous_summary: Option<String>,
    pub files: FileOps,
}

/// The paths of `read`, `write` and `edit` calls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileOps {
    pub read: BTreeSet<String>,
    pub modified: BTreeSet<String>,
}

impl FileOps {
    fn add_from(&mut self, message: &AgentMessage) {
        let AgentMessage::Assistant(a) = message else {
            return;
        };
        for call in a.tool_calls() {
            let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
                continue;
            };
            match call.name.as_str() {
                "read" => {
                    self.read.insert(path.to_string());
                }
                "write" | "edit" => {
                    self.modified.insert(path.to_string());
                }
                _ => {}
            }
        }
    }

    fn add_details(&mut self, details: Option<&Value>) {
        let Some(details) = details else { return };
        let list = |key: &str| -> Vec<String> {
            (details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten())
            .filter_map(|v| v.as_str().map(String::from))
            .collect()
        };
        self.read.extend(list("readFiles"));
        self.modified.extend(list("modifiedFiles"));
    }

    /// pi's `computeFileLists`: read = read and never modified; both sorted.
    pub fn lists(&self) -> FileLists {
        FileLists {
            read_files: (self.read.iter())
                .filter(|f| !self.modified.contains(*f))
                .cloned()
                .collect(),
            modified_files: self.modified.iter().cloned().collect(),
        }
    }
}

/// Length as JavaScript counts it (UTF-16 units), so estimates equal pi's.
fn js_len(text: &str) -> usize {
    if text.is_ascii() {
        return text.len();
    }
    text.encode_utf16().count()
}

fn content_chars(content: &MessageContent) -> usize {
    match content {
        MessageContent::Text(text) => js_len(text),
        MessageContent::Blocks(blocks) => blocks_chars(blocks),
    }
}

fn blocks_chars(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => js_len(&t.text),
            ContentBlock::Image(_) => IMAGE_CHARS,
            _ => 0,
        })
        .sum()
}

/// pi's `estimateTokens`: characters / 4, rounded up.
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    let chars = match message {
        AgentMessage::System(s) => {
            let sections = (s.sections.iter().flatten())
                .filter_map(|(_, v)| v.as_str().map(js_len))
                .sum::<usize>();
            let tools = (s.tools_added.as_ref())
                .and_then(|t| serde_json::to_string(t).ok())
                .map_or(0, |t| js_len(&t));
            content_chars(&s.content) + sections + tools
        }
        AgentMessage::User(u) => content_chars(&u.content),
        AgentMessage::Assistant(a) => a
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(t) => js_len(&t.text),
                ContentBlock::Thinking(t) => js_len(&t.thinking),
                ContentBlock::ToolCall(c) => {
                    js_len(&c.name) + serde_json::to_string(&c.arguments).map_or(0, |s| js_len(&s))
                }
                ContentBlock::Image(_) => 0,
            })
            .sum(),
        AgentMessage::ToolResult(r) => blocks_chars(&r.content),
        // Extended roles reach the estimate converted to user text (see `entry_message`).
        AgentMessage::Custom(c) => serde_json::to_string(&c.fields).map_or(0, |s| js_len(&s)),
    };
    chars.div_ceil(4) as u64
}

/// pi's `calculateContextTokens`.
pub fn context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        return usage.total_tokens;
    }
    usage.input + usage.output + usage.cache_read + usage.cache_write
}

/// The usage of a response that reported a valid one (not an error, not aborted, not all zero).
pub fn valid_usage(message: &AgentMessage) -> Option<&Usage> {
    let AgentMessage::Assistant(a) = message else {
        return None;
    };
    let failed = matches!(a.stop_reason, StopReason::Error | StopReason::Aborted);
    (!failed && context_tokens(&a.usage) > 0).then_some(&a.usage)
}

/// pi's `estimateContextTokens`: the last valid usage plus estimates of what follows it.
pub fn estimate_context_tokens(messages: &[AgentMessage]) -> u64 {
    let last = messages.iter().rposition(|m| valid_usage(m).is_some());
    match last {
        Some(i) => {
            let usage = valid_usage(&messages[i]).map_or(0, context_tokens);
            usage + messages[i + 1..].iter().map(estimate_tokens).sum::<u64>()
        }
        None => messages.iter().map(estimate_tokens).sum(),
    }
}

/// One entry of the branch with the message it shows the model, if any.
struct Item<'a> {
    entry: &'a SessionEntry,
    message: Option<AgentMessage>,
}

impl Item<'_> {
    fn is_compaction(&self) -> bool {
        matches!(self.entry.kind, EntryKind::Compaction { .. })
    }

    /// Never at a tool result: a kept result must keep its call.
    fn is_cut_point(&self) -> bool {
        matches!(
            self.message,
            Some(AgentMessage::User(_) | AgentMessage::Assistant(_))
        )
    }

    /// User input (a prompt, a `!` command, a custom or summary message) starts a turn.
    fn starts_turn(&self) -> bool {
        matches!(self.message, Some(AgentMessage::User(_)))
    }

    fn tokens(&self) -> u64 {
        self.message.as_ref().map_or(0, estimate_tokens)
    }
}

/// Where to cut: the first kept item, and the start of the turn it splits, if it does.
struct Cut {
    first_kept: usize,
    turn_start: Option<usize>,
}

/// pi's `findCutPoint` over `items[start..]`.
fn find_cut(items: &[Item], start: usize, keep_recent_tokens: u64) -> Cut {
    let cut_points: Vec<usize> = (start..items.len())
        .filter(|&i| !items[i].is_compaction() && items[i].is_cut_point())
        .collect();
    let (Some(&first), Some(&last)) = (cut_points.first(), cut_points.last()) else {
        return Cut {
            first_kept: start,
            turn_start: None,
        };
    };
    let mut cut = first;
    let mut kept = 0;
    for i in (start..items.len()).rev() {
        let tokens = items[i].tokens();
        if tokens == 0 {
            continue;
        }
        kept += tokens;
        if kept >= keep_recent_tokens {
            cut = cut_points.iter().copied().find(|&c| c >= i).unwrap_or(last);
            break;
        }
    }
    // Settings entries just before the cut stay with what they precede.
    while cut > start {
        let previous = &items[cut - 1];
        if previous.is_compaction() || previous.message.is_some() {
            break;
        }
        cut -= 1;
    }
    let turn_start = if items[cut].starts_turn() {
        None
    } else {
        (start..=cut).rev().find(|&i| items[i].starts_turn())
    };
    Cut {
        first_kept: cut,
        turn_start,
    }
}

/// pi's `prepareCompaction` over the branch (root to leaf); `None` when there is nothing to
/// summarise (the branch ends with a compaction, or everything fits in the kept part).
pub fn prepare(branch: &[&SessionEntry], settings: &CompactionSettings) -> Option<Preparation> {
    if branch
        .last()
        .is_some_and(|e| matches!(e.kind, EntryKind::Compaction { .. }))
    {
        return None;
    }
    let previous = branch
        .iter()
        .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let mut previous_summary = None;
    let mut files = FileOps::default();
    let mut start = 0;
    if let Some(p) = previous
        && let EntryKind::Compaction {
            summary,
            first_kept_entry_id,
            details,
            from_hook,
            ..
        } = &branch[p].kind
    {
        previous_summary = Some(summary.clone());
        if *from_hook != Some(true) {
            files.add_details(details.as_ref());
        }
        // The previous compaction's kept part is summarised again, now or later.
        start = (branch[..p].iter())
            .position(|e| &e.id == first_kept_entry_id)
            .unwrap_or(p + 1);
    }
    let items: Vec<Item> = branch
        .iter()
        .map(|entry| Item {
            entry,
            message: match entry.kind {
                EntryKind::Compaction { .. } => None,
                _ => entry_message(entry),
            },
        })
        .collect();
    let context = crate::store::context::context_of_path(branch).messages;
    let tokens_before = estimate_context_tokens(&context);
    let cut = find_cut(&items, start, settings.keep_recent_tokens);
    let first_kept = items.get(cut.first_kept)?.entry.id.clone();
    let history_end = cut.turn_start.unwrap_or(cut.first_kept);
    let messages = |range: std::ops::Range<usize>| -> Vec<AgentMessage> {
        (items[range].iter())
            .filter_map(|item| item.message.clone())
            .filter(|m| !matches!(m, AgentMessage::System(_)))
            .collect()
    };
    let messages_to_summarize = messages(start..history_end);
    let turn_prefix_messages = match cut.turn_start {
        Some(turn) => messages(turn..cut.first_kept),
        None => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return None;
    }
    for message in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        files.add_from(message);
    }
    Some(Preparation {
        first_kept_entry_id: first_kept,
        messages_to_summarize,
        is_split_turn: cut.turn_start.is_some(),
        turn_prefix_messages,
        tokens_before,
        previous_summary,
        files,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::message::{AssistantMessage, ToolCall, ToolResultMessage, UserMessage};

    fn entry(id: usize, kind: EntryKind) -> SessionEntry {
        SessionEntry {
            id: format!("e{id}"),
            parent_id: id.checked_sub(1).map(|p| format!("e{p}")),
            timestamp: "2026-12-01T00:00:00.000Z".into(),
            kind,
        }
    }

    fn user(text: &str) -> EntryKind {
        EntryKind::Message {
            message: AgentMessage::from(UserMessage::text(text)),
        }
    }

    fn said(text: &str) -> EntryKind {
        EntryKind::Message {
            message: AgentMessage::from(AssistantMessage {
                content: vec![ContentBlock::text(text)],
                ..Default::default()
            }),
        }
    }

    fn call(tool: &str, path: &str) -> EntryKind {
        EntryKind::Message {
            message: AgentMessage::from(AssistantMessage {
                content: vec![ContentBlock::ToolCall(ToolCall {
                    id: "c".into(),
                    name: tool.into(),
                    arguments: json!({"path": path}),
                    ..Default::default()
                })],
                stop_reason: StopReason::ToolUse,
                ..Default::default()
            }),
        }
    }

    fn result(text: &str) -> EntryKind {
        EntryKind::Message {
            message: AgentMessage::from(ToolResultMessage {
                tool_call_id: "c".into(),
                tool_name: "read".into(),
                content: vec![ContentBlock::text(text)],
                ..Default::default()
            }),
        }
    }

    fn branch(kinds: Vec<EntryKind>) -> Vec<SessionEntry> {
        kinds
            .into_iter()
            .enumerate()
            .map(|(i, k)| entry(i, k))
            .collect()
    }

    fn keep(tokens: u64) -> CompactionSettings {
        CompactionSettings {
            keep_recent_tokens: tokens,
            ..CompactionSettings::default()
        }
    }

    #[test]
    fn estimates_are_characters_over_four_rounded_up() {
        let message = AgentMessage::from(UserMessage::text("12345"));
        assert_eq!(estimate_tokens(&message), 2);
        let EntryKind::Message { message } = call("read", "a") else {
            unreachable!()
        };
        // "read" + {"path":"a"}
        assert_eq!(estimate_tokens(&message), (4 + 12usize).div_ceil(4) as u64);
    }

    #[test]
    fn the_cut_is_never_at_a_tool_result() {
        let entries = branch(vec![
            user("old question"),
            said("old answer"),
            user("read it"),
            call("read", "a.txt"),
            result(&"x".repeat(400)),
        ]);
        let path: Vec<&SessionEntry> = entries.iter().collect();
        let prep = prepare(&path, &keep(10)).unwrap();
        // The result alone passes the budget: its call is kept with it, the turn is split.
        assert_eq!(prep.first_kept_entry_id, "e3");
        assert!(prep.is_split_turn);
        assert_eq!(prep.messages_to_summarize.len(), 2);
        assert_eq!(prep.turn_prefix_messages.len(), 1);
        assert!(
            prep.files.lists().read_files.is_empty(),
            "the kept call is not summarised"
        );
    }

    #[test]
    fn a_cut_at_a_prompt_is_not_a_split_and_lists_the_files() {
        let entries = branch(vec![
            user("read it"),
            call("read", "a.txt"),
            result("alpha"),
            call("edit", "b.txt"),
            result("done"),
            said("finished"),
            user(&"new ".repeat(20)),
        ]);
        let path: Vec<&SessionEntry> = entries.iter().collect();
        let prep = prepare(&path, &keep(5)).unwrap();
        assert_eq!(prep.first_kept_entry_id, "e6");
        assert!(!prep.is_split_turn);
        assert_eq!(prep.messages_to_summarize.len(), 6);
        let lists = prep.files.lists();
        assert_eq!(lists.read_files, ["a.txt"]);
        assert_eq!(lists.modified_files, ["b.txt"]);
    }

    #[test]
    fn nothing_to_compact_when_everything_fits_or_the_branch_ends_compacted() {
        let mut entries = branch(vec![user("hi"), said("hello")]);
        let path: Vec<&SessionEntry> = entries.iter().collect();
        assert!(prepare(&path, &keep(20_000)).is_none());
        entries.push(entry(
            2,
            EntryKind::Compaction {
                summary: "s".into(),
                first_kept_entry_id: "e1".into(),
                tokens_before: 1,
                details: None,
                from_hook: None,
            },
        ));
        let path: Vec<&SessionEntry> = entries.iter().collect();
        assert!(prepare(&path, &keep(1)).is_none());
    }

    #[test]
    fn after_a_compaction_its_kept_part_and_summary_carry_over() {
        let entries = branch(vec![
            user("one"),
            call("read", "a.txt"),
            result("alpha"),
            said("answer one"),
            EntryKind::Compaction {
                summary: "S1".into(),
                first_kept_entry_id: "e3".into(),
                tokens_before: 1,
                details: Some(json!({"readFiles": ["a.txt"], "modifiedFiles": ["z.txt"]})),
                from_hook: None,
            },
            user("two"),
            said("answer two"),
            user("three"),
        ]);
        let path: Vec<&SessionEntry> = entries.iter().collect();
        let prep = prepare(&path, &keep(1)).unwrap();
        assert_eq!(prep.previous_summary.as_deref(), Some("S1"));
        assert_eq!(prep.first_kept_entry_id, "e7");
        // From the previous kept part on: "answer one", "two", "answer two".
        assert_eq!(prep.messages_to_summarize.len(), 3);
        let lists = prep.files.lists();
        assert_eq!(
            (lists.read_files, lists.modified_files),
            (vec!["a.txt".to_string()], vec!["z.txt".to_string()])
        );
    }

    #[test]
    fn small_windows_cap_reserve_and_kept_tokens_at_a_quarter() {
        let settings = CompactionSettings::default().for_window(32_768);
        assert_eq!(
            (settings.reserve_tokens, settings.keep_recent_tokens),
            (8192, 8192)
        );
        let big = CompactionSettings::default().for_window(200_000);
        assert_eq!(big, CompactionSettings::default());
        assert!(big.should_compact(183_617, 200_000));
        assert!(!big.should_compact(183_616, 200_000));
    }
}
