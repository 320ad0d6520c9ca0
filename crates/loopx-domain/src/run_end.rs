//! What ends `loopx run` (`docs/design/run-loop.md`, "Shape"): a stop, every agent's loop
//! ended, the `--for` time or the `--max-slices` count spent, or, with `--on-gate exit`, a
//! question no agent can go on without. The supervisor's coordinator asks once no worker runs.

use loopx_quota::DecisionKind;
use serde::Serialize;

/// What `--on-gate` says to do when a person must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnGate {
    /// Show the question once, keep the other agents working, wait for the answer.
    #[default]
    Wait,
    /// Exit (with the "halted on a gate" code) once no agent can go on.
    Exit,
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Every agent's loop ended: the goal is done, paused, or missing.
    Goal,
    /// `--max-slices` slices ran.
    MaxSlices,
    /// `--for` passed.
    Time,
    /// `--on-gate exit`: a person must answer and no agent can go on.
    Gate,
    /// A signal asked loopx to stop.
    Shutdown,
    /// An agent's loop was stopped by an error that would not pass (a damaged store, a slice
    /// whose end could not be recorded, a bug): see the errors.
    Error,
}

/// One agent's loop, as the end of the run sees it.
#[derive(Debug, Clone, Copy)]
pub struct AgentLoop<'a> {
    /// Its loop ended, and why.
    pub ended: Option<&'a str>,
    /// Its last attempt failed with an error a person may have to fix (a broken profile): for
    /// `--on-gate exit` it cannot go on by itself either.
    pub erring: bool,
    /// Its last decision.
    pub last: Option<DecisionKind>,
}

/// Where a run stands, once no worker of it runs.
#[derive(Debug, Clone)]
pub struct Standing<'a> {
    /// A stop was requested, by this (a signal's name, or why).
    pub stopping: Option<String>,
    pub agents: Vec<AgentLoop<'a>>,
    /// An agent's loop was stopped by an error.
    pub errored: bool,
    pub out_of_time: bool,
    /// Slices run so far.
    pub slices: u64,
    pub max_slices: Option<u64>,
    pub on_gate: OnGate,
}

impl Standing<'_> {
    /// Whether the run is over, why, and the detail shown with it. An agent stopped by an
    /// error makes the whole run an error, however it ended, unless a stop ended it.
    pub fn end(&self) -> Option<(EndReason, String)> {
        let (reason, detail) = self.reason()?;
        if self.errored && reason != EndReason::Shutdown {
            return Some((EndReason::Error, detail));
        }
        Some((reason, detail))
    }

    fn reason(&self) -> Option<(EndReason, String)> {
        if let Some(why) = &self.stopping {
            return Some((EndReason::Shutdown, format!("stopped by {why}")));
        }
        if self.agents.iter().all(|a| a.ended.is_some()) {
            let reasons: std::collections::BTreeSet<&str> =
                self.agents.iter().filter_map(|a| a.ended).collect();
            let detail = reasons.into_iter().collect::<Vec<_>>().join("; ");
            return Some((EndReason::Goal, detail));
        }
        if self.out_of_time {
            return Some((EndReason::Time, "the --for time is up".to_owned()));
        }
        if let Some(max) = self.max_slices
            && self.slices >= max
        {
            return Some((EndReason::MaxSlices, format!("{max} slice(s) ran")));
        }
        if self.on_gate == OnGate::Exit {
            let waiting = self.agents.iter().filter(|a| a.ended.is_none());
            let stuck = waiting.clone().all(|a| {
                a.erring || matches!(a.last, Some(DecisionKind::Ask | DecisionKind::Quiet))
            });
            let asked = waiting
                .into_iter()
                .any(|a| a.last == Some(DecisionKind::Ask));
            if stuck && asked {
                return Some((
                    EndReason::Gate,
                    "a person must answer a gate, and no agent can go on until then".to_owned(),
                ));
            }
        }
        None
    }
}
