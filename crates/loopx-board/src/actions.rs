//! The changes a person can make from the page, each one the application layer's operation,
//! as the CLI's command makes it: answer a gate, add a todo, drop a todo, pause or resume an
//! agent or an account, send an agent a message (`loopx say`). The answer is the record the CLI prints with `--json`. Nothing here
//! touches the store itself.

use loopx_app::quota::HoldTarget;
use loopx_app::{App, AppError, ErrorClass, UsageError};
use loopx_kernel::model::TodoState;
use loopx_kernel::store::{AnswerChoice, FinishTodo, NewTodo};
use serde::Deserialize;
use serde_json::{Value, json};

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
    /// The goal it is for (`g2`); none with one goal active.
    #[serde(default)]
    goal: Option<String>,
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
struct Say {
    agent: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hold {
    agent: Option<String>,
    account: Option<String>,
}

/// What the page asked for, read and checked.
enum Action {
    Answer {
        gate: String,
        choice: AnswerChoice,
        note: Option<String>,
    },
    AddTodo(AddTodo),
    DropTodo(DropTodo),
    Pause(Hold),
    Resume(Hold),
    Say(Say),
}

/// Runs the action at `path` with the JSON `body`; the status and the JSON to send back.
pub(crate) fn act(app: &App, path: &str, body: &[u8]) -> (u16, Value) {
    match action(path, body) {
        Ok(action) => match run(app, action) {
            Ok(done) => (200, done),
            Err(e) => (status_of(&e), error_body(&e)),
        },
        Err((status, why)) => (status, json!({"error": why, "code": "usage"})),
    }
}

fn action(path: &str, body: &[u8]) -> Result<Action, (u16, String)> {
    fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, (u16, String)> {
        serde_json::from_slice(body).map_err(|e| (400, format!("bad request body: {e}")))
    }
    let hold = |body| -> Result<Hold, (u16, String)> {
        let hold: Hold = parse(body)?;
        match (&hold.agent, &hold.account) {
            (Some(_), None) | (None, Some(_)) => Ok(hold),
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
            let choice = match (option, answer) {
                (Some(n), None) => AnswerChoice::Option(n),
                (None, Some(text)) => AnswerChoice::Text(text),
                _ => return Err((400, "give an option or an answer in words".to_owned())),
            };
            Action::Answer { gate, choice, note }
        }
        "/api/todo/add" => Action::AddTodo(parse(body)?),
        "/api/todo/drop" => Action::DropTodo(parse(body)?),
        "/api/pause" => Action::Pause(hold(body)?),
        "/api/resume" => Action::Resume(hold(body)?),
        "/api/say" => Action::Say(parse(body)?),
        _ => return Err((404, format!("no action {path}"))),
    })
}

/// Runs one action; the record it yields, as `--json` prints it.
fn run(app: &App, action: Action) -> Result<Value, AppError> {
    fn doc(key: &str, value: impl serde::Serialize) -> Value {
        json!({ "format_version": 1, key: value })
    }
    Ok(match action {
        Action::Answer { gate, choice, note } => {
            let answered = app.answer_gate(gate.parse()?, choice, note)?;
            doc("gate", answered.gate)
        }
        Action::AddTodo(AddTodo {
            title,
            detail,
            priority,
            goal,
        }) => doc(
            "todo",
            app.add_todo(NewTodo {
                title,
                detail,
                priority,
                goal: goal.as_deref().map(str::parse).transpose()?,
                ..NewTodo::default()
            })?,
        ),
        Action::DropTodo(DropTodo { todo, epoch }) => {
            let finished = app.finish_todo(FinishTodo {
                todo: todo.parse()?,
                to: TodoState::Dropped,
                agent: None,
                epoch,
            })?;
            doc("todo", finished.todo)
        }
        Action::Pause(hold) => doc("hold", app.pause(&target(hold)?)?),
        Action::Resume(hold) => doc("resumed", app.resume(Some(&target(hold)?))?),
        Action::Say(Say { agent, text }) => {
            let said = app.say(agent.parse()?, text)?;
            json!({ "format_version": 1, "message": said.message, "route": said.route })
        }
    })
}

/// The agent or the account a hold names (exactly one: checked when the body was read).
fn target(hold: Hold) -> Result<HoldTarget, AppError> {
    Ok(match (hold.agent, hold.account) {
        (Some(agent), _) => HoldTarget::Agent(agent.parse()?),
        (None, Some(account)) => HoldTarget::Account(account),
        (None, None) => return Err(UsageError::NoHoldTarget.into()),
    })
}

pub(crate) fn status_of(e: &AppError) -> u16 {
    match e.class() {
        ErrorClass::Usage | ErrorClass::Config => 400,
        ErrorClass::Conflict => 409,
        ErrorClass::Refused => 403,
        ErrorClass::Store | ErrorClass::Internal => 503,
    }
}

/// An error as the page shows it: the message and its code name, as the CLI prints them.
pub(crate) fn error_body(e: &AppError) -> Value {
    json!({"error": loopx_app::render_error(e), "code": e.class().as_str()})
}
