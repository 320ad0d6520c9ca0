//! The course of a goal (`loopx goal history`, `docs/history.md`): its lanes of slices per
//! agent, what it cost, how it progressed, and the lineage from its revisions through todos
//! and slices to evidence and landings, all from the kernel's own records.
//!
//! One read of the store gathers the records of one goal, each table read once
//! ([`Records::read`]); the rest is pure ([`build`]), so that every surface (the CLI, the board's
//! History page) shows the same numbers and a 200-hour store answers in well under two seconds.
//! The same history renders as text (the CLI), JSON, a graph language ([`render_graph`]) or
//! one self-contained HTML page ([`render_html`]).

mod about_goal;
mod build;
mod graph;
mod html;
mod lineage;
mod metrics;
mod read;
mod stale;

use std::collections::BTreeMap;

use loopx_kernel::model::{Event, Evidence, Gate, Goal, GoalRevision, SliceRecord, Todo};
use loopx_kernel::{EvidenceId, GoalId, Timestamp};
use serde::Serialize;

pub use about_goal::{event_about_goal, gate_holds_goal};
pub use build::build;
pub use graph::{GraphFormat, render_graph};
pub use html::{esc, page_style, render_html};
pub use lineage::{EdgeKind, Lineage, LineageEdge, LineageNode, NodeKind, TodoLine};
pub use stale::{resting_on_stale, stale_evidence};

use crate::{App, AppError};

/// The version of the JSON format below; a change that removes or renames a field raises it.
pub const FORMAT_VERSION: u32 = 1;

/// Which slices changed nothing, in words: one rule, shown with the figure.
pub const CHANGED_NOTHING_RULE: &str = "outcome `unchanged`: the supervisor saw no change in the tree and no evidence, todo or question of the slice's own";

/// The course of one goal, as `goal history --json` prints it (`docs/history.md`).
#[derive(Debug, Clone, Serialize)]
pub struct GoalHistory {
    pub format_version: u32,
    pub goal: GoalId,
    pub objective: String,
    pub status: loopx_kernel::model::GoalStatus,
    pub started_at: Timestamp,
    /// Only what happened from then on counts in lanes, cost and progress (`--since`).
    pub since: Option<Timestamp>,
    /// When it was read: a running slice's length counts up to here.
    pub now: Timestamp,
    pub lanes: Vec<Lane>,
    pub questions: Vec<QuestionSpan>,
    pub monitors: Vec<MonitorSpan>,
    pub amendments: Vec<Amendment>,
    pub landings: Vec<Landing>,
    pub cost: Cost,
    pub progress: Progress,
    pub lineage: Lineage,
    /// Each metric measured in the goal (`metric` evidence), by name.
    pub metrics: Vec<MetricSeries>,
}

/// One metric's measurements in one unit in the goal, in the order taken (`120 ms` and
/// `0.2 s` are two series: loopx compares numbers, not quantities).
#[derive(Debug, Clone, Serialize)]
pub struct MetricSeries {
    pub name: String,
    /// Its measurements' unit (empty: none).
    pub unit: String,
    /// Which way is better (`[metrics.NAME] better`); `None`: not said, so no best is marked.
    pub better: Option<loopx_kernel::model::Better>,
    pub points: Vec<MetricPoint>,
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct MetricPoint {
    pub evidence: EvidenceId,
    pub todo: Option<loopx_kernel::TodoId>,
    pub slice: Option<loopx_kernel::SliceId>,
    pub at: Timestamp,
    pub value: f64,
    /// Who recorded it (`agent:NAME`, a person).
    pub by: String,
    /// It beat every measurement before it (the first one does).
    pub best: bool,
    /// A person answered `promote` when asked about it (`ask_on_best`).
    pub promoted: bool,
}

/// One agent's slices of the goal, in the order they started.
#[derive(Debug, Clone, Serialize)]
pub struct Lane {
    pub agent: String,
    pub slices: Vec<LaneSlice>,
    /// What the agent waited on between slices for this goal, from the states `loopx run`
    /// records (`agent_waits` events): each from its record to the agent's next state or
    /// slice.
    pub waits: Vec<Wait>,
    /// The sum of its slices' lengths.
    pub working_ms: u64,
    /// The sum of its waits' lengths, by what it waited on (`window`, `question`, …).
    pub waiting_ms: BTreeMap<String, u64>,
}

/// One slice in a lane.
#[derive(Debug, Clone, Serialize)]
pub struct LaneSlice {
    pub id: loopx_kernel::SliceId,
    pub kind: loopx_kernel::model::SliceKind,
    pub todo: Option<loopx_kernel::TodoId>,
    pub started_at: Timestamp,
    /// `None` while it runs.
    pub ended_at: Option<Timestamp>,
    pub duration_ms: u64,
    /// `None` while it runs.
    pub outcome: Option<loopx_kernel::model::Outcome>,
    pub tokens: u64,
    pub cost_usd: f64,
    /// It changed nothing ([`CHANGED_NOTHING_RULE`]).
    pub changed_nothing: bool,
}

/// A stretch an agent waited between slices, and on what.
#[derive(Debug, Clone, Serialize)]
pub struct Wait {
    pub from: Timestamp,
    pub to: Timestamp,
    /// One word: `hold`, `share`, `pacing`, `window`, `backoff`, `rest`, `question`,
    /// `monitor`, `nothing`.
    pub on: String,
    pub reason: String,
}

/// A question (any gate about the goal) from asked to answered.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionSpan {
    pub gate: loopx_kernel::GateId,
    /// `question`, `stall`, `budget`, … (the gate's kind).
    pub kind: String,
    pub question: String,
    pub asked_by: String,
    pub asked_at: Timestamp,
    /// `open`, `answered` or `withdrawn`.
    pub state: String,
    pub answered_by: Option<String>,
    pub answered_at: Option<Timestamp>,
    pub answer: Option<String>,
    /// From asked to answered.
    pub wait_ms: Option<u64>,
}

