//! Stored values: one record-version byte, then postcard.
//!
//! postcard is compact and fast to decode (a `todo list` of 10,000 todos decodes in about a
//! millisecond) but not self-describing: a field added to a stored type changes the encoding.
//! Such a change bumps [`RECORD_VERSION`] and keeps an upgrade from the old version, so that a
//! new loopx reads old files (a record is rewritten in the new version when it next changes);
//! an old loopx refuses newer records with a clear error instead of misreading them.
//!
//! Versions:
//! - 1: the first layout.
//! - 2: todos gained `finished_under` and `attempts_since`, gates gained `kind`. Every other
//!   record is encoded as in version 1.
//! - 3: a slice's outcome became one of a fixed set ([`Outcome`], stored by position) and
//!   slices gained `leftovers`; gates gained the `login` and `budget` kinds. An outcome name
//!   an older loopx wrote that is no longer in the set (`crashed`, `violation`) reads as
//!   `failed`. Every other record is encoded as in version 2.
//! - 4: gates gained the `goal_met` kind (appended, so a version-3 record reads unchanged); the
//!   bump makes an older loopx refuse a goal-met gate by name instead of failing to decode it.
//! - 5: slices gained `containment` (what contained the agent: `namespaces+landlock`, …) and
//!   `log_sha256` (the log as loopx wrote it); a slice of an older version reads with both
//!   empty (not recorded). Gates may block `Nothing` (a variant appended, so a version-4 gate
//!   reads unchanged). Every other record is encoded as in version 4.
//! - 6: goals gained `isolation` (a goal of an older version reads as `shared`: its agents
//!   worked in the project's own tree). Gates gained the `rollback` and `land` kinds and
//!   evidence the `land` kind (appended, so older records read unchanged). Every other record
//!   is encoded as in version 5.
//! - 7: gates gained the `scope` kind (appended, so a version-6 record reads unchanged); the
//!   bump makes an older loopx refuse a scope gate by name instead of failing to decode it.
//! - 8: slices gained the `unchanged` outcome, gates the `spawn` kind and the rollback kind's
//!   `reported_done` (its last field: an older gate reads it `false`), and events the
//!   `agent_changed` and `agent_removed` kinds (appended, so a version-6 or 7 record reads unchanged); the bump
//!   makes an older loopx refuse such records by name.
//! - 9: todos gained `monitor` and `not_before`, their last two fields: an older todo reads
//!   with both `None` (two zero bytes appended). Gates gained the `monitor` kind, evidence the
//!   `monitor` kind and events `monitor_polled` (appended, so older records read unchanged).
//! - 10: goals gained `revision`, their last field: an older goal reads as revision 1 (the
//!   byte 1 appended). Goal revisions are a table of their own (`goal_revisions`); events
//!   gained `goal_amended` and gates the `goal_proposal` kind (appended, so older records read
//!   unchanged).
//! - 11: evidence gained `revision` and `work`, handoffs `revision` and `seen`, their last two
//!   fields: an older one reads with revision 0 and neither recorded (two zero bytes
//!   appended). Gates gained the `scope_narrowed` kind, events `todo_edited`, slice outcomes
//!   `unverified` (appended, so older records read unchanged).
//! - 12: events gained `todo_replanned` (appended, so older records read unchanged); the bump
//!   makes an older loopx refuse such an event by name instead of failing to decode it.
//! - 13: gates gained `answered_under` (the goal revision an answer was given under) and
//!   slices `seen` (their todo's words as they began), each its last field: an older gate reads
//!   0 (not recorded) and an older slice `None` (a zero byte appended).
//! - 14: events gained `change_refused` (appended, so older records read unchanged): a change
//!   made in the Lark board that was refused and put back.
//! - 15: monitors gained `pins` (the files a person's check names, by content), their last
//!   field: the monitor is not a todo's last field, so an older todo is decoded in its own
//!   layout ([`TodoV14`]) and reads with no pins.
//! - 16: goals gained `priority`, agents `goals` (the goals it works on) and slices `goal`,
//!   each its last field: an older goal reads as priority 0, an older agent works on every
//!   goal, and an older slice has no goal recorded (a zero byte appended). Gates may block one
//!   `Goal`, and events gained `agent_waits` (appended, so older records read unchanged).
//! - 17: evidence gained `metric` (a measurement), its last field: older evidence reads with
//!   none (a zero byte appended). Evidence gained the `metric` kind and gates the `best` kind
//!   (appended, so older records read unchanged).
//! - 18: a message's delivery gained `live` (appended, so older records read unchanged); the
//!   bump makes an older loopx refuse such an event by name instead of failing to decode it.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::errors::StoreError;
use crate::ids::{AgentName, GateId, GoalId, HandoffId, SliceId, TodoId};
use crate::model::{
    Answer, Blocks, Gate, GateKind, GateState, Goal, GoalStatus, Isolation, Lease, Outcome,
    PermissionLevel, ProcessIdentity, SliceKind, SliceRecord, Todo, TodoState,
};
use crate::time::Timestamp;

