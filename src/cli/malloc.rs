//! The daemon's allocator setting: one glibc malloc arena.
//!
//! glibc gives threads that allocate concurrently arenas of their own (up to eight per core).
//! When the daemon's work hopped between tokio's worker threads, a turn's buffers were allocated
//! in one arena and freed into another, and each arena kept its own free memory: RSS grew by
//! ~19 MiB over 1,000 `edit` turns with default arenas and stayed flat (+0.15 MiB over 400) with
//! one (BENCH.md, scenario 5). The daemon now runs on one thread, but buffers still cross to and
//! from tokio's blocking pool (file reads, session syncs); one arena keeps that flat too, and
//! the few threads barely contend on its lock.

/// Limits glibc to a single malloc arena. Call before any thread is started.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn use_one_malloc_arena() {
    // SAFETY: `mallopt` only changes allocator parameters and is called here before the runtime
    // starts any thread; a failure (return value 0) leaves glibc's defaults, which is harmless.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Other allocators keep their defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn use_one_malloc_arena() {}
