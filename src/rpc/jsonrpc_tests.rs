//! Tests of the framed reader and message classification.

use serde_json::json;

use super::*;

fn frame(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

async fn read_all(input: &[u8], framing: Framing, limit: usize) -> Vec<Incoming> {
    let mut reader = Reader::with_limit(input, framing, limit);
    let mut out = Vec::new();
    while let Some(message) = reader.next().await {
        out.push(message);
    }
    out
}

fn code_of(message: &Incoming) -> Option<i64> {
    match message {
        Incoming::Malformed { error, .. } => Some(error.code),
        _ => None,
    }
}

const GOOD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}"#;

fn good() -> Incoming {
    Incoming::Request {
        id: Id::Number(1),
        method: "m".into(),
        params: json!({"a": 1}),
    }
}

#[test]
fn messages_are_classified() {
    let note = parse_message(br#"{"jsonrpc":"2.0","method":"n"}"#);
    assert_eq!(
        note,
        Incoming::Notification {
            method: "n".into(),
            params: Value::Null
        }
    );
    let reply = parse_message(br#"{"jsonrpc":"2.0","id":"x","result":null}"#);
    assert_eq!(
        reply,
        Incoming::Response {
            id: Id::String("x".into()),
            result: Ok(Value::Null)
        }
    );
    let error = parse_message(br#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}"#);
    assert!(matches!(error, Incoming::Response { result: Err(e), .. } if e.message == "no"));
    // A wrong shape keeps its id; broken JSON has none.
    let wrong = parse_message(br#"{"jsonrpc":"2.0","id":4,"method":5}"#);
    assert!(
        matches!(&wrong, Incoming::Malformed { id: Some(Id::Number(4)), error } if error.code == -32600)
    );
    assert_eq!(code_of(&parse_message(b"{\"a\": nul")), Some(-32700));
    assert_eq!(code_of(&parse_message(b"[1,2]")), Some(-32600));
    assert_eq!(
        code_of(&parse_message(br#"{"id":1,"method":"m"}"#)),
        Some(-32600)
    );
}

#[tokio::test]
async fn frames_pass_and_bad_ones_are_reported_without_losing_the_next() {
    let input = format!(
        "{}Content-Length: 3\r\n\r\n{{a}}content-length: {}\r\n\r\n{GOOD}",
        frame(GOOD),
        GOOD.len()
    );
    let got = read_all(input.as_bytes(), Framing::ContentLength, MAX_FRAME).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], good());
    assert_eq!(code_of(&got[1]), Some(-32700));
    assert_eq!(got[2], good());
}

#[tokio::test]
async fn a_content_length_shorter_than_its_body_keeps_the_request_after_it() {
    let short = format!("Content-Length: 10\r\n\r\n{GOOD}");
    let input = format!("{short}{}", frame(GOOD));
    let got = read_all(input.as_bytes(), Framing::ContentLength, MAX_FRAME).await;
    assert_eq!(got.last(), Some(&good()), "{got:?}");
    assert!(
        got[..got.len() - 1].iter().all(|m| code_of(m).is_some()),
        "{got:?}"
    );
}

#[tokio::test]
async fn other_headers_and_an_overflowing_length_are_handled() {
    let typed = format!(
        "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: {}\r\n\r\n{GOOD}",
        GOOD.len()
    );
    let overflow = format!("Content-Length: {}\r\n\r\n", usize::MAX);
    let input = format!("{typed}{overflow}{}", frame(GOOD));
    let got = read_all(input.as_bytes(), Framing::ContentLength, MAX_FRAME).await;
    assert_eq!(got[0], good(), "{got:?}");
    assert_eq!(code_of(&got[1]), Some(-32700), "{got:?}");
    assert_eq!(got.last(), Some(&good()), "{got:?}");
}

#[tokio::test]
async fn a_frame_over_the_limit_is_refused_and_skipped() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"m","params":"{}"}}"#,
        "x".repeat(5000)
    );
    let input = format!("{}{}", frame(&big), frame(GOOD));
    let got = read_all(input.as_bytes(), Framing::ContentLength, 1000).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(code_of(&got[0]), Some(-32600));
    assert_eq!(got[1], good());
}

/// A reader over garbage arriving in small pieces looks at each byte a bounded number of
/// times: the buffer it keeps stays small (a rescan from the start would keep it all).
#[tokio::test]
async fn garbage_is_skipped_in_one_pass_and_reported_once() {
    let garbage: Vec<u8> = (0..4_000_000u32)
        .map(|i| b"x\r\n{}:"[i as usize % 6])
        .collect();
    let (mut write, read) = tokio::io::duplex(4096);
    let input = [garbage, frame(GOOD).into_bytes()].concat();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        write.write_all(&input).await.unwrap();
    });
    let mut reader = Reader::new(read, Framing::ContentLength);
    let first = reader.next().await.unwrap();
    assert_eq!(code_of(&first), Some(-32700));
    assert!(reader.buf.capacity() < 1 << 20, "the garbage was not kept");
    assert_eq!(reader.next().await.unwrap(), good());
    writer.await.unwrap();
    assert!(reader.next().await.is_none());
}

#[tokio::test]
async fn lines_framing_reads_one_message_per_line() {
    let input = format!(
        "{GOOD}\n\n  {GOOD}\r\nnot json\n{}\n{GOOD}\n",
        "y".repeat(2000)
    );
    let got = read_all(input.as_bytes(), Framing::Lines, 1000).await;
    assert_eq!(got[0], good());
    assert_eq!(got[1], good());
    assert_eq!(code_of(&got[2]), Some(-32700));
    assert_eq!(code_of(&got[3]), Some(-32600), "{got:?}");
    assert_eq!(got[4], good());
    assert_eq!(got.len(), 5);
}

#[tokio::test]
async fn a_large_frame_does_not_keep_its_buffer() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"n","params":{{"text":"{}"}}}}"#,
        "x".repeat(4 << 20)
    );
    let input = format!("{}{}{}", frame(&big), frame(GOOD), frame(GOOD));
    let mut reader = Reader::new(input.as_bytes(), Framing::ContentLength);
    assert!(matches!(
        reader.next().await,
        Some(Incoming::Notification { .. })
    ));
    assert_eq!(reader.next().await, Some(good()));
    assert_eq!(reader.next().await, Some(good()));
    assert_eq!(reader.next().await, None);
    assert!(
        reader.buf.capacity() <= RETAINED_BUFFER,
        "the buffer keeps {} bytes after a 4 MiB frame",
        reader.buf.capacity()
    );
}
