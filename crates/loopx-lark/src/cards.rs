//! Questions as interactive cards in the chat of `[lark.questions]`: one card per open gate,
//! with a button per option, changed to show the answer once the gate is answered (from Lark,
//! the terminal or the board) or withdrawn.
//!
//! The cards posted are remembered in `.loopx/projections/lark-cards.json` (gate → message), written after
//! each card so that a failure halfway posts nothing twice. Every text that came from an agent
//! or a person (the question, its context) is `plain_text`: Lark renders no markdown, link or
//! mention from it.
//!
//! Agents' questions are posted at a bounded rate: one agent's slices opened 3,000 questions in
//! 40 s, each a card ("Needs you (3001)"). In any [`WINDOW_MS`], at most [`AGENT_CARDS`] cards
//! of agents' questions are posted, at most [`CARDS_PER_AGENT`] of one agent's; the rest wait,
//! listed on one digest card that is kept up to date, and get their own cards as the window
//! frees. A person's questions and loopx's own (a scope violation, a stall) are never held;
//! loopx's question about an agent's monitor counts as that agent's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use loopx_adapters::LarkQuestions;
use loopx_app::{App, AppError};
use loopx_kernel::model::{Blocks, Gate, GateState};
use loopx_vocab::Actor;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::{Client, LarkError};
use crate::words::{Names, gate_text, quote};

/// Longest context shown on a card; the rest is in `loopx gate show`.
const CONTEXT: usize = 1500;
/// The window over which agents' cards are counted.
pub const WINDOW_MS: u64 = 10 * 60 * 1000;
/// Cards of agents' questions posted in one window.
pub const AGENT_CARDS: usize = 10;
/// Cards of one agent's questions posted in one window.
pub const CARDS_PER_AGENT: usize = 5;
/// Questions the digest card lists by name; it counts the rest.
const DIGEST_LINES: usize = 20;
/// The key of the digest card among the gates' in the cards file.
const DIGEST: &str = "digest";

/// A card posted for a gate, as `lark-cards.json` keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Posted {
    pub message_id: String,
    #[serde(default)]
    /// The card shows the answer (or the withdrawal) already.
    pub closed: bool,
    /// When it was posted (ms since the epoch; 0 in a file an older loopx wrote).
    #[serde(default)]
    pub posted_at: u64,
    /// Who asked: an agent's cards count against the rate.
    #[serde(default)]
    pub asked_by: String,
    /// On the digest card: the gates it lists now.
    #[serde(default)]
    pub waiting: Vec<String>,
}

