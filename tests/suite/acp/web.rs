//! The web tools through ACP: `web_fetch` asks with `session/request_permission` as a `fetch`
//! tool call, an "always" answer covers its site only, and plan mode asks rather than refuses.

use serde_json::json;

use super::support::{AcpEnv, steps};
use crate::suite::support::web_server::{Reply, WebServer};

fn fetch(id: &str, url: &str) -> serde_json::Value {
    json!({"toolCalls": [{"id": id, "name": "web_fetch", "arguments": {"url": url}}]})
}

#[tokio::test]
async fn web_fetch_asks_as_a_fetch_and_always_covers_one_site() {
    let site = WebServer::start(|target| match target {
        "/a.html" => Reply::ok("text/html", "<h2>Section A</h2><p>alpha</p>"),
        _ => Reply::ok("text/plain", "beta"),
    })
    .await;
    let other_host = format!("http://localhost:{}/c.txt", site.port);
    let env = AcpEnv::with_script(json!({"responses": [
        fetch("f1", &site.url("/a.html")),
        fetch("f2", &site.url("/b.txt")),
        fetch("f3", &other_host),
        {"text": "read them"}
    ]}))
    .await;
    let t = env
        .run(json!({
            "client": {"permissions": ["allow_always", "reject_once"]},
            "steps": steps(&env, vec![
                // Plan mode changes nothing in the workspace, and the web tools do not: they ask.
                json!({"op": "request", "method": "session/set_mode", "as": "mode",
                       "params": {"sessionId": "$session", "modeId": "plan"}}),
                json!({"op": "prompt", "text": "read the docs", "as": "p"}),
            ]),
        }))
        .await;
    assert_eq!(t.stop_reason("p"), "end_turn");
    let asked = t.agent_requests("session/request_permission");
    assert_eq!(
        asked.len(),
        2,
        "the same site is not asked again: {asked:?}"
    );
    let first = &asked[0]["toolCall"];
    assert_eq!(first["toolCallId"], "f1");
    assert_eq!(first["kind"], "fetch");
    assert_eq!(first["title"], format!("Fetch {}", site.url("/a.html")));
    let note = first["content"][0]["content"]["text"].as_str().unwrap();
    assert_eq!(
        note,
        format!(
            "{}\n127.0.0.1 is this machine or a local network: approving lets the agent read from it.",
            site.url("/a.html")
        )
    );
    assert_eq!(asked[1]["toolCall"]["toolCallId"], "f3");
    // The pending tool call is a `fetch` too.
    assert_eq!(t.tool_call("f1")[0]["kind"], "fetch");
    assert_eq!(t.final_status("f1"), "completed");
    assert_eq!(t.final_status("f2"), "completed");
    assert_eq!(t.final_status("f3"), "failed");
    let page = t.tool_call("f1");
    let text = page.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("## Section A\n\nalpha"), "{text}");
    assert_eq!(site.targets(), ["/a.html", "/b.txt"]);
}
