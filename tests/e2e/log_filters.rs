//! `loopx log` narrowed to what a person asks about: one agent, one todo, some kinds, a time
//! range (`docs/cli.md`).

use serde_json::Value;

use crate::support::demo_project;

fn events(loopx: &crate::support::Loopx, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["log", "--json", "-n", "1000"];
    all.extend_from_slice(args);
    loopx
        .ok(&all)
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["kind"].as_str()).collect()
}

#[test]
fn the_log_keeps_one_agent_s_one_todo_s_or_some_kinds_of_events_in_a_time_range() {
    let loopx = demo_project(&["exec", "rev"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    loopx.ok(&["todo", "add", "Write the summary"]);
    let run = loopx.run(&["run", "--max-slices", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let all = events(&loopx, &[]);
    // One agent: what it did, and what was done about it.
    let exec = events(&loopx, &["--agent", "exec"]);
    assert!(!exec.is_empty() && exec.len() < all.len());
    for event in &exec {
        let by = event["actor"] == "agent:exec";
        let about = event["data"]["agent"] == "exec";
        assert!(by || about, "{event}");
    }
    // Some kinds: a prefix keeps every kind it begins.
    let slices = events(&loopx, &["--kind", "slice"]);
    assert!(
        kinds(&slices).iter().all(|k| k.starts_with("slice_")) && slices.len() >= 6,
        "{:?}",
        kinds(&slices)
    );
    let ended = events(&loopx, &["--kind", "slice_ended", "--kind", "todo_done"]);
    assert!(
        kinds(&ended)
            .iter()
            .all(|k| ["slice_ended", "todo_done"].contains(k)),
        "{:?}",
        kinds(&ended)
    );
    // One todo: its own events and its slices', even the ones that name only the slice.
    let t1 = events(&loopx, &["--todo", "t1"]);
    assert!(
        kinds(&t1).contains(&"todo_added") && kinds(&t1).contains(&"slice_ended"),
        "{:?}",
        kinds(&t1)
    );
    assert!(t1.iter().all(|e| e["data"]["todo"] != "t2"), "{t1:?}");
    // A time range: everything is from the last hour, nothing from before it.
    assert_eq!(events(&loopx, &["--since", "1h"]).len(), all.len());
    assert!(events(&loopx, &["--until", "1h"]).is_empty());
    assert!(events(&loopx, &["--until", "2020-01-01T00:00:00Z"]).is_empty());
    // Bad input says what would do.
    let bad = loopx.run(&["log", "--kind", "slices_ended"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("`slices_ended` is no kind of event")
            && bad.stderr.contains("slice_ended"),
        "{}",
        bad.stderr
    );
    let bad = loopx.run(&["log", "--since", "yesterday"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("invalid time `yesterday` for --since"),
        "{}",
        bad.stderr
    );
    let bad = loopx.run(&["log", "--since", "1h", "--until", "2h"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("is after --until"), "{}", bad.stderr);
    let bad = loopx.run(&["log", "--todo", "t99"]);
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("t99"), "{}", bad.stderr);
}
