//! Real git in temporary repositories. The user's git (what the tests do as the user) and ours
//! both read a configuration of the test's own (`HOME`, `GIT_CONFIG_GLOBAL`, no system file),
//! so the machine's configuration changes nothing.

use super::*;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary home for git, and the repositories made in it.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    /// With an identity for the user's commits.
    fn new() -> Sandbox {
        Sandbox::with_config("[user]\n\tname = Test User\n\temail = user@example.com\n")
    }

    fn with_config(config: &str) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        let config = format!(
            "{config}[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"
        );
        std::fs::write(dir.path().join("home/.gitconfig"), config).unwrap();
        Sandbox { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn env(&self) -> Vec<(&'static str, OsString)> {
        let home = self.path("home");
        vec![
            ("HOME", home.clone().into_os_string()),
            (
                "GIT_CONFIG_GLOBAL",
                home.join(".gitconfig").into_os_string(),
            ),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ]
    }

    /// The user's git (optional locks and all), which must succeed; its stdout.
    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git_output(dir, args);
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn git_output(&self, dir: &Path, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(dir).args(args);
        for (k, _) in std::env::vars_os() {
            if k.as_bytes().starts_with(b"GIT_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(self.env()).env("LC_ALL", "C");
        cmd.output().unwrap()
    }

    /// A new repository with one commit of `files`.
    fn repo(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let root = self.path(name);
        std::fs::create_dir_all(&root).unwrap();
        self.git(&root, &["init", "-q"]);
        for (path, content) in files {
            write(&root.join(path), content);
        }
        self.git(&root, &["add", "-A"]);
        self.git(&root, &["commit", "-q", "-m", "first"]);
        root
    }

    /// Ours, reading the sandbox's configuration.
    fn open(&self, root: &Path) -> Result<GitRepo, GitError> {
        let env = self.env();
        let set: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        GitRepo::open_with_env(root, &set)
    }

    fn hash_object(&self, dir: &Path, bytes: &[u8]) -> String {
        let file = self.path("hash-input");
        std::fs::write(&file, bytes).unwrap();
        let path = file.to_str().unwrap();
        self.git(dir, &["hash-object", "--no-filters", path])
            .trim()
            .to_string()
    }
}

fn write(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

fn status_of(state: &State, path: &Path) -> Option<Status> {
    state.files.get(path).map(|e| e.status)
}

/// The entries as (path below `root`, status), sorted.
fn listing(state: &State, root: &Path) -> Vec<(String, Status)> {
    let mut out: Vec<(String, Status)> = (state.files.iter())
        .map(|(p, e)| {
            let below = p.strip_prefix(root).unwrap();
            (below.to_string_lossy().into_owned(), e.status)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

// --- Blob ids --------------------------------------------------------------------------------

#[test]
fn blob_ids_are_gits_in_both_object_formats() {
    let sandbox = Sandbox::new();
    let sha1 = sandbox.repo("sha1", &[("a", "a")]);
    let sha256 = sandbox.path("sha256");
    std::fs::create_dir(&sha256).unwrap();
    sandbox.git(&sha256, &["init", "-q", "--object-format=sha256"]);
    let mut contents: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"hello\n".to_vec(),
        b"crlf\r\nline\r\n".to_vec(),
        (0..=255u8).collect(),
        vec![0u8; 1 << 20],
    ];
    // Around the padding's block boundaries, with the header's length included.
    contents.extend([40, 41, 47, 48, 55, 56, 63, 64, 119, 120].map(|n| vec![b'x'; n]));
    for (dir, format) in [(&sha1, ObjectFormat::Sha1), (&sha256, ObjectFormat::Sha256)] {
        let repo = sandbox.open(dir).unwrap();
        assert_eq!(repo.object_format(), format);
        for bytes in &contents {
            assert_eq!(
                repo.blob_id(bytes),
                sandbox.hash_object(dir, bytes),
                "{format:?}, {} bytes",
                bytes.len()
            );
        }
    }
}

// --- Discovery ------------------------------------------------------------------------------

#[test]
fn a_workspace_is_found_from_a_subfolder_and_refused_outside_a_work_tree() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("sub/deep/a.txt", "a")]);
    let repo = sandbox.open(&root.join("sub")).unwrap();
    assert_eq!(repo.top(), root.canonicalize().unwrap());
    assert_eq!(repo.root(), root.join("sub"));
    assert_eq!(repo.prefix, b"sub/");
    assert_eq!(
        repo.git_dir().canonicalize().unwrap(),
        root.join(".git").canonicalize().unwrap()
    );

    let plain = sandbox.path("plain");
    std::fs::create_dir(&plain).unwrap();
    assert!(matches!(
        sandbox.open(&plain),
        Err(GitError::NotARepository(_))
    ));
    assert!(matches!(
        sandbox.open(&root.join(".git")),
        Err(GitError::NotAWorkTree(_))
    ));
    let bare = sandbox.path("bare.git");
    sandbox.git(
        sandbox.dir.path(),
        &["clone", "-q", "--bare", root.to_str().unwrap(), "bare.git"],
    );
    assert!(matches!(
        sandbox.open(&bare),
        Err(GitError::NotAWorkTree(_))
    ));
    assert!(GitRepo::discover(&plain).is_none());
    // A folder that is not there: git says so, and it is no workspace.
    assert!(sandbox.open(&sandbox.path("absent")).is_err());
}

#[test]
fn no_git_on_path_is_said_so() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("a", "a")]);
    let empty = sandbox.path("empty-bin");
    std::fs::create_dir(&empty).unwrap();
    let found = GitRepo::open_with_env(&root, &[("PATH", empty.as_os_str())]);
    assert!(matches!(found, Err(GitError::NotInstalled)), "{found:?}");
}

/// A repository owned by another user: git refuses it unless `safe.directory` lists it (it
/// could otherwise run that user's programs through its configuration), and so do we, with
/// git's words. Needs root to give the folder away; skipped otherwise.
#[test]
fn a_repository_of_another_user_is_no_workspace_with_gits_reason() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("theirs", &[("a", "a")]);
    let chown = Command::new("chown")
        .args(["-R", "12345:12345"])
        .arg(&root)
        .output()
        .unwrap();
    if !chown.status.success() {
        eprintln!("skipped: cannot give a folder to another user here");
        return;
    }
    match sandbox.open(&root) {
        Err(GitError::DubiousOwnership { path, stderr }) => {
            assert_eq!(path, root);
            assert!(stderr.contains("safe.directory"), "{stderr}");
            eprintln!("git says: {stderr}");
        }
        other => panic!("expected dubious ownership, got {other:?}"),
    }
    // Listed in the user's own configuration, it is theirs to use.
    let config = sandbox.path("home/.gitconfig");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("[safe]\n\tdirectory = {}\n", root.display()));
    std::fs::write(&config, text).unwrap();
    assert!(sandbox.open(&root).is_ok());
}

