//! What people and scripts see: snapshots of human and `--json` output.

use crate::support::Loopx;

fn pretty(loopx: &Loopx, run: &crate::support::Run) -> String {
    let value = run.json();
    assert_eq!(
        value["format_version"], 1,
        "every document carries format_version"
    );
    loopx.stable(&serde_json::to_string_pretty(&value).expect("json"))
}

/// A project mid-flight: a claim, a waiting todo, an open question, some evidence.
fn busy() -> Loopx {
    let loopx = Loopx::with_work();
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    loopx.ok(&[
        "gate",
        "ask",
        "Should t1 retry with exponential backoff or fail fast?",
        "--option",
        "backoff",
        "--option",
        "fail fast",
        "--blocks",
        "t3",
    ]);
    loopx.ok(&[
        "evidence",
        "add",
        "cargo test: 41 passed",
        "--todo",
        "t1",
        "--kind",
        "test",
    ]);
    loopx
}

#[test]
fn status_human() {
    let loopx = busy();
    let run = loopx.ok(&["status"]);
    insta::assert_snapshot!(loopx.stable(&run.stdout));
}

#[test]
fn status_json() {
    let loopx = busy();
    let run = loopx.ok(&["status", "--json"]);
    insta::assert_snapshot!(pretty(&loopx, &run));
}

#[test]
fn status_of_an_empty_project() {
    let loopx = Loopx::new();
    let run = loopx.ok(&["status"]);
    insta::assert_snapshot!(loopx.stable(&run.stdout));
}

#[test]
fn todo_list_human_and_json() {
    let loopx = busy();
    let human = loopx.ok(&["todo", "list"]);
    insta::assert_snapshot!("todo_list_human", loopx.stable(&human.stdout));
    let json = loopx.ok(&["todo", "list", "--json", "--state", "open"]);
    insta::assert_snapshot!("todo_list_open_json", pretty(&loopx, &json));
}

#[test]
fn gate_list_human_and_json() {
    let loopx = busy();
    let human = loopx.ok(&["gate", "list"]);
    insta::assert_snapshot!("gate_list_human", loopx.stable(&human.stdout));
    let json = loopx.ok(&["gate", "list", "--json"]);
    insta::assert_snapshot!("gate_list_json", pretty(&loopx, &json));
}

#[test]
fn answering_a_gate_unblocks_and_shows_the_answer() {
    let loopx = busy();
    loopx.ok(&["gate", "answer", "q1", "--option", "2"]);
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(gate["gate"]["state"], "answered");
    assert_eq!(gate["gate"]["answer"]["text"], "fail fast");
    assert_eq!(gate["gate"]["answer"]["option"], 2);
    assert_eq!(gate["gate"]["answer"]["by"], "human:tester");
    let list = loopx.ok(&["gate", "list"]);
    assert!(list.stdout.contains("No open gates"), "{}", list.stdout);
}

#[test]
fn log_lists_every_transition_in_order() {
    let loopx = busy();
    let run = loopx.ok(&["log"]);
    insta::assert_snapshot!(loopx.stable(&run.stdout));
    let json = loopx.ok(&["log", "--json"]);
    let lines: Vec<serde_json::Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON Lines"))
        .collect();
    assert_eq!(lines[0]["format_version"], 1);
    let seqs: Vec<u64> = lines
        .iter()
        .map(|l| l["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "gap-free"
    );
    assert_eq!(lines.last().expect("events")["kind"], "evidence_added");
}

#[test]
fn claim_renew_release_done_round_trip_with_json() {
    let loopx = Loopx::with_work();
    let claim = loopx
        .ok(&[
            "todo", "claim", "t1", "--agent", "exec", "--json", "--ttl", "10m",
        ])
        .json();
    let epoch = claim["todo"]["lease"]["epoch"].as_u64().expect("epoch");
    assert_eq!(epoch, 1);
    let e = epoch.to_string();
    loopx.ok(&[
        "todo", "renew", "t1", "--agent", "exec", "--epoch", &e, "--ttl", "1h",
    ]);
    loopx.ok(&["todo", "release", "t1", "--agent", "exec", "--epoch", &e]);
    let again = loopx
        .ok(&["todo", "claim", "t1", "--agent", "exec", "--json"])
        .json();
    assert_eq!(
        again["todo"]["epoch"], 3,
        "the release changed the holder (2), the claim again (3)"
    );
    // Inside a slice the agent and epoch come from the environment.
    let done = loopx.run_env(
        &["todo", "done", "t1", "--json"],
        &[("LOOPX_AGENT", "exec"), ("LOOPX_EPOCH", "3")],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(done.json()["todo"]["state"], "done");
    // t2 waited on t1 and is claimable now.
    loopx.ok(&["todo", "claim", "t2", "--agent", "exec"]);
}

#[test]
fn handoff_write_and_show() {
    let loopx = Loopx::with_work();
    loopx.ok(&[
        "handoff",
        "write",
        "--todo",
        "t1",
        "--done",
        "Retry wrapper added",
        "--next",
        "Add jitter",
        "--file",
        "src/http.rs",
    ]);
    let run = loopx.ok(&["handoff", "--todo", "t1"]);
    insta::assert_snapshot!(loopx.stable(&run.stdout));
    let json = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(json["latest_handoff"]["next"], "Add jitter");
}

#[test]
fn evidence_pins_files_by_sha256() {
    let loopx = Loopx::with_work();
    std::fs::write(loopx.path().join("report.txt"), "41 passed\n").expect("write");
    let run = loopx
        .ok(&[
            "evidence",
            "add",
            "test report",
            "--file",
            "report.txt",
            "--json",
        ])
        .json();
    let file = &run["evidence"]["files"][0];
    assert_eq!(file["path"], "report.txt");
    assert_eq!(file["bytes"], 10);
    // sha256("41 passed\n"), computed independently with Python's hashlib.
    assert_eq!(
        file["sha256"],
        "5738924d2dc2c7b505e03a0bb0481ae37c554b5ff286bf885df1dfb08a7c0847"
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let loopx = Loopx::with_work();
    let plain = loopx.ok(&["todo", "list"]);
    assert!(
        !plain.stdout.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    let coloured = loopx.ok(&["todo", "list", "--color", "always"]);
    assert!(coloured.stdout.contains("\x1b["), "--color always colours");
}

#[test]
fn goal_lifecycle() {
    let loopx = Loopx::with_work();
    loopx.ok(&["goal", "pause"]);
    let claim = loopx.run(&["todo", "claim", "t1", "--agent", "exec"]);
    assert_eq!(
        claim.code, 5,
        "a paused goal's todos cannot be claimed: {}",
        claim.stderr
    );
    loopx.ok(&["goal", "resume"]);
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    loopx.ok(&["goal", "done", "g1"]);
    let goals = loopx.ok(&["goal", "list", "--json"]).json();
    assert_eq!(goals["goals"][0]["status"], "done");
    loopx.ok(&["goal", "start", "The next goal"]);
}
