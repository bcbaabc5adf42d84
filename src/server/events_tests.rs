//! Unit tests of the event writer (`events.rs`): merging, pacing holds and what ends them.

use super::*;
use crate::agent::event::AgentEvent;
use crate::provider::AssistantMessageEvent;
use serde_json::json;

fn delta(kind: &str, index: u64, text: &str) -> Value {
    json!({"type": "message_update",
           "assistantMessageEvent": {"type": kind, "contentIndex": index, "delta": text}})
}

#[test]
fn only_plain_deltas_have_a_block() {
    assert_eq!(
        delta_block(&delta("text_delta", 0, "a")),
        Some(("text_delta", 0))
    );
    assert_eq!(
        delta_block(&delta("toolcall_delta", 1, "a")),
        Some(("toolcall_delta", 1))
    );
    assert_eq!(
        delta_block(&delta("thinking_delta", 2, "a")),
        Some(("thinking_delta", 2))
    );
    assert!(delta_block(&delta("text_end", 0, "a")).is_none());
    let mut extra = delta("text_delta", 0, "a");
    extra["assistantMessageEvent"]["partial"] = json!({});
    assert!(delta_block(&extra).is_none());
    assert!(delta_block(&json!({"type": "agent_start"})).is_none());
}

const HOUR: Duration = Duration::from_secs(3600);
/// Far shorter than [`HOUR`]: anything that arrives within it was not held by the pace.
const PROMPT: Duration = Duration::from_secs(20);

type Written = mpsc::UnboundedReceiver<(Instant, AgentEventParams)>;

fn hub(interval: Duration) -> (EventHub, Written) {
    let (tx, rx) = mpsc::unbounded_channel();
    (EventHub::start_with(Sink::Channel(tx), true, interval), rx)
}

async fn next(written: &mut Written) -> AgentEventParams {
    let next = tokio::time::timeout(PROMPT, written.recv()).await;
    next.expect("written without waiting for the pace")
        .expect("writer alive")
        .1
}

fn text_of(p: &AgentEventParams) -> &str {
    p.event["assistantMessageEvent"]["delta"].as_str().unwrap()
}

#[tokio::test]
async fn the_first_delta_goes_at_once_and_a_burst_waits_for_the_next_event() {
    let (hub, mut written) = hub(HOUR);
    let e = hub.emitter("s".into());
    e.emit(Some("r"), delta("text_delta", 0, "a"), None);
    assert_eq!(text_of(&next(&mut written).await), "a");
    for t in ["b", "c", "d"] {
        e.emit(Some("r"), delta("text_delta", 0, t), None);
    }
    // Held by the pace (an hour), collecting; a non-delta event ends the hold at once.
    e.emit(Some("r"), json!({"type": "message_end"}), None);
    let merged = next(&mut written).await;
    assert_eq!((text_of(&merged), merged.seq), ("bcd", 2));
    let end = next(&mut written).await;
    assert_eq!(
        (end.event["type"].as_str(), end.seq),
        (Some("message_end"), 3)
    );
}

#[tokio::test]
async fn a_request_barrier_ends_the_hold_and_closes_merges() {
    use futures_util::FutureExt;
    let (hub, mut written) = hub(HOUR);
    let e = hub.emitter("s".into());
    e.emit(Some("r"), delta("toolcall_delta", 1, "{"), None);
    assert_eq!(text_of(&next(&mut written).await), "{");
    e.emit(Some("r"), delta("toolcall_delta", 1, "\"a\""), None);
    let barrier = hub.flushed();
    tokio::pin!(barrier);
    // Queues the barrier (the writer has not reached it yet: it holds the delta).
    assert!(barrier.as_mut().now_or_never().is_none());
    // Queued after the barrier: must not join the delta before it.
    e.emit(Some("r"), delta("toolcall_delta", 1, "}"), None);
    tokio::time::timeout(PROMPT, barrier)
        .await
        .expect("the barrier is not held by the pace");
    assert_eq!(text_of(&next(&mut written).await), "\"a\"");
    e.emit(Some("r"), json!({"type": "message_end"}), None);
    let last = next(&mut written).await;
    assert_eq!((text_of(&last), last.seq), ("}", 3));
}

