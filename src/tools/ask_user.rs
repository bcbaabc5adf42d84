//! `ask_user {question, options?, multiSelect?}`: the model asks the user mid-turn and reads the
//! answer, or that there is none (declined, cancelled, no one to ask). It changes nothing, so it
//! needs no approval; the question goes through the session's front end ([`AskHandle`]).

use serde::Deserialize;
use serde_json::{Value, json};

use super::common::{Call, ToolArgs};
use super::question::{AskHandle, Question, QuestionOption};
use crate::agent::tool::{AgentToolResult, ExecutionMode, ToolError};

/// The tool's name.
pub const ASK_USER: &str = "ask_user";

/// An `ask_user` call's arguments.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskUserArgs {
    question: String,
    options: Option<Vec<QuestionOption>>,
    multi_select: Option<bool>,
}

impl ToolArgs for AskUserArgs {
    const NAME: &str = ASK_USER;
    const DESCRIPTION: &str = "Ask the user a question and wait for the answer. Use it when you \
need a decision or a fact only the user has (which of several approaches to take, a missing \
detail, a preference), not for what you can find out yourself. Offer `options` for a choice; \
the user may still answer in their own words. `multiSelect: true` lets them choose several. The \
result is the user's answer, or says that they gave none, that the question was cancelled, or \
that no one can answer here (then decide yourself, and say what you assumed).";
    type State = AskHandle;
    /// One question at a time: a batch's questions are asked in turn.
    const MODE: Option<ExecutionMode> = Some(ExecutionMode::Sequential);

    async fn run(self, asker: AskHandle, call: Call) -> Result<AgentToolResult, ToolError> {
        let question = self.into_question(call.id)?;
        let answer = asker.ask(&question, &call.cancel).await;
        let mut result = AgentToolResult::text(answer.text_for_model(question.multi_select));
        result.details = Some(answer.details());
        Ok(result)
    }

    fn parameters(_: &AskHandle) -> Value {
        json!({"type": "object", "properties": {
            "question": {"type": "string", "description": "The question, complete in itself"},
            "options": {"type": "array", "description": "Choices to offer (the user may still answer in their own words)",
                "items": {"type": "object", "properties": {
                    "label": {"type": "string", "description": "The choice, short"},
                    "description": {"type": "string", "description": "What choosing it means"}
                }, "required": ["label"]}},
            "multiSelect": {"type": "boolean", "description": "Several options may be chosen (default: false)"}
        }, "required": ["question"]})
    }
}

impl AskUserArgs {
    /// The question as the front ends ask it; empty or repeated labels are refused.
    fn into_question(self, tool_call_id: String) -> Result<Question, ToolError> {
        if self.question.trim().is_empty() {
            return Err(ToolError::new("The question is empty."));
        }
        let options = self.options.unwrap_or_default();
        for (i, option) in options.iter().enumerate() {
            if option.label.trim().is_empty() {
                return Err(ToolError::new(format!(
                    "Option {} has an empty label.",
                    i + 1
                )));
            }
            if options[..i].iter().any(|o| o.label == option.label) {
                return Err(ToolError::new(format!(
                    "Option {:?} is offered twice: labels must differ.",
                    option.label
                )));
            }
        }
        Ok(Question {
            text: self.question,
            multi_select: self.multi_select.unwrap_or(false) && !options.is_empty(),
            options,
            allow_text: true,
            tool_call_id: Some(tool_call_id),
            mcp_server: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_util::future::BoxFuture;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::agent::tool::{AgentTool, ToolInput};
    use crate::tools::question::{UserAnswer, UserChannel};
    use crate::tools::{TypedTool, assert_args_match_schema};

    /// Answers every question with its first option, and keeps what it was asked.
    struct FirstOption(std::sync::Mutex<Vec<Question>>);

    impl UserChannel for FirstOption {
        fn ask<'a>(
            &'a self,
            question: &'a Question,
            _cancel: &'a CancellationToken,
        ) -> BoxFuture<'a, UserAnswer> {
            self.0.lock().unwrap().push(question.clone());
            let selected = question.options.iter().take(1).map(|o| o.label.clone());
            Box::pin(std::future::ready(UserAnswer::Answered {
                selected: selected.collect(),
                text: None,
            }))
        }
    }

    #[test]
    fn the_schema_declares_what_the_tool_reads() {
        assert_args_match_schema::<AskUserArgs>(&AskUserArgs::parameters(&AskHandle::default()));
    }

    #[tokio::test]
    async fn the_question_goes_through_the_handle_and_the_answer_comes_back() {
        let channel = Arc::new(FirstOption(Default::default()));
        let handle = AskHandle::default();
        handle.connect(channel.clone());
        let tool = TypedTool::<AskUserArgs>::new(handle);
        let args = json!({"question": "Which?", "options": [{"label": "x", "description": "the x"}, {"label": "y"}]});
        let result = tool.execute(ToolInput::new("c1", args)).await.unwrap();
        assert_eq!(result.content[0].as_text(), Some("The user answered: x"));
        assert_eq!(
            result.details,
            Some(json!({"outcome": "answered", "answer": ["x"]}))
        );
        let asked = channel.0.lock().unwrap()[0].clone();
        assert_eq!(asked.tool_call_id.as_deref(), Some("c1"));
        assert!(asked.allow_text && !asked.multi_select);
        assert_eq!(asked.options[0].description.as_deref(), Some("the x"));
        let twice = json!({"question": "Q", "options": [{"label": "x"}, {"label": "x"}]});
        let refused = tool.execute(ToolInput::new("c2", twice)).await.unwrap_err();
        assert!(refused.message.contains("offered twice"), "{refused}");
    }
}
