//! Which events `loopx log` shows: about one goal, agent or todo, of some kinds, in a time
//! range. One definition, so that the log's first page and `--follow` keep the same ones.

use loopx_kernel::model::Event;
use loopx_kernel::{AgentName, EventKind, GoalId, KernelError, Snapshot, Timestamp, TodoId};

/// The events wanted; every field left empty keeps every event.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub goal: Option<GoalId>,
    pub agent: Option<AgentName>,
    pub todo: Option<TodoId>,
    /// Kind names (`slice_ended`); a name may be a prefix ending in `_` or without it (`slice`
    /// keeps every `slice_…` kind).
    pub kinds: Vec<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

impl EventFilter {
    /// Whether nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self.goal.is_none()
            && self.agent.is_none()
            && self.todo.is_none()
            && self.kinds.is_empty()
            && self.since.is_none()
            && self.until.is_none()
    }

    /// A kind given that names no kind, with the ones there are.
    pub fn unknown_kind(&self) -> Option<String> {
        let unknown = self
            .kinds
            .iter()
            .find(|k| !EventKind::NAMES.iter().any(|n| kind_is(n, k)))?;
        Some(format!(
            "`{unknown}` is no kind of event\n(hint: one of {}; a prefix such as `slice` or `todo` keeps every kind it begins)",
            EventKind::NAMES.join(", ")
        ))
    }

    /// The `events` it keeps, in order.
    pub fn keep(&self, s: &Snapshot<'_>, events: Vec<Event>) -> Result<Vec<Event>, KernelError> {
        let mut kept = Vec::with_capacity(events.len());
        for event in events {
            if self.matches(s, &event)? {
                kept.push(event);
            }
        }
        Ok(kept)
    }

    /// Whether it keeps `event`.
    pub fn matches(&self, s: &Snapshot<'_>, event: &Event) -> Result<bool, KernelError> {
        if self.since.is_some_and(|t| event.at < t) || self.until.is_some_and(|t| event.at > t) {
            return Ok(false);
        }
        let name = event.kind.name();
        if !self.kinds.is_empty() && !self.kinds.iter().any(|k| kind_is(name, k)) {
            return Ok(false);
        }
        let data = serde_json::to_value(&event.kind).unwrap_or_default();
        let field = |key: &str| fields(&data).find_map(|d| d.get(key)?.as_str().map(str::to_owned));
        if let Some(agent) = &self.agent {
            let by = loopx_vocab::Actor::of(&event.actor).agent() == Some(agent.as_str());
            if !by && field("agent").as_deref() != Some(agent.as_str()) {
                return Ok(false);
            }
        }
        if let Some(todo) = self.todo
            && field("todo").as_deref() != Some(todo.to_string().as_str())
            && !slice_on(s, &event.kind, todo)?
        {
            return Ok(false);
        }
        match self.goal {
            Some(goal) => crate::history::event_about_goal(s, &event.kind, goal),
            None => Ok(true),
        }
    }
}

/// `name` is the kind `given`, or begins with it (`slice` or `slice_` for `slice_ended`).
fn kind_is(name: &str, given: &str) -> bool {
    let prefix = given.trim_end_matches('_');
    name == given
        || name
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('_'))
}

/// The data of an event kind: serde writes `{"todo_claimed": {…}}` (or a bare name).
fn fields(
    data: &serde_json::Value,
) -> impl Iterator<Item = &serde_json::Map<String, serde_json::Value>> {
    data.as_object()
        .into_iter()
        .flat_map(|o| o.values())
        .filter_map(serde_json::Value::as_object)
}

/// A slice event whose slice worked on `todo` (its start names the todo, its spawn and end
/// only the slice).
fn slice_on(s: &Snapshot<'_>, kind: &EventKind, todo: TodoId) -> Result<bool, KernelError> {
    match kind {
        EventKind::SliceSpawned { slice, .. } | EventKind::SliceEnded { slice, .. } => {
            Ok(s.slice(*slice)?.is_some_and(|r| r.todo == Some(todo)))
        }
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::kind_is;

    #[test]
    fn a_kind_is_named_whole_or_by_its_first_words() {
        assert!(kind_is("slice_ended", "slice_ended"));
        assert!(kind_is("slice_ended", "slice"));
        assert!(kind_is("slice_ended", "slice_"));
        assert!(!kind_is("slice_ended", "slic"));
        assert!(!kind_is("todo_done", "slice"));
    }
}
