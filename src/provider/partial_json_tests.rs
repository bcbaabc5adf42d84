//! Tests of the incremental parser against an independent reference: a recursive-descent partial
//! parser that re-reads the whole prefix (pi's O(n²) approach), and serde_json for complete text.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// Reference partial parse of a whole prefix (same best-effort rules, different algorithm).
fn reference(text: &str) -> Option<Value> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    value(&chars, &mut i).ok().flatten()
}

/// `Ok(Some(v))` a (possibly partial) value; `Ok(None)` nothing usable before EOF.
fn value(s: &[char], i: &mut usize) -> Result<Option<Value>, ()> {
    ws(s, i);
    let Some(&c) = s.get(*i) else { return Ok(None) };
    match c {
        '{' => object(s, i).map(Some),
        '[' => array(s, i).map(Some),
        '"' => string(s, i).map(|(text, _)| Some(Value::String(text))),
        't' | 'f' | 'n' => {
            let start = *i;
            while s.get(*i).is_some_and(|c| c.is_ascii_alphabetic()) {
                *i += 1;
            }
            let word: String = s[start..*i].iter().collect();
            if *i == s.len() {
                return Ok(partial_literal(&word));
            }
            match word.as_str() {
                "true" => Ok(Some(json!(true))),
                "false" => Ok(Some(json!(false))),
                "null" => Ok(Some(Value::Null)),
                _ => Err(()),
            }
        }
        _ => {
            let start = *i;
            while s.get(*i).is_some_and(|c| is_number_char(*c)) {
                *i += 1;
            }
            let token: String = s[start..*i].iter().collect();
            if *i == s.len() {
                return Ok(partial_number(&token));
            }
            serde_json::from_str(&token).map(Some).map_err(|_| ())
        }
    }
}

fn ws(s: &[char], i: &mut usize) {
    while s.get(*i).is_some_and(|c| c.is_ascii_whitespace()) {
        *i += 1;
    }
}

/// A string at `s[*i] == '"'`; the bool says whether it was closed.
fn string(s: &[char], i: &mut usize) -> Result<(String, bool), ()> {
    *i += 1;
    let mut raw = String::from("\"");
    while let Some(&c) = s.get(*i) {
        *i += 1;
        raw.push(c);
        if c == '\\' {
            match s.get(*i) {
                Some(&e) => {
                    raw.push(e);
                    *i += 1;
                }
                None => break,
            }
        } else if c == '"' {
            return serde_json::from_str(&raw)
                .map(|t| (t, true))
                .map_err(|_| ());
        }
    }
    // Unclosed: drop an incomplete trailing escape, then close it.
    let mut body = raw[1..].to_string();
    if let Some(pos) = body.rfind('\\') {
        let tail = &body[pos..];
        let complete = tail.len() >= 2 && (!tail.starts_with("\\u") || tail.len() >= 6);
        let escaped_backslash =
            body[..pos].chars().rev().take_while(|c| *c == '\\').count() % 2 == 1;
        if !complete && !escaped_backslash {
            body.truncate(pos);
        }
    }
    serde_json::from_str(&format!("\"{body}\""))
        .map(|t| (t, false))
        .map_err(|_| ())
}

fn object(s: &[char], i: &mut usize) -> Result<Value, ()> {
    *i += 1;
    let mut map = Map::new();
    loop {
        ws(s, i);
        match s.get(*i) {
            None => return Ok(Value::Object(map)),
            Some('}') => {
                *i += 1;
                return Ok(Value::Object(map));
            }
            Some('"') => {}
            Some(_) => return Err(()),
        }
        let (key, closed) = string(s, i)?;
        ws(s, i);
        if !closed || s.get(*i).is_none() {
            return Ok(Value::Object(map));
        }
        if s[*i] != ':' {
            return Err(());
        }
        *i += 1;
        match value(s, i)? {
            Some(v) => {
                map.insert(key, v);
            }
            None => return Ok(Value::Object(map)),
        }
        if !another(s, i, '}')? {
            return Ok(Value::Object(map));
        }
    }
}

fn array(s: &[char], i: &mut usize) -> Result<Value, ()> {
    *i += 1;
    let mut items = Vec::new();
    ws(s, i);
    if s.get(*i) == Some(&']') {
        *i += 1;
        return Ok(Value::Array(items));
    }
    loop {
        match value(s, i)? {
            Some(v) => items.push(v),
            None => return Ok(Value::Array(items)),
        }
        if !another(s, i, ']')? {
            return Ok(Value::Array(items));
        }
    }
}

/// After a member or element: whether another follows (a comma, consumed), or the container
/// ends (at `close`, consumed, or where the text does).
fn another(s: &[char], i: &mut usize, close: char) -> Result<bool, ()> {
    ws(s, i);
    match s.get(*i) {
        None => Ok(false),
        Some(',') => {
            *i += 1;
            Ok(true)
        }
        Some(&c) if c == close => {
            *i += 1;
            Ok(false)
        }
        Some(_) => Err(()),
    }
}

fn feed_all(text: &str) -> PartialJson {
    let mut parser = PartialJson::new();
    parser.push(text);
    parser
}

