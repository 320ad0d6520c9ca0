//! `loopx report …`: an agent's own writes from inside its slice, through the real binary and a
//! real slice.
//!
//! The agent is a shell script run by `loopx run --once` in its sandbox. It calls
//! `loopx --json report …` and keeps each call's output and exit code in the work tree
//! (`NAME.out`, `NAME.err`, `NAME.rc`), which the test reads after the slice. Where the test
//! must act while the slice runs, the script waits for a file `go` after writing `ready`.

use serde_json::Value;

use crate::support::{LOOPX, Loopx, Run, script_agent, wait_file};

/// `r NAME ARGS...`: one report, its output kept as NAME.out/.err/.rc.
fn prelude() -> String {
    format!(
        "r() {{ n=$1; shift; '{LOOPX}' --json report \"$@\" > $n.out 2> $n.err; echo $? > $n.rc; }}\n\
         cat > /dev/null\n"
    )
}

/// A project with a goal, t1, and agent `exec` running `script` (after the prelude).
fn scripted(script: &str) -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    script_agent(
        &loopx,
        "exec",
        &format!("{}{script}", prelude()),
        "max_time = \"2m\"\nidle_timeout = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Write the notes"]);
    loopx
}

/// What the report NAME printed and how it exited.
fn outcome(loopx: &Loopx, name: &str) -> Run {
    let read = |ext: &str| {
        std::fs::read_to_string(loopx.path().join(format!("{name}.{ext}")))
            .unwrap_or_else(|e| panic!("{name}.{ext}: {e}"))
    };
    Run {
        code: read("rc").trim().parse().expect("an exit code"),
        stdout: read("out"),
        stderr: read("err"),
    }
}

fn written(loopx: &Loopx, name: &str) -> Value {
    let run = outcome(loopx, name);
    assert_eq!(run.code, 0, "report {name}: {}{}", run.stdout, run.stderr);
    run.json()
}

fn list(loopx: &Loopx, args: &[&str], key: &str) -> Vec<Value> {
    let out = loopx.ok(&[args, &["--json"][..]].concat()).json();
    out[key].as_array().expect("a list").clone()
}

