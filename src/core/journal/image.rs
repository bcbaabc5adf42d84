//! The names the journal gives file contents (its before- and after-images), and how it
//! decides that a content is the one named — always by a cryptographic hash (issue 31):
//!
//! - `<64 hex>`: the content's SHA-256; a stored image is `<session folder>/blobs/<64 hex>`.
//! - `git:<40 or 64 hex>`: a blob of the workspace's git repository (the content of a file that
//!   was clean against the index; 64 digits in a SHA-256 repository), kept reachable by the
//!   journal's ref ([`super::git`]) and never copied.
//! - `<32 hex>`: a session written before issue 31, which named contents by the tools'
//!   fingerprint; still read, compared by that fingerprint (it cannot tell some swapped lines
//!   apart, which is why nothing is named so any more).

use crate::tools::{ContentHash, Fingerprint};

/// A parsed image name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ImageId {
    Sha256(ContentHash),
    Git(String),
    Legacy(String),
}

impl ImageId {
    /// The name of `bytes` as the journal stores it.
    pub fn of(bytes: &[u8]) -> ImageId {
        ImageId::Sha256(ContentHash::of(bytes))
    }

    pub fn parse(name: &str) -> Option<ImageId> {
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        if let Some(oid) = name.strip_prefix("git:") {
            return (hex(oid, 40) || hex(oid, 64)).then(|| ImageId::Git(oid.to_ascii_lowercase()));
        }
        if let Some(hash) = ContentHash::from_hex(name) {
            return Some(ImageId::Sha256(hash));
        }
        hex(name, 32).then(|| ImageId::Legacy(name.to_ascii_lowercase()))
    }

    pub fn name(&self) -> String {
        match self {
            ImageId::Sha256(h) => h.hex(),
            ImageId::Git(oid) => format!("git:{oid}"),
            ImageId::Legacy(name) => name.clone(),
        }
    }

    /// Whether `bytes` is the content this names.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        match self {
            ImageId::Sha256(h) => ContentHash::of(bytes) == *h,
            ImageId::Git(oid) => {
                let format = match oid.len() {
                    64 => super::git::ObjectFormat::Sha256,
                    _ => super::git::ObjectFormat::Sha1,
                };
                format.blob_id(bytes) == *oid
            }
            ImageId::Legacy(name) => legacy_name(bytes) == *name,
        }
    }
}

/// Whether the content `bytes` (`None`: no such file) is what `name` (`None`: no file) names.
pub fn is(name: Option<&str>, bytes: Option<&[u8]>) -> bool {
    match (name, bytes) {
        (None, None) => true,
        (Some(name), Some(bytes)) => ImageId::parse(name).is_some_and(|id| id.matches(bytes)),
        _ => false,
    }
}

/// The image name of `bytes`.
pub fn name_of(bytes: &[u8]) -> String {
    ImageId::of(bytes).name()
}

/// The id git gives `bytes` as a blob in a SHA-1 repository.
pub fn blob_id(bytes: &[u8]) -> String {
    super::git::ObjectFormat::Sha1.blob_id(bytes)
}

/// The name sessions before issue 31 gave `bytes`.
fn legacy_name(bytes: &[u8]) -> String {
    let fp = Fingerprint::of(bytes);
    format!("{:016x}{:016x}", fp.len, fp.hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_decide_by_their_own_hash() {
        let bytes = b"let x = 1;\n";
        let sha = ImageId::of(bytes);
        assert_eq!(ImageId::parse(&sha.name()), Some(sha.clone()));
        assert!(sha.matches(bytes));
        assert!(!sha.matches(b"let x = 2;\n"));
        let git = ImageId::parse(&format!("git:{}", blob_id(bytes))).unwrap();
        assert!(git.matches(bytes));
        let legacy = ImageId::parse(&legacy_name(bytes)).unwrap();
        assert!(matches!(legacy, ImageId::Legacy(_)));
        assert!(legacy.matches(bytes));
        assert_eq!(ImageId::parse("../etc/passwd"), None);
        assert_eq!(ImageId::parse("git:xyz"), None);
        assert!(is(None, None));
        assert!(!is(Some(&sha.name()), None));
    }

    #[test]
    fn swapped_indented_lines_are_a_different_image() {
        let a = b"def f():\n        a = 1\n        b = 2\n        c()\n";
        let b = b"def f():\n        b = 2\n        a = 1\n        c()\n";
        assert_eq!(legacy_name(a), legacy_name(b), "what the old names missed");
        assert!(!ImageId::of(a).matches(b));
    }
}
