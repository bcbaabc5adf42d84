//! Tool-argument validation (pi-ai `validateToolArguments`): a schema-guided coercion pass in
//! the spirit of ajv's `coerceTypes: "array"` ("42"→42, scalar→\[scalar\], null→omitted optional),
//! then JSON Schema validation with the `jsonschema` crate. The transcript's arguments are never
//! mutated: coercion works on a copy.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Map, Value};

use crate::agent::message::ToolCall;

mod cache;

/// Validates a call against `parameters`; returns the coerced arguments or pi's error text.
pub fn validate_tool_arguments(parameters: &Value, call: &ToolCall) -> Result<Value, String> {
    if let Some(err) = &call.arguments_error {
        return Err(format!(
            "Invalid arguments for tool \"{}\": {err}",
            call.name
        ));
    }
    let mut args = call.arguments.clone();
    coerce(parameters, &mut args);
    let validator = cache::validator(parameters)
        .map_err(|e| format!("Invalid schema for tool \"{}\": {e}", call.name))?;
    let lines: Vec<String> = validator
        .iter_errors(&args)
        .map(|e| {
            format!(
                "  - {}: {}",
                dotted(e.instance_path().as_str()),
                message(&e)
            )
        })
        .collect();
    if lines.is_empty() {
        return Ok(args);
    }
    let received =
        serde_json::to_string_pretty(&call.arguments).unwrap_or_else(|_| "null".to_string());
    Err(format!(
        "Validation failed for tool \"{}\":\n{}\n\nReceived arguments:\n{received}",
        call.name,
        lines.join("\n")
    ))
}

/// `/edits/0/oldText` → `edits.0.oldText`; the empty pointer → `root`.
fn dotted(pointer: &str) -> String {
    let trimmed = pointer.trim_start_matches('/');
    if trimmed.is_empty() {
        return "root".to_string();
    }
    trimmed.replace('/', ".")
}

/// pi's messages read `expected string, got object`; other kinds use the library's text.
fn message(error: &jsonschema::ValidationError<'_>) -> String {
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => {
                    let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
                    names.join(" | ")
                }
            };
            format!("expected {expected}, got {}", json_type(error.instance()))
        }
        _ => error.to_string(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The schema's declared types (`type: "x"` or `type: ["x", "y"]`).
fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Coerces `value` in place toward `schema`, recursing through objects and arrays.
pub fn coerce(schema: &Value, value: &mut Value) {
    let types = schema_types(schema);
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, value)) {
        for t in &types {
            if let Some(coerced) = coerce_scalar(t, value, schema) {
                *value = coerced;
                break;
            }
        }
    }
    match value {
        Value::Object(map) => coerce_object(schema, map),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    coerce(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn coerce_object(schema: &Value, map: &mut Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop_schema) in properties {
        let Some(value) = map.get_mut(name) else {
            continue;
        };
        // A null optional counts as omitted, unless the property explicitly allows null.
        if value.is_null() && !required.contains(&name.as_str()) && !allows_null(prop_schema) {
            map.shift_remove(name);
            continue;
        }
        coerce(prop_schema, value);
    }
}

fn allows_null(schema: &Value) -> bool {
    schema_types(schema).contains(&"null")
}

fn type_matches(t: &str, value: &Value) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

/// One scalar coercion (ajv's table), or `None` when this type cannot take the value.
fn coerce_scalar(t: &str, value: &Value, schema: &Value) -> Option<Value> {
    match (t, value) {
        ("number", Value::String(s)) => s.trim().parse::<f64>().ok().and_then(number),
        ("integer", Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.fract() == 0.0)
            .and_then(number),
        ("number" | "integer", Value::Bool(b)) => Some(Value::from(u8::from(*b))),
        ("number" | "integer", Value::Null) => Some(Value::from(0)),
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("string", Value::Null) => Some(Value::String(String::new())),
        ("boolean", Value::String(s)) if s == "true" => Some(Value::Bool(true)),
        ("boolean", Value::String(s)) if s == "false" => Some(Value::Bool(false)),
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        ("array", v) if !v.is_array() && !v.is_object() => {
            let mut item = v.clone();
            if let Some(items) = schema.get("items").filter(|s| s.is_object()) {
                coerce(items, &mut item);
            }
            Some(Value::Array(vec![item]))
        }
        _ => None,
    }
}

fn number(f: f64) -> Option<Value> {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Some(Value::from(f as i64));
    }
    serde_json::Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(args: Value) -> ToolCall {
        ToolCall {
            id: "t".into(),
            name: "echo".into(),
            arguments: args,
            ..Default::default()
        }
    }

    #[test]
    fn coerces_strings_scalars_and_null_optionals() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
            "opt": {"type": "string"}}, "required": ["n"]});
        let out =
            validate_tool_arguments(&schema, &call(json!({"n": "42", "tags": "x", "opt": null})))
                .unwrap();
        assert_eq!(out, json!({"n": 42, "tags": ["x"]}));
    }

    #[test]
    fn reports_pi_style_lines_and_received_arguments() {
        let schema = json!({"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]});
        let err = validate_tool_arguments(&schema, &call(json!({"value": {"nested": true}})))
            .unwrap_err();
        assert_eq!(
            err,
            "Validation failed for tool \"echo\":\n  - value: expected string, got object\n\nReceived arguments:\n{\n  \"value\": {\n    \"nested\": true\n  }\n}"
        );
    }

    #[test]
    fn arguments_error_wins() {
        let mut c = call(json!({}));
        c.arguments_error = Some("bad json".into());
        assert_eq!(
            validate_tool_arguments(&json!({}), &c).unwrap_err(),
            "Invalid arguments for tool \"echo\": bad json"
        );
    }
}
