//! The operations, and the one entry point that applies them.

use std::time::Duration;

pub use super::new_evidence::NewEvidence;
use super::{answer, entities, slice, todo};
use crate::errors::{Conflict, Invalid, KernelError, Refused};
use crate::ids::{AgentName, GateId, GoalId, SliceId, TodoId};
use crate::limits;
use crate::model::{
    Agent, Blocks, EventKind, Evidence, Gate, GateKind, Goal, GoalStatus, Handoff, Outcome,
    PermissionLevel, ProcessIdentity, SliceKind, SliceRecord, Todo, TodoState,
};
use crate::redact::Redactor;
use crate::store::Store;
use crate::store::writer::Writer;
use crate::time::Timestamp;

/// Ends a running slice as `interrupted`, with evidence saying why, and releases its claim if
/// it still holds it: what a slice that could not finish normally leaves (its supervisor
/// failed, was stopped, or died).
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupt {
    pub slice: SliceId,
    pub reason: String,
    pub exit: Option<String>,
    pub output_bytes: u64,
    /// The usage the slice spent, when known: charged (and recorded on the slice) in the same
    /// transaction, so an interrupted slice's tokens still count against its windows.
    pub usage: Option<super::quota::QuotaRequest>,
}

/// A todo done or dropped. Without an epoch only an unclaimed (or expired) todo may be
/// finished.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishTodo {
    pub todo: TodoId,
    pub to: TodoState,
    pub agent: Option<AgentName>,
    pub epoch: Option<u64>,
}

/// A new goal.
#[derive(Debug, Clone, PartialEq)]
pub struct NewGoal {
    /// The id the caller expects the goal to take ([`Snapshot::next_goal_id`]), when it named
    /// something after it first; refused if another goal took it meanwhile.
    ///
    /// [`Snapshot::next_goal_id`]: crate::Snapshot::next_goal_id
    pub id: Option<GoalId>,
    pub objective: String,
    pub scope: Vec<String>,
    pub permission: PermissionLevel,
    pub share: f64,
    pub isolation: crate::model::Isolation,
    /// Which active goal the agents serve first (higher first).
    pub priority: i32,
}

/// A goal paused, resumed or done.
#[derive(Debug, Clone, PartialEq)]
pub struct SetGoalStatus {
    /// `None` acts on the current goal.
    pub goal: Option<GoalId>,
    pub to: GoalStatus,
    /// An agent's `done` ends the goal only where the project lets agents end goals (`[goal]
    /// close = "agents"`, which the supervisor reads); otherwise it asks a person
    /// (`goal_met.rs`). Nothing an agent writes sets it.
    pub agents_close: bool,
}

/// A person's change to a goal's objective, scope or permission (`goal amend`); a field left
/// `None` stays as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AmendGoal {
    /// `None` acts on the current goal (active, else paused).
    pub goal: Option<GoalId>,
    pub objective: Option<String>,
    /// Empty: the whole project (`**`), as at `goal start`.
    pub scope: Option<Vec<String>>,
    pub permission: Option<PermissionLevel>,
    /// Why, in the person's words.
    pub why: String,
}

/// A hold on an account (or `agent:<name>`) until a time, or until resumed (`until: None`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewHold {
    pub key: String,
    pub until: Option<Timestamp>,
    pub reason: String,
    pub source: crate::model::HoldSource,
}

/// A new todo.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewTodo {
    /// `None` adds it to the current goal.
    pub goal: Option<GoalId>,
    pub title: String,
    pub detail: String,
    pub priority: i32,
    pub needs: Vec<String>,
    pub after: Vec<TodoId>,
    pub role: Option<String>,
    /// Makes it a monitor: loopx polls the check, no agent takes it.
    pub monitor: Option<crate::model::MonitorSpec>,
    /// No agent takes it before then.
    pub not_before: Option<Timestamp>,
    /// Todos added with it, each `--after` it, in the same transaction: a monitor and the work
    /// that follows it, reported together (one level: these have no `then` of their own).
    pub then: Vec<NewTodo>,
    /// A continuation for this agent (`--same-agent`): it is claimed for the agent at once, for
    /// [`CONTINUATION_HOLD`], so that the agent takes it next and a peer only once that lapses.
    ///
    /// [`CONTINUATION_HOLD`]: crate::store::CONTINUATION_HOLD
    pub held_for: Option<AgentName>,
}

/// A new gate.
#[derive(Debug, Clone, PartialEq)]
pub struct NewGate {
    pub question: String,
    pub options: Vec<String>,
    pub context: String,
    pub blocks: Blocks,
    /// What answering it does; a stall gate for a todo that already has an open one is not
    /// asked twice (the open one is returned).
    pub kind: GateKind,
}

