//! An MCP server's `elicitation/create`, answered by the user: form mode, field by field, through
//! the session whose tool call to that server is in flight.
//!
//! A server connection is shared by the sessions of a connection (`hub.rs`), and a request from
//! the server names no tool call on stdio, so each call registers its caller
//! ([`InFlight::enter`]) while it runs. Over streamable HTTP a request that arrives on the
//! response stream of a call belongs to that call; otherwise the newest call's session asks.
//! With no call in flight, nobody is asked and the request is declined, saying why in `_meta`.
//!
//! Each field of the flat schema is one question: an enum's values (or titles) and a boolean's
//! Yes/No are options, a string, number or integer is typed; a typed value is converted and
//! checked against the field's schema (`jsonschema`, formats included) and asked again when it
//! does not fit. The server's message leads the first question. An unanswered optional field
//! takes its `default`, else is left out; an unanswered required field declines the request;
//! any cancel cancels it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, RequestId,
};
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::tools::{AskHandle, Question, QuestionOption, UserAnswer};

/// Typed answers that do not fit are asked again at most this often.
const ATTEMPTS: usize = 3;
/// Where the reason for a decline goes in the result's `_meta`.
const REASON_KEY: &str = "agent-lsp/reason";

/// The session that calls a tool: its way to the user, and the call's id.
#[derive(Clone)]
pub struct Caller {
    pub ask: AskHandle,
    pub tool_call_id: String,
}

struct Entry {
    id: u64,
    /// The `tools/call` request, once sent.
    request: Option<RequestId>,
    caller: Caller,
    /// Cancelled when the call ends (however it ends) or its run is aborted.
    ends: CancellationToken,
}

/// The tool calls in flight on one server, oldest first.
#[derive(Clone, Default)]
pub struct InFlight {
    calls: Arc<Mutex<Vec<Entry>>>,
    next: Arc<AtomicU64>,
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a call until the guard drops; `cancel` (the run's abort) ends its questions.
    pub fn enter(&self, caller: Caller, cancel: &CancellationToken) -> CallGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let ends = cancel.child_token();
        self.lock().push(Entry {
            id,
            request: None,
            caller,
            ends: ends.clone(),
        });
        CallGuard {
            calls: self.clone(),
            id,
            ends,
        }
    }

    /// The call a server request belongs to: the one whose response stream it came on
    /// (`origin`), else the newest.
    fn caller_for(&self, origin: Option<&RequestId>) -> Option<(Caller, CancellationToken)> {
        let calls = self.lock();
        let entry = (origin.and_then(|o| calls.iter().find(|e| e.request.as_ref() == Some(o))))
            .or(calls.last())?;
        Some((entry.caller.clone(), entry.ends.clone()))
    }
}

/// A call's registration: dropped as the call ends, withdrawing its open questions.
pub struct CallGuard {
    calls: InFlight,
    id: u64,
    ends: CancellationToken,
}

impl CallGuard {
    /// The call's `tools/call` request went out under `request`.
    pub fn sent(&self, request: RequestId) {
        let mut calls = self.calls.lock();
        if let Some(entry) = calls.iter_mut().find(|e| e.id == self.id) {
            entry.request = Some(request);
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.ends.cancel();
        self.calls.lock().retain(|e| e.id != self.id);
    }
}

/// Answers `elicitation/create` from `server`; `origin` is the call on whose response stream it
/// came, `withdrawn` the server's own cancellation.
pub async fn answer(
    calls: &InFlight,
    server: &str,
    request: ElicitRequestParams,
    origin: Option<&RequestId>,
    withdrawn: &CancellationToken,
) -> ElicitResult {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = request
    else {
        return declined("agent-lsp answers form elicitations only, not URL ones".into());
    };
    let Some((caller, ends)) = calls.caller_for(origin) else {
        let why = format!(
            "no tool call to the MCP server {server} is running, so there is no session to ask"
        );
        return declined(why);
    };
    let cancel = ends.child_token();
    let form = Form {
        caller: &caller,
        server,
        message: &message,
        schema: &requested_schema,
    };
    // The server's cancellation withdraws the questions too; the watch never ends on its own.
    let watch = async {
        withdrawn.cancelled().await;
        cancel.cancel();
        std::future::pending::<()>().await
    };
    tokio::select! {
        result = form.ask(&cancel) => result,
        () = watch => unreachable!("the watch never ends"),
    }
}

fn declined(why: String) -> ElicitResult {
    tracing::info!(%why, "declining an MCP elicitation");
    let mut meta = rmcp::model::MetaObject::new();
    meta.0.insert(REASON_KEY.into(), why.into());
    ElicitResult::new(ElicitationAction::Decline).with_meta(meta)
}

/// One elicitation being asked.
struct Form<'a> {
    caller: &'a Caller,
    server: &'a str,
    message: &'a str,
    schema: &'a ElicitationSchema,
}

