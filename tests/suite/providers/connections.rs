//! The providers' real HTTP client over loopback: errors that name the server and the cause
//! (refused, timeout, TLS, DNS, an answer that is not an event stream), and kept-alive
//! connections the server closes.

use std::time::{Duration, Instant};

use agent_lsp::agent::stream_contract::StreamRequest;
use agent_lsp::provider::ProviderRouter;
use tokio::io::AsyncWriteExt;

use super::common::*;
use super::loopback::*;

#[tokio::test]
async fn a_refused_connection_names_the_server() {
    let port = closed_port();
    for api in APIS {
        let model = model_at(api, &format!("http://127.0.0.1:{port}"));
        let events = run(&model, user_context("x"), no_retries()).await;
        assert_eq!(
            error_text(&events),
            format!(
                "Connection error: cannot connect to 127.0.0.1:{port}: connection refused \
                 (is the server running?)"
            ),
            "{api}"
        );
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_naming_it() {
    let (addr, _) = server(|mut stream, _| async move {
        read_request(&mut stream).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    for api in APIS {
        let mut options = no_retries();
        options
            .extra
            .insert("timeoutMs".into(), serde_json::json!(200));
        let model = model_at(api, &format!("http://{addr}"));
        let events = run(&model, user_context("x"), options).await;
        assert_eq!(
            error_text(&events),
            format!("Request timed out: no response from {addr} for 200 ms"),
            "{api}"
        );
    }
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_tls_error_naming_the_server() {
    let pki = TestPki::new();
    let mock = mock(r#"{"responses": []}"#).await;
    let (port, _) = tls_front(&pki, format!("127.0.0.1:{}", mock.port())).await;
    for api in APIS {
        let model = model_at(api, &format!("https://localhost:{port}/v1"));
        let events = run(&model, user_context("x"), no_retries()).await;
        let text = error_text(&events);
        assert!(
            text.starts_with(&format!(
                "Connection error: TLS handshake with localhost:{port} failed: invalid peer \
                 certificate: UnknownIssuer (a certificate problem"
            )) && text.contains("SSL_CERT_FILE"),
            "{api}: {text}"
        );
    }
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn an_unresolvable_name_is_a_dns_error_and_fails_fast() {
    let host = unresolvable_host();
    for api in APIS {
        let started = Instant::now();
        let model = model_at(api, &format!("http://{host}/v1"));
        let events = run(&model, user_context("x"), no_retries()).await;
        let text = error_text(&events);
        assert!(
            text.starts_with(&format!("Connection error: cannot resolve {host}: ")),
            "{api}: {text}"
        );
        assert!(started.elapsed() < Duration::from_secs(5), "no DNS query");
    }
}

#[tokio::test]
async fn an_answer_that_is_not_an_event_stream_is_shown() {
    let addr = answering("text/html; charset=utf-8", PORTAL).await;
    for (api, path) in [
        ("openai-completions", "/v1/chat/completions"),
        ("anthropic-messages", "/v1/messages"),
    ] {
        let model = model_at(api, &format!("http://{addr}/v1"));
        let events = run(&model, user_context("x"), no_retries()).await;
        assert_eq!(
            error_text(&events),
            format!(
                "Expected an event stream but the server answered text/html; charset=utf-8 \
                 (200 OK) from http://{addr}{path}: {PORTAL}"
            ),
            "{api}"
        );
    }
}

/// An OpenAI stream answering `text`, chunked, keeping the connection open.
fn kept_alive_answer(text: &str) -> String {
    let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
    let body = format!("data: {chunk}\n\ndata: [DONE]\n\n");
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
         {:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    )
}

#[tokio::test]
async fn kept_alive_connections_are_reused_and_replaced_once_the_server_closed_them() {
    // Connection 0 answers two requests and then closes without saying so; later ones answer
    // one request each, keeping the connection open.
    let (addr, accepted) = server(|mut stream, n| async move {
        let requests = if n == 0 { 2 } else { 1 };
        for i in 0..requests {
            if read_request(&mut stream).await.is_none() {
                return;
            }
            let answer = kept_alive_answer(&format!("connection {n} answer {i}"));
            stream.write_all(answer.as_bytes()).await.unwrap();
        }
        if n > 0 {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    })
    .await;
    let router = ProviderRouter::with_defaults();
    let model = model_at("openai-completions", &format!("http://{addr}/v1"));
    let mut texts = Vec::new();
    for _ in 0..3 {
        let events = run_with(
            &router,
            StreamRequest::new(model.clone(), user_context("x")),
        )
        .await;
        texts.push(done(&events).1.text());
        // Let connection 0's close arrive before the third request.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        texts,
        [
            "connection 0 answer 0",
            "connection 0 answer 1",
            "connection 1 answer 0"
        ]
    );
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
}
