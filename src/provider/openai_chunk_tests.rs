//! The hand-written chunk reader against serde: whatever it answers equals serde's parse, on
//! generated chunks of every shape (odd types, escapes, duplicates, whitespace, broken text),
//! and the shapes servers really send take the fast path.

use proptest::prelude::*;

use super::{Chunk, fast, parse};

/// serde's answer as comparable text (`Cow` prints the same borrowed or owned).
fn serde_view(data: &str) -> Result<String, String> {
    serde_json::from_str::<Chunk>(data)
        .map(|c| format!("{c:?}"))
        .map_err(|e| e.to_string())
}

fn assert_fast(data: &str) {
    let fast = fast::parse(data).unwrap_or_else(|| panic!("not on the fast path: {data}"));
    assert_eq!(Ok(format!("{fast:?}")), serde_view(data), "{data}");
}

#[test]
fn usual_chunks_take_the_fast_path() {
    let chunks = [
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"fn "},"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x1"}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"1;\n\"q\" \u00e9 \ud83d\ude00 \/"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"a\\n"}}]}}]}"#,
        r#"{"choices":[{"delta":{"reasoning_content":"hmm","annotations":[{"a":[1,2.5e-3,true,false,null]}]}}]}"#,
        " { \"choices\" : [ ] , \"id\" : null } ",
    ];
    for chunk in chunks {
        assert_fast(chunk);
    }
}

#[test]
fn unusual_chunks_go_to_serde() {
    let chunks = [
        r#"{"choices":[],"usage":{"prompt_tokens":3}}"#,
        r#"{"error":{"message":"boom"}}"#,
        r#"{"id":"a","id":"b"}"#,
        r#"{"choices":[{"delta":{"content":7}}]}"#,
        r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":-0}]}}]}"#,
        r#"{"c\u0068oices":[]}"#,
        r#"{"choices":{}}"#,
        r#"{"id":"a"} x"#,
        "[1]",
    ];
    for chunk in chunks {
        assert!(fast::parse(chunk).is_none(), "{chunk}");
        assert_eq!(
            parse(chunk)
                .map(|c| format!("{c:?}"))
                .map_err(|e| e.to_string()),
            serde_view(chunk)
        );
    }
}

fn ws() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", "", " ", "\n", "\t", " \r\n "])
}

/// A string token: well escaped, `\u`-escaped, or broken (raw control, bad escape, lone
/// surrogate).
fn string() -> BoxedStrategy<String> {
    let text = "[a-z\"\\\\/\u{0}-\u{1f}\u{7f}é€😀 ]{0,6}";
    (text, 0u8..8, 0u8..0x20)
        .prop_map(|(text, style, control)| match style {
            0..=2 => serde_json::to_string(&text).unwrap_or_default(),
            3 => serde_json::to_string(&text)
                .unwrap_or_default()
                .replace('/', "\\/"),
            4 => {
                let mut out = String::from("\"");
                for unit in text.encode_utf16() {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
                out + "\""
            }
            5 => format!("\"{text}{}\"", char::from(control)),
            6 => format!("\"{}\\x\"", text.replace(['"', '\\'], "")),
            _ => "\"a\\ud83d\"".to_string(),
        })
        .boxed()
}

fn number() -> impl Strategy<Value = String> {
    let numbers = [
        "0",
        "-0",
        "7",
        "12",
        "1.5",
        "-3e4",
        "2E+5",
        "1e400",
        "-1e-400",
        "01",
        "1.",
        "-",
        ".5",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
    ];
    prop::sample::select(numbers.to_vec()).prop_map(str::to_string)
}

/// Any JSON-ish value (nesting included), sometimes not quite JSON.
fn value() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        Just("nul".to_string()),
        number(),
        string(),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec((inner.clone(), ws()), 0..4).prop_map(|items| {
                let items: Vec<String> =
                    items.into_iter().map(|(v, w)| format!("{w}{v}")).collect();
                format!("[{}]", items.join(","))
            }),
            prop::collection::vec((string(), inner, ws()), 0..4).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v, w)| format!("{k}{w}:{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
    .boxed()
}

/// A field value that is usually a string, sometimes something else.
fn text_field() -> BoxedStrategy<String> {
    prop_oneof![4 => string(), 1 => Just("null".to_string()), 1 => value()].boxed()
}