#[tokio::test]
async fn deltas_further_apart_than_the_interval_are_written_one_by_one() {
    let (hub, mut written) = hub(Duration::from_millis(1));
    let e = hub.emitter("s".into());
    for (seq, t) in ["a", "b", "c"].into_iter().enumerate() {
        e.emit(Some("r"), delta("text_delta", 0, t), None);
        let p = next(&mut written).await;
        assert_eq!((text_of(&p), p.seq), (t, seq as u64 + 1));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn sessions_merge_apart_and_other_blocks_do_not_merge() {
    let (hub, mut written) = hub(HOUR);
    let (a, b) = (hub.emitter("a".into()), hub.emitter("b".into()));
    a.emit(Some("r"), delta("text_delta", 0, "a1"), None);
    b.emit(Some("q"), delta("text_delta", 0, "b1"), None);
    let firsts = [next(&mut written).await, next(&mut written).await];
    assert_eq!(firsts.map(|p| p.seq), [1, 1]);
    // Interleaved deltas of two sessions merge per session; another block of `a` does not.
    for (sa, sb) in [("a2", "b2"), ("a3", "b3")] {
        a.emit(Some("r"), delta("text_delta", 0, sa), None);
        b.emit(Some("q"), delta("text_delta", 0, sb), None);
    }
    a.emit(Some("r"), delta("thinking_delta", 0, "t"), None);
    b.emit(Some("q"), json!({"type": "message_end"}), None);
    let mut got = Vec::new();
    for _ in 0..4 {
        let p = next(&mut written).await;
        let text = p.event["assistantMessageEvent"]["delta"]
            .as_str()
            .unwrap_or("end")
            .to_owned();
        got.push((p.session_id, p.seq, text));
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
    let (hub, mut written) = hub(Duration::MAX);
    let e = hub.emitter("s".into());
    for t in ["a", "b"] {
        // The second time, "b" comes right after "a" was written: held, until the end.
        e.emit(Some("r"), delta("text_delta", 0, t), None);
        e.emit(Some("r"), json!({"type": "message_end"}), None);
        assert_eq!(text_of(&next(&mut written).await), t);
        assert_eq!(next(&mut written).await.event["type"], "message_end");
    }
}

#[tokio::test]
async fn interval_zero_never_holds() {
    let (hub, mut written) = hub(Duration::ZERO);
    let e = hub.emitter("s".into());
    for t in ["a", "b"] {
        e.emit(Some("r"), delta("text_delta", 0, t), None);
        assert_eq!(text_of(&next(&mut written).await), t);
    }
}

#[test]
fn typed_deltas_are_exactly_the_mergeable_events() {
    let update = |e| AgentEvent::MessageUpdate {
        assistant_message_event: e,
    };
    let events = [
        AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "a".into(),
        },
        AssistantMessageEvent::ThinkingDelta {
            content_index: 1,
            delta: "b".into(),
        },
        AssistantMessageEvent::ToolCallDelta {
            content_index: 2,
            delta: "c".into(),
        },
        AssistantMessageEvent::TextEnd {
            content_index: 0,
            content: "a".into(),
        },
    ];
    for event in events.map(update) {
        let json = serde_json::to_value(&event).unwrap();
        let typed = event.streamed_delta();
        assert_eq!(
            typed.map(|d| (d.kind, d.content_index as u64)),
            delta_block(&json),
            "{json}"
        );
        if let Some(d) = typed {
            assert_eq!(
                Some(d.text),
                json["assistantMessageEvent"]["delta"].as_str()
            );
        }
    }
}

#[tokio::test]
async fn a_typed_delta_merges_only_into_a_waiting_delta_of_its_block() {
    let (hub, mut written) = hub(HOUR);
    let e = hub.emitter("s".into());
    let d = |kind, text| StreamedDelta {
        kind,
        content_index: 0,
        text,
    };
    assert!(
        !e.merge_delta(Some("r"), d("text_delta", "a")),
        "nothing waits"
    );
    e.emit(Some("r"), delta("text_delta", 0, "a"), None);
    assert_eq!(text_of(&next(&mut written).await), "a");
    e.emit(Some("r"), delta("text_delta", 0, "b"), None);
    assert!(e.merge_delta(Some("r"), d("text_delta", "c")));
    assert!(
        !e.merge_delta(Some("r2"), d("text_delta", "x")),
        "another run"
    );
    assert!(
        !e.merge_delta(Some("r"), d("thinking_delta", "x")),
        "another kind"
    );
    assert!(!e.merge_delta(None, d("text_delta", "x")));
    e.emit(Some("r"), json!({"type": "message_end"}), None);
    let merged = next(&mut written).await;
    assert_eq!((text_of(&merged), merged.seq), ("bc", 2));
    assert!(
        !e.merge_delta(Some("r"), d("text_delta", "d")),
        "taken: closed"
    );
}

#[test]
fn merging_appends_until_the_writer_takes_the_event() {
    let slot: Slot = Arc::new(Mutex::new(Some(Waiting {
        params: AgentEventParams {
            session_id: "s".into(),
            run_id: Some("r".into()),
            seq: 1,
            event: delta("text_delta", 0, "ab"),
        },
        merged: String::new(),
    })));
    assert!(merge_into(&slot, delta("text_delta", 0, "cd")).is_none());
    let taken = lock(&slot).take().unwrap().into_params();
    assert_eq!(taken.event, delta("text_delta", 0, "abcd"));
    assert_eq!(taken.seq, 1);
    let back = merge_into(&slot, delta("text_delta", 0, "ef"));
    assert_eq!(back, Some(delta("text_delta", 0, "ef")));
}
