//! Executor/reviewer pairs (`[handbacks]`, issue 50): the scenario's todos are an executor's;
//! an executor that finishes one proposes its review (`role = "reviewer"`, `after` it), and a
//! reviewer that finishes a review hands a fix back to the executors now and then
//! (`back_percent`), as real pairs do. Each round is a new todo, so loopx's stall guard, which
//! counts slices on one todo, never sees such a loop; `[limits] handbacks` must.
//!
//! The simulation keeps its own count, independently of loopx's guard: a round's title says
//! which todo began its chain and which round it is (`[t3 round 2]`), and a person's answer to
//! a stall question on a todo of the chain (a `retry`) begins the count afresh from that round.
//! `handbacks_asked` (`invariants.rs`) holds when no work slice starts on a round more than the
//! limit past the chain's start, or past the round a person last answered about.

use std::collections::BTreeMap;

use loopx_kernel::model::{SliceKind, SliceRecord, Todo};
use serde_json::json;

use crate::invariants::Halt;

/// The role of the scenario's todos and of the fixes handed back.
pub(crate) const EXECUTOR: &str = "executor";
/// The role of the reviews.
pub(crate) const REVIEWER: &str = "reviewer";

/// A todo of a chain: the todo that began it and the round (0 for that todo).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Round {
    pub root: u64,
    pub round: u32,
}

/// Where a todo stands in its chain, by its title (`… [t3 round 2]`); a todo of the scenario
/// (an executor's, with no mark) begins a chain of its own.
pub(crate) fn round_of(todo: &Todo) -> Option<Round> {
    let marked = todo
        .title
        .rsplit_once(" [t")
        .and_then(|(_, mark)| mark.strip_suffix(']'))
        .and_then(|mark| mark.split_once(" round "))
        .and_then(|(root, round)| Some((root.parse().ok()?, round.parse().ok()?)));
    match marked {
        Some((root, round)) => Some(Round { root, round }),
        None if todo.role.as_deref() == Some(EXECUTOR) => Some(Round {
            root: todo.id.0,
            round: 0,
        }),
        None => None,
    }
}

/// The successor a finished round proposes in its report block (`next_todos`): an executor's
/// work always gets a review; a review hands a fix back when `hands_back`.
pub(crate) fn successor(todo: &Todo, hands_back: bool) -> Option<serde_json::Value> {
    let at = round_of(todo)?;
    let (title, role) = match todo.role.as_deref() {
        Some(EXECUTOR) => (format!("Review {}", todo.id), REVIEWER),
        Some(REVIEWER) if hands_back => (format!("Fix what {} found", todo.id), EXECUTOR),
        _ => return None,
    };
    Some(json!({
        "title": format!("{title} [t{} round {}]", at.root, at.round + 1),
        "role": role,
        "after": [todo.id.to_string()],
    }))
}

/// The simulation's own count of the rounds of every chain.
#[derive(Debug, Default)]
pub(crate) struct HandbackBooks {
    /// Per chain (its first todo): the round a person last answered a stall question about.
    pub answered_at: BTreeMap<u64, u32>,
    /// Stall questions a person answered about a round at the limit: the chains that would
    /// have gone on without one.
    pub asked: u64,
    /// The longest chain (in rounds) that ran.
    pub longest: u32,
}

impl HandbackBooks {
    /// A person answered a stall question about `todo` (their `retry` counts afresh).
    pub(crate) fn answered(&mut self, todo: &Todo, limit: u32) {
        let Some(at) = round_of(todo) else { return };
        let base = self.answered_at.entry(at.root).or_default();
        if at.round >= *base + limit {
            self.asked += 1;
        }
        *base = (*base).max(at.round);
    }

    /// A slice begins on `todo`: a work slice past the limit with no person asked since is a
    /// broken rule (`handbacks_asked`).
    pub(crate) fn began(
        &mut self,
        record: &SliceRecord,
        todo: &Todo,
        limit: u32,
    ) -> Result<(), String> {
        let Some(at) = round_of(todo) else {
            return Ok(());
        };
        if record.kind != SliceKind::Work {
            return Ok(());
        }
        self.longest = self.longest.max(at.round);
        let base = self.answered_at.get(&at.root).copied().unwrap_or(0);
        if at.round < base + limit {
            return Ok(());
        }
        Err(format!(
            "slice {} of {} began round {} of the chain begun by t{} ({}: {}), {} rounds past {}, with no person asked since (`[limits] handbacks` = {limit})",
            record.id,
            record.agent,
            at.round,
            at.root,
            todo.id,
            todo.title,
            at.round - base,
            match base {
                0 => "its start".to_owned(),
                _ => format!("round {base}, which a person last answered about"),
            },
        ))
    }
}

/// Breaks the run with `handbacks_asked`.
pub(crate) fn halt(books: &crate::books::Books, now: loopx_kernel::Timestamp, why: String) -> Halt {
    Halt::new(books, now, "handbacks_asked", why)
}
