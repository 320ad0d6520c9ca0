//! The kernel's tables. Keys are numbers (the id without its letter) so that tables iterate in
//! creation order; values are versioned bytes (`codec.rs`). Each backend keeps them its own way
//! (`kv.rs`); the names are redb's table names.

pub(crate) use super::kv::Table;

/// A table of numbered records.
pub(crate) type Numbered = Table;

/// `schema_version`, `created_at`, and the `next_<kind>` counters.
pub(crate) const META: Table = Table::Meta;
pub(crate) const GOALS: Table = Table::Goals;
pub(crate) const TODOS: Table = Table::Todos;
pub(crate) const GATES: Table = Table::Gates;
pub(crate) const EVIDENCE: Table = Table::Evidence;
pub(crate) const HANDOFFS: Table = Table::Handoffs;
pub(crate) const SLICES: Table = Table::Slices;
/// Slices recorded as running: the set `loopx status` and recovery read without a scan.
pub(crate) const RUNNING: Table = Table::Running;
/// The supervisor of each running slice (its process identity), so that recovery can tell a
/// live peer's slice from an orphan. Its own table, added after `slices`, so that slice records
/// written before it existed still decode; a store without it has no owners recorded.
pub(crate) const SLICE_OWNERS: Table = Table::SliceOwners;
/// Todos that are open or claimed: what `status` and `todo list` read, without a full scan.
pub(crate) const ACTIVE_TODOS: Table = Table::ActiveTodos;
/// Open todos whose dependencies are all finished, in the order an agent takes them:
/// `(goal, role or "", needs capabilities (0 or 1), -priority, id)`. The decision reads a short
/// prefix of the ranges for its goal, role and capabilities instead of every open todo
/// (`store/todo_index.rs`).
pub(crate) const READY_TODOS: Table = Table::ReadyTodos;
/// Open todos that wait on an unfinished dependency: `(goal, id)`.
pub(crate) const WAITING_TODOS: Table = Table::WaitingTodos;
/// For each waiting todo, one row per dependency it waits on: `(dependency, todo)`, so that
/// finishing a todo finds the todos it releases without a scan.
pub(crate) const DEPENDENTS: Table = Table::Dependents;
/// Open monitors whose dependencies are all finished, `(goal, id)`: what supervisors poll.
/// A monitor is never in `ready_todos` (no agent takes it).
pub(crate) const MONITOR_TODOS: Table = Table::MonitorTodos;
/// Claimed todos (live or expired leases).
pub(crate) const CLAIMED_TODOS: Table = Table::ClaimedTodos;
pub(crate) const EVENTS: Table = Table::Events;
/// Quota state by key: `pacing/<agent>`, `window/<account>/<period ms>`, `hold/<key>`.
pub(crate) const QUOTA: Table = Table::Quota;
/// The spend ledger.
pub(crate) const SPENDS: Table = Table::Spends;
pub(crate) const AGENTS: Table = Table::Agents;
/// Every revision of every goal, keyed [`revision_key`]: a goal's are one range, in order.
pub(crate) const GOAL_REVISIONS: Table = Table::GoalRevisions;

/// The key of revision `number` of goal `goal`.
pub(crate) fn revision_key(goal: u64, number: u32) -> u64 {
    (goal << 32) | u64::from(number)
}

/// Names of the counters in `META`, one per numbered kind.
pub(crate) mod counter {
    pub(crate) const GOAL: &str = "next_goal";
    pub(crate) const TODO: &str = "next_todo";
    pub(crate) const GATE: &str = "next_gate";
    pub(crate) const EVIDENCE: &str = "next_evidence";
    pub(crate) const HANDOFF: &str = "next_handoff";
    pub(crate) const SLICE: &str = "next_slice";
    pub(crate) const EVENT: &str = "next_event";
    pub(crate) const SPEND: &str = "next_spend";
}

pub(crate) const SCHEMA_KEY: &str = "schema_version";
/// The time of the last committed change: the floor for the next one's `now`.
pub(crate) const LAST_AT_KEY: &str = "last_at";
/// How many todos were dropped (done = all − active − dropped).
pub(crate) const DROPPED_KEY: &str = "todos_dropped";
/// How many todos are open, and how many claimed, kept with the indexes above.
pub(crate) const OPEN_KEY: &str = "todos_open";
pub(crate) const CLAIMED_KEY: &str = "todos_claimed";
/// Present once the todo indexes (ready, waiting, dependents, claimed, the counts) are built:
/// a store written by an older loopx gets them at its first read-write open.
pub(crate) const TODO_INDEX_KEY: &str = "todo_index";
/// How many todos of a goal wait on a dependency: `todos_waiting/<goal number>`.
pub(crate) fn waiting_key(goal: u64) -> String {
    format!("todos_waiting/{goal}")
}
