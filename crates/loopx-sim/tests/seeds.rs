//! The default simulation run: 20 seeds of `tests/sim/short.toml` (every agent behaviour and
//! every fault on a day or two of work), each a test of its own so that they run in parallel.
//! A failure prints the report, with the rule, the step and the command that replays it.

use std::path::Path;

use loopx_sim::{Checked, Options, Scenario, SimReport};

fn scenario(name: &str) -> Checked {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/sim")
        .join(name);
    Scenario::load(&path).expect("the scenario reads")
}

fn run(name: &str, seed: u64) -> SimReport {
    run_for(name, seed, None)
}

fn run_for(name: &str, seed: u64, hours: Option<f64>) -> SimReport {
    let options = Options {
        seed,
        hours,
        name: format!("tests/sim/{name}"),
        ..Options::default()
    };
    loopx_sim::run(&scenario(name), &options).expect("the simulation runs")
}

fn holds(seed: u64) {
    let report = run("short.toml", seed);
    assert!(report.passed(), "{report}");
    // Not a vacuous pass: the run did work, met faults, and finished the goal (or finished its
    // todos and asks a person whether it is met).
    assert!(report.goal_done || report.goal_met_asked, "{report}");
    assert!(report.slices > 10, "{report}");
}

macro_rules! seeds {
    ($($name:ident = $seed:expr),* $(,)?) => {
        $(#[test] fn $name() { holds($seed) })*
    };
}

// Seeds 1 to 4 run in `seeds_1_to_4_meet_every_fault_and_behaviour`.
seeds!(
    seed_05 = 5,
    seed_06 = 6,
    seed_07 = 7,
    seed_08 = 8,
    seed_09 = 9,
    seed_10 = 10,
    seed_11 = 11,
    seed_12 = 12,
    seed_13 = 13,
    seed_14 = 14,
    seed_15 = 15,
    seed_16 = 16,
    seed_17 = 17,
    seed_18 = 18,
    seed_19 = 19,
    seed_20 = 20,
);

/// Seeds 1 to 4 hold, and together they meet every fault and every agent behaviour the
/// scenario names: a fault that never fired would be a check that never ran.
#[test]
fn seeds_1_to_4_meet_every_fault_and_behaviour() {
    let reports: Vec<SimReport> = [1, 2, 3, 4]
        .into_iter()
        .map(|s| run("short.toml", s))
        .collect();
    for report in &reports {
        assert!(report.passed() && report.goal_done, "{report}");
    }
    let sum = |f: &dyn Fn(&SimReport) -> u64| reports.iter().map(f).sum::<u64>();
    let faults = [
        ("store busy", sum(&|r| r.faults.store_busy)),
        ("disk full", sum(&|r| r.faults.disk_full)),
        ("crash at a write", sum(&|r| r.faults.crashes_at_writes)),
        ("kill", sum(&|r| r.faults.kills)),
        ("clock step", sum(&|r| r.faults.clock_steps)),
        ("slice recovered", sum(&|r| r.recovered_slices)),
        ("question answered", sum(&|r| r.answered)),
        ("todo taken back", sum(&|r| r.todos_taken_back)),
        ("goal amended", sum(&|r| r.goal_amendments)),
        ("forgery refused", sum(&|r| r.forgeries_refused)),
    ];
    for (what, count) in faults {
        assert!(count > 0, "no {what} in seeds 1-4");
    }
    for act in [
        "completes",
        "progress",
        "usage_limit",
        "not_logged_in",
        "transient",
        "hangs",
        "crashes",
        "garbage",
        "forged_report",
        "asks",
    ] {
        let n: u64 = reports
            .iter()
            .map(|r| r.acts.get(act).copied().unwrap_or(0))
            .sum();
        assert!(n > 0, "no agent {act} in seeds 1-4");
    }
}

/// Evidence that ages: people change the code a dozen times a day, and no todo is finished on
/// a test result older than the last change (`done_on_fresh_evidence`). Not vacuous: changes
/// were made, a done was refused for want of a fresh result (`unverified`), and the goal was
/// still done. The goal is amended daily too: the re-planning slices drop and rewrite todos,
/// and only they (`replanned_by_the_replanner`).
#[test]
fn aging_seeds_1_to_4_finish_no_todo_on_a_stale_test_result() {
    let (mut unverified, mut replanned) = (0, 0);
    for seed in 1..=4 {
        let report = run("aging.toml", seed);
        assert!(report.passed() && report.goal_done, "{report}");
        assert!(report.files_changed > 0, "{report}");
        replanned += report.todos_replanned;
        unverified += report
            .slices_by_outcome
            .get("unverified")
            .copied()
            .unwrap_or(0);
    }
    assert!(unverified > 0, "no done was refused in seeds 1-4");
    // And the amendments were re-planned: `replanned_by_the_replanner` judged real drops and
    // rewrites.
    assert!(replanned > 0, "no todo was re-planned in seeds 1-4");
}

/// The same seed replays the same run: the same steps, slices and event log.
#[test]
fn a_seed_replays_exactly() {
    let ten_hours = |seed| run_for("short.toml", seed, Some(10.0));
    let (a, b) = (ten_hours(3), ten_hours(3));
    assert_eq!(a.events_digest, b.events_digest);
    assert_eq!((a.steps, a.slices, a.events), (b.steps, b.slices, b.events));
    assert_eq!(a.slices_by_outcome, b.slices_by_outcome);
    let c = ten_hours(4);
    assert_ne!(
        a.events_digest, c.events_digest,
        "another seed, another run"
    );
}

/// 1,000 seeds (`cargo nextest run -p loopx-sim --run-ignored only thousand`; about an hour
/// on 2 cores in a release build).
#[test]
#[ignore = "long: 1,000 simulations"]
fn thousand_seeds() {
    let plan = scenario("short.toml");
    let mut failed = Vec::new();
    for seed in 1..=1000 {
        let options = Options {
            seed,
            name: "tests/sim/short.toml".to_owned(),
            ..Options::default()
        };
        let report = loopx_sim::run(&plan, &options).expect("runs");
        if !report.passed() {
            failed.push(report.to_string());
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// The 200-hour scenario (`loopx sim --seed 1`), as `docs/benchmarks.md` measures it.
#[test]
#[ignore = "long: the 200-hour scenario"]
fn two_hundred_hours() {
    let report = run("200h.toml", 1);
    assert!(report.passed(), "{report}");
    assert!(report.goal_done, "{report}");
}
