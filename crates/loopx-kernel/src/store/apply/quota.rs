//! Quota transitions: admitting a slice, charging usage, holds.
//!
//! Admission runs `loopx_quota::admission` inside the write transaction, on the state as it is
//! in that transaction: concurrent spends on one account are serialised by the store, so none
//! is lost and none is admitted past the budget.

use loopx_quota::{AgentView, DecideInput, GoalView, Pacing, Policy, WindowLimit, WindowState};

use super::op::Applied;
use crate::errors::{Conflict, KernelError};
use crate::ids::{AgentName, GoalId};
use crate::model::{EventKind, HoldSource, QuotaHold, SliceRecord, Spend};
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;
use crate::time::Timestamp;

/// One agent's quota settings and what it spends.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaRequest {
    pub agent: AgentName,
    pub account: String,
    pub pacing: Option<Pacing>,
    pub windows: Vec<WindowLimit>,
    pub tokens: u64,
    pub cost_usd: f64,
    /// When the slice ran (for the goal's share), if it has.
    pub busy: Option<(Timestamp, Timestamp)>,
}

pub(crate) fn pacing_key(agent: &AgentName) -> String {
    format!("pacing/{agent}")
}

/// The account an agent last spent on: the decision reserves what a running slice is
/// expected to spend on its agent's account, and the kernel does not read profiles.
pub(crate) fn account_key(agent: &AgentName) -> String {
    format!("account/{agent}")
}

pub(crate) fn window_key(account: &str, limit: &WindowLimit) -> String {
    format!("window/{account}/{}", limit.period_ms)
}

pub(crate) fn hold_key(key: &str) -> String {
    format!("hold/{key}")
}

/// The hold keys that apply to an agent: its account's and its own.
pub fn hold_keys(agent: &AgentName, account: &str) -> [String; 2] {
    [account.to_owned(), format!("agent:{agent}")]
}

/// Converts kernel holds for `loopx_quota`.
pub fn hold_views(holds: &[QuotaHold]) -> Vec<loopx_quota::Hold> {
    holds
        .iter()
        .map(|h| loopx_quota::Hold {
            key: h.key.clone(),
            until: h.until.map(|t| t.0),
            reason: h.reason.clone(),
            source: h.source,
            set_at: h.set_at.0,
        })
        .collect()
}

/// Slice time of the goal inside the share window: charged spends plus running slices.
pub fn busy_intervals(
    spends: &[Spend],
    running: &[SliceRecord],
    goal: Option<GoalId>,
    now: Timestamp,
) -> Vec<(u64, u64)> {
    let mut busy: Vec<(u64, u64)> = spends
        .iter()
        // Only the goal's own slice time counts against its share.
        .filter(|s| goal.is_none() || s.goal == goal)
        .filter_map(|s| s.busy.map(|(a, b)| (a.0, b.0)))
        .collect();
    busy.extend(running.iter().map(|s| (s.started_at.0, now.0)));
    busy
}