/// How a gate is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerChoice {
    Text(String),
    /// 1-based.
    Option(u32),
}

impl AnswerChoice {
    /// What the answer means on `gate`, the one rule for the CLI, the board and the kernel: on a
    /// gate with options, an answer that names an option (any case) is that option, and a
    /// number is the option at that place. A number that is also another option's text (options
    /// `2` and `yes, delete it`: is `2` the first or the second?) is refused as ambiguous rather
    /// than guessed. Anything else is an answer in words, which the kernel takes only on a gate
    /// without options. The option's range is checked when the answer is recorded.
    pub fn resolve(self, gate: &Gate) -> Result<AnswerChoice, crate::errors::Invalid> {
        let AnswerChoice::Text(text) = self else {
            return Ok(self);
        };
        if gate.options.is_empty() {
            return Ok(AnswerChoice::Text(text));
        }
        let words = text.trim();
        let named = gate
            .options
            .iter()
            .position(|o| o.trim().eq_ignore_ascii_case(words))
            .and_then(|i| u32::try_from(i + 1).ok());
        // A number is digits only (`+2`, `-1` and ` 2 ` spelled otherwise are words); one too
        // large for any option is out of range, not words.
        let number = (!words.is_empty() && words.bytes().all(|b| b.is_ascii_digit()))
            .then(|| words.parse::<u32>().unwrap_or(u32::MAX));
        let count = gate.options.len();
        let places = |n: u32| usize::try_from(n).is_ok_and(|n| (1..=count).contains(&n));
        match (named, number) {
            (Some(place), Some(number)) if place != number && places(number) => {
                Err(crate::errors::Invalid::Other(format!(
                    "`{words}` is the text of option {place} of gate {} and the number of option {number}: answer with `--option N`",
                    gate.id
                )))
            }
            (Some(place), _) => Ok(AnswerChoice::Option(place)),
            (None, Some(number)) => Ok(AnswerChoice::Option(number)),
            (None, None) => Ok(AnswerChoice::Text(text)),
        }
    }
}

/// A new handoff note.
#[derive(Debug, Clone, PartialEq)]
pub struct NewHandoff {
    pub todo: Option<TodoId>,
    pub done: String,
    pub next: String,
    pub files: Vec<String>,
    pub questions: Vec<String>,
    pub slice: Option<SliceId>,
    /// The epoch of the claim the writer works under: a stale one is refused.
    pub epoch: Option<u64>,
}

impl NewTodo {
    /// Redacts what it writes: its text, its check, and the todos added after it.
    fn redact(&mut self, r: &Redactor) {
        r.redact_in_place(&mut self.title);
        r.redact_in_place(&mut self.detail);
        if let Some(m) = &mut self.monitor {
            r.redact_in_place(&mut m.check);
        }
        for next in &mut self.then {
            next.redact(r);
        }
    }

    /// What the kernel refuses in any new todo, whatever the state: a blank or too long title,
    /// a too long detail, a capability or role that is not an id (`reviewer`, not `Reviewer
    /// Team`).
    pub fn check(&self) -> Result<(), Invalid> {
        limits::check_text(
            "title",
            &self.title,
            limits::TITLE,
            "; put the rest in --detail",
        )?;
        limits::check_len("detail", &self.detail, limits::DETAIL)?;
        for name in self.needs.iter().chain(&self.role) {
            crate::ids::check_id("capability or role", name)?;
        }
        if let Some(monitor) = &self.monitor {
            limits::check_text("check", &monitor.check, limits::DETAIL, "")?;
            if monitor.every_ms < crate::model::MIN_EVERY_MS {
                return Err(Invalid::Other(format!(
                    "a monitor polls at most every {} seconds (--every {} was given)\n(hint: `--every 1m`)",
                    crate::model::MIN_EVERY_MS / 1000,
                    humantime::format_duration(Duration::from_millis(monitor.every_ms))
                )));
            }
            if let Some(profile) = &monitor.profile {
                crate::ids::check_id("profile", profile)?;
            }
        }
        if self.then.len() > limits::LIST_ITEMS {
            return Err(Invalid::Other(format!(
                "{} todos after one are too many (at most {})",
                self.then.len(),
                limits::LIST_ITEMS
            )));
        }
        for next in &self.then {
            if !next.then.is_empty() {
                return Err(Invalid::Other(
                    "a todo added after another cannot have todos after it in the same report; report them once it exists".to_owned(),
                ));
            }
            next.check()?;
        }
        Ok(())
    }
}

