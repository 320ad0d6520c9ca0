//! An account's rules: the windows and pacing a spend is admitted against and charged to.
//!
//! The kernel records a spend and runs these rules inside its write transaction
//! ([`loopx_kernel::store::AccountRules`]), so concurrent spends on one account are
//! serialised; the math is `loopx-quota`'s. The decision reads the same state through
//! [`pacing_tat`] and [`window_state`], under the same keys. An account's windows are the
//! account's (`Ledger::account_get`: in the per-user account book when the project shares its
//! ledger, so every project on the account spends one budget); an agent's pacing is its own.

use std::sync::Arc;

use loopx_kernel::errors::Conflict;
use loopx_kernel::model::QuotaHold;
use loopx_kernel::store::{AccountRules, Ledger, QuotaRequest, Snapshot};
use loopx_kernel::{AgentName, GoalId, KernelError, Timestamp};
use loopx_quota::{
    AgentView, DecideInput, GoalView, HoldSource, Pacing, Policy, WindowLimit, WindowState,
};

/// The limits of the account an agent spends on, as its profile sets them.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountLimits {
    pub pacing: Option<Pacing>,
    pub windows: Vec<WindowLimit>,
}

/// A spend by the agent `view` describes, for `goal`'s slice: an admission (zero usage) or a
/// charge.
pub fn request(
    view: &AgentView,
    tokens: u64,
    cost_usd: f64,
    busy: Option<(Timestamp, Timestamp)>,
    goal: Option<loopx_kernel::GoalId>,
) -> QuotaRequest {
    QuotaRequest {
        goal,
        agent: view.name.clone(),
        account: view.account.clone(),
        tokens,
        cost_usd,
        busy,
        rules: Arc::new(AccountLimits {
            pacing: view.pacing,
            windows: view.windows.clone(),
        }),
    }
}

fn pacing_key(agent: &AgentName) -> String {
    format!("pacing/{agent}")
}

fn window_key(account: &str, limit: &WindowLimit) -> String {
    format!("window/{account}/{}", limit.period_ms)
}

/// The agent's pacing state (its theoretical arrival time), if it paced before.
pub fn pacing_tat(snap: &Snapshot<'_>, agent: &AgentName) -> Result<Option<u64>, KernelError> {
    snap.quota_value(&pacing_key(agent))
}

/// What `account` spent in the window `limit` describes (empty when nothing was spent).
pub fn window_state(
    snap: &Snapshot<'_>,
    account: &str,
    limit: &WindowLimit,
) -> Result<WindowState, KernelError> {
    snap.account_value(&window_key(account, limit))
        .map(Option::unwrap_or_default)
}

/// Kernel holds as the quota model sees them.
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

impl AccountRules for AccountLimits {
    fn charge(
        &self,
        ledger: &Ledger<'_>,
        spend: &QuotaRequest,
        admit: bool,
    ) -> Result<(), KernelError> {
        let now = ledger.now();
        let tat: Option<u64> = ledger.get(&pacing_key(&spend.agent))?;
        let states: Vec<WindowState> = self
            .windows
            .iter()
            .map(|l| {
                ledger
                    .account_get(&window_key(&spend.account, l))
                    .map(Option::unwrap_or_default)
            })
            .collect::<Result<_, _>>()?;
        if admit {
            self.admit(ledger, spend, tat, &states)?;
        }
        for (limit, state) in self.windows.iter().zip(&states) {
            let charged = state.charged(limit, now.0, spend.tokens, spend.cost_usd);
            ledger.account_put(&window_key(&spend.account, limit), &charged)?;
        }
        Ok(())
    }
}

impl AccountLimits {
    /// Admits a spend: the decision's admission on the state of this transaction, then each
    /// window's room, then the agent's pacing; a vendor hold this slice has probed is
    /// forgotten.
    fn admit(
        &self,
        ledger: &Ledger<'_>,
        spend: &QuotaRequest,
        tat: Option<u64>,
        states: &[WindowState],
    ) -> Result<(), KernelError> {
        let now = ledger.now();
        self.admission(ledger, spend, tat, states)?;
        for (limit, state) in self.windows.iter().zip(states) {
            if let Err(until) = state.fits(limit, now.0, spend.tokens, spend.cost_usd) {
                let reason = format!(
                    "a spend of {} tokens and ${:.2} does not fit in the window of {}",
                    spend.tokens, spend.cost_usd, spend.account
                );
                return Err(Conflict::QuotaBlocked {
                    until: Some(Timestamp(until)),
                    reason,
                }
                .into());
            }
        }
        if let Some(pacing) = self.pacing {
            let next = loopx_quota::pacing_check(pacing, tat, now.0).unwrap_or(now.0);
            ledger.put(&pacing_key(&spend.agent), &next)?;
        }
        // The vendor hold that ended has been probed by this slice: forget it.
        for hold in ledger.holds() {
            if hold.source == HoldSource::Vendor && hold.ends(now).is_some_and(|u| u <= now) {
                ledger.forget_hold(&hold.key)?;
            }
        }
        Ok(())
    }

    /// `loopx_quota::admission` on a decision input holding only this agent and the active
    /// goal.
    fn admission(
        &self,
        ledger: &Ledger<'_>,
        spend: &QuotaRequest,
        tat: Option<u64>,
        states: &[WindowState],
    ) -> Result<(), KernelError> {
        let now = ledger.now();
        let policy = Policy::default();
        let since = Timestamp(now.0.saturating_sub(policy.share_window_ms));
        // The goal's busy time matters only under a share below 1; reading the last hour's
        // spends otherwise would cost every admission, under the write lock, a decode of each
        // slice of the hour (tens of thousands with a fleet of agents).
        let busy = match ledger.goal() {
            Some((_, share)) if share < 1.0 => ledger.goal_busy(since)?,
            _ => Vec::new(),
        };
        let (agent, goal) = self.views(spend, ledger.goal());
        let input = DecideInput {
            now: now.0,
            agent: &agent,
            goal: goal.as_ref(),
            todos: &[],
            gates: &[],
            slices: &[],
            holds: &hold_views(ledger.holds()),
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

    /// The agent and the goal as the decision sees them, from the spend's settings alone.
    fn views(
        &self,
        spend: &QuotaRequest,
        goal: Option<(GoalId, f64)>,
    ) -> (AgentView, Option<GoalView>) {
        let agent = AgentView {
            profile_file: None,
            writes: true,
            name: spend.agent.clone(),
            capabilities: vec![],
            role: None,
            account: spend.account.clone(),
            pacing: self.pacing,
            windows: self.windows.clone(),
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
}
