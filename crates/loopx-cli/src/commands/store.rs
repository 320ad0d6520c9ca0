//! `loopx store copy --to postgres://…`: moves a project's store to PostgreSQL.

use loopx_kernel::Store;

use crate::args::StoreCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, cmd: StoreCommand) -> Result<(), ExpectedError> {
    let StoreCommand::Copy { to } = cmd;
    let project = ctx.project()?;
    let store = Store::open(&project)?;
    let report = store.copy_to(&to)?;
    let shown = loopx_kernel::store::pg::redact_url(&to);
    if ctx.json {
        let tables: serde_json::Map<String, serde_json::Value> = report
            .tables
            .iter()
            .map(|(name, rows)| ((*name).to_owned(), (*rows).into()))
            .collect();
        return ctx.json_out(&serde_json::json!({
            "format_version": 1,
            "from": store.path().display().to_string(),
            "to": shown,
            "tables": tables,
            "events": report.events,
            "sha256": report.digest,
            "checked": true,
        }));
    }
    ctx.line(format!(
        "Copied {} to {shown}: {} events, every table checked row for row (sha256 {}).",
        store.path().display(),
        report.events,
        &report.digest[..16]
    ))?;
    for (name, rows) in &report.tables {
        if *rows > 0 {
            ctx.line(format!("  {name:<16} {rows:>8} rows"))?;
        }
    }
    ctx.line(
        "Next: stop every `loopx run` of this project, then on each host add to .loopx/loopx.toml",
    )?;
    ctx.line(format!(
        "      [store]\n      url = \"{shown}\"\n      (the password in PGPASSWORD, never in the file). The redb file stays as it was."
    ))
}
