//! One reconciliation of the Lark board: `loopx lark sync` runs one, `loopx run` one per pass.

use loopx_adapters::LarkBoard;
use loopx_app::App;

use std::collections::BTreeMap;

use crate::api::{Client, LarkError};
use crate::changes::{self, Held};
use crate::flowback::{Authors, People, Taken, Waiting};
use crate::projection::{self, FIELDS};
use crate::reconcile;

/// The name of the table loopx uses (and creates) when `[lark.board] table_id` is not set.
pub const TABLE_NAME: &str = "loopx";
/// The Kanban view of a table loopx makes.
pub const KANBAN_VIEW: &str = "Kanban";

/// What one reconciliation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub table_id: String,
    /// loopx created the table (no `table_id` was configured, and the Base had no table
    /// named [`TABLE_NAME`]).
    pub table_created: bool,
    pub fields_created: Vec<String>,
    pub created: usize,
    pub updated: usize,
    pub deleted: usize,
    /// What people changed in Lark, taken or refused.
    pub taken: Taken,
    /// Requests made to Lark, token requests included.
    pub requests: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Lark(#[from] LarkError),
    #[error(transparent)]
    App(#[from] loopx_app::AppError),
    #[error(
        "the table's field `{name}` is of type {found}, and the board needs type {want} ({what}); rename or remove that field in Lark"
    )]
    FieldType {
        name: String,
        found: i64,
        want: i64,
        what: &'static str,
    },
}

/// A board's table, once found, and whether its fields are known to be there: a pass after the
/// first reads only the records.
#[derive(Debug)]
pub struct Board {
    config: LarkBoard,
    table: Option<String>,
    fields_ready: bool,
    /// The table's fields: name → id (record-change events name fields by id).
    field_ids: BTreeMap<String, String>,
    /// Changes no event accounts for yet, between passes.
    waiting: Waiting,
    /// Lark was asked to send the Base's record-change events.
    subscribed: bool,
    /// Where its questions are answered, for the Question cell's words.
    answers: projection::Answers,
}

impl Board {
    pub fn new(config: LarkBoard) -> Board {
        Board {
            table: config.table_id.clone(),
            config,
            fields_ready: false,
            field_ids: BTreeMap::new(),
            waiting: Waiting::default(),
            subscribed: false,
            answers: projection::Answers::default(),
        }
    }

    /// The board whose questions are answered as `answers` says (on cards in the chat, or
    /// only on the local board and in the terminal).
    pub fn answered(self, answers: projection::Answers) -> Board {
        Board { answers, ..self }
    }

    /// Brings the table in step with the kernel: the table (created when none is configured
    /// or found), its fields (missing ones created), the changes people made that `people`
    /// allows, and one record per todo.
    pub fn sync(
        &mut self,
        app: &App,
        client: &mut Client,
        people: &People<'_>,
    ) -> Result<SyncReport, SyncError> {
        let before = client.requests;
        let mut report = SyncReport::default();
        let app_token = self.config.app_token.clone();
        let table = match &self.table {
            Some(id) => id.clone(),
            // The table loopx made before, found by its name; made now if there is none.
            None => match client
                .tables(&app_token)?
                .into_iter()
                .find(|(_, name)| name == TABLE_NAME)
            {
                Some((id, _)) => id,
                None => {
                    report.table_created = true;
                    client.create_table(&app_token, TABLE_NAME)?
                }
            },
        };
        self.table = Some(table.clone());
        if !self.fields_ready {
            report.fields_created = ensure_fields(client, &app_token, &table)?;
            self.field_ids = client
                .fields(&app_token, &table)?
                .into_iter()
                .map(|f| (f.name, f.id))
                .collect();
            // A table loopx made gets a Kanban view; Lark groups it by the table's single
            // select, and Status is the board's only one.
            if report.table_created {
                client.create_view(&app_token, &table, KANBAN_VIEW, "kanban")?;
            }
            self.fields_ready = true;
        }
        if people.events.is_some() && !self.subscribed {
            self.subscribed = subscribe(client, &app_token);
        }
        let records = client.records(&app_token, &table)?;
        let read_ms = changes::now_ms();
        let shown = projection::rows(app, self.answers)?;
        let held = people.events.as_ref().map(|(path, _)| Held::load(path));
        let mut authors = Authors {
            held: held.as_ref(),
            table: &table,
            field_ids: &self.field_ids,
            waiting: &mut self.waiting,
            grace: people.events.as_ref().map_or(Default::default(), |e| e.1),
        };
        report.taken = crate::flowback::take(people, &shown, &records, &mut authors);
        let waiting = self.waiting.cells();
        self.waiting.end_pass();
        // What people changed is in the kernel now (or refused): show the kernel as it is.
        let rows = match report.taken.applied.is_empty() {
            true => shown,
            false => projection::rows(app, self.answers)?,
        };
        let names: Vec<&str> = FIELDS.iter().map(|(n, _)| *n).collect();
        let plan = reconcile::plan(&rows, &records, &names, &report.taken);
        client.create_records(&app_token, &table, &plan.create)?;
        client.update_records(&app_token, &table, &plan.update)?;
        client.delete_records(&app_token, &table, &plan.delete)?;
        if let Some((path, _)) = &people.events {
            let written: Vec<(String, String)> = plan
                .update
                .iter()
                .flat_map(|(record, fields)| {
                    let ids = &self.field_ids;
                    fields.keys().filter_map(move |name| {
                        ids.get(name).map(|id| (record.clone(), id.clone()))
                    })
                })
                .collect();
            let now = changes::now_ms();
            if let Err(why) = changes::settle(path, &table, &waiting, &written, read_ms, now) {
                tracing::warn!(%why, "cannot note what the pass did with the record-change events");
            }
        }
        report.created = plan.create.len();
        report.updated = plan.update.len();
        report.deleted = plan.delete.len();
        report.table_id = table;
        report.requests = client.requests - before;
        Ok(report)
    }
}

/// Asks Lark for the Base's record-change events; whether it agreed. A refusal (the app lacks
/// the permission) is logged and asked again next pass: meanwhile no change can be attributed,
/// so every change is refused.
fn subscribe(client: &mut Client, app_token: &str) -> bool {
    match client.subscribe_base(app_token) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "cannot subscribe to the Base's record changes: changes made in Lark are refused");
            false
        }
    }
}

/// Creates the board's missing fields; their names. A field of the board's name and another
/// type stops the sync.
fn ensure_fields(
    client: &mut Client,
    app_token: &str,
    table: &str,
) -> Result<Vec<String>, SyncError> {
    let present = client.fields(app_token, table)?;
    let mut created = Vec::new();
    for (name, kind) in FIELDS {
        match present.iter().find(|f| f.name == name) {
            Some(f) if f.kind == kind => {}
            Some(f) => {
                return Err(SyncError::FieldType {
                    name: name.to_owned(),
                    found: f.kind,
                    want: kind,
                    what: type_name(kind),
                });
            }
            None => {
                client.create_field(
                    app_token,
                    table,
                    name,
                    kind,
                    projection::property(name, kind),
                )?;
                created.push(name.to_owned());
            }
        }
    }
    Ok(created)
}

fn type_name(kind: i64) -> &'static str {
    match kind {
        projection::TEXT => "text",
        projection::NUMBER => "number",
        projection::SINGLE_SELECT => "single select",
        projection::DATE => "date",
        _ => "other",
    }
}
