//! The network by allowlist (`--sandbox-allow-domain`): the command's only route out is the
//! daemon's proxy, which lets allowed hosts through (plain HTTP and `CONNECT` tunnels) and
//! refuses the rest; going around it leads nowhere.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::attack;

/// A loopback web server that answers every request with `hello`.
async fn origin() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = conn
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    port
}

#[tokio::test]
async fn only_allowed_hosts_are_reached_and_only_through_the_proxy() {
    let port = origin().await;
    let url = format!("http://127.0.0.1:{port}/");
    let a = attack(
        &[
            // The test's server is on loopback, which `NO_PROXY` sends direct: `--noproxy ''`
            // makes curl take the proxy as it would for any other host.
            format!("curl -sS --noproxy '' {url}"),
            format!("curl -sS --noproxy '' --proxytunnel {url}"),
            "curl -sS -o /dev/null -w '%{http_code}' http://example.com/; echo; curl -sS https://example.com/ 2>&1 | head -1".into(),
            format!("curl -sS --noproxy '*' {url} 2>&1; echo \" [$?]\""),
            "echo \"proxy=$HTTPS_PROXY\"".into(),
        ],
        &["--sandbox-allow-domain", "127.0.0.1"],
        |_| {},
    )
    .await;
    a.assert_ran();
    let results = a.results();
    assert_eq!(results[0], "hello", "{results:?}");
    assert_eq!(results[1], "hello", "{results:?}");
    assert!(results[2].starts_with("403\n"), "{results:?}");
    assert!(
        results[2].contains("CONNECT tunnel failed, response 403"),
        "{results:?}"
    );
    // Around the proxy: the namespace's loopback has nothing, and Landlock allows no other port.
    assert!(
        results[3].contains("[7]") || results[3].contains("Permission denied"),
        "{results:?}"
    );
    assert!(!results[3].contains("hello"), "{results:?}");
    assert_eq!(results[4], "proxy=http://127.0.0.1:3128");
}
