//! Tests of the ordered output: whole frames in queue order, response slots that keep their
//! place, and a client that went away.

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, DuplexStream};

use super::*;
use crate::rpc::jsonrpc::{Incoming, Reader, Response};

/// Everything `read` yields until the output side closes, as `(method or id, params/result)`.
async fn messages(read: DuplexStream) -> Vec<Value> {
    let mut reader = Reader::new(read, Framing::ContentLength);
    let mut out = Vec::new();
    while let Some(message) = reader.next().await {
        out.push(match message {
            Incoming::Notification { method, params } => {
                json!({"method": method, "params": params})
            }
            Incoming::Response { id, result } => json!({"id": id, "result": result.unwrap()}),
            other => panic!("unexpected {other:?}"),
        });
    }
    out
}

fn note(p: u64, i: u64) -> Value {
    // Some frames are larger than the pipe holds, so writes end partially and wait.
    let pad = if i.is_multiple_of(97) {
        100_000
    } else {
        (i % 13) as usize * 40
    };
    json!({"p": p, "i": i, "pad": "z".repeat(pad)})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_keep_frames_whole_and_in_their_order() {
    let (write, read) = tokio::io::duplex(4096);
    let output = Output::start(write, Framing::ContentLength).expect("output thread");
    let reading = tokio::spawn(messages(read));
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let output = output.clone();
            tokio::spawn(async move {
                for i in 0..300 {
                    output.notify("$/x", note(p, i));
                    if i % 50 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }
    output.drained().await;
    drop(output);
    let got = reading.await.unwrap();
    let mut next: HashMap<u64, u64> = HashMap::new();
    for m in &got {
        let (p, i) = (
            m["params"]["p"].as_u64().unwrap(),
            m["params"]["i"].as_u64().unwrap(),
        );
        let expected = next.entry(p).or_default();
        assert_eq!(i, *expected, "producer {p} out of order");
        *expected += 1;
    }
    assert_eq!(got.len(), 1200);
}

#[tokio::test]
async fn a_reply_slot_keeps_its_place_ahead_of_what_is_queued_after_it() {
    let (write, read) = tokio::io::duplex(1 << 20);
    let output = Output::start(write, Framing::ContentLength).expect("output thread");
    output.notify("$/before", json!({}));
    let slot = output.reply_slot();
    output.notify("$/after", json!({}));
    tokio::task::yield_now().await;
    let id = crate::rpc::jsonrpc::Id::Number(7);
    slot.fill(&Response::new(Some(&id), Ok(json!("answer"))));
    output.drained().await;
    drop(output);
    let got = messages(read).await;
    assert_eq!(got[0]["method"], "$/before");
    assert_eq!(got[1], json!({"id": 7, "result": "answer"}));
    assert_eq!(got[2]["method"], "$/after");
}

#[tokio::test]
async fn a_closed_client_closes_the_output_without_hanging_anyone() {
    let (write, read) = tokio::io::duplex(64);
    drop(read);
    let output = Output::start(write, Framing::ContentLength).expect("output thread");
    for i in 0..3 {
        output.notify("$/x", note(0, i));
    }
    output.drained().await;
    assert!(output.is_closed());
    // Later frames are dropped, and waiting for them does not hang.
    output.notify("$/x", note(0, 3));
    output.drained().await;
}

#[tokio::test]
async fn lines_framing_writes_one_message_per_line() {
    let (write, mut read) = tokio::io::duplex(1 << 16);
    let output = Output::start(write, Framing::Lines).expect("output thread");
    output.notify("a", json!({"x": "line\nbreak"}));
    output.notify("b", json!(null));
    output.drained().await;
    drop(output);
    let mut text = String::new();
    read.read_to_string(&mut text).await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["params"]["x"], "line\nbreak");
}
