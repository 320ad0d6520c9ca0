//! Who changed which cell of the board, as Lark's record-change events say: the only word on a
//! change's author that loopx believes.
//!
//! A record's `last_modified_by` names whoever touched it last, in any column: a person allowed
//! to change the board who then edits her own note in a record someone else moved to Dropped
//! would have that drop credited to her. So a change to one of loopx's fields is taken only when
//! a `drive.file.bitable_record_changed_v1` event (signed, checked as a card press is, by
//! [`crate::callback`]) names who set that very cell to the value it holds now
//! ([`crate::flowback`]).
//!
//! The listener records each event's cells here ([`record`]); a pass of the board reads them
//! ([`Held::load`]) and afterwards forgets what it dealt with ([`settle`]). They are kept in
//! `.loopx/projections/lark-changes.json` so that `loopx lark sync` sees what the listener of a
//! running `loopx run` heard. A cell is believed only while it can still describe the table:
//!
//! - an event made more than [`MAX_EVENT_AGE`] before it arrived is not recorded (a late
//!   retry, or a replay of a captured one);
//! - an event id is recorded once ([`KEEP`] long): a second delivery changes nothing;
//! - a cell older than loopx's own last write of that cell is stale (loopx wrote over it);
//! - a pass forgets every cell heard before it read the table, but those it left waiting;
//! - nothing is kept longer than [`KEEP`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The event Lark sends for a change to a record of a subscribed Base.
pub const EVENT_TYPE: &str = "drive.file.bitable_record_changed_v1";
/// An event made longer ago than this when it arrives is not believed.
pub const MAX_EVENT_AGE: Duration = Duration::from_secs(300);
/// How long a cell, a write of loopx's or an event id is remembered.
const KEEP: Duration = Duration::from_secs(600);
/// Ids Lark gives records, fields and tables: letters, digits, `_` (they also name no path).
const MAX_ID: usize = 64;

/// One cell a person set, as an event says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub table: String,
    pub record: String,
    /// The field's id (`fld…`), not its name.
    pub field: String,
    /// The open_id of the person who made the change; empty when Lark named none.
    pub operator: String,
    /// The value after the change (`field_value` decoded; `null` for a cleared cell).
    pub after: Value,
    /// When Lark made the event (its `create_time`, Unix ms).
    pub at_ms: u64,
    /// When the listener heard it (Unix ms, this machine's clock).
    pub received_ms: u64,
}

/// A checked `drive.file.bitable_record_changed_v1` event.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordChanged {
    pub event_id: String,
    /// The Base's token.
    pub file_token: String,
    pub cells: Vec<Cell>,
}

/// `drive.file.bitable_record_changed_v1` as `docs/lark.md` cites it: `{header: {event_id,
/// create_time (ms, a string)}, event: {file_token, table_id, operator_id: {open_id},
/// action_list: [{record_id, action, after_value: [{field_id, field_value}]}]}}`.
#[derive(Deserialize)]
struct Event {
    header: EventHeader,
    event: Changes,
}

#[derive(Deserialize)]
struct EventHeader {
    event_id: String,
    create_time: String,
}

#[derive(Deserialize)]
struct Changes {
    file_token: String,
    table_id: String,
    operator_id: Option<OperatorId>,
    action_list: Vec<Action>,
}

#[derive(Deserialize)]
struct OperatorId {
    open_id: Option<String>,
}

#[derive(Deserialize)]
struct Action {
    record_id: String,
    action: Option<String>,
    /// Empty (or `null`) for a deleted record.
    after_value: Option<Vec<After>>,
}

#[derive(Deserialize)]
struct After {
    field_id: String,
    #[serde(default)]
    field_value: Value,
}

