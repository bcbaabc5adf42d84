//! Tool arguments as `#[derive(Deserialize)]` structs, read from the JSON the loop hands over
//! with the texts the tools have always given ("Missing required argument 'path'.", "Argument
//! 'limit' must be a number."): serde's own messages do not name the argument.
//!
//! A struct's fields are read in the order it declares them (its schema's order), so the first
//! missing or mistyped argument is the one reported, as when each was read by hand. For an
//! `Option` field, an absent argument and `null` are both `None`.

use std::fmt;

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, forward_to_deserialize_any};
use serde_json::{Map, Value};

use crate::agent::tool::ToolError;

/// Reads `args`, a JSON object, into `A`.
pub fn parse_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    A::deserialize(Arg::Given(args)).map_err(|e| ToolError::new(e.to_string()))
}

/// An optional number argument (`timeout`): any JSON number.
pub fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Option::<Number>::deserialize(d)?.map(|Number(n)| n))
}

/// An optional count argument (`limit`, `offset`, `context`): a non-negative number, its
/// fraction cut off as JS `slice` does; a huge one saturates.
pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    match number(d)? {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n.trunc() as usize)),
        Some(n) => Err(de::Error::invalid_value(
            de::Unexpected::Float(n),
            &"a non-negative number",
        )),
    }
}

/// A result limit (`grep`, `find`, `ls`): a count, `DEFAULT` when absent, and at least 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit<const DEFAULT: usize>(pub usize);

impl<'de, const DEFAULT: usize> Deserialize<'de> for Limit<DEFAULT> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Limit(count(d)?.unwrap_or(DEFAULT).max(1)))
    }
}

const NOT_AN_OBJECT: &str = "Tool arguments must be a JSON object.";

/// Why arguments could not be read.
#[derive(Debug)]
enum ArgError {
    /// A value of the wrong type or range, before the argument's name is known: what was
    /// expected ("a string").
    Expected(String),
    /// The text the model reads.
    Text(String),
}

