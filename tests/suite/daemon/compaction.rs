//! Compaction through the daemon (pi's C7): `agent/compact`, the threshold reached by the
//! usage the mock reports, a context-overflow error compacted and retried, a second overflow,
//! and an abort during the summary. Each checks the summarisation request, what the next request
//! keeps, the events and the stored `compaction` entry.

use super::*;

/// `keepRecentTokens: 1`: only the newest message is kept, so short scripts compact.
fn options() -> Value {
    json!({"compaction": {"keepRecentTokens": 1}})
}

fn openai_texts(body: &Value) -> Vec<(String, String)> {
    crate::suite::support::cli_run::request_texts(body)
}

fn session_lines(client: &LspClient, session: &str) -> Vec<Value> {
    let path = client
        .log()
        .into_iter()
        .find_map(|m| m["result"]["sessionFile"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no getState answer for {session}"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn stored(client: &LspClient, session: &str) -> Vec<Value> {
    client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    session_lines(client, session)
}

fn compaction_events(events: &[Value]) -> Vec<Value> {
    (events.iter())
        .filter(|e| {
            let kind = e["event"]["type"].as_str().unwrap_or_default();
            kind.starts_with("compaction_")
        })
        .map(|e| e["event"].clone())
        .collect()
}

fn overflow() -> MockResponse {
    MockResponse {
        status: Some(400),
        body: Some(
            json!({"error": {"message": "This model's maximum context length is 8192 tokens. \
                However, your messages resulted in 9000 tokens."}})
            .to_string(),
        ),
        ..Default::default()
    }
}

/// A prompt run to its end.
async fn exchange(client: &LspClient, session: Option<&str>, text: &str) -> (String, String) {
    let mut params = json!({"message": text});
    if let Some(session) = session {
        params["sessionId"] = json!(session);
    }
    let (session, run, _) = prompt(client, params).await;
    client.wait_settled(&session, &run).await;
    (session, run)
}

/// Manual compaction with instructions, cut inside the last turn (pi's split turn): the history
/// and the turn's start are summarised apart and merged; the next request holds the summary,
/// the kept response and the new prompt. Compacting again at once is refused ("Already
/// compacted"), with pi's events.
#[tokio::test]
async fn agent_compact_summarises_the_history_and_splits_the_last_turn() {
    let (mock, client) = agent_setup(
        vec![
            MockResponse::text("answer one"),
            MockResponse::text("answer two"),
            MockResponse::text("HISTORY"),
            MockResponse::text("PREFIX"),
            MockResponse::text("answer three"),
        ],
        LspClient::agent_caps(false),
        options(),
    )
    .await;
    let (session, _) = exchange(&client, None, "first task").await;
    exchange(&client, Some(&session), "second task").await;
    let result = client
        .request(
            "agent/compact",
            json!({"sessionId": session, "instructions": "the file names"}),
        )
        .await;
    let summary = "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX";
    assert_eq!(result["summary"], summary, "{result}");
    assert_eq!(
        result["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );
    assert!(result["tokensBefore"].as_u64().unwrap() > 0, "{result}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let history = openai_texts(&requests[2].body);
    assert_eq!(history[0].0, "system");
    assert!(
        history[0].1.contains("Do not continue the conversation")
            || history[0].1.contains("do not continue the conversation"),
        "{history:?}"
    );
    assert_eq!(history.len(), 2, "{history:?}");
    let text = &history[1].1;
    assert!(
        text.starts_with(
            "<conversation>\n[User]: first task\n\n[Assistant]: answer one\n</conversation>"
        ),
        "{text}"
    );
    assert!(
        text.contains("## Goal") && text.contains("## Next Steps"),
        "{text}"
    );
    assert!(text.ends_with("Additional focus: the file names"), "{text}");
    let prefix = &openai_texts(&requests[3].body)[1].1;
    assert!(
        prefix.starts_with("# Conversation\n[User]: second task\n\n# Instructions"),
        "{prefix}"
    );
    assert!(prefix.contains("## Original Request"), "{prefix}");

    let lines = stored(&client, &session).await;
    let entry = lines.iter().find(|l| l["type"] == "compaction").unwrap();
    assert_eq!(entry["summary"], summary);
    let kept = lines
        .iter()
        .find(|l| {
            l["message"]["role"] == "assistant"
                && l["message"]["content"][0]["text"] == "answer two"
        })
        .unwrap();
    assert_eq!(entry["firstKeptEntryId"], kept["id"], "{entry}");
    assert_eq!(result["firstKeptEntryId"], kept["id"]);

    let again = client
        .request_raw("agent/compact", json!({"sessionId": session}))
        .await;
    assert_eq!(again["error"]["code"], -32004, "{again}");
    assert_eq!(again["error"]["message"], "Already compacted");

    exchange(&client, Some(&session), "third task").await;
    let next = openai_texts(&mock.requests()[4].body);
    let roles: Vec<&str> = next.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{next:?}");
    assert_eq!(
        next[1].1,
        format!(
            "The conversation history before this point was compacted into the following \
             summary:\n\n<summary>\n{summary}\n</summary>"
        )
    );
    assert_eq!(next[2].1, "answer two");
    assert_eq!(next[3].1, "third task");

    let events = compaction_events(&client.events(&session));
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(
        events[0],
        json!({"type": "compaction_start", "reason": "manual"})
    );
    assert_eq!(events[1]["type"], "compaction_end");
    assert_eq!(events[1]["reason"], "manual");
    assert_eq!(events[1]["result"], result);
    assert_eq!(
        (&events[1]["aborted"], &events[1]["willRetry"]),
        (&json!(false), &json!(false))
    );
    assert!(events[1].get("errorMessage").is_none());
    assert_eq!(
        events[3],
        json!({"type": "compaction_end", "reason": "manual", "aborted": false,
               "willRetry": false, "errorMessage": "Compaction failed: Already compacted"})
    );
}

/// A response whose reported usage passes `contextWindow − reserveTokens`: the next request
/// is preceded by a compaction (`threshold`) in its run; the paths of the summarised calls end
/// the summary and are stored in `details`.
#[tokio::test]
async fn usage_past_the_threshold_compacts_before_the_next_request() {
    let big = MockResponse {
        usage: Some(agent_lsp::testing::MockUsage {
            input: 10_000_000,
            output: 10,
            ..Default::default()
        }),
        ..MockResponse::text("answer two")
    };
    let (mock, client) = agent_setup(
        vec![
            MockResponse::tool_call("r1", "read", json!({"path": "notes.txt"})),
            MockResponse::text("answer one"),
            big,
            MockResponse::text("SUMMARY"),
            MockResponse::text("done"),
        ],
        LspClient::agent_caps(false),
        options(),
    )
    .await;
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "the notes").unwrap();
    let created = client
        .request("agent/newSession", json!({"cwd": cwd.path()}))
        .await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    exchange(&client, Some(&session), "read the notes").await;
    exchange(&client, Some(&session), "second").await;
    let (_, run) = exchange(&client, Some(&session), "third").await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    let summarised = &openai_texts(&requests[3].body)[1].1;
    assert!(
        summarised.starts_with(
            "<conversation>\n[User]: read the notes\n\n[Assistant tool calls]: \
             read(path=\"notes.txt\")\n\n[Tool result]: "
        ),
        "{summarised}"
    );
    assert!(
        summarised.contains(
            "[Assistant]: answer one\n\n[User]: second\n\n[Assistant]: answer two\n</conversation>"
        ),
        "{summarised}"
    );
    let summary = "SUMMARY\n\n<read-files>\nnotes.txt\n</read-files>";
    let last = openai_texts(&requests[4].body);
    let roles: Vec<&str> = last.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "user"], "{last:?}");
    assert!(last[1].1.contains(summary), "{last:?}");
    assert_eq!(last[2].1, "third");

    let in_run: Vec<Value> = (client.events(&session).into_iter())
        .filter(|e| e["runId"] == run.as_str())
        .collect();
    let compactions = compaction_events(&in_run);
    assert_eq!(compactions.len(), 2, "{compactions:?}");
    assert_eq!(
        compactions[0],
        json!({"type": "compaction_start", "reason": "threshold"})
    );
    assert_eq!(compactions[1]["result"]["summary"], summary);
    assert_eq!(
        compactions[1]["result"]["details"]["readFiles"],
        json!(["notes.txt"])
    );
    let lines = stored(&client, &session).await;
    let entry = lines.iter().find(|l| l["type"] == "compaction").unwrap();
    assert_eq!(
        entry["details"],
        json!({"readFiles": ["notes.txt"], "modifiedFiles": []})
    );
    assert_eq!(
        entry["tokensBefore"],
        compactions[1]["result"]["tokensBefore"]
    );
    let third = lines
        .iter()
        .rev()
        .find(|l| l["message"]["role"] == "user")
        .unwrap();
    assert_eq!(entry["firstKeptEntryId"], third["id"]);
}

/// A context-length error (the OpenAI-compatible text) is compacted and the request retried
/// once, in the same run; the retried request no longer holds the summarised messages, and the
/// previous summary is updated (pi's iterative summary).
#[tokio::test]
async fn a_context_overflow_is_compacted_and_retried_once() {
    let (mock, client) = agent_setup(
        vec![
            MockResponse::text("answer one"),
            MockResponse::text("FIRST SUMMARY"),
            MockResponse::text("answer two"),
            overflow(),
            MockResponse::text("UPDATED SUMMARY"),
            MockResponse::text("answer three"),
        ],
        LspClient::agent_caps(false),
        options(),
    )
    .await;
    let (session, _) = exchange(&client, None, "one").await;
    client
        .request("agent/compact", json!({"sessionId": session}))
        .await;
    exchange(&client, Some(&session), "two").await;
    let (_, run) = exchange(&client, Some(&session), "three").await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    let update = &openai_texts(&requests[4].body)[1].1;
    let previous = "<previous-summary>\nNo prior history.\n\n---\n\n**Turn Context (split turn):**\n\nFIRST SUMMARY\n</previous-summary>";
    assert!(update.contains(previous), "{update}");
    assert!(
        update.contains("[Assistant]: answer one") && update.contains("[User]: two"),
        "{update}"
    );
    assert!(
        update.contains("Merge them into the checkpoint"),
        "{update}"
    );
    let retried = openai_texts(&requests[5].body);
    let texts: Vec<&str> = retried.iter().skip(1).map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts.len(), 2, "{retried:?}");
    assert!(texts[0].contains("UPDATED SUMMARY"));
    assert_eq!(texts[1], "three");

    let events: Vec<Value> = (client.events(&session).into_iter())
        .filter(|e| e["runId"] == run.as_str())
        .collect();
    let kinds = kinds(&events);
    let start = kinds.iter().position(|k| k == "compaction_start").unwrap();
    assert_eq!(kinds[start - 1], "message_end", "{kinds:?}");
    assert_eq!(
        kinds[start..start + 4],
        [
            "compaction_start",
            "compaction_end",
            "turn_end",
            "turn_start"
        ],
        "{kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|k| *k == "agent_end").count(), 1);
    let end = &events[start + 1]["event"];
    assert_eq!(
        (&end["reason"], &end["willRetry"]),
        (&json!("overflow"), &json!(true))
    );
    assert!(
        end["result"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("UPDATED SUMMARY")
    );
    let settled = events.last().unwrap();
    assert_eq!(settled["event"]["type"], "agent_settled");
    assert_eq!(settled["event"]["aborted"], false);
    let lines = stored(&client, &session).await;
    let summaries: Vec<&str> = (lines.iter())
        .filter(|l| l["type"] == "compaction")
        .map(|l| l["summary"].as_str().unwrap())
        .collect();
    assert_eq!(summaries.len(), 2);
    assert!(summaries[0].ends_with("FIRST SUMMARY") && summaries[1] == "UPDATED SUMMARY");
}

/// An overflow again after the compact-and-retry ends the run with pi's message.
#[tokio::test]
async fn a_second_overflow_ends_the_run_with_pis_message() {
    let (mock, client) = agent_setup(
        vec![
            MockResponse::text("answer one"),
            overflow(),
            MockResponse::text("SUMMARY"),
            overflow(),
        ],
        LspClient::agent_caps(false),
        options(),
    )
    .await;
    let (session, _) = exchange(&client, None, "one").await;
    let (_, run) = exchange(&client, Some(&session), "two").await;
    assert_eq!(mock.requests().len(), 4);
    let events: Vec<Value> = (client.events(&session).into_iter())
        .filter(|e| e["runId"] == run.as_str())
        .collect();
    let compactions = compaction_events(&events);
    assert_eq!(compactions.len(), 3, "{compactions:?}");
    assert_eq!(compactions[1]["willRetry"], true);
    assert_eq!(
        compactions[2],
        json!({"type": "compaction_end", "reason": "overflow", "aborted": false,
               "willRetry": false, "errorMessage": "Context overflow recovery failed after one \
               compact-and-retry attempt. Try reducing context or switching to a larger-context \
               model."})
    );
    let end = events
        .iter()
        .find(|e| e["event"]["type"] == "agent_end")
        .unwrap();
    let last = end["event"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["stopReason"], "error");
    assert!(
        last["errorMessage"]
            .as_str()
            .unwrap()
            .contains("maximum context length")
    );
}

/// `agent/abort` during the summary cancels the compaction: `compaction_end {aborted: true}`,
/// an error answer, nothing stored; a prompt is refused while it runs.
#[tokio::test]
async fn abort_cancels_a_running_compaction() {
    let slow = MockResponse {
        text: Some("never finished".into()),
        chunk_size: Some(2),
        delay_ms: Some(400),
        ..Default::default()
    };
    let (_mock, client) = agent_setup(
        vec![
            MockResponse::text("answer one"),
            MockResponse::text("answer two"),
            slow,
        ],
        LspClient::agent_caps(false),
        options(),
    )
    .await;
    let (session, _) = exchange(&client, None, "one").await;
    exchange(&client, Some(&session), "two").await;
    let (_, pending) = client
        .request_start("agent/compact", json!({"sessionId": session}))
        .await;
    client
        .wait_for("compaction_start", |m| {
            m["params"]["event"]["type"] == "compaction_start"
        })
        .await;
    let refused = client
        .request_raw(
            "agent/prompt",
            json!({"sessionId": session, "message": "now"}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32001, "{refused}");
    let aborted = client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    assert_eq!(aborted["aborted"], true);
    let answer = tokio::time::timeout(HANG_BOUND, pending)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer["error"]["code"], -32004, "{answer}");
    assert_eq!(answer["error"]["message"], "Compaction cancelled");
    let events = compaction_events(&client.events(&session));
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "compaction_end", "reason": "manual", "aborted": true, "willRetry": false})
    );
    let lines = stored(&client, &session).await;
    assert!(lines.iter().all(|l| l["type"] != "compaction"));
}