#[test]
fn inherited_git_variables_that_redirect_git_are_removed() {
    let names = [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_GLOBAL",
        "GIT_CEILING_DIRECTORIES",
        "PATH",
        "HOME",
    ];
    let env = Env::from_vars(names.iter().map(OsString::from));
    let mut cmd = Command::new("git");
    env.apply(&mut cmd);
    let envs: HashMap<OsString, Option<OsString>> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_os_string(), v.map(OsStr::to_os_string)))
        .collect();
    for removed in &names[..5] {
        assert_eq!(envs.get(OsStr::new(removed)), Some(&None), "{removed}");
    }
    for kept in &names[5..] {
        assert!(!envs.contains_key(OsStr::new(kept)), "{kept}");
    }
    assert_eq!(
        envs.get(OsStr::new("GIT_OPTIONAL_LOCKS")),
        Some(&Some("0".into()))
    );
    assert_eq!(envs.get(OsStr::new("LC_ALL")), Some(&Some("C".into())));
}

// --- State ----------------------------------------------------------------------------------

#[test]
fn clean_modified_staged_deleted_untracked_ignored_and_type_changed_files() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo(
        "r",
        &[
            (".gitignore", "build/\n*.log\n"),
            ("clean.txt", "clean\n"),
            ("modified.txt", "before\n"),
            ("staged.txt", "before\n"),
            ("staged-then-modified.txt", "before\n"),
            ("deleted.txt", "gone\n"),
            ("becomes-link.txt", "file\n"),
            ("unstaged-rm.txt", "still here\n"),
        ],
    );
    write(&root.join("tracked.log"), "tracked although ignored\n");
    sandbox.git(&root, &["add", "-f", "tracked.log"]);
    sandbox.git(&root, &["commit", "-q", "-m", "forced"]);
    write(&root.join("modified.txt"), "after\n");
    write(&root.join("staged.txt"), "staged\n");
    sandbox.git(&root, &["add", "staged.txt"]);
    write(&root.join("staged-then-modified.txt"), "staged\n");
    sandbox.git(&root, &["add", "staged-then-modified.txt"]);
    write(&root.join("staged-then-modified.txt"), "then modified\n");
    std::fs::remove_file(root.join("deleted.txt")).unwrap();
    std::fs::remove_file(root.join("becomes-link.txt")).unwrap();
    std::os::unix::fs::symlink("clean.txt", root.join("becomes-link.txt")).unwrap();
    sandbox.git(&root, &["rm", "-q", "--cached", "unstaged-rm.txt"]);
    write(&root.join("new/untracked.txt"), "new\n");
    write(&root.join("build/out.o"), "ignored\n");
    write(&root.join("x.log"), "ignored\n");
    write(&root.join("added.txt"), "added\n");
    sandbox.git(&root, &["add", "added.txt"]);
    write(&root.join("intent.txt"), "intent\n");
    sandbox.git(&root, &["add", "-N", "intent.txt"]);

    let repo = sandbox.open(&root).unwrap();
    let state = repo.state().unwrap();
    assert_eq!(
        listing(&state, &root),
        vec![
            (".gitignore".into(), Status::Clean),
            ("added.txt".into(), Status::Clean),
            ("becomes-link.txt".into(), Status::TypeChanged),
            ("clean.txt".into(), Status::Clean),
            ("deleted.txt".into(), Status::Deleted),
            ("intent.txt".into(), Status::Modified),
            ("modified.txt".into(), Status::Modified),
            ("new/untracked.txt".into(), Status::Untracked),
            ("staged-then-modified.txt".into(), Status::Modified),
            ("staged.txt".into(), Status::Clean),
            ("tracked.log".into(), Status::Clean),
            ("unstaged-rm.txt".into(), Status::Untracked),
        ]
    );
    // A clean file is named by its index blob, which for a staged one is the staged content.
    let staged = state.blob_of(&root.join("staged.txt")).unwrap();
    assert_eq!(staged, sandbox.hash_object(&root, b"staged\n"));
    assert_eq!(repo.read_blob(staged).unwrap(), b"staged\n");
    assert_eq!(
        state.blob_of(&root.join("clean.txt")).unwrap(),
        repo.blob_id(b"clean\n")
    );
    for not_vouched in [
        "modified.txt",
        "deleted.txt",
        "new/untracked.txt",
        "intent.txt",
    ] {
        assert_eq!(
            state.blob_of(&root.join(not_vouched)),
            None,
            "{not_vouched}"
        );
    }
    // A modified file still has its index entry (what it was before the change).
    let modified = &state.files[&root.join("modified.txt")];
    assert_eq!(
        modified.index.as_ref().unwrap().oid,
        repo.blob_id(b"before\n")
    );
    assert!(state.nested_repositories().is_empty());
}

#[test]
fn racy_git_a_same_size_change_with_equal_stat_data_is_found_by_content() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("racy.txt", "aaaa\n")]);
    // Only the whole-second mtime and the size count, as on file systems without more.
    sandbox.git(&root, &["config", "core.checkStat", "minimal"]);
    sandbox.git(&root, &["config", "core.trustctime", "false"]);
    let file = root.join("racy.txt");
    let recorded = std::fs::metadata(&file).unwrap().modified().unwrap();
    write(&file, "bbbb\n");
    let set_mtime = |path: &Path, t: std::time::SystemTime| {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(t))
            .unwrap();
    };
    set_mtime(&file, recorded);
    let index = root.join(".git/index");
    let before = std::fs::read(&index).unwrap();
    // The index is no newer than the file: its stat data cannot be trusted, git compares
    // content.
    set_mtime(&index, recorded - std::time::Duration::from_secs(10));
    let repo = sandbox.open(&root).unwrap();
    assert_eq!(
        status_of(&repo.state().unwrap(), &file),
        Some(Status::Modified)
    );
    assert_eq!(std::fs::read(&index).unwrap(), before, "never refreshed");
    // Written well after the file, the same stat data is trusted, by git and so by us: what
    // "as git decides" means.
    set_mtime(&index, recorded + std::time::Duration::from_secs(10));
    assert_eq!(
        status_of(&repo.state().unwrap(), &file),
        Some(Status::Clean)
    );
}

#[test]
fn a_subfolder_workspace_sees_only_its_files_as_absolute_paths() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo(
        "r",
        &[
            ("outside.txt", "o\n"),
            ("sub/in.txt", "i\n"),
            ("sub/deep/changed.txt", "c\n"),
            ("subling/not-in.txt", "n\n"),
        ],
    );
    write(&root.join("outside.txt"), "changed\n");
    write(&root.join("sub/deep/changed.txt"), "changed\n");
    write(&root.join("sub/new.txt"), "new\n");
    write(&root.join("untracked-outside.txt"), "u\n");
    let ws = root.join("sub");
    let state = sandbox.open(&ws).unwrap().state().unwrap();
    assert_eq!(
        listing(&state, &ws),
        vec![
            ("deep/changed.txt".into(), Status::Modified),
            ("in.txt".into(), Status::Clean),
            ("new.txt".into(), Status::Untracked),
        ]
    );
    assert!(state.blob_of(&ws.join("in.txt")).is_some());
}

