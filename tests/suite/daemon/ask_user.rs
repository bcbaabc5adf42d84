//! Daemon tests: asking the user. The `ask_user` tool through `agent/askUser` (each action, a
//! malformed answer, an error reply, an abort while pending), an agent client that takes no
//! questions, a generic client's `window/showMessageRequest`, and an MCP server's elicitation
//! answered field by field.

use std::sync::{Arc, Mutex};

use super::*;

fn ask_caps() -> Value {
    let mut caps = LspClient::agent_caps(false);
    caps["experimental"]["agent"]["askUser"] = json!(true);
    caps
}

fn ask(id: &str, question: &str, options: Value) -> MockResponse {
    MockResponse::tool_call(
        id,
        "ask_user",
        json!({"question": question, "options": options}),
    )
}

/// Every text block of each tool result, joined.
fn result_texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| {
            (e["event"]["result"]["content"].as_array().unwrap().iter())
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// Answers `agent/askUser` with `answers` in order.
fn answer_in_order(client: &LspClient, answers: Vec<Value>) {
    let answers = Arc::new(Mutex::new(answers));
    client.set_responder(
        "agent/askUser",
        Box::new(move |_| Some(answers.lock().unwrap().remove(0))),
    );
}

#[tokio::test]
async fn ask_user_is_answered_through_agent_ask_user_with_each_action() {
    let options = json!([{"label": "red", "description": "warm"}, {"label": "blue"}]);
    let responses = vec![
        ask("q1", "Which colour?", options.clone()),
        ask("q2", "Which colour now?", options.clone()),
        ask("q3", "Which colour then?", options.clone()),
        ask("q4", "Which colour at last?", options.clone()),
        ask("q5", "Which colour, really?", options),
        MockResponse::tool_call("q6", "ask_user", json!({"question": "Your name?"})),
        MockResponse::text("done"),
    ];
    let (mock, client) = agent_setup(responses, ask_caps(), json!({})).await;
    answer_in_order(
        &client,
        vec![
            json!({"action": "accept", "selected": ["blue"]}),
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!({"action": "accept", "selected": ["green"]}),
            json!({"action": "accept", "selected": ["red"], "text": "but darker"}),
            json!({"action": "accept", "text": "Ada"}),
        ],
    );
    let (session, run, id) = prompt(&client, json!({"message": "ask me"})).await;
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert_eq!(
        result_texts(&events),
        [
            "The user answered: blue",
            "The user gave no answer.",
            "The question was cancelled.",
            "The question was cancelled (a malformed answer: \"green\" is not one of the options).",
            "The user answered: red\nThe user added: but darker",
            "The user answered: Ada",
        ]
    );
    let details: Vec<Value> = (events.iter())
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| e["event"]["result"]["details"].clone())
        .collect();
    assert_eq!(
        details[0],
        json!({"outcome": "answered", "answer": ["blue"]})
    );
    assert_eq!(details[1], json!({"outcome": "declined"}));
    assert_eq!(details[5], json!({"outcome": "answered", "text": "Ada"}));
    let asked = requests_of(&client, "agent/askUser");
    assert_eq!(asked.len(), 6);
    assert_eq!(
        asked[0]["params"],
        json!({"sessionId": session, "runId": run, "toolCallId": "q1", "question": "Which colour?",
               "options": [{"label": "red", "description": "warm"}, {"label": "blue"}],
               "multiSelect": false, "allowText": true})
    );
    let free = &asked[5]["params"];
    assert!(
        free.get("options").is_none() && free["allowText"] == true,
        "{free}"
    );
    assert!(
        requests_of(&client, "agent/beforeToolCall").is_empty(),
        "asking needs no approval"
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn an_error_reply_cancels_the_question_saying_why() {
    let responses = vec![
        ask("q1", "Go on?", json!([{"label": "yes"}])),
        MockResponse::text("done"),
    ];
    let (_mock, client) = agent_setup(responses, ask_caps(), json!({})).await;
    client.set_responder("agent/askUser", Box::new(|_| None));
    let (session, run, _) = prompt(&client, json!({"message": "ask"})).await;
    let asked = client
        .wait_for("the question", |m| m["method"] == "agent/askUser")
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": asked["id"],
                      "error": {"code": -32601, "message": "no question UI"}}))
        .await;
    let events = client.wait_settled(&session, &run).await;
    assert_eq!(
        result_texts(&events),
        ["The question was cancelled (the client answered with an error: no question UI)."]
    );
}