impl NewGate {
    /// What the kernel refuses in any new gate: a question that is not concrete (see
    /// [`check_question`](crate::question::check_question)) or too long, blank or too long
    /// options, too many of them, a too long context, a todo gate that names no todo.
    pub fn check(&self) -> Result<(), Invalid> {
        // A goal proposal's question is loopx's, written when the kernel asks it
        // (`amend.rs`); what the agent wrote is checked there, as an amendment's would be.
        if let GateKind::GoalProposal { why, .. } = &self.kind {
            return limits::check_text("why", why, limits::DETAIL, "");
        }
        crate::question::check_question(&self.question)?;
        limits::check_text(
            "question",
            &self.question,
            limits::QUESTION,
            "; put the background in --context",
        )?;
        limits::check_list("option", &self.options, limits::OPTION)?;
        limits::check_len("context", &self.context, limits::DETAIL)?;
        if matches!(&self.blocks, Blocks::Todos(todos) if todos.is_empty()) {
            return Err(Invalid::Other(
                "a gate that blocks todos must name at least one".to_owned(),
            ));
        }
        if let GateKind::Stall { todo } = self.kind
            && self.blocks != Blocks::Todos(vec![todo])
        {
            return Err(Invalid::Other(format!(
                "a stall gate blocks exactly its todo, {todo}"
            )));
        }
        Ok(())
    }
}

impl NewHandoff {
    /// What the kernel refuses in any new handoff: nothing done and nothing next, too long
    /// texts, blank or too many files and questions.
    pub fn check(&self) -> Result<(), Invalid> {
        if self.done.trim().is_empty() && self.next.trim().is_empty() {
            return Err(Invalid::Other("a handoff needs what was done or what comes next\n(hint: `--done \"…\"` and `--next \"…\"`)".to_owned()));
        }
        limits::check_len("done", &self.done, limits::DETAIL)?;
        limits::check_len("next", &self.next, limits::DETAIL)?;
        limits::check_list("file", &self.files, 1_000)?;
        limits::check_list("question", &self.questions, limits::QUESTION)?;
        Ok(())
    }
}

/// Stands for the slice's id in [`NewSlice::log`] and [`NewSlice::argv`].
///
/// The id is allocated inside the transaction that records the slice, yet the files a slice
/// uses (its log, its prompt) are named after it and recorded in that same transaction.
pub const SLICE_PLACEHOLDER: &str = "{slice}";

/// A slice about to be spawned. Every [`SLICE_PLACEHOLDER`] in `log` and `argv` is replaced
/// with the id the slice gets.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSlice {
    pub agent: AgentName,
    pub todo: Option<TodoId>,
    pub epoch: Option<u64>,
    pub kind: SliceKind,
    pub profile_hash: String,
    pub argv: Vec<String>,
    pub limit_secs: u64,
    pub log: Option<String>,
    /// The supervisor running the slice, for recovery after it dies.
    pub owner: Option<ProcessIdentity>,
    /// The goal a planning slice plans (a slice on a todo works for its todo's goal); `None`
    /// with one goal active plans that one.
    pub goal: Option<GoalId>,
}

/// Everything that begins a slice, in one transaction: the claim (unless the agent holds a
/// live lease on the todo already), the quota admission, and the slice record. A refusal of
/// any part leaves nothing behind: no claim, no spend, no slice.
#[derive(Debug, Clone, PartialEq)]
pub struct BeginSlice {
    /// The slice; its `epoch` is ignored, the claim decides it.
    pub slice: NewSlice,
    /// How long a claim taken for it lasts.
    pub claim_ttl: Duration,
    /// The admission against the agent's quota (its usage is charged after the slice).
    pub admit: super::quota::QuotaRequest,
    /// The person's messages its prompt carries: they wait no longer.
    pub messages: Vec<crate::ids::MessageId>,
}

/// What a finished slice did.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceEnd {
    pub outcome: Outcome,
    pub exit: Option<String>,
    pub tokens: u64,
    pub cost_usd: f64,
    pub output_bytes: u64,
    /// Processes the agent left behind that loopx stopped after it exited.
    pub leftovers: u32,
    /// SHA-256 of the slice's log as loopx finished writing it (empty: none).
    pub log_sha256: String,
}

