//! The `ask_user` tool over ACP: `elicitation/create` for a client that takes form elicitations
//! (each action, a typed answer, a multiple choice, a cancelled turn), else
//! `session/request_permission` with the options as permission options.

use serde_json::{Value, json};

use super::support::{AcpEnv, Transcript, steps};

fn ask(id: &str, question: &str, options: Value, multi: bool) -> Value {
    json!({"toolCalls": [{"id": id, "name": "ask_user",
        "arguments": {"question": question, "options": options, "multiSelect": multi}}]})
}

fn typed(id: &str, question: &str) -> Value {
    json!({"toolCalls": [{"id": id, "name": "ask_user", "arguments": {"question": question}}]})
}

/// The text the call's final update shows.
fn result_text(t: &Transcript, id: &str) -> String {
    let updates = t.tool_call(id);
    updates.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn questions_go_out_as_form_elicitations_and_come_back_as_answers() {
    let colours = json!([{"label": "red", "description": "warm"}, {"label": "blue"}]);
    let env = AcpEnv::with_script(json!({"responses": [
        ask("q1", "Which colour?", colours.clone(), false),
        typed("q2", "Your name?"),
        ask("q3", "Which colour now?", colours, false),
        ask("q4", "Which days?", json!([{"label": "mon"}, {"label": "tue"}, {"label": "wed"}]), true),
        {"text": "done"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"elicitation": true, "elicitations": [
                {"action": "accept", "content": {"answer": "blue", "text": "mostly"}},
                {"action": "accept", "content": {"text": "Ada"}},
                {"action": "decline"},
                {"action": "accept", "content": {"answer": ["mon", "wed"]}},
            ]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "ask", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(t.0["unusedElicitations"], json!([]));
    assert_eq!(
        result_text(&t, "q1"),
        "The user answered: blue\nThe user added: mostly"
    );
    assert_eq!(result_text(&t, "q2"), "The user answered: Ada");
    assert_eq!(result_text(&t, "q3"), "The user gave no answer.");
    assert_eq!(result_text(&t, "q4"), "The user selected: mon, wed");
    let asked = t.agent_requests("elicitation/create");
    let session = t.result("new")["sessionId"].clone();
    let first = asked[0];
    assert_eq!(first["mode"], "form");
    assert_eq!(first["sessionId"], session);
    assert_eq!(first["toolCallId"], "q1");
    assert_eq!(first["message"], "Which colour?");
    assert_eq!(
        first["requestedSchema"]["properties"]["answer"]["oneOf"],
        json!([{"const": "red", "title": "red", "description": "warm"},
               {"const": "blue", "title": "blue"}])
    );
    assert_eq!(
        first["requestedSchema"]["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(asked[1]["requestedSchema"]["required"], json!(["text"]));
    let days = &asked[3]["requestedSchema"]["properties"]["answer"];
    assert_eq!(days["type"], "array");
    assert_eq!(
        days["items"]["anyOf"][2],
        json!({"const": "wed", "title": "wed"})
    );
    assert!(t.agent_requests("session/request_permission").is_empty());
    let call = t.tool_call("q1");
    assert_eq!(call[0]["title"], "Ask: Which colour?");
    // ACP's default kind, `other`, goes without saying.
    assert!(call[0].get("kind").is_none(), "{}", call[0]);
}

#[tokio::test]
async fn cancelling_the_turn_during_a_question_cancels_it() {
    let env = AcpEnv::with_script(json!({"responses": [
        ask("q1", "Which?", json!([{"label": "a"}]), false),
        {"text": "next turn"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"elicitation": true, "elicitations": ["cancelTurn"]},
            "steps": steps(&env, vec![
                json!({"op": "prompt", "text": "ask", "as": "p1"}),
                json!({"op": "prompt", "text": "again", "as": "p2"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p1"), "cancelled");
    assert_eq!(t.stop_reason("p2"), "end_turn");
    assert_eq!(t.agent_text(), "next turn");
}

#[tokio::test]
async fn without_elicitation_a_choice_is_a_permission_request_and_typing_has_no_one() {
    let env = AcpEnv::with_script(json!({"responses": [
        ask("q1", "Which colour?", json!([{"label": "red", "description": "warm"}, {"label": "blue"}]), false),
        ask("q2", "Which colour now?", json!([{"label": "red"}, {"label": "blue"}]), false),
        typed("q3", "Your name?"),
        {"text": "done"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"permissions": ["option_2", "no_answer"]},
            "steps": steps(&env, vec![json!({"op": "prompt", "text": "ask", "as": "p"})]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    assert_eq!(result_text(&t, "q1"), "The user answered: blue");
    assert_eq!(result_text(&t, "q2"), "The user gave no answer.");
    let q3 = result_text(&t, "q3");
    assert!(
        q3.starts_with("No one can answer: the client takes no typed answers"),
        "{q3}"
    );
    let asked = t.agent_requests("session/request_permission");
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "q1");
    assert_eq!(
        asked[0]["toolCall"]["content"][0]["content"]["text"],
        "Which colour?\nred: warm"
    );
    assert_eq!(
        asked[0]["options"],
        json!([{"optionId": "option_1", "name": "red", "kind": "allow_once"},
               {"optionId": "option_2", "name": "blue", "kind": "allow_once"},
               {"optionId": "no_answer", "name": "Don't answer", "kind": "reject_once"}])
    );
    assert!(t.agent_requests("elicitation/create").is_empty());
}