/// What became of one field.
enum Outcome {
    Value(Value),
    Skipped,
    Stop(ElicitResult),
}

impl Form<'_> {
    async fn ask(&self, cancel: &CancellationToken) -> ElicitResult {
        let names = (self.schema.property_order.clone())
            .unwrap_or_else(|| self.schema.properties.keys().cloned().collect());
        let required = self.schema.required.clone().unwrap_or_default();
        let mut content = Map::new();
        for (i, name) in names.iter().enumerate() {
            let Some(schema) = self.schema.properties.get(name) else {
                continue;
            };
            let schema = serde_json::to_value(schema).unwrap_or_default();
            let field = FieldQuestion::new(name, schema, required.contains(name));
            let lead = (i == 0).then_some(self.message);
            match self.ask_field(&field, lead, cancel).await {
                Outcome::Value(value) => drop(content.insert(name.clone(), value)),
                Outcome::Skipped => {}
                Outcome::Stop(result) => return result,
            }
        }
        ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
    }

    async fn ask_field(
        &self,
        field: &FieldQuestion,
        lead: Option<&str>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let mut problem: Option<String> = None;
        for _ in 0..ATTEMPTS {
            let question = self.question(field, lead, problem.as_deref());
            match self.caller.ask.ask(&question, cancel).await {
                UserAnswer::Answered { selected, text } => match field.value(&selected, text) {
                    Ok(value) => return Outcome::Value(value),
                    Err(why) => problem = Some(why),
                },
                UserAnswer::Declined if field.required => {
                    return Outcome::Stop(ElicitResult::new(ElicitationAction::Decline));
                }
                UserAnswer::Declined => {
                    return match field.default() {
                        Some(value) => Outcome::Value(value),
                        None => Outcome::Skipped,
                    };
                }
                UserAnswer::Cancelled(_) => {
                    return Outcome::Stop(ElicitResult::new(ElicitationAction::Cancel));
                }
                UserAnswer::Unavailable(why) => return Outcome::Stop(declined(why)),
            }
        }
        tracing::info!(
            field = field.name,
            "no fitting answer: the elicitation is cancelled"
        );
        Outcome::Stop(ElicitResult::new(ElicitationAction::Cancel))
    }

    fn question(
        &self,
        field: &FieldQuestion,
        lead: Option<&str>,
        problem: Option<&str>,
    ) -> Question {
        let mut text = String::new();
        if let Some(lead) = lead {
            text.push_str(lead);
            text.push_str("\n\n");
        }
        if let Some(problem) = problem {
            text.push_str(&format!("{problem}. Again: "));
        }
        text.push_str(&field.describe());
        Question {
            text,
            options: field.choices.iter().map(|c| c.option.clone()).collect(),
            multi_select: field.multi,
            allow_text: field.choices.is_empty(),
            tool_call_id: Some(self.caller.tool_call_id.clone()),
            mcp_server: Some(self.server.to_owned()),
        }
    }
}

