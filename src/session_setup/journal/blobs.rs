//! Before- and after-images of files, stored once per content in the session folder and shared
//! by its sessions (`<session folder>/blobs/<sha-256>`; [`super::image`] names them), private to the user like the
//! sessions themselves. Shared, because a session's first `bash` stores an image of every file
//! of the workspace: per session that was a copy of the workspace each (up to 64 MiB) and, on
//! the 2-core test machine, about a second of file creation for 3,000 files each time; shared,
//! a new session in the same workspace creates only the images of what changed. Sessions stored
//! before keep theirs in `<session-file-stem>.blobs/`, which is still read.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::image::{ImageId, name_of};

/// The image name of `bytes` (their SHA-256, [`super::image`]).
pub fn hash(bytes: &[u8]) -> String {
    name_of(bytes)
}

/// [`hash`] of a file's content, read in pieces (for files too large to hold).
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    use sha2::Digest;
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(crate::tools::ContentHash(hasher.finalize().into()).hex());
        }
        hasher.update(&buf[..n]);
    }
}

/// Where a session's images are: the store its folder shares, and the directories sessions
/// had of their own before (its own, and that of the session it was forked from).
#[derive(Clone, Debug)]
pub struct BlobStore {
    dir: PathBuf,
    legacy: Vec<PathBuf>,
}

/// `<dir>/<stem>.blobs` for `<dir>/<stem>.jsonl`: a session's own images, before they were shared.
fn own_dir(session_file: &Path) -> PathBuf {
    let stem = session_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    session_file.with_file_name(format!("{stem}.blobs"))
}

/// `<dir>/blobs` for `<dir>/<stem>.jsonl`.
pub fn shared_dir(session_file: &Path) -> PathBuf {
    session_file.with_file_name("blobs")
}

impl BlobStore {
    pub fn for_session(session_file: &Path, parent_session: Option<&str>) -> BlobStore {
        let parent = parent_session.map(Path::new);
        BlobStore {
            dir: shared_dir(session_file),
            legacy: std::iter::once(own_dir(session_file))
                .chain(parent.map(own_dir))
                .chain(
                    parent
                        .map(shared_dir)
                        .filter(|d| *d != shared_dir(session_file)),
                )
                .collect(),
        }
    }

    /// Stores `bytes` unless an image of that content is there already; returns its hash.
    /// Synced before it returns: the image must outlive the change it makes revertible.
    pub fn store(&self, bytes: &[u8]) -> std::io::Result<String> {
        let name = hash(bytes);
        let path = self.dir.join(&name);
        if self.reuse(&path) {
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

    /// Whether an image is stored at `path` already, and then marks it as used now: a
    /// collection ([`super::gc`]) keeps every image used since the oldest running session
    /// started, which may name it in an entry any time later. Marked under the store's shared
    /// lock, so a collection (which holds it exclusively) cannot remove it in between.
    fn reuse(&self, path: &Path) -> bool {
        if !path.is_file() {
            return false;
        }
        let _shared = super::gc::StoreLock::shared(&self.dir);
        let touched = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        touched.is_ok()
    }

    /// The content stored under `name`, if this session or its parent has it and it is
    /// that content (an image file that does not hash to its name is not used).
    pub fn load(&self, name: &str) -> Option<Vec<u8>> {
        // A name from the file is only ever one of the image names: never a path of its own.
        let id = ImageId::parse(name)?;
        if matches!(id, ImageId::Git(_)) {
            return None;
        }
        let file = id.name();
        std::iter::once(&self.dir)
            .chain(&self.legacy)
            .filter_map(|dir| std::fs::read(dir.join(&file)).ok())
            .find(|bytes| id.matches(bytes))
    }

    /// The folder images are stored in.
    pub fn dir(&self) -> &Path {
        &self.dir
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
        assert_eq!(hash(b"a").len(), 64);
    }

    #[test]
    fn stores_once_per_content_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::for_session(&dir.path().join("s.jsonl"), None);
        let a = store.store(b"alpha").unwrap();
        assert_eq!(store.store(b"alpha").unwrap(), a);
        assert_eq!(store.load(&a).unwrap(), b"alpha");
        assert_eq!(
            std::fs::read_dir(dir.path().join("blobs")).unwrap().count(),
            1
        );
        assert!(store.load("../s.jsonl").is_none());
        assert_eq!(a.len(), 64);
        // An image whose bytes are not what its name says is not served.
        std::fs::write(dir.path().join("blobs").join(&a), b"tampered").unwrap();
        assert!(store.load(&a).is_none());
    }

    #[test]
    fn the_sessions_of_a_folder_share_images_and_old_own_ones_are_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let first = BlobStore::for_session(&dir.path().join("a.jsonl"), None);
        let second = BlobStore::for_session(&dir.path().join("b.jsonl"), None);
        let shared = first.store(b"shared").unwrap();
        assert_eq!(second.load(&shared).unwrap(), b"shared");
        assert_eq!(second.store(b"shared").unwrap(), shared);
        assert_eq!(
            std::fs::read_dir(shared_dir(&dir.path().join("b.jsonl")))
                .unwrap()
                .count(),
            1
        );
        // An image a session stored in its own directory, before the store was shared.
        std::fs::create_dir(dir.path().join("b.blobs")).unwrap();
        std::fs::write(dir.path().join("b.blobs").join(hash(b"old")), b"old").unwrap();
        // And one named by the fingerprint, before issue 31.
        let fp = crate::tools::Fingerprint::of(b"older");
        let legacy = format!("{:016x}{:016x}", fp.len, fp.hash);
        std::fs::write(dir.path().join("b.blobs").join(&legacy), b"older").unwrap();
        assert_eq!(second.load(&legacy).unwrap(), b"older");
        assert_eq!(second.load(&hash(b"old")).unwrap(), b"old");
        // A fork reads its parent's old images, also from another folder.
        let elsewhere = tempfile::tempdir().unwrap();
        let parent = dir.path().join("b.jsonl");
        let fork = BlobStore::for_session(
            &elsewhere.path().join("c.jsonl"),
            Some(parent.to_str().unwrap()),
        );
        assert_eq!(fork.load(&hash(b"old")).unwrap(), b"old");
        assert_eq!(fork.load(&shared).unwrap(), b"shared");
        assert!(
            first.load(&hash(b"old")).is_none(),
            "b's own images are b's"
        );
    }
}
