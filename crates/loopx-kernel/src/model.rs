//! The entities of a project's state (`docs/design/store-format.md`, "What it holds") and the
//! events that record their changes.
//!
//! Every type here is stored (postcard, behind a one-byte record version, see `store/codec.rs`)
//! and shown (`--json`). Ids and times serialize as numbers in the store and as text in JSON.
//! Changing a stored type means a new record version: see `docs/design/store-format.md`.

use serde::{Deserialize, Serialize};

use crate::ids::{AgentName, EvidenceId, GateId, GoalId, HandoffId, SliceId, TodoId};
use crate::time::Timestamp;
pub use loopx_vocab::{
    Better, ErrorClass, EvidenceKind, GoalStatus, HoldSource, Isolation, Metric, Outcome,
    PermissionLevel, SliceKind, TodoState,
};

mod aging;
mod event;
mod message;
mod monitor;
mod revision;
pub use aging::{TodoSeen, WorkMark, diff_detail};
pub use event::{Event, EventKind};
pub use message::{Delivery, Message};
pub use monitor::{
    CHECK_LIMIT_MS, FAILURES_BEFORE_ASKING, MIN_EVERY_MS, Monitor, MonitorSpec, MonitorWords,
    OUTPUT_TAIL_BYTES, Observation, Pin, PollVerdict, check_limit_ms, output_hash,
};
pub use revision::{GoalRevision, goal_digest};

/// What the agents work towards, and the bounds they work in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    pub id: GoalId,
    pub objective: String,
    /// Path globs, relative to the project root, that agents may change.
    pub scope: Vec<String>,
    pub permission: PermissionLevel,
    /// Duty share of a rolling window, 0..=1 (0 pauses the goal's agents).
    pub share: f64,
    pub status: GoalStatus,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Where the goal's agents work: the project's own tree, or a worktree per todo.
    /// Added in record version 6 (a goal of an older loopx reads as `Shared`).
    pub isolation: Isolation,
    /// Its revision: 1 as started, one more at each amendment (`goal amend`). Added in record
    /// version 10 (a goal of an older loopx reads as revision 1).
    pub revision: u32,
    /// Which active goal the agents serve first (higher first; `goal start --priority`).
    /// Added in record version 16 (a goal of an older loopx reads as priority 0).
    pub priority: i32,
}

/// The right of one agent to work on one todo until `expires_at`, fenced by `epoch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub agent: AgentName,
    pub epoch: u64,
    pub granted_at: Timestamp,
    pub expires_at: Timestamp,
}

impl Lease {
    pub fn is_live(&self, now: Timestamp) -> bool {
        now < self.expires_at
    }
}

/// One unit of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Todo {
    pub id: TodoId,
    pub goal: GoalId,
    pub title: String,
    pub detail: String,
    /// Higher runs first.
    pub priority: i32,
    pub state: TodoState,
    /// Capabilities an agent needs to take this todo.
    pub needs: Vec<String>,
    /// Todos that must be done (or dropped) first.
    pub after: Vec<TodoId>,
    /// The kind of agent that should take it (`reviewer`), if any.
    pub role: Option<String>,
    /// The fencing token: it grows by one at every change of holder (a claim, a reclaim, a
    /// release, the todo finished) and never decreases. A write on behalf of a slice must
    /// present the epoch of the claim it works under.
    pub epoch: u64,
    pub lease: Option<Lease>,
    pub latest_handoff: Option<HandoffId>,
    pub created_by: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The claim the todo was finished under, when its holder finished it (`loopx report
    /// done`, a slice's writeback): that slice may still write its evidence and handoff.
    /// `None` while open, or when a person finished it without a claim.
    pub finished_under: Option<Lease>,
    /// The stall guard counts only slices after this one: a person answered the todo's stall
    /// gate and gave it a fresh budget of attempts.
    pub attempts_since: Option<SliceId>,
    /// Set on a monitor: loopx polls its check, no agent takes it (record version 9).
    pub monitor: Option<Box<Monitor>>,
    /// It rests until then: no agent takes it before (`--not-before`, record version 9). The
    /// two fields are the last of a todo: an older record reads with both `None` (`codec.rs`).
    pub not_before: Option<Timestamp>,
}

impl Todo {
    /// Whether loopx polls it itself.
    pub fn is_monitor(&self) -> bool {
        self.monitor.is_some()
    }

    /// Whether it rests at `now` (`--not-before` not reached).
    pub fn rests(&self, now: Timestamp) -> bool {
        self.not_before.is_some_and(|t| t > now)
    }

