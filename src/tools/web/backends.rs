//! The search services `web_search` can use, and which one is configured: a SearXNG instance
//! by URL (`AGENT_LSP_SEARXNG_URL`, else `webSearch.searxngUrl` in the user's
//! `$XDG_CONFIG_HOME/agent-lsp/settings.json`), else Brave (`BRAVE_API_KEY`), else Tavily
//! (`TAVILY_API_KEY`). The environment is the session's [`EnvSource`], never the process's;
//! the key variables are hidden from sandboxed commands as the model keys are
//! ([`crate::model_registry::secret_env_names`]).

use std::path::Path;

use reqwest::Url;
use serde::Deserialize;

use crate::model_registry::{EnvSource, SEARCH_KEY_VARS};

pub const SEARXNG_URL_VAR: &str = "AGENT_LSP_SEARXNG_URL";
/// `BRAVE_API_KEY`.
pub const BRAVE_KEY_VAR: &str = SEARCH_KEY_VARS[0];
/// `TAVILY_API_KEY`.
pub const TAVILY_KEY_VAR: &str = SEARCH_KEY_VARS[1];
/// Other endpoints for the keyed services (a test's loopback server, a corporate gateway).
pub const BRAVE_URL_VAR: &str = "AGENT_LSP_BRAVE_URL";
pub const TAVILY_URL_VAR: &str = "AGENT_LSP_TAVILY_URL";

const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
const TAVILY_URL: &str = "https://api.tavily.com/search";

/// A configured search service.
#[derive(Clone, PartialEq, Eq)]
pub enum Backend {
    /// A SearXNG instance's base URL: its JSON API is `<url>/search?q=…&format=json`.
    Searxng(Url),
    Brave {
        endpoint: Url,
        key: String,
    },
    Tavily {
        endpoint: Url,
        key: String,
    },
}

impl std::fmt::Debug for Backend {
    // Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.endpoint())
    }
}

impl Backend {
    /// Its name for people and the tool's `details`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Searxng(_) => "searxng",
            Backend::Brave { .. } => "brave",
            Backend::Tavily { .. } => "tavily",
        }
    }

    /// Where queries go.
    pub fn endpoint(&self) -> Url {
        match self {
            Backend::Searxng(base) => {
                let mut url = base.clone();
                if let Ok(mut segments) = url.path_segments_mut() {
                    segments.pop_if_empty().push("search");
                }
                url
            }
            Backend::Brave { endpoint, .. } | Backend::Tavily { endpoint, .. } => endpoint.clone(),
        }
    }
}

/// What configures web search: the service, and what was wrong with the configuration (said to
/// the user; web search is then not offered, or offered by the next service that is set).
#[derive(Debug, Default)]
pub struct SearchConfig {
    pub backend: Option<Backend>,
    pub warnings: Vec<String>,
}

/// The configured service, in the order of the module doc.
pub fn search_config(env: &EnvSource) -> SearchConfig {
    let mut config = SearchConfig::default();
    let searxng = match env.get_nonempty(SEARXNG_URL_VAR) {
        Some(url) => Some((url.trim().to_owned(), SEARXNG_URL_VAR.to_owned())),
        None => match user_searxng_url(env.config_dir().as_deref()) {
            Ok(url) => url.map(|url| (url, "webSearch.searxngUrl in settings.json".to_owned())),
            Err(e) => {
                config.warnings.push(e);
                None
            }
        },
    };
    if let Some((url, from)) = searxng {
        match http_url(&url) {
            Ok(url) => {
                config.backend = Some(Backend::Searxng(url));
                return config;
            }
            Err(e) => config.warnings.push(format!(
                "{from}: {e} (web search is not offered through SearXNG)"
            )),
        }
    }
    config.backend = keyed(env, &mut config.warnings);
    config
}

/// A keyed service: its key variable, its endpoint variable and default, and how it is built.
struct Keyed {
    key_var: &'static str,
    url_var: &'static str,
    default: &'static str,
    make: fn(Url, String) -> Backend,
}

