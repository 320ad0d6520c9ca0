//! loopx's own cost per monitor poll, beyond the check command (issue 28's budget: 20 ms).
//!
//! `cargo bench -p loopx-cli --bench poll [-- --polls 50]`.
//!
//! Method. A project on disk (redb under `target/`), a goal, and for each round one monitor whose
//! check is `true`, due at once; a round is one `loopx_supervisor::poll::poll_due`, as `loopx
//! run`'s polling thread calls it: read the goal's monitors, claim the poll (one transaction),
//! run the check contained (a room, a PTY, the sandbox through `loopx __exec`, the sweep), record
//! the result (one transaction, which finishes the met monitor with its evidence), and read the
//! monitors again for the next due time. The check's own cost is `sh -c true` spawned directly,
//! as many times. The difference of the medians is loopx's own time per poll.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use loopx_kernel::model::{MonitorSpec, PermissionLevel};
use loopx_kernel::store::{NewGoal, NewTodo};
use loopx_kernel::{Project, Store, Timestamp};
use loopx_supervisor::World;
use loopx_supervisor::poll::poll_due;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let polls: usize = args
        .iter()
        .position(|a| a == "--polls")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).expect("a project directory");
    let project = Project::create(dir.path()).expect("a project");
    let store = Store::create(&project, Timestamp::now(), "human:bench").expect("a store");
    store
        .run(
            NewGoal {
                priority: 0,
                id: None,
                objective: "Wait".into(),
                scope: vec![],
                permission: PermissionLevel::WorkspaceWrite,
                share: 1.0,
                isolation: loopx_kernel::model::Isolation::Shared,
            },
            "human:bench",
            Timestamp::now(),
        )
        .expect("a goal");
    drop(store);
    let world = World::real(Default::default(), Default::default());
    let exe = Path::new(env!("CARGO_BIN_EXE_loopx"));
    let mut rounds = Vec::with_capacity(polls);
    for i in 0..polls {
        let new = NewTodo {
            title: format!("Wait for job {i}"),
            monitor: Some(MonitorSpec {
                check: "true".into(),
                every_ms: 60_000,
                ..MonitorSpec::default()
            }),
            ..NewTodo::default()
        };
        world
            .stores
            .with(&project, |s| s.run(new, "human:bench", Timestamp::now()))
            .expect("a monitor");
        let started = Instant::now();
        let polled = poll_due(&project, &world, exe, &|| false).expect("a round of polls");
        rounds.push(started.elapsed());
        assert_eq!(polled.polls.len(), 1, "one poll a round");
        assert_eq!(polled.polls[0].result, "met", "{:?}", polled.polls[0]);
    }
    let mut bare = Vec::with_capacity(polls);
    for _ in 0..polls {
        let started = Instant::now();
        let status = Command::new("/bin/sh")
            .args(["-c", "true"])
            .status()
            .expect("sh runs");
        bare.push(started.elapsed());
        assert!(status.success());
    }
    let (poll, check) = (median(rounds.clone()), median(bare));
    println!("monitor poll, {polls} rounds of one poll each (check `true`)");
    println!(
        "  a round (claim, contained check, record): median {}",
        ms(poll)
    );
    println!(
        "  the check alone (sh -c true):              median {}",
        ms(check)
    );
    println!(
        "  loopx's own time per poll:                 {}",
        ms(poll.saturating_sub(check))
    );
    println!(
        "  rounds: min {}, max {}",
        ms(*rounds.iter().min().expect("rounds")),
        ms(*rounds.iter().max().expect("rounds"))
    );
}
