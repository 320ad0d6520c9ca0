//! The last ways out of a slice (issue 33), each tried by an adversarial agent through a real
//! slice of the release binary with the default sandbox. Each test failed on the loopx before
//! that issue: what the agent saw and how its attempts ended is left where the test reads it.

use std::path::Path;
use std::time::Duration;

use crate::support::{
    Background, Loopx, SOON, committed_repo, processes_with, script_agent, wait_for,
};

/// A project with a goal and t1 for agent `exec`, which runs `script` (after reading its
/// prompt) with `limits` added to its profile, in the project's own tree.
fn attacker(script: &str, limits: &str) -> Loopx {
    crate::attacks::attacker_with(script, limits)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("the agent left {name}: {e}"))
}

/// Gap 2: `/dev/pts` was the person's, so an agent opened their other terminals (the one
/// `loopx run` prints to) and sent OSC 52 (set the clipboard) and OSC 0 (the title) past every
/// escaping loopx does. In the slice `/dev/pts` is a terminal namespace of its own.
#[test]
fn an_agent_cannot_write_to_the_person_s_terminals() {
    let person = nix::pty::openpty(None, None).expect("a terminal of the person's");
    let name = nix::unistd::ttyname(&person.slave).expect("its name");
    let loopx = attacker(
        &format!(
            "printf '\\033]52;c;ZXZpbA==\\007\\033]0;pwned\\007' > '{0}' 2> theirs.err; echo $? > theirs.rc\n\
             cat '{0}' > /dev/null 2>&1 & sleep 0.2; kill $! 2>/dev/null\n\
             ls /dev/pts > pts.txt\n\
             echo mine > /dev/tty; echo $? > own.rc\n\
             python3 -c 'import pty; m, s = pty.openpty(); print(\"made\")' > made.txt 2>&1 || echo made > made.txt\n",
            name.display()
        ),
        "",
    );
    let out = loopx.run_once(&[]).json();
    assert_eq!(out["slice"]["outcome"], "completed", "{out}");
    assert_ne!(read(loopx.path(), "theirs.rc").trim(), "0");
    // Nothing reached the person's terminal.
    nix::fcntl::fcntl(
        &person.master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .expect("non-blocking");
    let mut buf = [0u8; 256];
    let got = nix::unistd::read(&person.master, &mut buf);
    assert!(
        matches!(got, Err(nix::errno::Errno::EAGAIN)),
        "the agent wrote to the person's terminal: {got:?} {:?}",
        got.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
    );
    // Its own terminal still works, and it can make new ones (some tools do).
    assert_eq!(read(loopx.path(), "own.rc").trim(), "0");
    assert_eq!(read(loopx.path(), "made.txt").trim(), "made");
    let pts = read(loopx.path(), "pts.txt");
    let theirs = name
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    assert!(
        !pts.lines().any(|l| l == theirs),
        "the person's {theirs} is visible: {pts}"
    );
}

/// Gap 4: a worktree slice entered its directory before `.loopx/` was covered, so `..` still
/// reached the real `.loopx/worktrees/<goal>/`: a peer's uncommitted files and loopx's own
/// index of it. Now the directory is entered through the covered tree.
#[test]
fn a_worktree_slice_cannot_read_its_peers_worktrees() {
    let loopx = Loopx::new();
    let root = loopx.path();
    committed_repo(root, &[("src/a.txt", "a\n")]);
    loopx.ok(&["goal", "start", "Edit the files", "--scope", "src/"]);
    // A peer's worktree with work it has not committed yet.
    let peer = root.join(".loopx/worktrees/g1/t9/src");
    std::fs::create_dir_all(&peer).expect("a peer's worktree");
    std::fs::write(peer.join("draft.txt"), "a peer's private draft\n").expect("draft");
    script_agent(
        &loopx,
        "exec",
        "cat > /dev/null\n\
         ls -a .. ../.. > src/seen.txt 2>&1\n\
         cat ../../t9/src/draft.txt > src/stolen.txt 2>&1; echo $? > src/stolen.rc\n",
        "max_time = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Edit a"]);
    let out = loopx.run_once(&[]).json();
    assert_eq!(out["slice"]["outcome"], "completed", "{out}");
    let own = root.join(".loopx/worktrees/g1/t1");
    let stolen = read(&own, "src/stolen.txt");
    assert!(!stolen.contains("private draft"), "{stolen}");
    assert_ne!(read(&own, "src/stolen.rc").trim(), "0");
    let seen = read(&own, "src/seen.txt");
    assert!(!seen.contains("t9"), "a peer's worktree is visible: {seen}");
}

