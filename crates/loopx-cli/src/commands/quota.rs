//! `loopx quota status|should-run|spend|hold|pause|resume`: the application layer's quota
//! operations, shown.
//!
//! An agent's quota settings come from its profile's `[quota]` table (account, pacing,
//! windows); the state (arrival time, window usage, holds, the spend ledger) from the store.
//! Reads never write: `status` and `should-run` open the store read-only.

use loopx_app::App;
use loopx_app::quota::{AgentQuota, HoldTarget, QuotaStatus, SpendReport};
use loopx_domain::decision::DecisionState;
use loopx_kernel::model::QuotaHold;
use loopx_kernel::{AgentName, GateId, GoalId, Timestamp, TodoId};
use loopx_quota::{Decision, DecisionKind};
use serde::Serialize;

use super::{duration, id};
use crate::args::QuotaCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: QuotaCommand) -> Result<(), ExpectedError> {
    if let QuotaCommand::Status { all: true } = cmd {
        return status_all(ctx);
    }
    let app = ctx.app()?;
    match cmd {
        QuotaCommand::Status { .. } => status(ctx, &app),
        QuotaCommand::ShouldRun { agent } => should_run(ctx, &app, &id(&agent)?),
        QuotaCommand::Spend {
            agent,
            tokens,
            cost,
            charge,
            ran,
        } => {
            let report = SpendReport {
                agent: id(&agent)?,
                tokens,
                cost_usd: cost,
                charge,
                ran: ran.as_deref().map(|r| duration("--ran", r)).transpose()?,
            };
            spend(ctx, &app, report)
        }
        QuotaCommand::Hold {
            account,
            until,
            reason,
        } => {
            let until = parse_until(ctx.now(), &until)?;
            let hold = app.hold(&HoldTarget::Account(account), Some(until), reason)?;
            show_hold(ctx, &hold)
        }
        QuotaCommand::Pause { agent, account } => {
            let target = match (agent, account) {
                (Some(agent), _) => HoldTarget::Agent(id::<AgentName>(&agent)?),
                (None, Some(account)) => HoldTarget::Account(account),
                (None, None) => {
                    return Err(ExpectedError::Usage(
                        "name an --agent or an --account to pause".to_owned(),
                    ));
                }
            };
            let hold = app.pause(&target)?;
            show_hold(ctx, &hold)
        }
        QuotaCommand::Resume { agent, account } => {
            let target = match (agent, account) {
                (Some(agent), _) => Some(HoldTarget::Agent(id::<AgentName>(&agent)?)),
                (None, account) => account.map(HoldTarget::Account),
            };
            let keys = app.resume(target.as_ref())?;
            if ctx.json {
                ctx.json_out(&document("resumed", &keys))
            } else {
                ctx.line(format!("Resumed {}", keys.join(", ")))
            }
        }
    }
}

/// `2026-11-30T15:00:00Z` or `2h` from now.
fn parse_until(now: Timestamp, text: &str) -> Result<Timestamp, ExpectedError> {
    if let Some(at) = Timestamp::parse_rfc3339(text) {
        if at <= now {
            return Err(ExpectedError::Usage(format!(
                "--until `{text}` is not in the future\n(hint: `loopx quota resume` lifts a hold)"
            )));
        }
        if at > now.plus(loopx_kernel::time::MAX_DURATION) {
            return Err(ExpectedError::Usage(format!(
                "--until `{text}` is more than a year away\n(hint: `loopx quota pause` holds until resumed)"
            )));
        }
        return Ok(at);
    }
    duration("--until", text).map(|d| now.plus(d)).map_err(|_| {
        ExpectedError::Usage(format!(
            "invalid time `{text}` for --until\n(hint: an RFC 3339 time like 2026-11-30T15:00:00Z, or a duration from now like 2h)"
        ))
    })
}

fn show_hold(ctx: &mut Ctx, hold: &QuotaHold) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&document("hold", hold));
    }
    match hold.until {
        Some(until) => ctx.line(format!("Held {} until {until}: {}", hold.key, hold.reason)),
        None => ctx.line(format!("Paused {} until `loopx quota resume`", hold.key)),
    }
}

