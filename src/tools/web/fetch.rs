//! `web_fetch {url, prompt?}`: a web page for the model, run in the daemon (not a sandboxed
//! command) and governed by approval (kind `network`). HTML comes back as Markdown, text and
//! JSON as they are, small images attached; the rest is refused. Bounded in time
//! ([`TOTAL_TIMEOUT`]), download ([`MAX_BODY_BYTES`]) and output (`read`'s limits, the whole
//! text spilled to a temp file).

use std::path::PathBuf;

use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::client::TOTAL_TIMEOUT;
use super::markdown::{PARSE_BUDGET, html_to_markdown};
use super::page::{ContentType, Kind, decode, kind_of};
use super::request::{Body, Fetched, MAX_BODY_BYTES, fetch};
use super::shown::show;
use super::target::{Target, WEB_FETCH};
use crate::agent::message::{ContentBlock, ImageContent};
use crate::agent::tool::{AgentToolResult, ToolError};
use crate::tools::bash_output::clean;
use crate::tools::common::{ABORTED, Call, ToolArgs, blocking};
use crate::tools::image::base64;
use crate::tools::read::MAX_IMAGE_BYTES;
use crate::tools::truncate::format_size;

/// What the web tools are built with.
#[derive(Clone, Debug, Default)]
pub struct FetchSettings {
    /// Where cut pages are written whole; `None`: the system temp dir.
    pub spill_dir: Option<PathBuf>,
}

/// A `web_fetch` call's arguments.
#[derive(Deserialize)]
pub struct WebFetchArgs {
    url: String,
    #[serde(default)]
    prompt: Option<String>,
}

impl ToolArgs for WebFetchArgs {
    const NAME: &str = WEB_FETCH;
    const DESCRIPTION: &str = "Fetch a web page (http or https) and return its content: HTML as Markdown \
(headings, links made absolute, lists, tables and code blocks kept), text and JSON as they are, PNG, JPEG, GIF \
and WebP images as attachments. At most 2000 lines or 50KB are returned; a longer page is written whole to a \
temporary file whose path the result gives. Redirects within the same host are followed; a redirect to another \
host is reported, not followed. Every fetch may need the user's approval. `prompt` says what you are looking \
for: it is shown at the top of the result to keep your aim in view (no other model reads the page; you do).";
    type State = FetchSettings;

    fn parameters(_: &FetchSettings) -> Value {
        json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "The http or https URL to fetch"},
            "prompt": {"type": "string", "description": "What you are looking for in the page (shown at the top of the result)"}
        }, "required": ["url"]})
    }

    async fn run(self, settings: FetchSettings, call: Call) -> Result<AgentToolResult, ToolError> {
        let target = Target::parse(&self.url).map_err(ToolError::new)?;
        let fetched = tokio::select! {
            fetched = tokio::time::timeout(TOTAL_TIMEOUT, fetch(&target)) => fetched,
            () = call.cancel.cancelled() => return Err(ToolError::new(ABORTED)),
        };
        let fetched = fetched
            .map_err(|_| {
                ToolError::new(format!(
                    "Fetching {} took longer than {} s: stopped",
                    target.url,
                    TOTAL_TIMEOUT.as_secs()
                ))
            })?
            .map_err(ToolError::new)?;
        let spill_dir = settings.spill_dir.unwrap_or_else(std::env::temp_dir);
        let prompt = self.prompt.filter(|p| !p.trim().is_empty());
        match fetched {
            Fetched::OtherSite {
                at,
                status,
                location,
            } => Ok(other_site(&target.url, &at, status.as_u16(), &location)),
            Fetched::Body(body) => {
                blocking(WEB_FETCH, move || {
                    page(&target.url, body, prompt, spill_dir)
                })
                .await?
            }
        }
    }
}

/// The result of a redirect to another site: not an error, a step for the model to take.
fn other_site(url: &Url, at: &Url, status: u16, location: &Url) -> AgentToolResult {
    let text = format!(
        "The URL redirected to {location} (another host); call web_fetch with that URL to follow it."
    );
    AgentToolResult {
        details: Some(json!({
            "url": url.as_str(), "finalUrl": at.as_str(), "status": status,
            "contentType": null, "bytes": 0, "truncated": false, "redirect": location.as_str(),
        })),
        ..AgentToolResult::text(text)
    }
}

