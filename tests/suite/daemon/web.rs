//! Daemon tests: the web tools through the real binary, against web servers on loopback:
//! `web_fetch` (Markdown, passthrough, approval per site, redirects, limits, refusals) and
//! `web_search` (offered only when configured; SearXNG's JSON API).

use super::*;
use crate::suite::support::web_server::{Reply, WebServer};

const PAGE: &str = "<!doctype html><html><head><title>The Guide</title>\
    <script>var tracking = 1;</script></head><body>\
    <h1>Getting started</h1><p>Read the <a href=\"/docs/setup.html\">setup guide</a> first.</p>\
    <pre><code class=\"language-rust\">fn main() {\n    println!(\"hi\");\n}\n</code></pre>\
    </body></html>";

/// The docs site every test fetches from.
async fn docs_site() -> WebServer {
    WebServer::start(|target| {
        let big = || {
            let text: String = (1..=600_000).map(|i| format!("line {i}\n")).collect();
            Reply::ok("text/plain", text)
        };
        match target {
            "/guide.html" => Reply::ok("text/html; charset=utf-8", PAGE),
            "/data.json" => Reply::ok("application/json", r#"{"name":"agent-lsp","tools":[1,2]}"#),
            // Escape sequences a terminal would obey are removed.
            "/notes.txt" => Reply::ok("text/plain", "plain notes\u{1b}[2J\r\nsecond line"),
            "/big.txt" => big(),
            "/moved" => Reply::redirect("/guide.html"),
            "/away" => Reply::redirect("https://elsewhere.example/landing?x=1"),
            "/logo.png" => Reply::ok("image/png", &b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..]),
            "/manual.pdf" => Reply::ok("application/pdf", "%PDF-1.7"),
            _ => Reply::status(
                404,
                "text/html",
                "<h1>Not here</h1><p>No page at this address.</p>",
            ),
        }
    })
    .await
}

/// A daemon whose model is the mock (with `responses`), its temp dir `tmp`, and `env`.
async fn daemon(
    responses: Vec<MockResponse>,
    options: Value,
    env: Vec<(String, String)>,
) -> (MockProvider, LspClient, tempfile::TempDir) {
    let mock = MockProvider::start(MockScript { responses }).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut env = env;
    env.push(("TMPDIR".into(), tmp.path().display().to_string()));
    let client = LspClient::spawn(Spawn {
        provider_url: Some(mock.openai_base_url()),
        env,
    })
    .await;
    client
        .initialize(LspClient::agent_caps(false), options)
        .await;
    (mock, client, tmp)
}

fn fetch(id: &str, url: &str) -> MockResponse {
    MockResponse::tool_call(id, "web_fetch", json!({"url": url}))
}

