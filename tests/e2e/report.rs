//! `loopx report …`: an agent's own writes from inside its slice, through the real binary.
//!
//! A running slice is made through the kernel (a claim, then a slice record), exactly as the
//! supervisor records one before it spawns; `loopx report` then runs with the environment the
//! supervisor would give the agent. The last test runs a real slice of the demo agent, which
//! calls `loopx report` itself.

use loopx_kernel::model::SliceKind;
use loopx_kernel::store::{NewSlice, SliceEnd};
use loopx_kernel::{Op, Project, SliceId, Store, Timestamp};
use serde_json::Value;

use crate::support::{Loopx, Run};

/// A project with a goal, the demo agent `exec`, and t1 claimed by it (epoch 1).
fn claimed() -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    loopx.ok(&["agent", "add", "exec", "--profile", "demo"]);
    loopx.ok(&["agent", "add", "rev", "--profile", "demo"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    loopx
}

fn store(loopx: &Loopx) -> Store {
    Store::open(&Project::at(loopx.path()).expect("the project")).expect("the store")
}

/// Records slice s1 of `exec` on t1 under epoch 1 as running, as the supervisor does.
pub(crate) fn start_slice(loopx: &Loopx) -> SliceId {
    let new = NewSlice {
        agent: "exec".parse().expect("a name"),
        todo: Some("t1".parse().expect("an id")),
        epoch: Some(1),
        kind: SliceKind::Work,
        profile_hash: "h".into(),
        argv: vec!["agent".into()],
        limit_secs: 600,
        log: None,
        owner: None,
    };
    match store(loopx).apply(Op::SliceStart(new), "agent:exec", Timestamp::now()) {
        Ok(loopx_kernel::store::Applied::Slice(slice)) => slice.id,
        other => panic!("the slice starts: {other:?}"),
    }
}

/// A project whose slice s1 runs, and that slice's environment.
fn running() -> (Loopx, SliceId, Vec<(&'static str, String)>) {
    let loopx = claimed();
    let slice = start_slice(&loopx);
    let env = slice_env(&loopx, slice);
    (loopx, slice, env)
}

/// The environment the supervisor gives slice `slice` of `exec` on t1 under epoch 1.
pub(crate) fn slice_env(loopx: &Loopx, slice: SliceId) -> Vec<(&'static str, String)> {
    vec![
        ("LOOPX_PROJECT", loopx.path().display().to_string()),
        (
            "LOOPX_SLICE",
            loopx_kernel::marker::slice_marker(loopx.path(), slice),
        ),
        ("LOOPX_AGENT", "exec".to_owned()),
        ("LOOPX_TODO", "t1".to_owned()),
        ("LOOPX_EPOCH", "1".to_owned()),
    ]
}

/// `loopx --json report …` in a directory outside the project, so only the environment finds it.
pub(crate) fn report(loopx: &Loopx, env: &[(&'static str, String)], args: &[&str]) -> Run {
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let mut cmd = loopx.command(&[&["--json", "report"][..], args].concat());
    cmd.current_dir(elsewhere.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().expect("loopx runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn report_ok(loopx: &Loopx, env: &[(&'static str, String)], args: &[&str]) -> Value {
    let run = report(loopx, env, args);
    assert_eq!(run.code, 0, "report {args:?}: {}{}", run.stdout, run.stderr);
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

#[test]
fn report_outside_a_slice_is_a_usage_error() {
    let loopx = claimed();
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
    let (loopx, _, env) = running();

    let evidence = report_ok(
        &loopx,
        &env,
        &["evidence", "test", "cargo", "test:", "41", "passed"],
    );
    let evidence = &evidence["evidence"];
    assert_eq!(evidence["summary"], "cargo test: 41 passed");
    assert_eq!(evidence["kind"], "test");
    assert_eq!(
        (&evidence["slice"], &evidence["todo"]),
        (&Value::from("s1"), &Value::from("t1"))
    );
    assert_eq!(evidence["actor"], "agent:exec");

    let handoff = report_ok(
        &loopx,
        &env,
        &[
            "handoff",
            "--done",
            "Wrote it",
            "--next",
            "Review it",
            "--file",
            "a.rs",
        ],
    );
    assert_eq!(handoff["handoff"]["slice"], "s1");
    let shown = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(shown["latest_handoff"]["next"], "Review it");
    assert_eq!(
        shown["latest_handoff"]["files"],
        serde_json::json!(["a.rs"])
    );

    let todo = report_ok(
        &loopx,
        &env,
        &[
            "todo",
            "Review the notes",
            "--role",
            "reviewer",
            "--priority",
            "3",
        ],
    );
    assert_eq!(todo["todo"]["id"], "t2");
    assert_eq!(todo["todo"]["role"], "reviewer");
    assert_eq!(todo["todo"]["created_by"], "agent:exec");

    let vague = report(&loopx, &env, &["ask", "what should I do?"]);
    assert_eq!(
        vague.code,
        i32::from(loopx_cli::exit_code::USAGE),
        "{vague:?}"
    );
    let gate = report_ok(
        &loopx,
        &env,
        &[
            "ask",
            "Should the notes be a Markdown list or a table?",
            "--option",
            "list",
            "--option",
            "table",
        ],
    );
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

    let done = report_ok(&loopx, &env, &["done", "--summary", "Notes written"]);
    assert_eq!(done["todo"]["state"], "done");
    let notes = list(&loopx, &["evidence", "list"], "evidence");
    assert!(
        notes
            .iter()
            .any(|e| e["summary"] == "Notes written" && e["slice"] == "s1"),
        "{notes:?}"
    );
    // Done once: a second time is a conflict, not a silent success.
    let again = report(&loopx, &env, &["done"]);
    assert_eq!(
        again.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{again:?}"
    );
}

#[test]
fn report_on_a_stale_epoch_is_a_conflict_and_writes_nothing() {
    let (loopx, _, env) = running();
    // The claim moves on while the slice still runs: released (epoch 2), then taken again (3).
    loopx.ok(&["todo", "release", "t1", "--agent", "exec", "--epoch", "1"]);
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    let before = event_kinds(&loopx).len();

    for args in [
        &["evidence", "note", "late"][..],
        &["handoff", "--done", "late"],
        &["todo", "A late idea"],
        &["ask", "Should the late notes be kept or dropped?"],
        &["done"],
    ] {
        let run = report(&loopx, &env, args);
        assert_eq!(
            run.code,
            i32::from(loopx_cli::exit_code::CONFLICT),
            "{args:?}: {run:?}"
        );
        assert!(
            run.stderr.contains("stale epoch for t1")
                && run
                    .stderr
                    .contains("presented epoch 1, the current one is 3"),
            "{}",
            run.stderr
        );
        assert_eq!(run.json()["error"]["code"], "conflict");
    }
    assert!(list(&loopx, &["evidence", "list"], "evidence").is_empty());
    assert!(list(&loopx, &["gate", "list"], "gates").is_empty());
    assert_eq!(list(&loopx, &["todo", "list", "--all"], "todos").len(), 1);
    let todo = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(todo["todo"]["state"], "claimed");
    assert_eq!(todo["latest_handoff"], Value::Null);
    // Only the refusals are recorded, each as an audit event.
    let events = event_kinds(&loopx);
    let new: Vec<&(String, Value)> = events[before..].iter().collect();
    assert_eq!(new.len(), 5, "{new:?}");
    assert!(
        new.iter()
            .all(|(kind, e)| kind == "stale_epoch_refused" && e["data"]["action"] == "report"),
        "{new:?}"
    );
}

#[test]
fn report_after_the_slice_ended_is_a_conflict_that_names_it() {
    let (loopx, slice, env) = running();
    let end = SliceEnd {
        outcome: loopx_kernel::model::Outcome::Completed,
        leftovers: 0,
        exit: None,
        tokens: 0,
        cost_usd: 0.0,
        output_bytes: 0,
    };
    store(&loopx)
        .apply(Op::SliceEnd { slice, end }, "agent:exec", Timestamp::now())
        .expect("the slice ends");
    let run = report(&loopx, &env, &["handoff", "--done", "after the end"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("slice s1 has ended (completed)"),
        "{}",
        run.stderr
    );
    let done = report(&loopx, &env, &["done"]);
    assert_eq!(
        done.code,
        i32::from(loopx_cli::exit_code::CONFLICT),
        "{done:?}"
    );
    let todo = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(todo["todo"]["state"], "claimed");
    assert_eq!(todo["latest_handoff"], Value::Null);
}

#[test]
fn report_checks_who_and_where() {
    use loopx_cli::exit_code::{CONFLICT, USAGE};
    let (loopx, slice, env) = running();
    let elsewhere = loopx_kernel::marker::slice_marker(std::path::Path::new("/elsewhere"), slice);
    let unknown = loopx_kernel::marker::slice_marker(loopx.path(), SliceId(9));
    for (key, value, code, says) in [
        (
            "LOOPX_AGENT",
            "rev",
            CONFLICT,
            "slice s1 runs agent `exec`, not `rev`",
        ),
        ("LOOPX_SLICE", elsewhere.as_str(), USAGE, "another project"),
        (
            "LOOPX_SLICE",
            unknown.as_str(),
            USAGE,
            "slice `s9` does not exist",
        ),
        (
            "LOOPX_EPOCH",
            "7",
            USAGE,
            "slice s1 works on t1 under epoch 1, not on t1 under epoch 7",
        ),
    ] {
        let changed: Vec<(&'static str, String)> = env
            .iter()
            .map(|(k, v)| {
                (
                    *k,
                    if *k == key {
                        value.to_owned()
                    } else {
                        v.clone()
                    },
                )
            })
            .collect();
        let run = report(&loopx, &changed, &["evidence", "note", "x"]);
        assert_eq!(run.code, i32::from(code), "{key}={value}: {run:?}");
        assert!(run.stderr.contains(says), "{key}={value}: {}", run.stderr);
    }
    assert!(list(&loopx, &["evidence", "list"], "evidence").is_empty());
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
    // Done mid-slice, by the agent: before the slice ended, and not again in the writeback.
    let events = event_kinds(&loopx);
    let at = |kind: &str| {
        events
            .iter()
            .position(|(k, _)| k == kind)
            .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
    };
    assert!(at("todo_done") < at("slice_ended"), "{events:?}");
    assert_eq!(events.iter().filter(|(k, _)| k == "todo_done").count(), 1);
    let handoffs = events
        .iter()
        .filter(|(k, _)| k == "handoff_written")
        .count();
    assert_eq!(handoffs, 2, "the agent's and the writeback's: {events:?}");
    let (_, done) = &events[at("todo_done")];
    assert_eq!(done["actor"], "agent:exec");
}
