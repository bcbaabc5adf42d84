//! A small web server on loopback for the web tools' tests: fixed routes by request target
//! (path and query), each request's target recorded, every answer `Connection: close`.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One answer.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::status(200, content_type, body)
    }

    pub fn status(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn redirect(location: &str) -> Reply {
        Reply {
            status: 302,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
        }
    }
}

type Route = dyn Fn(&str) -> Reply + Send + Sync;

/// The server; it stops with the test's runtime.
pub struct WebServer {
    pub port: u16,
    /// Each request's target and head (request line and headers), in order.
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl WebServer {
    /// Serves `route(target)` on `127.0.0.1` (any local name reaches it too).
    pub async fn start(route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> WebServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let route: Arc<Route> = Arc::new(route);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (route, log) = (route.clone(), log.clone());
                tokio::spawn(async move {
                    let Some((target, head)) = read_head(&mut stream).await else {
                        return;
                    };
                    log.lock().unwrap().push((target.clone(), head));
                    let reply = route(&target);
                    let mut head = format!(
                        "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n",
                        reply.status,
                        reason(reply.status),
                        reply.body.len()
                    );
                    for (name, value) in &reply.headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    // The client may stop reading (a capped download): the write then fails.
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&reply.body).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        WebServer { port, seen }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The request targets served so far, in order.
    pub fn targets(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// The request heads served so far, in order.
    pub fn heads(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, h)| h.clone())
            .collect()
    }
}

/// The request target of the request line and the whole head, once it has arrived.
async fn read_head(stream: &mut tokio::net::TcpStream) -> Option<(String, String)> {
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut piece = [0u8; 4096];
        let n = stream.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&piece[..n]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split_whitespace().nth(1)?.to_owned();
    Some((target, head))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Status",
    }
}
