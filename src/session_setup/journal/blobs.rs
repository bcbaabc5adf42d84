//! Before- and after-images of files, stored once per content next to the session file
//! (`<session-file-stem>.blobs/<fingerprint>`), private to the user like the session itself.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::tools::Fingerprint;
use crate::tools::workspace::FingerprintHasher;

/// The content hash the journal names images by: the tools' [`Fingerprint`] (length and a
/// 64-bit hash, 32 hex digits). It identifies content, it does not authenticate it (the images
/// are the user's own files, in the user's private directory), and for an open buffer the
/// daemon keeps it current per change, so a journaled `edit` of a 10 MB buffer hashes nothing
/// (SHA-256 of the whole buffer before and after cost ~10 ms per edit; BENCH.md, scenario 5).
pub fn hash(bytes: &[u8]) -> String {
    name(Fingerprint::of(bytes))
}

/// The journal's name of content with `fingerprint`.
pub fn name(fingerprint: Fingerprint) -> String {
    format!("{:016x}{:016x}", fingerprint.len, fingerprint.hash)
}

/// [`hash`] of a file's content, read in pieces (for files too large to hold).
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = FingerprintHasher::default();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(name(hasher.finish()));
        }
        hasher.feed(&buf[..n]);
    }
}

/// The blob directory of a session file, and of the session it was forked from (a fork copies
/// the journal's entries, not their images).
#[derive(Clone, Debug)]
pub struct BlobStore {
    dir: PathBuf,
    parent: Option<PathBuf>,
}

/// `<dir>/<stem>.blobs` for `<dir>/<stem>.jsonl`.
pub fn blob_dir(session_file: &Path) -> PathBuf {
    let stem = session_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    session_file.with_file_name(format!("{stem}.blobs"))
}

impl BlobStore {
    pub fn for_session(session_file: &Path, parent_session: Option<&str>) -> BlobStore {
        BlobStore {
            dir: blob_dir(session_file),
            parent: parent_session.map(|p| blob_dir(Path::new(p))),
        }
    }

    /// Stores `bytes` unless an image of that content is there already; returns its hash.
    /// Synced before it returns: the image must outlive the change it makes revertible.
    pub fn store(&self, bytes: &[u8]) -> std::io::Result<String> {
        let name = hash(bytes);
        let path = self.dir.join(&name);
        if path.is_file() {
            return Ok(name);
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let tmp = self
            .dir
            .join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map(|()| name)
    }

    /// The content stored under `hash`, if this session or its parent has it.
    pub fn load(&self, hash: &str) -> Option<Vec<u8>> {
        // A hash from the file is only ever hex: never a path of its own.
        if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        std::iter::once(&self.dir)
            .chain(self.parent.as_ref())
            .find_map(|dir| std::fs::read(dir.join(hash)).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_hashed_in_pieces_has_its_contents_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(hash_file(&path).unwrap(), hash(&bytes));
        assert_eq!(hash(b"a").len(), 32);
    }

    #[test]
    fn stores_once_per_content_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::for_session(&dir.path().join("s.jsonl"), None);
        let a = store.store(b"alpha").unwrap();
        assert_eq!(store.store(b"alpha").unwrap(), a);
        assert_eq!(store.load(&a).unwrap(), b"alpha");
        assert_eq!(
            std::fs::read_dir(dir.path().join("s.blobs"))
                .unwrap()
                .count(),
            1
        );
        assert!(store.load("../s.jsonl").is_none());
        assert_eq!(a.len(), 32);
    }
}
