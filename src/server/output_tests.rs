//! Tests of the ordered output: whole frames, in each producer's order, over a real pipe and
//! over a plain writer, with the framework's frames arriving in pieces.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// Splits a byte stream into frame bodies, failing on anything that is not a whole frame.
fn frames(mut bytes: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a header");
        let len = content_length(&bytes[..end]).expect("a Content-Length");
        let body = &bytes[end + 4..end + 4 + len];
        out.push(serde_json::from_slice(body).expect("a whole JSON body"));
        bytes = &bytes[end + 4 + len..];
    }
    out
}

/// Every producer's messages arrive whole and in the order it sent them.
fn assert_ordered(messages: &[Value], producers: u64, per_producer: u64) {
    let mut next: HashMap<u64, u64> = HashMap::new();
    for m in messages {
        let p = m["params"]["p"].as_u64().unwrap();
        let i = m["params"]["i"].as_u64().unwrap();
        let expected = next.entry(p).or_default();
        assert_eq!(i, *expected, "producer {p} out of order");
        *expected += 1;
    }
    assert_eq!(next.len() as u64, producers);
    assert!(next.values().all(|n| *n == per_producer));
}

fn note(p: u64, i: u64) -> Value {
    // Some frames are larger than a pipe holds, so writes end partially and queue.
    let pad = if i.is_multiple_of(97) {
        100_000
    } else {
        (i % 13) as usize * 40
    };
    json!({"jsonrpc": "2.0", "method": "$/x", "params": {"p": p, "i": i, "pad": "z".repeat(pad)}})
}

async fn produce(output: &Output, producers: u64, per_producer: u64) {
    let tasks: Vec<_> = (0..producers)
        .map(|p| {
            let output = output.clone();
            tokio::spawn(async move {
                for i in 0..per_producer {
                    output.send_message(&note(p, i)).unwrap();
                    if i.is_multiple_of(50) {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    output.drained().await;
}

/// Reads `count` frames from a pipe on a thread of its own (the output keeps its end open).
fn read_frames(
    mut read_end: std::io::PipeReader,
    count: usize,
) -> std::thread::JoinHandle<Vec<Value>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut chunk = vec![0u8; 65536];
        loop {
            if let Some(done) = whole_count(&all, count) {
                return frames(&all[..done]);
            }
            let n = read_end.read(&mut chunk).unwrap();
            assert!(n > 0, "the pipe closed before {count} frames arrived");
            all.extend_from_slice(&chunk[..n]);
        }
    })
}

/// The length of the first `count` whole frames of `bytes`, once they are all there.
fn whole_count(bytes: &[u8], count: usize) -> Option<usize> {
    let mut pos = 0;
    for _ in 0..count {
        let rest = &bytes[pos..];
        let end = rest.windows(4).position(|w| w == b"\r\n\r\n")?;
        let len = content_length(&rest[..end])?;
        if rest.len() < end + 4 + len {
            return None;
        }
        pos += end + 4 + len;
    }
    Some(pos)
}

fn pipe_output() -> (Output, std::io::PipeReader) {
    let (read_end, write_end) = std::io::pipe().unwrap();
    let write_end: OwnedFd = write_end.into();
    let fd = NonBlocking::open(write_end.as_fd()).expect("a pipe is pollable");
    (Output::start(Stdout::Reactor(fd)), read_end)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_over_a_pipe_keep_frames_whole_and_ordered() {
    let (output, read_end) = pipe_output();
    let reader = read_frames(read_end, 4 * 600);
    produce(&output, 4, 600).await;
    assert!(!output.is_closed());
    let messages = tokio::task::spawn_blocking(move || reader.join().unwrap())
        .await
        .unwrap();
    assert_ordered(&messages, 4, 600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_writer_gets_the_same_stream_from_the_flusher() {
    let (writer, mut reader) = tokio::io::duplex(4096);
    let output = Output::to_writer(writer);
    let reading = tokio::spawn(async move {
        let mut all = Vec::new();
        let mut chunk = vec![0u8; 65536];
        while whole_count(&all, 3 * 300).is_none() {
            let n = reader.read(&mut chunk).await.unwrap();
            assert!(n > 0);
            all.extend_from_slice(&chunk[..n]);
        }
        frames(&all)
    });
    produce(&output, 3, 300).await;
    assert_ordered(&reading.await.unwrap(), 3, 300);
}

#[tokio::test]
async fn framework_frames_in_pieces_are_never_split_by_other_frames() {
    let (writer, mut reader) = tokio::io::duplex(1 << 20);
    let output = Output::to_writer(writer);
    let mut framework = output.framework_writer();
    let body = |i: u64| json!({"jsonrpc": "2.0", "id": i, "result": {"p": 1, "i": i}}).to_string();
    let mut stream = Vec::new();
    for i in 0..50 {
        let b = body(i);
        stream.extend_from_slice(format!("Content-Length: {}\r\n\r\n{b}", b.len()).as_bytes());
    }
    // The framework's bytes in odd-sized pieces, one of our frames after every piece.
    let mut ours = 0;
    for piece in stream.chunks(37) {
        framework.write_all(piece).await.unwrap();
        output
            .send_message(
                &json!({"jsonrpc": "2.0", "method": "$/x", "params": {"p": 0, "i": ours}}),
            )
            .unwrap();
        ours += 1;
    }
    framework.flush().await.unwrap();
    output.drained().await;
    let mut all = vec![0u8; 0];
    let mut chunk = vec![0u8; 1 << 16];
    while whole_count(&all, 50 + ours as usize).is_none() {
        let n = reader.read(&mut chunk).await.unwrap();
        all.extend_from_slice(&chunk[..n]);
    }
    let messages = frames(&all);
    let ids: Vec<u64> = messages.iter().filter_map(|m| m["id"].as_u64()).collect();
    let notes: Vec<u64> = messages
        .iter()
        .filter_map(|m| m["params"]["i"].as_u64())
        .collect();
    assert_eq!(ids, (0..50).collect::<Vec<_>>());
    assert_eq!(notes, (0..ours).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn room_waits_while_the_client_does_not_read() {
    let (output, read_end) = pipe_output();
    // Far more than the pipe and the high-water mark hold, with nobody reading.
    let big = json!({"jsonrpc": "2.0", "method": "$/x", "params": {"p": 0, "i": 0, "pad": "z".repeat(HIGH_WATER)}});
    for _ in 0..3 {
        output.send_message(&big).unwrap();
    }
    let room = tokio::time::timeout(std::time::Duration::from_millis(200), output.room()).await;
    assert!(room.is_err(), "no room while {HIGH_WATER} bytes wait");
    let reader = read_frames(read_end, 3);
    output.room().await;
    output.drained().await;
    let messages = tokio::task::spawn_blocking(move || reader.join().unwrap())
        .await
        .unwrap();
    assert_eq!(messages.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_closes_the_output_without_hanging_anyone() {
    let (output, read_end) = pipe_output();
    drop(read_end);
    for i in 0..3 {
        output.send_message(&note(0, i)).unwrap();
    }
    output.drained().await;
    output.room().await;
    assert!(output.is_closed());
    // Later frames are dropped, not queued.
    output.send_message(&note(0, 3)).unwrap();
    output.drained().await;
}