/// The result for a response: its text (or image) under a header, or why not.
fn page(
    url: &Url,
    body: Body,
    prompt: Option<String>,
    spill_dir: PathBuf,
) -> Result<AgentToolResult, ToolError> {
    let content_type = body.content_type.as_deref().map(ContentType::parse);
    let mut details = json!({
        "url": url.as_str(), "finalUrl": body.url.as_str(), "status": body.status.as_u16(),
        "contentType": body.content_type, "bytes": body.bytes.len(), "truncated": false,
    });
    if !body.status.is_success() {
        return Ok(http_error(&body, content_type.as_ref(), details));
    }
    let kind = kind_of(content_type.as_ref(), &body.bytes);
    let mut text = match kind {
        Kind::Image(mime) => return image(&body, mime, details),
        Kind::Unsupported(media) => {
            return Err(ToolError::new(format!(
                "web_fetch cannot read {media} content ({}): it returns HTML pages (as Markdown), \
                 text, JSON and PNG, JPEG, GIF or WebP images.",
                body.url
            )));
        }
        Kind::Html => html(&body, content_type.as_ref()),
        Kind::Text => PageText {
            text: decode(&body.bytes, content_type.as_ref()),
            notices: Vec::new(),
            extension: "txt",
            cut: false,
        },
    };
    if body.capped {
        text.notices.push(format!(
            "[The page is larger than {}: only its first {} were downloaded.]",
            format_size(MAX_BODY_BYTES),
            format_size(MAX_BODY_BYTES)
        ));
    }
    // A hostile page's escape sequences must not reach a terminal or confuse the model.
    let shown = show(&clean(&text.text), &spill_dir, text.extension);
    let mut notices = text.notices;
    notices.extend(shown.notice.clone());
    details["truncated"] = json!(body.capped || text.cut || shown.notice.is_some());
    if let Some(path) = &shown.full_path {
        details["fullOutputPath"] = json!(path.display().to_string());
    }
    let mut out = header(url, &body, prompt.as_deref());
    out.push_str(if shown.text.is_empty() {
        "(empty page)"
    } else {
        &shown.text
    });
    if !notices.is_empty() {
        out.push_str("\n\n");
        out.push_str(&notices.join("\n"));
    }
    Ok(AgentToolResult {
        details: Some(details),
        ..AgentToolResult::text(out)
    })
}

/// A page's text and what was left out of it before it was cut to the limits.
struct PageText {
    text: String,
    notices: Vec<String>,
    /// The spill file's extension.
    extension: &'static str,
    /// Part of the page was not converted.
    cut: bool,
}

/// An HTML page as Markdown, its title first, with what the conversion left out.
fn html(body: &Body, content_type: Option<&ContentType>) -> PageText {
    let converted = html_to_markdown(&decode(&body.bytes, content_type), &body.url);
    let mut notices = Vec::new();
    if let Some(parsed) = converted.parsed_bytes {
        notices.push(format!(
            "[Converting the page took longer than {} s: only its first {} are shown.]",
            PARSE_BUDGET.as_secs(),
            format_size(parsed)
        ));
    }
    if converted.plain_text {
        notices.push(
            "[The page nests too deeply to convert to Markdown: its text is shown without markup.]"
                .to_owned(),
        );
    }
    let text = match converted.title {
        Some(title) => format!("Title: {title}\n\n{}", converted.markdown),
        None => converted.markdown,
    };
    PageText {
        text,
        notices,
        extension: "md",
        cut: converted.parsed_bytes.is_some(),
    }
}

/// The lines above the page: what was asked for, where the page came from and what it is.
fn header(url: &Url, body: &Body, prompt: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(prompt) = prompt {
        out.push_str(&format!(
            "Looking for: {prompt}\n(No other model has read this page: look for it in the text below.)\n\n"
        ));
    }
    out.push_str(&format!("URL: {}", body.url));
    if body.url != *url {
        out.push_str(&format!(" (redirected from {url})"));
    }
    let status = body.status;
    let media = body.content_type.as_deref().unwrap_or("no content type");
    out.push_str(&format!(
        "\nStatus: {} {} · {media} · {}\n\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default(),
        format_size(body.bytes.len())
    ));
    out
}

/// A 4xx/5xx answer: a tool error with the status and the start of the body.
fn http_error(body: &Body, content_type: Option<&ContentType>, details: Value) -> AgentToolResult {
    const EXCERPT_CHARS: usize = 1000;
    let text = match kind_of(content_type, &body.bytes) {
        Kind::Html => html_to_markdown(&decode(&body.bytes, content_type), &body.url).markdown,
        Kind::Text => decode(&body.bytes, content_type),
        _ => String::new(),
    };
    let text = clean(&text);
    let text = text.trim();
    let excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
    let more = if excerpt.len() < text.len() {
        " …"
    } else {
        ""
    };
    let status = body.status;
    let mut out = format!(
        "HTTP {} {} from {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default(),
        body.url
    );
    if !excerpt.is_empty() {
        out.push_str(&format!(":\n\n{excerpt}{more}"));
    }
    AgentToolResult {
        details: Some(details),
        ..AgentToolResult::error(out)
    }
}

/// A small image, attached.
fn image(body: &Body, mime: &str, details: Value) -> Result<AgentToolResult, ToolError> {
    if body.capped || body.bytes.len() > MAX_IMAGE_BYTES {
        return Err(ToolError::new(format!(
            "The {mime} image at {} is over the {} limit for attachments: it was not attached.",
            body.url,
            format_size(MAX_IMAGE_BYTES)
        )));
    }
    Ok(AgentToolResult {
        content: vec![
            ContentBlock::text(format!("Fetched image {} [{mime}]", body.url)),
            ContentBlock::Image(ImageContent {
                data: base64(&body.bytes),
                mime_type: mime.to_owned(),
            }),
        ],
        details: Some(details),
        ..Default::default()
    })
}
