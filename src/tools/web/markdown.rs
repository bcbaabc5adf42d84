//! A fetched HTML page as Markdown for the model: htmd (html5ever's parser, turndown's rules)
//! keeps headings, links, lists, tables and code blocks (fenced, with their language). Before
//! converting, links and images are made absolute against the page's URL (or its `<base>`), so
//! the model can fetch what a page links to. Scripts, styles and other markup that is not
//! content are left out.
//!
//! Pages are hostile input. html5ever's tree builder takes time quadratic in the nesting depth
//! (each start tag looks through the open elements), so the page is parsed in slices against a
//! time budget ([`PARSE_BUDGET`]) and what was parsed in it is shown. The converter walks the
//! tree recursively, so a page nested deeper than [`MAX_DEPTH`] (a stack overflow would end the
//! daemon) is given as its plain text instead.

use std::rc::Rc;
use std::time::{Duration, Instant};

use htmd::HtmlToMarkdown;
use html5ever::tendril::TendrilSink;
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::{ParseOpts, parse_document};
use markup5ever_rcdom::{Node, NodeData, RcDom};
use reqwest::Url;

/// Elements whose content is not text for a reader.
const SKIPPED: [&str; 10] = [
    "head", "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
];

/// The deepest nesting converted as Markdown (real pages stay far below it).
pub const MAX_DEPTH: usize = 256;

/// How long parsing one page may take; a slice started before it ends is finished.
pub const PARSE_BUDGET: Duration = Duration::from_secs(5);

/// The parser is fed this much at a time between looks at the clock.
const SLICE: usize = 4096;

/// A converted page.
#[derive(Debug, PartialEq, Eq)]
pub struct Converted {
    /// The page's `<title>`, whitespace collapsed.
    pub title: Option<String>,
    pub markdown: String,
    /// The page nested too deeply: `markdown` is its plain text.
    pub plain_text: bool,
    /// Parsing ran out of time: only this many bytes of the page were read.
    pub parsed_bytes: Option<usize>,
}

/// Converts `html` fetched from `url`.
pub fn html_to_markdown(html: &str, url: &Url) -> Converted {
    convert_within(html, url, PARSE_BUDGET)
}

fn convert_within(html: &str, url: &Url, budget: Duration) -> Converted {
    let (tree, parsed_bytes) = parse(html, Instant::now() + budget);
    let found = absolutize(&tree, url);
    let plain_text = found.depth > MAX_DEPTH;
    let markdown = if plain_text {
        plain_text_of(&tree)
    } else {
        let converter = HtmlToMarkdown::builder()
            .skip_tags(SKIPPED.to_vec())
            .build();
        converter.tree_to_markdown(&tree)
    };
    Converted {
        title: found.title,
        markdown,
        plain_text,
        parsed_bytes,
    }
}

