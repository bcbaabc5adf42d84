//! Kept-alive connections, by where they lead, for the next request to the same place.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::connect::Connection;
use super::head::Target;
use super::proxy::ProxyUrl;

/// Idle connections older than this are closed rather than reused (servers drop idle
/// connections after a minute or two; hyper's pool uses the same limit).
const IDLE_LIMIT: Duration = Duration::from_secs(90);
/// Idle connections kept per destination.
const MAX_IDLE: usize = 4;

/// Idle connections by [`key`], oldest first, with the time each went idle.
type Idle = HashMap<String, Vec<(Instant, Connection)>>;

#[derive(Clone, Default)]
pub struct Pool {
    idle: Arc<Mutex<Idle>>,
}

/// Where a connection leads: the origin, and the proxy it goes through.
pub fn key(target: &Target, proxy: Option<&ProxyUrl>) -> String {
    match proxy {
        Some(proxy) => format!("{} via {}", target.origin(), proxy.shown()),
        None => target.origin(),
    }
}

impl Pool {
    /// The most recently used idle connection to `key` that is young enough and still open.
    pub fn take(&self, key: &str) -> Option<Connection> {
        let mut idle = self.idle.lock().ok()?;
        let list = idle.get_mut(key)?;
        list.retain(|(since, _)| since.elapsed() < IDLE_LIMIT);
        let mut found = None;
        while let Some((_, mut conn)) = list.pop() {
            if conn.is_idle() {
                found = Some(conn);
                break;
            }
        }
        if list.is_empty() {
            idle.remove(key);
        }
        found
    }

    fn put(&self, key: String, conn: Connection) {
        let Ok(mut idle) = self.idle.lock() else {
            return;
        };
        let list = idle.entry(key).or_default();
        if list.len() >= MAX_IDLE {
            list.remove(0);
        }
        list.push((Instant::now(), conn));
    }

    #[cfg(test)]
    pub fn idle_count(&self) -> usize {
        self.idle
            .lock()
            .map(|idle| idle.values().map(Vec::len).sum())
            .unwrap_or(0)
    }
}

/// Where a completed body returns its connection.
pub struct Return {
    pub pool: Pool,
    pub key: String,
}

impl Return {
    pub fn give_back(self, conn: Connection) {
        self.pool.put(self.key, conn);
    }
}
