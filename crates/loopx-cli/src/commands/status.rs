//! `loopx status`: the application layer's snapshot ([`loopx_app::status::Status`]), as JSON or
//! for a person.

use loopx_app::status::{Claimed, GoalNow, Next, Running, Status};
use loopx_kernel::Timestamp;
use loopx_kernel::TodoId;
use loopx_kernel::time::short_duration;

use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::views;

pub fn run(ctx: &mut Ctx, goal: Option<&str>) -> Result<(), ExpectedError> {
    let goal = goal.map(super::id).transpose()?;
    let status = ctx.app()?.status_of(goal)?;
    if ctx.json {
        return ctx.json_out(&status);
    }
    render(ctx, &status, ctx.now())
}

/// The screen of `loopx status`, for `status --all`.
pub fn render_screen(ctx: &mut Ctx, status: &Status) -> Result<(), ExpectedError> {
    render(ctx, status, ctx.now())
}

/// The screen, top to bottom: one function per section, each printing its own leading blank
/// line (when it has one) so that a section left out leaves no gap.
fn render(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    goal_and_revision(ctx, status, now)?;
    isolation(ctx, status)?;
    needs_you(ctx, status, now)?;
    running(ctx, status, now)?;
    agents(ctx, status)?;
    monitors(ctx, status, now)?;
    waiting(ctx, status, now)?;
    next(ctx, status)?;
    evidence(ctx, status, now)?;
    rests_on_stale(ctx, status)?;
    footer(ctx, status, now)
}

/// The goal's line, and its revision with what changed when it was amended; with several
/// goals, a line each, served first first.
fn goal_and_revision(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    let style = ctx.style;
    if status.goals.len() > 1 {
        ctx.line(style.bold(&format!("Goals ({} active)", status.goals.len())))?;
        for goal in &status.goals {
            ctx.line(format!(
                "  {:<5} {}  {}",
                goal.id.to_string(),
                style.dim(&goal_standing(goal)),
                views::one_line(&goal.objective)
            ))?;
        }
    }
    match &status.goal {
        _ if status.goals.len() > 1 => {}
        Some(goal) => ctx.line(format!(
            "{} {}",
            style.bold(&format!("Goal {} ({}):", goal.id, goal.status.as_str())),
            goal.objective
        ))?,
        None => ctx.line("No goal yet. Start one: loopx goal start \"OBJECTIVE\"")?,
    }
    let Some(revision) = &status.revision else {
        return Ok(());
    };
    // With several goals shown, the revision is the first one's: name it.
    let of = match (&status.goal, status.goals.len() > 1) {
        (Some(goal), true) => format!(" of {}", goal.id),
        _ => String::new(),
    };
    ctx.line(format!(
        "Revision {}{of}: {}  {}",
        revision.number,
        views::one_line(&revision.summary),
        style.dim(&format!(
            "(by {}, {})",
            revision.by,
            views::relative(now, revision.at)
        ))
    ))?;
    for change in &revision.moves {
        ctx.line(format!("  {}", views::one_line(change)))?;
    }
    if revision.replan_pending {
        ctx.line(style.yellow("  re-plan pending: the next planning slice re-plans the goal"))?;
    }
    Ok(())
}

/// Where a goal stands among the others: `priority 1, share 0.5; 2 next, 1 waiting, 1 claimed`.
fn goal_standing(goal: &GoalNow) -> String {
    format!(
        "priority {}, share {}; {} next, {} waiting, {} claimed",
        goal.priority,
        goal.share,
        goal.next.len(),
        goal.waiting,
        goal.claimed
    )
}

/// Where the agents work (worktrees and their branches, or the shared tree), and a warning
/// when this machine cannot contain a slice.
fn isolation(ctx: &mut Ctx, status: &Status) -> Result<(), ExpectedError> {
    let style = ctx.style;
    if let Some(iso) = &status.isolation {
        match (&iso.branch, &iso.why) {
            (Some(branch), _) => {
                ctx.line(format!(
                    "Worktrees: each todo on its own branch, landing on {branch} when done"
                ))?;
                for b in &iso.todo_branches {
                    let ahead = match b.ahead {
                        0 => "nothing committed yet".to_owned(),
                        n => format!("+{n} commit{}, not landed", if n == 1 { "" } else { "s" }),
                    };
                    ctx.line(format!("  {:<5} {}  {ahead}", b.todo.to_string(), b.branch))?;
                }
                for line in &iso.merge_commands {
                    ctx.line(line)?;
                }
            }
            (None, Some(why)) => ctx.line(style.dim(&format!(
                "Shared tree: agents work in this project's own files ({why})"
            )))?,
            (None, None) => {}
        }
    }
    let support = loopx_pty::SandboxSupport::quick();
    if !support.complete() {
        ctx.line(style.yellow(
            "Sandbox: this machine cannot fully contain slices; agents may reach the store (see `loopx doctor`)",
        ))?;
    }
    Ok(())
}