    /// Whether `agent` works under the current claim `epoch` of this todo: it holds the lease
    /// at that epoch, or it finished the todo under it (see [`Todo::finished_under`]). An
    /// expired lease that nobody has reclaimed still counts: a reclaim changes the epoch, so
    /// the old holder's writes are refused from the moment anyone else could take over.
    pub fn claim_of(&self, agent: &AgentName, epoch: u64) -> ClaimStanding {
        if let Some(done) = &self.finished_under
            && self.state.is_final()
            && done.epoch == epoch
            && &done.agent == agent
        {
            return ClaimStanding::Finished;
        }
        if epoch != self.epoch {
            return ClaimStanding::Stale;
        }
        match &self.lease {
            Some(lease) if self.state == TodoState::Claimed && &lease.agent == agent => {
                ClaimStanding::Held
            }
            _ => ClaimStanding::NotHolder,
        }
    }
}

/// Where a claim stands, for a write made under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimStanding {
    /// The agent holds the todo's lease at this epoch.
    Held,
    /// The agent finished the todo under this epoch: its slice may still add evidence and a
    /// handoff, but nothing changes the todo any more.
    Finished,
    /// The epoch is not the todo's current one: the claim moved on.
    Stale,
    /// The epoch is current but the agent does not hold it (or nobody does).
    NotHolder,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateState {
    Open,
    Answered,
    Withdrawn,
}

impl GateState {
    pub fn as_str(self) -> &'static str {
        match self {
            GateState::Open => "open",
            GateState::Answered => "answered",
            GateState::Withdrawn => "withdrawn",
        }
    }
}

/// What an open gate holds back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocks {
    /// Every agent.
    Global,
    /// One agent.
    Agent(AgentName),
    /// These todos.
    Todos(Vec<TodoId>),
    /// No work: a decision a person must make that no agent waits for (an approval of the
    /// notification command). Appended in record version 5.
    Nothing,
    /// One goal's work: what a budget or goal-met question, or a person's `gate ask --goal`,
    /// holds back while other active goals go on. Appended in record version 16.
    Goal(GoalId),
}

impl Blocks {
    /// Whether this gate holds back `agent` working on `todo` of `goal`.
    pub fn blocks(
        &self,
        agent: Option<&AgentName>,
        todo: Option<TodoId>,
        goal: Option<GoalId>,
    ) -> bool {
        match self {
            Blocks::Global => true,
            Blocks::Goal(id) => goal == Some(*id),
            Blocks::Agent(name) => agent == Some(name),
            Blocks::Todos(todos) => todo.is_some_and(|t| todos.contains(&t)),
            Blocks::Nothing => false,
        }
    }

    /// Whether this gate holds back all of `goal`'s work, whoever would do it: a gate on
    /// everything, or on the goal.
    pub fn holds_whole_goal(&self, goal: GoalId) -> bool {
        self.blocks(None, None, Some(goal))
    }

    /// Whether this gate holds back `todo` of `goal` whoever would work on it: a gate on
    /// everything, on the goal, or naming the todo (a gate on one agent holds back that agent,
    /// not the todo).
    pub fn holds_todo(&self, todo: TodoId, goal: GoalId) -> bool {
        self.blocks(None, Some(todo), Some(goal))
    }

    /// `global`, `agent exec`, `t3, t4`.
    pub fn describe(&self) -> String {
        match self {
            Blocks::Global => "global".to_owned(),
            Blocks::Agent(name) => format!("agent {name}"),
            Blocks::Todos(todos) => todos
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            Blocks::Nothing => "no work".to_owned(),
            Blocks::Goal(goal) => format!("goal {goal}"),
        }
    }
}

/// A person's answer to a gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub text: String,
    /// 1-based index into the gate's options, when one was chosen.
    pub option: Option<u32>,
    pub by: String,
    pub at: Timestamp,
}