/// The encoding of every record this loopx writes.
pub(crate) const RECORD_VERSION: u8 = 18;

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = vec![RECORD_VERSION];
    // Serializing our own plain data into a Vec cannot fail.
    let body = postcard::to_allocvec(value).expect("postcard encodes plain data into a Vec");
    bytes.extend_from_slice(&body);
    bytes
}

pub(crate) fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T, StoreError> {
    let failed = |why: String| StoreError::Decode {
        table: table.to_owned(),
        why,
    };
    let version = bytes.first().copied().unwrap_or(RECORD_VERSION);
    let body: Cow<'_, [u8]> = match bytes.split_first() {
        // A version-6 or -7 gate lacks the rollback kind's `reported_done`, the last field of
        // its last field: a zero byte appended reads as `false` (postcard ignores it for every
        // other kind). Otherwise they differ from 8 only in variants appended since.
        Some((&(6 | 7), body)) if table == "gates" => {
            let mut owned = body.to_vec();
            owned.push(0);
            Cow::Owned(owned)
        }
        Some((&(6..=17 | RECORD_VERSION), body)) => Cow::Borrowed(body),
        Some((&version @ 1..=5, body)) => up_to_v5(version, table, body)
            .and_then(|v5| Ok(Cow::Owned(upgrade_v5(table, &v5)?.into_owned())))
            .map_err(|e| failed(e.to_string()))?,
        Some((&version, _)) => {
            return Err(failed(format!(
                "record version {version} is newer than this loopx reads ({RECORD_VERSION}); upgrade loopx"
            )));
        }
        None => return Err(failed("empty record".to_owned())),
    };
    // A todo before version 9 lacks `monitor` and `not_before`, its last two fields: two zero
    // bytes read as `None` each (a todo upgraded from version 1 already has them, and postcard
    // ignores what follows a complete value).
    let body = match (table, version) {
        ("todos", ..9) => {
            let mut owned = body.into_owned();
            owned.extend_from_slice(&[0, 0]);
            Cow::Owned(owned)
        }
        // A goal before version 10 lacks `revision`, its last field: it is revision 1 (a goal
        // upgraded from version 5 or older has it already; what follows is ignored).
        ("goals", ..10) => {
            let mut owned = body.into_owned();
            owned.push(1);
            Cow::Owned(owned)
        }
        // Evidence before version 11 lacks `revision` and `work`, a handoff `revision` and
        // `seen`, their last two fields: two zero bytes read as revision 0 and `None` (not
        // recorded).
        ("evidence" | "handoffs", ..11) => {
            let mut owned = body.into_owned();
            owned.extend_from_slice(&[0, 0]);
            Cow::Owned(owned)
        }
        // A gate or slice before version 13 lacks `answered_under` or `seen`, its last field:
        // a zero byte reads as 0 or `None` (a version-6 or -7 gate got its `reported_done`
        // byte above; postcard ignores what follows a complete value).
        ("gates" | "slices", ..13) => {
            let mut owned = body.into_owned();
            owned.push(0);
            Cow::Owned(owned)
        }
        _ => body,
    };
    // A goal or agent before version 16 lacks `priority` or `goals`, its last field: a zero
    // byte reads as priority 0 or no goals named (every goal). Evidence before version 17
    // lacks `metric`, its last field: a zero byte reads as none.
    let body = match (table, version) {
        ("goals" | "agents" | "slices", ..16) | ("evidence", ..17) => {
            let mut owned = body.into_owned();
            owned.push(0);
            Cow::Owned(owned)
        }
        _ => body,
    };
    // A todo before version 15: its monitor lacks `pins`.
    let body = match (table, version) {
        ("todos", ..15) => reencode::<TodoV14, Todo>(&body).map_err(|e| failed(e.to_string()))?,
        _ => body,
    };
    postcard::from_bytes(&body).map_err(|e| failed(e.to_string()))
}

