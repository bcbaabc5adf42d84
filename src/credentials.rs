//! Keys stored by `agent-lsp login`: one JSON object of key variables
//! (`{"ANTHROPIC_API_KEY": "…"}`) in `$XDG_CONFIG_HOME/agent-lsp/credentials/keys.json`, the
//! folder `0700` and the file `0600`, written whole through a temporary file and a rename.
//!
//! A stored key stands in for its environment variable when that is not set
//! ([`crate::model_registry::EnvSource::key`]): the environment always wins, and a stored key
//! never enters any process's environment. Sandboxed commands cannot read the folder — their
//! mount namespace covers it with an empty read-only tmpfs (`sandbox::jail::mounts`); where the
//! machine has no namespaces (Landlock alone cannot hide a file it lets them read), `doctor`
//! says so and `login` warns.
//!
//! No system keyring: on the machines this runs on most (servers, containers, CI, SSH sessions)
//! there is no Secret Service to talk to, and a D-Bus client would be the largest dependency of
//! the tree for the desktop case alone; the file's protection is the same as pi's `auth.json`.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const FILE: &str = "keys.json";

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("no folder for stored keys: HOME and XDG_CONFIG_HOME are unset")]
    NoConfigDir,
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a JSON object of key variables: {message}")]
    Malformed { path: PathBuf, message: String },
    #[error("{0}")]
    BadKey(String),
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CredentialsError {
    let path = path.to_path_buf();
    move |source| CredentialsError::Io { what, path, source }
}

/// Whether `path` is in this process's store of keys: the file tools refuse it and their walks
/// skip it, wherever the workspace is (a workspace that is the home folder contains it). The
/// store is the process's user's, found once from its environment, as written and as the
/// file system resolves it.
pub fn is_key_store(path: &Path) -> bool {
    static STORE: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    let store = STORE.get_or_init(|| {
        let var = |name: &str| std::env::var(name).ok();
        let Some(config) = config_dir(var("XDG_CONFIG_HOME"), var("HOME")) else {
            return Vec::new();
        };
        let mut forms = vec![config.join("credentials")];
        if let Ok(real) = std::fs::canonicalize(&config) {
            forms.push(real.join("credentials"));
        }
        forms
    });
    store.iter().any(|dir| path.starts_with(dir))
}

/// agent-lsp's configuration folder: `$XDG_CONFIG_HOME/agent-lsp`, else `~/.config/agent-lsp`
/// (empty values count as unset). Here, below the model registry's `EnvSource`, so the store
/// finds its folder without it.
pub fn config_dir(xdg_config_home: Option<String>, home: Option<String>) -> Option<PathBuf> {
    let set = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    let base = match set(xdg_config_home) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(set(home)?).join(".config"),
    };
    Some(base.join("agent-lsp"))
}

/// The folder of stored keys in the configuration folder `config`: `<config>/credentials`.
pub fn dir(config: Option<PathBuf>) -> Option<PathBuf> {
    Some(config?.join("credentials"))
}

/// The store of `env`'s user.
#[derive(Clone, Debug)]
pub struct Credentials {
    dir: PathBuf,
}

impl Credentials {
    /// The store in the configuration folder `config` (`EnvSource::config_dir`).
    pub fn of(config: Option<PathBuf>) -> Result<Credentials, CredentialsError> {
        dir(config)
            .map(|dir| Credentials { dir })
            .ok_or(CredentialsError::NoConfigDir)
    }

    pub fn file(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The stored keys by variable; empty when nothing was stored.
    pub fn read(&self) -> Result<BTreeMap<String, String>, CredentialsError> {
        let path = self.file();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(io("read", &path)(e)),
        };
        serde_json::from_str(&text).map_err(|e| CredentialsError::Malformed {
            path,
            message: e.to_string(),
        })
    }

    /// Stores `key` under `var` (replacing what was there).
    pub fn store(&self, var: &str, key: &str) -> Result<(), CredentialsError> {
        let key = checked_key(key)?;
        let mut keys = self.read()?;
        keys.insert(var.to_string(), key.to_string());
        self.write(&keys)
    }

    /// Forgets `vars` (every stored key when `None`); what was removed.
    pub fn remove(&self, vars: Option<&[&str]>) -> Result<Vec<String>, CredentialsError> {
        let mut keys = self.read()?;
        let removed: Vec<String> = match vars {
            None => std::mem::take(&mut keys).into_keys().collect(),
            Some(vars) => vars
                .iter()
                .filter(|v| keys.remove(**v).is_some())
                .map(|v| v.to_string())
                .collect(),
        };
        if removed.is_empty() {
            return Ok(removed);
        }
        if keys.is_empty() {
            let path = self.file();
            std::fs::remove_file(&path).map_err(io("remove", &path))?;
        } else {
            self.write(&keys)?;
        }
        Ok(removed)
    }

