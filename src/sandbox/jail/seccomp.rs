//! The command's seccomp filter (seccompiler, firecracker's), installed by the worker last,
//! after Landlock. It covers what Landlock and the namespaces cannot:
//!
//! - Unix sockets on the file system (`docker.sock`, the D-Bus bus, `tmux -S`, `ssh-agent`,
//!   `nvim --listen`): Landlock below ABI 9 has no right for `connect` on a path socket, and a
//!   read-only mount does not stop it. So `socket(AF_UNIX)` is refused in every confined
//!   mode, and so are `socketpair` datagram pairs (one half can be re-aimed at any path with
//!   `connect(AF_UNSPEC)` + `sendto`); stream and seqpacket pairs, which node, python and
//!   libuv use between their own processes, keep working, as do pipes.
//! - No network: `socket` of any family, `connect`, `bind` and `sendto` with an address.
//! - `io_uring`, which makes sockets and opens files without these system calls.
//! - `TIOCSTI` and `TIOCLINUX`, which push input into a terminal (compared as 32 bits: the
//!   kernel reads the command as an `int`, so high bits cannot smuggle it past).
//! - The kernel keyrings (`keyctl`, `add_key`, `request_key`): the session keyring is
//!   inherited and may hold the user's secrets.
//! - On x86-64, system calls with the x32 bit, which a filter keyed on x86-64 numbers would
//!   not see (a second, five-instruction filter: seccompiler checks only the architecture).
//!
//! Refusals are `EPERM` ("Operation not permitted").

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::spec::JailNetwork;

const SOCK_TYPE_MASK: u64 = 0xf;

/// Installs the filters on this (single-threaded) process.
pub fn install(network: &JailNetwork) -> Result<(), String> {
    let program = program(network)?;
    seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))?;
    #[cfg(target_arch = "x86_64")]
    seccompiler::apply_filter(&x32_guard()).map_err(|e| format!("seccomp (x32): {e}"))?;
    Ok(())
}

fn program(network: &JailNetwork) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp: unsupported architecture: {e}"))?;
    let filter = SeccompFilter::new(
        rules(network)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp: {e}"))
}

fn rules(network: &JailNetwork) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let always = Vec::new;
    let off = matches!(network, JailNetwork::Off);
    rules.insert(
        libc::SYS_socket,
        match off {
            true => always(),
            false => vec![rule(&[(0, SeccompCmpOp::Eq, libc::AF_UNIX as u64)])?],
        },
    );
    let mut pairs = Vec::new();
    for kind in [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_RDM] {
        pairs.push(rule(&[(
            1,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            kind as u64,
        )])?);
    }
    rules.insert(libc::SYS_socketpair, pairs);
    if off {
        rules.insert(libc::SYS_connect, always());
        rules.insert(libc::SYS_bind, always());
        let addressed = SeccompCondition::new(4, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)
            .map_err(|e| format!("seccomp: {e}"))?;
        rules.insert(
            libc::SYS_sendto,
            vec![SeccompRule::new(vec![addressed]).map_err(|e| format!("seccomp: {e}"))?],
        );
    }
    // The request numbers' type differs between C libraries (`c_ulong`, `c_int`).
    #[allow(clippy::unnecessary_cast)]
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(&[(1, SeccompCmpOp::Eq, libc::TIOCSTI as u64)])?,
            rule(&[(1, SeccompCmpOp::Eq, libc::TIOCLINUX as u64)])?,
        ],
    );
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ] {
        rules.insert(call, always());
    }
    Ok(rules)
}

/// A rule on 32-bit arguments: all `(index, op, value)` must hold.
fn rule(conditions: &[(u8, SeccompCmpOp, u64)]) -> Result<SeccompRule, String> {
    let conditions = conditions
        .iter()
        .map(|(arg, op, value)| {
            SeccompCondition::new(*arg, SeccompCmpArgLen::Dword, op.clone(), *value)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("seccomp: {e}"))?;
    SeccompRule::new(conditions).map_err(|e| format!("seccomp: {e}"))
}

/// Refuses every x86-64 system call with the x32 bit (`nr >= 0x40000000`).
#[cfg(target_arch = "x86_64")]
fn x32_guard() -> BpfProgram {
    use seccompiler::sock_filter;
    const LD_ABS_W: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LD_ABS_W, 0, 0, 4),              // A = seccomp_data.arch
        op(JEQ_K, 0, 3, AUDIT_ARCH_X86_64), // another ABI: allow (the main filter kills it)
        op(LD_ABS_W, 0, 0, 0),              // A = seccomp_data.nr
        op(JGE_K, 0, 1, 0x4000_0000),       // x32 bit set?
        op(RET_K, 0, 0, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        op(RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_for_every_network() {
        for network in [
            JailNetwork::Off,
            JailNetwork::On,
            JailNetwork::Proxy {
                socket: "/x".into(),
                port: 3128,
            },
        ] {
            assert!(program(&network).is_ok_and(|p| !p.is_empty()));
        }
        #[cfg(target_arch = "x86_64")]
        assert_eq!(x32_guard().len(), 6);
    }
}
