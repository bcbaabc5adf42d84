//! Path specifiers of `Read`/`Edit`/`Write` rules: gitignore patterns, as Claude Code reads
//! them, matched with ripgrep's own gitignore matcher (`ignore`).
//!
//! - `//path`: from the file system's root (`Read(//etc/**)`);
//! - `~/path`: from the user's home (`Read(~/.ssh/**)`);
//! - `/path`: from the project (`Edit(/src/**/*.ts)`); Claude Code reads it from the settings
//!   file's project, which for a project file is the same folder;
//! - `path`, `./path`: from the project, with gitignore's rule that a pattern without a slash
//!   (but a trailing one) matches at any depth (`Read(*.env)` is every `.env` file of the
//!   project, `Edit(docs/)` everything under `docs`).
//!
//! A pattern names a file or a folder; a folder matches everything beneath it.

use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Where relative path patterns start.
#[derive(Clone, Copy, Debug)]
pub struct Bases<'a> {
    /// The project: `/path` and `path` are relative to it.
    pub project: &'a Path,
    /// The user's home, for `~/path`.
    pub home: Option<&'a Path>,
}

#[cfg(test)]
impl Bases<'static> {
    /// The tests' project `/p` and home `/home/me`.
    pub fn example() -> Bases<'static> {
        Bases {
            project: Path::new("/p"),
            home: Some(Path::new("/home/me")),
        }
    }
}

#[derive(Clone, Debug)]
pub struct PathPattern {
    base: PathBuf,
    matcher: Gitignore,
}

impl PathPattern {
    pub fn new(spec: &str, bases: Bases) -> Result<Self, String> {
        let (base, line) = if let Some(abs) = spec.strip_prefix("//") {
            (PathBuf::from("/"), format!("/{abs}"))
        } else if let Some(rest) = spec.strip_prefix("~/") {
            let home = bases
                .home
                .ok_or("`~/` needs a home folder, and HOME is not set")?;
            (home.to_path_buf(), format!("/{rest}"))
        } else if let Some(rest) = spec.strip_prefix("./") {
            (bases.project.to_path_buf(), format!("/{rest}"))
        } else {
            (bases.project.to_path_buf(), spec.to_owned())
        };
        let mut builder = GitignoreBuilder::new(&base);
        builder.add_line(None, &line).map_err(|e| e.to_string())?;
        let matcher = builder.build().map_err(|e| e.to_string())?;
        Ok(PathPattern { base, matcher })
    }

    /// Whether `path` (absolute and normalised) is the pattern's file or folder, or lies
    /// beneath it.
    pub fn matches(&self, path: &Path) -> bool {
        if !path.starts_with(&self.base) {
            return false;
        }
        // The last component may be a folder (`ls src`): `src/` patterns name folders only.
        [false, true].into_iter().any(|is_dir| {
            self.matcher
                .matched_path_or_any_parents(path, is_dir)
                .is_ignore()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(spec: &str) -> PathPattern {
        PathPattern::new(spec, Bases::example()).unwrap()
    }

    #[test]
    fn the_four_kinds() {
        assert!(pattern("//etc/**").matches(Path::new("/etc/passwd")));
        assert!(!pattern("//etc/**").matches(Path::new("/p/etc/x")));
        assert!(pattern("~/.ssh/**").matches(Path::new("/home/me/.ssh/id")));
        assert!(pattern("/src/**/*.ts").matches(Path::new("/p/src/a/b.ts")));
        assert!(!pattern("/src/**/*.ts").matches(Path::new("/p/lib/src/b.ts")));
        assert!(pattern("./src/**").matches(Path::new("/p/src/x.rs")));
        assert!(!pattern("./src/**").matches(Path::new("/p/x/src/y.rs")));
    }

    #[test]
    fn gitignore_semantics() {
        assert!(pattern("*.env").matches(Path::new("/p/a/b/.env")));
        assert!(pattern(".env").matches(Path::new("/p/a/.env")));
        assert!(pattern("docs/").matches(Path::new("/p/docs/a/b.md")));
        assert!(pattern("docs").matches(Path::new("/p/docs")));
        assert!(pattern("src/**").matches(Path::new("/p/src/a/b.rs")));
        assert!(!pattern("src/**").matches(Path::new("/p/other/a.rs")));
        assert!(pattern("src/lib.rs").matches(Path::new("/p/src/lib.rs")));
        assert!(!pattern("src/lib.rs").matches(Path::new("/p/src/lib.rs.bak")));
        assert!(!pattern("*.env").matches(Path::new("/elsewhere/.env")));
    }
}
