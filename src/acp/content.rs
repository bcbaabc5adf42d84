//! A prompt's ACP content blocks as pi's: text and images as they are; a `resource_link` as a
//! line naming it (the model reads it with its tools); an embedded `resource` as its text in a
//! fenced block under its URI (a binary one as a note: the model cannot read blobs).

use agent_client_protocol_schema::v1 as acp;

use crate::agent::message::{ContentBlock, ImageContent};

pub fn to_pi_blocks(prompt: &[acp::ContentBlock]) -> Vec<ContentBlock> {
    prompt.iter().filter_map(to_pi_block).collect()
}

fn to_pi_block(block: &acp::ContentBlock) -> Option<ContentBlock> {
    Some(match block {
        acp::ContentBlock::Text(t) => ContentBlock::text(t.text.as_str()),
        acp::ContentBlock::Image(i) => ContentBlock::Image(ImageContent {
            data: i.data.clone(),
            mime_type: i.mime_type.clone(),
        }),
        acp::ContentBlock::ResourceLink(link) => {
            ContentBlock::text(format!("[@{}]({})", link.name, file_path(&link.uri)))
        }
        acp::ContentBlock::Resource(embedded) => match &embedded.resource {
            acp::EmbeddedResourceResource::TextResourceContents(r) => ContentBlock::text(format!(
                "Contents of {}:\n```\n{}\n```",
                file_path(&r.uri),
                r.text.trim_end_matches('\n')
            )),
            acp::EmbeddedResourceResource::BlobResourceContents(r) => ContentBlock::text(format!(
                "[binary resource {} ({}) not shown]",
                file_path(&r.uri),
                r.mime_type.as_deref().unwrap_or("unknown type")
            )),
            _ => return None,
        },
        _ => return None,
    })
}

/// A `file://` URI as its path, other URIs unchanged.
fn file_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_prompt_block_kind_reaches_the_model() {
        let prompt: Vec<acp::ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "look"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///p/a.rs", "name": "a.rs"},
            {"type": "resource", "resource": {"uri": "file:///p/b.rs", "text": "fn b() {}\n"}}
        ]))
        .unwrap();
        let blocks = to_pi_blocks(&prompt);
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[0].as_text(), Some("look"));
        assert!(matches!(&blocks[1], ContentBlock::Image(i) if i.mime_type == "image/png"));
        assert_eq!(blocks[2].as_text(), Some("[@a.rs](/p/a.rs)"));
        assert_eq!(
            blocks[3].as_text(),
            Some("Contents of /p/b.rs:\n```\nfn b() {}\n```")
        );
    }
}
