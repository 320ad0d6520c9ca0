//! Long experiments (issue 28): jobs that run for hours, waited for with monitors, or looked
//! at on a timer (`loopx sim --baseline timer:15m`), and what each way costs.
//!
//! A `Run experiment N` slice that completes starts job N, which ends (or fails) hours later
//! on the true clock, and proposes `Evaluate experiment N`: with loopx as the `then` of a
//! monitor whose check is `sim-job N` (the simulation answers it from the job's state: exit 1
//! while it runs, 0 once it ended), under the baseline as a plain todo. An evaluation slice
//! that starts before its job ended can only look and report progress: a wasted slice. The
//! books keep, per job, when it ended and when an agent first acted on it after that.

use std::collections::BTreeMap;
use std::time::Duration;

use loopx_kernel::Timestamp;
use serde::Serialize;

/// A job an agent started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job {
    pub ends_at: Timestamp,
    pub ok: bool,
}

/// What a slice on an experiment todo is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Starts job N and proposes its evaluation (as a monitor's `then`, polled every
    /// `every`, or as a plain todo under the baseline).
    Run { n: u32, every: Option<Duration> },
    /// Evaluates job N, which ended.
    Evaluate { n: u32 },
    /// Looks at job N, which has not ended: nothing to do yet.
    Look { n: u32 },
}

pub(crate) fn run_title(n: u32) -> String {
    format!("Run experiment {n}")
}

pub(crate) fn evaluate_title(n: u32) -> String {
    format!("Evaluate experiment {n}")
}

/// The check of job N's monitor.
pub(crate) fn check_of(n: u32) -> String {
    format!("sim-job {n}")
}

/// The experiment a todo's title names: `(n, is the run)`.
pub(crate) fn parse_title(title: &str) -> Option<(u32, bool)> {
    if let Some(n) = title.strip_prefix("Run experiment ") {
        return n.parse().ok().map(|n| (n, true));
    }
    title
        .strip_prefix("Evaluate experiment ")
        .and_then(|n| n.parse().ok())
        .map(|n| (n, false))
}

/// What `sim-job N` prints and exits with at true time `now`.
pub(crate) fn check(jobs: &BTreeMap<u32, Job>, now: Timestamp, check: &str) -> (i32, String) {
    let job = check
        .strip_prefix("sim-job ")
        .and_then(|n| n.parse::<u32>().ok())
        .and_then(|n| jobs.get(&n).map(|job| (n, job)));
    match job {
        None => (2, format!("{check}: no such job")),
        Some((n, job)) if now < job.ends_at => (1, format!("job {n} running")),
        Some((n, job)) if job.ok => (0, format!("job {n} finished: ok")),
        Some((n, _)) => (0, format!("job {n} finished: failed")),
    }
}

/// The experiments' figures, for one way of waiting.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExperimentsReport {
    /// `loopx` (monitors), or `timer:15m`.
    pub mode: String,
    /// Every agent slice of the run.
    pub agent_slices: u64,
    /// Tokens the agents used.
    pub tokens: u64,
    /// Evaluation slices that started before their job ended: they could only look.
    pub wasted_slices: u64,
    /// Monitor polls loopx ran (no agent, no quota).
    pub polls: u64,
    pub jobs_started: u64,
    pub jobs_ended: u64,
    /// Jobs an agent acted on after they ended.
    pub jobs_acted_on: u64,
    /// From a job's end to the first slice on its evaluation, in minutes.
    pub act_minutes_median: Option<f64>,
    pub act_minutes_max: Option<f64>,
}

/// What the books keep of the experiments.
#[derive(Debug, Default)]
pub(crate) struct ExperimentBooks {
    pub jobs: BTreeMap<u32, Job>,
    /// Per job: from its end to the first evaluation slice after it.
    pub acted: BTreeMap<u32, Duration>,
    pub looks: u64,
    pub polls: u64,
}

impl ExperimentBooks {
    /// A slice on `step` started at true time `now`.
    pub(crate) fn started(&mut self, step: Step, now: Timestamp) {
        match step {
            Step::Look { .. } => self.looks += 1,
            Step::Evaluate { n } => {
                if let Some(job) = self.jobs.get(&n)
                    && !self.acted.contains_key(&n)
                {
                    self.acted.insert(n, now.since(job.ends_at));
                }
            }
            Step::Run { .. } => {}
        }
    }

    /// The figures at true time `now`.
    pub(crate) fn report(
        &self,
        mode: String,
        agent_slices: u64,
        tokens: u64,
        now: Timestamp,
    ) -> ExperimentsReport {
        let mut minutes: Vec<f64> = self
            .acted
            .values()
            .map(|d| d.as_secs_f64() / 60.0)
            .collect();
        minutes.sort_by(f64::total_cmp);
        ExperimentsReport {
            mode,
            agent_slices,
            tokens,
            wasted_slices: self.looks,
            polls: self.polls,
            jobs_started: self.jobs.len() as u64,
            jobs_ended: self.jobs.values().filter(|j| j.ends_at <= now).count() as u64,
            jobs_acted_on: self.acted.len() as u64,
            act_minutes_median: minutes.get(minutes.len() / 2).copied(),
            act_minutes_max: minutes.last().copied(),
        }
    }
}