#[test]
fn odd_file_names_come_back_byte_for_byte() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("plain", "p")]);
    let names: Vec<Vec<u8>> = vec![
        b"with space".to_vec(),
        b"line\nbreak".to_vec(),
        b"tab\there".to_vec(),
        b"\"quoted\"".to_vec(),
        b"back\\slash".to_vec(),
        b"-rf".to_vec(),
        "caf\u{e9} \u{1f600}".as_bytes().to_vec(),
        b"latin1-\xe9".to_vec(),
        b"sub dir/\xff\xfe".to_vec(),
        b":(glob)*".to_vec(),
    ];
    let path_of = |name: &[u8]| root.join(OsString::from_vec(name.to_vec()));
    for name in &names {
        let path = path_of(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, name).unwrap();
    }
    sandbox.git(&root, &["add", "-A"]);
    sandbox.git(&root, &["commit", "-q", "-m", "odd"]);
    // Half tracked and changed, half new.
    for name in &names {
        std::fs::write(path_of(name), b"changed").unwrap();
        let mut new = name.clone();
        new.extend_from_slice(b".new");
        std::fs::write(path_of(&new), b"new").unwrap();
    }
    let state = sandbox.open(&root).unwrap().state().unwrap();
    for name in &names {
        assert_eq!(
            status_of(&state, &path_of(name)),
            Some(Status::Modified),
            "{name:?}"
        );
        let mut new = name.clone();
        new.extend_from_slice(b".new");
        assert_eq!(
            status_of(&state, &path_of(&new)),
            Some(Status::Untracked),
            "{new:?}"
        );
    }
    assert_eq!(state.files.len(), 1 + 2 * names.len());
}

#[test]
fn symlinks_executables_submodules_and_nested_repositories_are_marked() {
    let sandbox = Sandbox::new();
    let inner = sandbox.repo("inner", &[("i.txt", "i")]);
    let root = sandbox.repo("r", &[("run.sh", "#!/bin/sh\n"), ("target.txt", "t")]);
    std::os::unix::fs::symlink("target.txt", root.join("link")).unwrap();
    let mut perms = std::fs::metadata(root.join("run.sh"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(root.join("run.sh"), perms).unwrap();
    sandbox.git(&root, &["add", "-A"]);
    sandbox.git(
        &root,
        &["submodule", "add", "-q", inner.to_str().unwrap(), "sm"],
    );
    sandbox.git(&root, &["commit", "-q", "-m", "more"]);
    // A change inside the submodule: not looked into.
    write(&root.join("sm/i.txt"), "changed");
    // A repository of its own inside, untracked: git does not descend into it.
    sandbox.repo("r/nested", &[("n.txt", "n")]);
    write(&root.join("nested/untracked-inside.txt"), "x");

    let state = sandbox.open(&root).unwrap().state().unwrap();
    let entry = |p: &str| state.files[&root.join(p)].clone();
    assert_eq!(entry("link").index.unwrap().mode, Mode::Symlink);
    assert_eq!(entry("link").status, Status::Clean);
    assert_eq!(
        state.blob_of(&root.join("link")),
        None,
        "a link's blob is no file"
    );
    assert_eq!(entry("run.sh").index.unwrap().mode, Mode::Executable);
    assert!(state.blob_of(&root.join("run.sh")).is_some());
    assert_eq!(entry("sm").index.unwrap().mode, Mode::Gitlink);
    assert_eq!(entry("sm").status, Status::Submodule);
    assert_eq!(state.blob_of(&root.join("sm")), None);
    assert_eq!(entry("nested").status, Status::NestedRepository);
    assert_eq!(state.nested_repositories(), vec![root.join("nested")]);
    assert!(
        !state
            .files
            .keys()
            .any(|p| p.starts_with(root.join("nested/")) && *p != root.join("nested")),
        "nothing inside the nested repository"
    );
    assert!(!state.files.contains_key(&root.join("sm/i.txt")));
}

#[test]
fn unmerged_files_have_no_single_blob() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("c.txt", "base\n"), ("other.txt", "o\n")]);
    sandbox.git(&root, &["checkout", "-q", "-b", "side"]);
    write(&root.join("c.txt"), "side\n");
    sandbox.git(&root, &["commit", "-q", "-am", "side"]);
    sandbox.git(&root, &["checkout", "-q", "main"]);
    write(&root.join("c.txt"), "main\n");
    sandbox.git(&root, &["commit", "-q", "-am", "main"]);
    let merge = sandbox.git_output(&root, &["merge", "-q", "side"]);
    assert!(!merge.status.success(), "a conflict");
    let state = sandbox.open(&root).unwrap().state().unwrap();
    assert_eq!(
        state.files[&root.join("c.txt")],
        Entry {
            status: Status::Unmerged,
            index: None
        }
    );
    assert_eq!(state.blob_of(&root.join("c.txt")), None);
    assert_eq!(
        status_of(&state, &root.join("other.txt")),
        Some(Status::Clean)
    );
}

/// A file git calls clean whose bytes are not its blob's is never vouched for: end-of-line
/// and `ident` conversions are caught by size, filters and encodings by their attributes;
/// files git does not look at are not trusted.
#[test]
fn conversions_and_files_git_does_not_look_at_are_not_vouched_for() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo(
        "r",
        &[(
            ".gitattributes",
            "* text=auto eol=lf\n*.crlf eol=crlf\n*.id ident\n*.lfs filter=lfs\n*.utf16 working-tree-encoding=UTF-16LE\n",
        )],
    );
    sandbox.git(&root, &["config", "filter.lfs.clean", "cat"]);
    sandbox.git(&root, &["config", "filter.lfs.smudge", "cat"]);
    for (name, content) in [
        ("lf.txt", "one\ntwo\n"),
        ("win.crlf", "one\ntwo\n"),
        ("keyword.id", "$Id$\n"),
        ("no-keyword.id", "nothing\n"),
        ("big.lfs", "pretend\n"),
        ("assumed.txt", "assumed\n"),
        ("skipped.txt", "skipped\n"),
        ("binary.bin", "\0\r\n\0"),
    ] {
        write(&root.join(name), content);
    }
    std::fs::write(root.join("text.utf16"), b"h\0i\0\n\0").unwrap();
    sandbox.git(&root, &["add", "-A"]);
    sandbox.git(&root, &["commit", "-q", "-m", "attrs"]);
    // Checked out again, so each file holds what checkout writes (CRLF, an expanded $Id$).
    for name in ["win.crlf", "keyword.id", "text.utf16"] {
        std::fs::remove_file(root.join(name)).unwrap();
    }
    sandbox.git(&root, &["checkout", "--", "."]);
    sandbox.git(
        &root,
        &["update-index", "--assume-unchanged", "assumed.txt"],
    );
    write(&root.join("assumed.txt"), "assumed, changed\n");
    sandbox.git(&root, &["update-index", "--skip-worktree", "skipped.txt"]);
    write(&root.join("skipped.txt"), "skipped, changed\n");
    let git_status = sandbox.git(&root, &["status", "--porcelain"]);
    assert_eq!(git_status, "", "git calls them all clean");

    let repo = sandbox.open(&root).unwrap();
    let state = repo.state().unwrap();
    let of = |name: &str| status_of(&state, &root.join(name)).unwrap();
    assert_eq!(of("lf.txt"), Status::Clean);
    assert_eq!(of("binary.bin"), Status::Clean);
    assert_eq!(of("no-keyword.id"), Status::Clean);
    assert_eq!(of("win.crlf"), Status::Unverified(Unverified::SizeDiffers));
    assert_eq!(
        of("keyword.id"),
        Status::Unverified(Unverified::SizeDiffers)
    );
    assert_eq!(of("big.lfs"), Status::Unverified(Unverified::Filtered));
    assert_eq!(of("text.utf16"), Status::Unverified(Unverified::Filtered));
    assert_eq!(of("assumed.txt"), Status::Unverified(Unverified::NotLooked));
    assert_eq!(of("skipped.txt"), Status::Unverified(Unverified::NotLooked));
    // Every file vouched for holds exactly its blob's bytes.
    for (path, entry) in &state.files {
        if let Some(oid) = state.blob_of(path) {
            let bytes = std::fs::read(path).unwrap();
            assert_eq!(repo.blob_id(&bytes), oid, "{}", path.display());
            assert_eq!(entry.status, Status::Clean);
        }
    }
}

