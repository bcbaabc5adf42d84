//! Daemon tests: `agent/removeQueued` removes one queued message from the id mirror and from
//! the agent's own queue, so it is never delivered.

use super::*;

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|m| m["messageId"].as_str().unwrap().to_owned())
        .collect()
}

/// The user texts the model was sent in request `index`.
fn sent_texts(mock: &agent_lsp::testing::MockProvider, index: usize) -> String {
    mock.requests()[index].body["messages"].to_string()
}

#[tokio::test]
async fn remove_queued_drops_one_message_from_either_queue() {
    let (mock, client) = agent_setup(
        vec![
            bash_call("c1", "echo held"),
            MockResponse::text("after steering"),
            MockResponse::text("after follow-up"),
        ],
        LspClient::agent_caps(false),
        json!({}),
    )
    .await;
    client.set_approvals(Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    // The run is held at its approval: it cannot poll its queues until we answer.
    let asked = client
        .wait_for("approval", |m| m["method"] == "agent/beforeToolCall")
        .await;
    let mut queued = Vec::new();
    for (method, text) in [
        ("agent/steer", "steer-one"),
        ("agent/steer", "steer-two"),
        ("agent/followUp", "follow-one"),
        ("agent/followUp", "follow-two"),
    ] {
        let r = client
            .request(method, json!({"sessionId": session, "message": text}))
            .await;
        queued.push(r["messageId"].as_str().unwrap().to_owned());
    }
    let (remove_id, rx) = client
        .request_start(
            "agent/removeQueued",
            json!({"sessionId": session, "messageId": queued[0]}),
        )
        .await;
    let r = rx.await.unwrap()["result"].clone();
    assert_eq!(r["removed"], true, "{r}");
    assert_eq!(ids(&r["steering"]), vec![queued[1].clone()]);
    assert_eq!(
        ids(&r["followUp"]),
        vec![queued[2].clone(), queued[3].clone()]
    );
    let r = client
        .request(
            "agent/removeQueued",
            json!({"sessionId": session, "messageId": queued[3]}),
        )
        .await;
    assert_eq!(r["removed"], true, "{r}");
    assert_eq!(ids(&r["followUp"]), vec![queued[2].clone()]);
    // Removing again, or an id that never existed: nothing happens.
    for id in [queued[3].as_str(), "no-such-id"] {
        let again = client
            .request(
                "agent/removeQueued",
                json!({"sessionId": session, "messageId": id}),
            )
            .await;
        assert_eq!(again["removed"], false, "{again}");
        assert_eq!(ids(&again["steering"]), vec![queued[1].clone()]);
    }
    let unknown = client
        .request_raw(
            "agent/removeQueued",
            json!({"sessionId": "nope", "messageId": queued[1]}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let missing = client
        .request_raw("agent/removeQueued", json!({"sessionId": session}))
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");

    // The queue_update of the first removal follows its response on the wire.
    let log = client.log();
    let response_at = log
        .iter()
        .position(|m| m["id"] == remove_id && m.get("method").is_none())
        .unwrap();
    let update_at = log
        .iter()
        .position(|m| {
            let e = &m["params"]["event"];
            e["type"] == "queue_update"
                && ids(&e["steering"]) == vec![queued[1].clone()]
                && e["followUp"].as_array().unwrap().len() == 2
        })
        .expect("a queue_update after the removal");
    assert!(response_at < update_at);

    client
        .reply(&asked["id"], json!({"decision": "allow"}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(kinds(&events).last().unwrap(), "agent_settled");
    // Only the messages left in the queues reached the model.
    assert_eq!(mock.requests().len(), 3);
    let second = sent_texts(&mock, 1);
    assert!(
        second.contains("steer-two") && !second.contains("steer-one"),
        "{second}"
    );
    let third = sent_texts(&mock, 2);
    assert!(third.contains("follow-one"), "{third}");
    assert!(
        !third.contains("follow-two") && !third.contains("steer-one"),
        "{third}"
    );
    let last_update = events
        .iter()
        .rev()
        .find(|e| e["event"]["type"] == "queue_update")
        .unwrap();
    assert_eq!(last_update["event"]["steering"], json!([]));
    assert_eq!(last_update["event"]["followUp"], json!([]));
}
