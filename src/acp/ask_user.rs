//! ACP's way to put a question to the user (the `ask_user` tool, MCP elicitations).
//!
//! A client that advertises form elicitation (`clientCapabilities.elicitation.form`) gets
//! `elicitation/create`: a form with the options as one choice field (`answer`: a titled
//! single- or multi-select) and, where a typed answer is welcome, a `text` field, scoped to the
//! session and the asking tool call. Otherwise a question with options is asked through
//! `session/request_permission`: one `allow_once` option per choice and a `reject_once` that
//! gives no answer (one choice only; no typed answer). A typed-only question to a client with
//! neither has no one to answer it.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use crate::acp::session::{ASK_TIMEOUT, AcpSession};
use crate::acp::updates::text_block;
use crate::rpc::outgoing::RequestError;
use crate::tools::{Question, UserAnswer};

/// The form's choice field and its typed-answer field.
const ANSWER: &str = "answer";
const TEXT: &str = "text";
/// The permission option that gives no answer.
const NO_ANSWER: &str = "no_answer";

/// Asks `question` of the session's user; `cancel` (the turn's cancel) withdraws it.
pub async fn ask(
    session: &Arc<AcpSession>,
    question: &Question,
    cancel: &CancellationToken,
) -> UserAnswer {
    if session.view.link.caps.elicitation_form {
        elicit(session, question, cancel).await
    } else if !question.options.is_empty() {
        ask_permission(session, question, cancel).await
    } else {
        UserAnswer::Unavailable(
            "the client takes no typed answers (it does not advertise \
             clientCapabilities.elicitation.form), and the question has no options to choose"
                .into(),
        )
    }
}

async fn elicit(
    session: &Arc<AcpSession>,
    question: &Question,
    cancel: &CancellationToken,
) -> UserAnswer {
    let scope = acp::ElicitationSessionScope::new(session.id.clone())
        .tool_call_id(question.tool_call_id.clone().map(acp::ToolCallId::new));
    let mode = acp::ElicitationFormMode::new(scope, form(question));
    let request = acp::CreateElicitationRequest::new(mode, question.text.clone());
    let reply: Result<acp::CreateElicitationResponse, RequestError> = (session.view.out)
        .request("elicitation/create", request, ASK_TIMEOUT, cancel)
        .await;
    match reply.map(|r| r.action) {
        Ok(acp::ElicitationAction::Accept(accepted)) => answered(accepted.content),
        Ok(acp::ElicitationAction::Decline) => UserAnswer::Declined,
        Ok(acp::ElicitationAction::Cancel) => UserAnswer::Cancelled(None),
        Ok(other) => UserAnswer::Cancelled(Some(format!("an unknown action {other:?}"))),
        Err(e) => failed(e),
    }
}

/// The form: the choice field (when there are options) and the typed-answer field (when one is
/// welcome); what must be filled in is required.
fn form(question: &Question) -> acp::ElicitationSchema {
    let mut schema = acp::ElicitationSchema::new();
    let has_options = !question.options.is_empty();
    if has_options {
        let options: Vec<acp::EnumOption> = (question.options.iter())
            .map(|o| acp::EnumOption::new(&o.label, &o.label).description(o.description.clone()))
            .collect();
        let field: acp::ElicitationPropertySchema = match question.multi_select {
            true => acp::MultiSelectPropertySchema::titled(options)
                .title("Choose any")
                .into(),
            false => acp::StringPropertySchema::new()
                .one_of(options)
                .title("Choose one")
                .into(),
        };
        schema.properties.insert(ANSWER.into(), field);
    }
    if question.allow_text {
        let title = match has_options {
            true => "Or answer in your own words",
            false => "Your answer",
        };
        let field = acp::StringPropertySchema::new().title(title.to_owned());
        schema.properties.insert(TEXT.into(), field.into());
    }
    schema.required = match (has_options, question.allow_text) {
        (true, false) => Some(vec![ANSWER.into()]),
        (false, _) => Some(vec![TEXT.into()]),
        (true, true) => None,
    };
    schema
}

