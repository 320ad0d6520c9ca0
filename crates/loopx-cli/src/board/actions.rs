//! The changes a person can make from the page, each one a CLI command run through a context
//! that captures its JSON: answer a gate, add a todo, drop a todo, pause or resume an agent or
//! an account. Nothing here touches the store itself.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::{Command, FinishArgs, GateCommand, QuotaCommand, TodoCommand};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::exit_code;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    gate: String,
    /// An option's place (a button), never guessed from text.
    option: Option<u32>,
    /// In words (read as `loopx gate answer` reads it): only a gate without options takes it.
    answer: Option<String>,
    /// Guidance beside the chosen option (`--note`).
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddTodo {
    title: String,
    #[serde(default)]
    detail: String,
    #[serde(default)]
    priority: i32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DropTodo {
    todo: String,
    /// The claim the person saw, when the todo is claimed: a newer one is a conflict.
    epoch: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hold {
    agent: Option<String>,
    account: Option<String>,
}

/// Runs the action at `path` with the JSON `body`; the status and the JSON to send back.
pub(crate) fn act(dir: &Path, path: &str, body: &[u8]) -> (u16, Value) {
    match command(path, body) {
        Ok(command) => match run(dir, command) {
            Ok(done) => (200, done),
            Err(e) => (status_of(&e), error_body(&e)),
        },
        Err((status, why)) => (status, json!({"error": why, "code": "usage"})),
    }
}

fn command(path: &str, body: &[u8]) -> Result<Command, (u16, String)> {
    fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, (u16, String)> {
        serde_json::from_slice(body).map_err(|e| (400, format!("bad request body: {e}")))
    }
    let hold = |body| -> Result<(Option<String>, Option<String>), (u16, String)> {
        let Hold { agent, account } = parse(body)?;
        match (&agent, &account) {
            (Some(_), None) | (None, Some(_)) => Ok((agent, account)),
            _ => Err((400, "name one agent or one account".to_owned())),
        }
    };
    Ok(match path {
        "/api/answer" => {
            let Answer {
                gate,
                option,
                answer,
                note,
            } = parse(body)?;
            if option.is_some() == answer.is_some() {
                return Err((400, "give an option or an answer in words".to_owned()));
            }
            Command::Gate(GateCommand::Answer {
                id: gate,
                answer,
                option,
                note,
            })
        }
        "/api/todo/add" => {
            let AddTodo {
                title,
                detail,
                priority,
            } = parse(body)?;
            Command::Todo(TodoCommand::Add {
                title,
                detail,
                priority,
                needs: vec![],
                after: vec![],
                role: None,
                goal: None,
            })
        }
        "/api/todo/drop" => {
            let DropTodo { todo, epoch } = parse(body)?;
            Command::Todo(TodoCommand::Drop(FinishArgs {
                id: todo,
                agent: None,
                epoch,
            }))
        }
        "/api/pause" => {
            let (agent, account) = hold(body)?;
            Command::Quota(QuotaCommand::Pause { agent, account })
        }
        "/api/resume" => {
            let (agent, account) = hold(body)?;
            Command::Quota(QuotaCommand::Resume { agent, account })
        }
        _ => return Err((404, format!("no action {path}"))),
    })
}

fn run(dir: &Path, command: Command) -> Result<Value, ExpectedError> {
    let (mut ctx, captured) = Ctx::capturing(dir.to_path_buf());
    crate::commands::dispatch(&mut ctx, command)?;
    ctx.flush()?;
    Ok(serde_json::from_slice(&captured.take()).unwrap_or(Value::Null))
}

fn status_of(e: &ExpectedError) -> u16 {
    match e.exit_code() {
        exit_code::USAGE | exit_code::CONFIG => 400,
        exit_code::CONFLICT => 409,
        exit_code::REFUSED => 403,
        _ => 503,
    }
}

/// An error as the page shows it: the CLI's own message and its code name.
pub(crate) fn error_body(e: &ExpectedError) -> Value {
    json!({"error": e.render(), "code": e.code_name()})
}
