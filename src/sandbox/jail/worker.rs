//! The last process the jail forks: it gives up every privilege and becomes the shell.
//! Order matters: capabilities first (they are needed to change the securebits), then
//! Landlock (which sets `no_new_privs`), then seccomp (which would refuse nothing Landlock
//! needs, but is kept last so nothing runs unfiltered after it), then `execve`.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use nix::sys::signal::SigSet;
use rustix::thread::{
    CapabilitiesSecureBits, CapabilitySet, CapabilitySets, remove_capability_from_bounding_set,
    set_capabilities, set_capabilities_secure_bits,
};

use super::spec::JailSpec;
use super::{rules, seccomp};

/// Becomes the command; returns only with the reason it could not.
pub fn exec(spec: &JailSpec, env: &[OsString]) -> String {
    match prepare(spec).and_then(|()| build_exec(spec, env)) {
        Ok((program, args, env)) => match nix::unistd::execve(&program, &args, &env) {
            Ok(never) => match never {},
            Err(e) => format!("cannot start {}: {e}", spec.program.display()),
        },
        Err(e) => e,
    }
}

fn prepare(spec: &JailSpec) -> Result<(), String> {
    // The shell starts with no signal blocked (the launcher blocks some to read them).
    SigSet::empty()
        .thread_set_mask()
        .map_err(|e| format!("cannot reset the signal mask: {e}"))?;
    // Its own process group, so the jail can signal the command's tree without itself.
    nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0))
        .map_err(|e| format!("setpgid: {e}"))?;
    stdin_from_null()?;
    drop_capabilities()?;
    rules::restrict(spec)?;
    seccomp::install(&spec.network)
}

fn stdin_from_null() -> Result<(), String> {
    let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    nix::unistd::dup2_stdin(&null).map_err(|e| format!("dup2: {e}"))
}

/// No capability survives into the command, not even for uid 0 (mapped or real): the bounding
/// set is emptied and `SECBIT_NOROOT` is locked, so `execve` grants none.
fn drop_capabilities() -> Result<(), String> {
    let current = rustix::thread::capabilities(None).map_err(|e| format!("capget: {e}"))?;
    if current.permitted.is_empty() && current.effective.is_empty() {
        return Ok(());
    }
    let bits = CapabilitiesSecureBits::NO_ROOT
        | CapabilitiesSecureBits::NO_ROOT_LOCKED
        | CapabilitiesSecureBits::NO_SETUID_FIXUP
        | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
        | CapabilitiesSecureBits::KEEP_CAPS_LOCKED
        | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
        | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED;
    set_capabilities_secure_bits(bits).map_err(|e| format!("securebits: {e}"))?;
    for cap in CapabilitySet::all().iter() {
        // Capabilities the kernel does not know fail with EINVAL: nothing to drop.
        let _ = remove_capability_from_bounding_set(cap);
    }
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    set_capabilities(None, none).map_err(|e| format!("capset: {e}"))
}

type Exec = (CString, Vec<CString>, Vec<CString>);

fn build_exec(spec: &JailSpec, env: &[OsString]) -> Result<Exec, String> {
    let c =
        |bytes: Vec<u8>| CString::new(bytes).map_err(|_| "a NUL byte in the command".to_string());
    let program = c(spec.program.as_os_str().as_bytes().to_vec())?;
    let mut args = vec![program.clone()];
    for arg in &spec.args {
        args.push(c(arg.clone().into_bytes())?);
    }
    let env = env
        .iter()
        .map(|kv| c(kv.clone().into_vec()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((program, args, env))
}