/// Parses `html` in slices until `deadline`: the document, and how much of the page it holds
/// when the deadline cut it short.
fn parse(html: &str, deadline: Instant) -> (Rc<Node>, Option<usize>) {
    let options = ParseOpts {
        tree_builder: TreeBuilderOpts {
            // As htmd parses: `<noscript>` content is markup, left out with the element.
            scripting_enabled: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut parser = parse_document(RcDom::default(), options);
    let mut at = 0;
    while at < html.len() {
        if Instant::now() > deadline {
            return (parser.finish().document, Some(at));
        }
        let mut end = (at + SLICE).min(html.len());
        while !html.is_char_boundary(end) {
            end += 1;
        }
        parser.process(html[at..end].into());
        at = end;
    }
    (parser.finish().document, None)
}

/// What one walk of the tree found.
struct Found {
    title: Option<String>,
    depth: usize,
}

/// Makes every `a href` and `img src` absolute (against the first `<base href>`, else `url`),
/// without recursion; notes the title and the deepest nesting.
fn absolutize(tree: &Rc<Node>, url: &Url) -> Found {
    let mut base = url.clone();
    let mut based = false;
    let mut found = Found {
        title: None,
        depth: 0,
    };
    let mut stack = vec![(tree.clone(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        found.depth = found.depth.max(depth);
        if let NodeData::Element { name, attrs, .. } = &node.data {
            let tag = &*name.local;
            let mut attrs = attrs.borrow_mut();
            for attr in attrs.iter_mut() {
                let key = &*attr.name.local;
                let link = matches!((tag, key), ("a", "href") | ("img", "src"));
                if tag == "base" && key == "href" && !based {
                    based = true;
                    if let Ok(joined) = url.join(&attr.value) {
                        base = joined;
                    }
                } else if link && let Ok(joined) = base.join(&attr.value) {
                    attr.value = joined.as_str().into();
                }
            }
            if tag == "title" && found.title.is_none() {
                let text = collapse(&text_of(&node));
                found.title = (!text.is_empty()).then_some(text);
            }
        }
        let children = node.children.borrow();
        stack.extend(children.iter().rev().map(|c| (c.clone(), depth + 1)));
    }
    found
}

/// The text directly inside `node` (a `<title>` holds only text).
fn text_of(node: &Rc<Node>) -> String {
    let children = node.children.borrow();
    let texts = children.iter().filter_map(|child| match &child.data {
        NodeData::Text { contents } => Some(contents.borrow().to_string()),
        _ => None,
    });
    texts.collect()
}

/// A too-deep page's text: its text nodes, each on a line, whitespace collapsed.
fn plain_text_of(tree: &Rc<Node>) -> String {
    let mut lines = Vec::new();
    let mut stack = vec![tree.clone()];
    while let Some(node) = stack.pop() {
        match &node.data {
            NodeData::Text { contents } => {
                let line = collapse(&contents.borrow());
                if !line.is_empty() {
                    lines.push(line);
                }
            }
            NodeData::Element { name, .. } if SKIPPED.contains(&&*name.local) => {}
            _ => stack.extend(node.children.borrow().iter().rev().cloned()),
        }
    }
    lines.join("\n")
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(html: &str) -> Converted {
        html_to_markdown(
            html,
            &Url::parse("https://docs.example/guide/intro.html").unwrap(),
        )
    }

    /// `convert` on a thread of `stack` bytes.
    fn convert_on_a_stack_of(stack: usize, html: String) -> Converted {
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || convert(&html))
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn headings_links_and_code_blocks_survive() {
        let page = convert(
            "<html><head><title> The  Guide </title><style>p{}</style></head><body>\
             <h1>Intro</h1><p>See <a href=\"setup.html\">setup</a> and \
             <a href=\"/api\">the API</a>.</p><script>alert(1)</script>\
             <pre><code class=\"language-rust\">fn main() {}\n</code></pre>\
             <img src=\"img/a.png\" alt=\"A\"></body></html>",
        );
        assert_eq!(page.title.as_deref(), Some("The Guide"));
        let md = page.markdown;
        assert!(md.starts_with("# Intro"), "{md}");
        assert!(
            md.contains("[setup](https://docs.example/guide/setup.html)"),
            "{md}"
        );
        assert!(md.contains("[the API](https://docs.example/api)"), "{md}");
        assert!(md.contains("```rust\nfn main() {}\n```"), "{md}");
        assert!(
            md.contains("![A](https://docs.example/guide/img/a.png)"),
            "{md}"
        );
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
    }

    #[test]
    fn a_base_element_moves_relative_links() {
        let page =
            convert("<head><base href=\"https://other.example/v2/\"></head><a href=\"x\">x</a>");
        assert_eq!(page.markdown, "[x](https://other.example/v2/x)");
    }

    #[test]
    fn a_page_nested_too_deeply_is_given_as_text_without_overflowing_the_stack() {
        let depth = 3000;
        let html = format!(
            "{}deep text{}",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        // On a small stack: the converter's recursion would overflow it.
        let page = convert_on_a_stack_of(512 * 1024, html);
        assert!(page.plain_text);
        assert_eq!(page.markdown, "deep text");
        assert_eq!(page.parsed_bytes, None);
    }

    #[test]
    fn parsing_a_hostile_nesting_stops_at_its_budget() {
        // Parsing all of it would take hours (quadratic in the depth).
        let html = "<div>".repeat(1_000_000);
        let started = Instant::now();
        let url = Url::parse("https://docs.example/").unwrap();
        let page = convert_within(&html, &url, Duration::from_millis(200));
        let parsed = page.parsed_bytes.expect("cut short");
        assert!(parsed < html.len(), "{parsed}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_deepest_pages_converted_fit_half_the_blocking_pools_stack() {
        // Each kind of nesting the converter recurses through differently, to just under the
        // limit (the html, body and innermost elements make up the rest).
        let nestings = [
            ("<div>", "</div>", 1),
            ("<blockquote>", "</blockquote>", 1),
            ("<ul><li>", "</li></ul>", 2),
            ("<table><tr><td>", "</td></tr></table>", 4),
            ("<b><i>", "</i></b>", 2),
        ];
        for (open, close, levels) in nestings {
            let n = (MAX_DEPTH - 6) / levels;
            let html = format!(
                "{}<a href=\"x\">deep</a>{}",
                open.repeat(n),
                close.repeat(n)
            );
            // The blocking pool's threads have 2 MiB.
            let page = convert_on_a_stack_of(1024 * 1024, html);
            assert!(!page.plain_text, "{open}");
            assert!(
                page.markdown
                    .contains("[deep](https://docs.example/guide/x)"),
                "{open}"
            );
        }
    }
}
