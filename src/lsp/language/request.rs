//! `agent/languageRequest`: one LSP request for the editor's other language servers, through
//! the one registry of requests to the client, bounded by `languageTimeoutMs`; an abort or the
//! timeout withdraws it with `$/cancelRequest`. Its failures are the tool's errors, worded for
//! the model.

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Lang;
use crate::agent::tool::ToolError;
use crate::lsp::protocol::{LanguageRequestParams, LanguageRequestResult, method};
use crate::rpc::outgoing::RequestError;
use crate::tools::workspace::check_abort;

/// What the editor answered: the servers' merged result (`None`: no server answers the method
/// for the document).
pub struct Answer {
    pub result: Option<Value>,
}

/// Asks the editor's language servers `lsp_method` with `params` for the call `tool_call_id`.
pub async fn ask(
    lang: &Lang,
    tool_call_id: &str,
    lsp_method: &str,
    params: Value,
    cancel: &CancellationToken,
) -> Result<Answer, ToolError> {
    let request = LanguageRequestParams {
        session_id: lang.session_id.clone(),
        run_id: lang.run_id(),
        tool_call_id: tool_call_id.to_owned(),
        method: lsp_method.to_owned(),
        params,
    };
    let reply: Result<LanguageRequestResult, RequestError> = lang
        .out
        .request(method::LANGUAGE_REQUEST, request, lang.timeout, cancel)
        .await;
    match reply {
        Ok(answer) => Ok(Answer {
            result: (!answer.servers.is_empty()).then_some(answer.result),
        }),
        Err(RequestError::Cancelled) => {
            check_abort(cancel)?;
            Err(ToolError::new("The request to the editor was cancelled."))
        }
        Err(RequestError::Timeout(t)) => Err(ToolError::new(format!(
            "No answer from the editor's language servers within {}.",
            seconds(t)
        ))),
        Err(RequestError::ErrorReply(message)) => Err(ToolError::new(format!(
            "The editor's language servers failed: {message}"
        ))),
        Err(e @ RequestError::Malformed(_)) => Err(ToolError::new(format!(
            "The editor's answer is malformed ({e}). Use grep and read instead."
        ))),
        Err(RequestError::Disconnected) => Err(ToolError::new(
            "The editor is gone: no language server can be asked.",
        )),
    }
}

/// A timeout as people read it: `15 s`, `1.5 s`, `250 ms`.
fn seconds(d: Duration) -> String {
    match d.as_millis() {
        ms if ms < 1000 => format!("{ms} ms"),
        ms if ms % 1000 == 0 => format!("{} s", ms / 1000),
        _ => format!("{} s", d.as_secs_f64()),
    }
}

/// The words for a document no language server answers `what` for: a normal result (the
/// model falls back to `grep` and `read`), not an error.
pub fn no_server(what: &str, shown: &str) -> String {
    format!("No language server in the editor answers {what} for {shown}.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_people_write_them() {
        assert_eq!(seconds(Duration::from_secs(15)), "15 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(seconds(Duration::from_millis(200)), "200 ms");
    }
}