/// Every change the kernel accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    GoalStart(NewGoal),
    GoalSetStatus(SetGoalStatus),
    /// A person amends a goal: its next revision.
    GoalAmend(AmendGoal),
    TodoAdd(NewTodo),
    /// A person changes a todo's title, detail or priority.
    TodoEdit(super::edit::EditTodo),
    /// The planning slice that re-plans an amended goal drops or rewrites an open todo.
    TodoReplan(super::replan::ReplanTodo),
    TodoClaim(ClaimTodo),
    TodoRenew(RenewClaim),
    TodoRelease(ReleaseClaim),
    TodoFinish(FinishTodo),
    GateAsk(NewGate),
    GateAnswer(AnswerGate),
    GateWithdraw(WithdrawGate),
    EvidenceAdd(NewEvidence),
    HandoffAdd(NewHandoff),
    AgentAdd(NewAgent),
    /// A supervisor takes a monitor's due poll (or asks a person about an expired one).
    PollClaim(super::monitor::ClaimPoll),
    /// A poll's result, under its claim.
    PollRecord(super::monitor::RecordPoll),
    /// A person changes an agent (`loopx agent set`).
    AgentSet(ChangeAgent),
    /// A person removes an agent that runs no slice (`loopx agent remove`).
    AgentRemove(RemoveAgent),
    /// What an agent under `loopx run` waits on from now: an event, nothing else.
    AgentWaits(AgentWaits),
    SliceStart(NewSlice),
    SliceSpawned {
        slice: SliceId,
        process: ProcessIdentity,
        /// What contains the agent (see [`SliceRecord::containment`]).
        containment: String,
        /// Whether starting gave the agent its prompt (an argument, a file, typed input): the
        /// messages the prompt carries are delivered now. Not when its CLI reads the prompt as
        /// stream-json from a pipe: they are delivered when it echoes the prompt
        /// ([`LiveMessages::Used`](super::message::LiveMessages)), else wait again.
        prompt_read: bool,
    },
    SliceEnd {
        slice: SliceId,
        end: SliceEnd,
    },
    /// Claim, admit and record a slice at once (see [`BeginSlice`]).
    SliceBegin(BeginSlice),
    /// A person's message to an agent (`loopx say`).
    Say(super::message::NewMessage),
    /// A running slice's messages, written into its session (loopx's own).
    LiveMessages(super::message::LiveMessages),
    SliceInterrupt(Interrupt),
    /// Refuses unless `slice` is running, runs `agent`, works under exactly this claim, and
    /// the claim's epoch is still current; writes nothing. The first operation of a batch an
    /// agent writes from inside its slice (`loopx report`), so the check and the writes are one
    /// transaction.
    InSlice {
        slice: SliceId,
        agent: AgentName,
        todo: Option<TodoId>,
        epoch: Option<u64>,
    },
    /// Refuses unless `slice` is running and the claim it works under has lapsed (its lease
    /// ended by the store's clock, or the claim moved on); writes nothing. Recovery puts it
    /// before its interrupt of another host's slice, so that a renewal committed after
    /// recovery read the lease keeps the slice alive (`Conflict::ClaimLive`).
    ClaimLapsed {
        slice: SliceId,
    },
    /// Admit one slice against the agent's quota, recording it; refused when quota says wait.
    QuotaAdmit(super::quota::QuotaRequest),
    /// Record usage known after a slice ran (may overspend: the excess becomes debt).
    QuotaCharge(super::quota::QuotaRequest),
    QuotaHold(NewHold),
    /// Lift the holds on a key, or every hold.
    QuotaResume(Resume),
}

/// An agent claims a todo for `ttl`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimTodo {
    pub todo: TodoId,
    pub agent: AgentName,
    pub ttl: Duration,
}

/// The holder of a claim (`agent` at `epoch`) extends it by `ttl` from now.
#[derive(Debug, Clone, PartialEq)]
pub struct RenewClaim {
    pub todo: TodoId,
    pub agent: AgentName,
    pub epoch: u64,
    pub ttl: Duration,
}

/// The holder of a claim gives it back; the todo is open again.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseClaim {
    pub todo: TodoId,
    pub agent: AgentName,
    pub epoch: u64,
}

/// A person answers a gate. `slice` is the slice the answer comes from, if any: such answers
/// are refused. `note` is guidance a person adds to an option (`loopx gate answer q3 1 --note
/// "…"`), passed to the next slice with the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerGate {
    pub gate: GateId,
    pub choice: AnswerChoice,
    pub slice: Option<String>,
    pub note: Option<String>,
}

/// A gate closed without an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct WithdrawGate {
    pub gate: GateId,
}

/// A person registers an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAgent {
    pub name: AgentName,
    pub profile: String,
    pub capabilities: Vec<String>,
    pub role: Option<String>,
}

