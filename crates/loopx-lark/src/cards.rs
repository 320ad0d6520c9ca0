//! Questions as interactive cards in the chat of `[lark.questions]`: one card per open gate,
//! with a button per option, changed to show the answer once the gate is answered (from Lark,
//! the terminal or the board) or withdrawn.
//!
//! The cards posted are remembered in `.loopx/projections/lark-cards.json` (gate → message), written after
//! each card so that a failure halfway posts nothing twice. Every text that came from an agent
//! or a person (the question, its context) is `plain_text`: Lark renders no markdown, link or
//! mention from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use loopx_adapters::LarkQuestions;
use loopx_app::{App, AppError};
use loopx_kernel::model::{Blocks, Gate, GateState};
use serde_json::{Value, json};

use crate::api::{Client, LarkError};

/// Longest context shown on a card; the rest is in `loopx gate show`.
const CONTEXT: usize = 1500;

/// A card posted for a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub message_id: String,
    /// The card shows the answer (or the withdrawal) already.
    pub closed: bool,
}

/// What one pass over the questions did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CardsReport {
    pub posted: usize,
    pub closed: usize,
}

/// Where the posted cards are remembered.
pub fn cards_file(app: &App) -> PathBuf {
    app.project().projections_dir().join("lark-cards.json")
}

/// Posts a card for every open gate that has none, and closes the card of every gate no
/// longer open.
pub fn post_questions(
    app: &App,
    client: &mut Client,
    questions: &LarkQuestions,
) -> Result<CardsReport, CardsError> {
    let file = cards_file(app);
    let mut posted = load(&file)?;
    let gates = app.gates(true)?;
    let mut report = CardsReport::default();
    for gate in &gates {
        let key = gate.id.to_string();
        match (gate.state, posted.get(&key)) {
            (GateState::Open, None) => {
                let answerable = questions.approvals || !loopx_app::gate::is_approval(gate);
                let message_id =
                    client.send_card(&questions.chat_id, &question_card(gate, answerable))?;
                posted.insert(
                    key,
                    Posted {
                        message_id,
                        closed: false,
                    },
                );
                save(&file, &posted)?;
                report.posted += 1;
            }
            (GateState::Answered | GateState::Withdrawn, Some(card)) if !card.closed => {
                client.update_card(&card.message_id, &closed_card(gate))?;
                posted.insert(
                    key,
                    Posted {
                        message_id: card.message_id.clone(),
                        closed: true,
                    },
                );
                save(&file, &posted)?;
                report.closed += 1;
            }
            _ => {}
        }
    }
    Ok(report)
}

#[derive(Debug, thiserror::Error)]
pub enum CardsError {
    #[error(transparent)]
    Lark(#[from] LarkError),
    #[error(transparent)]
    App(#[from] AppError),
    #[error("{path}: {why}")]
    File { path: String, why: String },
}

/// The card of an open question.
pub fn question_card(gate: &Gate, answerable: bool) -> Value {
    let mut elements = vec![plain(&gate.question)];
    let context = gate.context.trim();
    if !context.is_empty() {
        let clipped: String = context.chars().take(CONTEXT).collect();
        elements.push(plain(&clipped));
    }
    elements.push(plain(&format!(
        "Asked by {}; {}.",
        gate.asked_by,
        holds(&gate.blocks)
    )));
    if answerable && !gate.options.is_empty() {
        for (i, option) in gate.options.iter().enumerate() {
            let n = i + 1;
            elements.push(json!({
                "tag": "button",
                "text": {"tag": "plain_text", "content": format!("{n}. {option}")},
                "type": if n == 1 { "primary" } else { "default" },
                "behaviors": [{"type": "callback", "value": {"gate": gate.id.to_string(), "option": n}}],
            }));
        }
    } else {
        let why = match answerable {
            true => "It takes an answer in words",
            false => "An approval is answered at the machine",
        };
        elements.push(plain(&format!("{why}: {}", gate.answer_command())));
    }
    card(&format!("loopx asks ({})", gate.id), "orange", elements)
}

/// The card of a question answered or withdrawn: the answer and who gave it, no buttons.
pub fn closed_card(gate: &Gate) -> Value {
    let outcome = match &gate.answer {
        Some(a) => format!("Answered \"{}\" by {} at {}.", a.text, a.by, a.at),
        None => "Withdrawn.".to_owned(),
    };
    card(
        &format!("loopx asked ({})", gate.id),
        "green",
        vec![plain(&gate.question), plain(&outcome)],
    )
}

fn card(title: &str, template: &str, elements: Vec<Value>) -> Value {
    json!({
        "schema": "2.0",
        "config": {"update_multi": true},
        "header": {"title": {"tag": "plain_text", "content": title}, "template": template},
        "body": {"elements": elements},
    })
}

fn plain(text: &str) -> Value {
    json!({"tag": "div", "text": {"tag": "plain_text", "content": text}})
}

fn holds(blocks: &Blocks) -> String {
    match blocks {
        Blocks::Global => "it holds back every agent".to_owned(),
        Blocks::Agent(a) => format!("it holds back {a}"),
        Blocks::Todos(todos) => {
            let ids: Vec<String> = todos.iter().map(ToString::to_string).collect();
            format!("it holds back {}", ids.join(", "))
        }
        Blocks::Nothing => "it holds nothing back".to_owned(),
    }
}

fn load(path: &Path) -> Result<BTreeMap<String, Posted>, CardsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(file_error(path, e.to_string())),
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        file_error(
            path,
            format!("{e}; remove it and loopx posts the open questions again"),
        )
    })?;
    let mut out = BTreeMap::new();
    for (gate, card) in value.as_object().into_iter().flatten() {
        if let Some(id) = card["message_id"].as_str() {
            out.insert(
                gate.clone(),
                Posted {
                    message_id: id.to_owned(),
                    closed: card["closed"].as_bool().unwrap_or(false),
                },
            );
        }
    }
    Ok(out)
}

fn save(path: &Path, posted: &BTreeMap<String, Posted>) -> Result<(), CardsError> {
    let value: serde_json::Map<String, Value> = posted
        .iter()
        .map(|(gate, p)| {
            (
                gate.clone(),
                json!({"message_id": p.message_id, "closed": p.closed}),
            )
        })
        .collect();
    loopx_app::projection::write_atomically(path, Value::Object(value).to_string().as_bytes())
        .map_err(|e| file_error(path, e.to_string()))
}

fn file_error(path: &Path, why: String) -> CardsError {
    CardsError::File {
        path: path.display().to_string(),
        why,
    }
}