/// The open questions, each with the command that answers it.
fn needs_you(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    let style = ctx.style;
    ctx.line("")?;
    ctx.line(style.bold(&format!("Needs you ({})", status.needs_you.len())))?;
    if status.needs_you.is_empty() {
        ctx.line(style.dim("  nothing: no open questions"))?;
    }
    for need in &status.needs_you {
        for line in views::gate_lines(style, &need.gate, now) {
            ctx.line(format!("  {line}"))?;
        }
    }
    Ok(())
}

/// The running slices, then the live claims no slice is working on.
fn running(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    let style = ctx.style;
    ctx.line("")?;
    let slices = status.running.len();
    let in_a_slice = |todo: TodoId| status.running.iter().any(|r| r.slice.todo == Some(todo));
    let claims_alone: Vec<&Claimed> = status
        .claimed
        .iter()
        .filter(|c| !c.expired && !in_a_slice(c.todo))
        .collect();
    let also_claimed = match claims_alone.len() {
        0 => String::new(),
        n => format!(" · {n} claimed"),
    };
    ctx.line(style.bold(&format!(
        "Running ({slices} slice{}{also_claimed})",
        if slices == 1 { "" } else { "s" }
    )))?;
    for run in &status.running {
        ctx.line(running_line(run))?;
    }
    for claim in claims_alone {
        ctx.line(format!(
            "  {:<5} claimed by {} (epoch {}), lease ends {}  {}",
            claim.todo.to_string(),
            claim.agent,
            claim.epoch,
            views::relative(now, claim.expires_at),
            views::one_line(&claim.title)
        ))?;
    }
    if status.running.is_empty() && status.claimed.iter().all(|c| c.expired) {
        ctx.line(style.dim("  nothing"))?;
    }
    Ok(())
}

/// One running slice: its agent and todo, time against its limit, what contains it, and
/// whether its supervisor is gone.
fn running_line(run: &Running) -> String {
    let slice = &run.slice;
    let on = slice.todo.map(|t| format!(" on {t}")).unwrap_or_default();
    let limit = if slice.limit_secs > 0 {
        format!(
            " / {} limit",
            short_duration(std::time::Duration::from_secs(slice.limit_secs))
        )
    } else {
        String::new()
    };
    let gone = match run.orphaned {
        true => "  (its loopx run is gone: the next `loopx run` recovers it)",
        false => "",
    };
    // What the slice actually runs in, as its record says (empty until it spawned).
    let contained = match slice.containment.as_str() {
        "" => String::new(),
        c => format!("  [{c}]"),
    };
    format!(
        "  {:<5} {}{on}  {} elapsed{limit}{contained}{gone}",
        slice.id.to_string(),
        slice.agent,
        short_duration(std::time::Duration::from_secs(run.elapsed_secs))
    )
}

/// Each agent and what it is doing or would do next.
fn agents(ctx: &mut Ctx, status: &Status) -> Result<(), ExpectedError> {
    if status.agents.is_empty() {
        return Ok(());
    }
    ctx.line("")?;
    ctx.line(ctx.style.bold("Agents"))?;
    for a in &status.agents {
        // An agent in a slice is running it, whatever it would decide next.
        let now_doing = match status
            .running
            .iter()
            .find(|r| r.slice.agent.as_str() == a.agent)
        {
            Some(run) => format!(
                "running {}{} ({} elapsed)",
                run.slice.id,
                run.slice
                    .todo
                    .map(|t| format!(" on {t}"))
                    .unwrap_or_default(),
                short_duration(std::time::Duration::from_secs(run.elapsed_secs))
            ),
            None => a.summary.clone(),
        };
        ctx.line(format!("  {:<12} {now_doing}", a.agent))?;
    }
    Ok(())
}

/// The open monitors: their last verdict, their next poll or the question they asked.
fn monitors(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    let style = ctx.style;
    if status.monitors.is_empty() {
        return Ok(());
    }
    ctx.line("")?;
    ctx.line(style.bold(&format!("Monitors ({})", status.monitors.len())))?;
    for m in &status.monitors {
        let last = match (m.last, m.last_at) {
            (Some(verdict), Some(at)) => {
                format!("last {} {}", verdict.as_str(), views::relative(now, at))
            }
            _ => "not polled yet".to_owned(),
        };
        let next = match (m.gate, m.next_poll) {
            (Some(gate), _) => style.yellow(&format!("a person is asked: gate {gate}")),
            (None, Some(at)) => format!("next poll {}", views::relative(now, at)),
            (None, None) => String::new(),
        };
        let expires = m
            .expires_at
            .map(|at| format!(", expires {}", views::relative(now, at)))
            .unwrap_or_default();
        ctx.line(format!(
            "  {:<5} {}  {}",
            m.todo.to_string(),
            style.dim(&format!("{next}; {last}, {} poll(s){expires}", m.polls)),
            views::one_line(&m.title)
        ))?;
    }
    Ok(())
}

