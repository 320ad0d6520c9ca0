//! What the scenario tests share: running `tests/sim/NAME` at a seed, and the check that a
//! run held every invariant and got its goal done (or asked whether it is met).

use std::path::Path;

use loopx_sim::{Options, Scenario, SimReport};

/// The simulation of `tests/sim/NAME` at `seed`.
pub fn run(name: &str, seed: u64) -> SimReport {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/sim")
        .join(name);
    let plan = Scenario::load(&path).expect("the scenario reads");
    let options = Options {
        seed,
        name: format!("tests/sim/{name}"),
        ..Options::default()
    };
    loopx_sim::run(&plan, &options).expect("the simulation runs")
}

/// `run`, which held every invariant and ended with its goal done or asked about.
pub fn holds(name: &str, seed: u64) -> SimReport {
    let report = run(name, seed);
    assert!(report.passed(), "{report}");
    assert!(report.goal_done || report.goal_met_asked, "{report}");
    report
}
