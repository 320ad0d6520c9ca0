//! The append-only history: one event per transition, numbered without gaps.

use serde::{Deserialize, Serialize};

use super::{Blocks, EvidenceKind, GoalStatus, PermissionLevel, SliceKind};
use crate::ids::{AgentName, EvidenceId, GateId, GoalId, HandoffId, MessageId, SliceId, TodoId};
use crate::time::Timestamp;

/// One recorded transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// 1, 2, 3, … with no gaps.
    pub seq: u64,
    pub at: Timestamp,
    /// `human:<user>`, `agent:<name>` or `loopx`.
    pub actor: String,
    pub kind: EventKind,
}

/// What happened. New variants are only ever appended (the store encodes the variant index).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    ProjectCreated,
    GoalStarted {
        goal: GoalId,
        objective: String,
        scope: Vec<String>,
        permission: PermissionLevel,
        share: f64,
    },
    GoalStatusChanged {
        goal: GoalId,
        from: GoalStatus,
        to: GoalStatus,
    },
    TodoAdded {
        todo: TodoId,
        goal: GoalId,
        title: String,
        priority: i32,
    },
    TodoClaimed {
        todo: TodoId,
        agent: AgentName,
        epoch: u64,
        expires_at: Timestamp,
        /// The holder whose expired lease this claim replaced.
        reclaimed_from: Option<AgentName>,
    },
    TodoRenewed {
        todo: TodoId,
        agent: AgentName,
        epoch: u64,
        expires_at: Timestamp,
    },
    TodoReleased {
        todo: TodoId,
        agent: AgentName,
        epoch: u64,
    },
    TodoDone {
        todo: TodoId,
        epoch: Option<u64>,
    },
    TodoDropped {
        todo: TodoId,
        epoch: Option<u64>,
    },
    /// A write carrying an old epoch was refused.
    StaleEpochRefused {
        todo: TodoId,
        /// The agent, or the actor when a person presented the epoch.
        agent: String,
        presented: u64,
        current: u64,
        action: String,
    },
    GateOpened {
        gate: GateId,
        question: String,
        blocks: Blocks,
    },
    GateAnswered {
        gate: GateId,
        answer: String,
    },
    GateWithdrawn {
        gate: GateId,
    },
    /// Someone tried to answer a gate from inside a slice.
    GateAnswerRefused {
        gate: GateId,
        slice: String,
    },
    EvidenceAdded {
        evidence: EvidenceId,
        kind: EvidenceKind,
        summary: String,
        todo: Option<TodoId>,
    },
    HandoffWritten {
        handoff: HandoffId,
        todo: Option<TodoId>,
    },
    AgentAdded {
        agent: AgentName,
        profile: String,
    },
    SliceStarted {
        slice: SliceId,
        agent: AgentName,
        todo: Option<TodoId>,
        epoch: Option<u64>,
        kind: SliceKind,
    },
    SliceSpawned {
        slice: SliceId,
        pid: u32,
    },
    SliceEnded {
        slice: SliceId,
        outcome: String,
    },
    QuotaSpent {
        spend: u64,
        agent: AgentName,
        account: String,
        admitted: bool,
        tokens: u64,
        cost_usd: f64,
    },
    QuotaHeld {
        key: String,
        until: Option<Timestamp>,
        reason: String,
        source: super::HoldSource,
    },
    QuotaResumed {
        keys: Vec<String>,
    },
    /// A person answered the todo's stall gate: only slices after `since` count toward the
    /// stall guard now.
    TodoRetried {
        todo: TodoId,
        gate: GateId,
        since: SliceId,
    },
    /// A person answered the goal's budget gate: its spending counts from zero again.
    BudgetRestarted {
        goal: GoalId,
        gate: GateId,
    },
    /// A person changed an agent's profile, capabilities or role (record version 8).
    AgentChanged {
        agent: AgentName,
        profile: String,
    },
    /// A person removed an agent (record version 8).
    AgentRemoved {
        agent: AgentName,
    },
    /// A monitor's check ran with a result unlike its last one, or was met (record version 9);
    /// a poll with the same result as the last counts into the monitor's observation instead.
    MonitorPolled {
        todo: TodoId,
        verdict: super::PollVerdict,
        exit: Option<i32>,
        polls: u64,
    },
    /// A person amended the goal (record version 10): its new revision, what changed and why.
    GoalAmended {
        goal: GoalId,
        revision: u32,
        changed: Vec<String>,
        why: String,
    },
    /// A person changed a todo's title, detail or priority (record version 11).
    TodoEdited {
        todo: TodoId,
        changed: Vec<String>,
    },
    /// The planning slice that re-planned an amended goal dropped or rewrote an open todo
    /// (record version 12): what changed and why.
    TodoReplanned {
        todo: TodoId,
        slice: SliceId,
        dropped: bool,
        changed: Vec<String>,
        why: String,
    },
    /// A change made outside loopx (a row of the Lark board) that was refused and put back
    /// (record version 14): where it came from, the todo it was about, what it was and why.
    /// The actor is whoever made it, as that place named them (`lark:<open_id>`).
    ChangeRefused {
        source: String,
        todo: Option<TodoId>,
        change: String,
        why: String,
    },
    /// What an agent under `loopx run` waits on from now (record version 16): written when it
    /// changes (a slice's own start and end are their events), so a goal's history accounts
    /// for every second of the agent's time. `on` is one word (`window`, `question`, …;
    /// `loopx_quota::WaitOn`), `goal` the goal its decision was for.
    AgentWaits {
        agent: AgentName,
        on: String,
        goal: Option<GoalId>,
        reason: String,
    },
    /// A person's message to an agent (`loopx say`, record version 17): it waits for the
    /// agent's next slice.
    MessageSent {
        message: MessageId,
        agent: AgentName,
        text: String,
    },
    /// A message reached its agent: the slice's agent started with it (`how`: `prompt`), or
    /// its CLI took it while it ran (`live`).
    MessageDelivered {
        message: MessageId,
        agent: AgentName,
        slice: SliceId,
        how: super::Delivery,
    },
    /// A message taken by a slice that could not use it (its agent did not start, or could not
    /// work: not logged in, out of quota; or one written into its running session that the CLI
    /// never took) waits again for the agent's next slice.
    MessageReturned {
        message: MessageId,
        agent: AgentName,
        slice: SliceId,
    },
}