/// Whether `check-attr` runs for the files of `root`.
fn may_filter(sandbox: &Sandbox, root: &Path) -> bool {
    let repo = sandbox.open(root).unwrap();
    let index = repo.index(None).unwrap();
    let looked: Vec<&Indexed> = index.entries.iter().filter(|i| i.is_looked_at()).collect();
    repo.may_filter(&repo.config().unwrap(), &index, &looked)
}

/// `check-attr` is skipped only when no attributes file git would read mentions a filter or
/// an encoding; each source below is one it must not miss.
#[test]
fn check_attr_runs_whenever_an_attributes_file_could_set_a_filter() {
    let sandbox = Sandbox::new();
    let files = [
        (".gitattributes", "* text=auto eol=lf\n*.png -text\n"),
        ("sub/deep/a.x", "a\n"),
        ("sub/b.txt", "b\n"),
    ];
    let root = sandbox.repo("r", &files);
    assert!(!may_filter(&sandbox, &root), "nothing mentions one");
    let state = sandbox.open(&root).unwrap().state().unwrap();
    assert_eq!(
        status_of(&state, &root.join("sub/deep/a.x")),
        Some(Status::Clean)
    );
    let mention = "*.x filter=f\n";
    let with = |path: &Path, text: &str, check: &dyn Fn() -> bool, what: &str| {
        write(path, text);
        assert!(check(), "{what}");
        std::fs::remove_file(path).unwrap();
        assert!(!may_filter(&sandbox, &root), "{what}, removed");
    };
    let here = || may_filter(&sandbox, &root);
    // An untracked one git ignores, deep down: git still reads it.
    write(&root.join(".gitignore"), "sub/deep/.gitattributes\n");
    with(
        &root.join("sub/deep/.gitattributes"),
        mention,
        &|| {
            let state = sandbox.open(&root).unwrap().state().unwrap();
            status_of(&state, &root.join("sub/deep/a.x"))
                == Some(Status::Unverified(Unverified::Filtered))
                && here()
        },
        "an ignored .gitattributes",
    );
    with(
        &root.join(".git/info/attributes"),
        "*.x working-tree-encoding=UTF-16LE\n",
        &here,
        "info/attributes",
    );
    write(
        &root.join(".gitattributes"),
        "[attr]big filter=lfs -text\n*.x big\n",
    );
    assert!(here(), "a macro");
    write(&root.join(".gitattributes"), files[0].1);
    assert!(!here());
    with(
        &sandbox.path("home/.config/git/attributes"),
        mention,
        &here,
        "the user's default attributes file",
    );
    sandbox.git(&root, &["config", "core.attributesFile", "~/attrs"]);
    with(
        &sandbox.path("home/attrs"),
        mention,
        &here,
        "core.attributesFile",
    );
    sandbox.git(&root, &["config", "--unset", "core.attributesFile"]);
    sandbox.git(&root, &["config", "attr.tree", "HEAD"]);
    assert!(here(), "attr.tree");
    sandbox.git(&root, &["config", "--unset", "attr.tree"]);
    assert!(!here());

    // Deleted from disk, still in the index: git falls back to the index's.
    write(&root.join("sub/.gitattributes"), "*.txt -text\n");
    sandbox.git(&root, &["add", "sub/.gitattributes"]);
    std::fs::remove_file(root.join("sub/.gitattributes")).unwrap();
    assert!(here(), "an index-only .gitattributes");
    sandbox.git(&root, &["rm", "-q", "--cached", "sub/.gitattributes"]);
    assert!(!here());
    // Above a subfolder workspace: on disk, and only in the index.
    let ws = root.join("sub");
    assert!(!may_filter(&sandbox, &ws));
    write(&root.join(".gitattributes"), mention);
    assert!(may_filter(&sandbox, &ws), "above the workspace");
    sandbox.git(&root, &["commit", "-q", "-am", "a filter"]);
    std::fs::remove_file(root.join(".gitattributes")).unwrap();
    assert!(may_filter(&sandbox, &ws), "above the workspace, index only");
    let state = sandbox.open(&ws).unwrap().state().unwrap();
    assert_eq!(
        status_of(&state, &ws.join("deep/a.x")),
        Some(Status::Unverified(Unverified::Filtered))
    );
}

/// A partial clone lacks blobs it can fetch from its remote: git can still call the file clean
/// (it hashes the file), but we are never asked to fetch, and do not vouch for it.
#[test]
fn a_partial_clones_missing_blob_is_not_fetched() {
    let sandbox = Sandbox::new();
    let source = sandbox.repo("source", &[("a.txt", "hello\n")]);
    sandbox.git(&source, &["config", "uploadpack.allowFilter", "true"]);
    let url = format!("file://{}", source.display());
    let root = sandbox.path("partial");
    sandbox.git(
        sandbox.dir.path(),
        &[
            "clone",
            "-q",
            "--filter=blob:none",
            "--no-checkout",
            &url,
            "partial",
        ],
    );
    sandbox.git(&root, &["read-tree", "HEAD"]);
    write(&root.join("a.txt"), "hello\n");
    let repo = sandbox.open(&root).unwrap();
    let state = repo.state().unwrap();
    assert_eq!(
        status_of(&state, &root.join("a.txt")),
        Some(Status::Unverified(Unverified::BlobMissing))
    );
    let oid = repo.blob_id(b"hello\n");
    assert!(matches!(
        repo.read_blob(&oid),
        Err(GitError::MissingBlob(_))
    ));
    assert_eq!(
        repo.keep("run", std::slice::from_ref(&oid))
            .unwrap()
            .missing,
        vec![oid.clone()]
    );
    // (Asked without fetching: the user's plain `cat-file -e` would fetch it now.)
    let still = sandbox.git_output(&root, &["--no-lazy-fetch", "cat-file", "-e", &oid]);
    assert!(!still.status.success(), "not fetched");
}