/// A todo as versions 9 to 14 stored it (older ones are brought to this layout above): its
/// monitor without `pins`.
#[derive(Serialize, Deserialize)]
struct TodoV14 {
    id: TodoId,
    goal: GoalId,
    title: String,
    detail: String,
    priority: i32,
    state: TodoState,
    needs: Vec<String>,
    after: Vec<TodoId>,
    role: Option<String>,
    epoch: u64,
    lease: Option<Lease>,
    latest_handoff: Option<HandoffId>,
    created_by: String,
    created_at: Timestamp,
    updated_at: Timestamp,
    finished_under: Option<Lease>,
    attempts_since: Option<SliceId>,
    monitor: Option<Box<MonitorV14>>,
    not_before: Option<Timestamp>,
}

#[derive(Serialize, Deserialize)]
struct MonitorV14 {
    check: String,
    every_ms: u64,
    expires_at: Option<Timestamp>,
    expires_after_ms: Option<u64>,
    until_changed: bool,
    profile: Option<String>,
    next_at: Timestamp,
    poll: Option<Lease>,
    polls: u64,
    failures: u32,
    first_hash: Option<String>,
    recent: Vec<crate::model::Observation>,
    asked: Option<GateId>,
}

impl From<TodoV14> for Todo {
    fn from(t: TodoV14) -> Todo {
        Todo {
            id: t.id,
            goal: t.goal,
            title: t.title,
            detail: t.detail,
            priority: t.priority,
            state: t.state,
            needs: t.needs,
            after: t.after,
            role: t.role,
            epoch: t.epoch,
            lease: t.lease,
            latest_handoff: t.latest_handoff,
            created_by: t.created_by,
            created_at: t.created_at,
            updated_at: t.updated_at,
            finished_under: t.finished_under,
            attempts_since: t.attempts_since,
            monitor: t.monitor.map(|m| {
                Box::new(crate::model::Monitor {
                    check: m.check,
                    every_ms: m.every_ms,
                    expires_at: m.expires_at,
                    expires_after_ms: m.expires_after_ms,
                    until_changed: m.until_changed,
                    profile: m.profile,
                    next_at: m.next_at,
                    poll: m.poll,
                    polls: m.polls,
                    failures: m.failures,
                    first_hash: m.first_hash,
                    recent: m.recent,
                    asked: m.asked,
                    pins: Vec::new(),
                })
            }),
            not_before: t.not_before,
        }
    }
}

/// A record of version 1 to 5 in the encoding of version 5.
fn up_to_v5<'b>(
    version: u8,
    table: &str,
    body: &'b [u8],
) -> Result<Cow<'b, [u8]>, postcard::Error> {
    Ok(match version {
        5 => Cow::Borrowed(body),
        // Version 3 differs from 4 only in a gate kind version 4 appended.
        3 | 4 => upgrade_v4(table, body)?,
        1 => Cow::Owned(upgrade_v2(table, &upgrade_v1(table, body)?)?.into_owned()),
        _ => upgrade_v2(table, body)?,
    })
}

/// `body`, a record in an old layout `Old`, in the layout of `New`.
fn reencode<'b, Old, New>(body: &[u8]) -> Result<Cow<'b, [u8]>, postcard::Error>
where
    Old: DeserializeOwned,
    New: From<Old> + Serialize,
{
    Ok(Cow::Owned(postcard::to_allocvec(&New::from(
        postcard::from_bytes::<Old>(body)?,
    ))?))
}

/// A version-5 record's body in the current encoding.
fn upgrade_v5<'b>(table: &str, body: &'b [u8]) -> Result<Cow<'b, [u8]>, postcard::Error> {
    match table {
        "goals" => reencode::<GoalV5, Goal>(body),
        _ => Ok(Cow::Borrowed(body)),
    }
}

/// A goal as versions 1 to 5 stored it.
#[derive(Serialize, Deserialize)]
struct GoalV5 {
    id: GoalId,
    objective: String,
    scope: Vec<String>,
    permission: PermissionLevel,
    share: f64,
    status: GoalStatus,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl From<GoalV5> for Goal {
    fn from(g: GoalV5) -> Goal {
        Goal {
            id: g.id,
            objective: g.objective,
            scope: g.scope,
            permission: g.permission,
            share: g.share,
            status: g.status,
            created_at: g.created_at,
            updated_at: g.updated_at,
            isolation: Isolation::Shared,
            revision: 1,
            priority: 0,
        }
    }
}

/// A version-1 record's body in the current encoding.
fn upgrade_v1<'b>(table: &str, body: &'b [u8]) -> Result<Cow<'b, [u8]>, postcard::Error> {
    match table {
        "todos" => reencode::<TodoV1, Todo>(body),
        "gates" => reencode::<GateV1, Gate>(body),
        _ => Ok(Cow::Borrowed(body)),
    }
}