/// A monitor from its first poll to met.
#[derive(Debug, Clone, Serialize)]
pub struct MonitorSpan {
    pub todo: loopx_kernel::TodoId,
    pub title: String,
    pub state: loopx_kernel::model::TodoState,
    pub polls: u64,
    pub first_poll: Option<Timestamp>,
    /// When it was done (met, or marked met by a person).
    pub met_at: Option<Timestamp>,
}

/// An amendment: a revision after the first.
#[derive(Debug, Clone, Serialize)]
pub struct Amendment {
    pub revision: u32,
    pub at: Timestamp,
    pub by: String,
    pub changed: Vec<String>,
    pub why: String,
}

/// A landing: evidence of kind `land`.
#[derive(Debug, Clone, Serialize)]
pub struct Landing {
    pub evidence: EvidenceId,
    pub todo: Option<loopx_kernel::TodoId>,
    pub slice: Option<loopx_kernel::SliceId>,
    pub at: Timestamp,
    pub summary: String,
}

/// What some slices spent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spent {
    pub slices: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    pub duration_ms: u64,
}

impl Spent {
    fn add(&mut self, s: &LaneSlice) {
        self.slices += 1;
        self.tokens += s.tokens;
        self.cost_usd += s.cost_usd;
        self.duration_ms += s.duration_ms;
    }
}

/// Where the tokens, the money and the time went.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    pub total: Spent,
    pub by_agent: BTreeMap<String, Spent>,
    /// By todo (`t3`), oldest first; planning slices (no todo) under `none`.
    pub by_todo: Vec<(String, Spent)>,
    /// By slice kind: `work`, `plan`, `repair`.
    pub by_kind: BTreeMap<String, Spent>,
    /// By the UTC day a slice started (`2026-12-07`).
    pub by_day: BTreeMap<String, Spent>,
    /// The slices that changed nothing, and what they cost.
    pub changed_nothing: Spent,
    pub changed_nothing_slices: Vec<loopx_kernel::SliceId>,
    pub changed_nothing_rule: &'static str,
}

/// How the goal moved forward.
#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    /// Todos done per UTC day.
    pub done_by_day: BTreeMap<String, u64>,
    /// Each todo done: from its creation to done.
    pub to_done: Vec<ToDone>,
    pub median_to_done_ms: Option<u64>,
    pub questions_asked: u64,
    pub questions_answered: u64,
    pub median_to_answer_ms: Option<u64>,
}

/// One todo's time from creation to done.
#[derive(Debug, Clone, Serialize)]
pub struct ToDone {
    pub todo: loopx_kernel::TodoId,
    pub created_at: Timestamp,
    pub done_at: Timestamp,
    pub duration_ms: u64,
}

/// The records of one goal, each table read once: what [`build`] makes the history from.
#[derive(Debug, Clone)]
pub struct Records {
    pub goal: Goal,
    /// Oldest first; a goal an older loopx started may have none.
    pub revisions: Vec<GoalRevision>,
    /// The goal's todos, oldest first.
    pub todos: Vec<Todo>,
    /// The goal's slices, oldest first.
    pub slices: Vec<SliceRecord>,
    /// The evidence about its todos or recorded by its slices, oldest first.
    pub evidence: Vec<Evidence>,
    /// The gates about it, oldest first.
    pub gates: Vec<Gate>,
    /// The events about its todos that the history reads (done, dropped, re-planned, polled),
    /// oldest first.
    pub events: Vec<Event>,
    /// The evidence of its done todos that is stale now, and why.
    pub stale: BTreeMap<EvidenceId, String>,
    /// `[metrics]`: which way each metric is better.
    pub metric_rules: BTreeMap<String, loopx_adapters::MetricRule>,
    pub now: Timestamp,
    pub since: Option<Timestamp>,
}

impl App {
    /// The course of `goal` (default: the goal a command means, else the newest: a finished
    /// goal's history is the one most often read), from `since` on.
    pub fn goal_history(
        &self,
        goal: Option<GoalId>,
        since: Option<Timestamp>,
    ) -> Result<GoalHistory, AppError> {
        let goal = match goal {
            Some(id) => self.goal(Some(id))?,
            None => match self.read(|s| Ok(s.goal_meant()?.or(s.goal_shown()?)))? {
                Some(goal) => goal,
                None => self.goal(None)?,
            },
        };
        let config = self.project_config()?;
        let now = self.now();
        let project = self.project.clone();
        let mut records =
            self.read(|s| Records::read(s, &project, &config.evidence, goal, now, since))?;
        records.metric_rules = config.metrics;
        Ok(build(&records))
    }
}

/// `2026-12-07`: the UTC day of an instant.
fn day(at: Timestamp) -> String {
    at.to_string().chars().take(10).collect()
}

/// The middle value (the lower of the two middle ones), `None` of nothing.
fn median(mut values: Vec<u64>) -> Option<u64> {
    values.sort_unstable();
    let n = values.len();
    (n > 0).then(|| values[(n - 1) / 2])
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_html;
