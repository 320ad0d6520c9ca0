//! Issue 50: executor/reviewer pairs handing work back and forth (`tests/sim/handbacks.toml`).
//! On 20 seeds no work slice starts a round more than `[limits] handbacks` past its chain's
//! start, or past the round a person last answered about (`handbacks_asked`, counted by the
//! simulation from its own titles, not by loopx's guard), and every goal still gets done.

mod common;

use loopx_sim::SimReport;

fn holds(seed: u64) -> SimReport {
    common::holds("handbacks.toml", seed)
}

macro_rules! seeds {
    ($($name:ident = $seed:expr),* $(,)?) => {
        $(#[test] fn $name() { holds($seed); })*
    };
}

// Seeds 1 to 4 run in `seeds_1_to_4_ask_a_person_and_go_on`.
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

/// Not a vacuous pass: on seeds 1 to 4 some chain reached the limit, a person was asked and
/// answered, and the chain went on past it (more rounds than the limit).
#[test]
fn seeds_1_to_4_ask_a_person_and_go_on() {
    let reports: Vec<SimReport> = (1..=4).map(holds).collect();
    let figures: Vec<_> = reports
        .iter()
        .map(|r| {
            r.handbacks
                .clone()
                .expect("a [handbacks] scenario reports them")
        })
        .collect();
    let asked: u64 = figures.iter().map(|h| h.asked_at_limit).sum();
    assert!(asked > 0, "no person was asked at the limit: {figures:?}");
    assert!(
        figures.iter().any(|h| h.longest_chain > 4),
        "no chain went on past the limit: {figures:?}"
    );
}
