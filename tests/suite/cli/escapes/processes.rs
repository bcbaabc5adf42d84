//! Findings 6, 7 and 10: signals reached any process of the user (agent-lsp and its shell
//! included), System V IPC of the user was reachable, and background processes (`&`, `nohup`,
//! `setsid`) outlived the command and agent-lsp itself.

use std::process::{Child, Command};

use super::attack;

/// A process of the user's, outside the sandbox, to aim at.
struct Victim(Child);

impl Victim {
    fn start() -> Victim {
        Victim(Command::new("sleep").arg("1000").spawn().unwrap())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn signals_reach_no_process_outside() {
    let mut victim = Victim::start();
    let pid = victim.pid();
    // A command that stops agent-lsp itself would leave the run hanging: the bound only ever
    // ends a failing test.
    let a = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        attack(
            &[
                format!("kill -9 {pid}; kill -STOP $PPID; echo \"ppid=$PPID\""),
                "ps -e -o pid= | wc -l".into(),
            ],
            &[],
            |_| {},
        ),
    )
    .await;
    assert!(victim.alive(), "the command killed a process outside");
    let a = a.expect("agent-lsp never finished: the command stopped it");
    a.assert_ran();
    let results = a.results();
    assert!(results[0].contains("ppid=1"), "{results:?}");
    // The command sees its own processes only: the jail's init, the shell, ps and wc.
    let seen: u32 = results[1].trim().parse().unwrap_or(u32::MAX);
    assert!(seen <= 5, "{results:?}");
}

/// `ipcmk -Q`'s queue id.
fn make_queue() -> String {
    let out = Command::new("ipcmk")
        .arg("-Q")
        .output()
        .expect("ipcmk is installed (util-linux)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.rsplit(':')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Whether queue `id` exists (`ipcs -i` exits 0 either way: its answer is what it prints).
fn queue_exists(id: &str) -> bool {
    Command::new("ipcs")
        .args(["-q", "-i", id])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&format!("msqid={id}\n")))
}

#[tokio::test]
async fn the_users_system_v_ipc_is_out_of_reach() {
    let id = make_queue();
    assert!(queue_exists(&id), "ipcmk made no queue: {id:?}");
    let a = attack(
        &[format!("ipcrm -q {id}; ipcs -q | tail -n +4")],
        &[],
        |_| {},
    )
    .await;
    let survived = queue_exists(&id);
    let _ = Command::new("ipcrm").args(["-q", &id]).status();
    a.assert_ran();
    assert!(survived, "{}", a.result());
    // In its own IPC namespace the command does not even see the queue.
    assert!(a.result().contains("invalid id"), "{}", a.result());
}

/// The processes whose command line holds `marker`.
fn running(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker))
        .collect()
}

fn kill_all(marker: &str) {
    let _ = Command::new("pkill").args(["-f", marker]).status();
}

#[tokio::test]
async fn nothing_a_command_starts_outlives_it() {
    let marker = format!(
        "{}.{}",
        4000 + std::process::id() % 1000,
        std::process::id()
    );
    let a = attack(
        &[format!(
            "sleep {marker} & nohup sleep {marker} >/dev/null 2>&1 & setsid sleep {marker} & \
             (sleep {marker} &) ; echo started"
        )],
        &[],
        |_| {},
    )
    .await;
    let left = running(&format!("sleep {marker}"));
    kill_all(&marker);
    a.assert_ran();
    assert_eq!(a.result(), "started");
    assert_eq!(left, Vec::<String>::new());
}

#[tokio::test]
async fn a_command_that_times_out_takes_its_background_with_it() {
    let marker = format!(
        "{}.{}",
        5000 + std::process::id() % 1000,
        std::process::id()
    );
    let mock = super::super::mock(vec![
        agent_lsp::testing::MockResponse::tool_call(
            "c1",
            "bash",
            serde_json::json!({
                "command": format!("setsid sleep {marker} & sleep {marker}"),
                "timeout": 1
            }),
        ),
        agent_lsp::testing::MockResponse::text("done"),
    ])
    .await;
    let env = super::super::super::support::cli_run::CliEnv::with_mock(&mock);
    let out = env.run(&super::RUN).await;
    let left = running(&format!("sleep {marker}"));
    kill_all(&marker);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(left, Vec::<String>::new());
}
