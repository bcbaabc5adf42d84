//! The process's stdin as an `AsyncRead`, read on a thread of its own.
//!
//! tokio's `stdin()` reads on its blocking pool, and a runtime waits for its blocking tasks when
//! it shuts down: a front end that returned while an editor kept our stdin open would never end
//! (so it used to `process::exit`, skipping every destructor). This thread is not the
//! runtime's: once the front end returns, the process ends with it, its destructors run.

use std::io::{Cursor, Read};

use futures_util::stream;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tokio_util::io::StreamReader;

/// Chunks read ahead of the reader at most.
const AHEAD: usize = 16;

/// Stdin, from a thread that reads it into a channel until it ends (or fails: the reader then
/// sees the error, then the end).
pub fn stdin() -> std::io::Result<impl AsyncRead + Unpin + Send + 'static> {
    let (tx, rx) = mpsc::channel::<std::io::Result<Cursor<Vec<u8>>>>(AHEAD);
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut input = std::io::stdin().lock();
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let chunk = match input.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(n) => Ok(Cursor::new(buffer[..n].to_vec())),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let failed = chunk.is_err();
                if tx.blocking_send(chunk).is_err() || failed {
                    return;
                }
            }
        })?;
    let chunks = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    Ok(StreamReader::new(Box::pin(chunks)))
}
