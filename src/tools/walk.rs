//! The walk `grep` and `find` share: ripgrep's rules (`.gitignore` honoured even outside a git
//! repository, dotfiles included, `.git` itself skipped, symlinks not followed; agent-lsp's store
//! of keys skipped, `crate::credentials::is_key_store`), on every core
//! with `ignore`'s parallel walker as ripgrep walks, then sorted by path so the output is the
//! same from one call to the next; and [`in_order`], which works through a sorted list on every
//! core and stops once the items done in order have given enough.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

/// One entry the walk kept.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Walked {
    /// Relative to the walk's root.
    pub path: PathBuf,
    pub is_dir: bool,
}

/// The walk's threads: the machine's cores, as ripgrep takes them (at most 12).
fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(12))
}

/// The entries under `root` (not `root` itself) that `keep` accepts, sorted by path; `None`
/// when `cancel` fired.
pub fn walk(
    root: &Path,
    overrides: Option<ignore::overrides::Override>,
    keep: &(dyn Fn(&Walked) -> bool + Sync),
    cancel: &CancellationToken,
) -> Option<Vec<Walked>> {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .threads(threads())
        .filter_entry(|e| e.file_name() != ".git" && !crate::credentials::is_key_store(e.path()));
    if let Some(overrides) = overrides {
        builder.overrides(overrides);
    }
    let gathered: Gathered<Walked> = Gathered::default();
    let stopped = AtomicBool::new(false);
    builder.build_parallel().run(|| {
        let mut kept = gathered.list();
        let (stopped, root) = (&stopped, root);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                stopped.store(true, Ordering::Relaxed);
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            let Ok(path) = entry.path().strip_prefix(root) else {
                return ignore::WalkState::Continue;
            };
            if path.as_os_str().is_empty() {
                return ignore::WalkState::Continue;
            }
            let walked = Walked {
                path: path.to_path_buf(),
                is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
            };
            if keep(&walked) {
                kept.items.push(walked);
            }
            ignore::WalkState::Continue
        })
    });
    if stopped.load(Ordering::Relaxed) {
        return None;
    }
    let mut kept: Vec<Walked> = gathered.into_items().collect();
    kept.sort_unstable_by(|a, b| by_path(&a.path, &b.path).then(a.is_dir.cmp(&b.is_dir)));
    Some(kept)
}

/// The order of paths component by component (`Path`'s own), from their bytes with `/` taken
/// as the lowest byte: the same order for the walk's paths (no `.` or doubled separators),
/// without parsing components (sorting 100k paths with `Path::cmp` showed in profiles).
pub fn by_path(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let key = |c: &u8| if *c == b'/' { 0 } else { *c };
    (a.as_os_str().as_bytes().iter().map(key)).cmp(b.as_os_str().as_bytes().iter().map(key))
}

/// What the threads of a parallel walk gather, each into a list of its own (no lock per item),
/// put together at the end.
pub(crate) struct Gathered<T> {
    lists: Mutex<Vec<Vec<T>>>,
}

impl<T> Default for Gathered<T> {
    fn default() -> Self {
        Gathered {
            lists: Mutex::default(),
        }
    }
}

impl<T> Gathered<T> {
    /// A thread's list, handed over when it is dropped (the walker drops a thread's visitor
    /// when the thread is done).
    pub fn list(&self) -> Gathering<'_, T> {
        Gathering {
            items: Vec::new(),
            into: self,
        }
    }

    /// Every item gathered, and how many there are.
    pub fn into_items(self) -> std::iter::Flatten<std::vec::IntoIter<Vec<T>>> {
        let lists = self.lists.into_inner().unwrap_or_else(|e| e.into_inner());
        lists.into_iter().flatten()
    }
}

/// One thread's list of a [`Gathered`].
pub(crate) struct Gathering<'a, T> {
    pub items: Vec<T>,
    into: &'a Gathered<T>,
}

impl<T> Drop for Gathering<'_, T> {
    fn drop(&mut self) {
        let items = std::mem::take(&mut self.items);
        (self.into.lists.lock().unwrap_or_else(|e| e.into_inner())).push(items);
    }
}

