//! Finding 1: the command kept agent-lsp's controlling terminal, so `ioctl(TIOCSTI)` on
//! `/dev/tty` pushed a line into the user's shell (run after agent-lsp exits, with the user's
//! rights); and `/dev/pts/*` was readable, which steals the user's keystrokes.

use super::super::super::support::cli_run::stdout;
use super::{attack_through, py};

/// Starts the binary with a fresh pty as its controlling terminal (as a terminal's shell does
/// for an editor started from it), drains what it prints, and afterwards reports how many bytes
/// wait in the terminal's input queue: bytes there would be read by the user's shell.
const IN_A_TERMINAL: &str = r#"
import fcntl, os, select, struct, subprocess, sys, termios
master, slave = os.openpty()
child = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True,
                         preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
while child.poll() is None:
    if select.select([master], [], [], 0.05)[0]:
        try:
            os.read(master, 65536)
        except OSError:
            break
pending = struct.unpack("i", fcntl.ioctl(slave, termios.FIONREAD, struct.pack("i", 0)))[0]
print("exit=%d pending=%d" % (child.returncode, pending))
"#;

/// Every terminal the command can open, and into which it could push input.
const PROBE: &str = r#"
import fcntl, glob, os, termios
hits = []
for path in ["/dev/tty"] + glob.glob("/dev/pts/[0-9]*") + ["/proc/%d/fd/%d" % (os.getppid(), i) for i in range(3)]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        continue
    if not os.isatty(fd):
        continue
    hits.append("opened " + path)
    try:
        for b in b"echo pwned\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([b]))
        hits.append("injected " + path)
    except OSError as e:
        hits.append("refused %s: %s" % (path, e.strerror))
print(hits or "no terminal")
"#;

#[tokio::test]
async fn a_command_can_neither_push_input_into_the_users_terminal_nor_read_it() {
    let a = attack_through(&["python3", "-c", IN_A_TERMINAL], &[py(PROBE)], |_| {}).await;
    let report = stdout(&a.out);
    assert!(report.contains("exit=0 "), "{report}");
    assert!(report.contains("pending=0"), "input was injected: {report}");
    assert_eq!(a.result(), "no terminal");
}
