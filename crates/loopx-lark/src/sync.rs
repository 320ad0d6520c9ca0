//! One full reconciliation of the Lark board (`loopx lark sync`).

use loopx_adapters::LarkBoard;
use loopx_app::App;

use crate::api::{Client, LarkError};
use crate::projection::{self, FIELDS};
use crate::reconcile;

/// The name of the table loopx uses (and creates) when `[lark.board] table_id` is not set.
pub const TABLE_NAME: &str = "loopx";

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

/// Brings `board`'s table in step with the kernel: the table (created when none is
/// configured), its fields (missing ones created), and one record per todo.
pub fn sync(app: &App, client: &mut Client, board: &LarkBoard) -> Result<SyncReport, SyncError> {
    let before = client.requests;
    let mut report = SyncReport::default();
    let app_token = board.app_token.as_str();
    let table = match &board.table_id {
        Some(id) => id.clone(),
        // The table loopx made before, found by its name; made now if there is none.
        None => match client
            .tables(app_token)?
            .into_iter()
            .find(|(_, name)| name == TABLE_NAME)
        {
            Some((id, _)) => id,
            None => {
                report.table_created = true;
                client.create_table(app_token, TABLE_NAME)?
            }
        },
    };
    let present = client.fields(app_token, &table)?;
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
                    &table,
                    name,
                    kind,
                    projection::property(name, kind),
                )?;
                report.fields_created.push(name.to_owned());
            }
        }
    }
    let rows = projection::rows(app)?;
    let records = client.records(app_token, &table)?;
    let names: Vec<&str> = FIELDS.iter().map(|(n, _)| *n).collect();
    let plan = reconcile::plan(&rows, &records, &names);
    client.create_records(app_token, &table, &plan.create)?;
    client.update_records(app_token, &table, &plan.update)?;
    client.delete_records(app_token, &table, &plan.delete)?;
    report.created = plan.create.len();
    report.updated = plan.update.len();
    report.deleted = plan.delete.len();
    report.table_id = table;
    report.requests = client.requests - before;
    Ok(report)
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