/// `work` on each of `items` on every core, in order as far as the result is concerned: the
/// results of the first items, up to and including the one at which their `count`s reach
/// `enough`; the items after it are not worked on (unless a thread had started one). Each
/// thread works with a `state` of its own (a searcher's buffers, made once). `None` when
/// `cancel` fired.
pub fn in_order<T: Sync, R: Send, S>(
    items: &[T],
    enough: usize,
    count: impl Fn(&R) -> usize + Sync,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &T) -> R + Sync,
    cancel: &CancellationToken,
) -> Option<Vec<R>> {
    struct Done<R> {
        results: Vec<Option<R>>,
        /// How many items from the start are done, and what they counted.
        prefix: usize,
        counted: usize,
    }
    let done = Mutex::new(Done {
        results: (0..items.len()).map(|_| None).collect(),
        prefix: 0,
        counted: 0,
    });
    let next = AtomicUsize::new(0);
    // The first item not needed; set once the done prefix counts enough.
    let end = AtomicUsize::new(items.len());
    let run = || {
        let mut state = state();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= end.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return;
            }
            let result = work(&mut state, &items[i]);
            let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
            done.results[i] = Some(result);
            while done.prefix < items.len() && done.counted < enough {
                let Some(counted) = done.results[done.prefix].as_ref().map(&count) else {
                    break;
                };
                done.counted += counted;
                done.prefix += 1;
            }
            if done.counted >= enough {
                end.fetch_min(done.prefix, Ordering::Relaxed);
            }
        }
    };
    let threads = threads().min(items.len()).max(1);
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(run);
        }
        run();
    });
    if cancel.is_cancelled() {
        return None;
    }
    let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    let end = end.load(Ordering::Relaxed);
    Some(done.results.into_iter().take(end).flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_is_sorted_and_follows_the_ignore_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        for path in [
            "b/z.rs",
            "b/a.rs",
            "a.rs",
            "a/x.rs",
            ".hidden/h.rs",
            "c.log",
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "x").unwrap();
        let all = walk(root, None, &|_| true, &CancellationToken::new()).unwrap();
        let shown: Vec<String> = (all.iter())
            .map(|w| format!("{}{}", w.path.display(), if w.is_dir { "/" } else { "" }))
            .collect();
        assert_eq!(
            shown,
            [
                ".gitignore",
                ".hidden/",
                ".hidden/h.rs",
                "a/",
                "a/x.rs",
                "a.rs",
                "b/",
                "b/a.rs",
                "b/z.rs"
            ]
        );
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        assert_eq!(walk(root, None, &|_| true, &cancelled), None);
    }

    #[test]
    fn paths_sort_as_path_sorts_them() {
        let mut paths: Vec<PathBuf> = [
            "a.b", "a/b", "a", "a-c/d", "a/b/c", "ab", "a/a.rs", "b", "a b",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let mut by_components = paths.clone();
        by_components.sort();
        paths.sort_by(|a, b| by_path(a, b));
        assert_eq!(paths, by_components);
    }

    #[test]
    fn in_order_gives_the_first_results_that_count_enough() {
        let items: Vec<usize> = (0..1000).collect();
        let cancel = CancellationToken::new();
        // Every third item counts 1: enough at the 10th, item 27.
        let results = in_order(
            &items,
            10,
            |r: &(usize, usize)| r.1,
            || (),
            |_, i| (*i, usize::from(i % 3 == 0)),
            &cancel,
        )
        .unwrap();
        assert_eq!(results.len(), 28);
        assert!(results.iter().enumerate().all(|(i, r)| r.0 == i));
        let all = in_order(&items, usize::MAX, |_: &usize| 1, || (), |_, i| *i, &cancel).unwrap();
        assert_eq!(all, items);
        assert_eq!(
            in_order(&items, 5, |_: &usize| 0, || (), |_, i| *i, &cancel)
                .unwrap()
                .len(),
            1000
        );
    }
}