fn event_kinds(loopx: &Loopx) -> Vec<(String, Value)> {
    loopx
        .ok(&["log", "--json", "-n", "1000"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .map(|e| (e["kind"].as_str().unwrap_or_default().to_owned(), e))
        .collect()
}

/// `loopx run --once` in the background; the script waits for the test at its handshake.
fn run_in_background(loopx: &Loopx) -> std::process::Child {
    let child = loopx
        .command(&["run", "--once", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("loopx run --once starts");
    wait_file(&loopx.path().join("ready"));
    child
}

/// Waits for `ready` (and what it says), lets the test act, then lets the script go on.
const HANDSHAKE: &str = "touch ready\nwhile [ ! -f go ]; do sleep 0.05; done\n";

#[test]
fn report_outside_a_slice_is_a_usage_error() {
    let loopx = scripted("true");
    let run = loopx.run(&["report", "evidence", "note", "hello"]);
    assert_eq!(run.code, i32::from(loopx_cli::exit_code::USAGE), "{run:?}");
    assert!(
        run.stderr
            .contains("`loopx report` is for agents inside a slice"),
        "{}",
        run.stderr
    );
    assert!(list(&loopx, &["evidence", "list"], "evidence").is_empty());
}

#[test]
fn report_from_a_running_slice_lands_in_the_kernel() {
    let loopx = scripted(
        "r test evidence test cargo test: 41 passed\n\
         r handoff handoff --done 'Wrote it' --next 'Review it' --file a.rs\n\
         r todo todo 'Review the notes' --role reviewer --priority 3\n\
         r vague ask 'what should I do?'\n\
         r ask ask 'Should the notes be a Markdown list or a table?' --option list --option table\n\
         r done done --summary 'Notes written'\n\
         r again done\n",
    );
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");

    let evidence = written(&loopx, "test");
    let evidence = &evidence["evidence"];
    assert_eq!(evidence["summary"], "cargo test: 41 passed");
    assert_eq!(evidence["kind"], "test");
    assert_eq!(
        (&evidence["slice"], &evidence["todo"]),
        (&Value::from("s1"), &Value::from("t1"))
    );
    assert_eq!(evidence["actor"], "agent:exec");

    let handoff = written(&loopx, "handoff");
    assert_eq!(handoff["handoff"]["slice"], "s1");
    assert_eq!(handoff["handoff"]["next"], "Review it");
    assert_eq!(handoff["handoff"]["files"], serde_json::json!(["a.rs"]));
    let todo = written(&loopx, "todo");
    assert_eq!(todo["todo"]["id"], "t2");
    assert_eq!(todo["todo"]["role"], "reviewer");
    assert_eq!(todo["todo"]["created_by"], "agent:exec");

    let vague = outcome(&loopx, "vague");
    assert_eq!(
        vague.code,
        i32::from(loopx_cli::exit_code::USAGE),
        "{vague:?}"
    );
    let gate = written(&loopx, "ask");
    let gate = &gate["gate"];
    assert_eq!(gate["blocks"]["todos"], serde_json::json!(["t1"]));
    assert_eq!(gate["options"], serde_json::json!(["list", "table"]));
    assert!(
        gate["context"]
            .as_str()
            .expect("context")
            .contains("slice s1"),
        "{gate}"
    );

    // `done` is noted at once and finished by the slice's end, after the scope check.
    let done = written(&loopx, "done");
    assert_eq!(
        done["evidence"]["summary"], "the agent reported t1 done: Notes written",
        "{done}"
    );
    assert_eq!(done["evidence"]["slice"], "s1");
    let t1 = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(t1["todo"]["state"], "done", "{t1}");
    // Done once: a second time is a conflict, not a silent success.
    let again = outcome(&loopx, "again");
    assert_eq!(
        again.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{again:?}"
    );
}

#[test]
fn report_on_a_stale_epoch_is_a_conflict_and_writes_nothing() {
    let loopx = scripted(&format!(
        "{HANDSHAKE}\
         r evidence evidence note late\n\
         r handoff handoff --done late\n\
         r todo todo 'A late idea'\n\
         r ask ask 'Should the late notes be kept or dropped?'\n\
         r done done\n"
    ));
    let mut child = run_in_background(&loopx);
    // The claim moves on while the slice still runs: released (epoch 2), then taken again (3).
    loopx.ok(&["todo", "release", "t1", "--agent", "exec", "--epoch", "1"]);
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    let before = event_kinds(&loopx).len();
    std::fs::write(loopx.path().join("go"), "").expect("go");
    child.wait().expect("the run ends");

    for name in ["evidence", "handoff", "todo", "ask", "done"] {
        let run = outcome(&loopx, name);
        assert_eq!(
            run.code,
            i32::from(loopx_cli::exit_code::CONFLICT),
            "{name}: {run:?}"
        );
        assert!(
            run.stderr.contains("stale epoch for t1")
                && run
                    .stderr
                    .contains("presented epoch 1, the current one is 3"),
            "{}",
            run.stderr
        );
    }
    let agent_writes: Vec<Value> = list(&loopx, &["evidence", "list"], "evidence")
        .into_iter()
        .filter(|e| e["kind"] != "slice")
        .collect();
    assert!(agent_writes.is_empty(), "{agent_writes:?}");
    assert!(list(&loopx, &["gate", "list"], "gates").is_empty());
    // Only the refusals are recorded, each as an audit event.
    let events = event_kinds(&loopx);
    let refused = events[before..]
        .iter()
        .filter(|(kind, e)| kind == "stale_epoch_refused" && e["data"]["action"] == "report")
        .count();
    assert_eq!(refused, 5, "{events:?}");
    assert!(
        !events[before..].iter().any(|(kind, _)| kind == "todo_done"),
        "{events:?}"
    );
}

#[test]
fn report_after_the_slice_ended_finds_no_channel() {
    let loopx = scripted("echo \"$LOOPX_REPORT_SOCKET\" > socket.txt\n");
    loopx.ok(&["run", "--once", "--json"]);
    let socket = std::fs::read_to_string(loopx.path().join("socket.txt")).expect("the path");
    let run = loopx.run_env(
        &["report", "handoff", "--done", "after the end"],
        &[("LOOPX_REPORT_SOCKET", socket.trim())],
    );
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("reports are accepted only while the slice runs"),
        "{}",
        run.stderr
    );
    let todo = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(todo["todo"]["state"], "open", "{todo}");
}

/// Identity comes from the channel, not from anything the agent can set: forged `LOOPX_*`
/// variables change nothing, and a process outside the slice (here: the test itself) that
/// finds the slice's socket is refused, and the attempt is recorded on the slice.
#[test]
fn report_identity_cannot_be_forged() {
    let loopx = scripted(&format!(
        "echo \"$LOOPX_REPORT_SOCKET\" > socket.txt\n\
         LOOPX_AGENT=victim LOOPX_TODO=t9 LOOPX_EPOCH=7 LOOPX_SLICE=s9 r forged evidence note as the victim\n\
         {HANDSHAKE}"
    ));
    let mut child = run_in_background(&loopx);
    let socket = std::fs::read_to_string(loopx.path().join("socket.txt")).expect("the path");
    let outsider = loopx.run_env(
        &["--json", "report", "done"],
        &[("LOOPX_REPORT_SOCKET", socket.trim())],
    );
    std::fs::write(loopx.path().join("go"), "").expect("go");
    child.wait().expect("the run ends");

    assert_eq!(
        outsider.code,
        i32::from(loopx_cli::exit_code::REFUSED),
        "{outsider:?}"
    );
    assert!(
        outsider.stderr.contains("is not part of it"),
        "{}",
        outsider.stderr
    );
    let forged = written(&loopx, "forged");
    assert_eq!(forged["evidence"]["actor"], "agent:exec", "{forged}");
    assert_eq!(forged["evidence"]["todo"], "t1", "{forged}");
    assert_eq!(forged["evidence"]["slice"], "s1", "{forged}");
    let violations: Vec<Value> = list(&loopx, &["evidence", "list"], "evidence")
        .into_iter()
        .filter(|e| e["kind"] == "violation")
        .collect();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("refused a report on slice s1's channel")),
        "{violations:?}"
    );
    let todo = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_ne!(
        todo["todo"]["state"], "done",
        "the outsider's done was refused"
    );
}

#[test]
fn report_cli_demo_slice_reports_through_loopx_and_writes_back() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    loopx.ok(&["agent", "add", "exec", "--profile", "demo"]);
    loopx.ok(&["todo", "add", "Write the notes [demo:report-cli]"]);
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let slice = &run.json()["slice"];
    assert_eq!(slice["outcome"], "completed", "{slice}");
    assert_eq!(slice["writeback"], "applied", "{slice}");
    assert_eq!(slice["todo_state"], "done", "{slice}");

    let todo = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(todo["todo"]["state"], "done");
    // The `test` evidence comes only from `loopx report evidence` (the final report drops it).
    let evidence = list(&loopx, &["evidence", "list"], "evidence");
    let test = evidence
        .iter()
        .find(|e| e["kind"] == "test")
        .unwrap_or_else(|| panic!("the reported test evidence: {evidence:?}"));
    assert_eq!(
        (&test["slice"], &test["todo"]),
        (&Value::from("s1"), &Value::from("t1"))
    );
    // Reported mid-slice, by the agent; done by the writeback, after the slice ended and its
    // changes were checked, once.
    let events = event_kinds(&loopx);
    let at = |kind: &str| {
        events
            .iter()
            .position(|(k, _)| k == kind)
            .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
    };
    assert!(at("todo_done") > at("slice_ended"), "{events:?}");
    assert_eq!(events.iter().filter(|(k, _)| k == "todo_done").count(), 1);
    let handoffs = events
        .iter()
        .filter(|(k, _)| k == "handoff_written")
        .count();
    assert_eq!(handoffs, 2, "the agent's and the writeback's: {events:?}");
    let (_, done) = &events[at("todo_done")];
    assert_eq!(done["actor"], "agent:exec");
}

