//! The goals in Lark: each goal's state in words (the table's Goal cell says it on every
//! todo's record), and one card per goal in the questions' chat, changed as the goal moves
//! (active, waiting for a person, paused, done) and as its todos get done.
//!
//! A goal gets its card when loopx first sees it active or paused; a goal already done or
//! archived then gets none (a project's old goals are not posted all at once). The cards are
//! remembered in `.loopx/projections/lark-goals.json` (goal → message and what it shows), so
//! a card is changed only when what it shows changed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use loopx_adapters::LarkQuestions;
use loopx_app::App;
use loopx_kernel::model::{Gate, GateKind, GateState, Goal, GoalStatus, TodoState};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Client;
use crate::cards::{CardsError, card, plain};
use crate::words::Names;

/// The longest objective shown on a goal's card.
const OBJECTIVE: usize = 1500;

/// A goal's state in words: `active`, `active; 2 questions wait for a person`, `waiting for a
/// person to say whether it is done`, `paused`, `done`. `open` are the open gates about it.
pub fn state(goal: &Goal, open: &[&Gate]) -> String {
    match goal.status {
        GoalStatus::Done => "done".to_owned(),
        GoalStatus::Paused => "paused".to_owned(),
        GoalStatus::Archived => "archived".to_owned(),
        GoalStatus::Active => {
            let kind = |want: fn(&GateKind) -> bool| open.iter().any(|g| want(&g.kind));
            if kind(|k| matches!(k, GateKind::GoalMet { .. })) {
                "waiting for a person to say whether it is done".to_owned()
            } else if kind(|k| matches!(k, GateKind::Budget { .. })) {
                "waiting for a person: it spent its budget".to_owned()
            } else {
                match open.len() {
                    0 => "active".to_owned(),
                    1 => "active; a question waits for a person".to_owned(),
                    n => format!("active; {n} questions wait for a person"),
                }
            }
        }
    }
}

/// The open gates about each goal.
pub fn open_by_goal<'a>(
    names: &Names,
    gates: &'a [Gate],
) -> BTreeMap<loopx_kernel::GoalId, Vec<&'a Gate>> {
    let mut out: BTreeMap<_, Vec<&Gate>> = BTreeMap::new();
    for gate in gates.iter().filter(|g| g.state == GateState::Open) {
        if let Some(goal) = names.goal_of(gate) {
            out.entry(goal).or_default().push(gate);
        }
    }
    out
}

/// A goal's card as it was posted, as `lark-goals.json` keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Posted {
    message_id: String,
    /// The card's JSON, to know when it changed.
    #[serde(default)]
    shown: String,
}

/// Where the goals' cards are remembered.
pub fn goals_file(app: &App) -> PathBuf {
    app.project().projections_dir().join("lark-goals.json")
}

/// Posts a card for each goal active or paused that has none, and changes each card whose
/// goal moved since. How many cards it posted and changed.
pub fn keep_cards(
    app: &App,
    client: &mut Client,
    questions: &LarkQuestions,
) -> Result<(usize, usize), CardsError> {
    let file = goals_file(app);
    let mut posted: BTreeMap<String, Posted> = crate::cards::read_json(&file)?;
    let names = Names::load(app)?;
    let gates = app.gates(false)?;
    let open = open_by_goal(&names, &gates);
    let todos = app.read(|s| s.todos())?;
    let mut goals: Vec<&Goal> = names.goals().collect();
    goals.sort_by_key(|g| g.id);
    let (mut new, mut changed) = (0, 0);
    for goal in goals {
        let key = goal.id.to_string();
        let mine: Vec<TodoState> = todos
            .iter()
            .filter(|t| t.goal == goal.id)
            .map(|t| t.state)
            .collect();
        let state = state(goal, open.get(&goal.id).map_or(&[][..], Vec::as_slice));
        let card = goal_card(goal, &state, &mine);
        let shown = card.to_string();
        match posted.get(&key) {
            Some(p) if p.shown == shown => continue,
            Some(p) => {
                let message_id = client.show_card(&questions.chat_id, &p.message_id, &card)?;
                changed += 1;
                posted.insert(key, Posted { message_id, shown });
            }
            None if matches!(goal.status, GoalStatus::Active | GoalStatus::Paused) => {
                let message_id = client.send_card(&questions.chat_id, &card)?;
                new += 1;
                posted.insert(key, Posted { message_id, shown });
            }
            None => continue,
        }
        crate::cards::write_json(&file, &posted)?;
    }
    Ok((new, changed))
}

/// A goal's card: its objective, its state, and how far its todos are.
pub fn goal_card(goal: &Goal, state: &str, todos: &[TodoState]) -> Value {
    let template = match goal.status {
        GoalStatus::Done => "green",
        GoalStatus::Paused | GoalStatus::Archived => "grey",
        GoalStatus::Active if state.starts_with("waiting") => "orange",
        GoalStatus::Active => "blue",
    };
    let done = todos.iter().filter(|s| **s == TodoState::Done).count();
    let dropped = todos.iter().filter(|s| **s == TodoState::Dropped).count();
    let mut progress = format!("{done} of {} todos done", todos.len());
    if dropped > 0 {
        progress.push_str(&format!(", {dropped} dropped"));
    }
    let objective: String = goal.objective.trim().chars().take(OBJECTIVE).collect();
    card(
        &format!("loopx goal {}: {}", goal.id, capital(state)),
        template,
        vec![
            plain(&objective),
            plain(&format!("The goal is {state}; {progress}.")),
        ],
    )
}

fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
