//! Typed, borrowing view of one Anthropic Messages stream event's data.
//!
//! The delta's strings borrow from the SSE data when they need no unescaping; fields read once
//! per message or block (`message`, `usage`, `content_block`) are `Value`s. A field of an
//! unexpected type is ignored rather than failing the event.

use serde::Deserialize;
use serde_json::Value;

use super::openai_chunk::{Str, lenient_object, lenient_u64};

/// The data of any Anthropic stream event; absent fields are `None`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct EventData<'a> {
    #[serde(deserialize_with = "lenient_u64")]
    pub index: Option<u64>,
    #[serde(deserialize_with = "lenient_object")]
    pub delta: Option<Delta<'a>>,
    pub content_block: Option<Value>,
    pub message: Option<Value>,
    pub usage: Option<Value>,
}

/// `content_block_delta`'s and `message_delta`'s `delta`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct Delta<'a> {
    #[serde(rename = "type")]
    pub kind: Str<'a>,
    pub text: Str<'a>,
    pub thinking: Str<'a>,
    pub partial_json: Str<'a>,
    pub signature: Str<'a>,
    pub stop_reason: Str<'a>,
    pub stop_details: Option<Value>,
}

/// Parses an event's data. Data that is valid JSON but not an object (no server sends it) reads
/// as an event without fields.
pub fn parse(data: &str) -> Result<EventData<'_>, serde_json::Error> {
    if data.trim_start().starts_with('{') {
        serde_json::from_str(data)
    } else {
        serde_json::from_str::<serde::de::IgnoredAny>(data).map(|_| EventData::default())
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn deltas_borrow_their_text_and_odd_types_are_ignored() {
        let data = r#"{"type":"content_block_delta","index":2,
            "delta":{"type":"text_delta","text":"hi","thinking":7}}"#;
        let event = parse(data).unwrap();
        assert_eq!(event.index, Some(2));
        let delta = event.delta.unwrap();
        assert!(matches!(delta.kind.0, Some(Cow::Borrowed("text_delta"))));
        assert!(matches!(delta.text.0, Some(Cow::Borrowed("hi"))));
        assert_eq!(delta.thinking.0, None);
        let odd = parse(r#"{"index":"2","delta":null}"#).unwrap();
        assert_eq!((odd.index, odd.delta.is_none()), (None, true));
        let odd = parse(r#"{"index":-1,"delta":"text_delta"}"#).unwrap();
        assert_eq!((odd.index, odd.delta.is_none()), (None, true));
        let odd = parse(r#"{"delta":[{"type":"text_delta"}]}"#).unwrap();
        assert!(odd.delta.is_none());
    }

    #[test]
    fn non_objects_are_empty_events_and_bad_json_fails() {
        assert!(parse("[1, 2]").unwrap().delta.is_none());
        assert!(parse(r#"{"index": 1, broken"#).is_err());
        assert!(parse("nope").is_err());
    }

    #[test]
    fn escaped_text_is_unescaped() {
        let event = parse(r#"{"delta":{"type":"text_delta","text":"a\"b\u00e9"}}"#).unwrap();
        assert_eq!(event.delta.unwrap().text.as_deref(), Some("a\"b\u{e9}"));
    }
}