/// An object made of members drawn from `known` (name, value) plus unknown ones, duplicates
/// possible.
fn object(known: Vec<(&'static str, BoxedStrategy<String>)>) -> BoxedStrategy<String> {
    let mut members: Vec<BoxedStrategy<String>> = known
        .into_iter()
        .map(|(name, value)| {
            (value, ws())
                .prop_map(move |(v, w)| format!("\"{name}\"{w}:{w}{v}"))
                .boxed()
        })
        .collect();
    members.push(
        (
            prop::sample::select(vec!["index", "type", "role", "x", "c\\u006fntent"]),
            value(),
        )
            .prop_map(|(k, v)| format!("\"{k}\":{v}"))
            .boxed(),
    );
    let member = prop::strategy::Union::new(members);
    (prop::collection::vec((member, ws()), 0..6), ws())
        .prop_map(|(members, w)| {
            let members: Vec<String> = members
                .into_iter()
                .map(|(m, w)| format!("{w}{m}"))
                .collect();
            format!("{{{}{w}}}", members.join(","))
        })
        .boxed()
}

fn array(item: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::collection::vec(item, 0..3).prop_map(|items| format!("[{}]", items.join(","))),
        1 => Just("null".to_string()),
        1 => value(),
    ]
    .boxed()
}

fn or_odd(shaped: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![4 => shaped, 1 => Just("null".to_string()), 1 => value()].boxed()
}

fn chunk() -> BoxedStrategy<String> {
    let index = prop_oneof![number(), Just("null".to_string()), value()].boxed();
    let function = object(vec![("name", text_field()), ("arguments", text_field())]);
    let call = object(vec![
        ("index", index),
        ("id", text_field()),
        ("function", or_odd(function)),
    ]);
    let delta = object(vec![
        ("content", text_field()),
        ("reasoning_content", text_field()),
        ("reasoning", text_field()),
        ("reasoning_text", text_field()),
        ("tool_calls", array(call)),
        ("reasoning_details", or_odd(value())),
    ]);
    let choice = object(vec![
        ("finish_reason", text_field()),
        ("delta", or_odd(delta)),
        ("usage", or_odd(value())),
    ]);
    object(vec![
        ("id", text_field()),
        ("model", text_field()),
        ("choices", array(choice)),
        ("usage", or_odd(value())),
        ("error", or_odd(value())),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn fast_answers_equal_serde(text in chunk(), cut in any::<prop::sample::Index>(), mode in 0u8..6) {
        // Sometimes break the text: cut it short or splice a stray byte in.
        let at = cut.index(text.len() + 1);
        let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        let text = match mode {
            0 => text[..at].to_string(),
            1 => format!("{}}}{}", &text[..at], &text[at..]),
            _ => text,
        };
        if let Some(fast) = fast::parse(&text) {
            prop_assert_eq!(Ok(format!("{fast:?}")), serde_view(&text), "{}", text);
        }
        let ours = parse(&text).map(|c| format!("{c:?}")).map_err(|e| e.to_string());
        prop_assert_eq!(ours, serde_view(&text));
    }
}

proptest! {
    #[test]
    fn special_finds_the_first_quote_backslash_or_control(
        bytes in prop::collection::vec(prop_oneof![any::<u8>(), Just(b'"'), Just(b'a')], 0..40),
    ) {
        let naive = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        prop_assert_eq!(fast::special(&bytes), naive);
    }
}

/// Chunk frames around a text token (`{T}`): plain text and tool-call argument chunks that
/// become templates, and frames that must not (other fields, duplicates, a second choice or
/// tool call).
const FRAMES: [&str; 16] = [
    r#"{"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":{T}},"finish_reason":null}]}"#,
    r#"{"choices":[{"delta":{"content":{T}}}],"obfuscation":"x"}"#,
    r#"{"choices":[{"delta":{"content":{T},"reasoning":"r"}}]}"#,
    r#"{"choices":[{"delta":{"content":{T}},"finish_reason":"stop"}]}"#,
    r#"{"choices":[{"delta":{"content":{T}}},{"delta":{"content":"b"}}]}"#,
    r#"{"choices":[{"delta":{"content":{T}}}],"id":"a","id":"b"}"#,
    r#"{"choices":[{"delta":{"content":{T}}}]} "#,
    r#"{"model":"n","choices":[{"delta":{"content":{T},"tool_calls":null}}]}"#,
    r#"{"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":{T}}}]},"finish_reason":null}]}"#,
    r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"g","system_fingerprint":"fp","choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_1","type":"function","function":{"name":"write","arguments":{T}}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":null,"arguments":{T}}}]}}]}"#,
    r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{T}}},{"index":1,"function":{"arguments":"x"}}]}}]}"#,
    r#"{"choices":[{"delta":{"content":"a","tool_calls":[{"index":0,"function":{"arguments":{T}}}]}}]}"#,
    r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{T}}}]},"finish_reason":"tool_calls"}]}"#,
    r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"tool_calls":[{"function":{"arguments":{T}}}]}}]}"#,
    r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{T},"arguments":"b"}}]}}]}"#,
];

