//! `web_search {query, limit?}`: a numbered list of results (title, URL, snippet) from the
//! configured search service ([`Backend`]); offered only when one is configured. Governed by
//! approval (kind `network`), as `web_fetch` is.

use serde::Deserialize;
use serde_json::{Value, json};

use super::backends::Backend;
use super::client::TOTAL_TIMEOUT;
use super::query::{Hit, query};
use super::target::WEB_SEARCH;
use crate::agent::tool::{AgentToolResult, ToolError};
use crate::tools::bash_output::clean;
use crate::tools::common::{ABORTED, Call, ToolArgs};

const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;
/// A snippet longer than this is cut (services send a few sentences).
const SNIPPET_CHARS: usize = 500;

/// A `web_search` call's arguments.
#[derive(Deserialize)]
pub struct WebSearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<f64>,
}

impl ToolArgs for WebSearchArgs {
    const NAME: &str = WEB_SEARCH;
    const DESCRIPTION: &str = "Search the web. Returns a numbered list of results, each with its title, URL \
and a snippet; fetch a result's page with web_fetch to read it. limit: how many results (default 5, at most 20). \
Every search may need the user's approval.";
    type State = Backend;

    fn parameters(_: &Backend) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "What to search for"},
            "limit": {"type": "number", "description": "How many results (default 5, at most 20)"}
        }, "required": ["query"]})
    }

    async fn run(self, backend: Backend, call: Call) -> Result<AgentToolResult, ToolError> {
        let search = self.query.trim();
        if search.is_empty() {
            return Err(ToolError::new("web_search needs a query: query was empty"));
        }
        let limit = match self.limit {
            Some(n) if n >= 1.0 => (n as usize).min(MAX_LIMIT),
            _ => DEFAULT_LIMIT,
        };
        let hits = tokio::select! {
            hits = tokio::time::timeout(TOTAL_TIMEOUT, query(&backend, search, limit)) => hits,
            () = call.cancel.cancelled() => return Err(ToolError::new(ABORTED)),
        };
        let hits = hits
            .map_err(|_| {
                ToolError::new(format!(
                    "The search service ({}) did not answer within {} s",
                    backend.name(),
                    TOTAL_TIMEOUT.as_secs()
                ))
            })?
            .map_err(ToolError::new)?;
        Ok(AgentToolResult {
            details: Some(json!({
                "query": search, "service": backend.name(), "results": hits.len(),
            })),
            ..AgentToolResult::text(listing(search, &hits))
        })
    }
}

/// The hits as a numbered list.
fn listing(search: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for {search:?}.");
    }
    let mut out = format!("Results for {search:?}:\n");
    for (n, hit) in hits.iter().enumerate() {
        let title = one_line(&hit.title);
        let title = if title.is_empty() {
            "(no title)".to_owned()
        } else {
            title
        };
        out.push_str(&format!(
            "\n{}. {title}\n   {}\n",
            n + 1,
            one_line(&hit.url)
        ));
        let snippet = one_line(&hit.snippet);
        if !snippet.is_empty() {
            let mut cut: String = snippet.chars().take(SNIPPET_CHARS).collect();
            if cut.len() < snippet.len() {
                cut.push('…');
            }
            out.push_str(&format!("   {cut}\n"));
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// The text on one line, without control characters or escape sequences.
fn one_line(text: &str) -> String {
    clean(text).split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_numbered_with_title_url_and_snippet() {
        let hits = [
            Hit {
                title: "Serde\n docs".into(),
                url: "https://serde.rs/".into(),
                snippet: "A framework for\tserializing\u{1b}[31m.".into(),
            },
            Hit {
                title: String::new(),
                url: "https://docs.rs/serde".into(),
                snippet: String::new(),
            },
        ];
        assert_eq!(
            listing("serde", &hits),
            "Results for \"serde\":\n\n1. Serde docs\n   https://serde.rs/\n   A framework for \
             serializing.\n\n2. (no title)\n   https://docs.rs/serde"
        );
        assert_eq!(listing("x", &[]), "No results for \"x\".");
    }
}
