//! What the page shows: the application layer's status and quota snapshots (the documents
//! `status --json` and `quota status --json` print), plus the cards by column (the todos of
//! every goal `status` shows, each card naming its goal), the newest
//! events, a live tail of each running slice's transcript, and the goals the History page
//! offers.

use std::collections::HashMap;

use loopx_kernel::model::{Gate, SliceRecord, Todo, TodoState};
use loopx_kernel::{Timestamp, TodoId};
use serde_json::{Value, json};

use loopx_app::evidence::JudgedEvidence;
use loopx_app::{App, AppError};

/// Cards shown per column; the column's count says how many there are.
const PER_COLUMN: usize = 100;
/// Events shown.
const EVENTS: usize = 40;
/// Lines of a running slice's transcript shown.
const TAIL_LINES: usize = 14;
/// Bytes of a running slice's log read for its tail.
const TAIL_BYTES: u64 = 48 * 1024;

/// The whole board as JSON.
pub(crate) fn board(app: &App) -> Result<Value, AppError> {
    let status = app.status()?;
    let quota = app.quota_status()?;
    let project = app.project();
    let now = app.now();
    // The rules' problems, if any, are in `status`'s; the cards go on without them.
    let judge = app.evidence_judge(app.evidence_rules().unwrap_or_default());
    // The goals status shows: every active goal when several are, else the one goal.
    let goals: Vec<loopx_kernel::GoalId> = status.goals.iter().map(|g| g.id).collect();
    let (columns, running, events) = app.read(|s| {
        let todos: Vec<Todo> = match goals.is_empty() {
            true => Vec::new(),
            false => s.todos_where(|t| goals.contains(&t.goal))?,
        };
        let gates: Vec<Gate> = s.open_gates()?;
        let running = s.running_slices()?;
        let finished: Vec<TodoId> = todos
            .iter()
            .filter(|t| matches!(t.state, TodoState::Done | TodoState::Dropped))
            .map(|t| t.id)
            .collect();
        let evidence = judge.all(
            s,
            s.evidence_newest(4 * PER_COLUMN, |e| {
                e.todo.is_some_and(|t| finished.contains(&t))
            })?,
        )?;
        let handoffs = handoffs(s, &todos)?;
        let columns = columns(&todos, &gates, &running, &evidence, &handoffs, now);
        let events = events(s)?;
        Ok((columns, running, events))
    })?;
    let tails: serde_json::Map<String, Value> = running
        .iter()
        .map(|slice| (slice.id.to_string(), Value::String(tail(project, slice))))
        .collect();
    let history = crate::history::goals(app)?;
    Ok(json!({
        "now": now,
        "status": status,
        "history": history,
        "quota": quota,
        "columns": columns,
        "tails": tails,
        "events": events,
    }))
}

/// The last handoff of each finished todo, shown on its card.
fn handoffs(
    s: &loopx_kernel::Snapshot<'_>,
    todos: &[Todo],
) -> Result<HashMap<TodoId, loopx_kernel::model::Handoff>, loopx_kernel::KernelError> {
    let mut handoffs = HashMap::new();
    for todo in todos {
        if let Some(id) = todo.latest_handoff
            && matches!(todo.state, TodoState::Done | TodoState::Dropped)
            && let Some(handoff) = s.handoff(id)?
        {
            handoffs.insert(todo.id, handoff);
        }
    }
    Ok(handoffs)
}

/// The newest [`EVENTS`] events, newest first, each in words.
fn events(s: &loopx_kernel::Snapshot<'_>) -> Result<Vec<Value>, loopx_kernel::KernelError> {
    Ok(s.events_tail(EVENTS)?
        .iter()
        .rev()
        .map(|e| {
            json!({
                "seq": e.seq,
                "at": e.at,
                "actor": e.actor,
                "kind": e.kind.name(),
                "text": e.kind.describe(),
            })
        })
        .collect())
}

fn columns(
    todos: &[Todo],
    gates: &[Gate],
    running: &[SliceRecord],
    evidence: &[JudgedEvidence],
    handoffs: &HashMap<TodoId, loopx_kernel::model::Handoff>,
    now: Timestamp,
) -> Value {
    let done: HashMap<TodoId, TodoState> = todos.iter().map(|t| (t.id, t.state)).collect();
    let mut cards: [Vec<Value>; COLUMNS.len()] = Default::default();
    for todo in todos {
        let mut card = json!({"id": todo.id, "goal": todo.goal, "title": todo.title, "detail": todo.detail,
            "priority": todo.priority, "epoch": todo.epoch, "role": todo.role,
            "needs": todo.needs, "updated_at": todo.updated_at});
        let column = match todo.state {
            TodoState::Open => {
                // A monitor has a column of its own, whatever holds it: loopx works it, not agents.
                if todo.is_monitor() {
                    card["monitor"] = monitor_card(todo);
                }
                let gate = loopx_app::board::blocking_gate(todo, gates);
                if let Some(gate) = gate {
                    card["gate"] = json!({"id": gate.id, "question": gate.question});
                }
                match (todo.is_monitor(), gate.is_some()) {
                    (true, _) => MONITORS,
                    (false, true) => BLOCKED,
                    (false, false) => {
                        card["waits_on"] = json!(waits_on(todo, &done));
                        OPEN
                    }
                }
            }
            TodoState::Claimed => {
                held(&mut card, todo, running, now);
                CLAIMED
            }
            TodoState::Done | TodoState::Dropped => {
                ended(&mut card, todo, evidence, handoffs);
                if todo.state == TodoState::Done {
                    DONE
                } else {
                    DROPPED
                }
            }
        };
        cards[column].push(card);
    }
    // Newest finished first; the rest in the order agents take them.
    for column in [DONE, DROPPED] {
        cards[column].sort_by(|a, b| b["updated_at"].as_str().cmp(&a["updated_at"].as_str()));
    }
    cards[OPEN].sort_by_key(|c| -c["priority"].as_i64().unwrap_or(0));
    let columns = COLUMNS.iter().zip(cards).map(|(name, cards)| {
        let count = cards.len();
        let shown: Vec<Value> = cards.into_iter().take(PER_COLUMN).collect();
        ((*name).to_owned(), json!({"count": count, "cards": shown}))
    });
    Value::Object(columns.collect())
}