#[tokio::test]
async fn abort_while_a_question_is_pending_withdraws_it_and_ends_the_run() {
    let responses = vec![
        ask("q1", "Which?", json!([{"label": "a"}])),
        MockResponse::text("never"),
    ];
    let (mock, client) = agent_setup(responses, ask_caps(), json!({})).await;
    client.set_responder("agent/askUser", Box::new(|_| None));
    let (session, run, id) = prompt(&client, json!({"message": "ask"})).await;
    let asked = client
        .wait_for("the question", |m| m["method"] == "agent/askUser")
        .await;
    let aborted = client
        .request("agent/abort", json!({"sessionId": session}))
        .await;
    assert_eq!(aborted, json!({"aborted": true}));
    let cancel = client
        .wait_for("its withdrawal", |m| m["method"] == "$/cancelRequest")
        .await;
    assert_eq!(cancel["params"]["id"], asked["id"]);
    let events = client.wait_settled(&session, &run).await;
    assert_run_invariants(&client, &session, &run, id);
    assert!(settled_aborted(&events, &run));
    // A late answer is ignored and the daemon goes on.
    client
        .reply(&asked["id"], json!({"action": "decline"}))
        .await;
    assert_eq!(mock.requests().len(), 1, "no request after the abort");
    let state = client
        .request("agent/getState", json!({"sessionId": session}))
        .await;
    assert_eq!(state["isStreaming"], false);
}

#[tokio::test]
async fn an_agent_client_without_ask_user_hears_that_no_one_can_answer() {
    let responses = vec![
        ask("q1", "Which?", json!([{"label": "a"}])),
        MockResponse::text("done"),
    ];
    let (_mock, client) = agent_setup(responses, LspClient::agent_caps(false), json!({})).await;
    let (session, run, _) = prompt(&client, json!({"message": "ask"})).await;
    let events = client.wait_settled(&session, &run).await;
    let text = &result_texts(&events)[0];
    assert!(
        text.starts_with("No one can answer: the editor takes no questions")
            && text.contains("askUser"),
        "{text}"
    );
    assert!(requests_of(&client, "agent/askUser").is_empty());
}