/// A person changes an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeAgent {
    pub name: AgentName,
    pub change: super::agent::AgentChange,
}

/// What an agent under `loopx run` waits on from now (`EventKind::AgentWaits`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentWaits {
    pub agent: AgentName,
    /// One word: `loopx_quota::WaitOn::as_str`.
    pub on: String,
    pub goal: Option<GoalId>,
    pub reason: String,
}

/// A person removes an agent that runs no slice.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoveAgent {
    pub name: AgentName,
}

/// Lift the holds on `key` (an account, or `agent:NAME`), or every hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    pub key: Option<String>,
}

/// The record an operation created or changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    Goal(Goal),
    Todo(Todo),
    Gate(Gate),
    Evidence(Evidence),
    Handoff(Handoff),
    Agent(Agent),
    Slice(SliceRecord),
    /// A slice began; `took_claim` when this began claimed the todo (else the agent already
    /// held it).
    SliceBegun {
        slice: SliceRecord,
        took_claim: bool,
    },
    /// A slice was interrupted; `released` when its claim was given back.
    Interrupted {
        slice: SliceRecord,
        released: bool,
    },
    Spend(crate::model::Spend),
    Hold(crate::model::QuotaHold),
    Message(crate::model::Message),
    /// Messages taken for a running slice (`LiveMessages::Take`).
    Messages(Vec<crate::model::Message>),
    /// A goal amended, and its new revision.
    Amended {
        goal: Goal,
        revision: crate::model::GoalRevision,
    },
    /// The keys whose holds were lifted.
    Resumed(Vec<String>),
    /// An event recorded, nothing else changed.
    Recorded,
}

impl Op {
    /// A short name for refusals: `renew`, `done`.
    fn action(&self) -> &'static str {
        match self {
            Op::TodoRenew(_) => "renew",
            Op::TodoRelease(_) => "release",
            Op::PollClaim(_) | Op::PollRecord(_) => "poll",
            Op::TodoFinish(FinishTodo {
                to: TodoState::Dropped,
                ..
            }) => "drop",
            Op::TodoFinish(_) => "done",
            Op::SliceStart(_) | Op::SliceBegin(_) => "slice start",
            Op::InSlice { .. } => "report",
            Op::ClaimLapsed { .. } => "recover",
            _ => "change",
        }
    }

    /// Redacts every free text the operation would store.
    fn redact(&mut self, r: &Redactor) {
        let all = |texts: &mut Vec<String>| texts.iter_mut().for_each(|t| r.redact_in_place(t));
        let opt = |text: &mut Option<String>| text.iter_mut().for_each(|t| r.redact_in_place(t));
        match self {
            Op::GoalStart(NewGoal {
                objective, scope, ..
            }) => {
                r.redact_in_place(objective);
                all(scope);
            }
            Op::GoalAmend(AmendGoal {
                objective,
                scope,
                why,
                ..
            }) => {
                opt(objective);
                scope.iter_mut().for_each(all);
                r.redact_in_place(why);
            }
            Op::TodoAdd(new) => new.redact(r),
            Op::TodoEdit(edit) => edit.redact(r),
            Op::TodoReplan(replan) => replan.redact(r),
            Op::GateAsk(new) => {
                r.redact_in_place(&mut new.question);
                r.redact_in_place(&mut new.context);
                all(&mut new.options);
            }
            Op::GateAnswer(AnswerGate { choice, note, .. }) => {
                if let AnswerChoice::Text(text) = choice {
                    r.redact_in_place(text);
                }
                opt(note);
            }
            Op::EvidenceAdd(new) => {
                r.redact_in_place(&mut new.summary);
                r.redact_in_place(&mut new.detail);
                new.files
                    .iter_mut()
                    .for_each(|f| r.redact_in_place(&mut f.path));
            }
            Op::HandoffAdd(new) => {
                r.redact_in_place(&mut new.done);
                r.redact_in_place(&mut new.next);
                all(&mut new.files);
                all(&mut new.questions);
            }
            Op::AgentAdd(NewAgent { profile, .. }) => r.redact_in_place(profile),
            Op::AgentSet(ChangeAgent { change, .. }) => opt(&mut change.profile),
            Op::SliceStart(new) => all(&mut new.argv),
            Op::SliceBegin(begin) => all(&mut begin.slice.argv),
            Op::SliceInterrupt(Interrupt { reason, exit, .. }) => {
                r.redact_in_place(reason);
                opt(exit);
            }
            Op::SliceEnd { end, .. } => opt(&mut end.exit),
            Op::GoalSetStatus(_)
            | Op::TodoClaim(_)
            | Op::TodoRenew(_)
            | Op::TodoRelease(_)
            | Op::TodoFinish(_)
            | Op::GateWithdraw(_)
            | Op::AgentRemove(_)
            | Op::SliceSpawned { .. }
            | Op::InSlice { .. }
            | Op::ClaimLapsed { .. }
            | Op::QuotaAdmit(_)
            | Op::QuotaCharge(_)
            | Op::QuotaResume(_)
            | Op::PollClaim(_)
            | Op::LiveMessages(_) => {}
            Op::QuotaHold(NewHold { reason, .. }) => r.redact_in_place(reason),
            Op::AgentWaits(AgentWaits { reason, .. }) => r.redact_in_place(reason),
            Op::Say(message) => r.redact_in_place(&mut message.text),
            Op::PollRecord(poll) => {
                r.redact_in_place(&mut poll.tail);
                opt(&mut poll.failed);
            }
        }
    }
}

