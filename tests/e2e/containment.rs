//! Containment as whoever runs loopx (issue 52): the same guarantees for a normal user as for
//! root. `.ci/run` runs this module, with the escape, attack, permission and worktree suites,
//! once as root and once as an unprivileged user in a delegated cgroup
//! (`scripts/test-as-user.sh`); each test says which user it ran as when it fails.
//!
//! `LOOPX_TEST_EXPECT_CGROUP=1` (set by that script for both passes) makes the cgroup a
//! requirement: without it, a machine that gives this user no cgroup is told so by `doctor`'s
//! warning, and the tests below hold loopx to the per-process limits instead.

use serde_json::Value;

use crate::attacks::{attacker_with, containment};
use crate::escape::FORK_BOMB;
use crate::support::{Background, Loopx, SOON, wait_file, wait_for_some};

/// Who runs the tests, for failure messages.
fn who() -> String {
    let uid = nix::unistd::getuid();
    if uid.is_root() {
        "root".to_owned()
    } else {
        format!("uid {uid}")
    }
}

/// Whether this run must have a cgroup per slice.
fn cgroup_expected() -> bool {
    std::env::var_os("LOOPX_TEST_EXPECT_CGROUP").is_some_and(|v| v == "1")
}

fn read(loopx: &Loopx, name: &str) -> String {
    std::fs::read_to_string(loopx.path().join(name))
        .unwrap_or_else(|e| panic!("as {}: the agent left no {name}: {e}", who()))
}

fn run_once(loopx: &Loopx) -> Value {
    let out = loopx.run_once(&[]).json();
    assert_eq!(out["slice"]["outcome"], "completed", "as {}: {out}", who());
    out
}

/// `doctor` probes the sandbox as a slice would set it up: as a normal user the probe ran in a
/// fork of loopx, not dumpable, whose `/proc/self/setgroups` belonged to root, and reported
/// "this kernel lacks unprivileged user namespaces" on a kernel that has them.
#[test]
fn doctor_passes_the_sandbox_check() {
    let loopx = Loopx::new();
    let run = loopx.run(&["doctor", "--json"]);
    let out = run.json();
    let check = |name: &str| -> Value {
        out["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no `{name}` check: {out}"))
    };
    // Passed: no failure and no warning.
    let passed = |check: &Value| check["ok"] == true && check["warning"] == false;
    let sandbox = check("sandbox");
    assert!(passed(&sandbox), "as {}: {sandbox}", who());
    let detail = sandbox["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("private /dev/pts"), "{detail}");
    assert!(detail.contains(&format!("as {}", who())), "{detail}");
    let limits = check("slice limits");
    if cgroup_expected() {
        assert!(passed(&limits), "as {}: {limits}", who());
        assert!(
            limits["detail"]
                .as_str()
                .is_some_and(|d| d.contains("beneath")),
            "doctor names the cgroup in use: {limits}"
        );
    } else if !passed(&limits) {
        // Without a cgroup, doctor names the one way to get one.
        let detail = limits["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("systemd-run --user --scope -p Delegate=yes")
                || detail.contains("chown -R"),
            "{limits}"
        );
    }
}

/// A slice sees its own processes only, and no `.loopx/`: as a normal user the slice ran
/// without namespaces, listed the store and every process on the machine.
#[test]
fn a_slice_sees_neither_the_store_nor_any_process_outside_it() {
    let loopx = attacker_with(
        "ls /proc | grep -E '^[0-9]+$' > pids.txt\n\
         grep NSpid /proc/self/status > nspid.txt\n\
         ls -A .loopx > store.txt 2>&1; echo $? >> store.txt\n\
         cat /proc/self/cgroup > cgroup.txt\n",
        "",
    );
    run_once(&loopx);
    let contained = containment(&loopx);
    assert!(
        contained.starts_with("namespaces+landlock"),
        "as {}: {contained}",
        who()
    );
    if cgroup_expected() {
        assert!(contained.ends_with("+cgroup"), "as {}: {contained}", who());
    }
    // The store's directory is an empty mount.
    assert_eq!(read(&loopx, "store.txt"), "0\n", "as {}", who());
    // A PID namespace and a `/proc` of its own: no process of the machine's (not this test,
    // not `loopx run`), only the slice's init, the agent's shell and what it ran, numbered
    // from 1.
    let pids: Vec<u32> = read(&loopx, "pids.txt")
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(pids.contains(&1), "its init is PID 1: {pids:?}");
    assert!(
        !pids.contains(&std::process::id()) && pids.len() < 10,
        "as {}: the slice sees processes outside it: {pids:?}",
        who()
    );
}

