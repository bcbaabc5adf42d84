//! The live snapshot against the walk it stands in for: after every change, what the watch
//! told must be what a fresh walk finds, and a command's changes what comparing two walks
//! gives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;

/// A workspace with ignore rules, a nested tree and an ignored folder.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            (".gitignore", "*.log\nbuild/\n"),
            ("a.txt", "a"),
            ("src/b.rs", "b"),
            ("src/deep/c.rs", "c"),
            ("src/deep/er/d.rs", "d"),
            ("build/out/x.o", "x"),
        ],
    );
    dir
}

/// Writes each `(path, content)` under `root`, making the folders it needs.
fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (name, content) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// [`workspace`] and its live files, not yet updated.
fn live_workspace() -> (tempfile::TempDir, Live) {
    let dir = workspace();
    let live = Live::new(dir.path());
    (dir, live)
}

/// [`workspace`] and its live files after their first update.
fn walked_workspace() -> (tempfile::TempDir, Live) {
    let (dir, mut live) = live_workspace();
    live.update();
    (dir, live)
}

/// The live files, relative and sorted, beside a fresh walk's.
fn live_and_walked(live: &Live, root: &Path) -> (BTreeMap<PathBuf, Meta>, BTreeMap<PathBuf, Meta>) {
    let relative = |files: &super::super::snapshot::PathMap<Meta>| {
        (files.iter())
            .map(|(p, m)| (p.strip_prefix(root).unwrap().to_path_buf(), *m))
            .collect()
    };
    let walked = Snapshot::take(root).unwrap();
    (
        relative(&live.files().unwrap().files),
        relative(&walked.files),
    )
}

/// Asserts that the live files are what a fresh walk finds; returns them.
fn assert_walked(live: &Live, root: &Path) -> BTreeMap<PathBuf, Meta> {
    let (now, walked) = live_and_walked(live, root);
    assert_eq!(now, walked);
    now
}

/// Updates `live`, which must take `how`, and tells what changed since `mark`.
fn update_and_tell(
    live: &mut Live,
    mark: Mark,
    root: &Path,
    how: Updated,
) -> Vec<(String, bool, bool)> {
    assert_eq!(live.update(), how);
    told(live, mark, root)
}

/// What changed since `mark`, relative to `root`: whether each file was there before and after.
fn told(live: &mut Live, mark: Mark, root: &Path) -> Vec<(String, bool, bool)> {
    names(&live.finish(mark).unwrap(), root)
}

/// Changes `file` (relative to `root`) alone: the update is `how`, and it tells that one
/// change.
fn change_one(live: &mut Live, root: &Path, file: &str, how: Updated) {
    let mark = live.mark();
    std::fs::write(root.join(file), "changed").unwrap();
    let told = update_and_tell(live, mark, root, how);
    assert_eq!(told, [(file.to_string(), true, true)]);
}

fn names(deltas: &[Delta], root: &Path) -> Vec<(String, bool, bool)> {
    (deltas.iter())
        .map(|d| {
            let name = d.path.strip_prefix(root).unwrap().display().to_string();
            (name, d.before.is_some(), d.after.is_some())
        })
        .collect()
}

#[test]
fn a_command_s_changes_come_from_the_watch_without_a_walk() {
    let (dir, mut guard) = live_workspace();
    let root = dir.path();
    assert_eq!(guard.update(), Updated::Walked);
    assert!(guard.watching());
    let mark = guard.mark();
    // The command: changes, creates, deletes, makes a tree, and writes what is ignored.
    std::fs::remove_file(root.join("src/b.rs")).unwrap();
    write_files(
        root,
        &[
            ("a.txt", "changed"),
            ("src/new.rs", "n"),
            ("src/made/inner/m.rs", "m"),
            ("src/made/top.rs", "t"),
            ("src/deep/er/trace.log", "ignored"),
            ("build/out/y.o", "ignored"),
            (".a.txt.agent-lsp-0123456789abcdef0123456789abcdef.tmp", "w"),
        ],
    );
    assert_eq!(
        update_and_tell(&mut guard, mark, root, Updated::Watched),
        [
            ("a.txt".to_string(), true, true),
            ("src/b.rs".to_string(), true, false),
            ("src/made/inner/m.rs".to_string(), false, true),
            ("src/made/top.rs".to_string(), false, true),
            ("src/new.rs".to_string(), false, true),
        ]
    );
    assert_walked(&guard, root);
    // The new folders are watched too.
    change_one(&mut guard, root, "src/made/inner/m.rs", Updated::Watched);
}

