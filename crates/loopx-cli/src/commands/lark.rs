//! `loopx lark sync`: one full reconciliation of the Lark board (`docs/lark.md`).

use std::io::Write;

use crate::args::LarkCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::exit_code;

/// Where the app secret comes from; never from a file.
const SECRET_VAR: &str = "LOOPX_LARK_APP_SECRET";

pub fn run(ctx: &mut Ctx, cmd: LarkCommand) -> Result<(), ExpectedError> {
    match cmd {
        LarkCommand::Sync => sync(ctx),
    }
}

fn sync(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    let Some(lark) = app.lark_config()? else {
        return Err(ExpectedError::Usage(
            "no [lark] in .loopx/loopx.toml: set app_id and [lark.board] app_token (docs/lark.md)"
                .to_owned(),
        ));
    };
    let Some(board) = &lark.board else {
        return Err(ExpectedError::Usage(
            "no [lark.board] in .loopx/loopx.toml: set app_token to the Base's token (docs/lark.md)"
                .to_owned(),
        ));
    };
    let mut client = client(&lark)?;
    let (people, answers, callback) = listened(&app, &lark);
    let mut board_sync = loopx_lark::Board::new(board.clone()).answered(answers);
    let report = match board_sync.sync(&app, &mut client, &people) {
        Ok(report) => report,
        Err(loopx_lark::SyncError::App(e)) => return Err(e.into()),
        Err(loopx_lark::SyncError::Lark(e)) if e.is_transient() => {
            return Err(ExpectedError::Reported {
                summary: format!("{e}; nothing in loopx changed, run it again"),
                code: exit_code::INTERNAL,
            });
        }
        Err(e) => return Err(ExpectedError::Config(e.to_string())),
    };
    // The changes it put back are said in the questions' chat, as `loopx run` says them.
    if let Some(questions) = lark.questions.as_ref().filter(|_| callback) {
        let told = loopx_lark::putback::tell(
            &app,
            &mut client,
            &questions.chat_id,
            &report.taken.put_back,
        );
        if let Err(e) = told {
            let line = format!("note: could not say in Lark's chat what was put back: {e}");
            let _ = writeln!(
                std::io::stderr(),
                "{}",
                crate::output::safe_line(&line, false)
            );
        }
    }
    shown(ctx, &report)
}

/// Who made the table's changes and where questions are answered, as a running `loopx run`
/// hears them; and whether its callback listener is configured (both secrets set).
fn listened<'a>(
    app: &'a loopx_app::App,
    lark: &'a loopx_adapters::LarkConfig,
) -> (
    loopx_lark::flowback::People<'a>,
    loopx_lark::projection::Answers,
    bool,
) {
    // The changes people made in the table are taken or refused by the same rules as the
    // board `loopx run` keeps (`docs/lark.md`).
    // Who made a change is what the record-change events a running `loopx run` heard say; they
    // are configured when its listener would run (questions and both callback secrets).
    let callback = ["LOOPX_LARK_VERIFICATION_TOKEN", "LOOPX_LARK_ENCRYPT_KEY"]
        .iter()
        .all(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()));
    let people = loopx_lark::flowback::People {
        project: app.project(),
        loopx_exe: app.loopx_exe(),
        answerers: lark.questions.as_ref().map_or(&[], |q| &q.answerers),
        events: (lark.questions.is_some() && callback).then(|| {
            (
                loopx_lark::changes::file(app.project()),
                std::time::Duration::ZERO,
            )
        }),
    };
    // Questions are answered on cards where a running `loopx run` posts them: with
    // `[lark.questions]` and both callback secrets.
    let answers = loopx_lark::projection::Answers {
        cards: lark.questions.is_some() && callback,
        approvals: lark.questions.as_ref().is_some_and(|q| q.approvals),
    };
    (people, answers, callback)
}

/// A client of Lark's API with the app's secret from loopx's environment.
fn client(lark: &loopx_adapters::LarkConfig) -> Result<loopx_lark::Client, ExpectedError> {
    let secret = std::env::var(SECRET_VAR).unwrap_or_default();
    if secret.trim().is_empty() {
        return Err(ExpectedError::Usage(format!(
            "{SECRET_VAR} is not set: give the app secret of {} (the developer console's Credentials page) in loopx's environment",
            lark.app_id
        )));
    }
    Ok(loopx_lark::Client::new(
        &lark.base_url,
        &lark.app_id,
        secret.trim(),
    ))
}

/// What a sync did: the JSON document, or a line for each change it took or refused and a
/// count of the rest.
fn shown(ctx: &mut Ctx, report: &loopx_lark::SyncReport) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&serde_json::json!({
            "format_version": 1,
            "table_id": report.table_id,
            "table_created": report.table_created,
            "fields_created": report.fields_created,
            "created": report.created,
            "updated": report.updated,
            "deleted": report.deleted,
            "taken": report.taken.applied,
            "refused": report.taken.refused,
            "requests": report.requests,
        }));
    }
    if report.table_created {
        ctx.line(format!(
            "Created the table `{}` ({}); loopx finds it by that name, or set [lark.board] table_id = \"{}\".",
            loopx_lark::sync::TABLE_NAME,
            report.table_id,
            report.table_id
        ))?;
    }
    for line in &report.taken.applied {
        ctx.line(format!("From Lark: {line}."))?;
    }
    for line in &report.taken.refused {
        ctx.line(format!("Refused from Lark (put back): {line}."))?;
    }
    if !report.fields_created.is_empty() {
        ctx.line(format!(
            "Added fields: {}.",
            report.fields_created.join(", ")
        ))?;
    }
    ctx.line(format!(
        "Lark table {}: {} created, {} updated, {} deleted ({} requests).",
        report.table_id, report.created, report.updated, report.deleted, report.requests
    ))
}