impl EventKind {
    /// The snake_case name used in `--json` and `loopx log`.
    /// Every kind's name, in the order the kinds were added (`loopx log --kind` checks against it).
    pub const NAMES: &'static [&'static str] = &[
        "project_created",
        "goal_started",
        "goal_status_changed",
        "todo_added",
        "todo_claimed",
        "todo_renewed",
        "todo_released",
        "todo_done",
        "todo_dropped",
        "stale_epoch_refused",
        "gate_opened",
        "gate_answered",
        "gate_withdrawn",
        "gate_answer_refused",
        "evidence_added",
        "handoff_written",
        "agent_added",
        "slice_started",
        "slice_spawned",
        "slice_ended",
        "quota_spent",
        "quota_held",
        "quota_resumed",
        "todo_retried",
        "budget_restarted",
        "agent_changed",
        "agent_removed",
        "monitor_polled",
        "goal_amended",
        "todo_edited",
        "todo_replanned",
        "change_refused",
        "agent_waits",
        "message_sent",
        "message_delivered",
        "message_returned",
    ];

    pub fn name(&self) -> &'static str {
        match self {
            EventKind::ProjectCreated => "project_created",
            EventKind::GoalStarted { .. } => "goal_started",
            EventKind::GoalStatusChanged { .. } => "goal_status_changed",
            EventKind::TodoAdded { .. } => "todo_added",
            EventKind::TodoClaimed { .. } => "todo_claimed",
            EventKind::TodoRenewed { .. } => "todo_renewed",
            EventKind::TodoReleased { .. } => "todo_released",
            EventKind::TodoDone { .. } => "todo_done",
            EventKind::TodoDropped { .. } => "todo_dropped",
            EventKind::StaleEpochRefused { .. } => "stale_epoch_refused",
            EventKind::GateOpened { .. } => "gate_opened",
            EventKind::GateAnswered { .. } => "gate_answered",
            EventKind::GateWithdrawn { .. } => "gate_withdrawn",
            EventKind::GateAnswerRefused { .. } => "gate_answer_refused",
            EventKind::EvidenceAdded { .. } => "evidence_added",
            EventKind::HandoffWritten { .. } => "handoff_written",
            EventKind::AgentAdded { .. } => "agent_added",
            EventKind::SliceStarted { .. } => "slice_started",
            EventKind::SliceSpawned { .. } => "slice_spawned",
            EventKind::SliceEnded { .. } => "slice_ended",
            EventKind::QuotaSpent { .. } => "quota_spent",
            EventKind::QuotaHeld { .. } => "quota_held",
            EventKind::QuotaResumed { .. } => "quota_resumed",
            EventKind::TodoRetried { .. } => "todo_retried",
            EventKind::BudgetRestarted { .. } => "budget_restarted",
            EventKind::AgentChanged { .. } => "agent_changed",
            EventKind::AgentRemoved { .. } => "agent_removed",
            EventKind::MonitorPolled { .. } => "monitor_polled",
            EventKind::GoalAmended { .. } => "goal_amended",
            EventKind::TodoEdited { .. } => "todo_edited",
            EventKind::TodoReplanned { .. } => "todo_replanned",
            EventKind::ChangeRefused { .. } => "change_refused",
            EventKind::AgentWaits { .. } => "agent_waits",
            EventKind::MessageSent { .. } => "message_sent",
            EventKind::MessageDelivered { .. } => "message_delivered",
            EventKind::MessageReturned { .. } => "message_returned",
        }
    }

    /// One line for people: `t3 claimed by exec (epoch 2)`.
    pub fn describe(&self) -> String {
        use EventKind as E;
        match self {
            E::ProjectCreated => "project created".to_owned(),
            E::GoalStarted {
                goal, objective, ..
            } => format!("goal {goal} started: {objective}"),
            E::GoalStatusChanged { goal, from, to } => {
                format!("goal {goal} {} → {}", from.as_str(), to.as_str())
            }
            E::TodoEdited { todo, changed } => format!("{todo} changed: {}", changed.join(", ")),
            E::TodoReplanned {
                todo,
                slice,
                dropped,
                changed,
                why,
            } => match dropped {
                true => format!("{todo} dropped in re-planning by slice {slice}: {why}"),
                false => format!(
                    "{todo} rewritten ({}) in re-planning by slice {slice}: {why}",
                    changed.join(", ")
                ),
            },
            E::ChangeRefused {
                source,
                change,
                why,
                ..
            } => format!("{change} in {source} refused and put back: {why}"),
            E::GoalAmended {
                goal,
                revision,
                changed,
                why,
            } => format!(
                "goal {goal} amended to revision {revision}: {} changed{}",
                changed.join(", "),
                why_note(why)
            ),
            E::TodoAdded {
                todo,
                title,
                priority,
                ..
            } => format!("{todo} added (priority {priority}): {title}"),
            E::TodoClaimed {
                todo,
                agent,
                epoch,
                reclaimed_from,
                ..
            } => match reclaimed_from {
                Some(old) => {
                    format!("{todo} reclaimed by {agent} from expired {old} (epoch {epoch})")
                }
                None => format!("{todo} claimed by {agent} (epoch {epoch})"),
            },
            E::TodoRenewed {
                todo,
                agent,
                epoch,
                expires_at,
            } => format!("{todo} renewed by {agent} (epoch {epoch}) until {expires_at}"),
            E::TodoReleased { todo, agent, epoch } => {
                format!("{todo} released by {agent} (epoch {epoch})")
            }
            E::TodoDone { todo, .. } => format!("{todo} done"),
            E::TodoDropped { todo, .. } => format!("{todo} dropped"),
            E::StaleEpochRefused {
                todo,
                agent,
                presented,
                current,
                action,
            } => format!(
                "{action} of {todo} by {agent} refused: epoch {presented} is stale (current {current})"
            ),
            E::GateOpened { gate, question, .. } => format!("gate {gate} opened: {question}"),
            E::GateAnswered { gate, answer } => format!("gate {gate} answered: {answer}"),
            E::GateWithdrawn { gate } => format!("gate {gate} withdrawn"),
            E::GateAnswerRefused { gate, slice } => {
                format!("answer to gate {gate} refused: it came from inside slice {slice}")
            }
            E::EvidenceAdded {
                evidence,
                kind,
                summary,
                ..
            } => format!("evidence {evidence} ({}): {summary}", kind.as_str()),
            E::HandoffWritten { handoff, todo } => match todo {
                Some(todo) => format!("handoff {handoff} written for {todo}"),
                None => format!("handoff {handoff} written"),
            },
            E::AgentAdded { agent, profile } => format!("agent {agent} added (profile {profile})"),
            E::SliceStarted {
                slice, agent, todo, ..
            } => match todo {
                Some(todo) => format!("slice {slice} started: {agent} on {todo}"),
                None => format!("slice {slice} started: {agent}"),
            },
            E::SliceSpawned { slice, pid } => format!("slice {slice} spawned pid {pid}"),
            E::SliceEnded { slice, outcome } => format!("slice {slice} ended: {outcome}"),
            E::QuotaSpent {
                agent,
                account,
                admitted,
                tokens,
                cost_usd,
                ..
            } => format!(
                "{} for {agent} on {account}: {tokens} tokens, ${cost_usd:.4}",
                match admitted {
                    true => "slice admitted",
                    false => "usage charged",
                }
            ),
            E::QuotaHeld {
                key, until, reason, ..
            } => match until {
                Some(until) => format!("{key} on hold until {until}: {reason}"),
                None => format!("{key} paused: {reason}"),
            },
            E::QuotaResumed { keys } => format!("resumed {}", keys.join(", ")),
            E::TodoRetried { todo, gate, .. } => {
                format!("{todo} has a fresh budget of attempts (gate {gate} answered)")
            }
            E::BudgetRestarted { goal, gate } => {
                format!("goal {goal} has a fresh budget (gate {gate} answered)")
            }
            E::AgentChanged { agent, profile } => {
                format!("agent {agent} changed (profile {profile})")
            }
            E::AgentRemoved { agent } => format!("agent {agent} removed"),
            E::MonitorPolled {
                todo,
                verdict,
                exit,
                polls,
            } => format!(
                "{todo} polled ({polls} so far): {}, {}",
                verdict.as_str(),
                exit.map_or_else(|| "no exit".to_owned(), |c| format!("exit {c}"))
            ),
            E::AgentWaits {
                agent, on, reason, ..
            } => format!("{agent} waits on {on}: {reason}"),
            E::MessageSent {
                message,
                agent,
                text,
            } => format!("message {message} to {agent}: {text}"),
            E::MessageDelivered {
                message,
                agent,
                slice,
                how,
            } => format!(
                "message {message} reached {agent} in slice {slice} ({})",
                how.as_str()
            ),
            E::MessageReturned {
                message,
                agent,
                slice,
            } => format!(
                "message {message} waits for {agent} again (slice {slice} could not use it)"
            ),
        }
    }
}

/// ` (why: …)` after an amendment's line, when a reason was given.
fn why_note(why: &str) -> String {
    match why.trim() {
        "" => String::new(),
        why => format!(" (why: {why})"),
    }
}