#[test]
fn a_linked_worktree_is_a_workspace_and_shares_the_kept_blobs() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("a.txt", "a\n")]);
    let linked = sandbox.path("linked");
    sandbox.git(
        &root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "other",
            linked.to_str().unwrap(),
        ],
    );
    write(&linked.join("a.txt"), "changed in the linked worktree\n");
    let repo = sandbox.open(&linked).unwrap();
    let state = repo.state().unwrap();
    assert_eq!(
        status_of(&state, &linked.join("a.txt")),
        Some(Status::Modified)
    );
    let oid = state.files[&linked.join("a.txt")]
        .index
        .clone()
        .unwrap()
        .oid;
    repo.keep("from-linked", std::slice::from_ref(&oid))
        .unwrap();
    let main = sandbox.open(&root).unwrap();
    assert_eq!(main.kept().unwrap(), vec!["from-linked".to_string()]);
}

// --- Keeping blobs --------------------------------------------------------------------------

/// Blobs of a user's history: kept ones survive whatever the user does to it, others do not.
#[test]
fn kept_blobs_survive_amends_rebases_resets_deleted_branches_and_an_aggressive_gc() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("a.txt", "a v1\n"), ("b.txt", "b v1\n")]);
    let git = |args: &[&str]| sandbox.git(&root, args);
    git(&["checkout", "-q", "-b", "feature"]);
    write(&root.join("a.txt"), "a v2, only ever on a branch\n");
    git(&["commit", "-q", "-am", "feature"]);
    write(&root.join("b.txt"), "b staged, never committed\n");
    git(&["add", "b.txt"]);
    write(&root.join("c.txt"), "c in a commit that is amended away\n");
    git(&["add", "c.txt"]);
    git(&["commit", "-q", "-m", "to amend"]);
    write(&root.join("b.txt"), "b staged, never committed\n");
    let repo = sandbox.open(&root).unwrap();
    let state = repo.state().unwrap();
    let a2 = state.blob_of(&root.join("a.txt")).unwrap().to_string();
    let c = state.blob_of(&root.join("c.txt")).unwrap().to_string();
    // The agent changes b after it was staged; the staged blob is its before-image.
    write(&root.join("b.txt"), "b staged again\n");
    git(&["add", "b.txt"]);
    write(&root.join("b.txt"), "b, staged twice\n");
    git(&["add", "b.txt"]);
    let b_staged = repo.blob_id(b"b staged again\n");
    let kept = repo
        .keep("session/run-1", &[a2.clone(), b_staged.clone()])
        .unwrap();
    assert!(kept.missing.is_empty());

    // The user rewrites everything.
    git(&["commit", "-q", "--amend", "-m", "amended", "--allow-empty"]);
    git(&["rm", "-q", "--cached", "c.txt"]);
    git(&["commit", "-q", "--amend", "-m", "amended again"]);
    std::fs::remove_file(root.join("c.txt")).unwrap();
    git(&["checkout", "-q", "main"]);
    write(&root.join("m.txt"), "main moves on\n");
    git(&["add", "m.txt"]);
    git(&["commit", "-q", "-m", "main"]);
    git(&["checkout", "-q", "feature"]);
    git(&["rebase", "-q", "main"]);
    git(&["checkout", "-q", "main"]);
    git(&["branch", "-q", "-D", "feature"]);
    let first = git(&["rev-list", "--max-parents=0", "HEAD"]);
    git(&["reset", "-q", "--hard", first.trim()]);
    git(&["reflog", "expire", "--expire=now", "--all"]);
    git(&[
        "-c",
        "gc.reflogExpire=now",
        "-c",
        "gc.reflogExpireUnreachable=now",
        "-c",
        "gc.pruneExpire=now",
        "gc",
        "-q",
        "--prune=now",
        "--aggressive",
    ]);

    assert_eq!(
        repo.read_blob(&a2).unwrap(),
        b"a v2, only ever on a branch\n"
    );
    assert_eq!(repo.read_blob(&b_staged).unwrap(), b"b staged again\n");
    // Not kept, and unreachable: gone, so the gc above really pruned.
    assert!(matches!(repo.read_blob(&c), Err(GitError::MissingBlob(_))));
    assert!(matches!(
        repo.read_blob(&repo.blob_id(b"b, staged twice\n")),
        Err(GitError::MissingBlob(_))
    ));

    // Forgotten, the next gc drops them.
    repo.forget("session/run-1").unwrap();
    assert!(repo.kept().unwrap().is_empty());
    git(&["gc", "-q", "--prune=now"]);
    assert!(matches!(repo.read_blob(&a2), Err(GitError::MissingBlob(_))));
}

