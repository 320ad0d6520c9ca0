//! Changes people make in the Lark table, taken into the kernel as the same operations as the
//! CLI's, by that person, or refused.
//!
//! A record a person changed last (Lark's `last_modified_by` names them) and that differs from
//! what loopx shows is read as one of three moves, and only these, by an open_id in
//! `[lark.questions] answerers`:
//!
//! - **Status → Dropped**: `loopx todo drop` of its todo;
//! - **Priority** changed to a whole number: `loopx todo set --priority`;
//! - **a new row with a Task and no Todo ID**: `loopx todo add` with that title (and its
//!   Priority), the row then tied to the new todo.
//!
//! Each runs as `human:lark:<open_id>` through the application layer, so the kernel's rules
//! hold as for the CLI (a finished todo cannot be dropped again, and so on). Anything else — a
//! move to another status, an edit of the Task or of a field loopx fills, a change by someone
//! not allowed, a move the kernel refuses — is refused: the pass then writes what the kernel
//! says over it (a refused new row is deleted), and the refusal is recorded in the event log
//! (`change_refused`, by that person), logged, and counted in the board's health. Without `answerers` nobody is allowed: every change is put back, and rows
//! without a Todo ID are left alone, as a table only shown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use loopx_app::{App, Caller};
use loopx_kernel::model::TodoState;
use loopx_kernel::store::{EditTodo, FinishTodo, NewTodo};
use loopx_kernel::{Project, TodoId};
use serde_json::Value;

use crate::api::Record;
use crate::projection::{Row, TODO_ID};
use crate::reconcile::text;

/// What the people's changes came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taken {
    /// Each change applied, in words (`t3 dropped by human:lark:ou_ann`).
    pub applied: Vec<String>,
    /// Each change refused, in words, with why.
    pub refused: Vec<String>,
    /// New rows that became todos: record → todo.
    pub adopted: BTreeMap<String, TodoId>,
    /// New rows refused: deleted from the table.
    pub rejected: BTreeSet<String>,
}

/// Who may change the board, and how a change is made.
#[derive(Debug, Clone)]
pub struct People<'a> {
    pub project: &'a Project,
    pub loopx_exe: Option<PathBuf>,
    /// The open_ids allowed (`[lark.questions] answerers`); empty: nobody.
    pub answerers: &'a [String],
}

/// Takes the changes people made in `records` against `rows` (what loopx shows).
pub fn take(people: &People<'_>, rows: &[Row], records: &[Record]) -> Taken {
    let mut taken = Taken::default();
    let by_todo: BTreeMap<String, &Row> = rows.iter().map(|r| (r.todo.to_string(), r)).collect();
    for record in records {
        let Some(open_id) = &record.modified_by else {
            continue;
        };
        let todo = record.fields.get(TODO_ID).map(text).unwrap_or_default();
        let allowed = people.answerers.iter().any(|a| a == open_id);
        if todo.is_empty() {
            // With nobody allowed, a row without a Todo ID is a person's note, left alone.
            if people.answerers.is_empty() {
                continue;
            }
            new_row(people, record, open_id, allowed, &mut taken);
            continue;
        }
        let Some(row) = by_todo.get(&todo) else {
            continue;
        };
        for (name, have) in &record.fields {
            let want = row.fields.get(name);
            if same(want, have) || !crate::projection::FIELDS.iter().any(|(n, _)| n == name) {
                continue;
            }
            let change = format!("{todo} {name} set to {} by {open_id}", shown(have));
            let id: TodoId = match todo.parse() {
                Ok(id) => id,
                Err(_) => continue,
            };
            if !allowed {
                refuse(
                    people,
                    open_id,
                    Some(id),
                    &change,
                    "not one of the answerers",
                    &mut taken,
                );
                continue;
            }
            let app = as_person(people, open_id);
            let done = match (name.as_str(), have) {
                ("Status", Value::String(s)) if s == "Dropped" => app
                    .finish_todo(FinishTodo {
                        todo: id,
                        to: TodoState::Dropped,
                        agent: None,
                        epoch: None,
                    })
                    .map(drop)
                    .map_err(|e| e.to_string()),
                ("Priority", Value::Number(n)) => {
                    match n.as_i64().and_then(|n| i32::try_from(n).ok()) {
                        Some(priority) => app
                            .edit_todo(EditTodo {
                                todo: id,
                                title: None,
                                detail: None,
                                priority: Some(priority),
                            })
                            .map(drop)
                            .map_err(|e| e.to_string()),
                        None => Err("a priority is a whole number".to_owned()),
                    }
                }
                ("Status", _) => {
                    Err("only a move to Dropped is taken; loopx moves the rest".to_owned())
                }
                _ => Err(format!("`{name}` is loopx's to fill")),
            };
            match done {
                Ok(()) => taken.applied.push(change),
                Err(why) => refuse(people, open_id, Some(id), &change, &why, &mut taken),
            }
        }
    }
    for line in &taken.applied {
        tracing::info!(change = %line, "a change made in Lark was taken");
    }
    for line in &taken.refused {
        tracing::warn!(change = %line, "a change made in Lark was refused and put back");
    }
    taken
}

/// A row a person added: a todo with its Task (and Priority), or refused.
fn new_row(people: &People<'_>, record: &Record, open_id: &str, allowed: bool, taken: &mut Taken) {
    let title = record.fields.get("Task").map(text).unwrap_or_default();
    let title = title.trim();
    let what = format!("a new row `{title}` by {open_id}");
    if !allowed {
        refuse(
            people,
            open_id,
            None,
            &what,
            "not one of the answerers",
            taken,
        );
        taken.rejected.insert(record.id.clone());
        return;
    }
    if title.is_empty() {
        // Being typed: taken once it has a Task.
        return;
    }
    let priority = record
        .fields
        .get("Priority")
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(0);
    let new = NewTodo {
        goal: None,
        title: title.to_owned(),
        detail: String::new(),
        priority,
        needs: vec![],
        after: vec![],
        role: None,
        monitor: None,
        not_before: None,
        then: vec![],
        held_for: None,
    };
    match as_person(people, open_id).add_todo(new) {
        Ok(todo) => {
            taken.applied.push(format!("{what} added as {}", todo.id));
            taken.adopted.insert(record.id.clone(), todo.id);
        }
        Err(e) => {
            refuse(people, open_id, None, &what, &e.to_string(), taken);
            taken.rejected.insert(record.id.clone());
        }
    }
}

/// Refuses `change` (the pass then puts the row back): counted, and recorded in the kernel's
/// event log as `change_refused` by the person who made it. A refusal that cannot be recorded
/// (the store busy past its wait) is still refused, and logged.
fn refuse(
    people: &People<'_>,
    open_id: &str,
    todo: Option<TodoId>,
    change: &str,
    why: &str,
    taken: &mut Taken,
) {
    taken.refused.push(format!("{change}: {why}"));
    if let Err(e) = as_person(people, open_id).record_refused_change("lark", todo, change, why) {
        tracing::warn!(error = %e, %change, "cannot record a refused Lark change in the event log");
    }
}

fn as_person(people: &People<'_>, open_id: &str) -> App {
    App::new(
        people.project.clone(),
        Caller::person(&format!("lark:{open_id}")),
        people.loopx_exe.clone(),
    )
}

fn same(want: Option<&Value>, have: &Value) -> bool {
    match (want, have) {
        (Some(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (want, have) => want.map(text).unwrap_or_default() == text(have),
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("\"{s}\""),
        other => text(other),
    }
}