fn token() -> BoxedStrategy<String> {
    prop_oneof![
        8 => string(),
        1 => prop::sample::select(vec![
            "null", "7", "\"a\",\"content\":\"b\"", "\"a\"}}]} ", "\"", "", "\"x\\\""
        ])
        .prop_map(str::to_string),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn template_answers_equal_serde(
        steps in prop::collection::vec((0..FRAMES.len() + 1, token(), chunk()), 1..12),
    ) {
        let mut parser = super::ChunkParser::default();
        for (frame, token, other) in steps {
            let text = match FRAMES.get(frame) {
                Some(frame) => frame.replace("{T}", &token),
                None => other,
            };
            let ours = parser.parse(&text).map(|c| format!("{c:?}")).map_err(|e| e.to_string());
            prop_assert_eq!(ours, serde_view(&text), "{}", text);
        }
    }
}

#[test]
fn a_stream_of_text_chunks_is_read_by_template() {
    let mut parser = super::ChunkParser::default();
    let frame = FRAMES[0];
    for token in ["\"fn \"", "\"1;\\n\"", "\"\\u00e9\\ud83d\\ude00\"", "\"\""] {
        let text = frame.replace("{T}", token);
        let chunk = parser.parse(&text).unwrap();
        assert_eq!(Ok(format!("{chunk:?}")), serde_view(&text));
    }
    assert!(parser.has_template(), "the plain text frame is a template");
    let text = FRAMES[3].replace("{T}", "\"end\"");
    assert_eq!(
        Ok(format!("{:?}", parser.parse(&text).unwrap())),
        serde_view(&text)
    );
    assert!(!parser.has_template(), "a finish chunk is not");
}

#[test]
fn chunks_that_differ_beyond_the_text_stop_making_templates() {
    let mut parser = super::ChunkParser::default();
    for n in 0..20 {
        let text =
            format!(r#"{{"choices":[{{"delta":{{"content":"t{n}"}}}}],"obfuscation":"{n}"}}"#);
        let chunk = parser.parse(&text).unwrap();
        assert_eq!(Ok(format!("{chunk:?}")), serde_view(&text));
    }
    assert!(!parser.has_template());
    let text = FRAMES[0].replace("{T}", "\"x\"");
    assert_eq!(
        Ok(format!("{:?}", parser.parse(&text).unwrap())),
        serde_view(&text)
    );
}

#[test]
fn a_stream_of_tool_call_argument_chunks_is_read_by_template() {
    let mut parser = super::ChunkParser::default();
    // The first chunk names the call; the following ones carry only argument text.
    let tokens = [
        "\"\"",
        "\"{\\\"path\\\": \"",
        "\"a\\\\n\\t\"",
        "\"\\u00e9\"",
        "\"}\"",
    ];
    for (n, token) in tokens.into_iter().enumerate() {
        let frame = if n == 0 { FRAMES[9] } else { FRAMES[8] };
        let text = frame.replace("{T}", token);
        let chunk = parser.parse(&text).unwrap();
        assert_eq!(Ok(format!("{chunk:?}")), serde_view(&text), "{text}");
        assert!(
            parser.has_template(),
            "an argument chunk is a template: {text}"
        );
    }
    let text = FRAMES[13].replace("{T}", "\"\"");
    assert_eq!(
        Ok(format!("{:?}", parser.parse(&text).unwrap())),
        serde_view(&text)
    );
    assert!(!parser.has_template(), "a finish chunk is not");
    for frame in [FRAMES[11], FRAMES[12], FRAMES[15]] {
        let mut parser = super::ChunkParser::default();
        let text = frame.replace("{T}", "\"x\"");
        let ours = parser.parse(&text).map(|c| format!("{c:?}"));
        assert_eq!(ours.map_err(|e| e.to_string()), serde_view(&text));
        assert!(!parser.has_template(), "{text}");
    }
}