#[test]
fn keeping_adds_to_what_a_name_kept_reports_missing_blobs_and_refuses_bad_input() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("a", "a"), ("dir/b", "b")]);
    let repo = sandbox.open(&root).unwrap();
    let [a, b] = [b"one" as &[u8], b"two"].map(|bytes| {
        let file = sandbox.path("blob");
        std::fs::write(&file, bytes).unwrap();
        sandbox
            .git(&root, &["hash-object", "-w", file.to_str().unwrap()])
            .trim()
            .to_string()
    });
    let absent = repo.blob_id(b"never written");
    let tree = sandbox
        .git(&root, &["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_string();

    assert_eq!(
        repo.keep("run", std::slice::from_ref(&a)).unwrap(),
        Kept::default()
    );
    let kept = repo
        .keep(
            "run",
            &[b.clone(), absent.clone(), tree.clone(), a.to_uppercase()],
        )
        .unwrap();
    let mut missing = vec![absent.clone(), tree];
    missing.sort();
    assert_eq!(kept.missing, missing, "a tree is no blob");
    let refname = format!("{REF_PREFIX}run");
    let listed = sandbox.git(&root, &["ls-tree", "--name-only", &refname]);
    let mut expected = vec![a.clone(), b.clone()];
    expected.sort();
    assert_eq!(listed.lines().collect::<Vec<_>>(), expected);
    // Keeping nothing new writes nothing.
    let before = sandbox.git(&root, &["rev-parse", &refname]);
    repo.keep("run", &[a.clone(), b.clone()]).unwrap();
    repo.keep("run", &[]).unwrap();
    assert_eq!(sandbox.git(&root, &["rev-parse", &refname]), before);
    repo.keep("other", std::slice::from_ref(&a)).unwrap();
    assert_eq!(
        repo.kept().unwrap(),
        vec!["other".to_string(), "run".into()]
    );

    for bad in [
        "", "../x", ".hidden", "a..b", "x.lock", "a//b", "a b", "a/", "ü", "x\n",
    ] {
        assert!(
            matches!(
                repo.keep(bad, std::slice::from_ref(&a)),
                Err(GitError::BadName(_))
            ),
            "{bad:?}"
        );
    }
    for bad in ["abc", "HEAD", &format!("{a}\n{b}"), &"g".repeat(40)] {
        assert!(
            matches!(
                repo.keep("run", &[bad.to_string()]),
                Err(GitError::BadOid(_))
            ),
            "{bad:?}"
        );
        assert!(matches!(repo.read_blob(bad), Err(GitError::BadOid(_))));
    }
    repo.forget("never-kept").unwrap();

    // Many at once (the tree is read instead of looked up in): again nothing new, no write.
    let many: Vec<String> = (0..100)
        .map(|i| {
            let file = sandbox.path(&format!("many{i}"));
            std::fs::write(&file, format!("many {i}")).unwrap();
            file.to_str().unwrap().to_string()
        })
        .collect();
    let mut args = vec!["hash-object", "-w"];
    args.extend(many.iter().map(String::as_str));
    let many: Vec<String> = (sandbox.git(&root, &args).lines())
        .map(String::from)
        .collect();
    repo.keep("many", &many).unwrap();
    let before = sandbox.git(&root, &["rev-parse", &format!("{REF_PREFIX}many")]);
    repo.keep("many", &many).unwrap();
    assert_eq!(
        sandbox.git(&root, &["rev-parse", &format!("{REF_PREFIX}many")]),
        before
    );
    let listed = sandbox.git(
        &root,
        &["ls-tree", "--name-only", &format!("{REF_PREFIX}many")],
    );
    assert_eq!(listed.lines().count(), 100);
}

#[test]
fn concurrent_keeps_of_one_name_lose_nothing() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("a", "a")]);
    let repo = sandbox.open(&root).unwrap();
    let blobs: Vec<String> = (0..16)
        .map(|i| {
            let file = sandbox.path(&format!("blob{i}"));
            std::fs::write(&file, format!("blob {i}")).unwrap();
            sandbox
                .git(&root, &["hash-object", "-w", file.to_str().unwrap()])
                .trim()
                .to_string()
        })
        .collect();
    // Through the process's lock, and without it (as two processes would: `update-ref`'s
    // check of the old value makes the loser read again).
    for (name, locked) in [("locked", true), ("racing", false)] {
        std::thread::scope(|s| {
            for quarter in blobs.chunks(4) {
                let repo = &repo;
                s.spawn(move || {
                    for oid in quarter {
                        let one = std::slice::from_ref(oid);
                        match locked {
                            true => repo.keep(name, one).unwrap(),
                            false => repo.keep_retrying(name, one).unwrap(),
                        };
                    }
                });
            }
        });
        let refname = format!("{REF_PREFIX}{name}");
        let listed = sandbox.git(&root, &["ls-tree", "--name-only", &refname]);
        let mut expected = blobs.clone();
        expected.sort();
        assert_eq!(listed.lines().collect::<Vec<_>>(), expected, "{name}");
    }
}

#[test]
fn many_blobs_are_read_in_one_go() {
    let sandbox = Sandbox::new();
    let contents: Vec<String> = (0..50)
        .map(|i| format!("line {i}\n\0binary {i}\r\n").repeat(i + 1))
        .collect();
    let files: Vec<(String, String)> = (contents.iter().enumerate())
        .map(|(i, c)| (format!("f{i}"), c.clone()))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let root = sandbox.repo("r", &refs);
    let repo = sandbox.open(&root).unwrap();
    let oids: Vec<String> = contents
        .iter()
        .map(|c| repo.blob_id(c.as_bytes()))
        .collect();
    let blobs = repo.read_blobs(&oids).unwrap();
    assert_eq!(blobs.len(), contents.len());
    for (blob, content) in blobs.iter().zip(&contents) {
        assert_eq!(blob, content.as_bytes());
    }
    let mut with_missing = oids.clone();
    with_missing.push(repo.blob_id(b"absent"));
    assert!(matches!(
        repo.read_blobs(&with_missing),
        Err(GitError::MissingBlob(_))
    ));
    assert!(repo.read_blobs(&[]).unwrap().is_empty());
}

/// Commits need an identity; the kept trees do not, so a repository without one is no
/// different.
#[test]
fn keeping_needs_no_identity() {
    let sandbox = Sandbox::with_config("[user]\n\tuseConfigOnly = true\n");
    let root = sandbox.path("r");
    std::fs::create_dir(&root).unwrap();
    sandbox.git(&root, &["init", "-q"]);
    write(&root.join("a.txt"), "a\n");
    sandbox.git(&root, &["add", "a.txt"]);
    let commit = sandbox.git_output(&root, &["commit", "-q", "-m", "x"]);
    assert!(!commit.status.success(), "the user has no identity");
    let repo = sandbox.open(&root).unwrap();
    let state = repo.state().unwrap();
    let oid = state.blob_of(&root.join("a.txt")).unwrap().to_string();
    repo.keep("run", std::slice::from_ref(&oid)).unwrap();
    assert_eq!(repo.kept().unwrap(), vec!["run".to_string()]);
}

// --- Nothing of the user's changes ------------------------------------------------------------

/// A stale index (a file touched since it was written): the user's `git status` rewrites it to
/// refresh its stat data; ours never writes it, and what the user sees of the repository is
/// the same after `state`, `keep`, `kept` and `forget`.
#[test]
fn the_users_index_refs_and_views_are_untouched() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    sandbox.git(&root, &["branch", "topic"]);
    sandbox.git(&root, &["tag", "v1"]);
    write(&root.join("b.txt"), "b changed\n");
    write(&root.join("u.txt"), "untracked\n");
    // Same content, new stat data.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    write(&root.join("a.txt"), "a\n");
    let index = root.join(".git/index");
    // Read with optional locks off, or `git status` would refresh the index under the test.
    let views = || {
        [
            vec![
                "status",
                "--porcelain=v2",
                "--branch",
                "--untracked-files=all",
            ],
            vec!["log", "--all", "--oneline", "--decorate", "--graph"],
            vec!["branch", "-a", "-v"],
            vec!["tag"],
            vec!["stash", "list"],
            vec!["for-each-ref", "refs/heads", "refs/tags", "refs/remotes"],
            vec!["config", "--local", "--list"],
        ]
        .map(|args| {
            let args: Vec<&str> = std::iter::once("--no-optional-locks").chain(args).collect();
            sandbox.git(&root, &args)
        })
    };
    let index_before = std::fs::read(&index).unwrap();
    let mtime_before = std::fs::metadata(&index).unwrap().modified().unwrap();
    let before = views();
    assert_eq!(std::fs::read(&index).unwrap(), index_before);

    let repo = sandbox.open(&root).unwrap();
    let state = repo.state().unwrap();
    assert_eq!(
        status_of(&state, &root.join("a.txt")),
        Some(Status::Clean),
        "stat data stale, content the same"
    );
    let oid = state.files[&root.join("b.txt")].index.clone().unwrap().oid;
    repo.keep("run", std::slice::from_ref(&oid)).unwrap();
    repo.state().unwrap();
    repo.read_blob(&oid).unwrap();
    assert_eq!(repo.kept().unwrap(), vec!["run".to_string()]);
    let after_keep = views();
    repo.forget("run").unwrap();
    let after_forget = views();

    assert_eq!(
        std::fs::read(&index).unwrap(),
        index_before,
        "the index bytes"
    );
    assert_eq!(
        std::fs::metadata(&index).unwrap().modified().unwrap(),
        mtime_before
    );
    assert_eq!(after_keep, before, "kept trees are invisible to log --all");
    assert_eq!(after_forget, before);
    assert!(!root.join(".git/index.lock").exists());
    // The control: the user's own `git status` does refresh (write) this index.
    sandbox.git(&root, &["status", "--porcelain"]);
    assert_ne!(std::fs::read(&index).unwrap(), index_before);
}

