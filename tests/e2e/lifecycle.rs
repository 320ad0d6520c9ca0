//! A slice always ends, fenced, and nothing it reported is lost (issue 11): every case a
//! demanding user met, through the real binary, with shell-script agents on the `generic`
//! adapter and the real store held busy by this test.

use std::path::Path;
use std::time::{Duration, Instant};

use loopx_kernel::{Project, Store};
use serde_json::Value;

use crate::support::{
    Background, LOOPX, Loopx, alive, event, read_pid, script_agent, todo_state, wait_for,
};

/// Prints a `loopx-report` block with `json` inside.
fn report_block(json: &str) -> String {
    format!("printf '%s\\n' '```loopx-report' '{json}' '```'")
}

/// The events of a `loopx run --json`.
fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn touch(path: &Path) {
    std::fs::write(path, b"").expect("touch");
}

/// A project with a goal, one script agent `a` and one todo.
fn project(script: &str, limits: &str) -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(&loopx, "a", script, limits);
    loopx.ok(&["todo", "add", "Tidy the README"]);
    loopx
}

/// Nothing is recorded as running, and `loopx doctor` finds nothing wrong.
fn settled(loopx: &Loopx) {
    let status = loopx.ok(&["status", "--json"]).json();
    assert_eq!(status["running"], Value::Array(vec![]), "{status}");
    let doctor = loopx.run(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
}

fn slice(loopx: &Loopx, id: &str) -> Value {
    let events = loopx.ok(&["log", "--json", "--limit", "10000"]).stdout;
    events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["kind"] == "slice_ended" && e["data"]["slice"] == id)
        .map(|e| e["data"].clone())
        .next()
        .unwrap_or(Value::Null)
}

/// The newest evidence of kind `slice` for `slice`.
fn slice_evidence(loopx: &Loopx, slice: &str) -> Value {
    let list = loopx
        .ok(&["evidence", "list", "--json", "--limit", "100"])
        .json();
    list["evidence"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|e| e["kind"] == "slice" && e["slice"] == slice)
        .cloned()
        .unwrap_or_else(|| panic!("no slice evidence for {slice}: {list}"))
}

/// Waits for the flag, then reports done.
fn waits_then_reports_done() -> String {
    format!(
        "cat >/dev/null\ntouch started.flag\nwhile [ ! -e go.flag ]; do sleep 0.05; done\n{}",
        report_block(r#"{"status":"done","summary":"tidied the README"}"#)
    )
}

/// A `loopx run --max-slices 1` whose agent reports done once told to, with the store's write
/// lock held by this test for `hold` from that moment. Writers give up after 300 ms; a
/// writeback, and then the slice's guard, keep trying for six times that (1.8 s each).
fn busy_through_the_writeback(hold: Duration) -> (Loopx, Background) {
    let loopx = project(&waits_then_reports_done(), "max_time = \"60s\"");
    let bg = Background::start_env(
        &loopx,
        &["--max-slices", "1"],
        &[("LOOPX_STORE_WAIT_MS", "300")],
    );
    crate::support::wait_file(&loopx.path().join("started.flag"));
    let project = Project::at(loopx.path()).expect("project");
    let store = Store::open(&project).expect("store");
    let lock = store.lock_writes().expect("the write lock");
    touch(&loopx.path().join("go.flag"));
    // A fixed wait on purpose: how long the store stays busy is what the test varies.
    std::thread::sleep(hold);
    drop(lock);
    (loopx, bg)
}

#[test]
fn issue_11_a_store_busy_through_the_writeback_loses_nothing() {
    let (loopx, mut bg) = busy_through_the_writeback(Duration::from_millis(1_000));
    let ended = bg.wait_for("the slice's end", |e| e["event"] == "slice_ended");
    assert_eq!(
        (&ended["report"], &ended["todo_state"]),
        (&"done".into(), &"done".into()),
        "{ended}"
    );
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(todo_state(&loopx, "t1"), "done");
    settled(&loopx);
}

#[test]
fn issue_11_a_store_busy_past_the_writeback_ends_the_slice_interrupted_and_frees_the_todo() {
    // Past the writeback's patience (1.8 s), within the guard's (another 1.8 s).
    let (loopx, mut bg) = busy_through_the_writeback(Duration::from_millis(2_600));
    // The guard records s1 interrupted and releases t1; the next slice repairs it.
    let ended = bg.wait_for("the repair's end", |e| e["event"] == "slice_ended");
    assert_eq!(
        (&ended["id"], &ended["kind"]),
        (&"s2".into(), &"repair".into())
    );
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "{events:#?}");
    let s1 = slice(&loopx, "s1");
    assert_eq!(s1["outcome"], "interrupted", "{s1}");
    let why = slice_evidence(&loopx, "s1")["summary"].clone();
    assert!(
        why.as_str()
            .is_some_and(|w| w.contains("writeback could not be recorded") && w.contains("busy")),
        "{why}"
    );
    assert_eq!(todo_state(&loopx, "t1"), "done", "the repair finished it");
    settled(&loopx);
}