#[test]
fn metadata_alone_is_a_change_and_a_deleted_folder_takes_its_files() {
    let (dir, mut guard) = walked_workspace();
    let root = dir.path();
    let mark = guard.mark();
    use std::os::unix::fs::PermissionsExt;
    let a = root.join("a.txt");
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_dir_all(root.join("src/deep")).unwrap();
    assert_eq!(
        update_and_tell(&mut guard, mark, root, Updated::Watched),
        [
            ("a.txt".to_string(), true, true),
            ("src/deep/c.rs".to_string(), true, false),
            ("src/deep/er/d.rs".to_string(), true, false),
        ]
    );
    assert_walked(&guard, root);
}

#[test]
fn a_moved_folder_or_a_changed_ignore_file_is_walked_again() {
    let (dir, mut guard) = walked_workspace();
    let root = dir.path();
    std::fs::rename(root.join("src/deep"), root.join("moved")).unwrap();
    assert_eq!(guard.update(), Updated::Walked);
    assert_walked(&guard, root);
    // The watches follow the walk: a change under the moved folder is seen at its new path.
    std::fs::write(root.join("moved/er/d.rs"), "changed").unwrap();
    assert_eq!(guard.update(), Updated::Watched);
    assert_walked(&guard, root);

    std::fs::write(root.join("src/keep.txt"), "k").unwrap();
    std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n*.txt\n").unwrap();
    assert_eq!(guard.update(), Updated::Walked);
    let now = assert_walked(&guard, root);
    assert!(!now.contains_key(Path::new("a.txt")), "now ignored");
}

#[test]
fn commands_that_overlap_each_get_what_changed_while_they_ran() {
    let (dir, mut guard) = walked_workspace();
    let root = dir.path();
    let first = guard.mark();
    std::fs::write(root.join("a.txt"), "1").unwrap();
    guard.update();
    let second = guard.mark();
    std::fs::write(root.join("src/b.rs"), "2").unwrap();
    guard.update();
    assert_eq!(
        told(&mut guard, second, root),
        [("src/b.rs".to_string(), true, true)]
    );
    std::fs::write(root.join("a.txt"), "back to one byte: its size is the same").unwrap();
    guard.update();
    assert_eq!(
        told(&mut guard, first, root),
        [
            ("a.txt".to_string(), true, true),
            ("src/b.rs".to_string(), true, true)
        ]
    );
    assert!(guard.log.is_empty(), "nothing kept once no mark is open");
    // A mark dropped unfinished (its command cancelled) is released all the same.
    let dropped = guard.mark();
    drop(dropped);
    guard.update();
    assert!(guard.marks.is_empty());
}

#[test]
fn a_lapsing_mark_lapses_when_too_much_changed_a_command_s_never_does() {
    let (dir, mut guard) = live_workspace();
    let root = dir.path();
    guard.log_limit = 3;
    guard.update();
    let idle = guard.lapsing_mark();
    let command = guard.mark();
    for (i, name) in ["a.txt", "src/b.rs", "src/deep/c.rs", "src/deep/er/d.rs"]
        .iter()
        .enumerate()
    {
        std::fs::write(root.join(name), format!("changed {i}")).unwrap();
    }
    guard.update();
    assert_eq!(
        guard.finish(idle),
        None,
        "lapsed: what changed is not known"
    );
    assert_eq!(guard.finish(command).map(|c| c.len()), Some(4));
}