/// Every file under `.git` with its size and modification time.
fn listing_of_git_dir(root: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut folders = vec![root.join(".git")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            match meta.is_dir() {
                true => folders.push(entry.path()),
                false => out.push((entry.path(), meta.len(), meta.modified().unwrap())),
            }
        }
    }
    out.sort();
    out
}

/// Touched files: git must hash them to call them clean, and `git status` would write the
/// index to remember it. Ours writes its own copy, so the next `state` need not hash them
/// again; the user's index and everything under `.git` stay as they were, a split index too.
#[test]
fn stale_stat_data_is_refreshed_in_our_copy_of_the_index_never_in_the_users() {
    for split in [false, true] {
        let sandbox = Sandbox::new();
        let root = sandbox.repo("r", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
        if split {
            sandbox.git(&root, &["update-index", "--split-index"]);
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
        write(&root.join("a.txt"), "a\n");
        let before = listing_of_git_dir(&root);
        let index_before = std::fs::read(root.join(".git/index")).unwrap();

        let repo = sandbox.open(&root).unwrap();
        let state = repo.state().unwrap();
        assert_eq!(status_of(&state, &root.join("a.txt")), Some(Status::Clean));
        let copy = repo.private_index(&|_| usize::MAX).unwrap();
        assert!(!copy.starts_with(&root), "outside the repository");
        assert_ne!(
            std::fs::read(&copy).unwrap(),
            index_before,
            "our copy was refreshed (split: {split})"
        );
        let refreshed = std::fs::read(&copy).unwrap();
        repo.state().unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), refreshed, "not copied again");
        // Any read of a split index, the user's `ls-files` too, touches its shared part's
        // time (so that it does not expire while in use); nothing else changes.
        let shared_time_left_out = |listing: &[(PathBuf, u64, std::time::SystemTime)]| {
            let shared = |p: &Path| p.to_string_lossy().contains("/sharedindex.");
            (listing.iter())
                .map(|(p, len, t)| (p.clone(), *len, (!shared(p)).then_some(*t)))
                .collect::<Vec<_>>()
        };
        let after = listing_of_git_dir(&root);
        assert_eq!(
            shared_time_left_out(&after),
            shared_time_left_out(&before),
            "nothing under .git changed (split: {split})"
        );
        if !split {
            assert_eq!(after, before);
        }

        // The user's index changes: copied again, and what it says is seen.
        write(&root.join("b.txt"), "b staged\n");
        sandbox.git(&root, &["add", "b.txt"]);
        let state = repo.state().unwrap();
        assert_eq!(
            state.blob_of(&root.join("b.txt")),
            Some(repo.blob_id(b"b staged\n").as_str())
        );
        // The copy goes with the last clone of the repository.
        let dir = copy.parent().unwrap().to_path_buf();
        let clone = repo.clone();
        drop(repo);
        assert!(dir.exists());
        drop(clone);
        assert!(!dir.exists());
    }
}

/// The repository's configuration names programs git would run for the user: a filter's
/// `clean` (for a file whose stat data changed), an fsmonitor hook, the
/// `reference-transaction` hook. Our calls run none of them; the user's git does.
#[test]
fn no_program_of_the_repositorys_configuration_runs() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo(
        "r",
        &[(".gitattributes", "*.x filter=ran\n"), ("a.x", "data\n")],
    );
    let marker = |name: &str| sandbox.path(name);
    let script = |name: &str| {
        let path = sandbox.path(&format!("{name}.sh"));
        let body = format!("#!/bin/sh\ntouch '{}'\ncat\n", marker(name).display());
        std::fs::write(&path, body).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path.to_str().unwrap().to_string()
    };
    sandbox.git(&root, &["config", "filter.ran.clean", &script("filter")]);
    sandbox.git(&root, &["config", "core.fsmonitor", &script("fsmonitor")]);
    let hook = root.join(".git/hooks/reference-transaction");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::copy(script("hook"), &hook).unwrap();
    // New stat data: git must read the file, through its filter.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    write(&root.join("a.x"), "data\n");

    let repo = sandbox.open(&root).unwrap();
    let state = repo.state().unwrap();
    assert_eq!(
        status_of(&state, &root.join("a.x")),
        Some(Status::Unverified(Unverified::Filtered))
    );
    let oid = state.files[&root.join("a.x")].index.clone().unwrap().oid;
    repo.keep("run", std::slice::from_ref(&oid)).unwrap();
    repo.forget("run").unwrap();
    for name in ["filter", "fsmonitor", "hook"] {
        assert!(!marker(name).exists(), "{name} ran");
    }
    // The control: the user's git runs all three.
    sandbox.git(&root, &["--no-optional-locks", "status", "--porcelain"]);
    sandbox.git(&root, &["update-ref", "refs/heads/other", "HEAD"]);
    for name in ["filter", "fsmonitor", "hook"] {
        assert!(marker(name).exists(), "{name} did not run for the user");
    }
}

// --- Cost -----------------------------------------------------------------------------------