/// A version-3 or 4 record's body in the current encoding.
fn upgrade_v4<'b>(table: &str, body: &'b [u8]) -> Result<Cow<'b, [u8]>, postcard::Error> {
    match table {
        "slices" => reencode::<SliceV4, SliceRecord>(body),
        _ => Ok(Cow::Borrowed(body)),
    }
}

/// A slice as versions 3 and 4 stored it.
#[derive(Serialize, Deserialize)]
struct SliceV4 {
    id: SliceId,
    agent: AgentName,
    todo: Option<TodoId>,
    epoch: Option<u64>,
    kind: SliceKind,
    profile_hash: String,
    argv: Vec<String>,
    process: Option<ProcessIdentity>,
    started_at: Timestamp,
    limit_secs: u64,
    ended_at: Option<Timestamp>,
    outcome: Option<Outcome>,
    exit: Option<String>,
    tokens: u64,
    cost_usd: f64,
    output_bytes: u64,
    log: Option<String>,
    leftovers: u32,
}

impl From<SliceV4> for SliceRecord {
    fn from(s: SliceV4) -> SliceRecord {
        SliceRecord {
            id: s.id,
            agent: s.agent,
            todo: s.todo,
            epoch: s.epoch,
            kind: s.kind,
            profile_hash: s.profile_hash,
            argv: s.argv,
            process: s.process,
            started_at: s.started_at,
            limit_secs: s.limit_secs,
            ended_at: s.ended_at,
            outcome: s.outcome,
            exit: s.exit,
            tokens: s.tokens,
            cost_usd: s.cost_usd,
            output_bytes: s.output_bytes,
            log: s.log,
            leftovers: s.leftovers,
            containment: String::new(),
            log_sha256: String::new(),
            seen: None,
            goal: None,
        }
    }
}

/// A version-2 record's body in the current encoding.
fn upgrade_v2<'b>(table: &str, body: &'b [u8]) -> Result<Cow<'b, [u8]>, postcard::Error> {
    match table {
        "slices" => reencode::<SliceV2, SliceRecord>(body),
        _ => Ok(Cow::Borrowed(body)),
    }
}

/// A slice as versions 1 and 2 stored it.
#[derive(Serialize, Deserialize)]
struct SliceV2 {
    id: SliceId,
    agent: AgentName,
    todo: Option<TodoId>,
    epoch: Option<u64>,
    kind: SliceKind,
    profile_hash: String,
    argv: Vec<String>,
    process: Option<ProcessIdentity>,
    started_at: Timestamp,
    limit_secs: u64,
    ended_at: Option<Timestamp>,
    outcome: Option<String>,
    exit: Option<String>,
    tokens: u64,
    cost_usd: f64,
    output_bytes: u64,
    log: Option<String>,
}

impl From<SliceV2> for SliceRecord {
    fn from(s: SliceV2) -> SliceRecord {
        SliceRecord {
            id: s.id,
            agent: s.agent,
            todo: s.todo,
            epoch: s.epoch,
            kind: s.kind,
            profile_hash: s.profile_hash,
            argv: s.argv,
            process: s.process,
            started_at: s.started_at,
            limit_secs: s.limit_secs,
            ended_at: s.ended_at,
            outcome: s
                .outcome
                .map(|name| Outcome::parse(&name).unwrap_or(Outcome::Failed)),
            exit: s.exit,
            tokens: s.tokens,
            cost_usd: s.cost_usd,
            output_bytes: s.output_bytes,
            log: s.log,
            leftovers: 0,
            containment: String::new(),
            log_sha256: String::new(),
            seen: None,
            goal: None,
        }
    }
}