/// Gap 7: the agent could trace its slice's init and open its descriptors (the status pipe
/// through which the init reports how the agent ended). The init is not dumpable now.
#[test]
fn an_agent_cannot_trace_its_slice_s_init() {
    let loopx = attacker(
        "ls -l /proc/1/fd/ > fds.txt 2>&1; echo $? > fds.rc\n\
         cat /proc/1/environ > /dev/null 2>&1; echo $? > environ.rc\n\
         python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); print(libc.ptrace(16, 1, 0, 0))' > attach.txt 2>&1\n",
        "",
    );
    let out = loopx.run_once(&[]).json();
    assert_eq!(out["slice"]["outcome"], "completed", "{out}");
    let fds = read(loopx.path(), "fds.txt");
    assert_ne!(read(loopx.path(), "fds.rc").trim(), "0", "{fds}");
    assert!(!fds.contains("pipe:"), "{fds}");
    assert_ne!(read(loopx.path(), "environ.rc").trim(), "0");
    let attach = read(loopx.path(), "attach.txt");
    assert_eq!(attach.trim(), "-1", "PTRACE_ATTACH to the init: {attach}");
}

/// Gap 6: after `kill -9` of `loopx run`, its agents ran on with no time limit until a later
/// run recovered them. Now the slice watches its supervisor and stops when it is gone; the
/// next run's recovery says so.
#[test]
fn a_slice_ends_when_its_supervisor_is_killed() {
    let unique = format!(
        "97.{:09}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .subsec_nanos()
    );
    // It ignores the hangup of its terminal (as many CLIs do), so only loopx can stop it;
    // the repair slice after the recovery ends at once.
    let loopx = attacker(
        &format!("[ -f started ] && exit 0\ntrap '' HUP\ntouch started\nsleep {unique}\n"),
        "",
    );
    let mut bg = Background::start(&loopx, &[]);
    bg.wait_for("the slice", |e| e["event"] == "slice_started");
    wait_for("the agent's start", SOON, || {
        !processes_with(&unique).is_empty()
    });
    bg.signal(nix::sys::signal::Signal::SIGKILL);
    let (code, _) = bg.finish();
    assert_eq!(code, -1, "killed");
    // The grace is 3 s; give a loaded machine room, but far less than the slice's minute.
    wait_for(
        "the agent's end with its supervisor",
        Duration::from_secs(20),
        || processes_with(&unique).is_empty(),
    );
    let status = loopx.ok(&["log", "--json"]).stdout;
    assert!(
        !status.contains("\"recovered\""),
        "nothing recovered it yet"
    );
    let out = loopx.run_once(&[]).json();
    assert_eq!(out["recovered"][0]["slice"], "s1", "{out}");
    // Its cgroup (where loopx could make one) is gone: removed by the slice's helper as it
    // stopped, or else by the recovery.
    let marker = loopx_kernel::marker::slice_marker(loopx.path(), loopx_kernel::SliceId(1));
    assert!(loopx_pty::SliceCgroup::left_by(marker.as_str()).is_none());
    let evidence = loopx.ok(&["evidence", "list", "--json"]).stdout;
    assert!(
        evidence.contains("stopped itself when its supervisor was lost"),
        "{evidence}"
    );
}

/// Gap 8: one slice added 100,000 todos over its report channel. A slice's channel now has a
/// budget (200 todos, 1,000 items, 4 MiB); past it a report is refused and the first refusal
/// is recorded on the slice.
#[test]
fn a_slice_cannot_flood_the_kernel_through_its_report_channel() {
    let loopx = attacker(
        &format!(
            "i=0; ok=0\n\
             while [ $i -lt 203 ]; do i=$((i+1)); '{LOOPX}' report todo \"flood $i\" > /dev/null 2>last.err && ok=$((ok+1)); done\n\
             echo $ok > ok.txt\n",
            LOOPX = crate::support::LOOPX
        ),
        "",
    );
    let out = loopx.run_once(&[]).json();
    assert_eq!(out["slice"]["outcome"], "completed", "{out}");
    assert_eq!(read(loopx.path(), "ok.txt").trim(), "200");
    let refused = read(loopx.path(), "last.err");
    assert!(refused.contains("the most one slice may"), "{refused}");
    let todos = loopx.ok(&["todo", "list", "--all", "--json"]).json();
    assert_eq!(
        todos["todos"].as_array().map(Vec::len),
        Some(201),
        "t1 and 200 more"
    );
    let evidence = loopx.ok(&["evidence", "list", "--json"]).stdout;
    assert_eq!(
        evidence
            .matches("reached its report budget (200 todos)")
            .count(),
        1,
        "{evidence}"
    );
}

