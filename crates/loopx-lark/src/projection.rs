//! The rows of the Lark board: one per todo of every goal not archived, its fields named as
//! people read them, with the types Lark stores them in.

use std::collections::{BTreeMap, HashMap};

use loopx_app::board::{Column, blocking_gate};
use loopx_app::evidence::JudgedEvidence;
use loopx_app::{App, AppError};
use loopx_kernel::model::{Gate, Goal, GoalStatus, Handoff, Todo};
use loopx_kernel::{GoalId, TodoId};
use serde_json::{Map, Value, json};

use crate::words::{Names, gate_text, quote, unquote_code};

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

/// Where the board's questions are answered, for the Question cell's words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answers {
    /// Question cards are posted to the chat (with a button per option).
    pub cards: bool,
    /// Approvals take a press on their card (`[lark.questions] approvals`).
    pub approvals: bool,
}

/// Every row, in todo order. Text is in words (`crate::words`): the Question cell says how
/// to answer, never a command, and the Goal cell says the goal's state.
pub fn rows(app: &App, answers: Answers) -> Result<Vec<Row>, AppError> {
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
        let gates = s.open_gates()?;
        let running = s.running_slices()?;
        let names = Names::new(
            goals.values().cloned().collect(),
            &todos,
            s.current_goal()?.map(|g| g.id),
        );
        let goal_cells = goal_cells(&goals, &crate::goals::open_by_goal(&names, &gates));
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
            let handoff = todo.latest_handoff.map(|id| s.handoff(id)).transpose()?;
            let question = blocking_gate(todo, &gates).map(|g| question_cell(g, answers));
            let goal = goal_cells.get(&todo.goal).cloned().unwrap_or_default();
            let cells = [
                ("Task", todo.title.clone()),
                ("Status", column.label().to_owned()),
                ("Agent", agent),
                ("Goal", goal),
                (TODO_ID, todo.id.to_string()),
                (
                    "Latest handoff",
                    handoff.flatten().map_or_else(String::new, handoff_cell),
                ),
                (
                    "Latest evidence",
                    newest.get(&todo.id).map_or_else(String::new, evidence_cell),
                ),
                ("Question", question.unwrap_or_default()),
            ];
            rows.push(row(todo, cells));
        }
        Ok(rows)
    })
}

/// The Latest handoff cell: what was done, and what is next.
fn handoff_cell(h: Handoff) -> String {
    unquote_code(&match h.next.is_empty() {
        true => h.done,
        false => format!("{} Next: {}", h.done, h.next),
    })
}

/// The Latest evidence cell: its kind and summary, and why it is stale.
fn evidence_cell(j: &JudgedEvidence) -> String {
    let e = &j.item;
    let text = match &j.stale_reason {
        Some(why) => format!("{}: {} (stale: {why})", e.kind.as_str(), e.summary),
        None => format!("{}: {}", e.kind.as_str(), e.summary),
    };
    unquote_code(&text)
}

/// A row's cells: each text cell clipped and left out when empty, then the todo's priority
/// and when it changed.
fn row(todo: &Todo, cells: [(&str, String); 8]) -> Row {
    let mut fields = Map::new();
    for (name, value) in cells {
        let value = clip(value.trim());
        if !value.is_empty() {
            fields.insert(name.to_owned(), Value::String(value));
        }
    }
    fields.insert("Priority".into(), json!(todo.priority));
    fields.insert("Updated".into(), json!(todo.updated_at.0));
    Row {
        todo: todo.id,
        fields,
    }
}

/// Each goal's cell: its objective, its id and where it stands.
fn goal_cells(
    goals: &HashMap<GoalId, Goal>,
    by_goal: &BTreeMap<GoalId, Vec<&Gate>>,
) -> HashMap<GoalId, String> {
    goals
        .values()
        .map(|g| {
            let open = by_goal.get(&g.id).map_or(&[][..], Vec::as_slice);
            let objective = crate::words::flat(&g.objective, 300);
            let state = crate::goals::state(g, open);
            (g.id, format!("{objective} ({}): {state}", g.id))
        })
        .collect()
}

/// The Question cell: the question, its options, and how to answer it, in words
/// (`Which variance? Choose "population" or "sample". Answer with a button on its card in the
/// chat. (q5)`).
fn question_cell(gate: &Gate, answers: Answers) -> String {
    let mut cell = gate_text(gate, &gate.question);
    let options: Vec<String> = gate.options.iter().map(|o| quote(o, 40)).collect();
    if let Some((last, first)) = options.split_last() {
        match first.is_empty() {
            true => cell.push_str(&format!(" Answer {last}.")),
            false => cell.push_str(&format!(" Choose {} or {last}.", first.join(", "))),
        }
    }
    let how = crate::cards::how_to_answer(gate, answers.cards, answers.approvals);
    format!("{cell} {how} ({})", gate.id)
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(CELL) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
