//! One query to a search service ([`Backend`]) and its answer as hits: SearXNG's JSON API
//! (`GET <url>/search?q=…&format=json` → `{results: [{title, url, content}]}`), Brave's web
//! search (`GET ?q=…&count=n`, `X-Subscription-Token` → `{web: {results: [{title, url,
//! description}]}}`) and Tavily's (`POST {query, max_results}`, a bearer key → `{results:
//! [{title, url, content}]}`).

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::json;

use super::backends::Backend;
use super::client::{client_for, request_failure};

/// One result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Hit {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub url: String,
    /// SearXNG's and Tavily's `content`, Brave's `description`.
    #[serde(default, alias = "content", alias = "description")]
    pub snippet: String,
}

#[derive(Deserialize)]
struct Results {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Brave {
    #[serde(default)]
    web: Option<Results>,
}

/// Asks `backend` for at most `limit` hits for `query`; `Err` is the text for the model.
pub async fn query(backend: &Backend, query: &str, limit: usize) -> Result<Vec<Hit>, String> {
    let endpoint = backend.endpoint();
    let client = client_for(&endpoint)?;
    let with_query = |pairs: &[(&str, &str)]| {
        let mut url = endpoint.clone();
        url.query_pairs_mut().extend_pairs(pairs);
        url
    };
    let request = match backend {
        Backend::Searxng(_) => client.get(with_query(&[("q", query), ("format", "json")])),
        Backend::Brave { key, .. } => client
            .get(with_query(&[("q", query), ("count", &limit.to_string())]))
            .header("X-Subscription-Token", key),
        Backend::Tavily { key, .. } => client
            .post(endpoint.clone())
            .bearer_auth(key)
            .header(CONTENT_TYPE, "application/json")
            .body(json!({"query": query, "max_results": limit}).to_string()),
    };
    let service = backend.name();
    let response = request
        .header(ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| {
            format!(
                "The search service ({service}) failed: {}",
                request_failure(&endpoint, &e)
            )
        })?;
    let status = response.status();
    let body = response.text().await.map_err(|e| {
        format!(
            "The search service ({service}) failed: {}",
            request_failure(&endpoint, &e)
        )
    })?;
    if !status.is_success() {
        let excerpt: String = body.trim().chars().take(300).collect();
        return Err(format!(
            "The search service ({service}, {}) answered HTTP {status}: {excerpt}",
            endpoint.host_str().unwrap_or_default()
        ));
    }
    let unreadable = |e: serde_json::Error| {
        format!("The search service ({service}) answered something that is not its JSON: {e}")
    };
    let mut hits = match backend {
        Backend::Brave { .. } => serde_json::from_str::<Brave>(&body)
            .map_err(unreadable)?
            .web
            .map(|w| w.results)
            .unwrap_or_default(),
        _ => {
            serde_json::from_str::<Results>(&body)
                .map_err(unreadable)?
                .results
        }
    };
    hits.retain(|hit| !hit.url.is_empty());
    hits.truncate(limit);
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_services_answer_reads_as_hits() {
        let searxng: Results = serde_json::from_str(
            r#"{"query":"q","results":[{"title":"T","url":"https://a","content":"C","engine":"x"}]}"#,
        )
        .unwrap();
        let hit = Hit {
            title: "T".into(),
            url: "https://a".into(),
            snippet: "C".into(),
        };
        assert_eq!(searxng.results, vec![hit.clone()]);
        let brave: Brave = serde_json::from_str(
            r#"{"web":{"results":[{"title":"T","url":"https://a","description":"C"}]}}"#,
        )
        .unwrap();
        assert_eq!(brave.web.unwrap().results, vec![hit]);
    }
}