#[tokio::test]
async fn a_generic_client_chooses_with_message_actions_and_cannot_type() {
    let responses = vec![
        ask(
            "q1",
            "Which colour?",
            json!([{"label": "red", "description": "warm"}, {"label": "blue"}]),
        ),
        MockResponse::tool_call("q2", "ask_user", json!({"question": "Your name?"})),
        MockResponse::text("final answer"),
    ];
    let caps = json!({"window": {"showMessage": {"messageActionItem": {}}}});
    let (mock, client) = agent_setup(responses, caps, json!({})).await;
    client.set_reply("window/showMessageRequest", json!({"title": "blue"}));
    client
        .request(
            "workspace/executeCommand",
            json!({"command": "agent.prompt", "arguments": ["ask me"]}),
        )
        .await;
    client
        .wait_for("the final message", |m| {
            m["method"] == "window/showMessage" && m["params"]["message"] == "final answer"
        })
        .await;
    let shown = requests_of(&client, "window/showMessageRequest");
    assert_eq!(shown.len(), 1, "the typed question is not shown");
    assert_eq!(
        shown[0]["params"],
        json!({"type": 3, "message": "agent-lsp asks: Which colour?\nred: warm",
               "actions": [{"title": "red"}, {"title": "blue"}]})
    );
    let requests = mock.requests();
    let last = &requests.last().unwrap().body;
    let results: Vec<&str> = (last["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results[0], "The user answered: blue");
    assert!(
        results[1].starts_with("No one can answer: the editor can only show choices"),
        "{}",
        results[1]
    );
}

/// `@modelcontextprotocol/server-everything`'s `trigger-elicitation-request`, called by the
/// model: its form is asked field by field through `agent/askUser` (an out-of-range integer
/// asked again), and the tool's result holds what the user accepted.
#[tokio::test]
async fn an_mcp_servers_elicitation_is_answered_by_the_user_field_by_field() {
    let everything = crate::suite::mcp::npm_servers()
        .join("@modelcontextprotocol/server-everything/dist/index.js");
    let responses = vec![
        MockResponse::tool_call("m1", "everything__trigger-elicitation-request", json!({})),
        MockResponse::text("thanks"),
    ];
    let (_mock, client) = agent_setup(
        responses,
        ask_caps(),
        json!({"mcpServers": {"everything": {"command": "node", "args": [everything]}}}),
    )
    .await;
    let integers = Arc::new(Mutex::new(vec!["500", "7"]));
    client.set_responder(
        "agent/askUser",
        Box::new(move |params| {
            let question = params["question"].as_str().unwrap();
            let text = |t: &str| json!({"action": "accept", "text": t});
            let pick = |labels: &[&str]| json!({"action": "accept", "selected": labels});
            Some(if question.contains("Your full, legal name") {
                text("Ada Lovelace")
            } else if question.contains("Agree to the terms") {
                pick(&["Yes"])
            } else if question.contains("Your email address") {
                text("ada@example.com")
            } else if question.contains("Your favorite integer") {
                text(integers.lock().unwrap().remove(0))
            } else if question.contains("favorite hero") {
                pick(&["Wonder Woman"])
            } else if question.contains("favorite instruments") {
                pick(&["Piano", "Drums"])
            } else {
                json!({"action": "decline"})
            })
        }),
    );
    let (session, run, _) = prompt(&client, json!({"message": "elicit"})).await;
    let events = client.wait_settled(&session, &run).await;
    let text = &result_texts(&events)[0];
    for line in [
        "User provided the requested information",
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Email: ada@example.com",
        "- Favorite Integer: 7",
        "\"titledSingleSelectEnum\": \"hero-3\"",
        // Unanswered optional fields take their defaults.
        "\"firstLine\": \"It was a dark and stormy night.\"",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    let raw = text.split("Raw result: ").nth(1).unwrap();
    let raw: Value = serde_json::from_str(raw.trim()).unwrap();
    assert_eq!(raw["action"], "accept");
    assert_eq!(
        raw["content"]["untitledMultipleSelectEnum"],
        json!(["Piano", "Drums"])
    );
    assert!(raw["content"].get("birthdate").is_none(), "{raw}");
    let asked = requests_of(&client, "agent/askUser");
    let first = &asked[0]["params"];
    assert!(
        (first["question"].as_str().unwrap())
            .starts_with("Please provide inputs for the following fields:\n\n"),
        "{first}"
    );
    for params in asked.iter().map(|r| &r["params"]) {
        assert_eq!(params["source"], json!({"mcpServer": "everything"}));
        assert_eq!(params["toolCallId"], "m1");
        assert_eq!(params["runId"], run.as_str());
    }
    let check = (asked.iter().map(|r| &r["params"]))
        .find(|p| {
            p["question"]
                .as_str()
                .unwrap()
                .contains("Agree to the terms")
        })
        .unwrap();
    assert_eq!(check["options"], json!([{"label": "Yes"}, {"label": "No"}]));
    assert_eq!(check["allowText"], false);
    let again = (asked
        .iter()
        .map(|r| r["params"]["question"].as_str().unwrap()))
    .filter(|q| q.contains("Your favorite integer"))
    .collect::<Vec<_>>();
    assert_eq!(again.len(), 2, "{again:?}");
    assert!(
        again[1].contains("100") && again[1].contains("Again"),
        "{}",
        again[1]
    );
}