/// Each tool call's result (`content`, `details`) and whether it failed, in order.
fn results(events: &[Value]) -> Vec<(Value, bool)> {
    events
        .iter()
        .filter(|e| e["event"]["type"] == "tool_execution_end")
        .map(|e| {
            (
                e["event"]["result"].clone(),
                e["event"]["isError"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The names of the tools the model was offered in its first request.
fn offered(mock: &MockProvider) -> Vec<String> {
    let first = &mock.requests()[0].body;
    (first["tools"].as_array().unwrap().iter())
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn web_fetch_returns_markdown_and_asks_once_per_site() {
    let site = docs_site().await;
    let other_host = format!("http://localhost:{}/notes.txt", site.port);
    let responses = vec![
        fetch("f1", &site.url("/guide.html")),
        fetch("f2", &site.url("/data.json")),
        fetch("f3", &other_host),
        MockResponse::text("done"),
    ];
    let (mock, client, _tmp) = daemon(responses, json!({}), vec![]).await;
    let answers = std::sync::Arc::new(std::sync::Mutex::new(vec![
        json!({"decision": "allowAlways"}),
        json!({"decision": "block", "reason": "not that host"}),
    ]));
    let queue = answers.clone();
    client.set_approvals(Box::new(move |_| Some(queue.lock().unwrap().remove(0))));
    let (session, run, _) = prompt(&client, json!({"message": "read the docs"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = results(&events);
    assert_eq!(results.len(), 3, "{results:?}");

    let (page, failed) = &results[0];
    assert!(!failed, "{page}");
    let page_text = text(page);
    assert!(page_text.contains("# Getting started"), "{page_text}");
    assert!(page_text.contains("Title: The Guide"), "{page_text}");
    assert!(
        page_text.contains(&format!("[setup guide]({})", site.url("/docs/setup.html"))),
        "links are absolute: {page_text}"
    );
    assert!(
        page_text.contains("```rust\nfn main() {\n    println!(\"hi\");\n}\n```"),
        "{page_text}"
    );
    assert!(!page_text.contains("tracking"), "{page_text}");
    assert_eq!(
        page["details"],
        json!({"url": site.url("/guide.html"), "finalUrl": site.url("/guide.html"), "status": 200,
               "contentType": "text/html; charset=utf-8", "bytes": PAGE.len(), "truncated": false})
    );

    let (json_page, failed) = &results[1];
    assert!(!failed);
    assert!(
        text(json_page).ends_with("{\"name\":\"agent-lsp\",\"tools\":[1,2]}"),
        "JSON as it is: {}",
        text(json_page)
    );
    let (refused, failed) = &results[2];
    assert!(*failed && text(refused) == "not that host", "{refused}");

    // Asked for the first fetch and for the other host, not for the site allowed always.
    let asked: Vec<Value> = requests_of(&client, "agent/beforeToolCall")
        .iter()
        .map(|r| r["params"].clone())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["kind"], "network");
    assert_eq!(
        asked[0]["title"],
        format!("Fetch {}", site.url("/guide.html"))
    );
    assert_eq!(
        asked[0]["preview"],
        json!({"type": "fetch", "url": site.url("/guide.html"), "host": "127.0.0.1", "local": true})
    );
    assert_eq!(asked[1]["title"], format!("Fetch {other_host}"));
    assert_eq!(asked[1]["preview"]["host"], "localhost");
    // The blocked fetch never reached the server.
    assert_eq!(site.targets(), ["/guide.html", "/data.json"]);
    assert!(offered(&mock).contains(&"web_fetch".to_owned()));
    assert!(
        !offered(&mock).contains(&"web_search".to_owned()),
        "no search service is configured: web_search is not offered"
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn redirects_limits_and_refusals() {
    let site = docs_site().await;
    let responses = vec![
        fetch("moved", &site.url("/moved")),
        fetch("away", &site.url("/away")),
        fetch("big", &site.url("/big.txt")),
        fetch("missing", &site.url("/nothing-here")),
        fetch("logo", &site.url("/logo.png")),
        fetch("pdf", &site.url("/manual.pdf")),
        fetch("file", "file:///etc/passwd"),
        MockResponse::tool_call(
            "prompted",
            "web_fetch",
            json!({"url": site.url("/notes.txt"), "prompt": "the second line"}),
        ),
        MockResponse::text("done"),
    ];
    // The policy lets the network tools run unasked.
    let (_mock, client, tmp) =
        daemon(responses, json!({"approval": {"network": "allow"}}), vec![]).await;
    client.set_approvals(Box::new(|params| panic!("asked: {params}")));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let results = results(&events);
    assert_eq!(results.len(), 8, "{results:?}");

    // A redirect within the site is followed.
    let (moved, failed) = &results[0];
    assert!(!failed);
    assert_eq!(moved["details"]["finalUrl"], site.url("/guide.html"));
    assert!(
        text(moved).contains(&format!("(redirected from {})", site.url("/moved"))),
        "{}",
        text(moved)
    );

    // One to another host is reported, not followed.
    let (away, failed) = &results[1];
    assert!(!failed);
    assert_eq!(
        text(away),
        "The URL redirected to https://elsewhere.example/landing?x=1 (another host); call \
         web_fetch with that URL to follow it."
    );
    assert_eq!(away["details"]["status"], 302);

    // A body over 5 MB: downloaded up to the cap, shown up to read's limits, spilled whole.
    let (big, failed) = &results[2];
    assert!(!failed);
    let big_text = text(big);
    assert_eq!(big["details"]["truncated"], true);
    assert_eq!(big["details"]["bytes"], 5 * 1024 * 1024);
    assert!(
        big_text.contains("\nline 2000\n\n[The page is larger than 5.0MB"),
        "{}",
        &big_text[big_text.len() - 400..]
    );
    assert!(
        big_text.contains("[Showing lines 1-2000 of "),
        "{}",
        &big_text[big_text.len() - 400..]
    );
    let spilled = big["details"]["fullOutputPath"].as_str().unwrap();
    assert!(
        spilled.starts_with(&tmp.path().display().to_string()),
        "{spilled}"
    );
    let full = std::fs::read_to_string(spilled).unwrap();
    assert_eq!(full.len(), 5 * 1024 * 1024);
    assert!(full.starts_with("line 1\nline 2\n"));

    // HTTP errors: the status and the start of the body, as a tool error.
    let (missing, failed) = &results[3];
    assert!(failed);
    assert_eq!(
        text(missing),
        format!(
            "HTTP 404 Not Found from {}:\n\n# Not here\n\nNo page at this address.",
            site.url("/nothing-here")
        )
    );

    // A small image is attached; other types are refused, and only http and https are fetched.
    let (logo, failed) = &results[4];
    assert!(!failed);
    assert_eq!(logo["content"][1]["type"], "image");
    assert_eq!(logo["content"][1]["mimeType"], "image/png");
    let (pdf, failed) = &results[5];
    assert!(
        *failed && text(pdf).contains("cannot read application/pdf content"),
        "{pdf}"
    );
    let (file, failed) = &results[6];
    assert!(failed, "{file}");
    assert!(
        text(file).contains("only fetches http and https URLs, not file:"),
        "{file}"
    );

    // The prompt is at the top, saying that no other model read the page.
    let (prompted, _) = &results[7];
    assert!(
        text(prompted)
            .starts_with("Looking for: the second line\n(No other model has read this page"),
        "{}",
        text(prompted)
    );
    assert!(
        text(prompted).ends_with("plain notes\nsecond line"),
        "{}",
        text(prompted)
    );

    // Neither the other host's page nor the refused ones' were requested; the PDF's body was
    // refused by its type.
    let targets = site.targets();
    assert_eq!(
        targets,
        [
            "/moved",
            "/guide.html",
            "/away",
            "/big.txt",
            "/nothing-here",
            "/logo.png",
            "/manual.pdf",
            "/notes.txt"
        ]
    );
}

#[tokio::test]
async fn a_url_that_cannot_be_fetched_is_refused_without_asking() {
    let responses = vec![
        fetch("ftp", "ftp://files.example/x"),
        MockResponse::text("done"),
    ];
    let (_mock, client, _tmp) = daemon(responses, json!({}), vec![]).await;
    client.set_approvals(Box::new(|params| panic!("asked: {params}")));
    let (session, run, _) = prompt(&client, json!({"message": "go"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (result, failed) = results(&events).remove(0);
    assert!(failed);
    assert!(
        text(&result).contains("only fetches http and https URLs, not ftp:"),
        "{result}"
    );
    assert!(requests_of(&client, "agent/beforeToolCall").is_empty());
}

#[tokio::test]
async fn web_search_lists_searxng_results_after_asking() {
    let searx = WebServer::start(|target| {
        if target.starts_with("/search?") {
            Reply::ok(
                "application/json",
                r#"{"query":"serde derive","results":[
                    {"title":"Derive | Serde","url":"https://serde.rs/derive.html","content":"How to derive Serialize and Deserialize."},
                    {"title":"serde_derive - Rust","url":"https://docs.rs/serde_derive","content":"Macros 1.1 implementation."},
                    {"title":"Third","url":"https://example.com/3","content":"Not asked for."}]}"#,
            )
        } else {
            Reply::status(404, "text/plain", "no")
        }
    })
    .await;
    let responses = vec![
        MockResponse::tool_call(
            "s1",
            "web_search",
            json!({"query": "serde derive", "limit": 2}),
        ),
        MockResponse::text("done"),
    ];
    let env = vec![("AGENT_LSP_SEARXNG_URL".into(), searx.url("/"))];
    let (mock, client, _tmp) = daemon(responses, json!({}), env).await;
    client.set_approvals(Box::new(|_| Some(json!({"decision": "allow"}))));
    let (session, run, _) = prompt(&client, json!({"message": "search"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (result, failed) = results(&events).remove(0);
    assert!(!failed, "{result}");
    assert_eq!(
        text(&result),
        "Results for \"serde derive\":\n\n\
         1. Derive | Serde\n   https://serde.rs/derive.html\n   How to derive Serialize and Deserialize.\n\n\
         2. serde_derive - Rust\n   https://docs.rs/serde_derive\n   Macros 1.1 implementation."
    );
    assert_eq!(searx.targets(), ["/search?q=serde+derive&format=json"]);
    let asked = requests_of(&client, "agent/beforeToolCall");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["params"]["kind"], "network");
    assert_eq!(asked[0]["params"]["title"], "Search the web: serde derive");
    assert!(offered(&mock).contains(&"web_search".to_owned()));
}

#[tokio::test]
async fn web_search_through_brave_sends_its_key_in_the_header() {
    let brave = WebServer::start(|_| {
        Reply::ok(
            "application/json",
            r#"{"type":"search","web":{"results":[
                {"title":"Async in depth","url":"https://tokio.rs/tokio/tutorial/async","description":"How <strong>async</strong> works."}]}}"#,
        )
    })
    .await;
    let responses = vec![
        MockResponse::tool_call(
            "s1",
            "web_search",
            json!({"query": "rust async", "limit": 3}),
        ),
        MockResponse::text("done"),
    ];
    let env = vec![
        ("BRAVE_API_KEY".into(), "brave-key".into()),
        (
            "AGENT_LSP_BRAVE_URL".into(),
            brave.url("/res/v1/web/search"),
        ),
    ];
    let (_mock, client, _tmp) =
        daemon(responses, json!({"approval": {"network": "allow"}}), env).await;
    let (session, run, _) = prompt(&client, json!({"message": "search"})).await;
    let events = client.wait_settled(&session, &run).await;
    let (result, failed) = results(&events).remove(0);
    assert!(!failed, "{result}");
    assert_eq!(
        text(&result),
        "Results for \"rust async\":\n\n1. Async in depth\n   https://tokio.rs/tokio/tutorial/async\n   \
         How <strong>async</strong> works."
    );
    assert_eq!(
        result["details"],
        json!({"query": "rust async", "service": "brave", "results": 1})
    );
    assert_eq!(brave.targets(), ["/res/v1/web/search?q=rust+async&count=3"]);
    let head = brave.heads()[0].to_ascii_lowercase();
    assert!(
        head.contains("\r\nx-subscription-token: brave-key\r\n"),
        "{head}"
    );
}
