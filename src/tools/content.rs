//! Content identity: what decides whether a file's content changed (issue 31).
//!
//! [`ContentHash`] is SHA-256 (the `sha2` crate, SHA-NI where the CPU has it: about 1.6 GB/s
//! here). [`ContentId`] is what the tools compare: a hash of the bytes, or, for a buffer the
//! editor holds open, that buffer's own revision (the daemon counts its changes), which is exact
//! without hashing a 10 MB buffer at every edit. The tools' `Fingerprint` (a sum of windows kept
//! current per change) stays a hint: it is blind to swapped lines that share their context, so
//! it may say "different", never "the same".

use sha2::{Digest, Sha256};

/// SHA-256 of a file's content.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash(pub [u8; 32]);

impl ContentHash {
    pub fn of(bytes: &[u8]) -> ContentHash {
        ContentHash(Sha256::digest(bytes).into())
    }

    /// The hash of content given in pieces (a rope's chunks).
    pub fn of_pieces<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> ContentHash {
        let mut hasher = Sha256::new();
        for piece in pieces {
            hasher.update(piece);
        }
        ContentHash(hasher.finalize().into())
    }

    /// 64 lowercase hex digits.
    pub fn hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for b in self.0 {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }

    /// The hash written as [`ContentHash::hex`]; `None` for anything else.
    pub fn from_hex(text: &str) -> Option<ContentHash> {
        if text.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(ContentHash(out))
    }
}

impl std::fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sha256:{}", &self.hex()[..12])
    }
}

/// Which version of a file's content a tool saw or left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContentId {
    /// The bytes' SHA-256.
    Hash(ContentHash),
    /// An open editor buffer at a revision: `doc` names the open document (a new one each time
    /// it is opened), `rev` counts its changes.
    Buffer { doc: u64, rev: u64 },
}

impl ContentId {
    pub fn of(bytes: &[u8]) -> ContentId {
        ContentId::Hash(ContentHash::of(bytes))
    }

    /// Whether both name the same content: `Some(answer)` when that can be told from the ids
    /// alone, `None` when it takes the content (a hash against a buffer revision). Two
    /// revisions of different open documents count as different (the file was closed and
    /// opened again: in doubt, changed).
    pub fn same(&self, other: &ContentId) -> Option<bool> {
        match (self, other) {
            (ContentId::Hash(a), ContentId::Hash(b)) => Some(a == b),
            (ContentId::Buffer { doc: a, rev: r }, ContentId::Buffer { doc: b, rev: s }) => {
                Some(a == b && r == s)
            }
            _ => None,
        }
    }

    /// The hash, when this id is one.
    pub fn hash(&self) -> Option<ContentHash> {
        match self {
            ContentId::Hash(h) => Some(*h),
            ContentId::Buffer { .. } => None,
        }
    }
}

/// Content held for hashing later, off the caller's path (an open buffer's rope is captured in
/// O(1) and hashed on a blocking thread), or its hash when it is known already.
pub enum Capture {
    Ready(ContentHash),
    Later(Box<dyn FnOnce() -> ContentHash + Send>),
}

impl Capture {
    pub fn new(hash: impl FnOnce() -> ContentHash + Send + 'static) -> Capture {
        Capture::Later(Box::new(hash))
    }

    pub fn bytes(bytes: Vec<u8>) -> Capture {
        Capture::new(move || ContentHash::of(&bytes))
    }

    /// The hash without hashing, when it is known.
    pub fn known(&self) -> Option<ContentHash> {
        match self {
            Capture::Ready(hash) => Some(*hash),
            Capture::Later(_) => None,
        }
    }

    pub fn hash(self) -> ContentHash {
        match self {
            Capture::Ready(hash) => hash,
            Capture::Later(work) => work(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapped_indented_lines_have_different_hashes() {
        // Two lines swapped between lines indented by 7 spaces or more: the windows that cross
        // a line break look the same whichever line comes first.
        let a = "fn f() {\n        let x = 1;\n        let y = 2;\n        z();\n}\n";
        let b = "fn f() {\n        let y = 2;\n        let x = 1;\n        z();\n}\n";
        assert_eq!(
            crate::tools::Fingerprint::of(a.as_bytes()),
            crate::tools::Fingerprint::of(b.as_bytes()),
            "the fingerprint is only a hint: it cannot tell these apart"
        );
        assert_ne!(ContentId::of(a.as_bytes()), ContentId::of(b.as_bytes()));
    }

    #[test]
    fn hashes_print_and_parse_and_pieces_hash_as_a_whole() {
        let h = ContentHash::of(b"hello");
        assert_eq!(
            h.hex(),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(ContentHash::from_hex(&h.hex()), Some(h));
        assert_eq!(ContentHash::from_hex("2cf2"), None);
        assert_eq!(ContentHash::of_pieces([&b"hel"[..], b"lo"]), h);
    }

    #[test]
    fn ids_of_different_kinds_need_the_content() {
        let hash = ContentId::of(b"x");
        let buffer = ContentId::Buffer { doc: 1, rev: 3 };
        assert_eq!(hash.same(&hash), Some(true));
        assert_eq!(
            buffer.same(&ContentId::Buffer { doc: 1, rev: 4 }),
            Some(false)
        );
        assert_eq!(
            buffer.same(&ContentId::Buffer { doc: 2, rev: 3 }),
            Some(false)
        );
        assert_eq!(hash.same(&buffer), None);
    }
}
