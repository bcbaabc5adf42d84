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

use std::sync::{Arc, OnceLock};

use nix::fcntl::{Flock, FlockArg};

use super::git::GitRepo;
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
    /// The session's workspace, whose repository holds its `git:` images.
    workspace: Option<PathBuf>,
    git: Arc<OnceLock<Option<GitRepo>>>,
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
            workspace: None,
            git: Arc::default(),
        }
    }

    /// The store, reading its `git:` images from the repository of `workspace`.
    pub fn with_workspace(mut self, workspace: &Path) -> BlobStore {
        self.workspace = Some(workspace.to_path_buf());
        self
    }

    /// The workspace's repository (found at the first `git:` image read).
    pub fn git(&self) -> Option<&GitRepo> {
        let workspace = self.workspace.as_deref()?;
        self.git
            .get_or_init(|| GitRepo::discover(workspace))
            .as_ref()
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

    /// A batch of images written together and synced at once ([`Batch::commit`]): a command's
    /// before-images are many small files, and one `fdatasync` after another costs about a
    /// millisecond each on the test machine where parallel ones cost a fifth of that.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            store: self,
            pending: Vec::new(),
        }
    }

    /// Whether an image is stored at `path` already, and then marks it as used now: a
    /// collection ([`super::gc`]) keeps every image used since the oldest running session
    /// started, which may name it in an entry any time later. Marked under the store's shared
    /// lock, so a collection (which holds it exclusively) cannot remove it in between.
    fn reuse(&self, path: &Path) -> bool {
        if !path.is_file() {
            return false;
        }
        let _shared = StoreLock::shared(&self.dir);
        let touched = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        touched.is_ok()
    }

    /// The content stored under `name`, if this session or its parent has it and it is
    /// that content (an image file that does not hash to its name is not used); a `git:`
    /// image from the workspace's repository.
    pub fn load(&self, name: &str) -> Option<Vec<u8>> {
        // A name from the file is only ever one of the image names: never a path of its own.
        let id = ImageId::parse(name)?;
        if let ImageId::Git(oid) = &id {
            let bytes = self.git()?.read_blob(oid).ok()?;
            return id.matches(&bytes).then_some(bytes);
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

/// Images being stored together: each written to a temporary file by [`Batch::add`], all synced
/// (in parallel) and moved to their names by [`Batch::commit`]. Dropped uncommitted, the
/// temporary files are removed.
pub struct Batch<'a> {
    store: &'a BlobStore,
    pending: Vec<(std::fs::File, PathBuf, PathBuf)>,
}

/// Parallel syncs of a batch: past this, more threads bought nothing on ext4.
const SYNC_THREADS: usize = 8;

impl Batch<'_> {
    /// Writes `bytes` unless the store has that content; its name, valid once committed.
    pub fn add(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        let name = hash(bytes);
        let path = self.store.dir.join(&name);
        if self.store.reuse(&path) || self.pending.iter().any(|(_, _, p)| *p == path) {
            return Ok(name);
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.store.dir)?;
        let tmp = (self.store.dir).join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        if let Err(e) = file.write_all(bytes) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        self.pending.push((file, tmp, path));
        Ok(name)
    }

    /// Syncs every image written and gives each its name. On an error none is named (the
    /// names [`Batch::add`] gave are then not stored, unless they were already).
    pub fn commit(mut self) -> std::io::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let per_thread = pending.len().div_ceil(SYNC_THREADS).max(1);
        let synced = std::thread::scope(|s| {
            let threads: Vec<_> = pending
                .chunks(per_thread)
                .map(|chunk| s.spawn(move || chunk.iter().try_for_each(|(f, _, _)| f.sync_data())))
                .collect();
            threads.into_iter().try_for_each(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("sync")))
            })
        });
        let moved = synced.and_then(|()| {
            (pending.iter()).try_for_each(|(_, tmp, path)| std::fs::rename(tmp, path))
        });
        if moved.is_err() {
            for (_, tmp, _) in &pending {
                let _ = std::fs::remove_file(tmp);
            }
        }
        moved
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        for (_, tmp, _) in &self.pending {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The store's lock (`blobs.lock` beside `blobs/`, `flock`): shared while an image is reused, exclusive
/// while a collection sweeps. `None` when it cannot be taken (no store yet: nothing to guard).
pub struct StoreLock {
    _file: Flock<std::fs::File>,
}

impl StoreLock {
    /// Waits for a sweep that is under way to end.
    pub fn shared(store: &Path) -> Option<StoreLock> {
        StoreLock::take(store, FlockArg::LockShared)
    }

    /// `None` while another collection holds it (or sessions reuse images right now).
    pub(super) fn exclusive(store: &Path) -> Option<StoreLock> {
        StoreLock::take(store, FlockArg::LockExclusiveNonblock)
    }

    fn take(store: &Path, how: FlockArg) -> Option<StoreLock> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(store.with_extension("lock"))
            .ok()?;
        Flock::lock(file, how)
            .ok()
            .map(|file| StoreLock { _file: file })
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
    fn a_batch_names_its_images_once_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::for_session(&dir.path().join("s.jsonl"), None);
        let old = store.store(b"stored before").unwrap();
        let mut batch = store.batch();
        let names: Vec<String> = (0..20)
            .map(|i| batch.add(format!("image {i}").as_bytes()).unwrap())
            .collect();
        assert_eq!(batch.add(b"stored before").unwrap(), old);
        assert_eq!(batch.add(b"image 3").unwrap(), names[3]);
        assert!(store.load(&names[0]).is_none(), "named only once committed");
        batch.commit().unwrap();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(store.load(name).unwrap(), format!("image {i}").into_bytes());
        }
        let files = std::fs::read_dir(store.dir()).unwrap().count();
        assert_eq!(files, 21, "no temporary file left");
        let mut dropped = store.batch();
        dropped.add(b"never committed").unwrap();
        drop(dropped);
        assert_eq!(std::fs::read_dir(store.dir()).unwrap().count(), 21);
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