/// Issue 47, item 8: an agent that reported done through `loopx report done` and printed no
/// report block read as one that reported nothing (`…; no report block`, and a handoff that
/// began `Slice s1 ended completed without a readable report`). Its report and its channel are
/// named: in the run's line, the slice record and the handoff loopx writes.
#[test]
fn a_done_reported_through_loopx_report_is_named_as_a_report() {
    let loopx = scripted("r done done --summary 'notes written'\necho 'all set'\n");
    let once = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(once.code, 0, "{}", once.stderr);
    assert_eq!(outcome(&loopx, "done").code, 0, "the report was written");
    let said = "it reported done through `loopx report`";
    let slice = once.json();
    let reason = slice["slice"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(said), "{slice:#}");
    assert!(!reason.contains("no report block"), "{slice:#}");
    assert_eq!(slice["slice"]["outcome"], "completed", "{slice:#}");
    let handoff = loopx.ok(&["handoff", "--todo", "t1", "--json"]).json();
    let done = handoff["handoff"]["done"].as_str().unwrap_or_default();
    assert!(done.contains(said), "{handoff:#}");
    assert!(!done.contains("without a readable report"), "{handoff:#}");
    assert_eq!(
        list(&loopx, &["todo", "list", "--all"], "todos")[0]["state"],
        "done"
    );
}
