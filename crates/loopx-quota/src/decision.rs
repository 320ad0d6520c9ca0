//! What the decision before every slice says: its kind, and the data each kind needs. Built by
//! `decide.rs`; read through accessors by the supervisor, the CLI, the board and the simulation.

use serde::Serialize;

use crate::{EvidenceId, GateId, Millis, SliceKind, TodoId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Deliver,
    Repair,
    Ask,
    Wait,
    Quiet,
    Stop,
}

/// A todo a decision concerns: its id and title.
pub type TodoRef = (TodoId, String);

/// What to do now, each kind with what it needs, and why in one sentence.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run a slice: work on a todo, or (`todo: None`) plan the goal.
    Deliver { run: Run, reason: String },
    /// Run a repair slice on a todo whose last slice ended badly.
    Repair { run: Run, reason: String },
    /// A person must decide: `gate` is the gate that asks (the one holding the agent back, or
    /// the one opened for a stall, the budget or a met goal once the supervisor opened it).
    Ask {
        about: AskAbout,
        gate: Option<(GateId, String)>,
        reason: String,
    },
    /// Decide again at `until` (`None`: when a person resumes); `todo` when it is a todo that
    /// rests.
    Wait {
        until: Option<Millis>,
        todo: Option<TodoRef>,
        /// What it waits on, in one word (`window`, `pacing`, …).
        on: WaitOn,
        reason: String,
    },
    /// Nothing to do now; decide again when something changes. `waiting_for`: the open work
    /// waits on a monitor loopx polls, next due then.
    Quiet {
        reason: String,
        waiting_for: Option<Waiting>,
    },
    /// This agent's loop ends.
    Stop { reason: String },
}

/// The monitor a quiet decision waits for, and when loopx polls it next.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub todo: TodoRef,
    pub next_poll: Millis,
}

/// The slice a deliver or repair decision runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub slice: SliceKind,
    /// `None`: a planning slice, on no todo.
    pub todo: Option<TodoRef>,
    /// The first slice after a vendor hold ended: keep it short, the limit may not be gone.
    pub probe: bool,
    /// The most tokens the slice may spend: past it, a window of its account would go more
    /// than 25 % past its budget (the running slices' usual spend kept aside). loopx stops the
    /// slice there. `None`: no window counts tokens, or the window is empty and nothing runs.
    pub max_tokens: Option<u64>,
}

/// What a person is asked about.
#[derive(Debug, Clone, PartialEq)]
pub enum AskAbout {
    /// An open gate holds the agent back.
    OpenGate,
    /// A todo went slices without progress: a stall gate should be opened for it.
    Stalled(TodoRef),
    /// The goal spent its budget: a budget gate should be opened (the reason has the figures).
    OverBudget,
    /// No todo is left and planning proposes none: a goal-met gate should be opened.
    GoalMet,
    /// Agents of two roles handed the todo's work back and forth `[limits] handbacks` times
    /// (a chain of successors): a stall gate asks a person before another round.
    HandedBack(TodoRef),
    /// A measurement is its metric's best so far in the goal and `[metrics.NAME]
    /// ask_on_best` is set: a best gate asks whether to promote it.
    NewBest(EvidenceId),
}

impl Decision {
    /// `stop`, for `reason`: what a caller decides without `decide` (the goal is over, loopx
    /// was stopped).
    pub fn stop(reason: String) -> Decision {
        Decision::Stop { reason }
    }

    /// The kind of decision, as `should-run` names it.
    pub fn kind(&self) -> DecisionKind {
        match self {
            Decision::Deliver { .. } => DecisionKind::Deliver,
            Decision::Repair { .. } => DecisionKind::Repair,
            Decision::Ask { .. } => DecisionKind::Ask,
            Decision::Wait { .. } => DecisionKind::Wait,
            Decision::Quiet { .. } => DecisionKind::Quiet,
            Decision::Stop { .. } => DecisionKind::Stop,
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Decision::Deliver { reason, .. }
            | Decision::Repair { reason, .. }
            | Decision::Ask { reason, .. }
            | Decision::Wait { reason, .. }
            | Decision::Quiet { reason, .. }
            | Decision::Stop { reason } => reason,
        }
    }

    /// The slice to run, for deliver and repair.
    pub fn run(&self) -> Option<&Run> {
        match self {
            Decision::Deliver { run, .. } | Decision::Repair { run, .. } => Some(run),
            _ => None,
        }
    }

    /// The kind of slice to run, for deliver and repair.
    pub fn slice(&self) -> Option<SliceKind> {
        self.run().map(|run| run.slice)
    }

    /// The todo concerned: the one to run a slice on, the one that stalled, the one that rests.
    pub fn todo(&self) -> Option<&TodoRef> {
        match self {
            Decision::Deliver { run, .. } | Decision::Repair { run, .. } => run.todo.as_ref(),
            Decision::Ask {
                about: AskAbout::Stalled(todo),
                ..
            } => Some(todo),
            Decision::Wait { todo, .. } => todo.as_ref(),
            _ => None,
        }
    }

