//! The report at the end of a run.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::faults::FaultCounts;
use crate::invariants::Halt;

/// What a simulation did, and whether every invariant held.
#[derive(Debug, Clone, Serialize)]
pub struct SimReport {
    pub seed: u64,
    pub scenario: String,
    /// Virtual hours the run lasted.
    pub hours: f64,
    /// Virtual hours the run was given.
    pub hours_asked: f64,
    /// Why it ended: `goal` (every agent's loop ended), `time` (the hours ran out), or what
    /// stopped it.
    pub ended: String,
    pub goal_done: bool,
    /// Every todo is finished and a person is asked whether the goal is met (an agent does not
    /// end a goal; the simulated people answer minutes to hours later).
    pub goal_met_asked: bool,
    pub todos_done: u64,
    pub todos: u64,
    pub slices: u64,
    pub slices_by_outcome: BTreeMap<String, u64>,
    /// What the simulated agents did, by act.
    pub acts: BTreeMap<String, u64>,
    /// Slices that achieved nothing (limits, auth, temporary failures, stalls, failures,
    /// interruptions).
    pub wasted_slices: u64,
    pub quota: Vec<AccountUse>,
    /// Hours agents spent waiting, by reason.
    pub waiting_hours: BTreeMap<String, f64>,
    pub questions: u64,
    pub answered: u64,
    pub faults: FaultCounts,
    pub recovered_slices: u64,
    pub orphaned_slices: u64,
    pub forgeries_refused: u64,
    pub reports_refused: u64,
    pub todos_taken_back: u64,
    /// Times a person amended the goal.
    pub goal_amendments: u64,
    /// Questions a person asked that held back one goal (`[[goal]] hold_per_day`).
    pub goal_holds: u64,
    /// Todos the planning slices after amendments dropped or rewrote.
    pub todos_replanned: u64,
    /// Commits a person made to a file in the goal's scope.
    pub files_changed: u64,
    pub reports_acknowledged: u64,
    pub steps: u64,
    /// A digest of the store's event log: the same seed gives the same digest.
    pub events: u64,
    pub events_digest: String,
    pub wall_ms: u64,
    /// Long experiments' figures (`[experiments]` scenarios).
    pub experiments: Option<crate::experiments::ExperimentsReport>,
    /// Executor/reviewer chains (`[handbacks]` scenarios).
    pub handbacks: Option<HandbacksReport>,
    /// The invariant that broke, if one did.
    pub violation: Option<Halt>,
}

/// What the executor/reviewer chains did (`[handbacks]`), by the simulation's own count.
#[derive(Debug, Clone, Serialize)]
pub struct HandbacksReport {
    /// Stall questions a person answered about a round at the limit: chains that would have
    /// gone on without one.
    pub asked_at_limit: u64,
    /// The most rounds one chain ran (a person's answers included).
    pub longest_chain: u32,
}

/// One account's use of its window.
#[derive(Debug, Clone, Serialize)]
pub struct AccountUse {
    pub account: String,
    pub tokens: u64,
    /// Windows that opened.
    pub windows: u64,
    /// The fullest window, as a share of the allowance (over 100 when a slice overspent).
    pub fullest_percent: f64,
}

impl SimReport {
    pub fn passed(&self) -> bool {
        self.violation.is_none()
    }
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scenario {} · seed {}", self.scenario, self.seed)?;
        writeln!(
            f,
            "simulated {:.1} h in {:.1} s ({} steps); ended: {}",
            self.hours,
            self.wall_ms as f64 / 1000.0,
            self.steps,
            self.ended
        )?;
        writeln!(
            f,
            "goal: {} ({} of {} todos done)",
            match (self.goal_done, self.goal_met_asked) {
                (true, _) => "done",
                (false, true) => "met, a person is asked to end it",
                (false, false) => "not done",
            },
            self.todos_done,
            self.todos
        )?;
        let outcomes: Vec<String> = self
            .slices_by_outcome
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(
            f,
            "slices: {} ({}); wasted {}",
            self.slices,
            outcomes.join(", "),
            self.wasted_slices
        )?;
        for q in &self.quota {
            writeln!(
                f,
                "quota {}: {} tokens over {} window(s), fullest {:.0}%",
                q.account, q.tokens, q.windows, q.fullest_percent
            )?;
        }
        let waiting: Vec<String> = self
            .waiting_hours
            .iter()
            .map(|(k, v)| format!("{k} {v:.1} h"))
            .collect();
        writeln!(f, "waiting: {}", waiting.join(", "))?;
        writeln!(
            f,
            "questions: {} asked, {} answered; todos taken back: {}; goal amended: {} (todos re-planned: {}); files changed: {}",
            self.questions,
            self.answered,
            self.todos_taken_back,
            self.goal_amendments,
            self.todos_replanned,
            self.files_changed
        )?;
        if let Some(h) = &self.handbacks {
            writeln!(
                f,
                "hand-backs: a person asked at the limit {} time(s); longest chain {} rounds",
                h.asked_at_limit, h.longest_chain
            )?;
        }
        if self.goal_holds > 0 {
            writeln!(f, "goals held back by a question: {}", self.goal_holds)?;
        }
        let x = &self.faults;
        writeln!(
            f,
            "faults: store busy {}, disk full {}, crashes at writes {}, kills {}, clock steps {}; slices recovered {} (orphaned {})",
            x.store_busy,
            x.disk_full,
            x.crashes_at_writes,
            x.kills,
            x.clock_steps,
            self.recovered_slices,
            self.orphaned_slices
        )?;
        writeln!(
            f,
            "reports: {} acknowledged, {} refused; forgeries refused {}",
            self.reports_acknowledged, self.reports_refused, self.forgeries_refused
        )?;
        writeln!(f, "events: {} (digest {})", self.events, self.events_digest)?;
        match &self.violation {
            None => write!(f, "every invariant held"),
            Some(v) => write!(
                f,
                "INVARIANT BROKEN: {} at step {} ({}): {}\nreplay: loopx sim {} --seed {} --hours {}",
                v.rule, v.step, v.at, v.detail, self.scenario, self.seed, self.hours_asked
            ),
        }
    }
}
