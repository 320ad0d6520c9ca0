//! The prompt of one slice: the profile's template (`docs/profiles.md`, `[prompt] template`)
//! filled from the kernel; what an agent finds in it: `docs/agents.md`, "What the program gets".
//!
//! Every section the template can name is rendered here: the goal and its scope, the task
//! (the todo's title and detail, or the planning request) ending with a `Slice: work|plan|repair`
//! line, the newest handoff, the answered questions that concern this agent or todo, recent
//! evidence, and the report protocol. An empty section reads `none`, so a template never shows
//! a blank where the agent expects text.

use std::collections::BTreeMap;

use loopx_kernel::model::{EvidenceKind, GateState, Goal, SliceKind, Todo};
use loopx_kernel::{AgentName, KernelError, Snapshot};

use crate::freshness::Freshness;

/// How many evidence summaries the prompt carries.
const RECENT_EVIDENCE: usize = 5;
/// How many answered questions the prompt carries.
const ANSWERED_GATES: usize = 5;

/// What the agent must end its final message with.
pub const REPORT_PROTOCOL: &str = r#"When you stop, end your final message with exactly one report block, JSON inside:

```loopx-report
{"status":"done|progress|blocked","summary":"…","evidence":[{"kind":"test","summary":"cargo test: 41 passed"}],
 "handoff":"…","next_todos":[{"title":"…","detail":"…","role":"reviewer"}],"question":{"text":"…?","options":["…","…"]}}
```

- status: `done` when the task is complete, `progress` when more remains, `blocked` when a person
  must decide; then ask one concrete question that ends with `?` and names the decision.
- evidence: what you checked and how (kinds: test, diff, note, artifact).
- metrics: numbers you measured, `[{"name":"accuracy","value":0.913,"unit":"%"}]`.
- handoff: what the next agent on this task needs to know.
- next_todos: work you propose; `role` names who should take it (e.g. `reviewer`). To wait on
  something slow that runs outside your slice (a training run on a cluster, CI; a process you
  leave running is stopped when your slice ends), propose a monitor instead of checking back:
  `{"title":"Wait for run 42","check":"test -e /scratch/run42/done","every":"10m",
  "then":[{"title":"Evaluate run 42"}]}`; loopx runs the check read-only (exit 0: done, 1: not
  yet) with no agent, and starts the `then` todos once it is met. `"same_agent":true` holds a
  todo for you: you take it next, another agent only if you have not within 15 minutes.
- propose_goal: when the goal itself should change (its objective or scope), propose it:
  `{"objective":"…","scope":["src/**"],"why":"…"}`; a person accepts or rejects it, and you work
  to the goal as it is meanwhile.
- Only `status` and `summary` are required."#;

/// What the prompt is about.
#[derive(Debug, Clone, Copy)]
pub struct PromptFor<'a> {
    pub agent: &'a AgentName,
    pub role: Option<&'a str>,
    pub goal: Option<&'a Goal>,
    pub todo: Option<&'a Todo>,
    pub kind: SliceKind,
}

