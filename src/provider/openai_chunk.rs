//! Typed, borrowing view of one OpenAI Chat Completions stream chunk.
//!
//! String fields borrow from the SSE data when they need no unescaping, and are lenient: a
//! server putting a non-string where a string belongs (`null`, an object) gets the field
//! ignored rather than the whole chunk rejected. Only the first choice is read (pi reads
//! `choices[0]`). The lenient readers here also serve `anthropic_event.rs`.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A lenient string field: the string (borrowed when it has no escapes), or `None` for any
/// other JSON value and for a missing field. Reads as the `Option` it wraps.
#[derive(Debug, Default, PartialEq)]
pub struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Deref for Str<'a> {
    type Target = Option<Cow<'a, str>>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LenientStr(PhantomData)).map(Str)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct Chunk<'a> {
    pub id: Str<'a>,
    pub model: Str<'a>,
    /// The first choice; the rest are skipped unparsed.
    pub choices: Option<FirstChoice<'a>>,
    pub usage: Option<Value>,
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct Choice<'a> {
    pub finish_reason: Str<'a>,
    pub delta: Option<Delta<'a>>,
    /// Moonshot reports usage per choice.
    pub usage: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct Delta<'a> {
    pub content: Str<'a>,
    pub reasoning_content: Str<'a>,
    pub reasoning: Str<'a>,
    pub reasoning_text: Str<'a>,
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    /// OpenRouter: encrypted reasoning to replay with the tool call of the same id.
    pub reasoning_details: Option<Value>,
}

/// The first element of the `choices` array (`None` when it is empty).
#[derive(Debug, Default)]
pub struct FirstChoice<'a>(pub Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(FirstChoiceVisitor(PhantomData))
    }
}

struct FirstChoiceVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for FirstChoiceVisitor<'a> {
    type Value = FirstChoice<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of choices")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let first = seq.next_element::<Choice<'a>>()?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(FirstChoice(first))
    }
}

impl<'a> Delta<'a> {
    /// The first non-empty reasoning field and its name (replayed under the same key).
    pub fn reasoning(&self) -> Option<(&'static str, &str)> {
        [
            ("reasoning_content", &self.reasoning_content),
            ("reasoning", &self.reasoning),
            ("reasoning_text", &self.reasoning_text),
        ]
        .into_iter()
        .find_map(|(name, text)| Some((name, text.as_deref().filter(|t| !t.is_empty())?)))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct ToolCallDelta<'a> {
    pub index: Option<u64>,
    pub id: Str<'a>,
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct FunctionDelta<'a> {
    pub name: Str<'a>,
    pub arguments: Str<'a>,
}

/// The visitor methods of a lenient reader for the JSON it does not keep, where serde's
/// defaults would fail the whole chunk: `null` and the listed scalar types read as `None`,
/// arrays (and, after `map`, objects) are skipped to their end, and `Some` is looked through.
macro_rules! read_as_none {
    (map, $($rest:tt)*) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        read_as_none!($($rest)*);
    };
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method<E>(self, _: $ty) -> Result<Self::Value, E> {
            Ok(None)
        })*
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    };
}

struct LenientStr<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for LenientStr<'a> {
    type Value = Option<Cow<'a, str>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value (strings kept)")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v)))
    }
    read_as_none!(
        map,
        visit_bool(bool),
        visit_i64(i64),
        visit_u64(u64),
        visit_f64(f64)
    );
}

/// A non-negative integer, or `None` for anything else (as `Value::as_u64` reads it).
pub fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_any(LenientU64)
}

struct LenientU64;

impl<'de> Visitor<'de> for LenientU64 {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value (non-negative integers kept)")
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u64::try_from(v).ok())
    }
    read_as_none!(map, visit_f64(f64), visit_bool(bool), visit_str(&str));
}

/// An object read as `T`, or `None` for anything else (a field a server filled oddly).
pub fn lenient_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_any(LenientObject(PhantomData))
}

struct LenientObject<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for LenientObject<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value (objects kept)")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }
    read_as_none!(
        visit_bool(bool),
        visit_i64(i64),
        visit_u64(u64),
        visit_f64(f64),
        visit_str(&str)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_the_first_choice() {
        let data = r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}},7]}"#;
        let chunk: Chunk = serde_json::from_str(data).unwrap();
        let first = chunk.choices.unwrap().0.unwrap();
        assert_eq!(first.delta.unwrap().content.as_deref(), Some("a"));
        let empty: Chunk = serde_json::from_str(r#"{"choices":[]}"#).unwrap();
        assert!(empty.choices.unwrap().0.is_none());
        assert!(serde_json::from_str::<Chunk>(r#"{"choices":{"a":1}}"#).is_err());
    }

    #[test]
    fn borrows_plain_strings_and_ignores_odd_types() {
        let data = r#"{"id":"c1","model":null,"choices":[{"index":0,"finish_reason":null,
            "delta":{"content":"hi","reasoning":{"summary":"x"},"tool_calls":[{"index":1,"id":"t",
            "function":{"name":"read","arguments":"{\"a\":"}}]}}],"usage":null}"#;
        let chunk: Chunk = serde_json::from_str(data).unwrap();
        assert!(matches!(chunk.id.0, Some(Cow::Borrowed("c1"))));
        assert_eq!(chunk.model.0, None);
        let choice = chunk.choices.as_ref().unwrap().0.as_ref().unwrap();
        let delta = choice.delta.as_ref().unwrap();
        assert_eq!(delta.content.as_deref(), Some("hi"));
        assert_eq!(
            delta.reasoning(),
            None,
            "a non-string reasoning field is ignored"
        );
        let call = &delta.tool_calls.as_ref().unwrap()[0];
        assert_eq!(
            call.function.as_ref().unwrap().arguments.as_deref(),
            Some("{\"a\":")
        );
    }
}
