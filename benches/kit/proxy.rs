//! A timestamping TCP relay between agent-lsp and the mock: it records the instant each
//! response stream ends (the mock closes the connection after every response), which is when
//! the model is done from the network's point of view (the last bytes passed on). Daemon scenarios measure server time
//! from there, because `$/agentEvent` notifications may reach the client after a server
//! request that follows them in the loop (events travel through their own queue).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// One relayed exchange: when the client's request began, when the mock's first response
/// bytes and its last were passed on.
#[derive(Clone, Copy, Debug)]
pub struct Exchange {
    pub request: Instant,
    pub first_byte: Instant,
    pub end: Instant,
}

/// The relay; it runs until the process ends (it holds only loopback sockets).
pub struct Relay {
    port: u16,
    exchanges: Arc<Mutex<Vec<Exchange>>>,
}

impl Relay {
    /// Relays `127.0.0.1:<new port>` to `target` (`host:port`).
    pub fn start(target: String) -> anyhow::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let record = exchanges.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let target = target.clone();
                let record = record.clone();
                std::thread::spawn(move || {
                    if let Ok(exchange) = relay(client, &target)
                        && let Ok(mut all) = record.lock()
                    {
                        all.push(exchange);
                    }
                });
            }
        });
        Ok(Relay { port, exchanges })
    }

    pub fn openai_base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// When each response stream's last bytes were passed on, in order.
    pub fn ends(&self) -> Vec<Instant> {
        self.exchanges().iter().map(|e| e.end).collect()
    }

    /// Every exchange so far, in the order they ended.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.exchanges.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

/// Copies both ways; returns the exchange's instants.
fn relay(client: TcpStream, target: &str) -> std::io::Result<Exchange> {
    let server = TcpStream::connect(target)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut up_from, mut up_to) = (client.try_clone()?, server.try_clone()?);
    // The request's first bytes: set by the upstream copy, read once the response ended (the
    // client may keep its side open, so that copy is not waited for).
    let requested = Arc::new(OnceLock::new());
    let set = requested.clone();
    std::thread::spawn(move || {
        let _ = copy(&mut up_from, &mut up_to, |at| {
            let _ = set.set(at);
        });
        let _ = up_to.shutdown(Shutdown::Write);
    });
    let (mut down_from, mut down_to) = (server, client);
    let mut first_byte = None;
    let end = copy(&mut down_from, &mut down_to, |at| first_byte = Some(at))?;
    let _ = down_to.shutdown(Shutdown::Write);
    let first_byte = first_byte.unwrap_or(end);
    let request = requested.get().copied().unwrap_or(first_byte);
    Ok(Exchange {
        request,
        first_byte,
        end,
    })
}

/// Copies to end of stream; tells `first` when the first bytes were read, returns when the
/// last were written on.
fn copy(
    from: &mut TcpStream,
    to: &mut TcpStream,
    first: impl FnOnce(Instant),
) -> std::io::Result<Instant> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = Some(first);
    let mut last = Instant::now();
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(last);
        }
        if let Some(first) = first.take() {
            first(Instant::now());
        }
        to.write_all(&buf[..n])?;
        last = Instant::now();
    }
}
