//! `loopx quota status|should-run|spend|hold|pause|resume`.
//!
//! An agent's quota settings come from its profile's `[quota]` table (account, pacing,
//! windows); the state (arrival time, window usage, holds, the spend ledger) from the store.
//! Reads never write: `status` and `should-run` open the store read-only.

use loopx_kernel::decision::DecisionState;
use loopx_kernel::model::{Agent, HoldSource, QuotaHold};
use loopx_kernel::store::Resume;
use loopx_kernel::store::{Applied, NewHold, NewSpend, QuotaRequest};
use loopx_kernel::{AgentName, GateId, GoalId, Invalid, Op, Timestamp, TodoId};
use loopx_quota::{AgentView, Decision, DecisionKind, Pacing, WindowLimit, WindowState};
use serde::Serialize;

use super::{duration, id};
use crate::args::QuotaCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: QuotaCommand) -> Result<(), ExpectedError> {
    match cmd {
        QuotaCommand::Status => status(ctx),
        QuotaCommand::ShouldRun { agent } => should_run(ctx, &agent),
        QuotaCommand::Spend {
            agent,
            tokens,
            cost,
            charge,
            ran,
        } => spend(ctx, &agent, tokens, cost, charge, ran.as_deref()),
        QuotaCommand::Hold {
            account,
            until,
            reason,
        } => {
            let until = parse_until(ctx.now(), &until)?;
            hold(ctx, account, Some(until), reason)
        }
        QuotaCommand::Pause { agent, account } => {
            let key = match (agent, account) {
                (Some(agent), _) => format!("agent:{}", id::<AgentName>(&agent)?),
                (None, Some(account)) => account,
                (None, None) => {
                    return Err(ExpectedError::Usage(
                        "name an --agent or an --account to pause".to_owned(),
                    ));
                }
            };
            hold(ctx, key, None, "paused by a person".to_owned())
        }
        QuotaCommand::Resume { agent, account } => {
            let key = match (agent, account) {
                (Some(agent), _) => Some(format!("agent:{}", id::<AgentName>(&agent)?)),
                (None, account) => account,
            };
            let store = ctx.store()?;
            let Applied::Resumed(keys) =
                store.apply(Op::QuotaResume(Resume { key }), &ctx.actor(), ctx.now())?
            else {
                unreachable!("resume yields the resumed keys")
            };
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

fn hold(
    ctx: &mut Ctx,
    key: String,
    until: Option<Timestamp>,
    reason: String,
) -> Result<(), ExpectedError> {
    let store = ctx.store()?;
    let new = NewHold {
        key,
        until,
        reason,
        source: HoldSource::Manual,
    };
    let hold = store.run(new, &ctx.actor(), ctx.now())?;
    if ctx.json {
        return ctx.json_out(&document("hold", &hold));
    }
    match hold.until {
        Some(until) => ctx.line(format!("Held {} until {until}: {}", hold.key, hold.reason)),
        None => ctx.line(format!("Paused {} until `loopx quota resume`", hold.key)),
    }
}

/// Loads a profile of the project by name.
pub(super) fn load_profile(
    ctx: &Ctx,
    name: &str,
) -> Result<loopx_adapters::LoadedProfile, ExpectedError> {
    let project = ctx.project()?;
    let state = project.state_dir();
    let catalog = loopx_adapters::AdapterCatalog::with_dir(state.join("adapters"));
    loopx_adapters::find_profile(&state.join("profiles"), name, &catalog).map_err(|e| {
        ExpectedError::Config(format!("profile `{name}` cannot be loaded: {e}\n(hint: `loopx profile list` shows the profiles; `loopx profile check` explains)"))
    })
}

/// The agent's record and the quota settings of its profile.
/// The project's budget (`[budget]` in `.loopx/loopx.toml`), as `loopx run` decides with it.
pub(super) fn project_budget(ctx: &Ctx) -> Result<loopx_quota::Budget, ExpectedError> {
    let project = ctx.project()?;
    loopx_adapters::load_project_config(&project.state_dir())
        .map(|config| config.budget)
        .map_err(|err| match err {
            loopx_adapters::LoadError::Invalid(invalid) => {
                ExpectedError::Config(invalid.render_plain())
            }
            other => ExpectedError::Config(other.to_string()),
        })
}

pub(super) fn agent_view(ctx: &Ctx, agent: &Agent) -> Result<AgentView, ExpectedError> {
    let loaded = load_profile(ctx, &agent.profile)?;
    Ok(loopx_supervisor::agent_view(agent, &loaded))
}

fn registered(store: &loopx_kernel::Store, name: &str) -> Result<Agent, ExpectedError> {
    let name: AgentName = id(name)?;
    store.read(|s| s.agent(name.as_str()))?.ok_or_else(|| {
        ExpectedError::from(Invalid::Other(format!(
            "agent `{name}` is not registered\n(hint: `loopx agent add {name} --profile PROFILE`)"
        )))
    })
}

/// DESIGN §4's JSON, plus `format_version`, `probe` and `stalled`.
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
    reason: &'a str,
}

#[derive(Debug, Serialize)]
struct TodoRef<'a> {
    id: &'a TodoId,
    title: &'a str,
}

#[derive(Debug, Serialize)]
struct GateRef<'a> {
    id: &'a GateId,
    question: &'a str,
}

