//! Tests of the SSE decoder: the parsing rules one by one, then arbitrary re-chunking.

use proptest::prelude::*;

use super::*;

/// (event name, data) of every event of `chunks`, in order.
fn decode(chunks: &[&[u8]]) -> Vec<(String, String)> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk).unwrap();
        while let Some(e) = decoder.next_event() {
            out.push((e.event.into_owned(), e.data.into_owned()));
        }
    }
    out
}

fn one(text: &str) -> Vec<(String, String)> {
    decode(&[text.as_bytes()])
}

fn ev(name: &str, data: &str) -> (String, String) {
    (name.to_string(), data.to_string())
}

#[test]
fn single_data_lines_are_borrowed() {
    let mut decoder = SseDecoder::new();
    decoder.push(b"data: {\"a\":1}\n\n").unwrap();
    let event = decoder.next_event().unwrap();
    assert!(matches!(event.data, Cow::Borrowed("{\"a\":1}")));
    assert!(matches!(event.event, Cow::Borrowed("message")));
    assert!(decoder.next_event().is_none());
}

#[test]
fn every_line_ending_is_accepted() {
    let expected = vec![ev("message", "a"), ev("x", "b"), ev("message", "c")];
    assert_eq!(one("data: a\n\nevent: x\ndata: b\n\ndata: c\n\n"), expected);
    assert_eq!(
        one("data: a\r\n\r\nevent: x\r\ndata: b\r\n\r\ndata: c\r\n\r\n"),
        expected
    );
    assert_eq!(one("data: a\r\revent: x\rdata: b\r\rdata: c\r\r"), expected);
    assert_eq!(
        one("data: a\r\n\nevent: x\rdata: b\n\r\ndata: c\r\r\n"),
        expected
    );
}

#[test]
fn comments_ids_retries_and_unknown_fields_are_ignored() {
    let text = ": keep-alive\nid: 7\nretry: 100\nfoo: bar\ndata: x\n:another\n\n";
    assert_eq!(one(text), vec![ev("message", "x")]);
    assert_eq!(one(": only a comment\n\n"), vec![]);
}

#[test]
fn data_lines_are_joined_with_newlines() {
    assert_eq!(
        one("data: a\ndata:b\ndata:  c\n\n"),
        vec![ev("message", "a\nb\n c")]
    );
    assert_eq!(one("data\ndata\n\n"), vec![ev("message", "\n")]);
    assert_eq!(one("data:\n\n"), vec![ev("message", "")]);
}

#[test]
fn a_field_without_colon_has_an_empty_value() {
    assert_eq!(one("data\n\n"), vec![ev("message", "")]);
    assert_eq!(one("event\ndata: x\n\n"), vec![ev("message", "x")]);
}

#[test]
fn events_without_data_are_not_dispatched() {
    assert_eq!(one("event: ping\n\ndata: y\n\n"), vec![ev("message", "y")]);
    assert_eq!(one("\n\n\n"), vec![]);
}

#[test]
fn the_name_applies_to_its_event_only() {
    assert_eq!(
        one("event: a\ndata: 1\n\ndata: 2\n\nevent: b\nevent: c\ndata: 3\n\n"),
        vec![ev("a", "1"), ev("message", "2"), ev("c", "3")]
    );
}

#[test]
fn an_unterminated_final_event_is_discarded() {
    assert_eq!(one("data: a\n\ndata: b\n"), vec![ev("message", "a")]);
    assert_eq!(one("data: a\n\ndata: b"), vec![ev("message", "a")]);
}

#[test]
fn a_leading_bom_is_skipped_even_when_split() {
    assert_eq!(
        decode(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\n"]),
        vec![ev("message", "a")]
    );
    assert_eq!(one("\u{FEFF}event: e\ndata: a\n\n"), vec![ev("e", "a")]);
    // Only at the start of the stream.
    assert_eq!(
        one("data: a\n\n\u{FEFF}data: b\n\n"),
        vec![ev("message", "a")]
    );
}

#[test]
fn split_utf8_and_crlf_are_reassembled() {
    let text = "data: h\u{e9}llo \u{1F600}\r\n\r\n".as_bytes();
    for cut in 0..text.len() {
        assert_eq!(
            decode(&[&text[..cut], &text[cut..]]),
            vec![ev("message", "h\u{e9}llo \u{1F600}")],
            "cut at {cut}"
        );
    }
}

#[test]
fn invalid_utf8_is_replaced() {
    assert_eq!(
        decode(&[b"data: a\xFFb\n\n"]),
        vec![ev("message", "a\u{FFFD}b")]
    );
}

#[test]
fn an_endless_line_is_refused() {
    let mut decoder = SseDecoder::new();
    let big = vec![b'x'; MAX_EVENT_BYTES];
    decoder.push(&big).unwrap();
    assert!(decoder.next_event().is_none());
    assert_eq!(
        decoder.push(b"x"),
        Err(SseError::EventTooLarge {
            limit: MAX_EVENT_BYTES
        })
    );
}

#[test]
fn consumed_events_do_not_accumulate() {
    let mut decoder = SseDecoder::new();
    for i in 0..1000 {
        decoder
            .push(format!("data: {i}\n\ndata: par").as_bytes())
            .unwrap();
        assert_eq!(decoder.next_event().unwrap().data, i.to_string());
        assert!(decoder.next_event().is_none());
        decoder.push(b"tial\n\n").unwrap();
        assert_eq!(decoder.next_event().unwrap().data, "partial");
    }
    assert!(decoder.buf.capacity() < 4096, "{}", decoder.buf.capacity());
}

/// A reference decoder written straight from the spec over a whole `&str`, line by line.
fn reference(text: &str) -> Vec<(String, String)> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['\r', '\n']) {
        lines.push(&rest[..at]);
        let skip = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[at + skip..];
    }
    let (mut out, mut name, mut data) = (Vec::new(), String::new(), None::<String>);
    for line in lines {
        if line.is_empty() {
            if let Some(data) = data.take() {
                let name = if name.is_empty() { "message" } else { &name };
                out.push((name.to_string(), data));
            }
            name.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => name = value.to_string(),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            _ => {}
        }
    }
    out
}

fn stream_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "data: [a-z\u{e9}\u{1F600} :]{0,12}",
        "data:[a-z ]{0,5}",
        Just("data".to_string()),
        "event: [a-z_]{0,8}",
        ": [a-z ]{0,8}",
        Just("id: 1".to_string()),
        Just("retry: 5".to_string()),
        Just(String::new()),
        Just(String::new()),
    ];
    let eol = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    (
        proptest::bool::ANY,
        proptest::collection::vec((line, eol), 0..40),
    )
        .prop_map(|(bom, lines)| {
            let mut text = if bom {
                "\u{FEFF}".to_string()
            } else {
                String::new()
            };
            for (line, eol) in lines {
                text.push_str(&line);
                text.push_str(eol);
            }
            text
        })
}

proptest! {
    #[test]
    fn any_chunking_gives_the_reference_events(
        text in stream_text(),
        cuts in proptest::collection::vec(0usize..400, 0..12),
    ) {
        let bytes = text.as_bytes();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut at = 0;
        for cut in cuts {
            chunks.push(&bytes[at..cut]);
            at = cut;
        }
        chunks.push(&bytes[at..]);
        let whole = decode(&[bytes]);
        prop_assert_eq!(&decode(&chunks), &whole);
        prop_assert_eq!(whole, reference(&text));
    }
}
