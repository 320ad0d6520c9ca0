//! How records read to people: one line in a list, a few lines when shown.

use loopx_app::evidence::{JudgedEvidence, JudgedHandoff};
use loopx_kernel::Timestamp;
use loopx_kernel::limits::clip;
use loopx_kernel::model::{Agent, Evidence, Gate, GateState, Goal, Monitor, Todo, TodoState};
pub use loopx_kernel::time::relative;

use super::Style;

fn state_word(style: Style, state: TodoState) -> String {
    let word = format!("{:<7}", state.as_str());
    match state {
        TodoState::Open => style.yellow(&word),
        TodoState::Claimed => style.cyan(&word),
        TodoState::Done => style.green(&word),
        TodoState::Dropped => style.dim(&word),
    }
}

/// A title, a question: one line whatever was stored (a line break shows as `⏎`).
pub fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r']) {
        text.replace("\r\n", "\n").replace(['\n', '\r'], " ⏎ ")
    } else {
        text.to_owned()
    }
}

/// `t3   [5] open     Add retry to the HTTP client`
pub fn todo_line(style: Style, todo: &Todo, now: Timestamp) -> String {
    let mut line = format!(
        "{:<5} [{}] {} {}",
        todo.id.to_string(),
        todo.priority,
        state_word(style, todo.state),
        one_line(&todo.title)
    );
    if let Some(lease) = &todo.lease {
        let lease_text = if lease.is_live(now) {
            format!(
                "{} · epoch {} · lease {}",
                lease.agent,
                lease.epoch,
                relative(now, lease.expires_at).replace("in ", "ends in ")
            )
        } else {
            format!(
                "{} · epoch {} · lease expired {}",
                lease.agent,
                lease.epoch,
                relative(now, lease.expires_at)
            )
        };
        line.push_str(&style.dim(&format!("  ({lease_text})")));
    }
    line
}