fn should_run(ctx: &mut Ctx, agent: &str) -> Result<(), ExpectedError> {
    let store = ctx.store_read()?;
    let record = registered(&store, agent)?;
    let view = agent_view(ctx, &record)?;
    let now = ctx.now();
    let budget = project_budget(ctx)?;
    let state = store.read(|s| {
        let shared = loopx_kernel::decision::SharedState::read(s, now)?.with_budget(budget);
        DecisionState::for_agent(std::sync::Arc::new(shared), s, view)
    })?;
    drop(store);
    let d = state.decide();
    if ctx.json {
        return ctx.json_out(&should_run_json(&state, &d));
    }
    ctx.line(describe(&d, now))
}

fn should_run_json<'a>(state: &'a DecisionState, d: &'a Decision) -> ShouldRun<'a> {
    ShouldRun {
        format_version: 1,
        decision: d.decision,
        agent: &state.agent.name,
        goal: state.shared.goal.as_ref().map(|g| g.id),
        slice: d.slice,
        todo: d.todo.as_ref().map(|(id, title)| TodoRef { id, title }),
        gate: d
            .gate
            .as_ref()
            .map(|(id, question)| GateRef { id, question }),
        stalled: d.stalled,
        over_budget: d.over_budget,
        goal_met: d.goal_met,
        wake_at: d.wake_at.map(Timestamp),
        probe: d.probe,
        reason: &d.reason,
    }
}

/// `deliver t3 (work): …`, `wait until … (in 2h): …`.
pub(super) fn describe(d: &Decision, now: Timestamp) -> String {
    let word = serde_json::to_value(d.decision)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let target = match (&d.todo, &d.gate) {
        (Some((id, _)), _) => format!(" {id}"),
        (None, Some((id, _))) => format!(" gate {id}"),
        _ => String::new(),
    };
    let kind = d
        .slice
        .and_then(|k| serde_json::to_value(k).ok())
        .and_then(|v| v.as_str().map(|s| format!(" ({s})")))
        .unwrap_or_default();
    let when = match (d.decision, d.wake_at) {
        (DecisionKind::Wait, Some(at)) => format!(
            " until {} ({})",
            Timestamp(at),
            views::relative(now, Timestamp(at))
        ),
        (DecisionKind::Wait, None) => " until resumed".to_owned(),
        _ => String::new(),
    };
    format!("{word}{target}{kind}{when}: {}", d.reason)
}

