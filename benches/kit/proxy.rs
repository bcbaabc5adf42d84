//! A timestamping TCP relay between agent-lsp and the mock: it records the instant each
//! response stream ends (the mock closes the connection after every response), which is when
//! the model is done from the network's point of view (the last bytes passed on). Daemon scenarios measure server time
//! from there, because `$/agentEvent` notifications may reach the client after a server
//! request that follows them in the loop (events travel through their own queue).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The relay; it runs until the process ends (it holds only loopback sockets).
pub struct Relay {
    port: u16,
    ends: Arc<Mutex<Vec<Instant>>>,
}

impl Relay {
    /// Relays `127.0.0.1:<new port>` to `target` (`host:port`).
    pub fn start(target: String) -> anyhow::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let ends = Arc::new(Mutex::new(Vec::new()));
        let record = ends.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let target = target.clone();
                let record = record.clone();
                std::thread::spawn(move || {
                    if let Ok(end) = relay(client, &target)
                        && let Ok(mut ends) = record.lock()
                    {
                        ends.push(end);
                    }
                });
            }
        });
        Ok(Relay { port, ends })
    }

    pub fn openai_base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// When each response stream's last bytes were passed on, in order.
    pub fn ends(&self) -> Vec<Instant> {
        self.ends.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

/// Copies both ways; returns the instant the server's last bytes were passed on.
fn relay(client: TcpStream, target: &str) -> std::io::Result<Instant> {
    let server = TcpStream::connect(target)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut up_from, mut up_to) = (client.try_clone()?, server.try_clone()?);
    std::thread::spawn(move || {
        let _ = copy(&mut up_from, &mut up_to);
        let _ = up_to.shutdown(Shutdown::Write);
    });
    let (mut down_from, mut down_to) = (server, client);
    let end = copy(&mut down_from, &mut down_to)?;
    let _ = down_to.shutdown(Shutdown::Write);
    Ok(end)
}

/// Copies to end of stream; returns when the last bytes were written on.
fn copy(from: &mut TcpStream, to: &mut TcpStream) -> std::io::Result<Instant> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut last = Instant::now();
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(last);
        }
        to.write_all(&buf[..n])?;
        last = Instant::now();
    }
}