/// `[limits] processes` holds in the slice's own cgroup: as a normal user no cgroup was made
/// (only `RLIMIT_NPROC` held), and doctor's hint was never used by loopx. In a delegated
/// cgroup, the slice's cgroup is made beneath it with `pids.max` at the profile's limit.
#[test]
fn a_fork_bomb_is_stopped_by_the_slice_s_cgroup() {
    let loopx = attacker_with(
        &format!(
            r#"cg=$(grep -E '^[0-9]+:pids:|^0::' /proc/self/cgroup | head -1 | cut -d: -f3)
for base in /sys/fs/cgroup/pids /sys/fs/cgroup; do
  [ -f "$base$cg/pids.max" ] && cat "$base$cg/pids.max" > pids_max.txt && break
done
{FORK_BOMB}"#
        ),
        "processes = 40",
    );
    run_once(&loopx);
    let started: u32 = read(&loopx, "started.txt").trim().parse().expect("a count");
    assert!(
        (5..40).contains(&started),
        "as {}: the slice started {started} children under a limit of 40",
        who()
    );
    if cgroup_expected() {
        let contained = containment(&loopx);
        assert!(contained.ends_with("+cgroup"), "as {}: {contained}", who());
        assert_eq!(
            read(&loopx, "pids_max.txt").trim(),
            "40",
            "as {}: the slice's cgroup holds the profile's limit",
            who()
        );
    }
}

/// `status` says what contains each running slice, as its record says: the probe's answer is
/// not taken on trust.
#[test]
fn status_says_what_contains_a_running_slice() {
    let loopx = attacker_with(
        "touch started\nwhile [ ! -f release ]; do sleep 0.05; done\n",
        "",
    );
    let mut bg = Background::start(&loopx, &["--max-slices", "1"]);
    bg.wait_for("the slice", |e| e["event"] == "slice_started");
    wait_file(&loopx.path().join("started"));
    let shown = wait_for_some(
        &format!("as {}: the containment shown", who()),
        SOON,
        || {
            let status = loopx.ok(&["status"]).stdout;
            let line = status.lines().find(|l| l.contains("s1") && l.contains('['));
            line.map(str::to_owned)
        },
    );
    std::fs::write(loopx.path().join("release"), "").expect("release the agent");
    let (code, _) = bg.finish();
    assert_eq!(code, 0);
    assert!(
        shown.contains("[namespaces+landlock"),
        "as {}: {shown}",
        who()
    );
    assert!(
        shown.contains(&format!("[{}]", containment(&loopx))),
        "{shown}"
    );
}