fn dispatch(w: &Writer<'_>, op: Op) -> Result<Applied, KernelError> {
    match op {
        Op::GoalStart(NewGoal {
            id,
            objective,
            scope,
            permission,
            share,
            isolation,
            priority,
        }) => entities::goal_start(
            w,
            id,
            (objective, scope),
            permission,
            (share, priority),
            isolation,
        ),
        Op::GoalSetStatus(SetGoalStatus {
            goal,
            to,
            agents_close,
        }) => entities::goal_set_status_by(w, goal, to, agents_close),
        Op::GoalAmend(amend) => super::amend::goal_amend(w, amend),
        Op::TodoAdd(new) => todo::add(w, new),
        Op::TodoClaim(ClaimTodo { todo, agent, ttl }) => {
            todo::claim(w, todo, &agent, ttl).map(Applied::Todo)
        }
        Op::TodoRenew(RenewClaim {
            todo,
            agent,
            epoch,
            ttl,
        }) => todo::renew(w, todo, &agent, epoch, ttl),
        Op::TodoRelease(ReleaseClaim { todo, agent, epoch }) => {
            todo::release(w, todo, &agent, epoch)
        }
        Op::TodoFinish(FinishTodo {
            todo,
            to,
            agent,
            epoch,
        }) => todo::finish_as_writer(w, todo, to, agent.as_ref(), epoch),
        Op::GateAsk(new) => entities::gate_ask(w, new),
        Op::GateAnswer(AnswerGate {
            gate,
            choice,
            slice,
            note,
        }) => answer::gate_answer(w, gate, choice, slice, note),
        Op::GateWithdraw(WithdrawGate { gate }) => entities::gate_withdraw(w, gate),
        Op::PollClaim(claim) => super::monitor::claim_poll(w, claim),
        Op::PollRecord(poll) => super::monitor::record_poll(w, poll),
        Op::EvidenceAdd(new) => entities::evidence_add(w, new),
        Op::HandoffAdd(new) => entities::handoff_add(w, new),
        Op::AgentAdd(NewAgent {
            name,
            profile,
            capabilities,
            role,
        }) => super::agent::add(w, name, profile, capabilities, role),
        Op::TodoEdit(edit) => super::edit::edit(w, edit),
        Op::TodoReplan(replan) => super::replan::apply(w, replan),
        Op::AgentSet(ChangeAgent { name, change }) => super::agent::set(w, name, change),
        Op::AgentRemove(RemoveAgent { name }) => super::agent::remove(w, name),
        Op::AgentWaits(waits) => super::agent::waits(w, waits),
        Op::Say(message) => super::message::send(w, message),
        Op::LiveMessages(op) => super::message::live(w, op),
        Op::SliceStart(new) => slice::start(w, new).map(Applied::Slice),
        Op::SliceBegin(begin) => slice::begin(w, begin),
        Op::SliceSpawned {
            slice,
            process,
            containment,
            prompt_read,
        } => slice::spawned(w, slice, process, containment, prompt_read),
        Op::SliceEnd { slice, end } => slice::end(w, slice, end).map(Applied::Slice),
        Op::SliceInterrupt(Interrupt {
            slice,
            reason,
            exit,
            output_bytes,
            usage,
        }) => slice::interrupt(w, slice, reason, exit, output_bytes, usage),
        Op::InSlice {
            slice,
            agent,
            todo,
            epoch,
        } => slice::in_slice(w, slice, &agent, todo, epoch),
        Op::ClaimLapsed { slice } => slice::claim_lapsed(w, slice),
        Op::QuotaAdmit(req) => super::quota::spend(w, req, true),
        Op::QuotaCharge(req) => super::quota::spend(w, req, false),
        Op::QuotaHold(NewHold {
            key,
            until,
            reason,
            source,
        }) => super::quota::hold(w, key, until, reason, source),
        Op::QuotaResume(Resume { key }) => super::quota::resume(w, key),
    }
}