    /// Whether the file can be read by anyone but its owner (it was made `0600`; a copy or a
    /// `chmod` may have widened it).
    pub fn too_open(&self) -> bool {
        std::fs::metadata(self.file()).is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
    }

    fn write(&self, keys: &BTreeMap<String, String>) -> Result<(), CredentialsError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(io("make", &self.dir))?;
        // An existing folder keeps its mode through `create`: narrow it.
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("set the mode of", &self.dir))?;
        let text = serde_json::to_string_pretty(keys).map_err(|e| CredentialsError::Malformed {
            path: self.file(),
            message: e.to_string(),
        })?;
        let temp = self
            .dir
            .join(format!(".{FILE}.{}", uuid::Uuid::new_v4().simple()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.write_all(b"\n")?;
                f.sync_all()
            });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(io("write", &temp)(e));
        }
        let path = self.file();
        std::fs::rename(&temp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            io("replace", &path)(e)
        })
    }
}

/// A key as pasted: surrounding white space dropped; empty, inner white space or control
/// characters refused (a paste of two lines, a terminal's escape sequence).
pub fn checked_key(key: &str) -> Result<&str, CredentialsError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(CredentialsError::BadKey("the key is empty".into()));
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(CredentialsError::BadKey(
            "the key has spaces or control characters in it: paste just the key".into(),
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_in(dir: &Path) -> Credentials {
        Credentials::of(Some(dir.join("agent-lsp"))).unwrap_or_else(|e| unreachable!("{e}"))
    }

    /// A store in a fresh temp dir, which lives as long as the returned guard.
    fn temp_store() -> Result<(tempfile::TempDir, Credentials), CredentialsError> {
        let temp = tempfile::tempdir().map_err(io("make", Path::new("temp")))?;
        let store = store_in(temp.path());
        Ok((temp, store))
    }

    #[test]
    fn stores_with_owner_only_modes_and_reads_back() -> Result<(), CredentialsError> {
        let (temp, store) = temp_store()?;
        store.store("OPENAI_API_KEY", "  sk-one\n")?;
        store.store("ANTHROPIC_API_KEY", "sk-ant")?;
        let keys = store.read()?;
        assert_eq!(
            keys.get("OPENAI_API_KEY").map(String::as_str),
            Some("sk-one")
        );
        assert_eq!(keys.len(), 2);
        let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode(&store.file()).ok(), Some(0o600));
        assert_eq!(
            mode(&temp.path().join("agent-lsp/credentials")).ok(),
            Some(0o700)
        );
        assert!(!store.too_open());
        let left: Vec<_> = std::fs::read_dir(temp.path().join("agent-lsp/credentials"))
            .map_err(io("list", temp.path()))?
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            left,
            vec![std::ffi::OsString::from(FILE)],
            "no temporary file left"
        );
        Ok(())
    }

    #[test]
    fn remove_one_then_all_deletes_the_file() -> Result<(), CredentialsError> {
        let (_temp, store) = temp_store()?;
        store.store("OPENAI_API_KEY", "a")?;
        store.store("GROQ_API_KEY", "b")?;
        assert_eq!(
            store.remove(Some(&["GROQ_API_KEY", "XAI_API_KEY"]))?,
            ["GROQ_API_KEY"]
        );
        assert_eq!(store.read()?.len(), 1);
        assert_eq!(store.remove(None)?, ["OPENAI_API_KEY"]);
        assert!(!store.file().exists());
        assert!(store.remove(None)?.is_empty());
        Ok(())
    }

    #[test]
    fn refuses_pastes_that_are_not_a_key() {
        for bad in ["", "   ", "sk-a sk-b", "sk-a\nsk-b", "sk\u{1b}[2J"] {
            assert!(checked_key(bad).is_err(), "{bad:?}");
        }
        assert_eq!(checked_key(" sk-x\r\n").ok(), Some("sk-x"));
    }

    #[test]
    fn a_widened_file_is_reported() -> Result<(), CredentialsError> {
        let (_temp, store) = temp_store()?;
        store.store("OPENAI_API_KEY", "a")?;
        std::fs::set_permissions(store.file(), std::fs::Permissions::from_mode(0o644))
            .map_err(io("chmod", &store.file()))?;
        assert!(store.too_open());
        Ok(())
    }
}
