//! The rows of the Lark board: one per todo of every goal not archived, its fields named as
//! people read them, with the types Lark stores them in.

use std::collections::HashMap;

use loopx_app::board::{Column, blocking_gate};
use loopx_app::{App, AppError};
use loopx_kernel::TodoId;
use loopx_kernel::model::{GateState, GoalStatus};
use serde_json::{Map, Value, json};

/// Lark's field types loopx uses.
pub const TEXT: i64 = 1;
pub const NUMBER: i64 = 2;
pub const SINGLE_SELECT: i64 = 3;
pub const DATE: i64 = 5;

/// The field that ties a record to its todo.
pub const TODO_ID: &str = "Todo ID";
/// The board's fields, in order: the first is the table's primary field.
pub const FIELDS: [(&str, i64); 10] = [
    ("Task", TEXT),
    ("Status", SINGLE_SELECT),
    ("Agent", TEXT),
    ("Priority", NUMBER),
    ("Goal", TEXT),
    (TODO_ID, TEXT),
    ("Latest handoff", TEXT),
    ("Latest evidence", TEXT),
    ("Question", TEXT),
    ("Updated", DATE),
];
/// Longest text put in a cell; the rest is in `loopx` itself.
const CELL: usize = 1000;

/// The `property` a new field of `kind` needs: a single select's options (the columns).
pub fn property(name: &str, kind: i64) -> Option<Value> {
    (kind == SINGLE_SELECT && name == "Status").then(|| {
        let options: Vec<Value> = Column::ALL
            .iter()
            .map(|c| json!({"name": c.label()}))
            .collect();
        json!({"options": options})
    })
}

/// One todo as a record's fields. An empty text is left out (Lark lists an empty cell as no
/// field at all).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub todo: TodoId,
    pub fields: Map<String, Value>,
}

/// Every row, in todo order.
pub fn rows(app: &App) -> Result<Vec<Row>, AppError> {
    let judge = app.evidence_judge(app.evidence_rules().unwrap_or_default());
    app.read(|s| {
        let goals: HashMap<_, _> = s
            .goals()?
            .into_iter()
            .filter(|g| g.status != GoalStatus::Archived)
            .map(|g| (g.id, g))
            .collect();
        let todos: Vec<_> = s
            .todos()?
            .into_iter()
            .filter(|t| goals.contains_key(&t.goal))
            .collect();
        let gates: Vec<_> = s
            .gates()?
            .into_iter()
            .filter(|g| g.state == GateState::Open)
            .collect();
        let running = s.running_slices()?;
        let mut newest = HashMap::new();
        let evidence = judge.all(s, s.evidence_newest(usize::MAX, |e| e.todo.is_some())?)?;
        for judged in evidence {
            if let Some(todo) = judged.item.todo {
                newest.entry(todo).or_insert(judged);
            }
        }
        let mut rows = Vec::with_capacity(todos.len());
        for todo in &todos {
            let column = Column::of(todo, &gates, &running);
            let agent = todo
                .lease
                .as_ref()
                .or(todo.finished_under.as_ref())
                .map(|l| l.agent.to_string())
                .unwrap_or_default();
            let handoff = match todo.latest_handoff {
                Some(id) => s.handoff(id)?.map(|h| match h.next.is_empty() {
                    true => h.done,
                    false => format!("{} Next: {}", h.done, h.next),
                }),
                None => None,
            };
            let evidence = newest.get(&todo.id).map(|j| {
                let e = &j.item;
                match &j.stale_reason {
                    Some(why) => format!("{}: {} (stale: {why})", e.kind.as_str(), e.summary),
                    None => format!("{}: {}", e.kind.as_str(), e.summary),
                }
            });
            let question = blocking_gate(todo, &gates)
                .map(|g| format!("{} ({})", g.question, g.answer_command()));
            let goal = goals
                .get(&todo.goal)
                .map(|g| format!("{}: {}", g.id, g.objective))
                .unwrap_or_default();
            let mut fields = Map::new();
            let mut text = |name: &str, value: String| {
                let value = clip(value.trim());
                if !value.is_empty() {
                    fields.insert(name.to_owned(), Value::String(value));
                }
            };
            text("Task", todo.title.clone());
            text("Status", column.label().to_owned());
            text("Agent", agent);
            text("Goal", goal);
            text(TODO_ID, todo.id.to_string());
            text("Latest handoff", handoff.unwrap_or_default());
            text("Latest evidence", evidence.unwrap_or_default());
            text("Question", question.unwrap_or_default());
            fields.insert("Priority".into(), json!(todo.priority));
            fields.insert("Updated".into(), json!(todo.updated_at.0));
            rows.push(Row {
                todo: todo.id,
                fields,
            });
        }
        Ok(rows)
    })
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(CELL) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