/// The todos that wait, and why; then the expired leases, free to reclaim.
fn waiting(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    let style = ctx.style;
    let expired: Vec<&Claimed> = status.claimed.iter().filter(|c| c.expired).collect();
    if status.waiting.is_empty() && expired.is_empty() {
        return Ok(());
    }
    ctx.line("")?;
    let total = status.waiting_count();
    ctx.line(style.bold(&format!("Waiting ({total})")))?;
    for wait in &status.waiting {
        ctx.line(format!(
            "  {:<5} {}  {}",
            wait.todo.to_string(),
            style.dim(&views::one_line(&wait.reason)),
            views::one_line(&wait.title)
        ))?;
    }
    let unshown = total.saturating_sub((status.waiting.len() + expired.len()) as u64);
    if unshown > 0 {
        ctx.line(style.dim(&format!(
            "  … and {unshown} more waiting (loopx todo list --state open)"
        )))?;
    }
    for claim in expired {
        ctx.line(format!(
            "  {:<5} {}  {}",
            claim.todo.to_string(),
            style.yellow(&format!(
                "lease of {} expired {}: free to reclaim",
                claim.agent,
                views::relative(now, claim.expires_at)
            )),
            views::one_line(&claim.title)
        ))?;
    }
    Ok(())
}

/// What an agent would take next, or why nothing is ready.
fn next(ctx: &mut Ctx, status: &Status) -> Result<(), ExpectedError> {
    let style = ctx.style;
    ctx.line("")?;
    ctx.line(style.bold("Next"))?;
    match status.nothing_ready() {
        Some(why) => ctx.line(style.dim(&format!("  {why}")))?,
        None if status.next.is_empty() => {
            ctx.line(style.dim("  nothing open: add work with loopx todo add \"TITLE\""))?
        }
        None => {}
    }
    if status.goals.len() > 1 {
        // Grouped by goal, in the order agents serve them.
        for goal in status.goals.iter().filter(|g| !g.next.is_empty()) {
            ctx.line(format!(
                "  {} {}",
                style.bold(&goal.id.to_string()),
                views::one_line(&goal.objective)
            ))?;
            next_lines(ctx, &goal.next, "    ")?;
        }
        return Ok(());
    }
    next_lines(ctx, &status.next, "  ")
}

fn next_lines(ctx: &mut Ctx, next: &[Next], indent: &str) -> Result<(), ExpectedError> {
    for next in next {
        ctx.line(format!(
            "{indent}{:<5} [{}] {}",
            next.todo.to_string(),
            next.priority,
            views::one_line(&next.title)
        ))?;
    }
    Ok(())
}

/// The current goal's latest evidence, judged (stale evidence says so).
fn evidence(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    if status.latest_evidence.is_empty() {
        return Ok(());
    }
    ctx.line("")?;
    ctx.line(ctx.style.bold("Latest evidence"))?;
    for e in &status.latest_evidence {
        for line in views::judged_evidence_lines(ctx.style, e, now) {
            ctx.line(format!("  {line}"))?;
        }
    }
    Ok(())
}

/// The todos that rest on stale evidence (as `goal history` marks them), the first named.
fn rests_on_stale(ctx: &mut Ctx, status: &Status) -> Result<(), ExpectedError> {
    let total = status.rests_on_stale_total;
    if total == 0 {
        return Ok(());
    }
    let style = ctx.style;
    ctx.line("")?;
    ctx.line(style.bold(&format!("Resting on stale evidence ({total})")))?;
    for todo in &status.rests_on_stale {
        ctx.line(format!(
            "  {:<5} {}  {}",
            todo.todo.to_string(),
            style.yellow(&views::one_line(&todo.because)),
            views::one_line(&todo.title)
        ))?;
    }
    let unshown = total.saturating_sub(status.rests_on_stale.len() as u64);
    if unshown > 0 {
        ctx.line(style.dim(&format!("  … and {unshown} more (loopx goal history)")))?;
    }
    Ok(())
}

/// The todo counts, each projection's health, and the problems status found on its way.
fn footer(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    let style = ctx.style;
    ctx.line("")?;
    let c = &status.counts;
    ctx.line(style.dim(&format!(
        "Todos: {} open · {} claimed · {} done · {} dropped",
        c.open, c.claimed, c.done, c.dropped
    )))?;
    for p in &status.projections {
        let name = match p.name.as_str() {
            "lark" => "Lark board",
            other => other,
        };
        match (&p.failing_since, &p.error) {
            (Some(since), Some(error)) => ctx.line(style.yellow(&format!(
                "{name}: failing since {} ({error}); retrying",
                loopx_kernel::time::relative(now, *since)
            )))?,
            _ => ctx.line(style.dim(&format!(
                "{name}: in step {} ({})",
                p.ok_at.map_or_else(
                    || "never".to_owned(),
                    |at| loopx_kernel::time::relative(now, at)
                ),
                p.detail
            )))?,
        }
    }
    for problem in &status.problems {
        ctx.line(style.red(problem))?;
    }
    Ok(())
}