fn spend(
    ctx: &mut Ctx,
    agent: &str,
    tokens: u64,
    cost: f64,
    charge: bool,
    ran: Option<&str>,
) -> Result<(), ExpectedError> {
    if !cost.is_finite() || cost < 0.0 {
        return Err(ExpectedError::Usage(format!(
            "invalid cost `{cost}`: a non-negative amount in US dollars"
        )));
    }
    let store = ctx.store()?;
    let record = registered(&store, agent)?;
    let view = agent_view(ctx, &record)?;
    let now = ctx.now();
    let busy = match ran {
        Some(text) => {
            let ran = duration("--ran", text)?;
            Some((
                Timestamp(
                    now.0
                        .saturating_sub(u64::try_from(ran.as_millis()).unwrap_or(u64::MAX)),
                ),
                now,
            ))
        }
        None => None,
    };
    let req = QuotaRequest {
        agent: record.name.clone(),
        account: view.account.clone(),
        pacing: view.pacing,
        windows: view.windows.clone(),
        tokens,
        cost_usd: cost,
        busy,
    };
    let new = if charge {
        NewSpend::Charge(req)
    } else {
        NewSpend::Admit(req)
    };
    let spend = store.run(new, &ctx.actor(), now)?;
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

/// One agent's quota, as `status` shows it.
#[derive(Debug, Serialize)]
struct AgentQuota {
    agent: String,
    account: String,
    decision: DecisionKind,
    wake_at: Option<Timestamp>,
    reason: String,
    pacing: Option<Pacing>,
    next_slice_allowed_at: Option<Timestamp>,
    windows: Vec<WindowReport>,
}

#[derive(Debug, Serialize)]
struct WindowReport {
    period_secs: u64,
    tokens_limit: Option<u64>,
    tokens_left: Option<u64>,
    cost_limit_usd: Option<f64>,
    cost_left_usd: Option<f64>,
    resets_at: Option<Timestamp>,
}

fn status(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let store = ctx.store_read()?;
    let now = ctx.now();
    let (agents, holds) = store.read(|s| Ok((s.agents()?, s.quota_holds()?)))?;
    let mut views = Vec::new();
    let mut problems = Vec::new();
    for agent in &agents {
        match agent_view(ctx, agent) {
            Ok(view) => views.push(view),
            Err(e) => problems.push(e.render()),
        }
    }
    let budget = project_budget(ctx).unwrap_or_else(|e| {
        problems.push(e.render());
        loopx_quota::Budget::default()
    });
    // One snapshot for every agent, with the shared part read once.
    let reports = store.read(|s| {
        let shared = std::sync::Arc::new(
            loopx_kernel::decision::SharedState::read(s, now)?.with_budget(budget),
        );
        views
            .into_iter()
            .map(|view| {
                DecisionState::for_agent(shared.clone(), s, view)
                    .map(|state| agent_quota(&state, now))
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    drop(store);
    if ctx.json {
        let doc = serde_json::json!({ "format_version": 1, "agents": reports, "holds": holds, "problems": problems });
        return ctx.json_out(&doc);
    }
    render_status(ctx, &reports, &holds, &problems, now)
}

fn agent_quota(state: &DecisionState, now: Timestamp) -> AgentQuota {
    let d = state.decide();
    let next =
        state.agent.pacing.map(
            |p| match loopx_quota::pacing_check(p, state.pacing_tat, now.0) {
                Ok(_) => now,
                Err(at) => Timestamp(at),
            },
        );
    let windows = state
        .agent
        .windows
        .iter()
        .zip(&state.windows)
        .map(|(limit, s): (&WindowLimit, &WindowState)| {
            let (tokens_left, cost_left_usd) = s.remaining(limit, now.0);
            let rolled = s.rolled(limit, now.0);
            WindowReport {
                period_secs: limit.period_ms / 1000,
                tokens_limit: limit.tokens,
                tokens_left,
                cost_limit_usd: limit.cost_usd,
                cost_left_usd,
                resets_at: (rolled.start != 0).then(|| Timestamp(rolled.start + limit.period_ms)),
            }
        })
        .collect();
    AgentQuota {
        agent: state.agent.name.to_string(),
        account: state.agent.account.clone(),
        decision: d.decision,
        wake_at: d.wake_at.map(Timestamp),
        reason: d.reason,
        pacing: state.agent.pacing,
        next_slice_allowed_at: next,
        windows,
    }
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
            let period =
                loopx_kernel::time::short_duration(std::time::Duration::from_secs(w.period_secs));
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
            ctx.line(format!("  {period:<8}  {}{resets}", parts.join(", ")))?;
        }
    }
    if !holds.is_empty() {
        ctx.line(style.bold("Holds"))?;
        for h in holds {
            let until = match h.until {
                Some(u) if u > now => format!("until {u} ({})", views::relative(now, u)),
                Some(u) => format!(
                    "ended {} (the next slice is a probe)",
                    views::relative(now, u)
                ),
                None => "until `loopx quota resume`".to_owned(),
            };
            ctx.line(format!(
                "  {:<20} {until}: {} [{}]",
                h.key,
                h.reason,
                if h.source == HoldSource::Vendor {
                    "vendor"
                } else {
                    "manual"
                }
            ))?;
        }
    }
    for p in problems {
        ctx.line(style.red(p))?;
    }
    Ok(())
}