pub(super) fn spend(
    w: &Writer<'_>,
    req: QuotaRequest,
    admit: bool,
) -> Result<Applied, KernelError> {
    let now = w.now;
    let tat: Option<u64> = w.quota_get(&pacing_key(&req.agent))?;
    let states: Vec<WindowState> = req
        .windows
        .iter()
        .map(|l| {
            w.quota_get(&window_key(&req.account, l))
                .map(Option::unwrap_or_default)
        })
        .collect::<Result<_, _>>()?;
    let keys = hold_keys(&req.agent, &req.account);
    if w.quota_get::<String>(&account_key(&req.agent))?.as_deref() != Some(req.account.as_str()) {
        w.quota_put(&account_key(&req.agent), &req.account)?;
    }
    // The goal is the one active in this transaction: a `goal done` or `goal start` committed
    // while the caller prepared the request must not leave the spend on a stale goal.
    let goal = super::budget::active_goal_record(w)?.map(|g| (g.id, g.share));
    let holds: Vec<QuotaHold> = w
        .quota_holds()?
        .into_iter()
        .filter(|h| keys.contains(&h.key))
        .collect();
    if admit {
        admit_spend(w, &req, goal, tat, &states, &holds)?;
    }
    for (limit, state) in req.windows.iter().zip(&states) {
        let charged = state.charged(limit, now.0, req.tokens, req.cost_usd);
        w.quota_put(&window_key(&req.account, limit), &charged)?;
    }
    let seq = w.next_id(counter::SPEND)?;
    let record = Spend {
        seq,
        agent: req.agent.clone(),
        account: req.account.clone(),
        goal: goal.map(|(id, _)| id),
        admitted: admit,
        tokens: req.tokens,
        cost_usd: req.cost_usd,
        busy: req.busy,
        at: now,
    };
    w.put(tables::SPENDS, seq, &record)?;
    w.event(EventKind::QuotaSpent {
        spend: seq,
        agent: req.agent,
        account: req.account,
        admitted: admit,
        tokens: req.tokens,
        cost_usd: req.cost_usd,
    })?;
    Ok(Applied::Spend(record))
}

/// Admits a spend: the decision's admission on the state of this transaction, then each
/// window's room, then the agent's pacing; a vendor hold this slice has probed is forgotten.
fn admit_spend(
    w: &Writer<'_>,
    req: &QuotaRequest,
    goal: Option<(GoalId, f64)>,
    tat: Option<u64>,
    states: &[WindowState],
    holds: &[QuotaHold],
) -> Result<(), KernelError> {
    quota_admission(w, req, goal, tat, states, holds)?;
    let now = w.now;
    for (limit, state) in req.windows.iter().zip(states) {
        if let Err(until) = state.fits(limit, now.0, req.tokens, req.cost_usd) {
            let reason = format!(
                "a spend of {} tokens and ${:.2} does not fit in the window of {}",
                req.tokens, req.cost_usd, req.account
            );
            return Err(Conflict::QuotaBlocked {
                until: Some(Timestamp(until)),
                reason,
            }
            .into());
        }
    }
    if let Some(pacing) = req.pacing {
        let next = loopx_quota::pacing_check(pacing, tat, now.0).unwrap_or(now.0);
        w.quota_put(&pacing_key(&req.agent), &next)?;
    }
    // The vendor hold that ended has been probed by this slice: forget it.
    for hold in hold_views(holds).iter().filter(|h| {
        h.source == loopx_quota::HoldSource::Vendor && h.ends(now.0).is_some_and(|u| u <= now.0)
    }) {
        w.quota_remove(&hold_key(&hold.key))?;
    }
    Ok(())
}

/// `loopx_quota::admission` on a decision input holding only this agent and the active goal.
fn quota_admission(
    w: &Writer<'_>,
    req: &QuotaRequest,
    goal: Option<(GoalId, f64)>,
    tat: Option<u64>,
    states: &[WindowState],
    holds: &[QuotaHold],
) -> Result<(), KernelError> {
    let now = w.now;
    let policy = Policy::default();
    let since = Timestamp(now.0.saturating_sub(policy.share_window_ms));
    // The goal's busy time matters only under a share below 1; reading the last hour's
    // spends otherwise would cost every admission, under the write lock, a decode of each
    // slice of the hour (tens of thousands with a fleet of agents).
    let busy = match goal {
        Some((_, share)) if share < 1.0 => {
            let running: Vec<SliceRecord> = running_slices(w)?;
            busy_intervals(
                &w.spends_since(since)?,
                &running,
                goal.map(|(id, _)| id),
                now,
            )
        }
        _ => Vec::new(),
    };
    let (agent, goal) = admission_views(req, goal);
    let input = DecideInput {
        now: now.0,
        agent: &agent,
        goal: goal.as_ref(),
        todos: &[],
        gates: &[],
        slices: &[],
        holds: &hold_views(holds),
        pacing_tat: tat,
        windows: states,
        in_flight: &[],
        busy: &busy,
        policy: &policy,
    };
    loopx_quota::admission(&input).map_err(|blocked| {
        Conflict::QuotaBlocked {
            until: blocked.until.map(Timestamp),
            reason: blocked.reason,
        }
        .into()
    })
}

