//! Issue 28: waiting on long jobs with monitors, against a timer that wakes every agent every
//! 15 minutes to look (`tests/sim/experiments.toml`, `loopx sim … --baseline timer:15m`). Five
//! seeds here; the 20-seed figures are in `docs/benchmarks.md`.

use std::path::Path;
use std::time::Duration;

use loopx_sim::{Options, Scenario, SimReport};

fn run(seed: u64, baseline: Option<Duration>) -> SimReport {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sim/experiments.toml");
    let plan = Scenario::load(&path).expect("the scenario reads");
    let options = Options {
        seed,
        name: "tests/sim/experiments.toml".to_owned(),
        baseline,
        ..Options::default()
    };
    loopx_sim::run(&plan, &options).expect("the simulation runs")
}

fn compare(seed: u64) {
    let loopx = run(seed, None);
    let timer = run(seed, Some(Duration::from_secs(15 * 60)));
    for r in [&loopx, &timer] {
        assert!(r.passed(), "{r}");
        assert!(r.goal_done, "{r}");
    }
    let (l, t) = (
        loopx.experiments.as_ref().expect("figures"),
        timer.experiments.as_ref().expect("figures"),
    );
    // The same work got done: every job started and was acted on, either way.
    assert_eq!((l.jobs_started, l.jobs_acted_on), (12, 12), "{l:?}");
    assert_eq!((t.jobs_started, t.jobs_acted_on), (12, 12), "{t:?}");
    // loopx looked at no job before it ended; the polls did the looking, at no quota.
    assert_eq!(l.wasted_slices, 0, "{l:?}");
    assert!(l.polls > 0 && t.polls == 0, "{l:?} {t:?}");
    assert!(
        l.agent_slices * 3 <= t.agent_slices,
        "loopx {} slices, the timer {}: {l:?} {t:?}",
        l.agent_slices,
        t.agent_slices
    );
    assert!(l.tokens * 3 <= t.tokens, "{l:?} {t:?}");
    // A finished job is acted on within one cadence (10 minutes), plus the decision's moment.
    let latest = l.act_minutes_max.expect("acted on");
    assert!(latest <= 11.0, "{latest} minutes: {l:?}");
}

#[test]
fn seed_1() {
    compare(1);
}

#[test]
fn seed_2() {
    compare(2);
}

#[test]
fn seed_3() {
    compare(3);
}

#[test]
fn seed_4() {
    compare(4);
}

#[test]
fn seed_5() {
    compare(5);
}