/// `/compact [instructions]` as a prompt is `agent/compact` answered at once: the reply says the
/// command started, the events carry the result, the summary request carries the instructions,
/// nothing reaches the loop, and the next request starts from the summary.
#[tokio::test]
async fn slash_compact_compacts_like_agent_compact() {
    let (mock, client) = agent_setup(
        vec![
            MockResponse::text("answer one"),
            MockResponse::text("answer two"),
            MockResponse::text("SUMMARY"),
            MockResponse::text("PREFIX"),
            MockResponse::text("answer three"),
        ],
        LspClient::agent_caps(false),
        options(),
    )
    .await;
    let (session, _) = exchange(&client, None, "first task").await;
    exchange(&client, Some(&session), "second task").await;
    let reply = client
        .request(
            "agent/prompt",
            json!({"sessionId": session, "message": "/compact keep the API"}),
        )
        .await;
    assert_eq!(reply["disposition"], "command", "{reply}");
    assert_eq!(reply["command"], "compact", "{reply}");
    assert!(reply.get("runId").is_none(), "{reply}");
    let end = client
        .wait_for("compaction_end", |m| {
            m["params"]["event"]["type"] == "compaction_end"
        })
        .await;
    let end = &end["params"]["event"];
    assert_eq!(end["reason"], "manual", "{end}");
    let summary = "SUMMARY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX";
    assert_eq!(end["result"]["summary"], summary, "{end}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "only the summary requests were added");
    let summary_request = openai_texts(&requests[2].body);
    let text = &summary_request.last().unwrap().1;
    assert!(text.ends_with("Additional focus: keep the API"), "{text}");
    assert!(!text.contains("/compact"), "{text}");

    exchange(&client, Some(&session), "third task").await;
    let next = openai_texts(&mock.requests()[4].body);
    assert!(
        next[1]
            .1
            .contains(&format!("<summary>\n{summary}\n</summary>")),
        "{next:?}"
    );
    assert_eq!(next.last().unwrap().1, "third task");
    let lines = stored(&client, &session).await;
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "compaction").count(),
        1
    );
    assert!(
        !lines
            .iter()
            .any(|l| l["message"]["content"].to_string().contains("/compact")),
        "the command is not recorded as a message"
    );
}