/// The agent and the goal as the decision sees them, from the request's settings alone.
fn admission_views(
    req: &QuotaRequest,
    goal: Option<(GoalId, f64)>,
) -> (AgentView, Option<GoalView>) {
    let agent = AgentView {
        profile_file: None,
        writes: true,
        name: req.agent.clone(),
        capabilities: vec![],
        role: None,
        account: req.account.clone(),
        pacing: req.pacing,
        windows: req.windows.clone(),
    };
    let goal = goal.map(|(id, share)| GoalView {
        id,
        status: loopx_vocab::GoalStatus::Active,
        share,
        spent: Default::default(),
        plans_after: None,
        revision: 1,
        replan_after: None,
    });
    (agent, goal)
}

/// The running slices, from the running index (not a scan of every slice ever recorded).
fn running_slices(w: &Writer<'_>) -> Result<Vec<SliceRecord>, KernelError> {
    w.running_ids()?
        .into_iter()
        .map(|id| w.require(tables::SLICES, id, "slice", crate::ids::SliceId(id)))
        .collect()
}

pub(super) fn hold(
    w: &Writer<'_>,
    key: String,
    until: Option<Timestamp>,
    reason: String,
    source: HoldSource,
) -> Result<Applied, KernelError> {
    if key.trim().is_empty() {
        return Err(crate::errors::Invalid::Empty { field: "account" }.into());
    }
    crate::limits::check_text("reason", &reason, crate::limits::SUMMARY, "")?;
    if let Some(at) = until
        && (at <= w.now || at > w.now.plus(crate::time::MAX_DURATION))
        && source == HoldSource::Manual
    {
        return Err(crate::errors::Invalid::Other(format!(
            "a hold until {at} is out of range: it must end after now and within a year\n(hint: `loopx quota pause` holds until resumed)"
        ))
        .into());
    }
    // A vendor's reset never shortens a hold that lasts longer (a person's pause, or a later
    // reset already seen): the stronger hold stays as it is, with its own reason and source.
    // A person's hold replaces whatever was there: they may know the limit is gone.
    let existing: Option<QuotaHold> = w.quota_get(&hold_key(&key))?;
    let old_ends = |old: &QuotaHold| hold_views(std::slice::from_ref(old))[0].ends(w.now.0);
    if let (Some(old), Some(new), HoldSource::Vendor) = (&existing, until, source)
        && old_ends(old).is_none_or(|u| u >= new.0)
    {
        return Ok(Applied::Hold(old.clone()));
    }
    let record = QuotaHold {
        key: key.clone(),
        until,
        reason: reason.clone(),
        source,
        set_by: w.actor.to_owned(),
        set_at: w.now,
    };
    w.quota_put(&hold_key(&key), &record)?;
    w.event(EventKind::QuotaHeld {
        key,
        until,
        reason,
        source,
    })?;
    Ok(Applied::Hold(record))
}

pub(super) fn resume(w: &Writer<'_>, key: Option<String>) -> Result<Applied, KernelError> {
    let holds = w.quota_holds()?;
    let keys: Vec<String> = holds
        .iter()
        .map(|h| h.key.clone())
        .filter(|k| key.as_ref().is_none_or(|want| want == k))
        .collect();
    if keys.is_empty() {
        let what = key.map_or_else(
            || "nothing is on hold".to_owned(),
            |k| format!("`{k}` is not on hold"),
        );
        return Err(crate::errors::Invalid::Other(format!(
            "{what}\n(hint: `loopx quota status` shows the holds)"
        ))
        .into());
    }
    for k in &keys {
        w.quota_remove(&hold_key(k))?;
    }
    w.event(EventKind::QuotaResumed { keys: keys.clone() })?;
    Ok(Applied::Resumed(keys))
}