/// `should-run --json`: the decision as `docs/cli.md` ("Quota") spells it.
#[derive(Debug, Serialize)]
struct ShouldRun<'a> {
    format_version: u32,
    decision: DecisionKind,
    agent: &'a AgentName,
    goal: Option<GoalId>,
    slice: Option<loopx_quota::SliceKind>,
    todo: Option<TodoRef<'a>>,
    gate: Option<GateRef<'a>>,
    stalled: Option<TodoId>,
    over_budget: bool,
    goal_met: bool,
    wake_at: Option<Timestamp>,
    probe: bool,
    /// The most tokens the slice may spend before loopx stops it (`null`: no ceiling).
    max_tokens: Option<u64>,
    /// For quiet: the monitor the open work waits for, and its next poll.
    waiting_for: Option<WaitingRef<'a>>,
    reason: &'a str,
}

#[derive(Debug, Serialize)]
struct WaitingRef<'a> {
    todo: &'a TodoId,
    title: &'a str,
    next_poll: Timestamp,
}

#[derive(Debug, Serialize)]
struct TodoRef<'a> {
    id: &'a TodoId,
    title: &'a str,
}

#[derive(Debug, Serialize)]
struct GateRef<'a> {
    id: GateId,
    question: &'a str,
}

fn should_run(ctx: &mut Ctx, app: &App, agent: &AgentName) -> Result<(), ExpectedError> {
    let for_agent = app.decision_for(agent)?;
    if ctx.json {
        return ctx.json_out(&should_run_json(&for_agent.state, &for_agent.decision));
    }
    ctx.line(loopx_app::quota::describe(&for_agent.decision, ctx.now()))
}

fn should_run_json<'a>(state: &'a DecisionState, d: &'a Decision) -> ShouldRun<'a> {
    ShouldRun {
        format_version: 1,
        decision: d.kind(),
        agent: &state.agent.name,
        goal: state.goal,
        slice: d.slice(),
        todo: d.todo().map(|(id, title)| TodoRef { id, title }),
        gate: d.gate().map(|(id, question)| GateRef { id, question }),
        stalled: d.stalled(),
        over_budget: d.over_budget(),
        goal_met: d.goal_met(),
        wake_at: d.wake_at().map(Timestamp),
        probe: d.probe(),
        max_tokens: d.max_tokens(),
        waiting_for: d.waiting_for().map(|w| WaitingRef {
            todo: &w.todo.0,
            title: &w.todo.1,
            next_poll: Timestamp(w.next_poll),
        }),
        reason: d.reason(),
    }
}

fn spend(ctx: &mut Ctx, app: &App, report: SpendReport) -> Result<(), ExpectedError> {
    let spend = app.spend(report)?;
    if ctx.json {
        return ctx.json_out(&document("spend", &spend));
    }
    let what = if spend.admitted {
        "Admitted a slice"
    } else {
        "Charged usage"
    };
    ctx.line(format!(
        "{what} for {} on {} (spend {}: {} tokens, ${:.4})",
        spend.agent, spend.account, spend.seq, spend.tokens, spend.cost_usd
    ))
}

fn status(ctx: &mut Ctx, app: &App) -> Result<(), ExpectedError> {
    let status = app.quota_status()?;
    if ctx.json {
        return ctx.json_out(&status);
    }
    let QuotaStatus {
        agents,
        holds,
        problems,
        ..
    } = status;
    render_status(ctx, &agents, &holds, &problems, ctx.now())
}