/// The numbers of the module doc (printed; not timed assertions): `state()` beside the
/// `git status` it runs, on a large checkout with an index (`AGENT_LSP_GIT_BENCH`, else
/// /var/tmp/deno-indexed). Only reads it: the index is compared. A measurement, run by hand:
/// `AGENT_LSP_GIT_BENCH=<checkout> cargo test --release --lib -- --ignored
/// journal_git_state_of_a_large_checkout --nocapture`.
#[test]
#[ignore = "a measurement on a large checkout, run by hand (its doc says how)"]
fn journal_git_state_of_a_large_checkout() {
    let root = std::env::var_os("AGENT_LSP_GIT_BENCH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/deno-indexed"));
    let repo = GitRepo::open(&root)
        .unwrap_or_else(|e| panic!("no repository at {} ({e})", root.display()));
    let index = repo.git_dir().join("index");
    let index_before = std::fs::read(&index).unwrap();
    let status_args = [
        "status",
        "--porcelain=v2",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=all",
    ];
    let listed = repo.index(None).unwrap();
    let files: Vec<&Indexed> = (listed.entries.iter())
        .filter(|i| i.mode.is_file())
        .collect();
    let mut input = Vec::new();
    for file in &files {
        input.extend_from_slice(&file.path);
        input.push(0);
    }
    let check_attr_args = [
        "check-attr",
        "--stdin",
        "-z",
        "filter",
        "working-tree-encoding",
    ];
    let snapshot: HashMap<PathBuf, u64> = (files.iter())
        .filter_map(|f| Some((f.absolute.clone(), file_size(&f.absolute)?)))
        .collect();
    let parts: [(&str, &dyn Fn()); 9] = [
        ("git status", &|| {
            drop(repo.run(&status_args, None).unwrap())
        }),
        ("state() first (no sizes known)", &|| {
            let fresh = GitRepo::open(&root).unwrap();
            drop(fresh.state().unwrap());
        }),
        ("state() later", &|| drop(repo.state().unwrap())),
        ("state_with_sizes() later, sizes from a snapshot", &|| {
            drop(
                repo.state_with_sizes(&|p| snapshot.get(p).copied(), &|_| usize::MAX)
                    .unwrap(),
            )
        }),
        ("ls-files, parsed", &|| drop(repo.index(None).unwrap())),
        ("check-attr", &|| {
            drop(repo.run(&check_attr_args, Some(&input)).unwrap())
        }),
        ("check-attr, parsed", &|| {
            drop(repo.filtered(&files).unwrap())
        }),
        ("cat-file --batch-check, parsed", &|| {
            drop(repo.objects(files.iter().map(|i| i.oid.as_str())).unwrap())
        }),
        ("lstat", &|| {
            files.iter().for_each(|f| {
                let _ = file_size(&f.absolute);
            });
        }),
    ];
    // Interleaved, so a busy moment of the machine falls on all of them alike. CPU time
    // (this process's and its git children's) says what the machine's load does not.
    let cpu = || {
        use nix::sys::resource::{UsageWho, getrusage};
        [UsageWho::RUSAGE_SELF, UsageWho::RUSAGE_CHILDREN]
            .map(|who| getrusage(who).unwrap())
            .iter()
            .map(|u| {
                let tv = |t: nix::sys::time::TimeVal| {
                    std::time::Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
                };
                tv(u.user_time()) + tv(u.system_time())
            })
            .sum::<std::time::Duration>()
    };
    let rounds = 8;
    let mut runs: Vec<Vec<std::time::Duration>> = vec![Vec::new(); parts.len()];
    let mut cpus = vec![std::time::Duration::ZERO; parts.len()];
    for round in 0..=rounds {
        for (i, (_, part)) in parts.iter().enumerate() {
            let (start, cpu_start) = (std::time::Instant::now(), cpu());
            part();
            if round > 0 {
                runs[i].push(start.elapsed());
                cpus[i] += cpu() - cpu_start;
            }
        }
    }
    let state = repo.state().unwrap();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for entry in state.files.values() {
        *counts.entry(format!("{:?}", entry.status)).or_default() += 1;
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort();
    assert_eq!(
        std::fs::read(&index).unwrap(),
        index_before,
        "never written"
    );
    eprintln!(
        "{}: {} entries {counts:?}",
        root.display(),
        state.files.len()
    );
    for (((name, _), mut times), cpu) in parts.iter().zip(runs).zip(cpus) {
        times.sort();
        eprintln!(
            "  {name}: median {:?}, best {:?}, CPU {:?} a call",
            times[times.len() / 2],
            times[0],
            cpu / rounds
        );
    }
    keep_costs(&root, &files);
}

/// What `keep` costs there, in a `clone --shared` of it (its objects are read in place, ours
/// are written in the clone).
fn keep_costs(root: &Path, files: &[&Indexed]) {
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("clone");
    let out = Command::new("git")
        .args(["clone", "-q", "--shared", "--no-checkout"])
        .arg(root)
        .arg(&clone)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let repo = GitRepo::open(&clone).unwrap();
    let mut oids: Vec<String> = files.iter().map(|f| f.oid.clone()).collect();
    oids.sort();
    oids.dedup();
    let mut report = Vec::new();
    let mut from = 0;
    for (what, count) in [
        ("1 new", 1),
        ("10 new", 10),
        ("100 new", 100),
        ("1000 new", 1000),
    ] {
        let start = std::time::Instant::now();
        repo.keep("bench", &oids[from..from + count]).unwrap();
        report.push(format!("{what} {:?}", start.elapsed()));
        from += count;
    }
    let start = std::time::Instant::now();
    repo.keep("bench", &oids[..10]).unwrap();
    report.push(format!("10 kept already {:?}", start.elapsed()));
    let start = std::time::Instant::now();
    repo.keep("all", &oids).unwrap();
    report.push(format!("all {} at once {:?}", oids.len(), start.elapsed()));
    let start = std::time::Instant::now();
    repo.keep("all", &oids[..1]).unwrap();
    report.push(format!(
        "1 more beside {} {:?}",
        oids.len(),
        start.elapsed()
    ));
    eprintln!("  keep(): {}", report.join(", "));
}

#[test]
fn head_and_its_tree_below_a_subfolder_workspace() {
    let sandbox = Sandbox::new();
    let empty = sandbox.path("empty");
    std::fs::create_dir(&empty).unwrap();
    sandbox.git(&empty, &["init", "-q"]);
    assert_eq!(sandbox.open(&empty).unwrap().head().unwrap(), None);
    let root = sandbox.repo(
        "r",
        &[
            ("outside.txt", "o\n"),
            ("sub/in.txt", "i\n"),
            ("sub/deep/x.txt", "x\n"),
        ],
    );
    let repo = sandbox.open(&root.join("sub")).unwrap();
    let head = repo.head().unwrap().unwrap();
    assert_eq!(head, sandbox.git(&root, &["rev-parse", "HEAD"]).trim());
    let files = repo.tree_files(&head).unwrap();
    let mut names: Vec<String> = (files.keys())
        .map(|p| {
            p.strip_prefix(root.join("sub"))
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["deep/x.txt", "in.txt"]);
    assert_eq!(files[&root.join("sub/in.txt")], repo.blob_id(b"i\n"));
    assert!(matches!(repo.tree_files("nope"), Err(GitError::BadOid(_))));
}

/// With few files changed since the index was written, the user's index is read in place:
/// no copy is made. The private folders of processes that are gone are removed by the next
/// one made.
#[test]
fn a_fresh_index_is_read_in_place_and_orphaned_folders_go() {
    let sandbox = Sandbox::new();
    let root = sandbox.repo("r", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let repo = sandbox.open(&root).unwrap();
    let few = |_: (i64, i64)| FEW_CHANGED;
    assert_eq!(repo.private_index(&few), None);
    write(&root.join("a.txt"), "changed\n");
    let state = repo.state_with_sizes(&file_size, &few).unwrap();
    assert_eq!(
        status_of(&state, &root.join("a.txt")),
        Some(Status::Modified)
    );
    assert_eq!(
        state.blob_of(&root.join("b.txt")),
        Some(repo.blob_id(b"b\n").as_str())
    );

    let orphan = std::env::temp_dir().join(format!("{PRIVATE_PREFIX}4194305-test"));
    std::fs::create_dir_all(&orphan).unwrap();
    let many = |_: (i64, i64)| FEW_CHANGED + 1;
    let copy = repo.private_index(&many).unwrap();
    assert!(!orphan.exists(), "a gone process's folder is removed");
    assert!(copy.is_file());
}
