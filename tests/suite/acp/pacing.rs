//! How streamed text reaches the client: deltas merged into paced chunks of one message, and
//! automatic compactions told as a message of their own.

use serde_json::{Value, json};

use super::support::{AcpEnv, steps};

fn message_chunks<'a>(updates: &[&'a Value]) -> Vec<&'a Value> {
    (updates.iter().copied())
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .collect()
}

/// 3,000 one-byte deltas at the default 16 ms pace: the text arrives whole, in order, under one
/// `messageId`, in far fewer chunks than deltas (a waiting chunk takes the deltas behind it).
#[tokio::test]
async fn many_deltas_arrive_merged_into_chunks_of_one_message() {
    let text: String = (0..3000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let env = AcpEnv::with_script(json!({"responses": [
        {"thinking": "think ".repeat(200), "text": text, "chunkSize": 1}
    ]}))
    .await;
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "write", "as": "p"}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(t.agent_text(), text);
    assert_eq!(t.chunks("agent_thought_chunk"), "think ".repeat(200));
    let updates = t.updates();
    let chunks = message_chunks(&updates);
    assert!(
        chunks.len() < 300,
        "{} chunks for 3,000 deltas: not merged",
        chunks.len()
    );
    let ids: std::collections::HashSet<&Value> = chunks.iter().map(|c| &c["messageId"]).collect();
    assert_eq!(ids.len(), 1, "one message: {ids:?}");
    // Thoughts come before the text, never merged into it.
    let first_text = (updates.iter())
        .position(|u| u["sessionUpdate"] == "agent_message_chunk")
        .unwrap();
    assert!(
        (updates[first_text..].iter()).all(|u| u["sessionUpdate"] != "agent_thought_chunk"),
        "a thought after the text"
    );
}

/// `_meta["agent-lsp"].deltaIntervalMs` of `initialize` sets the pace; with a mock that waits
/// 30 ms between deltas and a pace of 0, every delta is its own chunk.
#[tokio::test]
async fn the_pace_is_the_clients_choice() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": "abcdef", "chunkSize": 1, "delayMs": 30}
    ]}))
    .await;
    let t = env
        .run(json!({"steps": [
            {"op": "initialize", "meta": {"agent-lsp": {"deltaIntervalMs": 0}}},
            {"op": "new", "cwd": env.project()},
            {"op": "prompt", "text": "write", "as": "p"},
        ]}))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let updates = t.updates();
    let chunks: Vec<&str> = (message_chunks(&updates).iter())
        .map(|c| c["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(chunks, ["a", "b", "c", "d", "e", "f"]);
}

/// A response whose usage passes the model's window: before the next prompt's request the
/// session compacts, and the client is told in an agent message with pi's `compaction_end` in
/// `_meta`, inside that prompt's turn.
#[tokio::test]
async fn an_automatic_compaction_is_told_in_the_turn_it_happens() {
    let env = AcpEnv::with_script(json!({"responses": [
        {"text": "answer one", "usage": {"input": 10_000_000, "output": 10}},
        {"text": "SUMMARY"},
        {"text": "done"}
    ]}))
    .await;
    let config = env.home.path().join("config/agent-lsp");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    let t = env
        .run(json!({"steps": steps(&env, vec![
            json!({"op": "prompt", "text": "first", "as": "p1"}),
            json!({"op": "prompt", "text": "second", "as": "p2"}),
        ])}))
        .await;
    assert_eq!(t.stop_reason("p1"), "end_turn");
    assert_eq!(t.stop_reason("p2"), "end_turn");
    let updates = t.updates();
    let told: Vec<&Value> = (message_chunks(&updates).into_iter())
        .filter(|c| !c["_meta"]["agent-lsp"]["compaction"].is_null())
        .collect();
    assert_eq!(told.len(), 1, "{updates:?}");
    let text = told[0]["content"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Compacted the conversation automatically (the context neared"),
        "{text}"
    );
    let end = &told[0]["_meta"]["agent-lsp"]["compaction"];
    assert_eq!(end["reason"], "threshold");
    assert_eq!(end["result"]["summary"], "SUMMARY");
    assert_eq!(t.agent_text(), format!("answer one{text}done"));
    let requests = env.mock.as_ref().unwrap().requests();
    assert_eq!(requests.len(), 3, "one summary request");
    assert!(requests[2].body.to_string().contains("SUMMARY"));
}