/// What one pass over the questions did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CardsReport {
    pub posted: usize,
    pub closed: usize,
    /// Agents' questions held back by the rate, listed on the digest card.
    pub waiting: usize,
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
    let mut posted: BTreeMap<String, Posted> = read_json(&file)?;
    // Each question with whom it counts against, a person's and loopx's first: they are never
    // held back by the agents' rate.
    let planted = monitors_planted(app)?;
    let names = Names::load(app)?;
    let mut gates: Vec<(Gate, String)> = app
        .gates(true)?
        .into_iter()
        .map(|g| {
            let asker = asker(&planted, &g);
            (g, asker)
        })
        .collect();
    gates.sort_by_key(|(g, asker)| (Actor::of(asker).is_agent(), g.id));
    let now = app.now().0;
    let mut report = CardsReport::default();
    let mut waiting = Vec::new();
    for (gate, asker) in &gates {
        let key = gate.id.to_string();
        match (gate.state, posted.get(&key)) {
            (GateState::Open, None) => {
                if Actor::of(asker).is_agent() && !room_for(&posted, asker, now) {
                    waiting.push(gate);
                    continue;
                }
                let card = question_card(gate, questions.approvals, &names);
                let message_id = client.send_card(&questions.chat_id, &card)?;
                posted.insert(
                    key,
                    Posted {
                        message_id,
                        closed: false,
                        posted_at: now,
                        asked_by: asker.clone(),
                        waiting: Vec::new(),
                    },
                );
                write_json(&file, &posted)?;
                report.posted += 1;
            }
            (GateState::Answered | GateState::Withdrawn, Some(card)) if !card.closed => {
                // A card Lark no longer lets loopx change stays as it was: the answer is
                // recorded, and a later pass must not fail on it again.
                match client.update_card(&card.message_id, &closed_card(gate)) {
                    Ok(()) | Err(LarkError::Api { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                let card = Posted {
                    closed: true,
                    ..card.clone()
                };
                posted.insert(key, card);
                write_json(&file, &posted)?;
                report.closed += 1;
            }
            _ => {}
        }
    }
    report.waiting = waiting.len();
    digest(client, questions, &file, &mut posted, &waiting, now)?;
    Ok(report)
}

/// Who a question counts against: its author, or, for loopx's question about a monitor
/// (expired, failing), the agent that planted the monitor — one agent's 20 monitors that
/// expire at once were 20 cards of "loopx's own" questions.
fn asker(planted: &BTreeMap<loopx_kernel::TodoId, String>, gate: &Gate) -> String {
    match gate.kind {
        loopx_kernel::model::GateKind::Monitor { todo } => planted
            .get(&todo)
            .cloned()
            .unwrap_or_else(|| gate.asked_by.clone()),
        _ => gate.asked_by.clone(),
    }
}

/// The open monitors agents planted, and who planted each: read once a pass.
fn monitors_planted(app: &App) -> Result<BTreeMap<loopx_kernel::TodoId, String>, CardsError> {
    let todos = app.read(|s| s.todos())?;
    Ok(todos
        .into_iter()
        .filter(|t| t.is_monitor() && Actor::of(&t.created_by).is_agent())
        .map(|t| (t.id, t.created_by))
        .collect())
}

/// Whether an agent's question by `asker` may have its card now: the agents' cards of the
/// last window, and this agent's, are under their bounds.
fn room_for(posted: &BTreeMap<String, Posted>, asker: &str, now: u64) -> bool {
    let recent: Vec<&Posted> = posted
        .iter()
        .filter(|(key, p)| {
            key.as_str() != DIGEST
                && Actor::of(&p.asked_by).is_agent()
                && now.saturating_sub(p.posted_at) < WINDOW_MS
        })
        .map(|(_, p)| p)
        .collect();
    let theirs = recent.iter().filter(|p| p.asked_by == asker).count();
    recent.len() < AGENT_CARDS && theirs < CARDS_PER_AGENT
}

/// Keeps the digest card in step with the questions held back: posted when some wait, updated
/// when the list changes, closed when none is left.
fn digest(
    client: &mut Client,
    questions: &LarkQuestions,
    file: &Path,
    posted: &mut BTreeMap<String, Posted>,
    waiting: &[&Gate],
    now: u64,
) -> Result<(), CardsError> {
    let ids: Vec<String> = waiting.iter().map(|g| g.id.to_string()).collect();
    let current = posted.get(DIGEST).filter(|d| !d.closed).cloned();
    let message_id = match (current, ids.is_empty()) {
        (None, true) => return Ok(()),
        (Some(card), _) if card.waiting == ids => return Ok(()),
        // Emptied: a card Lark no longer lets loopx change is left as it was.
        (Some(card), true) => match client.update_card(&card.message_id, &digest_card(&[])) {
            Ok(()) | Err(LarkError::Api { .. }) => card.message_id,
            Err(e) => return Err(e.into()),
        },
        (Some(card), false) => {
            client.show_card(&questions.chat_id, &card.message_id, &digest_card(waiting))?
        }
        (None, false) => client.send_card(&questions.chat_id, &digest_card(waiting))?,
    };
    posted.insert(
        DIGEST.to_owned(),
        Posted {
            message_id,
            closed: ids.is_empty(),
            posted_at: now,
            asked_by: String::new(),
            waiting: ids,
        },
    );
    write_json(file, posted)
}

/// The digest of agents' questions held back; with none, it says they all have cards now.
pub fn digest_card(waiting: &[&Gate]) -> Value {
    if waiting.is_empty() {
        return card(
            "loopx: no question waits for a card",
            "green",
            vec![plain("Every open question has its own card now.")],
        );
    }
    let mut lines: Vec<String> = waiting
        .iter()
        .take(DIGEST_LINES)
        .map(|g| {
            let question = crate::words::flat(&gate_text(g, &g.question), 120);
            format!(
                "{}: {question} (asked by {})",
                g.id,
                crate::words::actor(&g.asked_by)
            )
        })
        .collect();
    if waiting.len() > DIGEST_LINES {
        lines.push(format!("… and {} more.", waiting.len() - DIGEST_LINES));
    }
    card(
        &format!("loopx: {} more questions from agents wait", waiting.len()),
        "orange",
        vec![
            plain(&lines.join("\n")),
            plain(&format!(
                "Agents' questions get at most {AGENT_CARDS} cards in {} minutes ({CARDS_PER_AGENT} for one agent), to keep this chat readable; the rest get theirs as that frees. Answer any of them now on the loopx board or in the terminal.",
                WINDOW_MS / 60_000
            )),
        ],
    )
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

/// How a question is answered, in words: with a button on its card when it has options and
/// its card has buttons (`cards`: the cards are posted; `approvals`: approvals take a press),
/// else on the local board or in the terminal.
pub fn how_to_answer(gate: &Gate, cards: bool, approvals: bool) -> &'static str {
    if loopx_app::gate::is_approval(gate) && !approvals {
        "An approval is answered at the machine, on the loopx board or in the terminal."
    } else if gate.options.is_empty() {
        "It takes an answer in words, on the loopx board or in the terminal."
    } else if cards {
        "Answer with a button on its card in the chat."
    } else {
        "Answer on the loopx board or in the terminal."
    }
}

/// The card of an open question: the question and its context in words, who asked about
/// which todo of which goal, what waits for the answer, and a button per option.
pub fn question_card(gate: &Gate, approvals: bool, names: &Names) -> Value {
    let answerable = approvals || !loopx_app::gate::is_approval(gate);
    let mut elements = vec![plain(&gate_text(gate, &gate.question))];
    let context = gate_text(gate, &gate.context);
    if !context.is_empty() {
        let clipped: String = context.chars().take(CONTEXT).collect();
        elements.push(plain(&clipped));
    }
    let about = Names::todo_of(gate)
        .map(|t| format!(" about {}", names.todo(t)))
        .unwrap_or_default();
    let goal = names
        .goal_of(gate)
        .map(|g| format!(", in {}", names.goal(g)))
        .unwrap_or_default();
    let asker = crate::words::actor(&gate.asked_by);
    elements.push(plain(&format!(
        "Asked by {asker}{about}{goal}. {}",
        holds(&gate.blocks, names)
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
        elements.push(plain(how_to_answer(gate, true, approvals)));
    }
    card(&format!("loopx asks ({})", gate.id), "orange", elements)
}

/// The card of a question answered or withdrawn: the answer and who gave it, no buttons.
pub fn closed_card(gate: &Gate) -> Value {
    let outcome = match &gate.answer {
        Some(a) => format!("Answered {} by {} at {}.", quote(&a.text, 200), a.by, a.at),
        None => "Withdrawn.".to_owned(),
    };
    card(
        &format!("loopx asked ({})", gate.id),
        "green",
        vec![plain(&gate_text(gate, &gate.question)), plain(&outcome)],
    )
}

pub(crate) fn card(title: &str, template: &str, elements: Vec<Value>) -> Value {
    json!({
        "schema": "2.0",
        "config": {"update_multi": true},
        "header": {"title": {"tag": "plain_text", "content": title}, "template": template},
        "body": {"elements": elements},
    })
}

pub(crate) fn plain(text: &str) -> Value {
    json!({"tag": "div", "text": {"tag": "plain_text", "content": text}})
}

/// What waits for the answer, in words.
fn holds(blocks: &Blocks, names: &Names) -> String {
    match blocks {
        Blocks::Global => "Until it is answered, every agent waits.".to_owned(),
        Blocks::Goal(goal) => format!("Until it is answered, the work on goal {goal} waits."),
        Blocks::Agent(a) => format!(
            "Until it is answered, {} waits.",
            crate::words::actor(&loopx_vocab::actor::agent(a.as_str()))
        ),
        Blocks::Todos(todos) => {
            let named: Vec<String> = todos.iter().map(|t| names.todo(*t)).collect();
            let verb = if todos.len() == 1 { "waits" } else { "wait" };
            format!("Until it is answered, {} {verb}.", named.join(", "))
        }
        Blocks::Nothing => "Nothing waits for the answer.".to_owned(),
    }
}

/// One of loopx's projection files; empty when there is none.
pub(crate) fn read_json<T: DeserializeOwned + Default>(path: &Path) -> Result<T, CardsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(e) => return Err(file_error(path, e.to_string())),
    };
    crate::answers::from_text(&text).map_err(|e| {
        file_error(
            path,
            format!("{e}; remove it and loopx posts its cards again"),
        )
    })
}

/// Writes one of loopx's projection files whole, or not at all.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<(), CardsError> {
    let bytes = serde_json::to_vec(value).map_err(|e| file_error(path, e.to_string()))?;
    loopx_app::projection::write_atomically(path, &bytes)
        .map_err(|e| file_error(path, e.to_string()))
}

fn file_error(path: &Path, why: String) -> CardsError {
    CardsError::File {
        path: path.display().to_string(),
        why,
    }
}
