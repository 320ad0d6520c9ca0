//! Two active goals (issue 49): `tests/sim/two-goals.toml` over 20 seeds, each a test of its
//! own so that they run in parallel. Every invariant holds, `goal_not_stalled` among them: a
//! goal that waits (a person's question holds it back, or it used its share) never stalls the
//! other.

mod common;

use loopx_sim::SimReport;

/// Every invariant holds and both goals are finished: not a vacuous pass.
fn holds(seed: u64) -> SimReport {
    let report = common::holds("two-goals.toml", seed);
    assert!(
        report.todos_done == report.todos && report.todos > 0,
        "{report}"
    );
    report
}

macro_rules! seeds {
    ($($name:ident = $seed:expr),* $(,)?) => {
        $(#[test] fn $name() { holds($seed); })*
    };
}

// Seed 1 runs in `two_goals_01_holds_goals_back`.
seeds!(
    two_goals_02 = 2,
    two_goals_03 = 3,
    two_goals_04 = 4,
    two_goals_05 = 5,
    two_goals_06 = 6,
    two_goals_07 = 7,
    two_goals_08 = 8,
    two_goals_09 = 9,
    two_goals_10 = 10,
    two_goals_11 = 11,
    two_goals_12 = 12,
    two_goals_13 = 13,
    two_goals_14 = 14,
    two_goals_15 = 15,
    two_goals_16 = 16,
    two_goals_17 = 17,
    two_goals_18 = 18,
    two_goals_19 = 19,
    two_goals_20 = 20,
);

/// Seed 1 holds, and in it a person's question held a goal back: the stretches
/// `goal_not_stalled` judges while a goal is held happened (while one is over its share, they
/// happen in every seed).
#[test]
fn two_goals_01_holds_goals_back() {
    let report = holds(1);
    assert!(report.goal_holds > 0, "{report}");
}