/// What answering a gate does besides recording the answer.
///
/// Kinds are appended, never reordered: the store encodes them by position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// A question from an agent, a person or loopx: the answer reaches the next prompt.
    Question,
    /// loopx asks about a todo that went several slices without progress. `retry` (the first
    /// option) gives it a fresh budget of attempts, `drop` drops it. A person's note beside the
    /// option (`--note`) reaches the next slice.
    Stall { todo: TodoId },
    /// An agent found itself not logged in: its account is held until a person logs in and
    /// answers. Any answer lifts the account's hold (the gate asks for `retry`).
    Login { account: String },
    /// The goal spent its budget without a todo done. `continue` (the first option) gives it a
    /// fresh budget; `pause` pauses the goal.
    Budget { goal: GoalId },
    /// No todo is left and planning slices in a row proposed nothing: is the goal met? `done`
    /// (the first option) marks it done; `plan` gives planning a fresh start.
    GoalMet { goal: GoalId },
    /// A slice changed files it may not change, in its todo's worktree (record version 6).
    /// `rollback` (the second option) is carried out by whoever records the answer, before
    /// recording it: the todo's branch goes back from `commit` to `checkpoint`
    /// (`docs/design/worktrees.md`). The kernel only records the answer. `keep` of a slice
    /// that reported its todo done (`reported_done`, record version 8; an older gate reads
    /// `false`) lands the todo's branch, again carried out by whoever records the answer.
    Rollback {
        todo: TodoId,
        checkpoint: String,
        commit: String,
        /// The field is the last of the last field of a gate: a version-6 or -7 gate reads
        /// with it `false` (`codec.rs`). Keep it last.
        reported_done: bool,
    },
    /// A todo done by its agent could not land on the goal's branch: its branch conflicts
    /// (record version 6). `drop` (the second option) drops the todo; `rebase` gives it a fresh
    /// budget of attempts.
    Land { todo: TodoId },
    /// A slice changed files it may not change in a shared goal's tree (record version 7).
    /// The todo stays open, blocked by the gate, until a person answers: `keep` (the first
    /// option) keeps the changes and finishes the todo as done when its slice reported it
    /// done; `rollback` leaves the undoing to the todo's next slice (loopx touches no files of
    /// a shared tree). A planning slice's gate has no todo and blocks its agent.
    Scope {
        todo: Option<TodoId>,
        reported_done: bool,
    },
    /// An agent could not be started (its CLI is not installed, its profile's program is
    /// wrong): it is blocked until a person fixes it and answers `retry` (record version 8).
    /// Before, the run paced a failing spawn at six slices an hour, and no question named the
    /// fix.
    Spawn { agent: AgentName },
    /// A monitor expired, or its check failed three times in a row (record version 9). `poll`
    /// (the first option) polls it again now (an expired one gets as long again as it had);
    /// `met` marks it done, which releases the todos after it; `drop` drops it.
    Monitor { todo: TodoId },
    /// An agent proposes to amend the goal (`loopx report propose-goal`, record version 10).
    /// `accept` (the first option) amends it as the person who answers; `reject` leaves it.
    /// A field left `None` stays as it is.
    GoalProposal {
        goal: GoalId,
        /// The revision it was proposed against: accepted after the goal changed again, it
        /// would silently undo that change, so it is refused then.
        revision: u32,
        objective: Option<String>,
        scope: Option<Vec<String>>,
        why: String,
    },
    /// An amendment narrowed the goal's scope, and open todos have recorded work that fit the
    /// old scope and not the new one (record version 11). The gate blocks them: `keep` (the
    /// first option) lets agents take them again; `drop` drops every one still open.
    ScopeNarrowed { goal: GoalId, revision: u32 },
    /// A measurement is the best so far of its metric in the goal, and `[metrics.NAME]
    /// ask_on_best` asks a person about it (record version 17). `promote` (the first option)
    /// and `keep exploring` change nothing in the store: the answer reaches the goal's next
    /// prompts. `stop` pauses the goal. The gate blocks its goal.
    Best { goal: GoalId, evidence: EvidenceId },
}

/// Who loopx's own gates are asked by.
pub const LOOPX_ACTOR: &str = loopx_vocab::actor::LOOPX;

/// The options of a rollback or scope gate, in order.
pub const ROLLBACK_OPTIONS: [&str; 2] = ["keep", "rollback"];
/// The options of a landing gate, in order.
pub const LAND_OPTIONS: [&str; 2] = ["rebase", "drop"];

/// The options of a monitor gate, in order.
pub const MONITOR_OPTIONS: [&str; 3] = ["poll", "met", "drop"];

/// The options of a stall gate, in order.
pub const STALL_OPTIONS: [&str; 2] = ["retry", "drop"];
/// The options of a budget gate, in order.
pub const BUDGET_OPTIONS: [&str; 2] = ["continue", "pause"];
/// The options of a goal-met gate, in order.
pub const GOAL_MET_OPTIONS: [&str; 2] = ["done", "plan"];
/// The options of a goal proposal, in order.
pub const PROPOSAL_OPTIONS: [&str; 2] = ["accept", "reject"];
/// The options of a narrowed scope's question, in order.
pub const NARROWED_OPTIONS: [&str; 2] = ["keep", "drop"];
/// The options of a new best's question, in order.
pub const BEST_OPTIONS: [&str; 3] = ["promote", "keep exploring", "stop"];

