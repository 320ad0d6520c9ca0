//! `loopx doctor`'s look at `[lark]`: can loopx reach what the configuration names, and what is
//! missing? Read-only: nothing is created (a missing table or field is what the first sync
//! makes, said as a warning).

use loopx_adapters::LarkConfig;

use crate::api::Client;
use crate::projection::FIELDS;
use crate::sync::TABLE_NAME;

/// How one look went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Ok(String),
    Warn(String),
    Fail(String),
}

/// Looks at everything `config` names. `secret` is `LOOPX_LARK_APP_SECRET`; `callback`
/// whether both callback secrets are set.
pub fn check(config: &LarkConfig, secret: Option<&str>, callback: bool) -> Vec<Finding> {
    let Some(secret) = secret else {
        return vec![Finding::Fail(format!(
            "LOOPX_LARK_APP_SECRET is not set: give the app secret of {} in loopx's environment",
            config.app_id
        ))];
    };
    let mut client = Client::new(&config.base_url, &config.app_id, secret);
    let mut out = Vec::new();
    if let Some(board) = &config.board {
        out.push(table(&mut client, board));
    }
    if let Some(questions) = &config.questions {
        out.push(match client.chat_name(&questions.chat_id) {
            Ok(name) => Finding::Ok(format!(
                "questions go to `{name}` ({}); {} answerer(s)",
                questions.chat_id,
                questions.answerers.len()
            )),
            Err(e) => Finding::Fail(e.to_string()),
        });
        if !callback {
            out.push(Finding::Warn(
                "LOOPX_LARK_VERIFICATION_TOKEN and LOOPX_LARK_ENCRYPT_KEY are not both set: `loopx run` posts no questions".to_owned(),
            ));
        }
    }
    if out.is_empty() {
        out.push(Finding::Warn(
            "[lark] has neither [lark.board] nor [lark.questions]: nothing to do".to_owned(),
        ));
    }
    out
}

fn table(client: &mut Client, board: &loopx_adapters::LarkBoard) -> Finding {
    let tables = match client.tables(&board.app_token) {
        Ok(tables) => tables,
        Err(e) => return Finding::Fail(e.to_string()),
    };
    let found = match &board.table_id {
        Some(id) => tables.iter().find(|(t, _)| t == id),
        None => tables.iter().find(|(_, name)| name == TABLE_NAME),
    };
    let Some((id, name)) = found else {
        return match &board.table_id {
            Some(id) => Finding::Fail(format!(
                "the Base has no table {id}: check lark.board.table_id (the `table=` of its URL)"
            )),
            None => Finding::Warn(format!(
                "the Base has no table `{TABLE_NAME}` yet: the first sync creates it"
            )),
        };
    };
    let fields = match client.fields(&board.app_token, id) {
        Ok(fields) => fields,
        Err(e) => return Finding::Fail(e.to_string()),
    };
    let mut missing = Vec::new();
    for (field, kind) in FIELDS {
        match fields.iter().find(|f| f.name == field) {
            Some(f) if f.kind != kind => {
                return Finding::Fail(format!(
                    "table `{name}`: the field `{field}` is of type {}, the board needs type {kind}; rename or remove it",
                    f.kind
                ));
            }
            Some(_) => {}
            None => missing.push(field),
        }
    }
    match missing.is_empty() {
        true => Finding::Ok(format!("table `{name}` ({id}) has the board's fields")),
        false => Finding::Warn(format!(
            "table `{name}` ({id}) lacks {}: the first sync creates them",
            missing.join(", ")
        )),
    }
}
