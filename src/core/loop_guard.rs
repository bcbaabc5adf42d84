//! Runaway loops: a turn limit and a repeated-call guard, as loop hooks every front end gets.
//!
//! Small local models often repeat one tool call forever. When the model makes the same call
//! (tool name and arguments) for the `warn_at`-th time in a row, the result carries a note that
//! it will not change and what to do instead (`afterToolCall`); at the `stop_at`-th, and when the
//! run reaches `max_turns` responses, the run ends (`finishTurn`). The streak is read from the
//! transcript, so it needs no state and survives a resumed session: calls count in the order the
//! model made them; a user message or a response without calls ends the row.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::agent::hooks::{
    AfterToolCallContext, AfterToolCallHook, AfterToolCallResult, FinishTurnHook, TurnDecision,
    max_turns,
};
use crate::agent::message::{AgentMessage, ContentBlock, ToolCall};

/// How a session keeps a run from looping. `0` turns a number off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopLimits {
    /// Responses per run (`None`: no limit).
    pub max_turns: Option<usize>,
    /// The same call this many times in a row gets a note in its result.
    pub warn_at: usize,
    /// The same call this many times in a row ends the run.
    pub stop_at: usize,
}

impl Default for LoopLimits {
    fn default() -> Self {
        LoopLimits {
            max_turns: None,
            warn_at: 3,
            stop_at: 6,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    MaxTurns,
    RepeatedCall,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardAction {
    Warned,
    Stopped,
}

/// What a guard did (the `loop_guard` event's fields).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardEvent {
    pub guard: Guard,
    pub action: GuardAction,
    /// The turns of the run, or the calls in a row.
    pub count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For the user.
    pub message: String,
}

type Observer = Arc<dyn Fn(&GuardEvent) + Send + Sync>;

/// A session's guards: their limits, who is told, and why the last run was stopped.
pub struct LoopGuard {
    limits: LoopLimits,
    observer: Mutex<Option<Observer>>,
    stopped: Mutex<Option<GuardEvent>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LoopGuard {
    pub fn new(limits: LoopLimits) -> Self {
        LoopGuard {
            limits,
            observer: Mutex::new(None),
            stopped: Mutex::new(None),
        }
    }

    pub fn limits(&self) -> LoopLimits {
        self.limits
    }

    /// Tells `observer` of every warning and stop (the front end's event).
    pub fn observe(&self, observer: impl Fn(&GuardEvent) + Send + Sync + 'static) {
        *lock(&self.observer) = Some(Arc::new(observer));
    }

    /// Why the run that just ended was stopped by a guard, if it was (and forgets it).
    pub fn take_stop(&self) -> Option<GuardEvent> {
        lock(&self.stopped).take()
    }

    fn tell(&self, guard: Guard, action: GuardAction, count: usize, tool: Option<&str>) {
        let message = match (guard, action, tool.unwrap_or_default()) {
            (Guard::MaxTurns, ..) => format!("Stopped: the run reached its turn limit ({count})."),
            (_, GuardAction::Warned, t) => {
                format!("The model made the same {t} call {count} times in a row.")
            }
            (_, _, t) => {
                format!("Stopped: the model made the same {t} call {count} times in a row.")
            }
        };
        let tool_name = tool.map(str::to_string);
        let event = GuardEvent {
            guard,
            action,
            count,
            tool_name,
            message,
        };
        let observer = lock(&self.observer).clone();
        if let Some(observer) = observer {
            observer(&event);
        }
        if event.action == GuardAction::Stopped {
            *lock(&self.stopped) = Some(event);
        }
    }

    /// The note on the result of a call repeated `warn_at` times or more.
    pub fn after_tool_call_hook(self: &Arc<Self>) -> Option<AfterToolCallHook> {
        let LoopLimits {
            warn_at, stop_at, ..
        } = self.limits;
        if warn_at == 0 && stop_at == 0 {
            return None;
        }
        let guard = self.clone();
        Some(Arc::new(move |ctx: AfterToolCallContext, _cancel| {
            let update = guard.note(&ctx);
            Box::pin(std::future::ready(Ok(update)))
        }))
    }

    fn note(&self, ctx: &AfterToolCallContext) -> Option<AfterToolCallResult> {
        let LoopLimits {
            warn_at, stop_at, ..
        } = self.limits;
        let count = streak(&ctx.context.messages, &ctx.tool_call.id)?;
        let stops = stop_at > 0 && count >= stop_at;
        if !stops && (warn_at == 0 || count < warn_at) {
            return None;
        }
        let name = &ctx.tool_call.name;
        let note = if stops {
            format!(
                "[agent-lsp] You made this exact call ({name} with the same arguments) {count} \
                 times in a row, so the run is stopped here."
            )
        } else {
            self.tell(Guard::RepeatedCall, GuardAction::Warned, count, Some(name));
            format!(
                "[agent-lsp] You made this exact call ({name} with the same arguments) {count} \
                 times in a row. Its result will not change. Do not repeat it: use the result \
                 you already have, change the arguments, use another tool, or answer."
            )
        };
        let mut content = ctx.result.content.clone();
        content.push(ContentBlock::text(note));
        Some(AfterToolCallResult {
            content: Some(content),
            ..Default::default()
        })
    }

    /// Ends the run at `stop_at` calls in a row, or after `max_turns` responses.
    pub fn finish_turn_hook(self: &Arc<Self>) -> Option<FinishTurnHook> {
        let LoopLimits {
            max_turns: limit,
            stop_at,
            ..
        } = self.limits;
        if limit.is_none() && stop_at == 0 {
            return None;
        }
        let turn_limit = limit.map(max_turns);
        let guard = self.clone();
        Some(Arc::new(move |turn, cancel| {
            let guard = guard.clone();
            let turn_limit = turn_limit.clone();
            Box::pin(async move {
                let repeated = (turn.message.tool_calls())
                    .filter_map(|call| Some((streak(&turn.context.messages, &call.id)?, call)))
                    .max_by_key(|(count, _)| *count);
                if let Some((count, call)) = repeated.filter(|(n, _)| stop_at > 0 && *n >= stop_at)
                {
                    let tool = Some(call.name.as_str());
                    guard.tell(Guard::RepeatedCall, GuardAction::Stopped, count, tool);
                    return Ok(Some(TurnDecision::End));
                }
                let Some(turn_limit) = turn_limit else {
                    return Ok(None);
                };
                let wants_more = turn.message.tool_calls().next().is_some();
                let decision = turn_limit(turn, cancel).await?;
                if let (Some(TurnDecision::End), Some(n), true) = (decision, limit, wants_more) {
                    guard.tell(Guard::MaxTurns, GuardAction::Stopped, n, None);
                }
                Ok(decision)
            })
        }))
    }
}

/// Tools whose result changes although the call does not, so a repeated call is no loop:
/// `ask_user`'s answer is the user's each time (and each call waits for them).
const ANSWERS_VARY: [&str; 1] = [crate::tools::ASK_USER];

/// How many calls in a row, ending with the call `id`, had its tool and arguments; `None` when
/// no assistant message in the transcript made that call, or its tool's answers vary.
fn streak(messages: &[AgentMessage], id: &str) -> Option<usize> {
    let mut target: Option<&ToolCall> = None;
    let mut count = 0;
    for message in messages.iter().rev() {
        let calls: Vec<&ToolCall> = match message {
            AgentMessage::User(_) => break,
            AgentMessage::Assistant(a) => a.tool_calls().collect(),
            _ => continue,
        };
        if calls.is_empty() && target.is_some() {
            break;
        }
        for call in calls.into_iter().rev() {
            match target {
                None if call.id == id && ANSWERS_VARY.contains(&call.name.as_str()) => {
                    return None;
                }
                None if call.id == id => {
                    target = Some(call);
                    count = 1;
                }
                None => {}
                Some(t) if t.name == call.name && t.arguments == call.arguments => count += 1,
                Some(_) => return Some(count),
            }
        }
    }
    target.map(|_| count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::{AssistantMessage, ToolResultMessage, UserMessage};
    use serde_json::json;

    fn calls(calls: &[(&str, &str, serde_json::Value)]) -> AgentMessage {
        AgentMessage::from(AssistantMessage {
            content: (calls.iter())
                .map(|(id, name, args)| {
                    ContentBlock::ToolCall(ToolCall {
                        id: id.to_string(),
                        name: name.to_string(),
                        arguments: args.clone(),
                        ..Default::default()
                    })
                })
                .collect(),
            ..Default::default()
        })
    }

    fn result(id: &str) -> AgentMessage {
        AgentMessage::from(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            ..Default::default()
        })
    }

    #[test]
    fn a_streak_counts_equal_calls_back_to_a_user_message_or_a_different_call() {
        let a = json!({"path": "a"});
        let history = vec![
            calls(&[("0", "read", a.clone())]),
            result("0"),
            AgentMessage::from(UserMessage::text("again")),
            calls(&[("1", "read", a.clone())]),
            result("1"),
            calls(&[("2", "read", a.clone()), ("3", "read", a.clone())]),
            result("2"),
            result("3"),
            calls(&[
                ("4", "read", json!({"path": "b"})),
                ("5", "read", a.clone()),
            ]),
        ];
        assert_eq!(streak(&history, "1"), Some(1));
        assert_eq!(streak(&history, "3"), Some(3));
        assert_eq!(streak(&history, "4"), Some(1));
        assert_eq!(streak(&history, "5"), Some(1));
        assert_eq!(streak(&history, "missing"), None);
    }

    #[test]
    fn asking_the_user_the_same_question_again_is_no_streak() {
        let question = json!({"question": "Which database?"});
        let history: Vec<AgentMessage> = (0..8)
            .flat_map(|i| {
                let id = i.to_string();
                [calls(&[(&id, "ask_user", question.clone())]), result(&id)]
            })
            .collect();
        assert_eq!(streak(&history, "7"), None);
    }
}
