//! A bug planted on purpose is found by one of the default seeds, and that seed replays it.
//!
//! The bug (`PlantedBug::RenewIgnoresEpoch`, compiled in only with the `planted-bugs` feature)
//! makes a renewal re-arm a lease under whatever epoch it presents: a slice whose todo a
//! person took back keeps working on it. The `fenced_writes` invariant must catch it.

use std::path::Path;

use loopx_kernel::fault::{PlantedBug, plant};
use loopx_sim::{Options, Scenario};

#[test]
fn a_renewal_that_ignores_the_epoch_is_found_and_replayed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sim/short.toml");
    let plan = Scenario::load(&path).expect("reads");
    let run = |seed| {
        let options = Options {
            seed,
            name: "tests/sim/short.toml".to_owned(),
            ..Options::default()
        };
        loopx_sim::run(&plan, &options).expect("runs")
    };
    plant(Some(PlantedBug::RenewIgnoresEpoch));
    let found = (1..=20).find_map(|seed| {
        let report = run(seed);
        report.violation.clone().map(|v| (seed, v))
    });
    let (seed, violation) = found.expect("one of the 20 default seeds finds the planted bug");
    eprintln!("seed {seed} finds it: {violation:?}");
    assert_eq!(violation.rule, "fenced_writes", "{violation:?}");
    assert!(violation.detail.contains("renewal"), "{violation:?}");
    let again = run(seed).violation.expect("the seed replays it");
    assert_eq!(
        (again.rule, again.step, again.at),
        (violation.rule, violation.step, violation.at),
        "at the same step"
    );
    plant(None);
    let clean = run(seed);
    assert!(
        clean.passed(),
        "without the bug the same seed passes: {clean}"
    );
}
