//! A question for the user and its answer: what the `ask_user` tool and an MCP server's
//! elicitation put to the session's front end, and the one way they reach it.
//!
//! The tools exist before the session does (they are part of what it is assembled from), so a
//! tool holds an [`AskHandle`] that the session connects to its front end once it is created
//! (`core::session::Session::create`): the front end's `View` is the [`UserChannel`]. A handle
//! never connected, or whose session is gone, answers that no one can answer.

use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// One choice of a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl QuestionOption {
    pub fn new(label: impl Into<String>) -> QuestionOption {
        QuestionOption {
            label: label.into(),
            description: None,
        }
    }
}

/// What the user is asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Question {
    pub text: String,
    /// The choices (none: a free-text question).
    pub options: Vec<QuestionOption>,
    /// Several options may be chosen.
    pub multi_select: bool,
    /// A typed answer is welcome (besides or instead of the options).
    pub allow_text: bool,
    /// The tool call that asks (`ask_user`'s own, or the MCP tool call whose server asks).
    pub tool_call_id: Option<String>,
    /// The MCP server whose elicitation this question is part of.
    pub mcp_server: Option<String>,
}

/// The user's answer, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserAnswer {
    /// Labels of the chosen options and/or a typed answer.
    Answered {
        selected: Vec<String>,
        text: Option<String>,
    },
    /// The user chose not to answer.
    Declined,
    /// The question was withdrawn (an abort, a timeout, a dismissed dialog, a broken reply).
    Cancelled(Option<String>),
    /// No one can be asked here (a headless run, a client without a question channel).
    Unavailable(String),
}

impl Question {
    /// `answer` as this question admits it: options by their labels (one unless
    /// `multi_select`), text only where allowed. An answer with neither is no answer; one naming
    /// what the question does not offer is cancelled, saying so.
    pub fn check(&self, answer: UserAnswer) -> UserAnswer {
        let UserAnswer::Answered { selected, text } = answer else {
            return answer;
        };
        let text = text.filter(|t| !t.trim().is_empty());
        if selected.is_empty() && text.is_none() {
            return UserAnswer::Declined;
        }
        let malformed =
            |why: String| UserAnswer::Cancelled(Some(format!("a malformed answer: {why}")));
        if let Some(unknown) = selected
            .iter()
            .find(|s| !self.options.iter().any(|o| &o.label == *s))
        {
            return malformed(format!("{unknown:?} is not one of the options"));
        }
        if selected.len() > 1 && !self.multi_select {
            return malformed("several options chosen where one was asked for".into());
        }
        if text.is_some() && !self.allow_text {
            return malformed("a typed answer where only the options were offered".into());
        }
        UserAnswer::Answered { selected, text }
    }
}

impl UserAnswer {
    /// `answered`, `declined`, `cancelled` or `unavailable`.
    pub fn outcome(&self) -> &'static str {
        match self {
            UserAnswer::Answered { .. } => "answered",
            UserAnswer::Declined => "declined",
            UserAnswer::Cancelled(_) => "cancelled",
            UserAnswer::Unavailable(_) => "unavailable",
        }
    }

    /// What the model reads.
    pub fn text_for_model(&self, multi_select: bool) -> String {
        match self {
            UserAnswer::Answered { selected, text } => {
                let mut lines = Vec::new();
                match (selected.as_slice(), multi_select) {
                    ([], _) => {}
                    ([one], false) => lines.push(format!("The user answered: {one}")),
                    (many, _) => lines.push(format!("The user selected: {}", many.join(", "))),
                }
                match (text, lines.is_empty()) {
                    (Some(text), true) => lines.push(format!("The user answered: {text}")),
                    (Some(text), false) => lines.push(format!("The user added: {text}")),
                    (None, _) => {}
                }
                lines.join("\n")
            }
            UserAnswer::Declined => "The user gave no answer.".into(),
            UserAnswer::Cancelled(None) => "The question was cancelled.".into(),
            UserAnswer::Cancelled(Some(why)) => format!("The question was cancelled ({why})."),
            UserAnswer::Unavailable(why) => format!("No one can answer: {why}"),
        }
    }

    /// The tool result's `details`: `{outcome, answer?, text?, reason?}`.
    pub fn details(&self) -> Value {
        let mut details = Map::new();
        details.insert("outcome".into(), self.outcome().into());
        match self {
            UserAnswer::Answered { selected, text } => {
                if !selected.is_empty() {
                    details.insert("answer".into(), selected.clone().into());
                }
                if let Some(text) = text {
                    details.insert("text".into(), text.clone().into());
                }
            }
            UserAnswer::Cancelled(Some(why)) | UserAnswer::Unavailable(why) => {
                details.insert("reason".into(), why.clone().into());
            }
            UserAnswer::Declined | UserAnswer::Cancelled(None) => {}
        }
        Value::Object(details)
    }
}