/// Every field of a todo, for `todo show`.
pub fn todo_detail(
    style: Style,
    todo: &Todo,
    handoff: Option<&JudgedHandoff>,
    now: Timestamp,
) -> Vec<String> {
    let mut lines = vec![
        style.bold(&format!("{} · {}", todo.id, todo.title)),
        format!("state     {}", todo.state.as_str()),
        format!("goal      {}", todo.goal),
        format!("priority  {}", todo.priority),
        format!("epoch     {} (grants so far)", todo.epoch),
    ];
    if let Some(lease) = &todo.lease {
        lines.push(format!(
            "lease     {} until {} ({})",
            lease.agent,
            lease.expires_at,
            relative(now, lease.expires_at)
        ));
    }
    if !todo.needs.is_empty() {
        lines.push(format!("needs     {}", todo.needs.join(", ")));
    }
    if !todo.after.is_empty() {
        lines.push(format!(
            "after     {}",
            todo.after
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(role) = &todo.role {
        lines.push(format!("role      {role}"));
    }
    if let Some(at) = todo.not_before {
        lines.push(format!("rests     until {at} ({})", relative(now, at)));
    }
    if let Some(monitor) = &todo.monitor {
        lines.extend(monitor_lines(monitor, todo.state.is_final(), now));
    }
    lines.push(format!(
        "added     {} by {}",
        todo.created_at, todo.created_by
    ));
    if !todo.detail.is_empty() {
        lines.push(String::new());
        lines.extend(todo.detail.lines().map(|l| format!("  {l}")));
    }
    if let Some(handoff) = handoff {
        lines.push(String::new());
        lines.extend(handoff_lines(style, handoff, now));
    }
    lines
}

/// A monitor's check, cadence, next poll and recent observations (`todo show`).
pub fn monitor_lines(monitor: &Monitor, finished: bool, now: Timestamp) -> Vec<String> {
    let every =
        loopx_kernel::time::short_duration(std::time::Duration::from_millis(monitor.every_ms));
    let until = if monitor.until_changed {
        ", until its output changes"
    } else {
        ""
    };
    let mut lines = vec![format!(
        "check     {} (every {every}{until})",
        monitor.check
    )];
    if let Some(profile) = &monitor.profile {
        lines.push(format!("profile   {profile}"));
    }
    if let Some(at) = monitor.expires_at {
        lines.push(format!("expires   {at} ({})", relative(now, at)));
    }
    let next = match (&monitor.asked, &monitor.poll, finished) {
        (_, _, true) => None,
        (Some(gate), _, _) => Some(format!("a person is asked first ({gate})")),
        (None, Some(lease), _) => Some(format!("{} polls it now", lease.agent)),
        (None, None, false) => Some(format!(
            "{} ({})",
            monitor.next_at,
            relative(now, monitor.next_at)
        )),
    };
    if let Some(next) = next {
        lines.push(format!("next poll {next}"));
    }
    lines.push(format!(
        "polls     {}{}",
        monitor.polls,
        match monitor.failures {
            0 => String::new(),
            n => format!(", the last {n} failed"),
        }
    ));
    for seen in monitor.recent.iter().rev() {
        let exit = seen
            .exit
            .map_or_else(|| "no exit".to_owned(), |c| format!("exit {c}"));
        let times = match seen.count {
            1 => format!("{}", seen.at),
            n => format!("{} … {} ({n} polls)", seen.at, seen.last_at),
        };
        let last_line = seen.tail.lines().last().unwrap_or("").trim();
        lines.push(format!(
            "  {times}: {}, {exit}{}",
            seen.verdict.as_str(),
            if last_line.is_empty() {
                String::new()
            } else {
                format!(": {}", clip(last_line, 100))
            }
        ));
    }
    lines
}

/// A gate with its options and the command that answers it.
pub fn gate_lines(style: Style, gate: &Gate, now: Timestamp) -> Vec<String> {
    // A gate loopx opened (a stall, a login, a budget, a rollback, an approval) says so, even
    // when it was recorded while writing back an agent's slice.
    let asker = if gate.opened_by_loopx() {
        "opened by loopx".to_owned()
    } else {
        format!("asked by {}", gate.asked_by)
    };
    let mut lines = vec![format!(
        "{}  {}  {}",
        style.bold(&gate.id.to_string()),
        one_line(&gate.question),
        style.dim(&format!(
            "[blocks {} · {asker} {}]",
            gate.blocks.describe(),
            relative(now, gate.created_at)
        ))
    )];
    if !gate.options.is_empty() {
        let options: Vec<String> = gate
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}) {o}", i + 1))
            .collect();
        lines.push(format!("    options: {}", options.join("  ")));
    }
    // Context keeps its lines and their indentation, aligned under its first line.
    for (i, line) in gate.context.trim_end().lines().enumerate() {
        let label = if i == 0 {
            "    context: "
        } else {
            "             "
        };
        lines.push(format!("{label}{line}"));
    }
    match (&gate.state, &gate.answer) {
        (GateState::Open, _) => lines.push(format!(
            "    answer:  {}",
            style.yellow(&gate.answer_command())
        )),
        (_, Some(answer)) => lines.push(format!(
            "    answered by {} {}: {}",
            answer.by,
            relative(now, answer.at),
            answer.text
        )),
        (state, None) => lines.push(format!("    {}", state.as_str())),
    }
    lines
}

/// `e3  test      cargo test: 41 passed  (t3 · 2m ago)`
pub fn evidence_line(style: Style, evidence: &Evidence, now: Timestamp) -> String {
    let about = evidence.todo.map(|t| format!("{t} · ")).unwrap_or_default();
    format!(
        "{:<5} {:<9} {}  {}",
        evidence.id.to_string(),
        evidence.kind.as_str(),
        evidence.summary,
        style.dim(&format!(
            "({about}{} · {})",
            evidence.actor,
            relative(now, evidence.at)
        ))
    )
}

/// A piece of evidence and, when it is stale, a second line saying why.
pub fn judged_evidence_lines(style: Style, judged: &JudgedEvidence, now: Timestamp) -> Vec<String> {
    let mut lines = vec![evidence_line(style, &judged.item, now)];
    if let Some(why) = &judged.stale_reason {
        lines.push(format!("      {}", style.yellow(&format!("stale: {why}"))));
    }
    lines
}

pub fn handoff_lines(style: Style, judged: &JudgedHandoff, now: Timestamp) -> Vec<String> {
    let handoff = &judged.item;
    let about = handoff
        .todo
        .map(|t| format!(" for {t}"))
        .unwrap_or_default();
    let mut lines = vec![style.bold(&format!(
        "handoff {}{about} · {} · {}",
        handoff.id,
        handoff.actor,
        relative(now, handoff.at)
    ))];
    if !handoff.done.is_empty() {
        lines.push(format!("done:  {}", handoff.done));
    }
    if !handoff.next.is_empty() {
        lines.push(format!("next:  {}", handoff.next));
    }
    if !handoff.files.is_empty() {
        lines.push(format!("files: {}", handoff.files.join(", ")));
    }
    for question in &handoff.questions {
        lines.push(format!("open question: {question}"));
    }
    if let Some(why) = &judged.stale_reason {
        lines.push(style.yellow(&format!("stale: {why}")));
    }
    lines
}

pub fn goal_line(style: Style, goal: &Goal) -> String {
    format!(
        "{:<4} {:<8} {}  {}",
        goal.id.to_string(),
        goal.status.as_str(),
        style.bold(&goal.objective),
        style.dim(&format!(
            "(scope {} · {} · share {})",
            goal.scope.join(" "),
            goal.permission.as_str(),
            goal.share
        ))
    )
}

pub fn agent_line(agent: &Agent) -> String {
    let caps = if agent.capabilities.is_empty() {
        "-".to_owned()
    } else {
        agent.capabilities.join(",")
    };
    format!(
        "{:<16} profile {:<12} role {:<10} capabilities {caps}",
        agent.name.to_string(),
        agent.profile,
        agent.role.as_deref().unwrap_or("-")
    )
}