/// A field's schema as far as asking goes (MCP's restricted schema: primitives and enums).
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct FieldSchema {
    #[serde(rename = "type")]
    kind: String,
    title: Option<String>,
    description: Option<String>,
    #[serde(rename = "enum")]
    values: Option<Vec<String>>,
    enum_names: Option<Vec<String>>,
    one_of: Option<Vec<Titled>>,
    items: Option<Items>,
    default: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Items {
    #[serde(rename = "enum")]
    values: Option<Vec<String>>,
    #[serde(alias = "oneOf")]
    any_of: Option<Vec<Titled>>,
}

#[derive(Deserialize)]
struct Titled {
    #[serde(rename = "const")]
    value: String,
    title: Option<String>,
}

/// One option and the value it stands for.
struct Choice {
    option: QuestionOption,
    value: Value,
}

/// One field, ready to be asked.
struct FieldQuestion {
    name: String,
    required: bool,
    multi: bool,
    choices: Vec<Choice>,
    parsed: FieldSchema,
    /// The field's own schema, to check a typed value against.
    schema: Value,
}

impl FieldQuestion {
    fn new(name: &str, schema: Value, required: bool) -> FieldQuestion {
        let parsed: FieldSchema = serde_json::from_value(schema.clone()).unwrap_or_default();
        let multi = parsed.kind == "array";
        let choices = match parsed.kind.as_str() {
            "boolean" => vec![choice("Yes", true.into()), choice("No", false.into())],
            "array" => parsed.items.as_ref().map_or_else(Vec::new, |items| {
                choices(items.values.as_deref(), None, items.any_of.as_deref())
            }),
            _ => choices(
                parsed.values.as_deref(),
                parsed.enum_names.as_deref(),
                parsed.one_of.as_deref(),
            ),
        };
        FieldQuestion {
            name: name.to_owned(),
            required,
            multi,
            choices,
            parsed,
            schema,
        }
    }

    /// `Title: description`, then what an unanswered field becomes.
    fn describe(&self) -> String {
        let mut text = self
            .parsed
            .title
            .clone()
            .unwrap_or_else(|| self.name.clone());
        if let Some(description) = &self.parsed.description {
            text.push_str(&format!(": {description}"));
        }
        let default = self.parsed.default.as_ref().map(|d| match d {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        match (self.required, default) {
            (true, _) => text.push_str(" (required)"),
            (false, Some(default)) => text.push_str(&format!(" (optional; default: {default})")),
            (false, None) => text.push_str(" (optional)"),
        }
        text
    }

    fn default(&self) -> Option<Value> {
        self.parsed.default.clone()
    }

    /// The answer as the field's value, checked against its schema; `Err` says why it does not
    /// fit.
    fn value(&self, selected: &[String], text: Option<String>) -> Result<Value, String> {
        let value = if self.choices.is_empty() {
            self.typed(text.as_deref().unwrap_or_default().trim())?
        } else {
            let mut values = (selected.iter())
                .filter_map(|label| self.choices.iter().find(|c| &c.option.label == label))
                .map(|c| c.value.clone());
            match self.multi {
                true => Value::Array(values.collect()),
                false => values.next().ok_or("no option was chosen")?,
            }
        };
        check(&self.schema, &value)?;
        Ok(value)
    }

    fn typed(&self, text: &str) -> Result<Value, String> {
        match self.parsed.kind.as_str() {
            "integer" => (text.parse::<i64>())
                .map(Value::from)
                .map_err(|_| format!("{text:?} is not a whole number")),
            "number" => (text.parse::<f64>().ok())
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("{text:?} is not a number")),
            _ => Ok(Value::from(text)),
        }
    }
}

fn choice(label: &str, value: Value) -> Choice {
    Choice {
        option: QuestionOption::new(label),
        value,
    }
}

/// An enum's options: titled ones by their titles, else the values (by `enumNames` when given).
fn choices(
    values: Option<&[String]>,
    names: Option<&[String]>,
    titled: Option<&[Titled]>,
) -> Vec<Choice> {
    if let Some(titled) = titled {
        let label = |t: &Titled| t.title.clone().unwrap_or_else(|| t.value.clone());
        return (titled.iter())
            .map(|t| choice(&label(t), t.value.clone().into()))
            .collect();
    }
    let values = values.unwrap_or_default();
    let label = |i: usize| names.and_then(|n| n.get(i)).unwrap_or(&values[i]);
    (0..values.len())
        .map(|i| choice(label(i), values[i].clone().into()))
        .collect()
}

/// Whether `value` fits the field's schema, formats (email, uri, date, …) included; a schema
/// the validator cannot read lets every value through.
fn check(schema: &Value, value: &Value) -> Result<(), String> {
    let validator = match jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
    {
        Ok(validator) => validator,
        Err(e) => {
            tracing::info!(%e, "an elicitation field's schema is not checked");
            return Ok(());
        }
    };
    match validator.iter_errors(value).next() {
        Some(error) => Err(error.to_string()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(schema: Value, required: bool) -> FieldQuestion {
        FieldQuestion::new("f", schema, required)
    }

    #[test]
    fn each_kind_of_field_becomes_its_question() {
        let boolean = field(json!({"type": "boolean", "title": "Agree"}), true);
        let labels: Vec<&str> = (boolean.choices.iter())
            .map(|c| c.option.label.as_str())
            .collect();
        assert_eq!(labels, ["Yes", "No"]);
        assert_eq!(boolean.describe(), "Agree (required)");
        assert_eq!(boolean.value(&["No".into()], None), Ok(json!(false)));
        let legacy = field(
            json!({"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"], "default": "p1"}),
            false,
        );
        assert_eq!(legacy.choices[1].option.label, "Dogs");
        assert_eq!(legacy.value(&["Dogs".into()], None), Ok(json!("p2")));
        assert_eq!(legacy.describe(), "f (optional; default: p1)");
        let titled_multi = field(
            json!({"type": "array", "minItems": 1, "items": {"anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Salmon"}]}}),
            false,
        );
        assert!(titled_multi.multi);
        assert_eq!(
            titled_multi.value(&["Tuna".into(), "Salmon".into()], None),
            Ok(json!(["f1", "f2"]))
        );
        assert!(titled_multi.value(&[], None).is_err(), "minItems");
    }

    #[test]
    fn typed_values_are_converted_and_checked() {
        let integer = field(
            json!({"type": "integer", "minimum": 1, "maximum": 100}),
            false,
        );
        assert_eq!(integer.value(&[], Some(" 42 ".into())), Ok(json!(42)));
        assert!(integer.value(&[], Some("4.5".into())).is_err());
        let too_big = integer.value(&[], Some("500".into())).unwrap_err();
        assert!(too_big.contains("100"), "{too_big}");
        let number = field(json!({"type": "number"}), false);
        assert_eq!(number.value(&[], Some("3.5".into())), Ok(json!(3.5)));
        let email = field(json!({"type": "string", "format": "email"}), false);
        assert_eq!(
            email.value(&[], Some("ada@example.com".into())),
            Ok(json!("ada@example.com"))
        );
        assert!(email.value(&[], Some("not an address".into())).is_err());
        let date = field(json!({"type": "string", "format": "date"}), false);
        assert!(date.value(&[], Some("2024-02-30".into())).is_err());
        assert_eq!(
            date.value(&[], Some("2024-02-29".into())),
            Ok(json!("2024-02-29"))
        );
    }

    #[tokio::test]
    async fn with_no_call_in_flight_the_request_is_declined_with_a_reason() {
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": "Name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
        }))
        .unwrap();
        let calls = InFlight::default();
        let result = answer(&calls, "s", request, None, &CancellationToken::new()).await;
        assert_eq!(result.action, ElicitationAction::Decline);
        let meta = serde_json::to_value(&result.meta).unwrap();
        assert!(
            meta[REASON_KEY].as_str().unwrap().contains("no tool call"),
            "{meta}"
        );
    }
}