/// Reads the inside of a record-change event; why not, when it is not one loopx can use.
pub fn parse(event: &Value, received_ms: u64) -> Result<RecordChanged, String> {
    let Event { header, event: e } = crate::answers::from_value(event)
        .map_err(|why| format!("a record-change event not as documented: {why}"))?;
    if header.event_id.is_empty() {
        return Err("a record-change event without an event_id".into());
    }
    let at_ms: u64 = header.create_time.parse().map_err(|_| {
        format!(
            "`header.create_time` is not Unix milliseconds: {:?}",
            header.create_time
        )
    })?;
    let file_token = id(e.file_token, "file_token")?;
    let table = id(e.table_id, "table_id")?;
    let operator = e.operator_id.and_then(|o| o.open_id).unwrap_or_default();
    let mut cells = Vec::new();
    for action in e.action_list {
        let record = id(action.record_id, "record_id")?;
        // A deleted record is written again by the next pass; its values say nothing.
        if action.action.as_deref() == Some("record_deleted") {
            continue;
        }
        for value in action.after_value.into_iter().flatten() {
            cells.push(Cell {
                table: table.clone(),
                record: record.clone(),
                field: id(value.field_id, "field_id")?,
                operator: operator.clone(),
                after: decode(value.field_value),
                at_ms,
                received_ms,
            });
        }
    }
    Ok(RecordChanged {
        event_id: header.event_id,
        file_token,
        cells,
    })
}

/// An id of Lark's, refused when it is not one.
fn id(s: String, what: &str) -> Result<String, String> {
    if !s.is_empty()
        && s.len() <= MAX_ID
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        Ok(s)
    } else {
        Err(format!("`{what}` is not an id of Lark's: {s:?}"))
    }
}

/// `field_value` is the cell's JSON as a string; a string that is not JSON is the text itself.
fn decode(value: Value) -> Value {
    match value {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    }
}

/// The cells heard and not yet dealt with, and loopx's own last writes: the file, as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Held {
    cells: Vec<Cell>,
    written: Vec<Written>,
    events: Vec<Heard>,
}

/// When loopx last wrote a cell (Unix ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Written {
    table: String,
    record: String,
    field: String,
    at_ms: u64,
}

/// An event id recorded, with when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Heard {
    event: String,
    at_ms: u64,
}

