//! Many `loopx` processes on one store at once: exactly one winner per claim, nothing lost,
//! no store error ever reaching a user.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::support::Loopx;

#[test]
fn twelve_processes_race_for_one_todo_fifty_rounds() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Race"]);
    let agents: Vec<String> = (0..12).map(|i| format!("a{i}")).collect();
    for agent in &agents {
        loopx.ok(&["agent", "add", agent, "--profile", "executor"]);
    }
    for round in 1..=50 {
        loopx.ok(&["todo", "add", &format!("Round {round}")]);
        let todo = format!("t{round}");
        let children: Vec<_> = agents
            .iter()
            .map(|agent| {
                loopx
                    .command(&["todo", "claim", &todo, "--agent", agent])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let mut winners = 0;
        for child in children {
            let out = child.wait_with_output().expect("wait");
            match out.status.code() {
                Some(0) => winners += 1,
                Some(5) => {}
                other => panic!(
                    "round {round}: exit {other:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            }
        }
        assert_eq!(winners, 1, "round {round}: exactly one claim wins");
    }
    let todos = loopx
        .ok(&["todo", "list", "--json", "--state", "claimed"])
        .json();
    let epochs: Vec<u64> = todos["todos"]
        .as_array()
        .expect("todos")
        .iter()
        .map(|t| t["epoch"].as_u64().expect("epoch"))
        .collect();
    assert_eq!(epochs, vec![1; 50], "one grant per todo");
    let doctor = loopx.run(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);
}

#[test]
fn eight_writers_add_2400_todos_while_a_peer_claims_and_renews() {
    let loopx = Arc::new(Loopx::new());
    loopx.ok(&["goal", "start", "Load"]);
    loopx.ok(&["agent", "add", "busy", "--profile", "executor"]);
    loopx.ok(&["todo", "add", "Held throughout"]);
    let stop = Arc::new(AtomicBool::new(false));
    let claimer = {
        let (loopx, stop) = (Arc::clone(&loopx), Arc::clone(&stop));
        std::thread::spawn(move || {
            loopx.ok(&["todo", "claim", "t1", "--agent", "busy"]);
            let mut renewals = 0;
            while !stop.load(Ordering::Relaxed) {
                loopx.ok(&["todo", "renew", "t1", "--agent", "busy", "--epoch", "1"]);
                loopx.ok(&["status", "--json"]);
                renewals += 1;
            }
            renewals
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let loopx = Arc::clone(&loopx);
            std::thread::spawn(move || {
                for i in 0..300 {
                    let run = loopx.run(&["todo", "add", &format!("w{w} item {i}")]);
                    assert_eq!(run.code, 0, "writer {w} item {i}: {}", run.stderr);
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer thread");
    }
    stop.store(true, Ordering::Relaxed);
    let renewals = claimer.join().expect("claimer thread");
    assert!(renewals > 0);
    let todos = loopx.ok(&["todo", "list", "--json", "--all"]).json();
    let titles: std::collections::BTreeSet<String> = todos["todos"]
        .as_array()
        .expect("todos")
        .iter()
        .map(|t| t["title"].as_str().expect("title").to_owned())
        .collect();
    assert_eq!(titles.len(), 2401);
    for w in 0..8 {
        for i in 0..300 {
            assert!(
                titles.contains(&format!("w{w} item {i}")),
                "w{w} item {i} is present"
            );
        }
    }
    let doctor = loopx.run(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);
}