/// Issue 46, hole 4: one agent's slices opened 3,000 questions in 40 s, each a card in the
/// team's chat, and one slice 933 goal proposals. An agent keeps at most 20 questions, 3 goal
/// proposals and 20 monitors open, across its slices (`crates/loopx-kernel/tests/caps.rs`);
/// past that a report is refused (exit 6) saying so.
#[test]
fn an_agent_keeps_only_so_many_questions_proposals_and_monitors_open() {
    let loopx = attacker(
        &format!(
            "flood() {{ what=$1; i=0; ok=0; while [ $i -lt 25 ]; do i=$((i+1)); \
               report_$what $i > /dev/null 2> $what.err && ok=$((ok+1)); done; echo $ok >> $what.ok; }}\n\
             report_ask() {{ '{LOOPX}' report ask \"Should the parser accept option $1 of 25?\" --option yes --option no; }}\n\
             report_propose() {{ '{LOOPX}' report propose-goal --objective \"Objective $1\" --why \"it is better\"; }}\n\
             report_monitor() {{ '{LOOPX}' report todo \"Wait $1\" --check \"exit 1\" --every 1h; }}\n\
             flood ask; flood propose; flood monitor\n",
            LOOPX = crate::support::LOOPX
        ),
        "",
    );
    loopx.run_once(&[]);
    for (what, cap) in [("ask", 20), ("propose", 3), ("monitor", 20)] {
        assert_eq!(
            read(loopx.path(), &format!("{what}.ok")).trim(),
            cap.to_string(),
            "{what}"
        );
    }
    let refused = read(loopx.path(), "ask.err");
    assert!(
        refused.contains("`agent:exec` keeps 20 questions open, the most one agent may"),
        "{refused}"
    );
    assert!(
        read(loopx.path(), "propose.err").contains("keeps 3 goal proposals open"),
        "the proposals' refusal"
    );
    assert!(
        read(loopx.path(), "monitor.err").contains("keeps 20 monitors open"),
        "the monitors' refusal"
    );
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    assert_eq!(
        gates["gates"].as_array().map(Vec::len),
        Some(23),
        "{gates:#}"
    );
}

/// Issue 46, hole 4: a slice's channel took 16 MiB of reports, and the store grew by 27 MB
/// from one slice of 16 KB notes (96 MB with the attacker's mix). It takes 4 MiB now: the
/// store grows by a few megabytes at most.
#[test]
fn one_slice_grows_the_store_by_a_few_megabytes_at_most() {
    let loopx = attacker(
        &format!(
            "d=$(head -c 12000 /dev/urandom | base64 -w0)\n\
             i=0; while [ $i -lt 1000 ]; do i=$((i+1)); '{LOOPX}' report evidence note \"item $i\" --detail \"$d\" > /dev/null 2> last.err || break; done\n\
             echo $i > stopped.txt\n",
            LOOPX = crate::support::LOOPX
        ),
        "",
    );
    let store = loopx.path().join(".loopx/state.redb");
    let before = std::fs::metadata(&store).map_or(0, |m| m.len());
    loopx.run_once(&[]);
    let after = std::fs::metadata(&store).expect("the store").len();
    let stopped: u32 = read(loopx.path(), "stopped.txt")
        .trim()
        .parse()
        .expect("a count");
    assert!(stopped < 1000, "the budget stopped it: {stopped}");
    assert!(
        read(loopx.path(), "last.err").contains("4 MiB of reports"),
        "the refusal names the limit"
    );
    let grown = after.saturating_sub(before);
    assert!(grown < 10 << 20, "the store grew by {grown} bytes");
}

/// Forks up to 200 sleeping children and writes how many it started to `started.txt`. A shell
/// exits when it cannot fork; Python counts the children it could start.
pub(crate) const FORK_BOMB: &str = r#"python3 -c '
import os, signal, time
kids = []
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
open("started.txt", "w").write(str(len(kids)))
for k in kids:
    os.kill(k, signal.SIGKILL)
    os.waitpid(k, 0)
'"#;

/// Gap 3: no key limited a slice's processes, and as root the per-user limit does not apply:
/// an agent started 3,000 children. `[limits] processes` now bounds the whole slice (its
/// cgroup where loopx can make one, else `RLIMIT_NPROC` in its user namespace).
#[test]
fn a_fork_bomb_is_bounded_by_the_slice_s_process_limit() {
    let loopx = attacker(FORK_BOMB, "processes = 50");
    let out = loopx.run_once(&[]).json();
    assert_eq!(out["slice"]["outcome"], "completed", "{out}");
    let started: u32 = read(loopx.path(), "started.txt")
        .trim()
        .parse()
        .expect("a count");
    assert!(
        (10..50).contains(&started),
        "the slice started {started} children under a limit of 50"
    );
}

/// An agent's question printed to a person's terminal by `loopx run`, `gate list` and `status`
/// cannot retitle the window, clear the screen or colour what follows: the kernel stores it
/// without what a terminal would obey.
#[test]
fn an_agent_s_question_cannot_drive_the_person_s_terminal() {
    let loopx = attacker(
        &format!(
            "'{}' report ask \"$(printf 'Should t1 proceed \\033]0;PWNED\\007 with the \\033[2J\\033[31mred plan (a) or the blue plan (b)?')\" --option a --option b > /dev/null",
            crate::support::LOOPX
        ),
        "",
    );
    let run = loopx.run(&["run", "--max-slices", "1", "--on-gate", "exit"]);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    for args in [&["gate", "list"][..], &["status"], &["log"]] {
        let out = loopx.ok(args);
        assert!(
            !out.stdout.contains('\u{1b}') && out.stdout.contains("proceed  with the red plan"),
            "{args:?}: {:?}\nrun: {}",
            out.stdout,
            run.stderr
        );
    }
}
