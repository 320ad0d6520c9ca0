//! Changes people make in the Lark table, taken into the kernel as the same operations as the
//! CLI's, by that person, or refused.
//!
//! A cell of one of loopx's fields that differs from what loopx shows is read as one of three
//! moves, and only these, by an open_id in `[lark.questions] answerers`:
//!
//! - **Status → Dropped**: `loopx todo drop` of its todo;
//! - **Priority** changed to a whole number: `loopx todo set --priority`;
//! - **a new row with a Task and no Todo ID**: `loopx todo add` with that title (and its
//!   Priority), the row then tied to the new todo.
//!
//! Who made a change is what a record-change event says of that very cell ([`Authors`],
//! [`crate::changes`]): the newest event for the cell must name the person and carry the value
//! the cell holds now. A record's `last_modified_by` is never enough: it names whoever touched
//! the record last, in any column, so a drop by someone not allowed followed by an allowed
//! person's edit of her own note in that record would be credited to her. A change no event
//! accounts for is left alone for [`Authors::grace`] (its event may be on its way), then
//! refused. Without events configured nothing can be attributed: the table is only shown.
//!
//! Each taken change runs as `human:lark:<open_id>` through the application layer, so the
//! kernel's rules hold as for the CLI (a finished todo cannot be dropped again, and so on).
//! Anything else — a move to another status, an edit of the Task or of a field loopx fills, a
//! change by someone not allowed or by someone no event names, a move the kernel refuses — is
//! refused: the pass then writes what the kernel says over it (a refused new row is deleted),
//! and the refusal is recorded in the event log (`change_refused`, by the person the event names,
//! or by `human:lark` when none does), logged, counted in the board's health, and kept
//! ([`Taken::put_back`]) for the card that says in the chat what was put back and why
//! ([`crate::putback`]). Without
//! `answerers` nobody is allowed: every change is put back, and rows without a Todo ID are left
//! alone, as a table only shown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use loopx_app::{App, Caller};
use loopx_kernel::model::TodoState;
use loopx_kernel::store::{EditTodo, FinishTodo, NewTodo};
use loopx_kernel::{Project, TodoId};
use serde_json::Value;

use crate::api::Record;
use crate::changes::Held;
use crate::projection::{Row, TODO_ID};
use crate::putback::{PutBack, Why};
use crate::reconcile::text;

/// What the people's changes came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taken {
    /// Each change applied, in words (`t3 dropped by human:lark:ou_ann`).
    pub applied: Vec<String>,
    /// Each change refused, in words, with why.
    pub refused: Vec<String>,
    /// Each change refused, for the message in Lark that says what was put back and why.
    pub put_back: Vec<PutBack>,
    /// New rows that became todos: record → todo.
    pub adopted: BTreeMap<String, TodoId>,
    /// New rows refused: deleted from the table.
    pub rejected: BTreeSet<String>,
    /// Cells (record, field name) and new rows (record) no event accounts for yet: left as they
    /// are for a later pass.
    pub waiting_cells: BTreeSet<(String, String)>,
    pub waiting_rows: BTreeSet<String>,
}

/// Who may change the board, and how a change is made.
#[derive(Debug, Clone)]
pub struct People<'a> {
    pub project: &'a Project,
    pub loopx_exe: Option<PathBuf>,
    /// The open_ids allowed (`[lark.questions] answerers`); empty: nobody.
    pub answerers: &'a [String],
    /// Record-change events are configured (the callback listener hears them): the store
    /// they are kept in, and how long a change no event accounts for is left alone. `None`:
    /// no change can be attributed, and the table is only shown.
    pub events: Option<(PathBuf, Duration)>,
}

/// Who made each change, as far as the record-change events say, for one pass over `table`.
#[derive(Debug)]
pub struct Authors<'a> {
    /// The events heard; `None` when none are configured.
    pub held: Option<&'a Held>,
    pub table: &'a str,
    /// The table's fields: name → id (events name fields by id).
    pub field_ids: &'a BTreeMap<String, String>,
    /// Changes no event accounts for yet, kept between passes.
    pub waiting: &'a mut Waiting,
    /// How long such a change is left alone before it is refused.
    pub grace: Duration,
}

/// Changes no event accounts for yet: (record, field id) → the value and when it was first seen.
#[derive(Debug, Default)]
pub struct Waiting {
    seen: BTreeMap<(String, String), (String, Instant)>,
    /// Those left waiting by the pass under way.
    now: BTreeSet<(String, String)>,
}