#[test]
fn issue_11_a_slice_whose_end_cannot_be_recorded_for_a_while_is_closed_by_its_own_supervisor() {
    // Past both the writeback's and the guard's patience (1.8 s each).
    let (loopx, mut bg) = busy_through_the_writeback(Duration::from_secs(5));
    let writable = std::time::Instant::now();
    // Nothing owns s1 in the supervisor any more: it recovers its own slice, and the next
    // slice repairs the todo. It tries every few seconds until the store shows s1 ended, so
    // the recovery comes soon after the store is writable again, however loaded the machine
    // (a try that failed used to wait for the minute's recovery).
    let recovered = bg.wait_for("the recovery", |e| e["event"] == "recovered");
    assert!(
        writable.elapsed() < Duration::from_secs(40),
        "recovered {:?} after the store was writable again",
        writable.elapsed()
    );
    assert_eq!(recovered["slice"], "s1", "{recovered}");
    assert_eq!(recovered["released"], true, "{recovered}");
    let ended = bg.wait_for("the repair's end", |e| e["event"] == "slice_ended");
    assert_eq!(
        (&ended["id"], &ended["kind"]),
        (&"s2".into(), &"repair".into())
    );
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "a busy store is a passing error: {events:#?}");
    let error = event(&events, "agent_error");
    assert!(
        error[0]["error"].as_str().is_some_and(|e| e
            .contains("slice s1 ended but neither its writeback nor its end could be recorded")),
        "{events:#?}"
    );
    assert!(event(&events, "agent_stopped").is_empty(), "{events:#?}");
    assert_eq!(slice(&loopx, "s1")["outcome"], "interrupted");
    assert_eq!(todo_state(&loopx, "t1"), "done");
    settled(&loopx);
}

