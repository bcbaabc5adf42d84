//! Unit tests of event numbering, merging and pacing (`events.rs` with the writer in
//! `output.rs`): merges, pacing holds and what ends them.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::*;
use crate::lsp::protocol::SessionEvent;
use crate::rpc::jsonrpc::{Framing, Incoming, Reader};

fn delta(kind: &str, index: usize, text: &str) -> EventBody {
    let text = text.to_owned();
    let inner = match kind {
        "text_delta" => AssistantMessageEvent::TextDelta {
            content_index: index,
            delta: text,
        },
        "thinking_delta" => AssistantMessageEvent::ThinkingDelta {
            content_index: index,
            delta: text,
        },
        _ => AssistantMessageEvent::ToolCallDelta {
            content_index: index,
            delta: text,
        },
    };
    EventBody::Agent(Arc::new(AgentEvent::MessageUpdate {
        assistant_message_event: inner,
    }))
}

fn end() -> EventBody {
    EventBody::Session(SessionEvent::AgentSettled {
        aborted: false,
        stop_reason: None,
    })
}

const HOUR: Duration = Duration::from_secs(3600);
/// Far shorter than [`HOUR`]: anything that arrives within it was not held by the pace.
const PROMPT: Duration = Duration::from_secs(20);

type Written = mpsc::UnboundedReceiver<(Instant, Value)>;

/// An output whose frames are decoded as they are written: each event's params, with the time.
fn output(interval: Duration) -> (Output, Written) {
    let (write, read) = tokio::io::duplex(1 << 20);
    let output = Output::start(write, Framing::ContentLength).expect("output thread");
    output.set_delta_interval(interval);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut reader = Reader::new(read, Framing::ContentLength);
        while let Some(message) = reader.next().await {
            if let Incoming::Notification { params, .. } = message {
                let _ = tx.send((Instant::now(), params));
            }
        }
    });
    (output, rx)
}

async fn next(written: &mut Written) -> Value {
    let next = tokio::time::timeout(PROMPT, written.recv()).await;
    next.expect("written without waiting for the pace")
        .expect("writer alive")
        .1
}

fn text_of(p: &Value) -> &str {
    p["event"]["assistantMessageEvent"]["delta"]
        .as_str()
        .unwrap()
}

fn seq(p: &Value) -> u64 {
    p["seq"].as_u64().unwrap()
}

#[tokio::test]
async fn the_first_delta_goes_at_once_and_a_burst_waits_for_the_next_event() {
    let (out, mut written) = output(HOUR);
    let e = Emitter::new(out, "s", true);
    e.emit(Some("r"), delta("text_delta", 0, "a"));
    assert_eq!(text_of(&next(&mut written).await), "a");
    for t in ["b", "c", "d"] {
        e.emit(Some("r"), delta("text_delta", 0, t));
    }
    // Held by the pace (an hour), collecting; a non-delta event ends the hold at once.
    e.emit(Some("r"), end());
    let merged = next(&mut written).await;
    assert_eq!((text_of(&merged), seq(&merged)), ("bcd", 2));
    let end = next(&mut written).await;
    assert_eq!(
        (end["event"]["type"].as_str(), seq(&end)),
        (Some("agent_settled"), 3)
    );
}

#[tokio::test]
async fn a_request_ends_the_hold_and_closes_merges() {
    let (out, mut written) = output(HOUR);
    let e = Emitter::new(out.clone(), "s", true);
    e.emit(Some("r"), delta("toolcall_delta", 1, "{"));
    assert_eq!(text_of(&next(&mut written).await), "{");
    e.emit(Some("r"), delta("toolcall_delta", 1, "\"a\""));
    // A request to the client queued behind the held delta.
    out.notify("agent/request", json!({"marker": true}));
    // Queued after the request: must not join the delta before it.
    e.emit(Some("r"), delta("toolcall_delta", 1, "}"));
    assert_eq!(text_of(&next(&mut written).await), "\"a\"");
    assert_eq!(
        next(&mut written).await["marker"],
        true,
        "not held by the pace"
    );
    e.emit(Some("r"), end());
    let last = next(&mut written).await;
    assert_eq!((text_of(&last), seq(&last)), ("}", 3));
}