impl Waiting {
    /// The cells the pass left waiting: their events are kept for the next one.
    pub fn cells(&self) -> Vec<(String, String)> {
        self.now.iter().cloned().collect()
    }

    /// Ends a pass: what it did not leave waiting is forgotten.
    pub fn end_pass(&mut self) {
        let now = std::mem::take(&mut self.now);
        self.seen.retain(|k, _| now.contains(k));
    }
}

/// What the events say of one changed cell.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Made by this open_id, allowed.
    Take(String),
    /// Refused: by whom, if an event names them, and why.
    Refuse { by: Option<String>, why: Why },
    /// Not known yet: left as it is for a later pass.
    Wait,
}

impl Authors<'_> {
    /// Who set `name` of `record` to `have`, if the events say so with certainty.
    fn judge(
        &mut self,
        record: &Record,
        name: &str,
        have: &Value,
        answerers: &[String],
    ) -> Verdict {
        let Some(held) = self.held else {
            return Verdict::Refuse {
                by: None,
                why: Why::ShownOnly,
            };
        };
        let field = self.field_ids.get(name).cloned().unwrap_or_default();
        let newest = held.newest(self.table, &record.id, &field);
        if let Some(cell) = newest.filter(|c| same(Some(&c.after), have)) {
            return match answerers.iter().any(|a| a == &cell.operator) {
                true => Verdict::Take(cell.operator.clone()),
                false => Verdict::Refuse {
                    by: Some(cell.operator.clone()).filter(|o| !o.is_empty()),
                    why: Why::NotAllowed,
                },
            };
        }
        if self.young(&record.id, &field, have) {
            return Verdict::Wait;
        }
        let why = match newest {
            Some(cell) => format!(
                "the newest record-change event for it (by {}) set {}",
                cell.operator,
                shown(&cell.after)
            ),
            None => "no record-change event says who made it".to_owned(),
        };
        Verdict::Refuse {
            by: None,
            why: Why::Unknown(why),
        }
    }

    /// Whether this change was first seen less than the grace ago (then it is left waiting).
    fn young(&mut self, record: &str, field: &str, have: &Value) -> bool {
        let key = (record.to_owned(), field.to_owned());
        let value = text(have);
        let first = match self.waiting.seen.get(&key) {
            Some((v, at)) if *v == value => *at,
            _ => Instant::now(),
        };
        if first.elapsed() >= self.grace {
            return false;
        }
        self.waiting.seen.insert(key.clone(), (value, first));
        self.waiting.now.insert(key);
        true
    }
}

