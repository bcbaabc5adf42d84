//! A command's start and end as the journal sees them: before-images and a mark in the
//! workspace's live snapshot when it starts, the files that changed since the mark when it ends.
//! A background job is a command that ends in [`segment`]s: each checkpoint records what changed
//! since the one before and goes on from there.

use std::sync::Arc;

use super::images::Before;
use super::live::Mark;
use super::{FileEffect, Journal};

/// A command's start: its mark in the workspace's live snapshot, what its before-images left
/// out, and the name of its [`super::manifest`].
pub(super) struct Started {
    mark: Mark,
    images: Before,
    pub(super) manifest: Option<String>,
}

/// The workspace brought up to date, every file given a before-image within the bounds
/// ([`super::images`]), and the manifest stored; `None` when the workspace is too large to
/// snapshot.
pub(super) async fn before_images(journal: &Arc<Journal>) -> Option<Started> {
    let journal = journal.clone();
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let mut live = journal.seen.live.lock().unwrap_or_else(|e| e.into_inner());
        let waited = started.elapsed();
        let updated = live.update();
        let brought = started.elapsed();
        let since = journal.since_last_command(&mut live);
        let files = live.files()?;
        let images = journal.before_images(files, since.maybe_stale());
        let imaged = started.elapsed();
        let manifest = journal.store_manifest(&mut live, &images, since);
        let mark = live.mark();
        tracing::debug!(
            ?waited, ?updated, ?brought, ?imaged, total = ?started.elapsed(),
            stored = images.stored,
            "the effect journal before a command"
        );
        Some(Started {
            mark,
            images,
            manifest,
        })
    })
    .await
    .ok()
    .flatten()
}

/// What the command changed since it started; `None` when that is unknown (the workspace
/// was, or became, too large to snapshot).
pub(super) async fn bash_effects(
    journal: &Arc<Journal>,
    started: Option<Started>,
) -> Option<Vec<FileEffect>> {
    let started = started?;
    let journal = journal.clone();
    let work = move || {
        let begun = std::time::Instant::now();
        let changes = {
            let mut live = journal.seen.live.lock().unwrap_or_else(|e| e.into_inner());
            live.update();
            let tracked = live.files().is_some();
            let changes = live.finish(started.mark)?;
            tracked.then_some(changes)?
        };
        let brought = begun.elapsed();
        let files = journal.bash_effects(&started.images, &changes);
        tracing::debug!(
            ?brought, total = ?begun.elapsed(), changed = files.len(),
            "the effect journal after a command"
        );
        Some(files)
    };
    tokio::task::spawn_blocking(work).await.ok().flatten()
}

/// What a running command changed since `started`, and (with `again`) a start from now for
/// what it does next, with the same before-images (a file it changed has its after-image stored
/// by [`Journal::bash_effects`], the before-image of its next change). The live snapshot is
/// brought up to date, finished and marked again under one lock, so no change falls between two
/// segments. `None` for the changes: unknown (the workspace became too large to snapshot, or the
/// mark lapsed under too many changes); no next start then either.
pub(super) async fn segment(
    journal: &Arc<Journal>,
    started: Started,
    again: bool,
) -> (Option<Vec<FileEffect>>, Option<Started>) {
    let journal = journal.clone();
    let work = move || {
        let (changes, mark) = {
            let mut live = journal.seen.live.lock().unwrap_or_else(|e| e.into_inner());
            live.update();
            let tracked = live.files().is_some();
            let changes = live.finish(started.mark).filter(|_| tracked);
            // A job may run for hours: its mark lapses rather than keep every change logged.
            let mark = (again && changes.is_some()).then(|| live.lapsing_mark());
            (changes, mark)
        };
        let files = changes.map(|changes| journal.bash_effects(&started.images, &changes));
        let next = mark.map(|mark| Started {
            mark,
            images: started.images,
            manifest: None,
        });
        (files, next)
    };
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or((None, None))
}