/// The board's columns, by name, in the order the page shows them.
const COLUMNS: [&str; 6] = ["open", "monitors", "claimed", "blocked", "done", "dropped"];
const OPEN: usize = 0;
const MONITORS: usize = 1;
const CLAIMED: usize = 2;
const BLOCKED: usize = 3;
const DONE: usize = 4;
const DROPPED: usize = 5;

/// What an open todo waits on: unfinished todos before it, capabilities, a role.
fn waits_on(todo: &Todo, done: &HashMap<TodoId, TodoState>) -> Vec<String> {
    let mut waits_on: Vec<String> = todo
        .after
        .iter()
        .filter(|dep| done.get(dep) != Some(&TodoState::Done))
        .map(|dep| format!("after {dep}"))
        .collect();
    waits_on.extend(todo.needs.iter().map(|n| format!("needs {n}")));
    if let Some(role) = &todo.role {
        waits_on.push(format!("role {role}"));
    }
    waits_on
}

/// A claimed todo's card: its lease, and the slice working on it.
fn held(card: &mut Value, todo: &Todo, running: &[SliceRecord], now: Timestamp) {
    if let Some(lease) = &todo.lease {
        card["lease"] = json!({
            "agent": lease.agent,
            "epoch": lease.epoch,
            "expires_at": lease.expires_at,
            "live": lease.is_live(now),
        });
    }
    if let Some(slice) = running.iter().find(|s| s.todo == Some(todo.id)) {
        card["slice"] = json!({
            "id": slice.id,
            "agent": slice.agent,
            "started_at": slice.started_at,
            "limit_secs": slice.limit_secs,
        });
    }
}

/// A finished todo's card: its latest evidence and its handoff.
fn ended(
    card: &mut Value,
    todo: &Todo,
    evidence: &[JudgedEvidence],
    handoffs: &HashMap<TodoId, loopx_kernel::model::Handoff>,
) {
    let mine: Vec<Value> = evidence
        .iter()
        .filter(|e| e.item.todo == Some(todo.id))
        .take(3)
        .map(|j| {
            let e = &j.item;
            json!({"id": e.id, "kind": e.kind, "summary": e.summary, "stale_reason": j.stale_reason})
        })
        .collect();
    card["evidence"] = json!(mine);
    if let Some(handoff) = handoffs.get(&todo.id) {
        card["handoff"] = json!({"done": handoff.done, "next": handoff.next});
    }
}

/// What a monitor's card shows: its check and cadence, when it is polled next, its last result.
fn monitor_card(todo: &Todo) -> Value {
    let Some(m) = todo.monitor.as_deref() else {
        return Value::Null;
    };
    let last = m.last().map(|o| {
        json!({
            "verdict": o.verdict,
            "at": o.last_at,
            "exit": o.exit,
            "line": o.tail.lines().last().unwrap_or("").trim(),
        })
    });
    json!({
        "check": m.check,
        "every_ms": m.every_ms,
        "next_at": m.asked.is_none().then_some(m.next_at),
        "expires_at": m.expires_at,
        "polls": m.polls,
        "failures": m.failures,
        "last": last,
    })
}

/// The last lines of a running slice's transcript (or text), redacted and with control
/// characters made visible: the page shows them as text, never as markup.
fn tail(project: &loopx_kernel::Project, slice: &SliceRecord) -> String {
    use std::io::{Read, Seek};
    let path = project
        .state_dir()
        .join("slices")
        .join(format!("{}.log", slice.id));
    let Ok(mut file) = loopx_adapters::open_regular(&path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(TAIL_BYTES);
    let mut bytes = Vec::new();
    if file.seek(std::io::SeekFrom::Start(from)).is_err()
        || file.take(TAIL_BYTES).read_to_end(&mut bytes).is_err()
    {
        return String::new();
    }
    // Whole lines are rendered: the first may have begun before the window. The last, still
    // being written, is shown as it is (a prompt the agent waits at) unless it is a half JSON
    // event.
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let unfinished = bytes.split_off(end);
    if from > 0 {
        match bytes.iter().position(|&b| b == b'\n') {
            Some(start) => drop(bytes.drain(..=start)),
            None => return "(a line longer than the tail shown)".to_owned(),
        }
    }
    let mut text = loopx_adapters::transcript::render(&bytes)
        .unwrap_or_else(|| loopx_vocab::strip_escapes(&bytes));
    if !unfinished.trim_ascii_start().starts_with(b"{") {
        text.push_str(&loopx_vocab::strip_escapes(&unfinished));
    }
    // A window that begins inside a private key shows none of it: the redaction needs the key's
    // first line.
    if let Some(end) = text.find("-----END")
        && !text[..end].contains("-----BEGIN")
    {
        let after = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
        text.replace_range(..after, "[redacted: the rest of a key]\n");
    }
    let redacted = loopx_kernel::redact::Redactor::for_process_env(&[])
        .redact(&text)
        .into_owned();
    let lines: Vec<&str> = redacted.lines().collect();
    let shown = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    loopx_vocab::clean_text(shown.as_bytes())
}