/// What a person answered a new best's question: `(promote, stop)`; neither for `keep
/// exploring`, or a gate of another kind or not answered. What the kernel carries out (`stop`
/// pauses the goal) and what the history marks (a promoted measurement) read it here alone.
pub fn best_answer(gate: &Gate) -> (bool, bool) {
    let chosen = gate
        .answer
        .as_ref()
        .and_then(|a| a.option)
        .and_then(|n| usize::try_from(n).ok()?.checked_sub(1))
        .and_then(|i| gate.options.get(i));
    match (&gate.kind, chosen.map(String::as_str)) {
        (GateKind::Best { .. }, Some(o)) => (o == BEST_OPTIONS[0], o == BEST_OPTIONS[2]),
        _ => (false, false),
    }
}

/// A concrete question for a human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub id: GateId,
    pub question: String,
    pub options: Vec<String>,
    pub context: String,
    pub blocks: Blocks,
    pub asked_by: String,
    pub state: GateState,
    pub answer: Option<Answer>,
    pub created_at: Timestamp,
    pub kind: GateKind,
    /// The revision its goal was at when it was answered (record version 13, its last field):
    /// an answer is "answered under revision N" once the goal moved on. 0 while it is open,
    /// and for an answer an older loopx recorded (then judged by the answer's time).
    pub answered_under: u32,
}

impl Gate {
    /// Whether loopx itself opened it (a stall, a login, a budget, goal-met, rollback or
    /// conflict gate, or an approval), rather than an agent or a person.
    pub fn opened_by_loopx(&self) -> bool {
        self.kind != GateKind::Question || self.asked_by == LOOPX_ACTOR
    }

    /// The command that answers it, printed the same by `run`, `status`, `gate list` and the
    /// board's notices.
    pub fn answer_command(&self) -> String {
        answer_command(&self.id.to_string(), &self.options)
    }
}

/// The command that answers gate `id` with `options`: by number when it has options, each
/// number followed by what it means (`loopx gate answer q3 1 (keep) | 2 (rollback)`), else in
/// words. A literal `N` in a hint was once typed as an answer, and taken.
pub fn answer_command(id: &str, options: &[String]) -> String {
    if options.is_empty() {
        format!("loopx gate answer {id} \"ANSWER\"")
    } else {
        format!("loopx gate answer {id} {}", option_list(options))
    }
}

/// `1 (keep) | 2 (rollback)`: every option by its number, each clipped to a short phrase.
pub fn option_list(options: &[String]) -> String {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| format!("{} ({})", i + 1, crate::limits::clip(o.trim(), 40)))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A file that evidence points at, pinned by its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

/// What a slice or a person showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub id: EvidenceId,
    pub kind: EvidenceKind,
    pub summary: String,
    pub detail: String,
    pub files: Vec<FileRef>,
    pub todo: Option<TodoId>,
    pub slice: Option<SliceId>,
    pub actor: String,
    pub at: Timestamp,
    /// The goal's revision when it was recorded (0: not recorded, a record before version 11).
    pub revision: u32,
    /// The state of the work it speaks about when it was recorded: `None` when not recorded
    /// (a kind that speaks about no work, a project outside git, an older record). The two
    /// fields are the last of evidence: an older record reads with both empty (`codec.rs`).
    pub work: Option<WorkMark>,
    /// The measurement of `metric` evidence, and of no other kind (record version 17; an
    /// older record reads `None`). Keep it last.
    pub metric: Option<Metric>,
}

/// What the next agent on a todo needs to know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    pub id: HandoffId,
    pub todo: Option<TodoId>,
    pub done: String,
    pub next: String,
    pub files: Vec<String>,
    pub questions: Vec<String>,
    pub slice: Option<SliceId>,
    pub actor: String,
    pub at: Timestamp,
    /// The goal's revision when it was written (0: not recorded, a record before version 11).
    pub revision: u32,
    /// The todo as it was when the handoff was written: what [`Handoff::changed_since`]
    /// compares. `None` for a handoff of no todo, or an older record. The two fields are the
    /// last of a handoff: an older record reads with both empty (`codec.rs`).
    pub seen: Option<TodoSeen>,
}

