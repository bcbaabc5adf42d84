//! Test transcripts that exercise every branch of request building: images, thinking of this
//! and other models (signed, redacted, blank), tool calls with ids to normalise, results with
//! text/images/nothing, orphans, errors, custom roles, and mid-conversation tool changes.

use serde_json::{Value, json};

use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, ImageContent, StopReason, SystemMessage,
    TextContent, ThinkingContent, ToolCall, ToolDeclaration, ToolReference, ToolResultMessage,
    UserMessage,
};
use crate::agent::message::{CustomMessage, MessageContent, ThinkingLevel};
use crate::agent::model::Model;
use crate::agent::stream_contract::StreamOptions;

/// A model of `api` at `provider` for request tests; a case sets what else it needs (base URL,
/// max tokens) by struct update.
pub fn model(api: &str, provider: &str, id: &str, reasoning: bool, compat: Value) -> Model {
    Model {
        id: id.into(),
        api: api.into(),
        provider: provider.into(),
        reasoning,
        compat: compat.as_object().cloned(),
        ..Model::default()
    }
}

/// Stream options at a thinking level with `extra` (an object; anything else adds nothing).
pub fn options(reasoning: Option<ThinkingLevel>, extra: Value) -> StreamOptions {
    StreamOptions {
        reasoning,
        extra: extra.as_object().cloned().unwrap_or_default(),
        ..StreamOptions::default()
    }
}

pub fn tool(name: &str) -> ToolDeclaration {
    ToolDeclaration {
        name: name.into(),
        description: format!("The {name} tool \"quoted\"\n"),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"], "additionalProperties": false}),
        constrained_sampling: None,
    }
}

fn system(text: &str, added: &[&str], removed: &[&str], sections: Option<Value>) -> AgentMessage {
    AgentMessage::from(SystemMessage {
        content: text.into(),
        sections: sections.and_then(|s| s.as_object().cloned()),
        timestamp: 1,
        tools_added: (!added.is_empty()).then(|| added.iter().map(|n| tool(n)).collect()),
        tools_removed: (!removed.is_empty()).then(|| {
            removed
                .iter()
                .map(|n| ToolReference { name: (*n).into() })
                .collect()
        }),
    })
}

fn user(content: MessageContent) -> AgentMessage {
    AgentMessage::from(UserMessage {
        content,
        timestamp: 2,
    })
}

fn image(data: &str) -> ContentBlock {
    ContentBlock::Image(ImageContent {
        data: data.into(),
        mime_type: "image/png".into(),
    })
}

fn thinking(text: &str, signature: Option<&str>, redacted: Option<bool>) -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent {
        thinking: text.into(),
        thinking_signature: signature.map(str::to_string),
        redacted,
    })
}

pub fn call(id: &str, arguments: Value, signature: Option<&str>) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments,
        thought_signature: signature.map(str::to_string),
        ..ToolCall::default()
    })
}

pub fn assistant(model: &Model, content: Vec<ContentBlock>, stop: StopReason) -> AgentMessage {
    AgentMessage::from(AssistantMessage {
        content,
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason: stop,
        ..AssistantMessage::default()
    })
}

fn result(id: &str, content: Vec<ContentBlock>, is_error: bool) -> AgentMessage {
    AgentMessage::from(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content,
        is_error,
        details: Some(json!({"lines": 3})),
        ..ToolResultMessage::default()
    })
}

/// A transcript with every kind of message and block, from `model` and from another model.
pub fn rich(model: &Model) -> Vec<AgentMessage> {
    let other = Model {
        id: "other-model".into(),
        provider: "other".into(),
        ..model.clone()
    };
    let encrypted = r#"{"type":"reasoning.encrypted","data":"enc=="}"#;
    vec![
        system(
            "You are terse.",
            &["read", "write"],
            &[],
            Some(json!({"env": "cwd: /p", "x": 1})),
        ),
        user("Hello \"there\"\n\u{1F600} \\ done".into()),
        user(MessageContent::Blocks(vec![
            ContentBlock::text("look at"),
            image("iVBORw0KGgo="),
            ContentBlock::text(""),
        ])),
        user(MessageContent::Blocks(vec![
            ContentBlock::text("one"),
            ContentBlock::Text(TextContent {
                text: "two".into(),
                text_signature: Some("sig".into()),
            }),
        ])),
        user("   ".into()),
        user(MessageContent::Blocks(vec![ContentBlock::text(" \n")])),
        assistant(
            model,
            vec![
                thinking("I should read.", Some("reasoning_content"), None),
                thinking("", None, None),
                thinking("More thought.", Some("Bad-Field"), None),
                ContentBlock::text("Reading "),
                ContentBlock::text("now."),
                call("call|item1", json!({"path": "a.txt"}), Some(encrypted)),
                call(
                    "call_2",
                    json!({"path": "b \"q\".txt", "n": [1, 2.5, null]}),
                    None,
                ),
            ],
            StopReason::ToolUse,
        ),
        result(
            "call|item1",
            vec![ContentBlock::text("line 1\nline 2"), ContentBlock::text("")],
            false,
        ),
        AgentMessage::from(CustomMessage {
            role: "note".into(),
            fields: json!({"text": "ignored"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        }),
        result(
            "call_2",
            vec![image("AAAA"), ContentBlock::text("with image")],
            false,
        ),
        result("unknown", vec![ContentBlock::text("dropped")], false),
        system("", &["bash"], &[], None),
        assistant(
            &other,
            vec![
                thinking("Foreign thought.", Some("sig"), None),
                thinking("secret", Some("opaque"), Some(true)),
                thinking("  ", None, None),
                call("x.y/z:1", json!("not an object"), Some("sig")),
                call("orphan|1", json!({}), None),
            ],
            StopReason::Pending,
        ),
        result("x.y/z:1", vec![image("BBBB")], true),
        assistant(model, vec![call("err", json!({}), None)], StopReason::Error),
        result("err", vec![], true),
        user("next".into()),
        assistant(
            model,
            vec![
                thinking("redacted", Some("opaque-data"), Some(true)),
                thinking("signed", Some("reasoning"), None),
                ContentBlock::text("  "),
            ],
            StopReason::Stop,
        ),
        assistant(model, vec![ContentBlock::text(" ")], StopReason::Stop),
        system(
            "Later.",
            &["grep"],
            &["write"],
            Some(json!({"env": null, "y": "why"})),
        ),
        assistant(
            model,
            vec![call("c3", json!({"path": "c"}), None)],
            StopReason::ToolUse,
        ),
        result("c3", vec![], false),
        result("c3", vec![ContentBlock::text("again")], false),
        assistant(
            model,
            vec![call("c4", json!({"path": "d"}), None)],
            StopReason::ToolUse,
        ),
        result("c4", vec![ContentBlock::text("four")], false),
        assistant(
            model,
            vec![ContentBlock::text("Done.")],
            StopReason::Aborted,
        ),
        user(MessageContent::Blocks(vec![
            ContentBlock::text("last"),
            image("CCCC"),
        ])),
    ]
}

/// A transcript whose tool declarations only ever grow (the "additions" strategy applies).
pub fn additive(model: &Model) -> Vec<AgentMessage> {
    vec![
        system("Prompt.", &["read"], &[], None),
        user("hi".into()),
        assistant(
            model,
            vec![call("a", json!({"path": "x"}), None)],
            StopReason::ToolUse,
        ),
        result("a", vec![ContentBlock::text("x"), image("DDDD")], false),
        system("Added.", &["write"], &[], None),
        system("", &[], &[], Some(json!({"s": "section"}))),
        user("more".into()),
    ]
}
