//! A background job in the client's terminal, as the session's registry reaches it (a
//! [`JobHost`]): `terminal/create` starts it and returns at once; a read asks `terminal/output`
//! and keeps only what the model has not read yet ([`Cursor`]); `terminal/wait_for_exit` waits
//! for its end; `terminal/kill` and `terminal/release` stop and free it.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::acp::request::request;
use crate::agent::tool::ToolError;
use crate::rpc::outgoing::{Outgoing, RequestError};
use crate::tools::{HostExit, JobHost, Pulled};

/// The output a job's terminal keeps for the model's reads (the client drops the start beyond
/// it).
pub const JOB_OUTPUT_LIMIT: u64 = 256 * 1024;
/// How long one request about a job's terminal may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// `terminal/wait_for_exit` waits as long as the job runs; its own `timeout` is the registry's.
const WAIT_LIMIT: Duration = Duration::from_secs(365 * 24 * 3600);
/// The end of what was read, found again in output whose start the client dropped.
const ANCHOR: usize = 4096;
/// Said when the client dropped output the model may not have read.
const DROPPED: &str = "The client's terminal keeps only the last 256KB of a job's output: part \
of what the job printed since the last read may be missing, and the start of what is shown may \
have been read before.";

/// A job's terminal in the client.
pub struct TerminalJob(Arc<Inner>);

struct Inner {
    out: Outgoing,
    session: String,
    terminal: String,
    cursor: Mutex<Cursor>,
}

/// Starts `command` in a new terminal of the client, in `cwd`; returns once the client
/// answered (the command runs on).
pub async fn create(
    out: &Outgoing,
    session: String,
    command: &str,
    cwd: &Path,
) -> Result<TerminalJob, ToolError> {
    let create = acp::CreateTerminalRequest::new(session.clone(), "/bin/sh")
        .args(vec!["-c".to_owned(), command.to_owned()])
        .cwd(cwd.to_path_buf())
        .output_byte_limit(JOB_OUTPUT_LIMIT);
    let created: acp::CreateTerminalResponse =
        request(out, "terminal/create", create, REQUEST_TIMEOUT)
            .await
            .map_err(|e| ToolError::new(format!("The client's terminal failed: {e}")))?;
    Ok(TerminalJob(Arc::new(Inner {
        out: out.clone(),
        session,
        terminal: created.terminal_id.0.to_string(),
        cursor: Mutex::default(),
    })))
}

impl TerminalJob {
    pub fn terminal_id(&self) -> &str {
        &self.0.terminal
    }
}

impl Inner {
    /// `terminal/output`: what the model has not read yet.
    async fn pull(self: Arc<Self>) -> Result<Pulled, String> {
        let params = acp::TerminalOutputRequest::new(self.session.clone(), self.terminal.clone());
        let output: acp::TerminalOutputResponse =
            (request(&self.out, "terminal/output", params, REQUEST_TIMEOUT).await)
                .map_err(failed)?;
        let (text, dropped) = (self.cursor.lock().unwrap_or_else(|e| e.into_inner()))
            .advance(&output.output, output.truncated);
        Ok(Pulled {
            text,
            gap: dropped.then(|| DROPPED.to_owned()),
            exit: output.exit_status.map(exit_of),
        })
    }

    /// `terminal/wait_for_exit`: the job's end.
    async fn wait(self: Arc<Self>) -> Result<HostExit, String> {
        let params =
            acp::WaitForTerminalExitRequest::new(self.session.clone(), self.terminal.clone());
        let exit: acp::WaitForTerminalExitResponse =
            (request(&self.out, "terminal/wait_for_exit", params, WAIT_LIMIT).await)
                .map_err(failed)?;
        Ok(exit_of(exit.exit_status))
    }

    /// A request whose answer says nothing we need; once the client's side is closed (the
    /// agent exiting) it is still sent, unanswered.
    async fn tell<P: Serialize + Clone>(self: Arc<Self>, method: &'static str, params: P) {
        let sent: Result<Value, _> =
            request(&self.out, method, params.clone(), REQUEST_TIMEOUT).await;
        if let Err(RequestError::Disconnected) = sent {
            self.out.request_unanswered(method, params);
        }
    }
}

/// What the model reads of a failed terminal request.
fn failed(e: RequestError) -> String {
    format!("the client's terminal failed: {e}")
}

fn exit_of(status: acp::TerminalExitStatus) -> HostExit {
    HostExit {
        code: status.exit_code.and_then(|c| i32::try_from(c).ok()),
        signal: status.signal,
    }
}

impl JobHost for TerminalJob {
    fn whereabouts(&self) -> String {
        "in the client's terminal".to_owned()
    }