/// The values of the template's placeholders (`loopx_adapters::PROMPT_PLACEHOLDERS`).
///
/// `judge` says what went stale (`freshness.rs`): evidence about other code, a handoff written
/// before its todo or goal changed, an answer given under an older revision or long ago. The
/// agent is told, so that it does not build on them as if they were current.
pub fn prompt_values(
    snap: &Snapshot<'_>,
    p: PromptFor<'_>,
    judge: &mut Freshness<'_>,
) -> Result<BTreeMap<&'static str, String>, KernelError> {
    let todo_id = p.todo.map(|t| t.id);
    let goal = p
        .goal
        .map_or_else(|| "none".to_owned(), |g| g.objective.clone());
    let handoff = snap
        .latest_handoff(todo_id)?
        .map(|h| {
            let mut lines = Vec::new();
            if let Some(why) = judged(judge.handoff(snap, &h)) {
                lines.push(format!(
                    "(stale: {why}; read it as history, not as the task)"
                ));
            }
            if !h.done.trim().is_empty() {
                lines.push(format!("done: {}", h.done.trim()));
            }
            if !h.next.trim().is_empty() {
                lines.push(format!("next: {}", h.next.trim()));
            }
            lines.extend(h.questions.iter().map(|q| format!("open question: {q}")));
            lines.join("\n")
        })
        .unwrap_or_default();
    let gates = answered_gates(snap, p, judge)?;
    let evidence = evidence(snap, p, judge)?;
    // The planning slice that re-plans an amended goal reviews its open todos.
    let task = match (p.goal, p.todo, p.kind) {
        (Some(goal), None, SliceKind::Plan) if snap.goal_replan_after(goal.id)?.is_some() => {
            format!(
                "{}\n\nSlice: {}",
                crate::amendment::replan_task(snap, goal)?,
                p.kind.as_str()
            )
        }
        _ => task(p.todo, p.goal, p.kind),
    };
    let values = BTreeMap::from([
        ("agent", p.agent.to_string()),
        ("role", p.role.unwrap_or("an agent").to_owned()),
        ("goal", goal),
        ("scope", scope(p)),
        ("todo", task),
        ("handoff", or_none(handoff)),
        ("gates", or_none(gates)),
        ("evidence", or_none(evidence)),
        ("report_protocol", REPORT_PROTOCOL.to_owned()),
    ]);
    Ok(values)
}

/// The person's messages to the agent (`loopx say`), to head its prompt whatever the
/// profile's template holds; `None` without any.
pub fn messages_note(messages: &[loopx_kernel::model::Message]) -> Option<String> {
    if messages.is_empty() {
        return None;
    }
    let notes: Vec<String> = messages.iter().map(quoted).collect();
    Some(format!(
        "{}\n(A person wrote this while you were away: take it into account in this slice.)",
        notes.join("\n\n")
    ))
}

/// A person's message as it is written into the agent's running session (a CLI that takes
/// input while it runs; `docs/watch.md`, "Messages"): headed as in a prompt.
pub fn live_message_note(message: &loopx_kernel::model::Message) -> String {
    format!(
        "{}\n(A person wrote this while you were working: take it into account now. If it changes your report, end your answer with a new `loopx-report` block.)",
        quoted(message)
    )
}

/// Who wrote a message, which and when, and its text quoted line by line.
fn quoted(m: &loopx_kernel::model::Message) -> String {
    let lines: Vec<String> = m.text.lines().map(|l| format!("> {l}")).collect();
    format!(
        "A message to you from {} ({}, {}):\n{}",
        m.by,
        m.id,
        m.at,
        lines.join("\n")
    )
}

/// The scope section: the goal's scope, and where the agent works when it is not the
/// project's own tree (agents push, switch branches and commit by habit, and should know what
/// loopx does with their work).
fn scope(p: PromptFor<'_>) -> String {
    let scope = match p.goal.map(|g| g.scope.as_slice()) {
        Some(scope) if !scope.is_empty() => scope.join(", "),
        _ => "anything in the project except `.loopx/`".to_owned(),
    };
    let Some(g) = p.goal.filter(|g| g.isolation.is_worktree()) else {
        return scope;
    };
    let into = loopx_git::worktree::integration_branch(g.id);
    match p.todo {
        Some(t) => format!(
            "{scope} (in your own git worktree of the branch {}: loopx commits what you \
             leave when the slice ends and lands it on {into} when you report done, so \
             you need not commit; your own commits work too, and git may then print \
             `Unable to create '…/packed-refs.lock'`, which is harmless: the \
             repository's refs are loopx's. Do not push, and do not switch branches)",
            loopx_git::worktree::todo_branch(g.id, t.id)
        ),
        None => format!(
            "{scope} (you see the goal's branch {into} as it is now; files you write in \
             a planning slice are not kept)"
        ),
    }
}

