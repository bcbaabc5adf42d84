//! Resolving model-supplied paths inside the workspace (pi's `resolveToCwd`, plus confinement).
//!
//! The model writes paths loosely: `@src/main.rs`, `~/notes`, paths with non-breaking spaces
//! copied from a rendered page. We normalise those as pi does, then refuse anything whose real
//! location (after `..` and symlinks) lies outside the workspace root and the extra roots.
//! macOS-specific fallbacks of pi (NFD names, narrow NBSP before AM/PM) are not tried.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::beneath::{Beneath, Dir, Resolver};
use super::error::{FileOp, WorkspaceError};

/// The roots a workspace may touch, canonicalised once, with a handle on each that every file
/// operation starts from ([`Beneath`]).
#[derive(Clone, Debug)]
pub struct Roots {
    root: PathBuf,
    extra: Vec<PathBuf>,
    beneath: Arc<Beneath>,
}

impl Roots {
    /// Canonicalises `root` and every extra root (each must exist) and opens them.
    pub fn new(root: &Path, extra: &[PathBuf]) -> std::io::Result<Self> {
        Self::with_resolver(root, extra, None)
    }

    /// As [`Roots::new`], with the way paths are walked beneath the roots chosen instead of
    /// probed (`None`): tests use it to run the walk of kernels without `openat2`.
    pub fn with_resolver(
        root: &Path,
        extra: &[PathBuf],
        resolver: Option<Resolver>,
    ) -> std::io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        let extra = extra
            .iter()
            .map(std::fs::canonicalize)
            .collect::<std::io::Result<Vec<_>>>()?;
        let all: Vec<PathBuf> = std::iter::once(&root).chain(&extra).cloned().collect();
        let beneath = Arc::new(Beneath::open(&all, resolver)?);
        Ok(Roots {
            root,
            extra,
            beneath,
        })
    }

    /// The roots' handles, from which files are opened.
    pub fn beneath(&self) -> &Arc<Beneath> {
        &self.beneath
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn extra(&self) -> &[PathBuf] {
        &self.extra
    }

    /// Resolves `input` to a canonical absolute path under one of the roots.
    pub fn resolve(&self, input: &str) -> Result<PathBuf, WorkspaceError> {
        let cleaned = clean_input(input)?;
        let joined = if cleaned.is_absolute() {
            cleaned
        } else {
            self.root.join(cleaned)
        };
        let real = real_path(&lexical_normalize(&joined));
        if crate::credentials::is_key_store(&real) {
            return Err(WorkspaceError::KeyStore(input.to_string()));
        }
        if self.is_allowed(&real) {
            Ok(real)
        } else {
            Err(self.outside(input))
        }
    }

    /// The directory holding `path` (canonical, from [`Roots::resolve`]) and the file's name in
    /// it, opened beneath its root; `None` when a directory on the way does not exist.
    pub fn parent(
        &self,
        path: &Path,
        op: FileOp,
    ) -> Result<Option<(Dir, OsString)>, WorkspaceError> {
        self.confined(path)?;
        self.beneath.parent(path, op)
    }

    /// As [`Roots::parent`], creating the missing directories.
    pub fn parent_created(
        &self,
        path: &Path,
        op: FileOp,
    ) -> Result<(Dir, OsString), WorkspaceError> {
        self.confined(path)?;
        self.beneath.parent_created(path, op)
    }

    /// Refuses a path under no root (one that did not come from [`Roots::resolve`]).
    fn confined(&self, path: &Path) -> Result<(), WorkspaceError> {
        if crate::credentials::is_key_store(path) {
            return Err(WorkspaceError::KeyStore(path.display().to_string()));
        }
        match self.is_allowed(path) {
            true => Ok(()),
            false => Err(self.outside(&path.display().to_string())),
        }
    }

    /// True when `path` (already canonical) is under the root or an extra root.
    pub fn is_allowed(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.extra.iter().any(|r| path.starts_with(r))
    }

    fn outside(&self, input: &str) -> WorkspaceError {
        let extra = if self.extra.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self.extra.iter().map(|p| p.display().to_string()).collect();
            format!(" and the extra roots ({})", list.join(", "))
        };
        WorkspaceError::OutsideWorkspace {
            path: input.to_string(),
            root: self.root.display().to_string(),
            extra,
        }
    }
}

/// pi's input clean-up: strip one leading `@`, normalise special spaces, expand `~`.
pub fn clean_input(input: &str) -> Result<PathBuf, WorkspaceError> {
    let invalid = |reason: &str| WorkspaceError::InvalidPath {
        path: input.to_string(),
        reason: reason.to_string(),
    };
    if input.contains('\0') {
        return Err(invalid("it contains a NUL byte"));
    }
    let stripped = input.strip_prefix('@').unwrap_or(input);
    let spaced: String = stripped.chars().map(normalize_space).collect();
    if spaced.trim().is_empty() {
        return Err(invalid("it is empty"));
    }
    if spaced == "~" || spaced.starts_with("~/") {
        let home = std::env::var_os("HOME").ok_or_else(|| invalid("HOME is not set"))?;
        let rest = spaced.trim_start_matches('~').trim_start_matches('/');
        return Ok(PathBuf::from(home).join(rest));
    }
    if spaced.starts_with('~') {
        return Err(invalid("'~user' paths are not supported"));
    }
    Ok(PathBuf::from(spaced))
}

/// Unicode spaces a model may emit in a path → ASCII space (pi's `normalizeUnicodeSpaces`).
fn normalize_space(c: char) -> char {
    match c {
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// Removes `.` and applies `..` textually (never above `/`).
pub fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonicalises the longest existing prefix of `path` (following symlinks) and appends the
/// rest, so a file that does not exist yet still resolves through a symlinked directory. A
/// dangling symlink is followed to where it points, so writing through it cannot escape.
pub fn real_path(path: &Path) -> PathBuf {
    real_path_at(path, 0)
}

/// Symlink hops followed before giving up (the kernel's own limit is 40).
const MAX_HOPS: usize = 40;

fn real_path_at(path: &Path, hops: usize) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let with_rest = |mut base: PathBuf, rest: &[std::ffi::OsString]| {
        for part in rest.iter().rev() {
            base.push(part);
        }
        base
    };
    loop {
        if let Ok(canon) = std::fs::canonicalize(&existing) {
            return with_rest(canon, &rest);
        }
        let is_link =
            std::fs::symlink_metadata(&existing).is_ok_and(|m| m.file_type().is_symlink());
        if is_link
            && hops < MAX_HOPS
            && let Ok(target) = std::fs::read_link(&existing)
        {
            let parent = existing.parent().map(Path::to_path_buf).unwrap_or_default();
            let next = with_rest(parent.join(target), &rest);
            return real_path_at(&lexical_normalize(&next), hops + 1);
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalize_pops_parents() {
        assert_eq!(
            lexical_normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(
            lexical_normalize(Path::new("/../../x")),
            PathBuf::from("/x")
        );
    }

    #[test]
    fn clean_input_strips_at_and_spaces() {
        assert_eq!(clean_input("@a\u{00A0}b").unwrap(), PathBuf::from("a b"));
        assert!(clean_input("").is_err());
        assert!(clean_input("~bob/x").is_err());
        match std::env::var_os("HOME") {
            Some(home) => {
                let notes = clean_input("~/notes/a.md").unwrap();
                assert_eq!(notes, PathBuf::from(&home).join("notes/a.md"));
                assert_eq!(clean_input("~").unwrap(), PathBuf::from(home));
            }
            None => assert!(clean_input("~/x").is_err()),
        }
    }
}