    fn pull(&self) -> BoxFuture<'static, Result<Pulled, String>> {
        Box::pin(self.0.clone().pull())
    }

    fn wait(&self) -> BoxFuture<'static, Result<HostExit, String>> {
        Box::pin(self.0.clone().wait())
    }

    fn kill(&self) -> BoxFuture<'static, ()> {
        let params = acp::KillTerminalRequest::new(self.0.session.clone(), self.0.terminal.clone());
        Box::pin(self.0.clone().tell("terminal/kill", params))
    }

    fn release(&self) -> BoxFuture<'static, ()> {
        let params =
            acp::ReleaseTerminalRequest::new(self.0.session.clone(), self.0.terminal.clone());
        Box::pin(self.0.clone().tell("terminal/release", params))
    }
}

/// How far the model has read a terminal's output. `terminal/output` gives all the client
/// still holds: while it dropped nothing, what is new starts at the length read before; once
/// it dropped the start, after the end of what was read, found again (its first occurrence, so
/// nothing still held is lost; repetitive output may then be shown twice).
#[derive(Debug, Default)]
struct Cursor {
    /// The length of the output the last read saw.
    read: usize,
    /// Its last [`ANCHOR`] bytes.
    tail: String,
}

impl Cursor {
    /// What of `output` was not read yet (the client dropped its start when `truncated`), and
    /// whether some of it may be gone.
    fn advance(&mut self, output: &str, truncated: bool) -> (String, bool) {
        let whole = !truncated && output.len() >= self.read && output.is_char_boundary(self.read);
        let fresh = match whole {
            true => (output[self.read..].to_owned(), false),
            false => self.after_tail(output),
        };
        self.read = output.len();
        let mut start = output.len().saturating_sub(ANCHOR);
        while !output.is_char_boundary(start) {
            start += 1;
        }
        self.tail = output[start..].to_owned();
        fresh
    }

    /// What follows the end of the last read in output whose start may be gone; all of it,
    /// said to be incomplete, when that end is gone too.
    fn after_tail(&self, output: &str) -> (String, bool) {
        match output.find(&self.tail) {
            Some(at) if !self.tail.is_empty() => (output[at + self.tail.len()..].to_owned(), false),
            _ => (output.to_owned(), true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(text: &str) -> (String, bool) {
        (text.to_owned(), false)
    }

    #[test]
    fn while_nothing_is_dropped_a_read_returns_what_follows_the_last_one() {
        let mut cursor = Cursor::default();
        assert_eq!(cursor.advance("", false), new(""));
        assert_eq!(cursor.advance("one\n", false), new("one\n"));
        assert_eq!(cursor.advance("one\n", false), new(""));
        assert_eq!(cursor.advance("one\ntwo\n", false), new("two\n"));
    }

    #[test]
    fn once_the_start_is_dropped_reading_resumes_after_the_end_of_the_last_read() {
        let mut cursor = Cursor::default();
        let read = format!("a1\n{}c3\n", "x".repeat(2 * ANCHOR));
        assert_eq!(cursor.advance(&read, false), new(&read));
        // The client kept the end only: what follows c3 is new.
        let kept = format!("{}d4\n", &read[read.len() - ANCHOR - 10..]);
        assert_eq!(cursor.advance(&kept, true), new("d4\n"));
        let kept = format!("{}e5\nf6\n", &kept[kept.len() - ANCHOR - 5..]);
        assert_eq!(cursor.advance(&kept, true), new("e5\nf6\n"));
    }

    /// When the client's window starts inside the end of the last read, that end is not found
    /// whole: all it holds is returned with the note (nothing lost; the start read before).
    #[test]
    fn a_window_that_cuts_into_the_last_read_returns_all_it_holds_with_the_note() {
        let mut cursor = Cursor::default();
        assert_eq!(cursor.advance("a1\nb2\nc3\n", false), new("a1\nb2\nc3\n"));
        assert_eq!(
            cursor.advance("b2\nc3\nd4\n", true),
            ("b2\nc3\nd4\n".into(), true)
        );
    }

    #[test]
    fn output_dropped_past_the_last_read_is_said_and_what_is_held_returned() {
        let mut cursor = Cursor::default();
        assert_eq!(cursor.advance("a1\n", false), new("a1\n"));
        assert_eq!(cursor.advance("x7\ny8\n", true), ("x7\ny8\n".into(), true));
        // Dropped before the first read: said too.
        let mut first = Cursor::default();
        assert_eq!(first.advance("z9\n", true), ("z9\n".into(), true));
    }

    #[test]
    fn the_anchor_is_cut_on_a_character_boundary() {
        let mut cursor = Cursor::default();
        let long = "é".repeat(ANCHOR);
        assert_eq!(cursor.advance(&long, false), new(&long));
        assert!(cursor.tail.len() <= ANCHOR && cursor.tail.chars().all(|c| c == 'é'));
        let more = format!("{}ok\n", &long[long.len() / 2..]);
        assert_eq!(cursor.advance(&more, true), new("ok\n"));
    }
}
