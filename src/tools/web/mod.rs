//! The web tools: `web_fetch` (a page as Markdown or text) and `web_search` (results from a
//! configured search service). Both run in the daemon, not as sandboxed commands: the
//! sandbox's network setting (`sandboxNetwork`) is about commands and does not apply to them.
//! They are governed by approval instead (kind `network`, which asks by default): the user sees
//! each URL, or each query, before anything is sent. An "always" answer for `web_fetch` covers
//! one site ([`Target::site`]), and a fetch follows redirects only within it.

mod backends;
mod client;
mod fetch;
mod markdown;
mod page;
mod query;
mod request;
mod search;
mod shown;
pub mod target;

use std::sync::Arc;

use serde_json::Value;

use crate::agent::tool::ToolRef;
use crate::tools::common::TypedTool;

pub use backends::{Backend, SearchConfig, search_config};
pub use fetch::FetchSettings;
pub use target::{Target, WEB_FETCH, WEB_SEARCH, site_of};

/// `web_fetch`, and `web_search` when a search service is configured.
pub fn web_tools(settings: FetchSettings, search: Option<Backend>) -> Vec<ToolRef> {
    let mut tools: Vec<ToolRef> = vec![Arc::new(TypedTool::<fetch::WebFetchArgs>::new(settings))];
    if let Some(backend) = search {
        tools.push(Arc::new(TypedTool::<search::WebSearchArgs>::new(backend)));
    }
    tools
}

/// Why a web call is refused before anyone is asked about it: a `web_fetch` URL that could not
/// be fetched anyway (another scheme than http or https, no URL at all). `None` for other calls.
pub fn refusal(tool: &str, args: &Value) -> Option<String> {
    if tool != WEB_FETCH {
        return None;
    }
    let url = args.get("url").and_then(Value::as_str)?;
    Target::parse(url).err()
}

/// The one line an approval prompt shows for a web call: `Fetch <url>` (as it will be
/// requested), `Search the web: <query>`.
pub fn approval_title(tool: &str, args: &Value) -> String {
    let arg = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or_default();
    match tool {
        WEB_FETCH => match Target::parse(arg("url")) {
            Ok(target) => format!("Fetch {}", target.url),
            Err(_) => format!("Fetch {}", arg("url")),
        },
        WEB_SEARCH => format!("Search the web: {}", arg("query")),
        _ => format!("{tool} {args}"),
    }
}

/// What approving a fetch means, for prompts that show text: the URL, and a warning when its
/// host is local (the agent would read from this machine or its network, which the internet
/// cannot).
pub fn fetch_note(url: &str, host: &str, local: bool) -> String {
    if local {
        format!(
            "{url}\n{host} is this machine or a local network: approving lets the agent read from it."
        )
    } else {
        url.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::args::assert_args_match_schema;
    use crate::tools::common::ToolArgs;

    #[test]
    fn each_web_tool_reads_the_arguments_its_schema_declares() {
        let settings = FetchSettings::default();
        assert_args_match_schema::<fetch::WebFetchArgs>(
            &fetch::WebFetchArgs::declaration(&settings).parameters,
        );
        let backend = Backend::Searxng(reqwest::Url::parse("http://127.0.0.1:1/").unwrap());
        assert_args_match_schema::<search::WebSearchArgs>(
            &search::WebSearchArgs::declaration(&backend).parameters,
        );
    }

    #[test]
    fn unfetchable_urls_are_refused_before_asking() {
        let refused = refusal(WEB_FETCH, &serde_json::json!({"url": "file:///etc/passwd"}));
        assert!(refused.unwrap().contains("only fetches http and https"));
        assert_eq!(
            refusal(WEB_FETCH, &serde_json::json!({"url": "https://docs.rs"})),
            None
        );
        assert_eq!(
            refusal("bash", &serde_json::json!({"url": "file:///"})),
            None
        );
    }
}
