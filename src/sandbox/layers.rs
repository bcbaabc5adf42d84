//! What this machine lets the sandbox use, found once per process: the Landlock ABI, user
//! namespaces (and with them mount, PID, IPC and network namespaces) and seccomp.
//!
//! Landlock is probed in-process by creating rulesets with the crate's hard-requirement mode;
//! namespaces and seccomp are probed by the launcher itself (`agent-lsp __sandbox-exec
//! --probe`), so the answer is what a real command would get (an AppArmor or sysctl refusal of
//! unprivileged user namespaces, a container's masked `/proc`).

use std::path::Path;
use std::sync::OnceLock;

use landlock::{Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
use serde_json::{Value, json};

use crate::model_registry::EnvSource;

pub use super::jail::spec::{Landlock, Probe};

/// Test-only switch: `1` makes the sandbox report itself unavailable.
pub const FORCE_UNAVAILABLE_ENV: &str = "AGENT_LSP_TEST_SANDBOX_UNAVAILABLE";
/// Test-only switch: `1` makes user namespaces unavailable (the Landlock + seccomp fallback).
pub const FORCE_NO_NAMESPACES_ENV: &str = "AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES";
/// Test-only switch: the highest Landlock ABI to use (`4`, `5`, `6`), as an older kernel.
pub const LANDLOCK_ABI_ENV: &str = "AGENT_LSP_TEST_LANDLOCK_ABI";

/// The layers this machine offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    /// `Err`: the sandbox is unavailable, and why.
    pub landlock: Result<Landlock, String>,
    /// `Err`: commands run without namespaces (Landlock + seccomp only), and why.
    pub namespaces: Result<(), String>,
    /// `Err`: the sandbox is unavailable (Unix sockets could not be refused), and why.
    pub seccomp: Result<(), String>,
}

impl Layers {
    /// Why the sandbox cannot run commands at all, `None` when it can.
    pub fn unavailable(&self) -> Option<String> {
        match (&self.landlock, &self.seccomp) {
            (Err(e), _) => Some(e.clone()),
            (_, Err(e)) => Some(format!("seccomp filters cannot be installed: {e}")),
            _ => None,
        }
    }

    /// `{landlock, namespaces, seccomp}` as `agent/getState.sandbox.layers` reports them.
    pub fn to_json(&self) -> Value {
        let state = |r: &Result<(), String>| match r {
            Ok(()) => json!({"available": true}),
            Err(e) => json!({"available": false, "reason": e}),
        };
        json!({
            "landlock": match &self.landlock {
                Ok(l) => json!({"available": true, "abi": l.abi, "ioctlDev": l.ioctl_dev,
                                "scopes": l.scopes, "unixSockets": l.resolve_unix}),
                Err(e) => json!({"available": false, "reason": e}),
            },
            "namespaces": state(&self.namespaces),
            "seccomp": state(&self.seccomp),
        })
    }
}

/// The layers of this machine, probed once per process (the test switches in `env` apply on
/// top: they never make a layer appear that the machine lacks).
pub fn layers(env: &EnvSource, launcher: Option<&Path>) -> Layers {
    static PROBED: OnceLock<(Result<Landlock, String>, Probe)> = OnceLock::new();
    let (landlock, probe) = PROBED.get_or_init(|| {
        let probe = match launcher {
            Some(exe) => super::launch::probe(exe),
            None => Probe {
                namespaces: Some(NO_LAUNCHER.into()),
                seccomp: Some(NO_LAUNCHER.into()),
            },
        };
        (probe_landlock(), probe)
    });
    let mut layers = Layers {
        landlock: landlock.clone(),
        namespaces: probe.namespaces.clone().map_or(Ok(()), Err),
        seccomp: probe.seccomp.clone().map_or(Ok(()), Err),
    };
    if env.get(FORCE_NO_NAMESPACES_ENV) == Some("1") {
        layers.namespaces = Err(format!("forced by {FORCE_NO_NAMESPACES_ENV}"));
    }
    if let (Some(cap), Ok(l)) = (
        env.get(LANDLOCK_ABI_ENV).and_then(|v| v.parse::<u8>().ok()),
        &layers.landlock,
    ) {
        layers.landlock = match cap.min(l.abi) {
            0..=3 => Err(format!("Landlock ABI {cap} (forced by {LANDLOCK_ABI_ENV})")),
            abi => Ok(Landlock::at(abi)),
        };
    }
    if env.get(FORCE_UNAVAILABLE_ENV) == Some("1") {
        layers.landlock = Err(format!("forced by {FORCE_UNAVAILABLE_ENV}"));
    }
    layers
}

const NO_LAUNCHER: &str = "no sandbox launcher is configured in this process";

/// The kernel's ABI, when a ruleset with every right the sandbox uses at that ABI (file
/// system, TCP, and the scopes from ABI 6) can be created in the crate's hard-requirement mode.
fn probe_landlock() -> Result<Landlock, String> {
    let abi = super::jail::sys::landlock_abi();
    let level = Landlock::at(u8::try_from(abi).unwrap_or(0));
    if abi >= 4 && handles_everything(level).is_ok() {
        return Ok(level);
    }
    let reason = match abi {
        ..=0 => "Landlock is not enabled in this kernel".to_string(),
        1..=3 => format!("this kernel has Landlock ABI {abi}"),
        _ => handles_everything(level).err().unwrap_or_default(),
    };
    Err(format!(
        "this kernel cannot enforce Landlock ABI 4 (file system and TCP rules): {reason}"
    ))
}

fn handles_everything(level: Landlock) -> Result<(), String> {
    let abi = level.crate_abi();
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .map_err(|e| e.to_string())?;
    let ruleset = match level.scopes {
        true => ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| e.to_string())?,
        false => ruleset,
    };
    ruleset.create().map(drop).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_kernel_has_landlock_and_the_switches_only_take_layers_away() {
        let real = probe_landlock().map(|l| l.abi);
        assert!(matches!(real, Ok(7..)), "{real:?}");
        let none = layers(&EnvSource::from_pairs::<&str, &str>([]), None);
        assert!(none.landlock.is_ok());
        // Without a launcher in this process, namespaces and seccomp cannot be probed.
        assert!(none.unavailable().is_some());
        let capped = layers(&EnvSource::from_pairs([(LANDLOCK_ABI_ENV, "4")]), None);
        assert_eq!(capped.landlock, Ok(Landlock::at(4)));
        let forced = layers(&EnvSource::from_pairs([(FORCE_UNAVAILABLE_ENV, "1")]), None);
        assert!(forced.landlock.is_err());
        let flat = layers(
            &EnvSource::from_pairs([(FORCE_NO_NAMESPACES_ENV, "1")]),
            None,
        );
        assert!(flat.namespaces.is_err());
    }
}
