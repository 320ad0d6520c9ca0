//! The crash soak (ignored by default; `docs/design/run-loop.md`, "Crash soak", has how to run
//! it and its figures): `loopx run` killed with SIGKILL a hundred times at random moments while
//! two agents work, fork daemons and call `loopx report`. Afterwards `loopx doctor` finds
//! nothing wrong, the goal completes, and every report an agent saw acknowledged is in the store.
//!
//! `cargo nextest run -p loopx-cli --test e2e --run-ignored only soak` (set `LOOPX_SOAK_KILLS`
//! for another count, `LOOPX_SOAK_SEED` to replay a run's moments).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{LOOPX, Loopx, script_agent};

/// An agent that leaves a daemon behind (in a session of its own, so only its marker ties it
/// to the slice), reports evidence with a token it records once acknowledged, takes 0.2–1.2 s,
/// then marks its todo done and reports.
fn agent_script() -> String {
    format!(
        r#"cat >/dev/null
(setsid sh -c 'sleep 30' >/dev/null 2>&1 &)
tok="$LOOPX_SLICE.$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
if "{LOOPX}" report evidence note "ack $tok" >/dev/null 2>&1; then echo "$tok" >> acks.log; fi
sleep "$(od -An -N1 -tu1 /dev/urandom | awk '{{ printf "%.2f", 0.2 + $1 / 255 }}')"
"{LOOPX}" report done --summary "done $tok" >/dev/null 2>&1
printf '%s\n' '```loopx-report' '{{"status":"done","summary":"did it"}}' '```'"#
    )
}

/// Enough todos that the kills land while agents work, not after the goal is done.
const TODOS: usize = 250;

/// A small linear congruential generator: the moments of the kills, replayable from the seed.
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

#[test]
#[ignore = "a soak of minutes: run it explicitly (see the module docs)"]
fn soak_kill_9_loopx_run_at_random_moments() {
    let kills: usize = std::env::var("LOOPX_SOAK_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let seed = std::env::var("LOOPX_SOAK_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("soak: {kills} kills, LOOPX_SOAK_SEED={seed}");
    let mut moments = Moments(seed);
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the soak notes"]);
    for name in ["a", "b"] {
        script_agent(
            &loopx,
            name,
            &agent_script(),
            "max_time = \"60s\"\ngrace = \"1s\"",
        );
    }
    for n in 1..=TODOS {
        loopx.ok(&["todo", "add", &format!("Write note {n}")]);
    }
    let started = Instant::now();
    let mut killed_in_a_slice = 0;
    for _ in 0..kills {
        // The kill lands at a random moment, whatever loopx is doing.
        loopx.killed_after(&["run"], Duration::from_millis(50 + moments.next_ms(750)));
        let status = loopx.ok(&["status", "--json"]).json();
        if status["running"].as_array().is_some_and(|r| !r.is_empty()) {
            killed_in_a_slice += 1;
        }
    }
    let killing = started.elapsed();
    // Afterwards: one run to the end.
    let finish = Instant::now();
    let todos_left = loopx.ok(&["todo", "list", "--json"]).json()["todos"]
        .as_array()
        .map_or(0, Vec::len);
    let run = loopx.run_env(&["run", "--for", "20m"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let finishing = finish.elapsed();
    let goals = loopx.ok(&["goal", "list", "--json"]).json();
    assert_eq!(goals["goals"][0]["status"], "done", "{goals}");
    let doctor = loopx.run(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
    let status = loopx.ok(&["status", "--json"]).json();
    assert_eq!(status["running"], Value::Array(vec![]), "{status}");

    // Every acknowledged report is in the store.
    let acked: BTreeSet<String> = std::fs::read_to_string(loopx.path().join("acks.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| format!("ack {}", l.trim()))
        .collect();
    let evidence = loopx
        .ok(&["evidence", "list", "--json", "--limit", "100000"])
        .json();
    let stored: BTreeSet<String> = evidence["evidence"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|e| e["summary"].as_str().map(str::to_owned))
        .collect();
    let lost: Vec<&String> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged reports lost: {lost:?}");

    let log = loopx.ok(&["log", "--json", "--limit", "1000000"]).stdout;
    let kinds = |kind: &str| {
        log.lines()
            .filter(|l| l.contains(&format!("\"kind\":\"{kind}\"")))
            .count()
    };
    let interrupted = log
        .lines()
        .filter(|l| l.contains("\"kind\":\"slice_ended\"") && l.contains("\"interrupted\""))
        .count();
    eprintln!(
        "soak figures: {kills} kills in {killing:?} ({killed_in_a_slice} with a slice running), \
         then {todos_left} todos left and the goal done in {finishing:?}; {} slices \
         ({interrupted} interrupted), {} todos done, {} acknowledged reports, none lost; \
         doctor: ok",
        kinds("slice_started"),
        kinds("todo_done"),
        acked.len()
    );
    // No daemon of any slice outlives the soak: the sweeps found them by their marker.
    let leftovers = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("environ")).is_ok_and(|env| {
                env.split(|b| *b == 0).any(|var| {
                    var.starts_with(b"LOOPX_PROJECT=")
                        && var.ends_with(loopx.path().to_string_lossy().as_bytes())
                })
            })
        })
        .count();
    assert_eq!(
        leftovers, 0,
        "processes of the soak's slices are still running"
    );
}