impl ArgError {
    /// The error of the argument `name`'s value.
    fn of_argument(self, name: &str) -> Self {
        match self {
            ArgError::Expected(what) => {
                ArgError::Text(format!("Argument '{name}' must be {what}."))
            }
            text @ ArgError::Text(_) => text,
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::Expected(what) => write!(f, "Tool arguments must be {what}."),
            ArgError::Text(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for ArgError {}

impl de::Error for ArgError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ArgError::Text(msg.to_string())
    }

    fn invalid_type(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        ArgError::Expected(expected.to_string())
    }

    fn invalid_value(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        ArgError::Expected(expected.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        ArgError::Text(format!("Missing required argument '{field}'."))
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        ArgError::Expected(format!("one of {}", expected.join(", ")))
    }
}

/// One argument's value, or its absence from the object.
enum Arg {
    Given(Value),
    Absent(&'static str),
}

impl<'de> Deserializer<'de> for Arg {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        let value = match self {
            Arg::Given(value) => value,
            Arg::Absent(name) => return Err(de::Error::missing_field(name)),
        };
        match value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (None, Some(i)) => visitor.visit_i64(i),
                (None, None) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => {
                SeqDeserializer::new(items.into_iter().map(Arg::Given)).deserialize_any(visitor)
            }
            Value::Object(map) => {
                MapDeserializer::new(map.into_iter().map(|(k, v)| (k, Arg::Given(v))))
                    .deserialize_any(visitor)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self {
            Arg::Given(Value::Null) | Arg::Absent(_) => visitor.visit_none(),
            given @ Arg::Given(_) => visitor.visit_some(given),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        match self {
            Arg::Given(Value::Object(map)) => visitor.visit_map(Fields {
                map,
                names: fields.iter(),
                current: "",
            }),
            Arg::Given(_) => Err(ArgError::Text(NOT_AN_OBJECT.into())),
            Arg::Absent(name) => Err(de::Error::missing_field(name)),
        }
    }

    /// A string names a unit variant (`"in_progress"`), as JSON Schema's `enum` lists them.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        match self {
            Arg::Given(Value::String(s)) => visitor.visit_enum(s.into_deserializer()),
            other => other.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

impl IntoDeserializer<'_, ArgError> for Arg {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// A struct's fields in the order it declares them, absent ones included, so that an absent
/// required argument is reported in its turn; each value's errors name its argument.
struct Fields {
    map: Map<String, Value>,
    names: std::slice::Iter<'static, &'static str>,
    current: &'static str,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        let Some(&name) = self.names.next() else {
            return Ok(None);
        };
        self.current = name;
        seed.deserialize(name.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let name = self.current;
        let arg = match self.map.remove(name) {
            Some(value) => Arg::Given(value),
            None => Arg::Absent(name),
        };
        seed.deserialize(arg).map_err(|e| e.of_argument(name))
    }
}

/// Any JSON number, as `f64`.
struct Number(f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_f64(NumberVisitor)
    }
}

struct NumberVisitor;

impl Visitor<'_> for NumberVisitor {
    type Value = Number;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Number, E> {
        Ok(Number(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Number, E> {
        Ok(Number(n as f64))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Number, E> {
        Ok(Number(n as f64))
    }
}

/// Checks that the arguments struct `A` reads exactly the properties `schema` declares, in its
/// order, that a value of each declared type is read, and that an argument is required by one
/// when by the other.
#[cfg(test)]
pub fn assert_args_match_schema<A: DeserializeOwned>(schema: &Value) {
    let declared: Vec<&str> = schema["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(field_names::<A>(), declared, "fields of {schema}");
    let full = sample(schema);
    if let Err(e) = parse_args::<A>(full.clone()) {
        panic!("{full} is not read: {e}");
    }
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in declared {
        let mut without = full.clone();
        if let Some(object) = without.as_object_mut() {
            object.remove(name);
        }
        let is_required = required.contains(&Value::from(name));
        assert_eq!(
            parse_args::<A>(without).is_err(),
            is_required,
            "'{name}' required: {is_required}"
        );
    }
}

/// A value of the type `schema` declares (objects with every property).
#[cfg(test)]
fn sample(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].get(0) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("string") => Value::from("x"),
        Some("number") => Value::from(1),
        Some("boolean") => Value::from(true),
        Some("array") => Value::Array(vec![sample(&schema["items"])]),
        _ => Value::Object(
            (schema["properties"].as_object().into_iter().flatten())
                .map(|(name, property)| (name.clone(), sample(property)))
                .collect(),
        ),
    }
}

/// The names of `A`'s fields, as serde reads them: the derive hands them to `deserialize_struct`.
#[cfg(test)]
fn field_names<A: DeserializeOwned>() -> Vec<&'static str> {
    struct Names;
    impl<'de> Deserializer<'de> for Names {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            FIELDS.set(fields);
            Err(de::Error::custom("names taken"))
        }
        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    thread_local! {
        static FIELDS: std::cell::Cell<&'static [&'static str]> = const { std::cell::Cell::new(&[]) };
    }
    let _ = A::deserialize(Names);
    FIELDS.get().to_vec()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        path: String,
        #[serde(default, deserialize_with = "count")]
        limit: Option<usize>,
        ignore_case: Option<bool>,
        #[serde(default, deserialize_with = "number")]
        timeout: Option<f64>,
    }

    fn read(args: Value) -> Result<Probe, String> {
        parse_args(args).map_err(|e| e.message)
    }

    #[test]
    fn error_texts_name_the_first_bad_argument_in_declared_order() {
        let cases = [
            (json!({}), "Missing required argument 'path'."),
            (json!({"path": null}), "Argument 'path' must be a string."),
            (json!({"path": 3}), "Argument 'path' must be a string."),
            (
                json!({"limit": -1, "path": 3}),
                "Argument 'path' must be a string.",
            ),
            (
                json!({"path": "p", "limit": "9"}),
                "Argument 'limit' must be a number.",
            ),
            (
                json!({"path": "p", "limit": -0.5}),
                "Argument 'limit' must be a non-negative number.",
            ),
            (
                json!({"path": "p", "ignoreCase": 1}),
                "Argument 'ignoreCase' must be a boolean.",
            ),
            (
                json!({"path": "p", "timeout": true}),
                "Argument 'timeout' must be a number.",
            ),
            (json!(["path"]), "Tool arguments must be a JSON object."),
            (json!(null), "Tool arguments must be a JSON object."),
        ];
        for (args, text) in cases {
            assert_eq!(read(args.clone()), Err(text.to_string()), "{args}");
        }
    }

    #[test]
    fn a_string_names_an_enum_variant_and_another_is_named_in_the_error() {
        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(rename_all = "snake_case")]
        enum Status {
            Pending,
            InProgress,
        }
        #[derive(Debug, Deserialize, PartialEq)]
        struct Item {
            status: Status,
        }
        let item: Item = parse_args(json!({"status": "in_progress"})).unwrap();
        assert_eq!(item.status, Status::InProgress);
        let wrong = parse_args::<Item>(json!({"status": "someday"})).map(drop);
        let text = "Argument 'status' must be one of pending, in_progress.";
        assert_eq!(wrong.map_err(|e| e.message), Err(text.to_owned()));
        let typed = parse_args::<Item>(json!({"status": 1})).map(drop);
        assert!(typed.is_err());
    }

    #[test]
    fn null_is_absent_counts_truncate_and_saturate() {
        let read_limit = |limit: Value| read(json!({"path": "p", "limit": limit})).map(|p| p.limit);
        assert_eq!(
            read(json!({"path": "p", "limit": null, "ignoreCase": null, "other": [1]})),
            Ok(Probe {
                path: "p".into(),
                limit: None,
                ignore_case: None,
                timeout: None,
            })
        );
        assert_eq!(read_limit(json!(2.9)), Ok(Some(2)));
        assert_eq!(read_limit(json!(-0.0)), Ok(Some(0)));
        assert_eq!(read_limit(json!(1e300)), Ok(Some(usize::MAX)));
        assert_eq!(read_limit(json!(u64::MAX)), Ok(Some(usize::MAX)));
        let timeout = read(json!({"path": "p", "timeout": -2})).map(|p| p.timeout);
        assert_eq!(timeout, Ok(Some(-2.0)));
    }

    #[test]
    fn a_limit_takes_its_default_and_is_at_least_one() {
        #[derive(Deserialize)]
        struct Listing {
            limit: Limit<7>,
        }
        let read = |args: Value| parse_args::<Listing>(args).map(|l| l.limit.0);
        assert_eq!(read(json!({})), Ok(7));
        assert_eq!(read(json!({"limit": null})), Ok(7));
        assert_eq!(read(json!({"limit": 0})), Ok(1));
        assert_eq!(read(json!({"limit": 2.5})), Ok(2));
        let negative = read(json!({"limit": -1})).map_err(|e| e.message);
        assert_eq!(
            negative,
            Err("Argument 'limit' must be a non-negative number.".to_string())
        );
    }
}