/// A `loopx-<uid>` in the temp dir that is not this user's directory (another user made it
/// first; or, in a user namespace where this user is uid 0, the real root's) is passed over:
/// the slice's room goes in `loopx-<uid>.1`. It failed every slice before.
#[test]
fn a_rooms_directory_taken_by_someone_else_is_passed_over() {
    let loopx = attacker_with("echo contained > ran.txt\n", "");
    let temp = tempfile::Builder::new()
        .prefix("lx")
        .tempdir_in("/tmp")
        .expect("a short temp dir");
    let uid = nix::unistd::getuid();
    std::fs::write(temp.path().join(format!("loopx-{uid}")), "not a directory").expect("taken");
    let dir = temp.path().display().to_string();
    let run = loopx.run_env(&["run", "--once", "--json"], &[("TMPDIR", dir.as_str())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.json()["slice"]["outcome"],
        "completed",
        "{}",
        run.stdout
    );
    assert_eq!(read(&loopx, "ran.txt"), "contained\n");
    assert!(temp.path().join(format!("loopx-{uid}.1")).is_dir());
}

/// `PTRACE_ATTACH` to `pid` from a process of this user: `-1` when refused.
fn attach_from_here(pid: u32) -> String {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import ctypes; libc = ctypes.CDLL(None, use_errno=True); print(libc.ptrace(16, {pid}, 0, 0))"
        ))
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The guard against being traced holds as whoever runs loopx: an agent cannot find, signal
/// or trace `loopx run`, nor its slice's init; and as a normal user no other process of the
/// person's can trace `loopx run` or read its environment (it is not dumpable). The probe
/// that made the sandbox work for a normal user runs in a fresh process and never makes loopx
/// itself dumpable.
#[test]
fn neither_the_supervisor_nor_the_slice_s_init_can_be_traced() {
    let loopx = attacker_with(
        "while [ ! -f supervisor.pid ]; do sleep 0.05; done\n\
         pid=$(cat supervisor.pid)\n\
         kill -0 \"$pid\" 2> /dev/null; echo $? > signal.rc\n\
         python3 -c \"import ctypes; libc = ctypes.CDLL(None, use_errno=True); print(libc.ptrace(16, $pid, 0, 0), libc.ptrace(16, 1, 0, 0))\" > attach.txt 2>&1\n\
         touch traced\n\
         while [ ! -f release ]; do sleep 0.05; done\n",
        "",
    );
    let bg = Background::start(&loopx, &["--max-slices", "1"]);
    let supervisor = bg.child.id();
    std::fs::write(loopx.path().join("supervisor.pid"), supervisor.to_string()).expect("pid");
    wait_file(&loopx.path().join("traced"));
    // From outside the slice, as this user (not as root, who may trace anything: an attach
    // would stop the supervisor).
    let root = nix::unistd::getuid().is_root();
    let outside = (!root).then(|| attach_from_here(supervisor));
    let environ = std::fs::read(format!("/proc/{supervisor}/environ"));
    std::fs::write(loopx.path().join("release"), "").expect("release the agent");
    let (code, _) = bg.finish();
    assert_eq!(code, 0);
    assert_ne!(read(&loopx, "signal.rc").trim(), "0", "as {}", who());
    assert_eq!(
        read(&loopx, "attach.txt").trim(),
        "-1 -1",
        "as {}: PTRACE_ATTACH to loopx run and to the slice's init",
        who()
    );
    if !root {
        assert_eq!(
            outside.as_deref(),
            Some("-1"),
            "as {}: traced loopx run from outside",
            who()
        );
        assert!(
            environ.is_err(),
            "as {}: read loopx run's environment",
            who()
        );
    }
}