/// A todo as version 1 stored it.
#[derive(Serialize, Deserialize)]
struct TodoV1 {
    id: TodoId,
    goal: GoalId,
    title: String,
    detail: String,
    priority: i32,
    state: TodoState,
    needs: Vec<String>,
    after: Vec<TodoId>,
    role: Option<String>,
    epoch: u64,
    lease: Option<Lease>,
    latest_handoff: Option<HandoffId>,
    created_by: String,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl From<TodoV1> for Todo {
    fn from(t: TodoV1) -> Todo {
        Todo {
            id: t.id,
            goal: t.goal,
            title: t.title,
            detail: t.detail,
            priority: t.priority,
            state: t.state,
            needs: t.needs,
            after: t.after,
            role: t.role,
            epoch: t.epoch,
            lease: t.lease,
            latest_handoff: t.latest_handoff,
            created_by: t.created_by,
            created_at: t.created_at,
            updated_at: t.updated_at,
            finished_under: None,
            attempts_since: None,
            monitor: None,
            not_before: None,
        }
    }
}

/// A gate as version 1 stored it.
#[derive(Serialize, Deserialize)]
struct GateV1 {
    id: GateId,
    question: String,
    options: Vec<String>,
    context: String,
    blocks: Blocks,
    asked_by: String,
    state: GateState,
    answer: Option<Answer>,
    created_at: Timestamp,
}

impl From<GateV1> for Gate {
    fn from(g: GateV1) -> Gate {
        Gate {
            id: g.id,
            question: g.question,
            options: g.options,
            context: g.context,
            blocks: g.blocks,
            asked_by: g.asked_by,
            state: g.state,
            answer: g.answer,
            created_at: g.created_at,
            kind: GateKind::Question,
            answered_under: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1<T: Serialize>(value: &T) -> Vec<u8> {
        let mut bytes = vec![1];
        bytes.extend(postcard::to_allocvec(value).expect("encodes"));
        bytes
    }

    #[test]
    fn version_1_todos_and_gates_read_as_today_s() {
        let todo = TodoV1 {
            id: TodoId(3),
            goal: GoalId(1),
            title: "Write".into(),
            detail: String::new(),
            priority: 2,
            state: TodoState::Done,
            needs: vec![],
            after: vec![TodoId(1)],
            role: Some("reviewer".into()),
            epoch: 4,
            lease: None,
            latest_handoff: Some(HandoffId(9)),
            created_by: "human:me".into(),
            created_at: Timestamp(5),
            updated_at: Timestamp(6),
        };
        let read: Todo = decode("todos", &v1(&todo)).expect("an old todo decodes");
        assert_eq!(
            (
                read.id,
                read.epoch,
                read.latest_handoff,
                read.finished_under
            ),
            (TodoId(3), 4, Some(HandoffId(9)), None)
        );
        let gate = GateV1 {
            id: GateId(2),
            question: "Keep it?".into(),
            options: vec!["yes".into()],
            context: String::new(),
            blocks: Blocks::Global,
            asked_by: "loopx".into(),
            state: GateState::Open,
            answer: None,
            created_at: Timestamp(7),
        };
        let read: Gate = decode("gates", &v1(&gate)).expect("an old gate decodes");
        assert_eq!((read.id, read.kind), (GateId(2), GateKind::Question));
        // Other tables did not change between the versions.
        let n: u64 = decode("quota", &v1(&42u64)).expect("a number");
        assert_eq!(n, 42);
    }

    #[test]
    fn version_7_gates_read_with_their_rollback_not_reported_done() {
        let gate = |kind: GateKind| Gate {
            id: GateId(4),
            question: "Keep the changes outside the scope or roll them back?".into(),
            options: vec!["keep".into(), "rollback".into()],
            context: String::new(),
            blocks: Blocks::Global,
            asked_by: "loopx".into(),
            state: GateState::Open,
            answer: None,
            created_at: Timestamp(7),
            kind,
            answered_under: 0,
        };
        let rollback = gate(GateKind::Rollback {
            todo: TodoId(3),
            checkpoint: "abc".into(),
            commit: "def".into(),
            reported_done: false,
        });
        // Version 7 wrote the same bytes without the trailing `false` (nor `answered_under`,
        // version 13's).
        let mut old = vec![7];
        old.extend(postcard::to_allocvec(&rollback).expect("encodes"));
        assert_eq!((old.pop(), old.pop()), (Some(0), Some(0)));
        assert_eq!(decode::<Gate>("gates", &old).expect("decodes"), rollback);
        for kind in [GateKind::Question, GateKind::Land { todo: TodoId(3) }] {
            let other = gate(kind);
            let mut old = vec![6];
            old.extend(postcard::to_allocvec(&other).expect("encodes"));
            assert_eq!(old.pop(), Some(0));
            assert_eq!(decode::<Gate>("gates", &old).expect("decodes"), other);
        }
        // And version 8 keeps the field.
        let done = gate(GateKind::Rollback {
            todo: TodoId(3),
            checkpoint: "abc".into(),
            commit: "def".into(),
            reported_done: true,
        });
        assert_eq!(
            decode::<Gate>("gates", &encode(&done)).expect("decodes"),
            done
        );
    }

    #[test]
    fn version_4_slices_read_without_a_recorded_containment() {
        let slice = SliceV4 {
            id: SliceId(9),
            agent: "codex".parse().expect("a name"),
            todo: None,
            epoch: None,
            kind: SliceKind::Plan,
            profile_hash: "h".into(),
            argv: vec![],
            process: None,
            started_at: Timestamp(1),
            limit_secs: 60,
            ended_at: Some(Timestamp(3)),
            outcome: Some(Outcome::Completed),
            exit: None,
            tokens: 1,
            cost_usd: 0.0,
            output_bytes: 2,
            log: None,
            leftovers: 1,
        };
        for version in [3u8, 4] {
            let mut bytes = vec![version];
            bytes.extend(postcard::to_allocvec(&slice).expect("encodes"));
            let read: SliceRecord = decode("slices", &bytes).expect("reads");
            assert_eq!(
                (
                    read.id,
                    read.outcome,
                    read.leftovers,
                    read.containment.as_str()
                ),
                (SliceId(9), Some(Outcome::Completed), 1, "")
            );
        }
    }

    #[test]
    fn version_1_and_2_slices_read_with_a_typed_outcome() {
        let slice = |outcome: Option<&str>| SliceV2 {
            id: SliceId(7),
            agent: "claude".parse().expect("a name"),
            todo: Some(TodoId(2)),
            epoch: Some(1),
            kind: SliceKind::Work,
            profile_hash: "h".into(),
            argv: vec!["claude".into()],
            process: None,
            started_at: Timestamp(1),
            limit_secs: 60,
            ended_at: outcome.map(|_| Timestamp(2)),
            outcome: outcome.map(str::to_owned),
            exit: None,
            tokens: 5,
            cost_usd: 0.25,
            output_bytes: 9,
            log: Some(".loopx/slices/s7.log".into()),
        };
        for version in [1u8, 2] {
            let bytes = |outcome| {
                let mut b = vec![version];
                b.extend(postcard::to_allocvec(&slice(outcome)).expect("encodes"));
                b
            };
            let read: SliceRecord = decode("slices", &bytes(Some("usage_limited"))).expect("reads");
            assert_eq!(
                (read.id, read.outcome, read.tokens, read.leftovers),
                (SliceId(7), Some(Outcome::UsageLimited), 5, 0)
            );
            let read: SliceRecord = decode("slices", &bytes(Some("crashed"))).expect("reads");
            assert_eq!(read.outcome, Some(Outcome::Failed), "a retired name");
            let read: SliceRecord = decode("slices", &bytes(None)).expect("reads");
            assert_eq!(read.outcome, None, "still running");
        }
    }

    #[test]
    fn goals_of_older_versions_read_as_shared() {
        let goal = GoalV5 {
            id: GoalId(2),
            objective: "Ship".into(),
            scope: vec!["src/**".into()],
            permission: PermissionLevel::WorkspaceWrite,
            share: 0.5,
            status: GoalStatus::Active,
            created_at: Timestamp(1),
            updated_at: Timestamp(2),
        };
        for version in 1u8..=5 {
            let mut bytes = vec![version];
            bytes.extend(postcard::to_allocvec(&goal).expect("encodes"));
            let read: Goal = decode("goals", &bytes).expect("an old goal decodes");
            assert_eq!(
                (read.id, read.scope.len(), read.isolation),
                (GoalId(2), 1, Isolation::Shared),
                "version {version}"
            );
        }
    }

    #[test]
    fn a_version_8_todo_reads_as_neither_a_monitor_nor_resting() {
        let todo = Todo::from(TodoV1 {
            id: TodoId(3),
            goal: GoalId(1),
            title: "Wait".into(),
            detail: String::new(),
            priority: 2,
            state: TodoState::Open,
            needs: vec![],
            after: vec![TodoId(1)],
            role: None,
            epoch: 4,
            lease: None,
            latest_handoff: None,
            created_by: "human:ann".into(),
            created_at: Timestamp(5),
            updated_at: Timestamp(6),
        });
        let current = encode(&todo);
        assert_eq!(current[0], RECORD_VERSION);
        // Version 8 wrote the same fields without the last two (`None`, one zero byte each).
        assert_eq!(&current[current.len() - 2..], &[0, 0]);
        let mut v8 = current[..current.len() - 2].to_vec();
        v8[0] = 8;
        let read: Todo = decode("todos", &v8).expect("a version-8 todo reads");
        assert_eq!(read, todo);
        assert!(read.monitor.is_none() && read.not_before.is_none());
    }

    /// A goal as version 5 stored it, in today's layout.
    fn shipping_goal() -> Goal {
        Goal::from(GoalV5 {
            id: GoalId(2),
            objective: "Ship".into(),
            scope: vec!["src/**".into()],
            permission: PermissionLevel::WorkspaceWrite,
            share: 1.0,
            status: GoalStatus::Active,
            created_at: Timestamp(1),
            updated_at: Timestamp(2),
        })
    }

    #[test]
    fn version_15_goals_and_agents_read_without_what_16_added() {
        let goal = Goal {
            priority: 3,
            ..shipping_goal()
        };
        let current = encode(&goal);
        // Version 16 appended `priority` (zigzag 3 is the byte 6).
        assert_eq!(current.last(), Some(&6));
        let mut v15 = current[..current.len() - 1].to_vec();
        v15[0] = 15;
        let read: Goal = decode("goals", &v15).expect("a version-15 goal reads");
        assert_eq!(
            read,
            Goal {
                priority: 0,
                ..goal
            }
        );
        let agent = crate::model::Agent {
            name: "exec".parse().expect("name"),
            profile: "exec".into(),
            capabilities: vec![],
            role: None,
            added_at: Timestamp(1),
            goals: vec![GoalId(1)],
        };
        let current = encode(&agent);
        let mut v15 = current[..current.len() - 2].to_vec();
        v15[0] = 15;
        let read: crate::model::Agent = decode("agents", &v15).expect("a version-15 agent reads");
        assert!(
            read.goals.is_empty() && read.works_on(GoalId(7)),
            "{read:?}"
        );
    }

    #[test]
    fn a_version_9_goal_reads_as_revision_1() {
        let goal = Goal {
            revision: 4,
            ..shipping_goal()
        };
        let current = encode(&goal);
        // Version 9 wrote the same fields without the last two (`revision`, one byte here, and
        // version 16's `priority`, a zero byte).
        assert_eq!(&current[current.len() - 2..], &[4, 0]);
        let mut v9 = current[..current.len() - 2].to_vec();
        v9[0] = 9;
        let read: Goal = decode("goals", &v9).expect("a version-9 goal reads");
        assert_eq!(
            read,
            Goal {
                revision: 1,
                ..goal
            }
        );
    }

    #[test]
    fn version_16_evidence_reads_without_a_measurement() {
        use crate::ids::EvidenceId;
        use crate::model::{Evidence, EvidenceKind};
        let evidence = Evidence {
            id: EvidenceId(3),
            kind: EvidenceKind::Test,
            summary: "3 passed".into(),
            detail: String::new(),
            files: vec![],
            todo: Some(TodoId(2)),
            slice: None,
            actor: "agent:exec".into(),
            at: Timestamp(5),
            revision: 1,
            work: None,
            metric: None,
        };
        let current = encode(&evidence);
        // Version 17 appended `metric` (`None` is the byte 0).
        assert_eq!(current.last(), Some(&0));
        let mut v16 = current[..current.len() - 1].to_vec();
        v16[0] = 16;
        let read: Evidence = decode("evidence", &v16).expect("version-16 evidence reads");
        assert_eq!(read, evidence);
        // And a measurement comes back as written.
        let measured = Evidence {
            kind: EvidenceKind::Metric,
            metric: Some(crate::model::Metric {
                name: "accuracy".into(),
                value: 0.913,
                unit: "%".into(),
            }),
            ..evidence
        };
        let read: Evidence = decode("evidence", &encode(&measured)).expect("reads");
        assert_eq!(read, measured);
    }

    #[test]
    fn version_10_evidence_and_handoffs_read_with_nothing_recorded_of_their_age() {
        use crate::ids::{EvidenceId, HandoffId};
        use crate::model::{Evidence, EvidenceKind, Handoff};
        let evidence = Evidence {
            id: EvidenceId(1),
            kind: EvidenceKind::Test,
            summary: "3 passed".into(),
            detail: String::new(),
            files: vec![],
            todo: Some(TodoId(2)),
            slice: None,
            actor: "human:ann".into(),
            at: Timestamp(5),
            revision: 0,
            work: None,
            metric: None,
        };
        let handoff = Handoff {
            id: HandoffId(1),
            todo: Some(TodoId(2)),
            done: "read".into(),
            next: "write".into(),
            files: vec![],
            questions: vec![],
            slice: None,
            actor: "human:ann".into(),
            at: Timestamp(5),
            revision: 0,
            seen: None,
        };
        // Version 10 wrote the same fields without the last two (zero and `None`: one zero
        // byte each).
        let old = |mut bytes: Vec<u8>| {
            assert_eq!(&bytes[bytes.len() - 2..], &[0, 0]);
            bytes.truncate(bytes.len() - 2);
            bytes[0] = 10;
            bytes
        };
        let read: Evidence = decode("evidence", &old(encode(&evidence))).expect("reads");
        assert_eq!(read, evidence);
        let read: Handoff = decode("handoffs", &old(encode(&handoff))).expect("reads");
        assert_eq!(read, handoff);
    }

    #[test]
    fn version_12_gates_and_slices_read_with_no_revision_or_words_recorded() {
        let gate = Gate {
            id: GateId(5),
            question: "Ship it?".into(),
            options: vec![],
            context: String::new(),
            blocks: Blocks::Global,
            asked_by: "human:ann".into(),
            state: GateState::Answered,
            answer: Some(Answer {
                text: "yes".into(),
                option: None,
                by: "human:bo".into(),
                at: Timestamp(9),
            }),
            created_at: Timestamp(7),
            kind: GateKind::Question,
            answered_under: 0,
        };
        let slice = SliceRecord {
            goal: None,
            id: SliceId(9),
            agent: "codex".parse().expect("a name"),
            todo: Some(TodoId(2)),
            epoch: Some(1),
            kind: SliceKind::Work,
            profile_hash: "h".into(),
            argv: vec![],
            process: None,
            started_at: Timestamp(1),
            limit_secs: 60,
            ended_at: None,
            outcome: None,
            exit: None,
            tokens: 1,
            cost_usd: 0.0,
            output_bytes: 2,
            log: None,
            leftovers: 0,
            containment: "session".into(),
            log_sha256: String::new(),
            seen: None,
        };
        // Version 12 wrote the same fields without the last one (0 and `None`: a zero byte).
        let old = |mut bytes: Vec<u8>| {
            assert_eq!(bytes.pop(), Some(0));
            bytes[0] = 12;
            bytes
        };
        let read: Gate = decode("gates", &old(encode(&gate))).expect("reads");
        assert_eq!(read, gate);
        let read: SliceRecord = decode("slices", &old(encode(&slice))).expect("reads");
        assert_eq!(read, slice);
        // And version 13 keeps both.
        let seen = SliceRecord {
            seen: Some(crate::model::TodoSeen {
                title: "Ship".into(),
                priority: 2,
                detail_sha256: "00".into(),
            }),
            ..slice
        };
        assert_eq!(
            decode::<SliceRecord>("slices", &encode(&seen)).expect("reads"),
            seen
        );
        let under = Gate {
            answered_under: 3,
            ..gate
        };
        assert_eq!(
            decode::<Gate>("gates", &encode(&under)).expect("reads"),
            under
        );
    }

    #[test]
    fn a_newer_record_is_refused_by_name() {
        let err = decode::<u64>("agents", &[19, 1]).expect_err("too new");
        assert!(err.to_string().contains("record version 19"), "{err}");
        for version in [3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18] {
            assert_eq!(
                decode::<u64>("agents", &[version, 1]).expect("an older version reads"),
                1,
                "version {version}"
            );
        }
    }

    #[test]
    fn a_version_14_monitor_reads_with_nothing_pinned() {
        use crate::model::{Monitor, MonitorSpec, Pin};
        let spec = MonitorSpec {
            check: "sh scripts/ci-status.sh".into(),
            every_ms: 60_000,
            ..MonitorSpec::default()
        };
        let mut todo = Todo::from(TodoV1 {
            id: TodoId(3),
            goal: GoalId(1),
            title: "Wait for CI".into(),
            detail: String::new(),
            priority: 2,
            state: TodoState::Open,
            needs: vec![],
            after: vec![],
            role: None,
            epoch: 4,
            lease: None,
            latest_handoff: None,
            created_by: "human:ann".into(),
            created_at: Timestamp(5),
            updated_at: Timestamp(6),
        });
        todo.monitor = Some(Box::new(Monitor::new(spec, Timestamp(5))));
        todo.not_before = Some(Timestamp(9));
        // Version 14 wrote the monitor without `pins`, then `not_before`.
        let current = encode(&todo);
        let pins_at = current.len()
            - 1
            - postcard::to_allocvec(&todo.not_before)
                .expect("encodes")
                .len();
        assert_eq!(current[pins_at], 0, "no pins: an empty list");
        let mut v14 = current.clone();
        v14.remove(pins_at);
        v14[0] = 14;
        let read: Todo = decode("todos", &v14).expect("a version-14 todo reads");
        assert_eq!(read, todo);
        // And a pinned one round-trips in the current version.
        todo.monitor.as_mut().expect("a monitor").pins = vec![Pin {
            path: "scripts/ci-status.sh".into(),
            sha256: "ab".repeat(32),
            changed_to: None,
        }];
        assert_eq!(
            decode::<Todo>("todos", &encode(&todo)).expect("reads"),
            todo
        );
    }
}
