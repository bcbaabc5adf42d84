//! The real `agent-lsp run` binary, each run with its own environment: proxies from the
//! environment (a `CONNECT` tunnel for https, forwarding for http, `NO_PROXY`, loopback always
//! direct), a CA trusted through `SSL_CERT_FILE`, HTTP/2 offered by ALPN, and an answer that is
//! not an event stream reaching the user.

use std::process::Output;

use agent_lsp::testing::MockProvider;
use serde_json::json;

use super::super::support::cli_run::{CliEnv, json_lines, stderr, stdout};
use super::common::mock;
use super::loopback::*;

/// A mock answering each request with the next of `texts`.
async fn answering_texts(texts: &[&str]) -> MockProvider {
    let responses: Vec<_> = texts.iter().map(|text| json!({"text": text})).collect();
    mock(&json!({ "responses": responses }).to_string()).await
}

/// `agent-lsp run` of the `openai` provider at `base_url`, with `vars` set.
async fn run_at(base_url: &str, vars: &[(&str, &str)], json: bool) -> Output {
    let mut env = CliEnv::new();
    env.set("OPENAI_BASE_URL", base_url);
    env.set("OPENAI_API_KEY", "test-key");
    for (name, value) in vars {
        env.set(name, value);
    }
    let mut args = vec!["run", "--no-session", "--model", "openai/mock-model"];
    if json {
        args.push("--json");
    }
    args.push("hi");
    env.run(&args).await
}

/// `Proxy-Authorization` for `me:secret`.
const CREDENTIALS: &str = "proxy-authorization: basic bwu6c2vjcmv0\r\n";

#[tokio::test]
async fn https_goes_through_a_connect_tunnel_trusting_the_ca_of_ssl_cert_file() {
    let pki = TestPki::new();
    let mock = answering_texts(&["through the tunnel"]).await;
    let (front, offered) = tls_front(&pki, format!("127.0.0.1:{}", mock.port())).await;
    let (proxy, heads) = proxy(format!("127.0.0.1:{front}")).await;
    let base_url = format!("https://{PROXIED_HOST}:4443/v1");
    let proxy_url = format!("http://me:secret@{proxy}");
    let ca = pki.ca_file();
    let vars = [
        ("HTTPS_PROXY", proxy_url.as_str()),
        ("SSL_CERT_FILE", ca.to_str().unwrap()),
    ];
    let out = run_at(&base_url, &vars, false).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).starts_with("through the tunnel\n"));
    let head = heads.lock().unwrap()[0].clone();
    assert!(
        head.starts_with(&format!("CONNECT {PROXIED_HOST}:4443 HTTP/1.1\r\n")),
        "{head}"
    );
    assert!(head.to_ascii_lowercase().contains(CREDENTIALS), "{head}");
    assert_eq!(offered.lock().unwrap()[0], ["h2", "http/1.1"]);
    assert_eq!(mock.requests()[0].path, "/v1/chat/completions");

    // Without the CA the same server is not trusted, and the user is told why.
    let out = run_at(&base_url, &vars[..1], false).await;
    assert_eq!(out.status.code(), Some(1));
    let expected = format!(
        "Connection error: TLS handshake with {PROXIED_HOST}:4443 failed: invalid peer \
         certificate: UnknownIssuer"
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn http_is_forwarded_through_the_http_proxy() {
    let mock = answering_texts(&["forwarded"]).await;
    let (proxy, heads) = proxy(format!("127.0.0.1:{}", mock.port())).await;
    let proxy_url = format!("http://me:secret@{proxy}");
    let base_url = format!("http://{PROXIED_HOST}/v1");
    let out = run_at(&base_url, &[("HTTP_PROXY", &proxy_url)], false).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).starts_with("forwarded\n"));
    let head = heads.lock().unwrap()[0].clone();
    assert!(
        head.starts_with(&format!(
            "POST http://{PROXIED_HOST}/v1/chat/completions HTTP/1.1\r\n"
        )),
        "{head}"
    );
    assert!(head.to_ascii_lowercase().contains(CREDENTIALS), "{head}");
}

#[tokio::test]
async fn loopback_always_goes_direct_and_no_proxy_is_honoured() {
    let mock = answering_texts(&["direct", "direct again"]).await;
    let (proxy, heads) = proxy(format!("127.0.0.1:{}", mock.port())).await;
    let proxy_url = format!("http://{proxy}");
    let every_proxy = [
        ("HTTP_PROXY", proxy_url.as_str()),
        ("HTTPS_PROXY", proxy_url.as_str()),
        ("ALL_PROXY", proxy_url.as_str()),
    ];
    let localhost = format!("http://localhost:{}/v1", mock.port());
    for (base_url, text) in [
        (mock.openai_base_url(), "direct"),
        (localhost, "direct again"),
    ] {
        let out = run_at(&base_url, &every_proxy, false).await;
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        assert!(stdout(&out).starts_with(&format!("{text}\n")), "{base_url}");
    }
    // This name cannot be resolved: the proxy would have, so the error shows it went direct.
    let host = unresolvable_host();
    let mut vars = every_proxy.to_vec();
    vars.push(("NO_PROXY", "example.com, .invalid"));
    let out = run_at(&format!("http://{host}/v1"), &vars, false).await;
    assert_eq!(out.status.code(), Some(1));
    let expected = format!("Connection error: cannot resolve {host}: ");
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    assert!(
        heads.lock().unwrap().is_empty(),
        "nothing went through the proxy"
    );
}

#[tokio::test]
async fn a_page_that_is_not_an_event_stream_reaches_the_user() {
    let addr = answering("text/html", PORTAL).await;
    let out = run_at(&format!("http://{addr}/v1"), &[], true).await;
    assert_eq!(out.status.code(), Some(1));
    let expected = format!(
        "Expected an event stream but the server answered text/html (200 OK) from \
         http://{addr}/v1/chat/completions: {PORTAL}"
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    let events = json_lines(&out);
    let end = events
        .iter()
        .rfind(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(end["message"]["stopReason"], "error");
    assert_eq!(end["message"]["errorMessage"], expected.as_str());
}

#[tokio::test]
async fn a_failing_proxy_is_named_in_the_error() {
    let (refusing, _) = server(|mut stream, _| async move {
        read_request(&mut stream).await;
        let refusal = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
        let _ = tokio::io::AsyncWriteExt::write_all(&mut stream, refusal).await;
    })
    .await;
    let base_url = format!("https://{PROXIED_HOST}/v1");
    let out = run_at(
        &base_url,
        &[("HTTPS_PROXY", &format!("http://{refusing}"))],
        false,
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let expected = format!(
        "Connection error: the proxy http://{refusing} did not open a tunnel to {PROXIED_HOST}: \
         tunnel error: unsuccessful"
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));

    let down = format!("127.0.0.1:{}", closed_port());
    let proxy_url = format!("http://me:secret@{down}");
    let out = run_at(&base_url, &[("ALL_PROXY", &proxy_url)], false).await;
    assert_eq!(out.status.code(), Some(1));
    let expected = format!(
        "Connection error: cannot connect to the proxy http://{down} (for {PROXIED_HOST}): \
         connection refused"
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
}
