//! A project-trust question (its `.mcp.json`, hooks or permission rules) as ACP can ask one:
//! ACP asks only about tool calls, so the question is a tool call of its own, announced pending
//! with what it would allow as its content, then `session/request_permission`, then ended with
//! the line of the answer chosen. `trust.rs`, `hooks.rs` and `rules_trust.rs` word their own;
//! the first two are yes-or-no questions, asked here once for both (`ask_yes_or_no`).

use acp::PermissionOptionKind as Kind;
use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::acp::session::AcpSession;
use crate::acp::updates::text_block;
use crate::core::{SessionHooks, SessionTools};
use crate::mcp::trust::TrustQuestion;
use crate::rpc::outgoing::RequestError;

/// One answer a trust question offers, and the line its tool call ends with after it.
pub(super) struct Answer {
    pub id: &'static str,
    pub label: &'static str,
    pub kind: Kind,
    /// Said as the call ends: `completed` when the answer allows, `failed` otherwise.
    pub then: &'static str,
}

impl Answer {
    pub const fn new(
        id: &'static str,
        label: &'static str,
        kind: Kind,
        then: &'static str,
    ) -> Answer {
        Answer {
            id,
            label,
            kind,
            then,
        }
    }

    fn allows(&self) -> bool {
        matches!(self.kind, Kind::AllowOnce | Kind::AllowAlways)
    }
}

/// A project-trust question as a tool call: shown pending with `text` as its content.
pub(super) struct TrustCall {
    pub id: String,
    pub kind: acp::ToolKind,
    pub title: String,
    pub text: String,
    pub input: Value,
}

impl TrustCall {
    /// A call asking `question` whose id is `prefix` and a fresh uuid, its text `intro` above
    /// the question's listing.
    pub fn new(
        prefix: &str,
        kind: acp::ToolKind,
        intro: &str,
        question: TrustQuestion,
    ) -> TrustCall {
        TrustCall {
            id: format!("{prefix}-{}", uuid::Uuid::now_v7().simple()),
            kind,
            title: question.title,
            text: format!("{intro}\n\n{}", question.listing),
            input: question.args,
        }
    }
}

/// Announces `call` and asks `session/request_permission` with `answers` as its options, each
/// with what it decides: the one chosen, or why there is none.
pub(super) async fn ask<'a, T>(
    session: &AcpSession,
    call: &TrustCall,
    answers: &'a [(Answer, T)],
    cancel: &CancellationToken,
) -> Result<&'a (Answer, T), String> {
    let content = vec![acp::ToolCallContent::Content(acp::Content::new(
        text_block(&call.text),
    ))];
    let announced = acp::ToolCall::new(call.id.clone(), call.title.clone())
        .kind(call.kind)
        .status(acp::ToolCallStatus::Pending)
        .content(content.clone())
        .raw_input(call.input.clone());
    session.notify(acp::SessionUpdate::ToolCall(announced));
    let fields = acp::ToolCallUpdateFields::new()
        .title(call.title.clone())
        .kind(call.kind)
        .status(acp::ToolCallStatus::Pending)
        .content(content)
        .raw_input(call.input.clone());
    let update = acp::ToolCallUpdate::new(call.id.clone(), fields);
    let options = (answers.iter())
        .map(|(a, _)| acp::PermissionOption::new(a.id, a.label, a.kind))
        .collect();
    let chosen = match session.request_permission(update, options, cancel).await {
        Ok(response) => match response.outcome {
            acp::RequestPermissionOutcome::Selected(selected) => selected.option_id.0,
            _ => return Err("cancelled".into()),
        },
        Err(RequestError::Cancelled) => return Err("the turn was cancelled".into()),
        Err(e) => return Err(e.to_string()),
    };
    (answers.iter())
        .find(|(a, _)| *a.id == *chosen)
        .ok_or_else(|| format!("unknown option {chosen:?}"))
}