#[test]
fn sessions_of_one_workspace_share_its_live_files() {
    let dir = workspace();
    let one = Live::shared(dir.path());
    let other = Live::shared(dir.path());
    assert!(Arc::ptr_eq(&one, &other));
    let elsewhere = tempfile::tempdir().unwrap();
    assert!(!Arc::ptr_eq(&one, &Live::shared(elsewhere.path())));
}

#[test]
fn an_overflowed_queue_is_walked_again() {
    let (dir, mut guard) = walked_workspace();
    let root = dir.path();
    let mark = guard.mark();
    // Alternating writes are not merged: more events than the kernel queues (16,384 by default).
    let limit: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16_384);
    let (a, b) = (root.join("a.txt"), root.join("src/b.rs"));
    for i in 0..limit / 2 + 16 {
        std::fs::write(&a, format!("{i}")).unwrap();
        std::fs::write(&b, format!("{i}")).unwrap();
    }
    assert_eq!(
        update_and_tell(&mut guard, mark, root, Updated::Walked),
        [
            ("a.txt".to_string(), true, true),
            ("src/b.rs".to_string(), true, true)
        ]
    );
}

#[test]
fn without_enough_watches_every_update_walks() {
    let (dir, mut guard) = live_workspace();
    let root = dir.path();
    guard.limit_watches(2);
    assert_eq!(guard.update(), Updated::Walked);
    assert!(!guard.watching());
    change_one(&mut guard, root, "src/deep/c.rs", Updated::Walked);
}

#[test]
fn new_folders_past_the_watch_limit_turn_to_a_walk() {
    let (dir, mut guard) = live_workspace();
    let root = dir.path();
    // The root, src, src/deep, src/deep/er: room for one more.
    guard.limit_watches(5);
    guard.update();
    assert!(guard.watching());
    write_files(root, &[("n1/n2/n3/f", "f")]);
    guard.update();
    let (now, walked) = live_and_walked(&guard, root);
    assert_eq!(now, walked, "the files are found all the same");
    assert_eq!(guard.update(), Updated::Walked, "then it walks");
    assert!(!guard.watching());
}

/// One change to a workspace.
#[derive(Clone, Debug)]
enum Op {
    Write(usize, usize),
    Remove(usize),
    MakeFolder(usize),
    RemoveFolder(usize),
    RenameFile(usize, usize),
    RenameFolder(usize, usize),
    Chmod(usize),
    Ignored(usize),
}

const FOLDERS: [&str; 6] = ["", "p", "p/q", "r", "p/q/s", "build"];
const NAMES: [&str; 4] = ["f.rs", "g.txt", "h", "x.log"];

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (0..FOLDERS.len(), 0..NAMES.len()).prop_map(|(f, n)| Op::Write(f, n)),
        2 => (0..FOLDERS.len() * NAMES.len()).prop_map(Op::Remove),
        2 => (1..FOLDERS.len()).prop_map(Op::MakeFolder),
        1 => (1..FOLDERS.len()).prop_map(Op::RemoveFolder),
        1 => (0..FOLDERS.len() * NAMES.len(), 0..FOLDERS.len() * NAMES.len())
            .prop_map(|(a, b)| Op::RenameFile(a, b)),
        1 => (1..FOLDERS.len(), 1..FOLDERS.len()).prop_map(|(a, b)| Op::RenameFolder(a, b)),
        1 => (0..FOLDERS.len() * NAMES.len()).prop_map(Op::Chmod),
        1 => (0..FOLDERS.len()).prop_map(Op::Ignored),
    ]
}