/// Takes the changes people made in `records` against `rows` (what loopx shows).
pub fn take(
    people: &People<'_>,
    rows: &[Row],
    records: &[Record],
    authors: &mut Authors<'_>,
) -> Taken {
    let mut taken = Taken::default();
    let by_todo: BTreeMap<String, &Row> = rows.iter().map(|r| (r.todo.to_string(), r)).collect();
    // Without answerers, or without events to say who, a row without a Todo ID is a person's
    // note, left alone.
    let shown_only = people.answerers.is_empty() || authors.held.is_none();
    for record in records {
        // Last written by loopx: nobody changed it since.
        let Some(last) = &record.modified_by else {
            continue;
        };
        let todo = record.fields.get(TODO_ID).map(text).unwrap_or_default();
        if todo.is_empty() {
            if !shown_only {
                new_row(people, record, authors, &mut taken);
            }
            continue;
        }
        let (Some(row), Ok(id)) = (by_todo.get(&todo), todo.parse::<TodoId>()) else {
            continue;
        };
        for (name, have) in &record.fields {
            let want = row.fields.get(name);
            if same(want, have) || !crate::projection::FIELDS.iter().any(|(n, _)| n == name) {
                continue;
            }
            let open_id = match authors.judge(record, name, have, people.answerers) {
                Verdict::Take(open_id) => open_id,
                Verdict::Wait => {
                    taken
                        .waiting_cells
                        .insert((record.id.clone(), name.clone()));
                    continue;
                }
                Verdict::Refuse { by, why } => {
                    let change = change(&todo, name, have, by.as_deref(), last);
                    let put = PutBack::cell(row, name, &text(have), why);
                    refuse(people, by.as_deref(), Some(id), &change, put, &mut taken);
                    continue;
                }
            };
            let change = change(&todo, name, have, Some(&open_id), last);
            match apply(&as_person(people, &open_id), id, name, have) {
                Ok(()) => taken.applied.push(change),
                Err(why) => {
                    let put = PutBack::cell(row, name, &text(have), why);
                    refuse(people, Some(&open_id), Some(id), &change, put, &mut taken)
                }
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

/// A change in words: by the person an event names, or by someone no event names.
fn change(todo: &str, name: &str, have: &Value, by: Option<&str>, last: &str) -> String {
    let value = shown(have);
    match by {
        Some(open_id) => format!("{todo} {name} set to {value} by {open_id}"),
        None => format!(
            "{todo} {name} set to {value} by someone no event names (the record was last edited by {last})"
        ),
    }
}

/// Runs the one move a cell may make, as the person `app` acts for.
fn apply(app: &App, id: TodoId, name: &str, have: &Value) -> Result<(), Why> {
    match (name, have) {
        ("Status", Value::String(s)) if s == "Dropped" => app
            .finish_todo(FinishTodo {
                todo: id,
                to: TodoState::Dropped,
                agent: None,
                epoch: None,
            })
            .map(drop)
            .map_err(|e| Why::Refused(e.to_string())),
        ("Priority", Value::Number(n)) => match n.as_i64().and_then(|n| i32::try_from(n).ok()) {
            Some(priority) => app
                .edit_todo(EditTodo {
                    todo: id,
                    title: None,
                    detail: None,
                    priority: Some(priority),
                })
                .map(drop)
                .map_err(|e| Why::Refused(e.to_string())),
            None => Err(Why::NotWhole),
        },
        ("Status", _) => Err(Why::LoopxMoves),
        _ => Err(Why::LoopxFills(name.to_owned())),
    }
}

/// A row a person added: a todo with its Task (and Priority), when events name an allowed
/// person for both; refused (deleted) otherwise, or left waiting.
fn new_row(people: &People<'_>, record: &Record, authors: &mut Authors<'_>, taken: &mut Taken) {
    let title = record.fields.get("Task").map(text).unwrap_or_default();
    let title = title.trim();
    if title.is_empty() {
        // Being typed: taken once it has a Task.
        return;
    }
    let mut verdicts =
        vec![authors.judge(record, "Task", &record.fields["Task"], people.answerers)];
    if let Some(priority) = record.fields.get("Priority") {
        verdicts.push(authors.judge(record, "Priority", priority, people.answerers));
    }
    let mut author = None;
    for verdict in verdicts {
        match verdict {
            Verdict::Take(open_id) => {
                author.get_or_insert(open_id);
            }
            Verdict::Wait => {
                taken.waiting_rows.insert(record.id.clone());
                return;
            }
            Verdict::Refuse { by, why } => {
                let what = new_row_words(title, by.as_deref(), record);
                let put = PutBack::row(title, why);
                refuse(people, by.as_deref(), None, &what, put, taken);
                taken.rejected.insert(record.id.clone());
                return;
            }
        }
    }
    let open_id = author.unwrap_or_default();
    let what = new_row_words(title, Some(&open_id), record);
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
    match as_person(people, &open_id).add_todo(new) {
        Ok(todo) => {
            taken.applied.push(format!("{what} added as {}", todo.id));
            taken.adopted.insert(record.id.clone(), todo.id);
        }
        Err(e) => {
            let put = PutBack::row(title, Why::Refused(e.to_string()));
            refuse(people, Some(&open_id), None, &what, put, taken);
            taken.rejected.insert(record.id.clone());
        }
    }
}

fn new_row_words(title: &str, by: Option<&str>, record: &Record) -> String {
    let last = record.modified_by.as_deref().unwrap_or_default();
    match by {
        Some(open_id) => format!("a new row `{title}` by {open_id}"),
        None => format!("a new row `{title}` by someone no event names (last edited by {last})"),
    }
}

/// Refuses `change` (the pass then puts the row back): counted, kept for the message in Lark
/// that says so, and recorded in the kernel's event log as `change_refused` by the person an
/// event says made it. A refusal that cannot be recorded (the store busy past its wait) is
/// still refused, and logged.
fn refuse(
    people: &People<'_>,
    open_id: Option<&str>,
    todo: Option<TodoId>,
    change: &str,
    put: PutBack,
    taken: &mut Taken,
) {
    let why = put.why.log();
    taken.refused.push(format!("{change}: {why}"));
    taken.put_back.push(put);
    let why = why.as_str();
    // Nobody named: the board itself (`human:lark`) records it.
    let app = match open_id {
        Some(open_id) => as_person(people, open_id),
        None => App::new(
            people.project.clone(),
            Caller::person("lark"),
            people.loopx_exe.clone(),
        ),
    };
    if let Err(e) = app.record_refused_change("lark", todo, change, why) {
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
