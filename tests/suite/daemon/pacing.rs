//! Paced delta coalescing on `$/agentEvent` (`deltaIntervalMs`, protocol.md §4.1), through the
//! real binary: a burst arrives in few notifications, a slow stream one notification per delta,
//! `0` writes every delta, and non-delta events and requests are never held by the pace. The
//! proofs use the mock's pacing and intervals far longer than the test's own bound, never
//! wall-clock measurements.

use super::*;

/// Far longer than [`HANG_BOUND`]: a run that settles under this interval was not held by it.
const BEYOND_THE_BOUND_MS: u64 = 10 * HANG_BOUND.as_millis() as u64;

/// The `delta`s of the session's `kind` (`text_delta`, `toolcall_delta`) notifications, in order.
fn deltas_of(events: &[Value], kind: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"]["assistantMessageEvent"]["type"] == kind)
        .map(|e| {
            e["event"]["assistantMessageEvent"]["delta"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn paced_text(text: &str, chunk: usize, delay_ms: Option<u64>) -> MockResponse {
    let mut answer = MockResponse::text(text);
    answer.chunk_size = Some(chunk);
    answer.delay_ms = delay_ms;
    answer
}

/// Runs one prompt against `responses` with `options`; returns the session's events.
async fn stream(responses: Vec<MockResponse>, options: Value) -> Vec<Value> {
    let (mock, client) = agent_setup(responses, LspClient::agent_caps(false), options).await;
    let (session, run, id) = prompt(&client, json!({"message": "Go."})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
    events
}

#[tokio::test]
async fn a_burst_of_deltas_arrives_in_few_notifications_exact_and_gap_free() {
    const DELTAS: usize = 5_000;
    let text: String = (0..DELTAS).map(|i| format!("{:04}", i % 10_000)).collect();
    // Default options: the pace is on.
    let events = stream(vec![paced_text(&text, 4, None)], json!({})).await;
    let deltas = deltas_of(&events, "text_delta");
    assert_eq!(
        deltas.concat(),
        text,
        "the deltas rebuild the answer exactly"
    );
    // One notification per 16 ms per block: 500 would mean under 640 deltas a second.
    assert!(
        !deltas.is_empty() && deltas.len() < DELTAS / 10,
        "{} notifications for {DELTAS} deltas",
        deltas.len()
    );
}

#[tokio::test]
async fn a_slow_stream_arrives_one_notification_per_delta() {
    // The mock waits 200 ms before each chunk, far beyond the 16 ms pace: had the daemon held a
    // delta until the next one came, the two would have been merged into one notification.
    let text = "one two three four five six ";
    let events = stream(vec![paced_text(text, 4, Some(200))], json!({})).await;
    let deltas = deltas_of(&events, "text_delta");
    let chunks: Vec<String> = text
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    assert_eq!(deltas, chunks);
}

#[tokio::test]
async fn interval_zero_writes_every_delta_where_a_long_interval_merges_them() {
    let text = "0123456789abcdefghijklmnopqrstuvwxyz0123";
    // 25 ms apart: a client that reads promptly keeps up, so `0` gives every provider delta.
    let events = stream(
        vec![paced_text(text, 4, Some(25))],
        json!({"deltaIntervalMs": 0}),
    )
    .await;
    assert_eq!(deltas_of(&events, "text_delta").len(), text.len() / 4);
    // The same stream with a long interval: the first delta alone, the rest held and merged
    // until `text_end` ends the hold (the run settles long before the interval is over).
    let events = stream(
        vec![paced_text(text, 4, Some(25))],
        json!({"deltaIntervalMs": BEYOND_THE_BOUND_MS}),
    )
    .await;
    let deltas = deltas_of(&events, "text_delta");
    assert_eq!(deltas.concat(), text);
    assert!(deltas.len() <= 3, "{deltas:?}");
}

#[tokio::test]
async fn non_delta_events_and_approvals_are_never_held_by_the_pace() {
    // Tool-call arguments streamed in small deltas, then an approval, then an answer: with an
    // interval beyond the test's bound, the run only settles if `toolcall_end`, `message_end`
    // and the approval's barrier each end the hold at once.
    let args = json!({"path": "notes.txt", "content": "paced content, streamed slowly"});
    let mut call = MockResponse::tool_call("call_1", "write", args.clone());
    call.chunk_size = Some(3);
    let answer = paced_text("Written.", 2, None);
    let (mock, client) = agent_setup(
        vec![call, answer],
        LspClient::agent_caps(false),
        json!({"deltaIntervalMs": BEYOND_THE_BOUND_MS, "approval": {"default": "ask"}}),
    )
    .await;
    let (session, run, id) = prompt(&client, json!({"message": "Write it."})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());

    let streamed: Value = serde_json::from_str(&deltas_of(&events, "toolcall_delta").concat())
        .expect("the argument deltas rebuild the arguments");
    assert_eq!(streamed, args);
    assert_eq!(deltas_of(&events, "text_delta").concat(), "Written.");
    // Guarantee 5 still holds: the approval follows every event of the message that asked.
    let log = client.log();
    let approval_at = log
        .iter()
        .position(|m| m["method"] == "agent/beforeToolCall")
        .expect("an approval was asked");
    let last_before = log
        .iter()
        .rposition(|m| {
            m["method"] == "$/agentEvent"
                && (m["params"]["event"]["type"] == "tool_execution_start"
                    || m["params"]["event"]["assistantMessageEvent"]["type"] == "toolcall_delta")
        })
        .unwrap();
    assert!(last_before < approval_at, "{last_before} vs {approval_at}");
}
