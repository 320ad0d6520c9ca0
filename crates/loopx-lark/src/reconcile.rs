//! What to write so that the table shows the rows: pure, so that it is tested without Lark.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value};

use crate::api::Record;
use crate::flowback::Taken;
use crate::projection::{Row, TODO_ID};

/// The writes that bring a table in step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub create: Vec<Map<String, Value>>,
    /// A record and the fields to change (a cleared one is `null`).
    pub update: Vec<(String, Map<String, Value>)>,
    pub delete: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }
}

/// The plan for `rows` over `records`. A record is loopx's when its `Todo ID` names a todo
/// (`t12`), or `taken` adopted it (a person's new row, now that todo): one with no todo left to
/// show, or a second one for the same todo, is deleted, and so is a row `taken` rejected. Any
/// other record without a `Todo ID` is a person's and left alone. `fields` are the names loopx
/// writes: other fields of a record (a person's own columns) are never compared or cleared, nor
/// are the cells `taken` left waiting.
pub fn plan(rows: &[Row], records: &[Record], fields: &[&str], taken: &Taken) -> Plan {
    let mut by_todo: BTreeMap<String, &Record> = BTreeMap::new();
    let mut plan = Plan::default();
    for record in records {
        if taken.rejected.contains(&record.id) {
            plan.delete.push(record.id.clone());
            continue;
        }
        let todo = match taken.adopted.get(&record.id) {
            Some(todo) => Some(todo.to_string()),
            None => record
                .fields
                .get(TODO_ID)
                .map(text)
                .filter(|t| is_todo_id(t)),
        };
        let Some(todo) = todo else {
            continue;
        };
        match by_todo.entry(todo) {
            std::collections::btree_map::Entry::Occupied(_) => plan.delete.push(record.id.clone()),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(record);
            }
        }
    }
    let mut shown = HashSet::new();
    for row in rows {
        let key = row.todo.to_string();
        shown.insert(key.clone());
        let Some(record) = by_todo.get(&key) else {
            plan.create.push(row.fields.clone());
            continue;
        };
        let mut changed = Map::new();
        for name in fields {
            // A person's change no event accounts for yet is left as it is for now.
            if taken
                .waiting_cells
                .contains(&(record.id.clone(), (*name).to_owned()))
            {
                continue;
            }
            let want = row.fields.get(*name);
            let have = record.fields.get(*name);
            if !same(want, have) {
                changed.insert((*name).to_owned(), want.cloned().unwrap_or(Value::Null));
            }
        }
        if !changed.is_empty() {
            plan.update.push((record.id.clone(), changed));
        }
    }
    for (todo, record) in by_todo {
        if !shown.contains(&todo) {
            plan.delete.push(record.id.clone());
        }
    }
    plan
}

fn is_todo_id(text: &str) -> bool {
    text.strip_prefix('t')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a cell holds what loopx would write: texts compared as text (Lark may list a text
/// cell as segments `[{"text": …}]`), numbers as numbers, an empty text as no cell.
fn same(want: Option<&Value>, have: Option<&Value>) -> bool {
    match (want, have) {
        (None, None) => true,
        (Some(Value::Number(a)), Some(Value::Number(b))) => a.as_f64() == b.as_f64(),
        (Some(Value::Number(_)), _) | (_, Some(Value::Number(_))) => false,
        (want, have) => want.map(text).unwrap_or_default() == have.map(text).unwrap_or_default(),
    }
}

/// A cell as text.
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.clone(),
                other => other["text"].as_str().unwrap_or_default().to_owned(),
            })
            .collect(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use loopx_kernel::TodoId;
    use serde_json::json;

    use super::*;

    fn row(todo: u64, status: &str) -> Row {
        let fields = json!({"Task": format!("task {todo}"), "Status": status, TODO_ID: format!("t{todo}"), "Priority": 0});
        Row {
            todo: TodoId(todo),
            fields: fields.as_object().cloned().expect("an object"),
        }
    }

    fn record(id: &str, fields: Value) -> Record {
        Record {
            id: id.to_owned(),
            fields: fields.as_object().cloned().expect("an object"),
            modified_by: None,
        }
    }

    const FIELDS: [&str; 4] = ["Task", "Status", TODO_ID, "Priority"];

    #[test]
    fn new_todos_are_created_changed_ones_updated_and_gone_ones_deleted() {
        let rows = [row(1, "Done"), row(2, "Open"), row(3, "Open")];
        let records = [
            record(
                "rec1",
                json!({"Task": [{"type": "text", "text": "task 1"}], "Status": "Running", TODO_ID: "t1", "Priority": 0}),
            ),
            record(
                "rec2",
                json!({"Task": "task 2", "Status": "Open", TODO_ID: "t2", "Priority": 0.0}),
            ),
            record("rec9", json!({"Task": "task 9", TODO_ID: "t9"})),
            record("recp", json!({"Task": "a person's new row"})),
            record("dup2", json!({"Task": "task 2", TODO_ID: "t2"})),
        ];
        let plan = plan(&rows, &records, &FIELDS, &Taken::default());
        assert_eq!(plan.create, vec![rows[2].fields.clone()]);
        assert_eq!(
            plan.update,
            vec![(
                "rec1".to_owned(),
                json!({"Status": "Done"}).as_object().cloned().expect("map")
            )]
        );
        assert_eq!(plan.delete, vec!["dup2".to_owned(), "rec9".to_owned()]);
    }

    #[test]
    fn a_table_in_step_needs_no_write_and_a_cleared_cell_is_null() {
        let rows = [row(1, "Open")];
        let same = [record(
            "rec1",
            json!({"Task": "task 1", "Status": "Open", TODO_ID: "t1", "Priority": 0}),
        )];
        assert!(plan(&rows, &same, &FIELDS, &Taken::default()).is_empty());
        let mut cleared = rows[0].clone();
        cleared.fields.remove("Status");
        let plan = plan(&[cleared], &same, &FIELDS, &Taken::default());
        assert_eq!(plan.update[0].1.get("Status"), Some(&Value::Null));
    }
}