/// An accepted form's answer: the chosen option labels and the typed text.
fn answered(content: Option<BTreeMap<String, acp::ElicitationContentValue>>) -> UserAnswer {
    let mut content = content.unwrap_or_default();
    let selected = match content.remove(ANSWER) {
        Some(acp::ElicitationContentValue::String(one)) => vec![one],
        Some(acp::ElicitationContentValue::StringArray(many)) => many,
        Some(other) => {
            return UserAnswer::Cancelled(Some(format!("a malformed answer: {other:?}")));
        }
        None => Vec::new(),
    };
    let text = match content.remove(TEXT) {
        Some(acp::ElicitationContentValue::String(text)) => Some(text),
        _ => None,
    };
    UserAnswer::Answered { selected, text }
}

/// A choice asked as a permission: the question in the tool call's content, one option each.
async fn ask_permission(
    session: &Arc<AcpSession>,
    question: &Question,
    cancel: &CancellationToken,
) -> UserAnswer {
    let id = (question.tool_call_id.clone())
        .unwrap_or_else(|| format!("ask-{}", crate::core::session::new_id()));
    let mut text = question.text.clone();
    for option in &question.options {
        if let Some(description) = &option.description {
            text.push_str(&format!("\n{}: {description}", option.label));
        }
    }
    let content = vec![acp::ToolCallContent::Content(acp::Content::new(
        text_block(&text),
    ))];
    let call = acp::ToolCallUpdate::new(id, acp::ToolCallUpdateFields::new().content(content));
    let mut options: Vec<acp::PermissionOption> = (question.options.iter().enumerate())
        .map(|(i, o)| {
            let kind = acp::PermissionOptionKind::AllowOnce;
            acp::PermissionOption::new(option_id(i), o.label.clone(), kind)
        })
        .collect();
    let no_answer = acp::PermissionOptionKind::RejectOnce;
    options.push(acp::PermissionOption::new(
        NO_ANSWER,
        "Don't answer",
        no_answer,
    ));
    let reply = session.request_permission(call, options, cancel).await;
    let selected = match reply.map(|r| r.outcome) {
        Ok(acp::RequestPermissionOutcome::Selected(selected)) => selected.option_id.0,
        Ok(_) => return UserAnswer::Cancelled(None),
        Err(e) => return failed(e),
    };
    if &*selected == NO_ANSWER {
        return UserAnswer::Declined;
    }
    let chosen = (question.options.iter().enumerate()).find(|(i, _)| option_id(*i) == *selected);
    match chosen {
        Some((_, option)) => UserAnswer::Answered {
            selected: vec![option.label.clone()],
            text: None,
        },
        None => UserAnswer::Cancelled(Some(format!("an unknown option {selected:?}"))),
    }
}

fn option_id(index: usize) -> String {
    format!("option_{}", index + 1)
}

fn failed(error: RequestError) -> UserAnswer {
    UserAnswer::Cancelled(match error {
        RequestError::Cancelled => None,
        other => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::QuestionOption;

    #[test]
    fn the_form_has_a_choice_field_and_a_typed_one_as_the_question_needs() {
        let question = Question {
            text: "Which?".into(),
            options: vec![QuestionOption {
                label: "a".into(),
                description: Some("the a".into()),
            }],
            allow_text: true,
            ..Question::default()
        };
        let schema = serde_json::to_value(form(&question)).unwrap();
        assert_eq!(
            schema["properties"][ANSWER],
            json!({"type": "string", "title": "Choose one",
                   "oneOf": [{"const": "a", "title": "a", "description": "the a"}]})
        );
        assert_eq!(schema["properties"][TEXT]["type"], "string");
        assert!(schema.get("required").is_none(), "{schema}");
        let typed = Question {
            allow_text: true,
            ..Question::default()
        };
        let schema = serde_json::to_value(form(&typed)).unwrap();
        assert_eq!(schema["required"], json!([TEXT]));
        assert!(schema["properties"].get(ANSWER).is_none());
    }
}
