//! The command's Landlock domain, built and enforced by the worker just before it execs the
//! shell (after the mounts, so the paths are those of the command's view).
//!
//! - Read and execute: every top-level folder but `/dev`; in `/dev` only the harmless devices
//!   (and, with namespaces, the private `pts` and `shm`). Without namespaces this is what keeps
//!   the user's terminals (`/dev/pts/*`: reading one steals keystrokes) and other programs'
//!   shared memory out of reach.
//! - Write: the writable roots and the temporary directory. Devices get no ioctl right
//!   (`IOCTL_DEV`, ABI 5), but for the private ptys.
//! - TCP: none without network; with the allowlist proxy only `connect` to its relay port.
//! - Scopes (ABI 6): signals and abstract Unix sockets stay inside the sandbox.

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::spec::{JailNetwork, JailSpec};

/// Devices every shell uses, readable and writable without ioctls.
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Enforces the domain on this (single-threaded) process.
pub fn restrict(spec: &JailSpec) -> Result<(), String> {
    let abi = spec.landlock.crate_abi();
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let device = AccessFs::from_file(abi) & !(AccessFs::IoctlDev | AccessFs::Execute);
    let net_rules = !matches!(spec.network, JailNetwork::On);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(text)?;
    if net_rules {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(text)?;
    }
    if spec.landlock.scopes {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(text)?;
    }
    let mut ruleset = ruleset.create().map_err(text)?;
    for dir in top_level_but_dev() {
        ruleset = add(ruleset, &dir, read)?;
    }
    ruleset = add(ruleset, Path::new("/dev"), AccessFs::ReadDir.into())?;
    for dev in DEVICES {
        ruleset = add(ruleset, Path::new(dev), device)?;
    }
    if spec.namespaces {
        // Private to the sandbox: its own ptys and shared memory.
        for private in ["/dev/pts", "/dev/ptmx", "/dev/shm"] {
            ruleset = add(ruleset, Path::new(private), all)?;
        }
    }
    for dir in writable_dirs(spec) {
        ruleset = add(ruleset, &dir, all)?;
    }
    if let JailNetwork::Proxy { port, .. } = &spec.network {
        ruleset = ruleset
            .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
            .map_err(text)?;
    }
    let status = ruleset.restrict_self().map_err(text)?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        other => Err(format!(
            "Landlock enforced the rules only partly ({other:?})"
        )),
    }
}

/// Where the command may write: its roots and its temporary directory (`/tmp` in its view).
pub fn writable_dirs(spec: &JailSpec) -> Vec<PathBuf> {
    let temp = match spec.namespaces {
        true => PathBuf::from("/tmp"),
        false => spec.temp_dir.clone(),
    };
    std::iter::once(temp)
        .chain(spec.writable.iter().cloned())
        .collect()
}

fn top_level_but_dev() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p != Path::new("/dev"))
        .collect()
}

/// Adds a rule for `path`; a path that cannot be opened gets none (refused: the safe side).
fn add(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, String> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(ruleset);
    };
    // A file gets only the rights that make sense for a file.
    let access = match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => access & AccessFs::from_file(landlock::ABI::V9),
        _ => access,
    };
    ruleset.add_rule(PathBeneath::new(fd, access)).map_err(text)
}

fn text(e: impl std::fmt::Display) -> String {
    format!("Landlock: {e}")
}
