//! Which todos rest on stale evidence: one definition that the history (its lineage's marks)
//! and `status` (a count, and the first few named) both use. A done todo rests on stale
//! evidence when a piece of its evidence is stale now (`loopx_domain::freshness`: the one
//! judgement of evidence); so does every todo that came `--after` it or as its `--next`
//! successor, and so on along the chain, since their work stood on it. A dropped todo rests on
//! nothing: it is a dead end already.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use loopx_domain::freshness::Freshness;
use loopx_kernel::model::{Evidence, Todo, TodoState};
use loopx_kernel::{EvidenceId, KernelError, Snapshot, TodoId};

/// The pieces of `evidence` about a done todo of `todos` that are stale now, and why.
pub fn stale_evidence(
    s: &Snapshot<'_>,
    judge: &mut Freshness<'_>,
    todos: &[Todo],
    evidence: &[Evidence],
) -> Result<BTreeMap<EvidenceId, String>, KernelError> {
    let done: BTreeSet<TodoId> = (todos.iter())
        .filter(|t| t.state == TodoState::Done)
        .map(|t| t.id)
        .collect();
    let mut stale = BTreeMap::new();
    for e in evidence
        .iter()
        .filter(|e| e.todo.is_some_and(|t| done.contains(&t)))
    {
        if let Some(why) = judge.stale(s, e)? {
            stale.insert(e.id, why);
        }
    }
    Ok(stale)
}

/// The todos of `todos` that rest on stale evidence, each with why: `e4 is stale (notes.txt
/// changed since it was recorded)` for a todo done on it (the first of its stale evidence in
/// `evidence`'s order), `after t2` for one that came after such a todo. `stale`: what
/// [`stale_evidence`] found.
pub fn resting_on_stale(
    todos: &[Todo],
    evidence: &[Evidence],
    stale: &BTreeMap<EvidenceId, String>,
) -> BTreeMap<TodoId, String> {
    let ours: BTreeMap<TodoId, &Todo> = todos.iter().map(|t| (t.id, t)).collect();
    let mut resting = BTreeMap::new();
    let mut queue = VecDeque::new();
    for e in evidence {
        let (Some(todo), Some(why)) = (e.todo, stale.get(&e.id)) else {
            continue;
        };
        if ours.contains_key(&todo) && !resting.contains_key(&todo) {
            resting.insert(todo, format!("{} is stale ({why})", e.id));
            queue.push_back(todo);
        }
    }
    let mut after: BTreeMap<TodoId, Vec<TodoId>> = BTreeMap::new();
    for todo in todos {
        for dep in &todo.after {
            after.entry(*dep).or_default().push(todo.id);
        }
    }
    while let Some(from) = queue.pop_front() {
        for next in after.get(&from).into_iter().flatten() {
            let dropped = ours.get(next).is_none_or(|t| t.state == TodoState::Dropped);
            if !dropped && !resting.contains_key(next) {
                resting.insert(*next, format!("after {from}"));
                queue.push_back(*next);
            }
        }
    }
    resting
}