#[test]
fn completes_open_structures() {
    let cases = [
        (r#"{"path": "a.t"#, json!({"path": "a.t"})),
        (r#"{"path": "a.txt", "lim"#, json!({"path": "a.txt"})),
        (r#"{"path": "a.txt", "limit":"#, json!({"path": "a.txt"})),
        (r#"{"n": 12"#, json!({"n": 12})),
        (r#"{"n": 1."#, json!({"n": 1})),
        (r#"{"n": -"#, json!({})),
        (r#"{"ok": tr"#, json!({"ok": true})),
        (r#"{"a": [1, {"b": "x\"#, json!({"a": [1, {"b": "x"}]})),
        (r#"{"a": "\u00e"#, json!({"a": ""})),
        (r#"{"a": "\u00e9"#, json!({"a": "é"})),
    ];
    for (text, expected) in cases {
        assert_eq!(feed_all(text).snapshot(), Some(expected.clone()), "{text}");
        assert_eq!(reference(text), Some(expected), "reference {text}");
    }
}

#[test]
fn finish_demands_an_object() {
    assert_eq!(feed_all("").finish(), Ok(Map::new()));
    assert_eq!(
        feed_all(r#"{"a":1}"#).finish(),
        Ok(json!({"a": 1}).as_object().cloned().unwrap())
    );
    assert!(
        feed_all(r#"{"a":"#)
            .finish()
            .unwrap_err()
            .contains("invalid tool arguments JSON")
    );
    assert!(
        feed_all("[1]")
            .finish()
            .unwrap_err()
            .contains("not a JSON object")
    );
    assert!(feed_all(r#"{"a":1} x"#).finish().is_err());
}

#[test]
fn raw_control_characters_are_repaired() {
    let parser = feed_all("{\"a\": \"line1\nline2\"}");
    assert_eq!(
        parser.finish(),
        Ok(json!({"a": "line1\nline2"}).as_object().cloned().unwrap())
    );
}

#[test]
fn absurd_nesting_stops_the_parser_instead_of_growing() {
    let mut parser = PartialJson::new();
    parser.push(&"[".repeat(100_000));
    assert!(parser.finish().is_err());
    let depth = |v: &Value| {
        let mut depth = 0;
        let mut current = v;
        while let Some(inner) = current.as_array().and_then(|a| a.first()) {
            depth += 1;
            current = inner;
        }
        depth
    };
    assert_eq!(parser.snapshot().map(|v| depth(&v)), Some(127));
}

#[test]
fn surrogate_pairs_combine() {
    assert_eq!(
        feed_all(r#"{"e": "\ud83d\ude00"}"#).snapshot(),
        Some(json!({"e": "😀"}))
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        "[a-z\"\\\\/\\n\\t é😀\u{1}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z\"é]{0,5}", inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

fn arb_object() -> impl Strategy<Value = (String, Value)> {
    (
        prop::collection::vec(("[a-z_]{1,6}", arb_json()), 0..5),
        any::<bool>(),
    )
        .prop_map(|(pairs, pretty)| {
            let value = Value::Object(pairs.into_iter().collect());
            let text = if pretty {
                serde_json::to_string_pretty(&value)
            } else {
                serde_json::to_string(&value)
            };
            (text.unwrap_or_default(), value)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_prefix_matches_the_reference((text, value) in arb_object(), step in 1usize..7) {
        let mut parser = PartialJson::new();
        let chars: Vec<char> = text.chars().collect();
        let mut fed = String::new();
        for piece in chars.chunks(step) {
            let piece: String = piece.iter().collect();
            parser.push(&piece);
            fed.push_str(&piece);
            prop_assert_eq!(parser.snapshot(), reference(&fed), "prefix {:?}", fed);
        }
        prop_assert_eq!(parser.snapshot(), Some(value.clone()));
        prop_assert_eq!(parser.finish(), Ok(value.as_object().cloned().unwrap_or_default()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any split of the text (escapes, surrogate halves, raw controls and broken input
    /// included) ends in the same state as feeding it one character at a time.
    #[test]
    fn any_split_equals_char_by_char(
        pieces in prop::collection::vec(
            prop_oneof![
                Just("{\"a\": \"".to_string()),
                Just("\\u".to_string()),
                "[0-9a-fA-F]{1,4}",
                "[\\\\\"a-z é😀\u{1}\\n/ntubf:,{}\\[\\]]{0,6}",
                Just("\\ud83d\\ude00".to_string()),
                Just("\\udc00x".to_string()),
            ],
            0..12,
        ),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let text: String = pieces.concat();
        let mut by_char = PartialJson::new();
        for c in text.chars() {
            by_char.push(c.encode_utf8(&mut [0; 4]));
        }
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
        at.retain(|&i| text.is_char_boundary(i));
        at.push(0);
        at.push(text.len());
        at.sort_unstable();
        let mut split = PartialJson::new();
        for pair in at.windows(2) {
            split.push(&text[pair[0]..pair[1]]);
        }
        prop_assert_eq!(split.snapshot(), by_char.snapshot(), "{:?}", text);
        prop_assert_eq!(split.finish(), by_char.finish(), "{:?}", text);
        prop_assert_eq!(format!("{:?}", split.top), format!("{:?}", by_char.top));
    }
}
