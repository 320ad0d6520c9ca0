//! `loopx sim`: the deterministic simulation of the whole loop (`docs/design/simulation.md`).
//! Without a scenario it runs the built-in one (`tests/sim/200h.toml`). With `--seeds N` it
//! runs N seeds from `--seed` and prints one line each. A broken invariant exits with code 1
//! (a bug in loopx), naming the seed that replays it.

use std::path::PathBuf;

use loopx_sim::{Options, Scenario, SimReport};

use crate::args::SimArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::exit_code;

/// The built-in scenario.
const BUILTIN: &str = include_str!("../../../../tests/sim/200h.toml");

pub fn run(ctx: &mut Ctx, args: SimArgs) -> Result<(), ExpectedError> {
    let (plan, name) = match &args.scenario {
        Some(path) => (Scenario::load(path), path.display().to_string()),
        None => (
            Scenario::parse(BUILTIN, "tests/sim/200h.toml (built in)"),
            "tests/sim/200h.toml".to_owned(),
        ),
    };
    let plan = plan.map_err(|e| ExpectedError::Config(e.to_string()))?;
    if args.seeds == 0 {
        return Err(ExpectedError::Usage(
            "--seeds must be at least 1".to_owned(),
        ));
    }
    if args.keep.is_some() && args.seeds > 1 {
        return Err(ExpectedError::Usage(
            "--keep keeps one run's project: use it with one seed".to_owned(),
        ));
    }
    let mut failed = Vec::new();
    for seed in args.seed..args.seed.saturating_add(args.seeds) {
        let options = Options {
            seed,
            hours: args.hours,
            keep: args.keep.clone(),
            name: name.clone(),
        };
        let report =
            loopx_sim::run(&plan, &options).map_err(|e| ExpectedError::Config(e.to_string()))?;
        show(ctx, &report, args.seeds > 1)?;
        if !report.passed() {
            failed.push(seed);
        }
    }
    if let Some(dir) = &args.keep {
        ctx.line(format!("project kept in {}", dir.display()))?;
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(ExpectedError::Reported {
            summary: format!(
                "an invariant broke with seed(s) {}: replay one with `loopx sim{}{} --seed N`",
                failed
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                args.scenario
                    .as_ref()
                    .map_or_else(String::new, |p: &PathBuf| format!(" {}", p.display())),
                args.hours
                    .map_or_else(String::new, |h| format!(" --hours {h}"))
            ),
            code: exit_code::INTERNAL,
        }),
    }
}

fn show(ctx: &mut Ctx, report: &SimReport, brief: bool) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&serde_json::json!({"format_version": 1, "sim": report}));
    }
    if !brief {
        return ctx.line(report.to_string());
    }
    let verdict = match &report.violation {
        None => "ok".to_owned(),
        Some(v) => format!("BROKEN {} at step {}: {}", v.rule, v.step, v.detail),
    };
    ctx.line(format!(
        "seed {}: {:.1} h, {} slices ({} wasted), goal {}, {:.1} s: {verdict}",
        report.seed,
        report.hours,
        report.slices,
        report.wasted_slices,
        if report.goal_done { "done" } else { "not done" },
        report.wall_ms as f64 / 1000.0
    ))
}