#[test]
fn issue_11_report_done_then_more_work_finishes_the_slice_normally() {
    let script = format!(
        "cat >/dev/null\n\"{LOOPX}\" report done --summary 'done early'\nsleep 6\n{}",
        report_block(r#"{"status":"done","summary":"done, then tidied some more"}"#)
    );
    let loopx = project(&script, "max_time = \"60s\"");
    // Claims of 3 s, renewed every second: renewals run while the agent works on.
    let run = loopx.run_env(
        &["run", "--max-slices", "1", "--json"],
        &[("LOOPX_LEASE_MAX", "3s")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ended: Value = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .find(|e| e["event"] == "slice_ended")
        .expect("the slice's end");
    assert_eq!(ended["outcome"], "completed", "{ended}");
    assert_eq!(ended["todo_state"], "done", "{ended}");
    assert_eq!(ended["writeback"], "applied", "{ended}");
    let handoff = loopx.ok(&["handoff", "--todo", "t1"]).stdout;
    assert!(
        handoff.contains("done, then tidied some more"),
        "the report's handoff: {handoff}"
    );
    settled(&loopx);
}

#[test]
fn issue_11_one_bad_item_in_a_report_loses_nothing_else() {
    let report = r#"{"status":"done","summary":"tidied the README","evidence":[{"kind":"test","summary":"markdownlint: clean"}],"handoff":"check the links next","next_todos":[{"title":"Review the README","role":"Reviewer Team"},{"title":"Fix the links","role":"executor"}],"question":{"text":"  ","options":[]}}"#;
    let script = format!("cat >/dev/null\n{}", report_block(report));
    let loopx = project(&script, "max_time = \"60s\"");
    let run = loopx.run(&["run", "--max-slices", "1", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ended: Value = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .find(|e| e["event"] == "slice_ended")
        .expect("the slice's end");
    assert_eq!(ended["writeback"], "applied", "{ended}");
    assert_eq!(
        ended["todo_state"], "done",
        "the claim is not left behind: {ended}"
    );
    assert_eq!(ended["new_todos"], serde_json::json!(["t2"]), "{ended}");
    let dropped: Vec<&str> = ended["dropped"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert!(
        dropped[0].contains("`Review the README`") && dropped[0].contains("Reviewer Team"),
        "{dropped:?}"
    );
    assert!(dropped[1].contains("the question"), "{dropped:?}");
    let evidence = loopx.ok(&["evidence", "list", "--json"]).json();
    let summaries: Vec<&str> = evidence["evidence"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["summary"].as_str())
        .collect();
    assert!(
        summaries.contains(&"markdownlint: clean"),
        "the report's evidence: {summaries:?}"
    );
    assert!(
        summaries
            .iter()
            .filter(|s| s.starts_with("dropped from the agent's report"))
            .count()
            == 2,
        "each dropped item is a note: {summaries:?}"
    );
    let handoff = loopx.ok(&["handoff", "--todo", "t1"]).stdout;
    assert!(handoff.contains("check the links next"), "{handoff}");
    settled(&loopx);
}

#[test]
fn issue_11_a_released_claim_fences_the_agent_still_running() {
    let script = format!(
        "cat >/dev/null\ntouch started.flag\nwhile [ ! -e go.flag ]; do sleep 0.05; done\n\"{LOOPX}\" report done\necho $? > report.rc\n{}",
        report_block(r#"{"status":"done","summary":"tidied it"}"#)
    );
    let loopx = project(&script, "max_time = \"60s\"");
    let mut bg = Background::start(&loopx, &["--max-slices", "1"]);
    crate::support::wait_file(&loopx.path().join("started.flag"));
    // A person takes the claim back while the agent works.
    loopx.ok(&["todo", "release", "t1", "--agent", "a", "--epoch", "1"]);
    touch(&loopx.path().join("go.flag"));
    let ended = bg.wait_for("the slice's end", |e| e["event"] == "slice_ended");
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "{events:#?}");
    let rc = std::fs::read_to_string(loopx.path().join("report.rc")).expect("rc");
    assert_eq!(
        rc.trim(),
        loopx_cli::exit_code::CONFLICT.to_string(),
        "`report done` under the released claim is refused"
    );
    assert_eq!(ended["writeback"], "stale_epoch", "{ended}");
    assert_eq!(
        todo_state(&loopx, "t1"),
        "open",
        "not done by the fenced agent"
    );
    settled(&loopx);
}

#[test]
fn issue_11_only_the_holder_finishes_a_todo_under_an_epoch() {
    let loopx = crate::support::demo_project(&["victim", "other"]);
    loopx.ok(&["todo", "add", "Write the intro"]);
    loopx.ok(&["todo", "add", "Write the outro"]);
    // Never held by anyone: no epoch finishes it.
    let never = loopx.run(&["todo", "done", "t1", "--agent", "victim", "--epoch", "0"]);
    assert_eq!(
        never.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{}",
        never.stderr
    );
    // Held by `victim` and given back: its old epoch finishes nothing any more.
    loopx.ok(&["todo", "claim", "t2", "--agent", "victim"]);
    loopx.ok(&["todo", "release", "t2", "--agent", "victim", "--epoch", "1"]);
    let released = loopx.run(&["todo", "done", "t2", "--agent", "victim", "--epoch", "1"]);
    assert_eq!(
        released.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{}",
        released.stderr
    );
    assert!(
        released.stderr.contains("stale epoch"),
        "{}",
        released.stderr
    );
    // Held by `victim`: another agent presenting its epoch is not the holder.
    loopx.ok(&["todo", "claim", "t2", "--agent", "victim"]);
    let other = loopx.run(&["todo", "done", "t2", "--agent", "other", "--epoch", "3"]);
    assert_eq!(
        other.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{}",
        other.stderr
    );
    assert_eq!(todo_state(&loopx, "t1"), "open");
    assert_eq!(todo_state(&loopx, "t2"), "claimed");
}

#[test]
fn issue_11_sigterm_stops_run_once_like_the_loop() {
    let loopx = project(
        "cat >/dev/null\necho $$ > agent.pid\nsleep 300",
        "max_time = \"5m\"\ngrace = \"1s\"",
    );
    let child = loopx
        .command(&["run", "--once", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("loopx run --once starts");
    let agent = read_pid(&loopx.path().join("agent.pid"));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    let signalled = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
    let out = child.wait_with_output().expect("exits");
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "stopped within the grace: {:?}",
        signalled.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(i32::from(loopx_cli::exit_code::INTERRUPTED)),
        "{out:?}"
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["slice"]["outcome"], "interrupted", "{json}");
    assert!(!alive(agent), "the agent {agent} was stopped");
    assert_eq!(todo_state(&loopx, "t1"), "open", "its claim released");
    settled(&loopx);
}

/// An agent that fails every time.
const FAILS: &str = "cat >/dev/null\necho 'cannot do it'\nexit 1";

fn stall_gates(loopx: &Loopx) -> Vec<Value> {
    let gates = loopx.ok(&["gate", "list", "--all", "--json"]).json();
    gates["gates"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|g| {
            g["question"]
                .as_str()
                .is_some_and(|q| q.contains("without progress"))
        })
        .cloned()
        .collect()
}

#[test]
fn issue_11_a_stall_gate_answered_retry_gives_a_fresh_budget_and_drop_drops() {
    let loopx = project(FAILS, "max_time = \"20s\"");
    let run = loopx.run(&["run", "--on-gate", "exit", "--json"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    let gates = stall_gates(&loopx);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    loopx.ok(&["gate", "answer", "q1", "--option", "1"]);

    // A fresh budget: three more slices run before the same stall asks again.
    let run = loopx.run(&["run", "--on-gate", "exit", "--json"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    let ran = run
        .stdout
        .lines()
        .filter(|l| l.contains("\"event\":\"slice_ended\""))
        .count();
    assert_eq!(ran, 3, "{}", run.stdout);
    let gates = stall_gates(&loopx);
    assert_eq!(gates.len(), 2, "one gate per stall: {gates:#?}");
    assert_eq!(gates[0]["options"], serde_json::json!(["retry", "drop"]));
    assert_eq!(gates[0]["kind"]["stall"]["todo"], "t1", "{gates:#?}");
    let log = loopx.ok(&["log", "--json", "--limit", "10000"]).stdout;
    assert!(log.contains("\"kind\":\"todo_retried\""), "recorded");

    loopx.ok(&["gate", "answer", "q2", "drop"]);
    assert_eq!(todo_state(&loopx, "t1"), "dropped");
}

#[test]
fn issue_11_a_profile_fixed_during_the_run_is_picked_up() {
    let loopx = project("cat >/dev/null\necho 'fine'", "max_time = \"20s\"");
    let profile = loopx.path().join(".loopx/profiles/a.toml");
    let good = std::fs::read_to_string(&profile).expect("profile");
    std::fs::write(&profile, good.replace("adapter = ", "adaptor = ")).expect("a typo");
    let mut bg = Background::start(&loopx, &["--max-slices", "1"]);
    bg.wait_for("the profile's error", |e| e["event"] == "agent_error");
    std::fs::write(&profile, good).expect("fixed");
    bg.wait_for("a slice with the fixed profile", |e| {
        e["event"] == "slice_ended"
    });
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "{events:#?}");
    assert!(event(&events, "agent_stopped").is_empty(), "{events:#?}");
}

#[test]
fn issue_11_init_is_atomic_and_safe_to_repeat() {
    // On a healthy project: nothing changes, and it says so.
    let loopx = Loopx::new();
    let before = std::fs::read(loopx.store_path()).expect("the store");
    let again = loopx.ok(&["init", "--json"]).json();
    assert_eq!(again["created"], false, "{again}");
    assert_eq!(
        std::fs::read(loopx.store_path()).expect("the store"),
        before,
        "nothing changed"
    );

    // Killed at any moment: no project, or a whole one; `init` works afterwards either way.
    for i in 0..30u64 {
        let dir = Loopx::empty();
        // Each pass kills `init` at a later moment.
        dir.killed_after(&["init"], Duration::from_micros(i * 500));
        let run = dir.run(&["init"]);
        assert_eq!(
            run.code,
            0,
            "after a kill at {} µs: {}",
            i * 500,
            run.stderr
        );
        let doctor = dir.run(&["doctor"]);
        assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
        let strays: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .filter(|e| e.file_name() != ".loopx")
            .collect();
        assert!(strays.is_empty(), "nothing but .loopx is left: {strays:?}");
    }

    // Left half-made by an older loopx: an error that names the way out.
    let half = Loopx::empty();
    let state = half.path().join(".loopx");
    std::fs::create_dir(&state).expect("mkdir");
    std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod");
    std::fs::write(state.join("state.redb"), b"").expect("an empty store");
    let run = half.run(&["init"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::STORE),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("is empty") && run.stderr.contains("rm -r"),
        "{}",
        run.stderr
    );
}

/// The disk-full scenario, run inside a user and mount namespace (`unshare -rm`) with the
/// project on a small tmpfs: the agent starts, the disk fills, the agent reports done. Slice
/// logs are on a file system of their own, so that the room a log gives back when it ends (see
/// `loopx-pty`'s capture/log.rs) does not make room for the store again.
const DISK_FULL: &str = r#"set -u
P=$1 OUT=$2 L=$3
mount -t tmpfs -o size=8m tmpfs "$P" || exit 99
cd "$P" || exit 99
"$L" init >/dev/null && "$L" goal start "Tidy the docs" >/dev/null || exit 98
mount -t tmpfs -o size=16m,mode=0700 tmpfs .loopx/slices || exit 99
cat > agent.sh <<'SH'
#!/bin/sh
cat >/dev/null
touch started.flag
while [ ! -e go.flag ]; do sleep 0.05; done
echo 'tidied the README, all of it'
printf '%s\n' '```loopx-report' '{"status":"done","summary":"tidied the README"}' '```'
SH
chmod +x agent.sh
printf 'adapter = "generic"\nprogram = "%s/agent.sh"\npermission = "workspace-write"\n\n[limits]\nmax_time = "60s"\n' "$P" > .loopx/profiles/a.toml
"$L" agent add a --profile a >/dev/null && "$L" todo add "Tidy the README" >/dev/null || exit 97
LOOPX_STORE_WAIT_MS=200 "$L" run --max-slices 1 --json > "$OUT/run.jsonl" 2> "$OUT/run.err" &
run=$!
i=0; while [ ! -e started.flag ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
dd if=/dev/zero of=filler bs=64k 2>/dev/null
touch go.flag
wait $run; echo $? > "$OUT/run.code"
cp .loopx/slices/s1.log "$OUT/s1.log"
rm filler
"$L" run --once --json > "$OUT/once.json" 2> "$OUT/once.err"; echo $? > "$OUT/once.code"
"$L" doctor > "$OUT/doctor.txt" 2>&1; echo $? > "$OUT/doctor.code"
"$L" status --json > "$OUT/status.json"
"$L" todo show t1 --json > "$OUT/t1.json"
"#;

#[test]
fn issue_11_a_full_disk_is_named_never_done_and_recovered_once_there_is_room() {
    let project = tempfile::tempdir().expect("project dir");
    let out = tempfile::tempdir().expect("results dir");
    let script = out.path().join("disk-full.sh");
    std::fs::write(&script, DISK_FULL).expect("script");
    let status = std::process::Command::new("unshare")
        .args(["-rm", "sh"])
        .arg(&script)
        .arg(project.path())
        .arg(out.path())
        .arg(LOOPX)
        .env_remove("LOOPX_PROJECT")
        .env_remove("LOOPX_SLICE")
        .status()
        .expect("unshare runs (user and mount namespaces are needed for this test)");
    assert!(
        status.success(),
        "the scenario failed to set up: {status:?}"
    );
    let read = |name: &str| {
        std::fs::read_to_string(out.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    // The run does not claim "done": it exits with the store's code and names the cause.
    assert_eq!(
        read("run.code").trim(),
        loopx_cli::exit_code::STORE.to_string(),
        "{}\n{}",
        read("run.jsonl"),
        read("run.err")
    );
    let err = read("run.err");
    assert!(err.contains("no space left on the device"), "{err}");
    assert!(
        !read("run.jsonl").contains("\"reason\":\"goal\""),
        "never done"
    );
    let stopped = event(&jsonl(&read("run.jsonl")), "agent_stopped")
        .first()
        .map(|e| e["reason"].to_string())
        .unwrap_or_default();
    // Usually the slice's (smaller) end still fits and it is recorded interrupted; if even
    // that does not, the next run recovers it. Either way the agent stops after one slice.
    assert!(
        stopped.contains("slice s1 ran, but what it did could not be written back")
            || stopped.contains("slice s1 ended but neither its writeback nor its end"),
        "the agent stops after one lost writeback, not after a repair lost too: {stopped}"
    );
    // The agent's output is all in its log.
    assert!(read("s1.log").contains("tidied the README, all of it"));
    // With room again, the next run repairs the todo (s1 was recorded interrupted).
    assert_eq!(read("once.code").trim(), "0", "{}", read("once.err"));
    let once: Value = serde_json::from_str(&read("once.json")).expect("JSON");
    assert_eq!(once["slice"]["kind"], "repair", "{once}");
    assert_eq!(read("doctor.code").trim(), "0", "{}", read("doctor.txt"));
    let status: Value = serde_json::from_str(&read("status.json")).expect("JSON");
    assert_eq!(status["running"], Value::Array(vec![]), "{status}");
    let t1: Value = serde_json::from_str(&read("t1.json")).expect("JSON");
    assert_eq!(t1["todo"]["state"], "done", "{t1}");
}

#[test]
fn issue_11_a_hanging_git_costs_the_scope_check_not_the_loop() {
    let loopx = project("cat >/dev/null\necho fine", "max_time = \"20s\"");
    let (_bin, path) = crate::support::hanging_git();
    let started = Instant::now();
    let run = loopx.run_env(
        &["run", "--max-slices", "1", "--json"],
        &[("PATH", &path), ("LOOPX_GIT_TIMEOUT", "1s")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "git was stopped at its timeout: {:?}",
        started.elapsed()
    );
    let ended = jsonl(&run.stdout)
        .into_iter()
        .find(|e| e["event"] == "slice_ended")
        .expect("the slice's end");
    assert_eq!(ended["changed_files"], Value::Null, "not checked: {ended}");
    let detail = slice_evidence(&loopx, "s1")["detail"].to_string();
    assert!(
        detail.contains("`git rev-parse` did not finish in 1s and was stopped"),
        "{detail}"
    );
}

/// A project whose notification command runs `command` (with a 1 s timeout), and an agent
/// blocked by a global gate.
fn notifying(command: &str) -> Loopx {
    let loopx = project("cat >/dev/null\necho fine", "max_time = \"20s\"");
    loopx.write_config(format!(
        "[notify]\ncommand = \"{command}\"\ntimeout = \"1s\"\n"
    ));
    crate::support::approve_notifications(&loopx);
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
    loopx
}

#[test]
fn issue_11_a_notification_that_never_reads_or_ends_is_killed_at_its_timeout() {
    let loopx = notifying("sleep 30");
    let started = Instant::now();
    let run = loopx.run(&["run", "--on-gate", "exit"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited {:?} for the notification",
        started.elapsed()
    );
}

/// The children of `pid` running `command`, alive or zombies.
fn children_running(pid: u32, command: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if stat[open + 1..close] == *command && fields.get(1) == Some(&pid.to_string().as_str()) {
            found.extend(
                entry
                    .file_name()
                    .to_str()
                    .and_then(|p| p.parse::<u32>().ok()),
            );
        }
    }
    found
}

#[test]
fn issue_11_orphans_a_notification_leaves_are_reaped() {
    // The notification's background `sleep` outlives it: loopx, a subreaper, adopts it.
    let loopx = notifying("(sleep 0.3 &) ; touch notified.flag ; exit 0");
    let mut bg = Background::start(&loopx, &[]);
    bg.wait_for("the question", |e| e["event"] == "question");
    let pid = bg.child.id();
    // The flag comes after the `sleep` left its subshell: loopx has adopted it.
    crate::support::wait_file(&loopx.path().join("notified.flag"));
    // The loop reaps adopted orphans when it wakes, at most every 5 s (`REAP_EVERY`): the
    // doorbell wakes it, rung each second until the orphan has ended and been reaped.
    let mut rung = Instant::now() - Duration::from_secs(1);
    wait_for("the orphan reaped", Duration::from_secs(15), || {
        if children_running(pid, "sleep").is_empty() {
            return true;
        }
        if rung.elapsed() >= Duration::from_secs(1) {
            loopx.ok(&["evidence", "add", "A ring of the doorbell"]);
            rung = Instant::now();
        }
        false
    });
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    bg.finish();
}