/// The event that records a refusal worth auditing, if `err` is one.
fn refusal_event(op: &Op, err: &KernelError) -> Option<EventKind> {
    match (err, op) {
        (
            KernelError::Conflict(Conflict::StaleEpoch {
                todo,
                by,
                presented,
                current,
            }),
            _,
        ) => Some(EventKind::StaleEpochRefused {
            todo: *todo,
            agent: by.clone(),
            presented: *presented,
            current: *current,
            action: op.action().to_owned(),
        }),
        (
            KernelError::Refused(Refused::AnswerFromSlice { slice }),
            Op::GateAnswer(AnswerGate { gate, .. }),
        ) => Some(EventKind::GateAnswerRefused {
            gate: *gate,
            slice: slice.clone(),
        }),
        _ => None,
    }
}

impl Store {
    fn record_refusal(
        &self,
        kind: EventKind,
        actor: &str,
        now: Timestamp,
    ) -> Result<(), KernelError> {
        let txn = self.begin_write()?;
        let now = txn.corrected(now);
        txn.with_kv(|kv| Writer::new(kv, now, actor)?.event(kind))?;
        txn.commit()
    }

    /// Records a change made outside loopx (`source`: `lark`) that was refused and put back,
    /// as a [`EventKind::ChangeRefused`] event under `actor`, the person who made it as that
    /// place names them. It changes nothing else: the refusal itself was decided by the caller
    /// (through the same operations a person's command uses).
    pub fn record_refused_change(
        &self,
        source: &str,
        todo: Option<crate::ids::TodoId>,
        change: &str,
        why: &str,
        actor: &str,
        now: Timestamp,
    ) -> Result<(), KernelError> {
        let text = |t: &str| {
            let mut t = t.to_owned();
            self.redactor.redact_in_place(&mut t);
            t
        };
        let kind = EventKind::ChangeRefused {
            source: source.to_owned(),
            todo,
            change: text(change),
            why: text(why),
        };
        self.record_refusal(kind, actor, now)
    }

    /// Validates and applies one operation in one write transaction, with its event.
    ///
    /// A refusal worth auditing (a stale epoch, an answer from inside a slice) is recorded as an
    /// event of its own, in a separate transaction, after the refused one was rolled back.
    pub fn apply(&self, op: Op, actor: &str, now: Timestamp) -> Result<Applied, KernelError> {
        let mut applied = self.apply_all(vec![op], actor, now)?;
        Ok(applied.pop().expect("one operation yields one record"))
    }