/// Ends the question's tool call `id` with the line of the answer chosen, or `unanswered`.
pub(super) fn settle(
    session: &AcpSession,
    id: String,
    answer: Result<&Answer, String>,
    unanswered: &str,
) {
    let (status, text) = match answer {
        Ok(a) if a.allows() => (acp::ToolCallStatus::Completed, a.then),
        Ok(a) => (acp::ToolCallStatus::Failed, a.then),
        Err(_) => (acp::ToolCallStatus::Failed, unanswered),
    };
    let fields = acp::ToolCallUpdateFields::new()
        .status(status)
        .content(vec![acp::ToolCallContent::Content(acp::Content::new(
            text_block(text),
        ))]);
    session.notify(acp::SessionUpdate::ToolCallUpdate(
        acp::ToolCallUpdate::new(id, fields),
    ));
}

/// How a yes-or-no trust question is worded: both answers are remembered for the project.
pub(super) struct YesOrNo {
    /// The start of the call's id.
    pub prefix: &'static str,
    /// What the content says above the listing.
    pub intro: &'static str,
    /// The label of the answer that allows, and what follows it.
    pub yes: (&'static str, &'static str),
    /// The label of the answer that refuses, and what follows it.
    pub no: (&'static str, &'static str),
    pub unanswered: &'static str,
    /// Logged when no answer came.
    pub stays_off: &'static str,
}

impl YesOrNo {
    /// The two answers, each with whether it allows.
    fn answers(&self) -> [(Answer, bool); 2] {
        let ((yes, then_yes), (no, then_no)) = (self.yes, self.no);
        [
            (
                Answer::new("allow_always", yes, Kind::AllowAlways, then_yes),
                true,
            ),
            (
                Answer::new("reject_always", no, Kind::RejectAlways, then_no),
                false,
            ),
        ]
    }
}

/// What a yes-or-no trust question is about (the project's MCP servers, its hooks): one
/// question open at a time, the answer remembered.
pub(super) trait YesOrNoTrust {
    /// Whether to ask: it waits for trust and no answer is remembered.
    fn needs(&self) -> bool;
    /// Claims the one open question: `false` when one is open already.
    fn begin(&self) -> bool;
    fn end(&self);
    fn question(&self) -> TrustQuestion;
    fn decide(&self, allowed: bool);
}

/// The servers and the hooks word their questions alike and keep them alike.
macro_rules! yes_or_no_trust {
    ($($about:ty),*) => {$(
        impl YesOrNoTrust for $about {
            fn needs(&self) -> bool {
                self.needs_trust()
            }
            fn begin(&self) -> bool {
                self.begin_trust_question()
            }
            fn end(&self) {
                self.end_trust_question()
            }
            fn question(&self) -> TrustQuestion {
                self.trust_question()
            }
            fn decide(&self, allowed: bool) {
                self.decide_trust(allowed)
            }
        }
    )*};
}

yes_or_no_trust!(SessionTools, SessionHooks);

/// Asks `words` about `about` when it needs the user's trust.
pub(super) async fn ask_if_needed(
    session: &AcpSession,
    about: &impl YesOrNoTrust,
    words: &YesOrNo,
    cancel: &CancellationToken,
) {
    if about.needs() {
        ask_yes_or_no(session, about, words, cancel).await;
    }
}

/// Asks `words` about `about` (nothing while a question about it is open), acts on the answer
/// and ends the call. No answer (a cancelled turn, an error) decides nothing, so the next turn
/// asks again.
pub(super) async fn ask_yes_or_no(
    session: &AcpSession,
    about: &impl YesOrNoTrust,
    words: &YesOrNo,
    cancel: &CancellationToken,
) {
    if !about.begin() {
        return;
    }
    let kind = acp::ToolKind::Execute;
    let call = TrustCall::new(words.prefix, kind, words.intro, about.question());
    let answers = words.answers();
    let answer = ask(session, &call, &answers, cancel).await;
    match answer {
        Ok((_, allowed)) => about.decide(*allowed),
        Err(ref why) => tracing::info!(session = session.id, why, "{}", words.stays_off),
    }
    about.end();
    let answer = answer.map(|(answer, _)| answer);
    settle(session, call.id, answer, words.unanswered);
}