/// Applies `op` (anything that fails, because a folder is missing, say, is left undone).
fn apply(root: &Path, op: &Op, step: usize) {
    use std::os::unix::fs::PermissionsExt;
    let file = |i: usize| {
        root.join(FOLDERS[i / NAMES.len()])
            .join(NAMES[i % NAMES.len()])
    };
    let folder = |i: usize| root.join(FOLDERS[i]);
    let _ = match op {
        Op::Write(f, n) => std::fs::write(folder(*f).join(NAMES[*n]), format!("{step}")),
        Op::Remove(i) => std::fs::remove_file(file(*i)),
        Op::MakeFolder(f) => std::fs::create_dir_all(folder(*f)),
        Op::RemoveFolder(f) => std::fs::remove_dir_all(folder(*f)),
        Op::RenameFile(a, b) => std::fs::rename(file(*a), file(*b)),
        Op::RenameFolder(a, b) => std::fs::rename(folder(*a), folder(*b)),
        Op::Chmod(i) => std::fs::set_permissions(
            file(*i),
            std::fs::Permissions::from_mode(0o600 + (step as u32 % 2) * 0o44),
        ),
        Op::Ignored(f) => std::fs::write(folder(*f).join("trace.log"), "x"),
    };
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 48, ..Default::default() })]

    /// After any changes, the watch's files are a walk's, and a command's changes are what
    /// comparing the walks before and after it gives.
    #[test]
    fn the_live_files_are_always_a_walk_s(
        batches in proptest::collection::vec(proptest::collection::vec(op(), 0..8), 1..6)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").unwrap();
        let mut guard = Live::new(root);
        guard.update();
        let mut step = 0;
        for batch in &batches {
            let before = Snapshot::take(root).unwrap();
            let mark = guard.mark();
            for op in batch {
                step += 1;
                apply(root, op, step);
            }
            guard.update();
            let after = Snapshot::take(root).unwrap();
            let told: Vec<(PathBuf, bool, bool)> = (guard.finish(mark).unwrap().into_iter())
                .map(|d| (d.path, d.before.is_some(), d.after.is_some()))
                .collect();
            let walked: Vec<(PathBuf, bool, bool)> = (before.changes(&after).into_iter())
                .map(|(path, change)| {
                    let (before, after) = match change {
                        super::super::snapshot::Change::Created => (false, true),
                        super::super::snapshot::Change::Modified => (true, true),
                        super::super::snapshot::Change::Deleted => (true, false),
                    };
                    (path, before, after)
                })
                .collect();
            proptest::prop_assert_eq!(told, walked, "after {:?}", batch);
            let (now, walked) = live_and_walked(&guard, root);
            proptest::prop_assert_eq!(now, walked, "after {:?}", batch);
        }
    }
}

#[test]
fn a_small_workspace_is_walked_unwatched_until_it_grows() {
    let dir = workspace();
    let root = dir.path();
    let mut live = Live {
        watch_from: 12,
        ..Live::new(root)
    };
    // 11 entries (files and folders, the ignored ones too), 5 files: too few to watch.
    assert_eq!(live.update(), Updated::Walked);
    assert!(!live.watching());
    let mark = live.mark();
    std::fs::write(root.join("src/e.rs"), "e").unwrap();
    assert_eq!(
        update_and_tell(&mut live, mark, root, Updated::Walked),
        [("src/e.rs".into(), false, true)]
    );
    // Grown past the mark: the next walk puts the watch on, and the watch tells from then on.
    for name in ["f", "g", "h", "i", "j", "k", "l", "m"] {
        std::fs::write(root.join(name), name).unwrap();
    }
    assert_eq!(live.update(), Updated::Walked);
    assert!(!live.watching());
    assert_eq!(live.update(), Updated::Walked);
    assert!(live.watching());
    change_one(&mut live, root, "a.txt", Updated::Watched);
    assert_walked(&live, root);
}

#[test]
fn the_shared_snapshot_counts_before_it_watches() {
    let dir = workspace();
    let shared = Live::shared(dir.path());
    let mut live = shared.lock().unwrap();
    assert_eq!(live.watch_from, SMALL_TREE);
    assert_eq!(live.update(), Updated::Walked);
    assert!(
        !live.watching(),
        "a workspace of eleven entries got an inotify instance"
    );
}
