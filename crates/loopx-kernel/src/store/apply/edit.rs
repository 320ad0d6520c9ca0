//! `todo set`: a person changes a todo's title, detail or priority. The todo keeps its id,
//! claim and history; a handoff written before the change says so where it is shown
//! (`Handoff::changed_since`), so the next agent knows the task moved under it.

use super::op::Applied;
use crate::errors::{Conflict, Invalid, KernelError, Refused};
use crate::ids::TodoId;
use crate::limits;
use crate::model::{EventKind, Todo};
use crate::redact::Redactor;
use crate::store::tables;
use crate::store::writer::Writer;

/// What to change in a todo; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct EditTodo {
    pub todo: TodoId,
    pub title: Option<String>,
    pub detail: Option<String>,
    pub priority: Option<i32>,
}

impl EditTodo {
    pub(super) fn redact(&mut self, r: &Redactor) {
        for text in [&mut self.title, &mut self.detail].into_iter().flatten() {
            r.redact_in_place(text);
        }
    }
}

pub(super) fn edit(w: &Writer<'_>, edit: EditTodo) -> Result<Applied, KernelError> {
    // A todo's words are the task an agent is held to: an agent that could rewrite them
    // could rewrite what its done is judged against.
    if !loopx_vocab::Actor::of(w.actor).is_person() {
        return Err(Refused::EditByAgent {
            actor: w.actor.to_owned(),
        }
        .into());
    }
    let (todo, changed) = rewrite(w, edit)?;
    w.event(EventKind::TodoEdited {
        todo: todo.id,
        changed,
    })?;
    Ok(Applied::Todo(todo))
}

/// Changes the todo's words as `edit` says and stores it; what changed (`title`, `detail`,
/// `priority`). The caller has checked who may, and records the event.
pub(super) fn rewrite(w: &Writer<'_>, edit: EditTodo) -> Result<(Todo, Vec<String>), KernelError> {
    let mut todo: Todo = w.require(tables::TODOS, edit.todo.0, "todo", edit.todo)?;
    if todo.state.is_final() {
        return Err(Conflict::TodoState {
            todo: todo.id,
            state: todo.state.as_str(),
            action: "changed",
        }
        .into());
    }
    let mut changed = Vec::new();
    if let Some(title) = edit.title.map(|t| t.trim().to_owned()) {
        limits::check_text("title", &title, limits::TITLE, "; put the rest in --detail")?;
        if title != todo.title {
            todo.title = title;
            changed.push("title".to_owned());
        }
    }
    if let Some(detail) = edit.detail {
        limits::check_len("detail", &detail, limits::DETAIL)?;
        if detail != todo.detail {
            todo.detail = detail;
            changed.push("detail".to_owned());
        }
    }
    if let Some(priority) = edit.priority
        && priority != todo.priority
    {
        todo.priority = priority;
        changed.push("priority".to_owned());
    }
    if changed.is_empty() {
        return Err(Invalid::Other(format!(
            "{} already says that: nothing to change\n(hint: `loopx todo show {}` prints its title, detail and priority)",
            todo.id, todo.id
        ))
        .into());
    }
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    Ok((todo, changed))
}
