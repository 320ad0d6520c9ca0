//! What the simulation keeps of its own, independently of loopx's store: the tokens every
//! slice really reported (the ledger the window check compares against), the reports the
//! kernel acknowledged, the resets the vendors announced, the decisions taken, and the
//! figures of the final report.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use loopx_kernel::Timestamp;
use loopx_kernel::model::SliceRecord;
use loopx_quota::{DecisionKind, WindowLimit, WindowState};
use loopx_supervisor::SliceSummary;

use crate::agent::Act;
use crate::faults::FaultCounts;
use crate::scenario::Checked;

/// A reset a vendor announced and loopx recorded as a hold: by a minute after it, an agent
/// of the account must have decided again.
#[derive(Debug, Clone)]
pub(crate) struct PendingReset {
    pub account: String,
    pub reset: Timestamp,
    /// From then on an agent must decide again: the reset, or when loopx recorded the hold if
    /// that was later (a limit met just before its window ended). On loopx's wall clock.
    pub due: Timestamp,
    /// An agent of the account decided at or after `due`.
    pub resumed: bool,
    /// A clock step or a supervisor crash came between: not judged.
    pub disturbed: bool,
}

/// One entry of the ledger: loopx's wall time, tokens, the slice (0 for an admission).
pub(crate) type Spend = (Timestamp, u64, u64);

/// An agent's run of temporary failures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streak {
    pub count: u32,
    /// When the last one ended (true time).
    pub ended: Timestamp,
}

#[derive(Debug)]
pub(crate) struct Books {
    pub step: u64,
    pub slices: u64,
    pub by_outcome: BTreeMap<String, u64>,
    pub acts: BTreeMap<&'static str, u64>,
    pub wasted: u64,
    pub recovered: u64,
    pub questions: u64,
    pub answered: u64,
    pub taken_back: u64,
    pub amendments: u64,
    /// Commits a person made to a file in the goal's scope.
    pub edits: u64,
    /// The newest evidence when the last edit was committed: a test result with a greater id
    /// was recorded about the code as it is now, one with this id or less about older code.
    pub evidence_before_edit: u64,
    /// The last slice before the goal's latest amendment, until the first slice after it
    /// began (which must plan).
    pub replan_after: Option<(loopx_kernel::GoalId, u64)>,
    /// Questions a person asked that hold back one goal (`[[goal]] hold_per_day`).
    pub holds_asked: u64,
    /// Slices launched as the planning slice that re-plans an amended goal: only they may
    /// drop or rewrite todos (`replanned_by_the_replanner`).
    pub replanners: BTreeSet<u64>,
    pub forgeries_refused: u64,
    pub reports_refused: u64,
    pub faults: FaultCounts,
    /// Reports the kernel acknowledged: (kind, id).
    pub acks: Vec<(&'static str, u64)>,
    /// Per account: the window loopx was told, and the spends (loopx's wall time, tokens, the
    /// slice).
    pub ledger: BTreeMap<String, (WindowLimit, Vec<Spend>)>,
    /// Slices closed by recovery: their supervisor died before it could charge their usage,
    /// so loopx cannot know it (their output is only in their log).
    pub usage_lost: BTreeSet<u64>,
    /// Slices whose agent the simulation launched.
    pub launched: BTreeSet<u64>,
    pub resets: Vec<PendingReset>,
    /// Per agent: its temporary failures in a row.
    pub streaks: BTreeMap<String, Streak>,
    /// Agents whose loop ended (a `stop` decision).
    pub stopped: BTreeSet<String>,
    /// Per agent: since when it has waited, and why.
    waiting_since: BTreeMap<String, (Timestamp, String)>,
    /// Time spent waiting, by reason.
    pub waiting: BTreeMap<String, Duration>,
    /// Per agent: its last decision (true time, kind, reason), for a broken rule's report.
    pub last_decision: BTreeMap<String, (Timestamp, DecisionKind, String)>,
    /// Orphaned slices (their supervisor was killed while they ran).
    pub orphans: u64,
    /// The last clock step, as a step number: checks spanning it are not judged.
    pub stepped_at: Option<u64>,
    /// The rounds of the executor/reviewer chains (`[handbacks]`).
    pub handbacks: crate::handbacks::HandbackBooks,
}

impl Books {
    pub(crate) fn new(plan: &Checked) -> Books {
        let ledger = plan
            .scenario
            .accounts
            .iter()
            .zip(&plan.windows)
            .map(|(a, period)| {
                let limit = WindowLimit {
                    period_ms: u64::try_from(period.as_millis()).unwrap_or(u64::MAX),
                    tokens: Some(a.tokens),
                    cost_usd: None,
                };
                (a.name.clone(), (limit, Vec::new()))
            })
            .collect();
        Books {
            step: 0,
            slices: 0,
            by_outcome: BTreeMap::new(),
            acts: BTreeMap::new(),
            wasted: 0,
            recovered: 0,
            questions: 0,
            answered: 0,
            taken_back: 0,
            amendments: 0,
            edits: 0,
            evidence_before_edit: 0,
            replan_after: None,
            holds_asked: 0,
            replanners: BTreeSet::new(),
            forgeries_refused: 0,
            reports_refused: 0,
            faults: FaultCounts::default(),
            acks: Vec::new(),
            ledger,
            usage_lost: BTreeSet::new(),
            launched: BTreeSet::new(),
            resets: Vec::new(),
            streaks: BTreeMap::new(),
            stopped: BTreeSet::new(),
            waiting_since: BTreeMap::new(),
            waiting: BTreeMap::new(),
            last_decision: BTreeMap::new(),
            orphans: 0,
            stepped_at: None,
            handbacks: Default::default(),
        }
    }