impl Held {
    /// What is held for `path`'s project; nothing when the file is missing or unreadable (then
    /// no change is attributed, which only refuses).
    pub fn load(path: &Path) -> Held {
        let Ok(bytes) = std::fs::read(path) else {
            return Held::default();
        };
        match crate::answers::from_bytes(&bytes) {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "unreadable record-change events: none believed");
                Held::default()
            }
        }
    }

    /// The newest cell heard for `field` of `record` that loopx did not write over since.
    pub fn newest(&self, table: &str, record: &str, field: &str) -> Option<&Cell> {
        let written = self
            .written
            .iter()
            .filter(|w| w.table == table && w.record == record && w.field == field)
            .map(|w| w.at_ms)
            .max()
            .unwrap_or(0);
        self.cells
            .iter()
            .filter(|c| c.table == table && c.record == record && c.field == field)
            .filter(|c| c.at_ms > written)
            .max_by_key(|c| (c.at_ms, c.received_ms))
    }

    fn prune(&mut self, now_ms: u64) {
        let keep = |at: u64| now_ms.saturating_sub(at) <= KEEP.as_millis() as u64;
        self.cells.retain(|c| keep(c.received_ms));
        self.written.retain(|w| keep(w.at_ms));
        self.events.retain(|e| keep(e.at_ms));
    }

    fn save(&self, path: &Path) -> Result<(), String> {
        let bytes = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        loopx_app::projection::write_atomically(path, &bytes)
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Where a project's record-change events are kept.
pub fn file(project: &loopx_kernel::Project) -> PathBuf {
    project.projections_dir().join("lark-changes.json")
}

/// The listener and the board's passes of one process take turns at the file.
static FILE: Mutex<()> = Mutex::new(());

/// Records the cells of `changed` (heard at `now_ms`); false when the event was heard already
/// or is too old to believe.
pub fn record(path: &Path, changed: &RecordChanged, now_ms: u64) -> Result<bool, String> {
    let _turn = FILE.lock().unwrap_or_else(|e| e.into_inner());
    let too_old = changed
        .cells
        .first()
        .is_some_and(|c| now_ms.saturating_sub(c.at_ms) > MAX_EVENT_AGE.as_millis() as u64);
    if too_old {
        return Ok(false);
    }
    let mut held = Held::load(path);
    held.prune(now_ms);
    if held.events.iter().any(|e| e.event == changed.event_id) {
        return Ok(false);
    }
    held.events.push(Heard {
        event: changed.event_id.clone(),
        at_ms: now_ms,
    });
    held.cells.extend(changed.cells.iter().cloned());
    held.save(path)?;
    Ok(true)
}

/// After a pass that read `table` at `read_ms`: forgets the cells heard before then, but those
/// of `waiting` (record, field) that the pass left for later, and notes that loopx wrote the
/// `written` cells at `now_ms`.
pub fn settle(
    path: &Path,
    table: &str,
    waiting: &[(String, String)],
    written: &[(String, String)],
    read_ms: u64,
    now_ms: u64,
) -> Result<(), String> {
    let _turn = FILE.lock().unwrap_or_else(|e| e.into_inner());
    let mut held = Held::load(path);
    held.cells.retain(|c| {
        c.table != table
            || c.received_ms > read_ms
            || waiting.iter().any(|(r, f)| r == &c.record && f == &c.field)
    });
    for (record, field) in written {
        held.written.push(Written {
            table: table.to_owned(),
            record: record.clone(),
            field: field.clone(),
            at_ms: now_ms,
        });
    }
    held.prune(now_ms);
    held.save(path)
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(id: &str, who: &str, record: &str, field: &str, value: &str, at: u64) -> Value {
        json!({
            "schema": "2.0",
            "header": {"event_id": id, "create_time": at.to_string(), "event_type": EVENT_TYPE},
            "event": {
                "file_token": "bascnT", "file_type": "bitable", "table_id": "tblT", "revision": 3,
                "operator_id": {"open_id": who},
                "action_list": [{"action": "record_edited", "record_id": record,
                    "before_value": [], "after_value": [{"field_id": field, "field_value": value}]}],
            },
        })
    }

    #[test]
    fn the_newest_cell_names_its_author_and_a_write_of_loopx_makes_older_ones_stale() {
        let dir = std::env::temp_dir().join(format!("loopx-changes-{}", std::process::id()));
        let path = dir.join("lark-changes.json");
        let now = now_ms();
        let eve = parse(
            &event("e1", "ou_eve", "rec1", "fldS", "\"Dropped\"", now - 2000),
            now,
        )
        .expect("an event");
        let ann = parse(
            &event("e2", "ou_ann", "rec1", "fldN", "\"mine\"", now - 1000),
            now,
        )
        .expect("an event");
        assert_eq!(record(&path, &eve, now), Ok(true));
        assert_eq!(record(&path, &ann, now), Ok(true));
        assert_eq!(record(&path, &ann, now), Ok(false), "heard once");
        let held = Held::load(&path);
        let status = held.newest("tblT", "rec1", "fldS").expect("Eve's");
        assert_eq!(
            (status.operator.as_str(), &status.after),
            ("ou_eve", &json!("Dropped"))
        );
        assert!(held.newest("tblOther", "rec1", "fldS").is_none());
        settle(
            &path,
            "tblT",
            &[],
            &[("rec1".into(), "fldS".into())],
            0,
            now,
        )
        .expect("settled");
        assert!(Held::load(&path).newest("tblT", "rec1", "fldS").is_none());
        let old = parse(
            &event("e3", "ou_ann", "rec1", "fldS", "1", now - 400_000),
            now,
        )
        .expect("an event");
        assert_eq!(record(&path, &old, now), Ok(false), "too old to believe");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_field_of_another_type_is_named_with_what_lark_sent() {
        let mut bad = event("e1", "ou_a", "rec1", "fldS", "1", 1);
        bad["event"]["action_list"][0]["after_value"][0]["field_id"] = json!(7);
        let why = parse(&bad, 1).expect_err("refused");
        assert!(
            why.contains("event.action_list[0].after_value[0].field_id: invalid type: integer `7`"),
            "{why}"
        );
        let mut bad = event("e1", "ou_a", "rec1", "fldS", "1", 1);
        bad["header"]["create_time"] = json!(1_700_000_000_000_u64);
        let why = parse(&bad, 1).expect_err("refused");
        assert!(
            why.contains("header.create_time: invalid type: integer"),
            "{why}"
        );
    }

    #[test]
    fn an_event_naming_no_id_of_lark_is_refused() {
        let bad = event("e1", "ou_a", "../../x", "fldS", "1", 1);
        assert!(parse(&bad, 1).is_err_and(|e| e.contains("record_id")));
    }
}