#[tokio::test]
async fn deltas_further_apart_than_the_interval_are_written_one_by_one() {
    let (out, mut written) = output(Duration::from_millis(1));
    let e = Emitter::new(out, "s", true);
    for (i, t) in ["a", "b", "c"].into_iter().enumerate() {
        e.emit(Some("r"), delta("text_delta", 0, t));
        let p = next(&mut written).await;
        assert_eq!((text_of(&p), seq(&p)), (t, i as u64 + 1));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn sessions_merge_apart_and_other_blocks_do_not_merge() {
    let (out, mut written) = output(HOUR);
    let (a, b) = (
        Emitter::new(out.clone(), "a", true),
        Emitter::new(out, "b", true),
    );
    a.emit(Some("r"), delta("text_delta", 0, "a1"));
    b.emit(Some("q"), delta("text_delta", 0, "b1"));
    let firsts = [next(&mut written).await, next(&mut written).await];
    assert_eq!(firsts.map(|p| seq(&p)), [1, 1]);
    // Interleaved deltas of two sessions merge per session; another block of `a` does not.
    for (sa, sb) in [("a2", "b2"), ("a3", "b3")] {
        a.emit(Some("r"), delta("text_delta", 0, sa));
        b.emit(Some("q"), delta("text_delta", 0, sb));
    }
    a.emit(Some("r"), delta("thinking_delta", 0, "t"));
    b.emit(Some("q"), end());
    let mut got = Vec::new();
    for _ in 0..4 {
        let p = next(&mut written).await;
        let text = p["event"]["assistantMessageEvent"]["delta"]
            .as_str()
            .unwrap_or("end")
            .to_owned();
        got.push((p["sessionId"].as_str().unwrap().to_owned(), seq(&p), text));
    }
    let want = [
        ("a", 2, "a2a3"),
        ("b", 2, "b2b3"),
        ("a", 3, "t"),
        ("b", 3, "end"),
    ];
    let want: Vec<(String, u64, String)> = want
        .iter()
        .map(|(s, q, t)| (s.to_string(), *q, t.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn an_interval_beyond_any_instant_still_ends_at_the_next_event() {
    let (out, mut written) = output(Duration::MAX);
    let e = Emitter::new(out, "s", true);
    for t in ["a", "b"] {
        // The second time, "b" comes right after "a" was written: held, until the end.
        e.emit(Some("r"), delta("text_delta", 0, t));
        e.emit(Some("r"), end());
        assert_eq!(text_of(&next(&mut written).await), t);
        assert_eq!(next(&mut written).await["event"]["type"], "agent_settled");
    }
}

#[tokio::test]
async fn interval_zero_never_holds() {
    let (out, mut written) = output(Duration::ZERO);
    let e = Emitter::new(out, "s", true);
    for t in ["a", "b"] {
        e.emit(Some("r"), delta("text_delta", 0, t));
        assert_eq!(text_of(&next(&mut written).await), t);
    }
}

#[tokio::test]
async fn a_delta_merges_only_into_a_waiting_delta_of_its_run_and_kind() {
    let (out, mut written) = output(HOUR);
    let e = Emitter::new(out, "s", true);
    e.emit(Some("r"), delta("text_delta", 0, "a"));
    assert_eq!(text_of(&next(&mut written).await), "a");
    e.emit(Some("r"), delta("text_delta", 0, "b"));
    e.emit(Some("r"), delta("text_delta", 0, "c"));
    e.emit(Some("r2"), delta("text_delta", 0, "x"));
    e.emit(None, delta("text_delta", 0, "y"));
    e.emit(Some("r"), end());
    let merged = next(&mut written).await;
    assert_eq!((text_of(&merged), seq(&merged)), ("bc", 2));
    let other_run = next(&mut written).await;
    assert_eq!(
        (text_of(&other_run), other_run["runId"].as_str()),
        ("x", Some("r2"))
    );
    assert_eq!(text_of(&next(&mut written).await), "y");
    assert_eq!(seq(&next(&mut written).await), 5);
    assert_eq!(e.last_seq(), 5);
}

#[tokio::test]
async fn without_the_clients_opt_in_events_are_numbered_and_dropped() {
    let (out, mut written) = output(Duration::ZERO);
    let e = Emitter::new(out.clone(), "s", false);
    e.emit(Some("r"), delta("text_delta", 0, "a"));
    e.emit(Some("r"), end());
    out.notify("marker", json!({"after": true}));
    assert_eq!(next(&mut written).await["after"], true);
    assert_eq!(e.last_seq(), 2);
}
