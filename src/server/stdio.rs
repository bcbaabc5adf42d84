//! The daemon's stdin and stdout, read and written on the tasks that use them.
//!
//! tokio's `stdin()`/`stdout()` perform every read and write on a blocking-pool thread and wake
//! the runtime when it is done: each message costs two thread hand-offs (a futex wake each way,
//! tens to hundreds of microseconds on a busy machine), and an `applyEdit` round trip with its
//! `didChange` and `agent/saveDocuments` needs several (issue 6, scenario 5). Editors start a
//! language server with pipes (or a socket): such descriptors are switched to non-blocking mode
//! and registered with the runtime's reactor instead, so a read or write is one system call on
//! the task that needs it. Anything else (a terminal shared with a shell, a redirected regular
//! file, which `epoll` refuses) keeps tokio's blocking versions.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The daemon's stdin.
pub enum Stdin {
    Reactor(NonBlocking),
    Blocking(tokio::io::Stdin),
}

/// The daemon's stdout.
pub enum Stdout {
    Reactor(NonBlocking),
    Blocking(tokio::io::Stdout),
}

/// stdin on the reactor when it is a pipe or socket, else tokio's blocking stdin.
pub fn stdin() -> Stdin {
    match NonBlocking::open(io::stdin().as_fd()) {
        Some(fd) => Stdin::Reactor(fd),
        None => Stdin::Blocking(tokio::io::stdin()),
    }
}

/// stdout on the reactor when it is a pipe or socket, else tokio's blocking stdout.
pub fn stdout() -> Stdout {
    match NonBlocking::open(io::stdout().as_fd()) {
        Some(fd) => Stdout::Reactor(fd),
        None => Stdout::Blocking(tokio::io::stdout()),
    }
}

/// A duplicate of a standard descriptor in non-blocking mode, registered with the reactor.
/// Dropping it puts the descriptor back into the mode it had: the open file description is
/// shared with whoever else holds the other copies.
pub struct NonBlocking {
    fd: AsyncFd<File>,
    original_flags: OFlag,
}

impl NonBlocking {
    pub(crate) fn open(fd: BorrowedFd<'_>) -> Option<NonBlocking> {
        let file = File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        if !(kind.is_fifo() || kind.is_socket()) {
            return None;
        }
        let original_flags = OFlag::from_bits_truncate(fcntl(&file, FcntlArg::F_GETFL).ok()?);
        fcntl(&file, FcntlArg::F_SETFL(original_flags | OFlag::O_NONBLOCK)).ok()?;
        // `try_new` is deprecated because a `T` could close or swap its descriptor while
        // registered; a `File` owns its descriptor until dropped, which is all `register`
        // (the `unsafe` replacement) asks for.
        #[allow(deprecated)]
        let registered = AsyncFd::try_new(file);
        match registered {
            Ok(fd) => Some(NonBlocking { fd, original_flags }),
            Err(e) => {
                let (file, e) = e.into_parts();
                tracing::debug!(%e, "standard descriptor not pollable; using blocking I/O");
                let _ = fcntl(&file, FcntlArg::F_SETFL(original_flags));
                None
            }
        }
    }

    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut ready = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|fd| fd.get_ref().read(unfilled)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }

    /// One write attempt on the calling thread, without waiting: `WouldBlock` when the pipe is
    /// full (the reactor's readiness is left alone; the next `poll_write` re-checks it).
    pub(crate) fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        self.fd.get_ref().write(bytes)
    }

    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut ready = ready!(self.fd.poll_write_ready(cx))?;
            match ready.try_io(|fd| fd.get_ref().write(bytes)) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }
}

impl Drop for NonBlocking {
    fn drop(&mut self) {
        let _ = fcntl(self.fd.get_ref(), FcntlArg::F_SETFL(self.original_flags));
    }
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdin::Reactor(fd) => fd.poll_read(cx, buf),
            Stdin::Blocking(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stdout::Reactor(fd) => fd.poll_write(cx, bytes),
            Stdout::Blocking(stdout) => Pin::new(stdout).poll_write(cx, bytes),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            // Every accepted byte was handed to the kernel by `write`.
            Stdout::Reactor(_) => Poll::Ready(Ok(())),
            Stdout::Blocking(stdout) => Pin::new(stdout).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Reactor(_) => Poll::Ready(Ok(())),
            Stdout::Blocking(stdout) => Pin::new(stdout).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::OwnedFd;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn pipe() -> (OwnedFd, OwnedFd) {
        let (read_end, write_end) = std::io::pipe().expect("pipe");
        (read_end.into(), write_end.into())
    }

    #[tokio::test]
    async fn a_pipe_is_served_by_the_reactor_and_restored_on_drop() {
        let (read_end, write_end) = pipe();
        let flags = |fd: &OwnedFd| OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).unwrap());
        let reader = NonBlocking::open(read_end.as_fd()).expect("a pipe is pollable");
        let writer = NonBlocking::open(write_end.as_fd()).expect("a pipe is pollable");
        assert!(flags(&read_end).contains(OFlag::O_NONBLOCK));
        let (mut stdin, mut stdout) = (Stdin::Reactor(reader), Stdout::Reactor(writer));
        // More than a pipe holds (64 KiB): the writer must wait for the reader, not fail.
        let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let expected = payload.clone();
        let writing = tokio::spawn(async move {
            stdout.write_all(&payload).await.unwrap();
            stdout.flush().await.unwrap();
            stdout
        });
        let mut got = vec![0u8; expected.len()];
        stdin.read_exact(&mut got).await.unwrap();
        assert_eq!(got, expected);
        drop(writing.await.unwrap());
        drop(stdin);
        assert!(!flags(&read_end).contains(OFlag::O_NONBLOCK));
        assert!(!flags(&write_end).contains(OFlag::O_NONBLOCK));
    }

    #[test]
    fn a_regular_file_keeps_blocking_io() {
        let file = tempfile::tempfile().unwrap();
        assert!(NonBlocking::open(file.as_fd()).is_none());
    }
}