    /// The gate an ask waits on: `(id, question)`; `None` until one is opened for a stall,
    /// the budget or a met goal.
    pub fn gate(&self) -> Option<(GateId, &str)> {
        match self {
            Decision::Ask {
                gate: Some((id, question)),
                ..
            } => Some((*id, question)),
            _ => None,
        }
    }

    /// Records the gate opened for this ask (a stall, the budget, a met goal).
    pub fn gate_opened(&mut self, opened: (GateId, String)) {
        if let Decision::Ask { gate, .. } = self {
            *gate = Some(opened);
        }
    }

    /// The todo that stalled, when a gate should be opened for it.
    pub fn stalled(&self) -> Option<TodoId> {
        match self {
            Decision::Ask {
                about: AskAbout::Stalled((id, _)) | AskAbout::HandedBack((id, _)),
                ..
            } => Some(*id),
            _ => None,
        }
    }

    /// Whether the stall is one of work handed back and forth (a chain), not of one todo.
    pub fn handed_back(&self) -> bool {
        matches!(
            self,
            Decision::Ask {
                about: AskAbout::HandedBack(_),
                ..
            }
        )
    }

    /// Whether a budget gate should be opened.
    pub fn over_budget(&self) -> bool {
        matches!(
            self,
            Decision::Ask {
                about: AskAbout::OverBudget,
                ..
            }
        )
    }

    /// The measurement a best gate should be opened for.
    pub fn new_best(&self) -> Option<EvidenceId> {
        match self {
            Decision::Ask {
                about: AskAbout::NewBest(evidence),
                ..
            } => Some(*evidence),
            _ => None,
        }
    }

    /// Whether a goal-met gate should be opened.
    pub fn goal_met(&self) -> bool {
        matches!(
            self,
            Decision::Ask {
                about: AskAbout::GoalMet,
                ..
            }
        )
    }

    /// For wait: when to decide again (`None`: until a person resumes, or not a wait).
    pub fn wake_at(&self) -> Option<Millis> {
        match self {
            Decision::Wait { until, .. } => *until,
            _ => None,
        }
    }

    /// Whether the slice to run is a short probe after a vendor hold.
    pub fn probe(&self) -> bool {
        self.run().is_some_and(|run| run.probe)
    }

    /// The most tokens the slice to run may spend, when a window limits it.
    pub fn max_tokens(&self) -> Option<u64> {
        self.run().and_then(|run| run.max_tokens)
    }

    pub(crate) fn quiet(reason: String) -> Decision {
        Decision::Quiet {
            reason,
            waiting_for: None,
        }
    }

    /// For quiet: the monitor the work waits for.
    pub fn waiting_for(&self) -> Option<&Waiting> {
        match self {
            Decision::Quiet { waiting_for, .. } => waiting_for.as_ref(),
            _ => None,
        }
    }

    pub(crate) fn wait(until: Option<Millis>, on: WaitOn, reason: String) -> Decision {
        Decision::Wait {
            until,
            todo: None,
            on,
            reason,
        }
    }

    /// What the agent does or waits on under this decision, in one word: the state its lane
    /// of a goal's history shows (`docs/history.md`).
    pub fn waiting_on(&self) -> WaitOn {
        match self {
            Decision::Deliver { .. } | Decision::Repair { .. } => WaitOn::Working,
            Decision::Ask { .. } => WaitOn::Question,
            Decision::Wait { on, .. } => *on,
            Decision::Quiet {
                waiting_for: Some(_),
                ..
            } => WaitOn::Monitor,
            Decision::Quiet { .. } => WaitOn::Nothing,
            Decision::Stop { .. } => WaitOn::Stopped,
        }
    }
}

/// What an agent is doing, or waiting on, between decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitOn {
    /// Running a slice.
    Working,
    /// A hold on its account or on it (a vendor's limit, a person's pause).
    Hold,
    /// Its goal used its share of the hour.
    Share,
    /// Its pacing.
    Pacing,
    /// A spent (or too small) quota window.
    Window,
    /// Backing off after temporary failures.
    Backoff,
    /// Every todo it could take rests (no progress, or `--not-before`).
    Rest,
    /// A question a person has to answer.
    Question,
    /// A monitor loopx polls.
    Monitor,
    /// Nothing it could do (no todo for it, or its slice runs elsewhere).
    Nothing,
    /// Its loop ended.
    Stopped,
}

impl WaitOn {
    /// Every state, in the order views list them.
    pub const ALL: [WaitOn; 11] = [
        WaitOn::Working,
        WaitOn::Hold,
        WaitOn::Share,
        WaitOn::Pacing,
        WaitOn::Window,
        WaitOn::Backoff,
        WaitOn::Rest,
        WaitOn::Question,
        WaitOn::Monitor,
        WaitOn::Nothing,
        WaitOn::Stopped,
    ];

    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitOn::Working => "working",
            WaitOn::Hold => "hold",
            WaitOn::Share => "share",
            WaitOn::Pacing => "pacing",
            WaitOn::Window => "window",
            WaitOn::Backoff => "backoff",
            WaitOn::Rest => "rest",
            WaitOn::Question => "question",
            WaitOn::Monitor => "monitor",
            WaitOn::Nothing => "nothing",
            WaitOn::Stopped => "stopped",
        }
    }
}
