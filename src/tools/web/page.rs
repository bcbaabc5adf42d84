//! What a fetched body is by its `Content-Type` (sniffed when the server sends none), and its
//! text: HTML becomes Markdown, text and JSON pass as they are, small images are attached, and
//! anything else is refused with a message saying what it was.

use encoding_rs::{Encoding, UTF_8};

use crate::tools::image::{looks_binary, sniff_image};

/// How `web_fetch` handles a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Html,
    /// Text, JSON, XML: passed as it is.
    Text,
    /// PNG, JPEG, GIF or WebP.
    Image(&'static str),
    /// Refused: the media type as the server named it.
    Unsupported(String),
}

/// A `Content-Type` header split into its media type (lowercased) and `charset`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContentType {
    pub media: String,
    pub charset: Option<String>,
}

impl ContentType {
    pub fn parse(header: &str) -> ContentType {
        let mut parts = header.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let charset = parts.find_map(|param| {
            let (name, value) = param.split_once('=')?;
            let value = value.trim().trim_matches('"');
            name.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| value.to_owned())
        });
        ContentType { media, charset }
    }
}

/// The kind of `body` served as `content_type` (`None`: no header, so sniffed).
pub fn kind_of(content_type: Option<&ContentType>, body: &[u8]) -> Kind {
    let Some(media) = content_type
        .map(|t| t.media.as_str())
        .filter(|m| !m.is_empty())
    else {
        return sniff(body);
    };
    match media {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        m if m.starts_with("text/") || is_textual_application(m) => Kind::Text,
        m if m.starts_with("image/") => match sniff_image(body) {
            Some(mime) => Kind::Image(mime),
            None => Kind::Unsupported(m.to_owned()),
        },
        // Servers label text they do not know as bytes; a look at it tells.
        "application/octet-stream" => match sniff(body) {
            Kind::Html | Kind::Text if !looks_binary(body) => Kind::Text,
            other => other,
        },
        other => Kind::Unsupported(other.to_owned()),
    }
}

/// Whether the media type alone refuses a body, so it need not be downloaded (images and
/// `application/octet-stream` are looked at first).
pub fn refused_by_type(content_type: &ContentType) -> bool {
    let media = content_type.media.as_str();
    let looked_at =
        media.is_empty() || media.starts_with("image/") || media == "application/octet-stream";
    !looked_at && matches!(kind_of(Some(content_type), b""), Kind::Unsupported(_))
}

/// JSON, XML, JavaScript, YAML, TOML and the like, which are text whatever their prefix.
fn is_textual_application(media: &str) -> bool {
    let Some(sub) = media.strip_prefix("application/") else {
        return false;
    };
    matches!(
        sub,
        "json"
            | "xml"
            | "javascript"
            | "ecmascript"
            | "x-javascript"
            | "yaml"
            | "x-yaml"
            | "toml"
            | "x-toml"
            | "x-sh"
            | "sql"
            | "graphql"
            | "x-ndjson"
            | "ndjson"
    ) || sub.ends_with("+json")
        || sub.ends_with("+xml")
        || sub.ends_with("+yaml")
}

/// A body without a media type: an image by its magic bytes, HTML by its start, text when no
/// NUL byte says otherwise.
fn sniff(body: &[u8]) -> Kind {
    if let Some(mime) = sniff_image(body) {
        return Kind::Image(mime);
    }
    if looks_binary(body) {
        return Kind::Unsupported("binary data (no Content-Type)".into());
    }
    let start = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let start = start.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

/// The body as text, in its declared charset (UTF-8 when none or unknown; a byte order mark
/// wins over both, as browsers decide).
pub fn decode(body: &[u8], content_type: Option<&ContentType>) -> String {
    let declared = content_type
        .and_then(|t| t.charset.as_deref())
        .and_then(|label| Encoding::for_label(label.as_bytes()))
        .unwrap_or(UTF_8);
    declared.decode(body).0.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(header: &str, body: &[u8]) -> Kind {
        kind_of(Some(&ContentType::parse(header)), body)
    }

    #[test]
    fn kinds_by_media_type() {
        assert_eq!(kind("text/html; charset=utf-8", b"<p>"), Kind::Html);
        assert_eq!(kind("TEXT/PLAIN", b"hi"), Kind::Text);
        assert_eq!(kind("application/json", b"{}"), Kind::Text);
        assert_eq!(kind("application/vnd.api+json", b"{}"), Kind::Text);
        assert_eq!(
            kind("image/png", b"\x89PNG\r\n\x1a\n...."),
            Kind::Image("image/png")
        );
        assert_eq!(
            kind("image/svg+xml", b"<svg/>"),
            Kind::Unsupported("image/svg+xml".into())
        );
        assert_eq!(
            kind("application/pdf", b"%PDF-1.7"),
            Kind::Unsupported("application/pdf".into())
        );
        assert_eq!(kind("application/octet-stream", b"plain words"), Kind::Text);
        assert_eq!(kind_of(None, b"<!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(kind_of(None, b"just text"), Kind::Text);
        assert!(matches!(kind_of(None, b"\0\x01\x02"), Kind::Unsupported(_)));
    }

    #[test]
    fn charsets() {
        let latin1 = ContentType::parse("text/plain; charset=\"ISO-8859-1\"");
        assert_eq!(latin1.charset.as_deref(), Some("ISO-8859-1"));
        assert_eq!(decode(b"caf\xe9", Some(&latin1)), "café");
        assert_eq!(decode("café".as_bytes(), None), "café");
        assert_eq!(decode(b"\xef\xbb\xbfbom", Some(&latin1)), "bom");
    }
}