/// Brave, else Tavily, by key.
fn keyed(env: &EnvSource, warnings: &mut Vec<String>) -> Option<Backend> {
    let services = [
        Keyed {
            key_var: BRAVE_KEY_VAR,
            url_var: BRAVE_URL_VAR,
            default: BRAVE_URL,
            make: |endpoint, key| Backend::Brave { endpoint, key },
        },
        Keyed {
            key_var: TAVILY_KEY_VAR,
            url_var: TAVILY_URL_VAR,
            default: TAVILY_URL,
            make: |endpoint, key| Backend::Tavily { endpoint, key },
        },
    ];
    for service in services {
        let Some(key) = env.key(service.key_var) else {
            continue;
        };
        let url = env.get_nonempty(service.url_var).unwrap_or(service.default);
        match http_url(url) {
            Ok(endpoint) => return Some((service.make)(endpoint, key)),
            Err(e) => warnings.push(format!("{}: {e}", service.url_var)),
        }
    }
    None
}

fn http_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!("{raw:?} is not an http or https URL ({other}:)")),
    }
}

/// `webSearch.searxngUrl` of the user's `settings.json` in `config_dir`; a missing file or key
/// is none, a broken one an error for the user.
fn user_searxng_url(config_dir: Option<&Path>) -> Result<Option<String>, String> {
    let Some(path) = config_dir.map(|d| d.join("settings.json")) else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct File {
        #[serde(default)]
        web_search: Option<WebSearch>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct WebSearch {
        #[serde(default)]
        searxng_url: Option<String>,
    }
    serde_json::from_str::<File>(&text)
        .map(|f| f.web_search.and_then(|w| w.searxng_url))
        .map(|url| url.filter(|u| !u.trim().is_empty()))
        .map_err(|e| {
            format!(
                "{}: {e} (its webSearch settings are ignored)",
                path.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)], config: Option<&Path>) -> EnvSource {
        let mut env = EnvSource::from_pairs(pairs.iter().copied());
        // No HOME: nothing of the user's is read unless a test names a folder.
        if let Some(dir) = config {
            env.set(
                "XDG_CONFIG_HOME",
                dir.parent().unwrap().display().to_string(),
            );
        }
        env
    }

    #[test]
    fn nothing_configured_offers_nothing() {
        let config = search_config(&env(&[], None));
        assert!(config.backend.is_none() && config.warnings.is_empty());
    }

    #[test]
    fn searxng_from_the_environment_comes_first() {
        let config = search_config(&env(
            &[
                (SEARXNG_URL_VAR, "http://127.0.0.1:8888/"),
                (BRAVE_KEY_VAR, "k"),
            ],
            None,
        ));
        let backend = config.backend.unwrap();
        assert_eq!(backend.name(), "searxng");
        assert_eq!(backend.endpoint().as_str(), "http://127.0.0.1:8888/search");
    }

    #[test]
    fn searxng_from_the_users_settings() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("agent-lsp");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("settings.json"),
            r#"{"compaction": {}, "webSearch": {"searxngUrl": "https://search.example/sx"}}"#,
        )
        .unwrap();
        let config = search_config(&env(&[], Some(&dir)));
        assert_eq!(
            config.backend.unwrap().endpoint().as_str(),
            "https://search.example/sx/search"
        );
        std::fs::write(
            dir.join("settings.json"),
            r#"{"webSearch": {"searxng": "x"}}"#,
        )
        .unwrap();
        let config = search_config(&env(&[], Some(&dir)));
        assert!(config.backend.is_none());
        assert!(
            config.warnings[0].contains("webSearch settings are ignored"),
            "{:?}",
            config.warnings
        );
    }

    #[test]
    fn keyed_services_with_their_endpoints() {
        let config = search_config(&env(&[(TAVILY_KEY_VAR, "tvly-1")], None));
        let backend = config.backend.unwrap();
        assert_eq!(backend.name(), "tavily");
        assert_eq!(backend.endpoint().as_str(), TAVILY_URL);
        assert!(!format!("{backend:?}").contains("tvly-1"));
        let config = search_config(&env(
            &[
                (BRAVE_KEY_VAR, "b"),
                (BRAVE_URL_VAR, "http://127.0.0.1:9/brave"),
            ],
            None,
        ));
        assert_eq!(
            config.backend.unwrap(),
            Backend::Brave {
                endpoint: Url::parse("http://127.0.0.1:9/brave").unwrap(),
                key: "b".into()
            }
        );
        let config = search_config(&env(&[(SEARXNG_URL_VAR, "file:///x")], None));
        assert!(config.backend.is_none());
        assert!(
            config.warnings[0].contains("not an http or https URL"),
            "{:?}",
            config.warnings
        );
    }
}