    /// Applies several operations atomically, in order, in one write transaction (one event
    /// each): all of them, or none. A slice's writeback (evidence, handoff, new todos, the
    /// lease's release) uses this, so a crash never leaves half of it.
    pub fn apply_all(
        &self,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Applied>, KernelError> {
        self.apply_batch(ops, actor, now)
            .map_err(|refused| refused.error)
    }

    /// Like [`Store::apply_all`], saying which operation was refused: a caller writing a batch
    /// of untrusted items can drop that one and try again with the rest.
    pub fn apply_batch(
        &self,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Vec<Applied>, BatchError> {
        self.apply_batch_redacted(ops, actor, now, &self.redactor)
    }

    /// Like [`Store::apply_batch`], redacting with `redactor` (one that also knows a profile's
    /// secret names) instead of the store's own: a handle shared by a supervisor's workers
    /// writes for agents with different profiles.
    pub fn apply_batch_redacted(
        &self,
        ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
        redactor: &crate::redact::Redactor,
    ) -> Result<Vec<Applied>, BatchError> {
        // A panic inside redb (damage) becomes a store error for the batch as a whole.
        super::super::open::shield(&self.path, || {
            self.apply_batch_unshielded(ops, actor, now, redactor)
        })
        .unwrap_or_else(|damaged| {
            Err(BatchError {
                op: None,
                error: damaged.into(),
            })
        })
    }

    fn apply_batch_unshielded(
        &self,
        mut ops: Vec<Op>,
        actor: &str,
        now: Timestamp,
        redactor: &crate::redact::Redactor,
    ) -> Result<Vec<Applied>, BatchError> {
        let whole = |error: KernelError| BatchError { op: None, error };
        for op in &mut ops {
            op.redact(redactor);
        }
        let action = ops.first().map_or("change", Op::action);
        let crash_after = match &self.faults {
            Some(faults) => faults.before_write(&self.path, action).map_err(whole)?,
            None => false,
        };
        let txn = self.begin_write().map_err(whole)?;
        let now = txn.corrected(now);
        let db_now = txn.db_now();
        let mut applied = Vec::with_capacity(ops.len());
        let mut failure = None;
        let book = crate::store::account_book::BookCell::new(self);
        txn.with_kv(|kv| -> Result<(), BatchError> {
            let mut writer = Writer::new(kv, now, actor).map_err(whole)?;
            writer.db_now = db_now;
            writer.book = Some(&book);
            for (index, op) in ops.iter().enumerate() {
                match dispatch(&writer, op.clone()) {
                    Ok(record) => applied.push(record),
                    Err(err) => {
                        failure = Some((index, err));
                        break;
                    }
                }
            }
            Ok(())
        })?;
        let Some((index, err)) = failure else {
            // The book's writes of the batch commit just before the project's own: a batch
            // refused or failed leaves nothing in the book (nor does one the book refuses).
            if let Err(e) = book.finish(true) {
                txn.abort().map_err(whole)?;
                return Err(whole(e));
            }
            txn.commit().map_err(whole)?;
            if let Some(faults) = self.faults.as_ref().filter(|_| crash_after) {
                faults.crash();
            }
            crate::doorbell::ring(&self.project);
            return Ok(applied);
        };
        book.finish(false).map_err(whole)?;
        txn.abort().map_err(whole)?;
        // Best effort: the audit record must never replace the refusal the caller needs to see
        // (a busy store here would turn a conflict into a store error).
        if let Some(kind) = refusal_event(&ops[index], &err)
            && let Err(e) = self.record_refusal(kind, actor, now)
        {
            tracing::warn!(error = %e, "cannot record the refusal's event");
        }
        // A store that fails midway fails the batch as a whole, not the operation.
        let op = (!matches!(err, KernelError::Store(_))).then_some(index);
        Err(BatchError { op, error: err })
    }
}

/// A refused batch: nothing of it was written.
#[derive(Debug)]
pub struct BatchError {
    /// The operation the kernel refused (its index in the batch); `None` when the store
    /// itself failed.
    pub op: Option<usize>,
    pub error: KernelError,
}

#[cfg(test)]
mod answer_tests {
    use super::AnswerChoice::{self, Option as Opt, Text};
    use crate::model::{Blocks, Gate, GateKind, GateState};

    fn gate(options: &[&str]) -> Gate {
        Gate {
            id: crate::GateId(1),
            question: "Which one should the release use?".into(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            context: String::new(),
            blocks: Blocks::Global,
            asked_by: "human:a".into(),
            state: GateState::Open,
            answer: None,
            created_at: crate::Timestamp(0),
            kind: GateKind::Question,
            answered_under: 0,
        }
    }

    fn resolve(options: &[&str], text: &str) -> Result<AnswerChoice, String> {
        Text(text.into())
            .resolve(&gate(options))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn one_rule_for_an_answer() {
        let words = ["keep", "rollback"];
        assert_eq!(resolve(&words, "2"), Ok(Opt(2)));
        assert_eq!(resolve(&words, " RollBack "), Ok(Opt(2)));
        assert_eq!(
            resolve(&words, "7"),
            Ok(Opt(7)),
            "out of range: refused when recorded"
        );
        assert_eq!(
            resolve(&words, "99999999999"),
            Ok(Opt(u32::MAX)),
            "too large: out of range"
        );
        for words_only in ["+2", "-1", "2.0", "two"] {
            assert_eq!(resolve(&words, words_only), Ok(Text(words_only.into())));
        }
        // Numbers as options: each names itself unless it is another option's place.
        let numbers = ["4", "8", "16"];
        assert_eq!(resolve(&numbers, "8"), Ok(Opt(2)));
        assert_eq!(resolve(&numbers, "16"), Ok(Opt(3)));
        assert_eq!(resolve(&numbers, "2"), Ok(Opt(2)));
        let clash = ["4", "2", "1"];
        assert!(resolve(&clash, "1").is_err_and(|e| e.contains("--option N")));
        assert_eq!(resolve(&clash, "2"), Ok(Opt(2)));
        assert_eq!(resolve(&[], "2"), Ok(Text("2".into())), "no options: words");
        assert_eq!(Opt(3).resolve(&gate(&clash)), Ok(Opt(3)));
    }
}