/// How a question reaches the user: the session's front end.
pub trait UserChannel: Send + Sync {
    /// Asks `question`; `cancel` (the run's abort, the end of the call that asks) withdraws it.
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, UserAnswer>;
}

/// A tool's way to the session's [`UserChannel`], connected once the session exists.
#[derive(Clone, Default)]
pub struct AskHandle(Arc<OnceLock<Arc<dyn UserChannel>>>);

impl AskHandle {
    /// Connects the channel (the first connection stays).
    pub fn connect(&self, channel: Arc<dyn UserChannel>) {
        let _ = self.0.set(channel);
    }

    /// Asks through the connected channel; the answer is checked against the question.
    pub async fn ask(&self, question: &Question, cancel: &CancellationToken) -> UserAnswer {
        let Some(channel) = self.0.get() else {
            return UserAnswer::Unavailable("this session has no front end to ask through".into());
        };
        if cancel.is_cancelled() {
            return UserAnswer::Cancelled(None);
        }
        let answer = channel.ask(question, cancel).await;
        question.check(answer)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// `Which?` with the options `a` and `b` (also the CLI prompt's tests' question).
    pub(crate) fn choice(multi_select: bool, allow_text: bool) -> Question {
        Question {
            text: "Which?".into(),
            options: vec![QuestionOption::new("a"), QuestionOption::new("b")],
            multi_select,
            allow_text,
            ..Question::default()
        }
    }

    fn answered(selected: &[&str], text: Option<&str>) -> UserAnswer {
        UserAnswer::Answered {
            selected: selected.iter().map(|s| s.to_string()).collect(),
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn answers_are_held_to_what_the_question_offers() {
        let single = choice(false, true);
        assert_eq!(single.check(answered(&["a"], None)), answered(&["a"], None));
        assert_eq!(
            single.check(answered(&[], Some("  "))),
            UserAnswer::Declined
        );
        let unknown = single.check(answered(&["c"], None));
        assert!(matches!(&unknown, UserAnswer::Cancelled(Some(w)) if w.contains("\"c\"")));
        assert!(matches!(
            single.check(answered(&["a", "b"], None)),
            UserAnswer::Cancelled(Some(_))
        ));
        assert!(matches!(
            choice(true, false).check(answered(&["a"], Some("x"))),
            UserAnswer::Cancelled(Some(_))
        ));
        let multi = choice(true, false).check(answered(&["a", "b"], None));
        assert_eq!(multi, answered(&["a", "b"], None));
        assert_eq!(
            single.check(UserAnswer::Unavailable("x".into())),
            UserAnswer::Unavailable("x".into())
        );
    }

    #[test]
    fn the_model_reads_each_outcome_in_its_words() {
        let cases = [
            (answered(&["a"], None), false, "The user answered: a"),
            (answered(&["a", "b"], None), true, "The user selected: a, b"),
            (
                answered(&[], Some("later")),
                false,
                "The user answered: later",
            ),
            (
                answered(&["a"], Some("and b")),
                true,
                "The user selected: a\nThe user added: and b",
            ),
            (UserAnswer::Declined, false, "The user gave no answer."),
            (
                UserAnswer::Cancelled(None),
                false,
                "The question was cancelled.",
            ),
            (
                UserAnswer::Cancelled(Some("no answer within 2 s".into())),
                false,
                "The question was cancelled (no answer within 2 s).",
            ),
            (
                UserAnswer::Unavailable("stdin is not a terminal".into()),
                false,
                "No one can answer: stdin is not a terminal",
            ),
        ];
        for (answer, multi, text) in cases {
            assert_eq!(answer.text_for_model(multi), text, "{answer:?}");
        }
        assert_eq!(
            answered(&["a"], Some("t")).details(),
            json!({"outcome": "answered", "answer": ["a"], "text": "t"})
        );
        assert_eq!(
            UserAnswer::Declined.details(),
            json!({"outcome": "declined"})
        );
        assert_eq!(
            UserAnswer::Unavailable("why".into()).details(),
            json!({"outcome": "unavailable", "reason": "why"})
        );
    }

    #[tokio::test]
    async fn an_unconnected_handle_says_no_one_can_answer() {
        let answer = AskHandle::default()
            .ask(&choice(false, false), &CancellationToken::new())
            .await;
        assert!(matches!(answer, UserAnswer::Unavailable(_)), "{answer:?}");
    }
}