/// A registered peer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    pub name: AgentName,
    pub profile: String,
    pub capabilities: Vec<String>,
    pub role: Option<String>,
    pub added_at: Timestamp,
    /// The goals it works on (`agent set NAME --goals g1,g3`); empty: every goal. Added in
    /// record version 16 (an agent of an older loopx works on every goal).
    pub goals: Vec<GoalId>,
}

impl Agent {
    /// Whether it works on `goal`: every goal unless it was kept to some.
    pub fn works_on(&self, goal: GoalId) -> bool {
        self.goals.is_empty() || self.goals.contains(&goal)
    }
}

/// Enough to recognise a process after a restart: a pid alone may have been reused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// Field 22 of `/proc/<pid>/stat`, in clock ticks since boot.
    pub start_ticks: u64,
    pub boot_id: String,
}

/// One bounded agent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceRecord {
    pub id: SliceId,
    pub agent: AgentName,
    pub todo: Option<TodoId>,
    pub epoch: Option<u64>,
    pub kind: SliceKind,
    pub profile_hash: String,
    pub argv: Vec<String>,
    pub process: Option<ProcessIdentity>,
    pub started_at: Timestamp,
    /// The wall-time limit the slice runs under, in seconds (0 = none recorded).
    pub limit_secs: u64,
    pub ended_at: Option<Timestamp>,
    pub outcome: Option<Outcome>,
    pub exit: Option<String>,
    pub tokens: u64,
    pub cost_usd: f64,
    pub output_bytes: u64,
    pub log: Option<String>,
    /// Processes the agent left behind that loopx stopped after it exited.
    pub leftovers: u32,
    /// What contained the agent: `namespaces+landlock`, `namespaces`, `landlock` or `session`
    /// (`docs/permissions.md`); empty when not recorded (before the agent spawned, or a record
    /// of an older loopx).
    pub containment: String,
    /// SHA-256 of the slice's log as loopx finished writing it: `loopx log --slice` shows
    /// whether the file is still what loopx wrote. Empty when not recorded.
    pub log_sha256: String,
    /// Its todo's words as the slice began with them (record version 13, its last field): the
    /// handoff it writes is stale once they changed, even when a person rewrote the todo while
    /// it ran. `None` for a slice without a todo, or one an older loopx began.
    pub seen: Option<TodoSeen>,
    /// The goal it worked for: its todo's, or the goal a planning slice planned (record
    /// version 16, its last field; `None` for a slice an older loopx began, whose goal is its
    /// todo's or the one that was active).
    pub goal: Option<GoalId>,
}

/// A hold on an account (every profile on it pauses) or on one agent (key `agent:<name>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaHold {
    pub key: String,
    /// `None`: until a person resumes.
    pub until: Option<Timestamp>,
    pub reason: String,
    pub source: HoldSource,
    pub set_by: String,
    pub set_at: Timestamp,
}

impl QuotaHold {
    /// When the hold ends, as seen at `now` (`None`: until a person resumes;
    /// [`loopx_vocab::kinds::hold_ends`] says what a clock that stepped back does).
    pub fn ends(&self, now: Timestamp) -> Option<Timestamp> {
        loopx_vocab::kinds::hold_ends(self.until.map(|t| t.0), self.set_at.0, now.0).map(Timestamp)
    }
}

/// One recorded spend: a slice admitted, or usage charged after it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    pub seq: u64,
    pub agent: AgentName,
    pub account: String,
    pub goal: Option<GoalId>,
    /// `true` for an admission (a slice slot), `false` for usage charged afterwards.
    pub admitted: bool,
    pub tokens: u64,
    pub cost_usd: f64,
    /// When the slice ran, for the goal's share.
    pub busy: Option<(Timestamp, Timestamp)>,
    pub at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_gate_holds_back_whoever_would_do_the_work() {
        let cases = [
            (Blocks::Global, true, true),
            (Blocks::Goal(GoalId(2)), true, true),
            (Blocks::Goal(GoalId(1)), false, false),
            (Blocks::Todos(vec![TodoId(3)]), false, true),
            (Blocks::Todos(vec![TodoId(4)]), false, false),
            (Blocks::Agent("exec".parse().expect("name")), false, false),
            (Blocks::Nothing, false, false),
        ];
        for (blocks, whole_goal, this_todo) in cases {
            assert_eq!(blocks.holds_whole_goal(GoalId(2)), whole_goal, "{blocks:?}");
            assert_eq!(
                blocks.holds_todo(TodoId(3), GoalId(2)),
                this_todo,
                "{blocks:?}"
            );
        }
    }
}