/// `quota status --all`: the accounts of the person's account book.
fn status_all(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let Some(book) = ctx.store.account_book.clone() else {
        return Err(ExpectedError::Usage(
            "neither XDG_STATE_HOME nor HOME is set (to an absolute path), so there is no account book\n(hint: set HOME, or XDG_STATE_HOME for the directory loopx keeps it in)".to_owned(),
        ));
    };
    let status = loopx_app::accounts::accounts_status(&book, ctx.store.wait)?;
    if ctx.json {
        return ctx.json_out(&status);
    }
    if status.accounts.is_empty() {
        return ctx.line(format!(
            "No account in the shared ledger yet ({}): projects add theirs as they spend.",
            status.book
        ));
    }
    let style = ctx.style;
    for account in &status.accounts {
        ctx.line(style.bold(&format!("account {}", account.account)))?;
        for p in &account.projects {
            ctx.line(format!(
                "  project {}: {} spends, {} tokens, ${:.2}, last {}",
                p.project, p.spends, p.tokens, p.cost_usd, p.last_at
            ))?;
        }
        for w in &account.windows {
            let resets = w
                .resets_at
                .map(|t| format!(", resets {t}"))
                .unwrap_or_default();
            ctx.line(format!(
                "  window {}s: {} tokens, ${:.2} spent{resets}",
                w.period_secs, w.tokens, w.cost_usd
            ))?;
        }
        for h in &account.holds {
            let until = h
                .until
                .map_or("until resumed".to_owned(), |u| format!("until {u}"));
            ctx.line(format!("  held {until}: {}", h.reason))?;
        }
    }
    Ok(())
}

fn render_status(
    ctx: &mut Ctx,
    reports: &[AgentQuota],
    holds: &[QuotaHold],
    problems: &[String],
    now: Timestamp,
) -> Result<(), ExpectedError> {
    let style = ctx.style;
    if reports.is_empty() && problems.is_empty() {
        ctx.line("No agents yet. Register one: loopx agent add NAME --profile PROFILE")?;
    }
    for r in reports {
        ctx.line(style.bold(&format!("{} (account {})", r.agent, r.account)))?;
        let d = serde_json::to_value(r.decision)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        ctx.line(format!("  now:      {d}: {}", r.reason))?;
        if let (Some(p), Some(next)) = (r.pacing, r.next_slice_allowed_at) {
            let when = if next <= now {
                "now".to_owned()
            } else {
                format!("{next} ({})", views::relative(now, next))
            };
            ctx.line(format!(
                "  pacing:   {} slices/hour, burst {}; next slice {when}",
                p.slices_per_hour, p.burst
            ))?;
        }
        for w in &r.windows {
            ctx.line(window_line(w, now))?;
        }
    }
    if !holds.is_empty() {
        ctx.line(style.bold("Holds"))?;
        for h in holds {
            ctx.line(hold_line(h, now))?;
        }
    }
    for p in problems {
        ctx.line(style.red(p))?;
    }
    Ok(())
}

/// One quota window of an agent: what is left, and when it resets.
fn window_line(w: &loopx_app::quota::WindowReport, now: Timestamp) -> String {
    let period = loopx_kernel::time::short_duration(std::time::Duration::from_secs(w.period_secs));
    let mut parts = Vec::new();
    if let (Some(left), Some(limit)) = (w.tokens_left, w.tokens_limit) {
        parts.push(format!("{left} of {limit} tokens left"));
    }
    if let (Some(left), Some(limit)) = (w.cost_left_usd, w.cost_limit_usd) {
        parts.push(format!("${left:.2} of ${limit:.2} left"));
    }
    let resets = w
        .resets_at
        .map(|t| format!("; resets {}", views::relative(now, t)))
        .unwrap_or_else(|| "; not started".to_owned());
    format!("  {period:<8}  {}{resets}", parts.join(", "))
}

/// One hold: what it holds, until when, why, and who set it.
fn hold_line(h: &QuotaHold, now: Timestamp) -> String {
    let until = match h.until {
        Some(u) if u > now => format!("until {u} ({})", views::relative(now, u)),
        Some(u) => format!(
            "ended {} (the next slice is a probe)",
            views::relative(now, u)
        ),
        None => "until `loopx quota resume`".to_owned(),
    };
    format!("  {:<20} {until}: {} [{}]", h.key, h.reason, h.source)
}
