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
    let baseline = checked_baseline(&args, &plan.scenario, &name)?;
    // The history page reads the run's store after it: kept where asked, else for a moment.
    let temp = match (&args.history, &args.keep) {
        (Some(_), None) => Some(tempfile::tempdir().map_err(|e| {
            ExpectedError::Usage(format!(
                "cannot make a directory for the simulated project: {e}"
            ))
        })?),
        _ => None,
    };
    let keep = args
        .keep
        .clone()
        .or_else(|| temp.as_ref().map(|t| t.path().join("project")));
    let mut failed = Vec::new();
    for seed in args.seed..args.seed.saturating_add(args.seeds) {
        let options = Options {
            seed,
            hours: args.hours,
            keep: keep.clone(),
            name: name.clone(),
            baseline: None,
            git_timeout: ctx.git_timeout,
        };
        let report =
            loopx_sim::run(&plan, &options).map_err(|e| ExpectedError::Config(e.to_string()))?;
        if !report.passed() {
            failed.push(seed);
        }
        let Some(period) = baseline else {
            show(ctx, &report, args.seeds > 1)?;
            continue;
        };
        let timed = Options {
            baseline: Some(period),
            ..options
        };
        let other =
            loopx_sim::run(&plan, &timed).map_err(|e| ExpectedError::Config(e.to_string()))?;
        if !other.passed() && !failed.contains(&seed) {
            failed.push(seed);
        }
        compare(ctx, &report, &other)?;
    }
    if let (Some(page), Some(dir)) = (&args.history, &keep) {
        history_page(ctx, dir, page)?;
    }
    if let Some(dir) = &args.keep {
        ctx.line(format!("project kept in {}", dir.display()))?;
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(ExpectedError::Reported {
            summary: broke(&failed, &args),
            code: exit_code::INTERNAL,
        }),
    }
}

/// `--history FILE`: the page of the simulated project's first goal, from its store.
fn history_page(
    ctx: &mut Ctx,
    dir: &std::path::Path,
    page: &std::path::Path,
) -> Result<(), ExpectedError> {
    let project = loopx_kernel::Project::at(dir)
        .map_err(|e| ExpectedError::Config(format!("the simulated project: {e}")))?;
    // The run's own end is the history's "now", not this machine's time: a simulated week
    // may end before or after it.
    let last = loopx_app::App::new(project.clone(), loopx_app::Caller::person("sim"), None)
        .read(|s| s.events_tail(1))?
        .pop()
        .map(|e| e.at);
    let project = match last {
        Some(end) => {
            let skew = end.0 as i64 - project.store_settings().clock.host_now().0 as i64;
            let settings = loopx_kernel::StoreSettings {
                clock: loopx_kernel::time::WallClock::skewed(skew),
                ..project.store_settings().clone()
            };
            project.with_store(settings)
        }
        None => project,
    };
    let app = loopx_app::App::new(project, loopx_app::Caller::person("sim"), None);
    let history = app.goal_history(Some(loopx_kernel::GoalId(1)), None)?;
    super::history::write_page(ctx, &history, page)
}

/// Which seeds broke an invariant, and the command that replays one.
fn broke(failed: &[u64], args: &SimArgs) -> String {
    format!(
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
    )
}

/// The options that cannot go together, refused; the timer baseline to compare with, if asked.
fn checked_baseline(
    args: &SimArgs,
    scenario: &Scenario,
    name: &str,
) -> Result<Option<std::time::Duration>, ExpectedError> {
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
    if args.history.is_some() && (args.seeds > 1 || args.baseline.is_some()) {
        return Err(ExpectedError::Usage(
            "--history draws one run: use it with one seed and no --baseline".to_owned(),
        ));
    }
    let baseline = args.baseline.as_deref().map(timer).transpose()?;
    if baseline.is_some() && scenario.experiments.is_none() {
        return Err(ExpectedError::Usage(format!(
            "--baseline compares how agents wait for long jobs: {name} has no [experiments] section\n(hint: `loopx sim tests/sim/experiments.toml --baseline timer:15m`)"
        )));
    }
    if baseline.is_some() && args.keep.is_some() {
        return Err(ExpectedError::Usage(
            "--keep keeps one run's project: leave out --baseline".to_owned(),
        ));
    }
    Ok(baseline)
}

/// `timer:15m`: the period of a timer baseline.
fn timer(text: &str) -> Result<std::time::Duration, ExpectedError> {
    let bad = || {
        ExpectedError::Usage(format!(
            "--baseline `{text}` is not a policy: the one there is is `timer:DURATION` (`timer:15m`), every agent woken that often to look"
        ))
    };
    let period = text.strip_prefix("timer:").ok_or_else(bad)?;
    let period = humantime::parse_duration(period).map_err(|_| bad())?;
    if period < std::time::Duration::from_secs(60) || period > std::time::Duration::from_secs(3600)
    {
        return Err(ExpectedError::Usage(format!(
            "--baseline {text}: the timer's period must be between 1m and 1h (a whole number of wakes an hour)"
        )));
    }
    Ok(period)
}

/// One seed, loopx and the baseline side by side.
fn compare(ctx: &mut Ctx, loopx: &SimReport, baseline: &SimReport) -> Result<(), ExpectedError> {
    let side = |r: &SimReport| {
        let mut v = serde_json::to_value(&r.experiments).unwrap_or_default();
        v["goal_done"] = r.goal_done.into();
        v["hours"] = r.hours.into();
        v["passed"] = r.passed().into();
        if let Some(halt) = &r.violation {
            v["violation"] = serde_json::to_value(halt).unwrap_or_default();
        }
        v
    };
    if ctx.json {
        return ctx.json_out(&serde_json::json!({
            "format_version": 1,
            "seed": loopx.seed,
            "loopx": side(loopx),
            "baseline": side(baseline),
        }));
    }
    for r in [loopx, baseline] {
        let Some(e) = &r.experiments else { continue };
        let verdict = verdict(r);
        ctx.line(format!(
            "seed {} {:<10} {} agent slices ({} wasted), {} tokens, {} polls; {}/{} jobs acted on, median {} after the job ended (max {}); goal {} in {:.1} h: {verdict}",
            r.seed,
            e.mode,
            e.agent_slices,
            e.wasted_slices,
            e.tokens,
            e.polls,
            e.jobs_acted_on,
            e.jobs_started,
            minutes(e.act_minutes_median),
            minutes(e.act_minutes_max),
            if r.goal_done { "done" } else { "not done" },
            r.hours,
        ))?;
    }
    Ok(())
}

/// `ok`, or the broken rule with its step.
fn verdict(report: &SimReport) -> String {
    match &report.violation {
        None => "ok".to_owned(),
        Some(v) => format!("BROKEN {} at step {}: {}", v.rule, v.step, v.detail),
    }
}

fn minutes(m: Option<f64>) -> String {
    m.map_or_else(|| "-".to_owned(), |m| format!("{m:.1} min"))
}

fn show(ctx: &mut Ctx, report: &SimReport, brief: bool) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&serde_json::json!({"format_version": 1, "sim": report}));
    }
    if !brief {
        return ctx.line(report.to_string());
    }
    let verdict = verdict(report);
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