/// Runs `loopx ARGS` in the project inside a user namespace of its own whose limit on nested
/// user namespaces is 0: the probe's `unshare` fails there with `ENOSPC`, as on a machine
/// whose `user.max_user_namespaces` is 0.
fn without_user_namespaces(loopx: &Loopx, args: &[&str]) -> crate::support::Run {
    let out = std::process::Command::new("unshare")
        .args([
            "-r",
            "--",
            "sh",
            "-c",
            r#"echo 0 > /proc/sys/user/max_user_namespaces && exec "$@""#,
            "sh",
            crate::support::LOOPX,
            "--project",
        ])
        .arg(loopx.path())
        .args(args)
        .output()
        .expect("unshare runs (util-linux)");
    crate::support::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `doctor` names the step of the set-up that failed, its errno and the fix for that step (it
/// said "this kernel lacks unprivileged user namespaces" with a sysctl hint whatever failed),
/// and a slice run there records what it really had.
#[test]
fn doctor_names_the_step_that_failed_and_the_slice_says_what_it_had() {
    let loopx = attacker_with("echo ran > ran.txt\n", "");
    let doctor = without_user_namespaces(&loopx, &["doctor", "--json"]);
    let out = doctor.json();
    let sandbox = out["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "sandbox").cloned())
        .unwrap_or_else(|| panic!("no sandbox check: {out}"));
    assert_eq!(sandbox["warning"], true, "{sandbox}");
    let detail = sandbox["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("step `unshare` failed with ENOSPC"),
        "{detail}"
    );
    assert!(detail.contains("user.max_user_namespaces"), "{detail}");
    let run = without_user_namespaces(&loopx, &["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.json()["slice"]["outcome"],
        "completed",
        "{}",
        run.stdout
    );
    assert_eq!(read(&loopx, "ran.txt"), "ran\n");
    let contained = containment(&loopx);
    assert!(
        contained.starts_with("landlock"),
        "as {}: the record says what the slice had: {contained}",
        who()
    );
}

/// An agent that makes every user namespace the machine allows (about 96,000 here, by holding
/// one per process) made the next `loopx run`'s probe fail with `ENOSPC`, and that run's slices
/// went without their namespaces, the store in reach. The slice's own user namespace now
/// bounds those made beneath it.
#[test]
fn a_slice_cannot_exhaust_the_machine_s_user_namespaces() {
    let loopx = attacker_with(
        r#"cat /proc/sys/user/max_user_namespaces > max.txt
python3 -c '
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
kids, made = [], 0
r, w = os.pipe()
for _ in range(300):
    pid = os.fork()
    if pid == 0:
        ok = libc.unshare(0x10000000) == 0
        os.write(w, b"1" if ok else b"0")
        time.sleep(20)
        os._exit(0)
    kids.append(pid)
for _ in kids:
    made += os.read(r, 1) == b"1"
open("made.txt", "w").write(str(made))
for k in kids:
    os.kill(k, 9)
    os.waitpid(k, 0)
'"#,
        "processes = 400",
    );
    run_once(&loopx);
    assert_eq!(read(&loopx, "max.txt").trim(), "256", "as {}", who());
    let made: u32 = read(&loopx, "made.txt").trim().parse().expect("a count");
    assert!(
        (200..=256).contains(&made),
        "as {}: the slice made {made} user namespaces",
        who()
    );
}

/// Run as root, the agent is uid 0 in the slice's user namespace, and held every capability
/// there: it opened the hidden `.loopx/` by file handle (`open_by_handle_at`) beneath the mount
/// covering it and read the store. The agent's exec now gets no capability in the slice.
#[test]
fn an_agent_cannot_open_the_hidden_store_by_file_handle() {
    let loopx = attacker_with(
        r#"grep CapEff /proc/self/status > caps.txt
python3 -c '
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
class FH(ctypes.Structure):
    _fields_ = [("n", ctypes.c_uint), ("t", ctypes.c_int), ("h", ctypes.c_ubyte * 128)]
here, mount = FH(), ctypes.c_int()
here.n = 128
libc.name_to_handle_at(-100, b".", ctypes.byref(here), ctypes.byref(mount), 0)
ino = struct.unpack("<I", bytes(here.h[:4]))[0]
root = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
said = "not found"
for cand in list(range(ino + 1, ino + 3000)) + list(range(max(2, ino - 3000), ino)):
    h = FH()
    h.n, h.t = 8, here.t
    struct.pack_into("<II", (ctypes.c_char * 8).from_buffer(h.h), 0, cand, 0)
    fd = libc.open_by_handle_at(root, ctypes.byref(h), os.O_RDONLY | os.O_DIRECTORY)
    if fd < 0:
        if ctypes.get_errno() == 1:
            said = "refused"
            break
        continue
    if "state.redb" in os.listdir(fd):
        said = "opened the store"
        break
    os.close(fd)
open("handle.txt", "w").write(said)
'"#,
        "",
    );
    run_once(&loopx);
    assert_eq!(
        read(&loopx, "caps.txt").split_whitespace().nth(1),
        Some("0000000000000000"),
        "as {}: the agent holds capabilities",
        who()
    );
    assert_ne!(
        read(&loopx, "handle.txt"),
        "opened the store",
        "as {}",
        who()
    );
}

/// An agent killed by its slice's memory limit (`[limits] memory_total`, the cgroup's) was
/// reported as "killed by a signal before a final result": nothing said which limit. The slice
/// now says so, from the cgroup's own count of OOM kills, in its reason, exit and handoff.
/// (`memory` caps each process's data below what `tail` would take without a cgroup.)
#[test]
fn a_slice_killed_by_its_memory_limit_says_so() {
    let loopx = attacker_with(
        "exec tail /dev/zero\n",
        "memory_total = \"200MiB\"\nmemory = \"600MiB\"",
    );
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "as {}: {}{}", who(), run.stdout, run.stderr);
    let contained = containment(&loopx);
    if !contained.ends_with("+cgroup") {
        assert!(!cgroup_expected(), "as {}: {contained}", who());
        eprintln!(
            "skipped as {}: no cgroup for the slice ({contained}), so no memory limit of the slice's to hit",
            who()
        );
        return;
    }
    let slice = &run.json()["slice"];
    assert_eq!(slice["outcome"], "failed", "as {}: {slice}", who());
    let reason = slice["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("killed by its memory limit (200 MiB)"),
        "as {}: {slice}",
        who()
    );
    assert!(!reason.contains("killed by a signal"), "{slice}");
    assert_eq!(slice["exit"], "signal SIGKILL (memory limit)", "{slice}");
    // The handoff the next slice and the person read says it too.
    let todo = loopx.ok(&["todo", "show", "t1"]).stdout;
    assert!(todo.contains("memory limit (200 MiB)"), "{todo}");
}