/// The gates section: the newest answered questions that concern this agent or todo, each
/// answer on a line of its own (agents, and the demo agent, read `Answer:` lines).
fn answered_gates(
    snap: &Snapshot<'_>,
    p: PromptFor<'_>,
    judge: &mut Freshness<'_>,
) -> Result<String, KernelError> {
    let todo_id = p.todo.map(|t| t.id);
    let mut gates: Vec<_> = snap
        .gates()?
        .into_iter()
        .filter(|g| {
            g.state == GateState::Answered
                && g.blocks
                    .blocks(Some(p.agent), todo_id, p.goal.map(|g| g.id))
        })
        .collect();
    gates.reverse();
    gates.truncate(ANSWERED_GATES);
    Ok(gates
        .iter()
        .filter_map(|g| {
            let answer = g.answer.as_ref()?;
            let aged = match judged(judge.answer(snap, g)) {
                Some(why) => format!("\n({why}: check it still holds)"),
                None => String::new(),
            };
            Some(format!(
                "{}: {}\nAnswer: {}{aged}",
                g.id, g.question, answer.text
            ))
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The evidence section: a todo's own evidence, and what the monitors it waited on saw when
/// they were met.
fn evidence(
    snap: &Snapshot<'_>,
    p: PromptFor<'_>,
    judge: &mut Freshness<'_>,
) -> Result<String, KernelError> {
    let todo_id = p.todo.map(|t| t.id);
    let after = p.todo.map(|t| t.after.as_slice()).unwrap_or_default();
    let recent = snap.evidence_newest(RECENT_EVIDENCE, |e| {
        todo_id.is_none()
            || e.todo == todo_id
            || (e.kind == EvidenceKind::Monitor && e.todo.is_some_and(|t| after.contains(&t)))
    })?;
    // The newest failed land check carries its output: the agent must see what failed to fix
    // it (before, the prompt said only that the todo did not land). So does a met monitor's:
    // it is what the work after it starts from.
    let failed_check = recent
        .iter()
        .find(|e| e.kind == EvidenceKind::Land)
        .filter(|e| e.summary.contains("did not land: the land check"))
        .map(|e| e.id);
    Ok(recent
        .iter()
        .map(|e| {
            let line = match judged(judge.stale(snap, e)) {
                Some(why) => format!(
                    "- [{}] {} ({}; stale: {why})",
                    e.kind.as_str(),
                    e.summary,
                    e.id
                ),
                None => format!("- [{}] {} ({})", e.kind.as_str(), e.summary, e.id),
            };
            let with_output = Some(e.id) == failed_check
                || (e.kind == EvidenceKind::Monitor && todo_id.is_some() && e.todo != todo_id);
            match with_output && !e.detail.trim().is_empty() {
                true => format!(
                    "{line}\n{}",
                    e.detail
                        .trim()
                        .lines()
                        .map(|l| format!("    {l}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
                false => line,
            }
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// A judgement of what went stale, or `None` (said nothing) when the store could not be read
/// for it: the prompt goes out without the mark, and the log says why.
fn judged(judgement: Result<Option<String>, KernelError>) -> Option<String> {
    judgement.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot judge whether a record in the prompt is stale");
        None
    })
}

/// The task section: the todo's title first (agents read it as the task), then its detail,
/// then the slice kind.
fn task(todo: Option<&Todo>, goal: Option<&Goal>, kind: SliceKind) -> String {
    let body = match (todo, goal) {
        (Some(todo), _) if todo.detail.trim().is_empty() => format!("{}: {}", todo.id, todo.title),
        (Some(todo), _) => format!("{}: {}\n\n{}", todo.id, todo.title, todo.detail.trim()),
        // A planning slice plans one goal, named: the project may have several active.
        (None, Some(goal)) => format!(
            "No todo of goal {} is open. Propose its next todos as `next_todos`, or report \
             `done` with none when the goal is met.",
            goal.id
        ),
        (None, None) => "No todo is open. Propose the next todos as `next_todos`, or report \
                 `done` with none when the goal is met."
            .to_owned(),
    };
    let repair = if kind == SliceKind::Repair {
        "\n\nThe previous slice on this todo did not finish it cleanly (its `slice` evidence \
         says why: it ended abnormally, or its done was not taken because the evidence the \
         project needs was missing or stale): check what it left, and run the checks again \
         and report what they show, before you continue."
    } else {
        ""
    };
    format!("{body}{repair}\n\nSlice: {}", kind.as_str())
}

fn or_none(text: String) -> String {
    if text.trim().is_empty() {
        "none".to_owned()
    } else {
        text
    }
}
