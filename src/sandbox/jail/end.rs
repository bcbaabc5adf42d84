//! How a jailed command ended, as the launcher's processes tell one another and the daemon.

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::WaitStatus;

/// The exit status of a command the sandbox could not start (as `env` and `docker` use it).
pub const SETUP_FAILED: i32 = 125;
/// How that failure begins on stderr (the rest says why).
pub const SETUP_FAILED_PREFIX: &str = "agent-lsp sandbox: the command could not be started:";

/// How the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    Code(i32),
    Signal(i32),
}

impl End {
    pub(super) fn from_wait(status: WaitStatus) -> Option<End> {
        match status {
            WaitStatus::Exited(_, code) => Some(End::Code(code)),
            WaitStatus::Signaled(_, sig, _) => Some(End::Signal(sig as i32)),
            _ => None,
        }
    }

    pub(super) fn encode(self) -> [u8; 5] {
        let (tag, n) = match self {
            End::Code(c) => (b'C', c),
            End::Signal(s) => (b'S', s),
        };
        let b = n.to_le_bytes();
        [tag, b[0], b[1], b[2], b[3]]
    }

    pub(super) fn decode(bytes: &[u8]) -> Option<End> {
        let n = i32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?);
        match bytes.first()? {
            b'C' => Some(End::Code(n)),
            b'S' => Some(End::Signal(n)),
            _ => None,
        }
    }

    /// Ends the launcher the way the command ended, so the daemon sees the same status.
    pub(super) fn exit(self) -> ! {
        match self {
            End::Code(code) => std::process::exit(code),
            End::Signal(sig) => {
                if let Ok(signal) = Signal::try_from(sig) {
                    // No core file of the launcher; the default action ends it with `signal`.
                    let _ = nix::sys::resource::setrlimit(
                        nix::sys::resource::Resource::RLIMIT_CORE,
                        0,
                        0,
                    );
                    let mut one = SigSet::empty();
                    one.add(signal);
                    let _ = one.thread_unblock();
                    let _ = nix::sys::signal::raise(signal);
                }
                std::process::exit(128 + sig)
            }
        }
    }
}