    /// A slice's usage, as its stream reported it, at loopx's wall time.
    /// An admission the simulation did not see (its supervisor died right after the begin
    /// committed): put in the ledger where its time falls.
    pub(crate) fn admitted_unseen(&mut self, account: &str, at: Timestamp) {
        if let Some((_, spends)) = self.ledger.get_mut(account) {
            let i = spends.partition_point(|(t, _, _)| *t <= at);
            spends.insert(i, (at, 0, 0));
        }
    }

    pub(crate) fn charge(&mut self, account: &str, at: Timestamp, tokens: u64, slice: u64) {
        if let Some((_, spends)) = self.ledger.get_mut(account) {
            spends.push((at, tokens, slice));
        }
    }

    /// The account's window, from the ledger alone: every slice's admission and usage in the
    /// order they happened, at loopx's wall time (clock steps included, as loopx saw them). The
    /// arithmetic is `loopx_quota::WindowState`'s; the data is the simulation's own, so a
    /// spend loopx failed to charge, or an admission past a spent window, shows.
    pub(crate) fn window(&self, account: &str) -> Option<(WindowLimit, WindowState)> {
        let (limit, spends) = self.ledger.get(account)?;
        let state = spends
            .iter()
            .filter(|(_, _, slice)| !self.usage_lost.contains(slice))
            .fold(WindowState::default(), |state, (at, tokens, _)| {
                state.charged(limit, at.0, *tokens, 0.0)
            });
        Some((*limit, state))
    }

    pub(crate) fn limit_reported(&mut self, account: &str, reset: Timestamp, now: Timestamp) {
        // A newer limit on the account supersedes the older ones.
        self.resets.retain(|r| r.account != account);
        self.resets.push(PendingReset {
            account: account.to_owned(),
            reset,
            due: reset.max(now),
            resumed: false,
            disturbed: false,
        });
    }

    pub(crate) fn clock_stepped(&mut self) {
        self.stepped_at = Some(self.step);
        self.disturb();
    }

    /// Something came between a reset and its check (a step, a crash).
    pub(crate) fn disturb(&mut self) {
        for r in &mut self.resets {
            r.disturbed = true;
        }
        self.streaks.clear();
    }

    /// Something other than the reset holds `account` now (a login gate): not judged.
    pub(crate) fn disturb_account(&mut self, account: &str) {
        for r in self.resets.iter_mut().filter(|r| r.account == account) {
            r.disturbed = true;
        }
    }

    pub(crate) fn orphaned(&mut self) {
        self.orphans += 1;
    }

    /// A decision of `agent` at true time `now`.
    pub(crate) fn decided(
        &mut self,
        agent: &str,
        decision: &loopx_quota::Decision,
        now: Timestamp,
    ) {
        self.last_decision.insert(
            agent.to_owned(),
            (now, decision.kind(), decision.reason().to_owned()),
        );
        if let Some((since, why)) = self.waiting_since.remove(agent) {
            *self.waiting.entry(why).or_default() += now.since(since);
        }
        match decision.kind() {
            DecisionKind::Stop => {
                self.stopped.insert(agent.to_owned());
            }
            DecisionKind::Wait | DecisionKind::Quiet | DecisionKind::Ask => {
                self.waiting_since
                    .insert(agent.to_owned(), (now, waiting_reason(decision)));
            }
            DecisionKind::Deliver | DecisionKind::Repair => {}
        }
    }

    /// A slice began, and its agent does `act`.
    pub(crate) fn slice_started(&mut self, act: Act) {
        *self.acts.entry(act.as_str()).or_default() += 1;
    }

    /// A slice's end was written back: its outcome, and an agent's run of temporary failures.
    pub(crate) fn slice_ended(
        &mut self,
        record: &SliceRecord,
        summary: &SliceSummary,
        true_now: Timestamp,
    ) {
        use loopx_adapters::Outcome;
        self.slices += 1;
        *self
            .by_outcome
            .entry(summary.outcome.as_str().to_owned())
            .or_default() += 1;
        let wasted = matches!(
            summary.outcome,
            Outcome::UsageLimited
                | Outcome::AuthFailed
                | Outcome::Transient
                | Outcome::SpawnFailed
                | Outcome::Stalled
                | Outcome::TimedOut
                | Outcome::Failed
                | Outcome::Interrupted
        );
        if wasted {
            self.wasted += 1;
        }
        let agent = record.agent.to_string();
        if summary.outcome == Outcome::Transient {
            let streak = self.streaks.entry(agent).or_insert(Streak {
                count: 0,
                ended: true_now,
            });
            streak.count += 1;
            streak.ended = true_now;
        } else {
            self.streaks.remove(&agent);
        }
    }
}

/// What an agent waits for, in a word or two.
fn waiting_reason(decision: &loopx_quota::Decision) -> String {
    let reason = decision.reason().to_lowercase();
    let kind = match decision.kind() {
        DecisionKind::Wait => "wait",
        DecisionKind::Quiet => "quiet",
        _ => "ask",
    };
    let why = [
        ("hold", "hold"),
        ("held", "hold"),
        ("window", "window"),
        ("back", "backoff"),
        ("pac", "pacing"),
        ("rest", "rest"),
        ("share", "share"),
        ("gate", "gate"),
        ("budget", "budget"),
    ]
    .iter()
    .find(|(word, _)| reason.contains(word))
    .map_or("other", |(_, why)| why);
    format!("{kind}: {why}")
}
