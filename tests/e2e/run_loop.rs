//! `loopx run`: the whole loop through the real binary, with the built-in demo agent and with
//! shell-script agents (the `generic` adapter) that misbehave on purpose: hang, ignore SIGHUP
//! and SIGTERM, leave children behind.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{
    Background, Loopx, alive, asleep, decision, demo_project, event, read_pid, script_agent,
    todo_state, wait_for,
};

/// Issue 47, item 1: a read-only reviewer's planning slice answered `done` and the goal was
/// closed with nobody asked. An agent's "the goal is met" asks a person, with what they need
/// to decide; the goal is done once a person answers `done`.
#[test]
fn the_loop_works_the_goal_through_and_a_person_ends_it() {
    let loopx = demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    let run = loopx.run(&["run", "--on-gate", "exit"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    for line in [
        "exec: slice s1 started: work on t1",
        "exec: slice s1 ended: completed",
        "exec: slice s2 started: plan",
        "waiting on gate q1: Agent `exec` says goal g1 (Write the demo notes) is met: is it? [done / plan]",
    ] {
        assert!(run.stderr.contains(line), "no `{line}` in:\n{}", run.stderr);
    }
    assert_eq!(todo_state(&loopx, "t1"), "done");
    let goal_status = || loopx.ok(&["goal", "list", "--json"]).json()["goals"][0]["status"].clone();
    assert_eq!(goal_status(), "active", "an agent does not end the goal");
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    let context = gate["gate"]["context"].as_str().unwrap_or_default();
    assert!(
        context.contains("Todos: 1 done, 0 dropped, 0 open.") && context.contains("revision 1"),
        "what the person needs to decide: {context}"
    );
    loopx.ok(&["gate", "answer", "q1", "done"]);
    assert_eq!(goal_status(), "done", "a person ends it");
    let run = loopx.run(&["run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("goal g1 is done"), "{}", run.stderr);
}

/// `[goal] close = "agents"`: the project lets its agents end its goal, as before.
#[test]
fn a_project_may_let_its_agents_end_the_goal() {
    let loopx = demo_project(&["exec"]);
    loopx.agents_close_goals();
    loopx.ok(&["todo", "add", "Write the notes"]);
    let run = loopx.run(&["run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for line in [
        "exec: slice s2 started: plan",
        "the goal is done",
        "loopx run ended (done) after 2 slice(s)",
    ] {
        assert!(run.stderr.contains(line), "no `{line}` in:\n{}", run.stderr);
    }
    let goals = loopx.ok(&["goal", "list", "--json"]).json();
    assert_eq!(goals["goals"][0]["status"], "done", "{goals}");
}

#[test]
fn an_agent_that_reports_nothing_leaves_what_loopx_observed() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "mute",
        "cat >/dev/null; echo 'looked around, changed nothing'",
        "max_time = \"20s\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let mut bg = Background::start(&loopx, &["--max-slices", "1"]);
    bg.wait_for("the slice's end", |e| e["event"] == "slice_ended");
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "{events:#?}");
    let ended = event(&events, "slice_ended");
    assert_eq!(ended[0]["report"], "none", "{:#?}", ended[0]);
    assert_eq!(ended[0]["todo_state"], "released");
    let finished = event(&events, "finished");
    assert_eq!(finished[0]["reason"], "max_slices");
    assert_eq!(
        todo_state(&loopx, "t1"),
        "open",
        "not done without a report"
    );
    let evidence = loopx.ok(&["evidence", "list", "--json"]).json();
    let slice = evidence["evidence"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|e| e["kind"] == "slice")
        .cloned()
        .expect("slice evidence from what loopx observed");
    assert_eq!(slice["todo"], "t1");
    // What the agent said is kept, though it gave no report.
    let detail = slice["detail"].as_str().expect("a detail");
    assert!(
        detail.contains("final message:\nlooked around, changed nothing"),
        "{detail}"
    );
    let handoff = loopx.ok(&["handoff", "--todo", "t1"]).stdout;
    assert!(
        handoff.contains("looked around, changed nothing"),
        "{handoff}"
    );
}

#[test]
fn a_question_halts_its_todo_others_go_on_and_the_answer_wakes_the_loop() {
    let loopx = demo_project(&["exec", "peer"]);
    loopx.agents_close_goals();
    loopx.ok(&[
        "todo",
        "add",
        "Choose the format [demo:ask]",
        "--priority",
        "5",
    ]);
    loopx.ok(&["todo", "add", "Write the intro"]);
    loopx.ok(&["todo", "add", "Write the outro"]);
    let mut bg = Background::start(&loopx, &[]);
    let question = bg.wait_for("the question", |e| e["event"] == "question");
    assert_eq!(question["gate"], "q1");
    assert!(
        question["answer_with"]
            .as_str()
            .expect("a command")
            .starts_with("loopx gate answer q1"),
        "{question}"
    );
    // The other todos get done while the question waits.
    for todo in ["t2", "t3"] {
        bg.saw_or_wait_for("the other todos", |e| {
            e["event"] == "slice_ended" && e["todo"] == todo && e["todo_state"] == "done"
        });
    }
    assert_eq!(todo_state(&loopx, "t1"), "open");
    // Nothing to do but wait for the person: the loop must be asleep for the doorbell to be
    // what wakes it. No event marks that moment (the agents decide `ask` again, silently), so
    // the process says: every thread of loopx blocked, at three looks in a row.
    let pid = bg.child.id();
    let mut looks = 0;
    wait_for("the loop asleep", Duration::from_secs(30), || {
        looks = if asleep(pid) { looks + 1 } else { 0 };
        looks == 3
    });
    let answered = Instant::now();
    loopx.ok(&["gate", "answer", "q1", "--option", "1"]);
    let started = bg.wait_for("the answered todo's slice", |e| {
        e["event"] == "slice_started" && e["todo"] == "t1"
    });
    let woke = answered.elapsed();
    // The loop would re-check by itself after 30 s; the doorbell wakes it at once.
    assert!(woke < Duration::from_secs(5), "woke after {woke:?}");
    let (code, events) = bg.finish();
    // The demo agent writes the answer it read in its prompt next to the todo's title.
    let slice = started["slice"].as_str().expect("an id");
    let notes = std::fs::read_to_string(loopx.path().join("demo/NOTES.md")).expect("notes");
    assert!(
        notes.contains("- t1: Choose the format: Markdown list"),
        "slice {slice} did not get the answer: {notes}"
    );
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(todo_state(&loopx, "t1"), "done");
    assert_eq!(
        event(&events, "question").len(),
        1,
        "the question is shown once: {events:#?}"
    );
}

#[test]
fn on_gate_exit_halts_with_its_own_code_once_nobody_can_go_on() {
    let loopx = demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    let run = loopx.run(&["run", "--on-gate", "exit"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("waiting on gate q1"), "{}", run.stderr);
    assert!(
        run.stderr.contains("answer with: loopx gate answer q1"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_usage_limit_pauses_the_whole_account_and_resumes_after_the_reset() {
    let loopx = demo_project(&["exec", "peer"]);
    loopx.agents_close_goals();
    loopx.ok(&["todo", "add", "Write the notes [demo:usage-limit]"]);
    let mut bg = Background::start(&loopx, &[]);
    let limited = bg.wait_for("the usage limit", |e| {
        e["event"] == "slice_ended" && e["outcome"] == "usage_limited"
    });
    assert!(limited["hold_until"].is_string(), "{limited}");
    let (code, events) = {
        bg.wait_for("the resume", |e| e["event"] == "resumed");
        bg.finish()
    };
    assert_eq!(code, 0, "{events:#?}");
    let paused: Vec<&str> = event(&events, "paused")
        .iter()
        .filter_map(|e| e["agent"].as_str())
        .collect();
    assert!(
        paused.contains(&"exec") && paused.contains(&"peer"),
        "every agent on the account pauses: {paused:?}"
    );
    assert_eq!(todo_state(&loopx, "t1"), "done", "resumed by itself");
}

#[test]
fn a_timed_out_agent_is_stopped_with_its_children_and_the_next_decision_is_repair() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "slow",
        "sleep 300 &\necho $! > child.pid\nwait",
        "max_time = \"2s\"\ngrace = \"1s\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let run = loopx.run(&["run", "--max-slices", "1", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ended: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["event"] == "slice_ended")
        .collect();
    assert_eq!(ended[0]["outcome"], "timed_out", "{:#?}", ended[0]);
    assert!(loopx.path().join("child.pid").exists(), "the child started");
    let left = crate::support::project_processes(loopx.path());
    assert!(
        left.is_empty(),
        "the agent's child was stopped too: {left:?}"
    );
    assert_eq!(decision(&loopx, "slow"), "repair");
}

/// An agent that ignores SIGHUP (so it outlives a dead supervisor's terminal) and finishes at
/// once when it is asked to repair.
const SURVIVOR: &str = r#"prompt=$(cat)
case "$prompt" in
  *"Slice: repair"*) echo 'repaired'; exit 0 ;;
esac
trap '' HUP
echo $$ > agent.pid
sleep 300"#;

#[test]
fn a_killed_supervisor_s_slice_is_recovered_by_the_next_run() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "tough",
        SURVIVOR,
        "max_time = \"5m\"\ngrace = \"1s\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let mut bg = Background::start(&loopx, &[]);
    bg.wait_for("the slice", |e| e["event"] == "slice_started");
    let agent = read_pid(&loopx.path().join("agent.pid"));
    bg.signal(nix::sys::signal::Signal::SIGKILL);
    let (code, _) = bg.finish();
    assert_eq!(code, -1, "killed");
    // It does not outlive its supervisor by more than the slice's own grace (3 s): the slice
    // watches its supervisor and stops itself (issue 33).
    wait_for(
        "the agent's end with its supervisor",
        Duration::from_secs(20),
        || !alive(agent),
    );
    // Its private room (TMPDIR, report socket) is left behind, until recovery.
    let room = std::env::temp_dir()
        .join(format!("loopx-{}", nix::unistd::getuid()))
        .join(loopx_kernel::marker::slice_marker(
            loopx.path(),
            loopx_kernel::SliceId(1),
        ));
    assert!(room.join("report.sock").exists(), "{}", room.display());

    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    let recovered = &out["recovered"][0];
    assert_eq!(recovered["slice"], "s1", "{out}");
    assert_eq!(recovered["released"], true);
    assert!(!alive(agent), "recovery stopped the survivor {agent}");
    assert!(!room.exists(), "recovery removed {}", room.display());
    assert_eq!(out["decision"], "repair", "{out}");
    assert_eq!(out["slice"]["kind"], "repair");
    assert_eq!(out["slice"]["todo"], "t1");
    let s1 = loopx.ok(&["log", "--json"]).stdout;
    let ended: Vec<Value> = s1
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["kind"] == "slice_ended" && e["data"]["slice"] == "s1")
        .collect();
    assert_eq!(ended.len(), 1, "{s1}");
    assert_eq!(ended[0]["data"]["outcome"], "interrupted");
    for kind in ["todo_claimed", "slice_started", "slice_spawned"] {
        assert!(s1.contains(kind), "`{kind}` recorded before the kill: {s1}");
    }
}

#[test]
fn sigterm_stops_the_slice_within_its_grace_and_sighup_is_ignored() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    // Ignores SIGTERM (and SIGHUP): only the SIGKILL after the grace period ends it.
    script_agent(
        &loopx,
        "stubborn",
        "trap '' TERM HUP\necho $$ > agent.pid\nsleep 300",
        "max_time = \"5m\"\ngrace = \"2s\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let mut bg = Background::start(&loopx, &[]);
    bg.wait_for("the slice", |e| e["event"] == "slice_started");
    let agent = read_pid(&loopx.path().join("agent.pid"));
    bg.signal(nix::sys::signal::Signal::SIGHUP);
    // Nothing happens, so no event marks it: the run's own log says when the hangup was read.
    wait_for(
        "the hangup in the run's log",
        Duration::from_secs(10),
        || {
            crate::logging::run_logs(&loopx).iter().any(|log| {
                std::fs::read_to_string(log).is_ok_and(|text| text.contains("SIGHUP ignored"))
            })
        },
    );
    assert!(
        bg.child.try_wait().expect("wait").is_none(),
        "SIGHUP stopped loopx"
    );
    let signalled = Instant::now();
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, events) = bg.finish();
    let took = signalled.elapsed();
    assert_eq!(
        code,
        i32::from(loopx_cli::exit_code::INTERRUPTED),
        "{events:#?}"
    );
    assert!(
        took < Duration::from_secs(3),
        "exited {took:?} after SIGTERM (grace 2s)"
    );
    assert!(!alive(agent));
    let ended = event(&events, "slice_ended");
    assert_eq!(ended[0]["outcome"], "interrupted", "{:#?}", ended[0]);
    assert!(
        ended[0]["reason"]
            .as_str()
            .expect("a reason")
            .contains("shutdown"),
        "{:#?}",
        ended[0]
    );
    assert_eq!(todo_state(&loopx, "t1"), "open");
}

#[test]
fn two_supervisors_and_three_agents_do_eight_todos_exactly_once() {
    let loopx = demo_project(&["a", "b", "c"]);
    loopx.agents_close_goals();
    for n in 1..=8 {
        loopx.ok(&["todo", "add", &format!("Write item {n}")]);
    }
    // `b` runs under both supervisors: its lease alone must not let both work one todo.
    let first = Background::start(&loopx, &["--agent", "a", "--agent", "b"]);
    let second = Background::start(&loopx, &["--agent", "b", "--agent", "c"]);
    let (code1, events1) = first.finish();
    let (code2, events2) = second.finish();
    assert_eq!((code1, code2), (0, 0), "{events1:#?}\n{events2:#?}");
    let log = loopx.ok(&["log", "--json", "--limit", "100000"]).stdout;
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    for n in 1..=8 {
        let todo = format!("t{n}");
        let slices = events
            .iter()
            .filter(|e| e["kind"] == "slice_started" && e["data"]["todo"] == todo.as_str())
            .count();
        let done = events
            .iter()
            .filter(|e| e["kind"] == "todo_done" && e["data"]["todo"] == todo.as_str())
            .count();
        assert_eq!(
            (slices, done),
            (1, 1),
            "{todo}: {slices} slices, done {done}x"
        );
    }
    let workers: std::collections::BTreeSet<&str> = events
        .iter()
        .filter(|e| e["kind"] == "slice_started")
        .filter_map(|e| e["data"]["agent"].as_str())
        .collect();
    assert!(workers.len() >= 2, "peers shared the work: {workers:?}");
}

fn notified(loopx: &Loopx) -> Vec<Value> {
    std::fs::read_to_string(loopx.path().join("notified.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn notify_into_a_file(loopx: &Loopx) {
    loopx.write_config("[notify]\ncommand = \"cat >> notified.jsonl\"\n");
    crate::support::approve_notifications(loopx);
}

#[test]
fn notifications_say_who_needs_what() {
    let loopx = demo_project(&["exec"]);
    notify_into_a_file(&loopx);
    loopx.ok(&["todo", "add", "Write the notes [demo:usage-limit]"]);
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    let run = loopx.run_env(
        &["run", "--on-gate", "exit"],
        &[("LOOPX_DEMO_RESET_SECS", "2")],
    );
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    let notes = notified(&loopx);
    let kinds: Vec<&str> = notes.iter().filter_map(|n| n["kind"].as_str()).collect();
    assert_eq!(kinds, ["paused", "resumed", "gate_opened"], "{notes:#?}");
    let gate = &notes[2];
    assert_eq!(gate["agent"], "exec");
    let message = gate["message"].as_str().expect("a message");
    assert!(
        // q1 approved the notification command.
        message.starts_with("exec needs an answer to q2: ")
            && message.contains("loopx gate answer q2"),
        "{message}"
    );
    assert_eq!(
        gate["event"]["event"], "question",
        "the loop's own event rides along"
    );
}

#[test]
fn the_goal_done_is_notified_and_a_broken_config_stops_before_anything_runs() {
    let loopx = demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    loopx.write_config("[notify]\ncomand = \"cat\"\n");
    let run = loopx.run(&["run"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::CONFIG),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("loopx.toml"), "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t1"), "open", "nothing ran");

    notify_into_a_file(&loopx);
    loopx.agents_close_goals();
    loopx.ok(&["run"]);
    let kinds: Vec<String> = notified(&loopx)
        .iter()
        .filter_map(|n| n["kind"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(kinds, ["goal_done"]);
}

#[test]
fn a_secret_the_agent_prints_does_not_stay_in_its_log() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "leaky",
        "cat >/dev/null\necho \"token is $DEPLOY_TOKEN\"\necho 'key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789'",
        "max_time = \"20s\"\n\n[env]\nsecrets = [\"DEPLOY_TOKEN\"]",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let secret = "deploy-3f9a8b7c6d5e4f3a";
    let run = loopx.run_env(&["run", "--max-slices", "1"], &[("DEPLOY_TOKEN", secret)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log = std::fs::read_to_string(loopx.path().join(".loopx/slices/s1.log")).expect("the log");
    assert!(
        log.contains("token is "),
        "the agent ran and printed: {log}"
    );
    assert!(
        !log.contains(secret),
        "the secret's value stayed in the log: {log}"
    );
    assert!(
        !log.contains("abcdefghijklmnop"),
        "a key stayed in the log: {log}"
    );
}

#[test]
fn the_first_slice_after_a_vendor_hold_is_a_short_probe() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    // The demo agent with a long wall-time limit: the probe's 5 minutes must show.
    let demo = std::fs::read_to_string(loopx.path().join(".loopx/profiles/demo.toml"))
        .expect("the demo profile");
    let long = demo.replace("max_time = \"2m\"", "max_time = \"30m\"");
    assert_ne!(long, demo, "the demo profile sets max_time = \"2m\"");
    std::fs::write(loopx.path().join(".loopx/profiles/long.toml"), long).expect("profile");
    loopx.ok(&["agent", "add", "exec", "--profile", "long"]);
    loopx.ok(&["todo", "add", "Write the notes [demo:usage-limit]"]);
    let run = loopx.run_env(
        &["run", "--json", "--max-slices", "2"],
        &[("LOOPX_DEMO_RESET_SECS", "1")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let limits: Vec<(String, u64)> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["event"] == "slice_ended")
        .map(|e| {
            let outcome = e["outcome"].as_str().expect("an outcome").to_owned();
            (outcome, e["limit_secs"].as_u64().expect("a limit"))
        })
        .collect();
    assert_eq!(
        limits,
        [
            ("usage_limited".to_owned(), 1800),
            ("completed".to_owned(), 300)
        ],
        "the slice after the hold runs under the 5-minute probe limit"
    );
}

#[test]
fn run_once_notifies_about_its_own_slice_only() {
    let loopx = demo_project(&["exec"]);
    notify_into_a_file(&loopx);
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    loopx.ok(&["run", "--once"]);
    // The next decision is `ask`: not notified again.
    loopx.ok(&["run", "--once"]);
    let notes = notified(&loopx);
    let kinds: Vec<&str> = notes.iter().filter_map(|n| n["kind"].as_str()).collect();
    assert_eq!(kinds, ["gate_opened"], "{notes:#?}");
    assert_eq!(notes[0]["event"]["gate"], "q2", "q1 approved the command");
}

fn lease_expiry(loopx: &Loopx, todo: &str) -> String {
    let shown = loopx.ok(&["todo", "show", todo, "--json"]).json();
    shown["todo"]["lease"]["expires_at"]
        .as_str()
        .unwrap_or_else(|| panic!("no lease: {shown}"))
        .to_owned()
}

#[test]
fn a_slice_renews_its_claim_and_is_stopped_when_it_loses_it() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "slow",
        "cat >/dev/null\necho $$ > agent.pid\nsleep 60",
        "max_time = \"5m\"\ngrace = \"1s\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    // Claims of 3 s, renewed every second.
    let mut bg = Background::start_env(&loopx, &[], &[("LOOPX_LEASE_MAX", "3s")]);
    bg.wait_for("the slice", |e| e["event"] == "slice_started");
    read_pid(&loopx.path().join("agent.pid"));
    let first = lease_expiry(&loopx, "t1");
    // Renewed every second: wait for the store to show it (not for a guessed time).
    wait_for(
        &format!("the claim renewed past {first}"),
        Duration::from_secs(15),
        || lease_expiry(&loopx, "t1") > first,
    );

    // A person takes the claim away: the slice must not go on working the todo.
    loopx.ok(&["todo", "release", "t1", "--agent", "slow", "--epoch", "1"]);
    let ended = bg.wait_for("the slice's end", |e| e["event"] == "slice_ended");
    assert_eq!(ended["outcome"], "interrupted", "{ended}");
    assert!(
        ended["reason"]
            .as_str()
            .expect("a reason")
            .contains("lost its claim"),
        "{ended}"
    );
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    bg.finish();
}

/// What each agent waits on is recorded when it changes, not at every decision: a goal's
/// history accounts for every second of an agent's time from these and its slices
/// (`docs/history.md`). An agent that decides again and again on the same state writes once.
#[test]
fn what_an_agent_waits_on_is_recorded_when_it_changes() {
    let loopx = demo_project(&["exec", "rev"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    // Two slices: one agent takes t1 while the other has nothing it could take, deciding
    // again at each change the first makes; then the run ends.
    // The demo agent paces its lines, so t1's slice lasts long enough for the other agent to
    // decide while it runs (unpaced, it could end before the other's first decision, which
    // then plans instead of waiting).
    let run = loopx.run_env(
        &["run", "--max-slices", "2"],
        &[("LOOPX_DEMO_DELAY_MS", "40")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log = loopx.ok(&["log", "--json", "-n", "500"]).stdout;
    let waits: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["kind"] == "agent_waits")
        .map(|e| e["data"].clone())
        .collect();
    let states = |agent: &str| -> Vec<String> {
        waits
            .iter()
            .filter(|e| e["agent"] == agent)
            .map(|e| e["on"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let idle = waits
        .iter()
        .find(|e| e["on"] == "nothing")
        .unwrap_or_else(|| panic!("nobody recorded waiting on nothing:\n{log}"));
    assert_eq!(idle["goal"], "g1", "{idle}");
    assert!(
        idle["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("t1 is being worked on"),
        "{idle}"
    );
    for agent in ["exec", "rev"] {
        let states = states(agent);
        assert_eq!(states.last().map(String::as_str), Some("stopped"), "{log}");
        assert!(
            states.windows(2).all(|w| w[0] != w[1]),
            "{agent} recorded a state twice in a row: {states:?}"
        );
    }
}
