//! Admission by expected cost: what an agent's slices usually and at most spend, learned from
//! its recent slices, and the blocker when a window has no room for that on top of what the
//! account's running slices are expected to spend (`docs/quota.md`). [`crate::decide`]'s
//! admission calls [`too_small`] for each window that is not spent yet.

use crate::Millis;
use crate::decide::{DecideInput, SliceView, window_name};
use crate::outcome::Outcome;
use crate::window::{WindowLimit, WindowState};
use loopx_vocab::AgentName;

/// How many of an agent's last slices that spent something its expected spend is learned from.
const EXPECTED_FROM: usize = 20;
/// Until an agent has this many such slices, loopx is still learning what they spend, and a
/// slice is expected to spend twice the largest of them: the first slices of a goal are where
/// a window is most often overrun (two slices of 29 k and 26 k, then a third admitted with
/// 36 k left spent 59 k), and a cautious first window costs once. An agent with none yet is
/// admitted while there is room.
const LEARNING: usize = 3;
/// The percentile of those slices' spend taken as what a slice usually spends. Higher leaves
/// more of each window unspent (a slice waits for the reset while a smaller one would fit);
/// lower lets more large slices overrun.
const TYPICAL_PERCENTILE: usize = 75;
/// How far past its budget a window may go if a slice spends as much as the largest of the
/// agent's recent ones, in percent of the budget: the bound on an overrun.
const OVERRUN_TOLERATED: u64 = 25;

/// Tokens and dollars.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Amount {
    pub tokens: u64,
    pub cost_usd: f64,
}

impl std::ops::Add for Amount {
    type Output = Amount;
    fn add(self, other: Amount) -> Amount {
        Amount {
            tokens: self.tokens.saturating_add(other.tokens),
            cost_usd: self.cost_usd + other.cost_usd,
        }
    }
}

/// What one slice of an agent is expected to spend, learned from its recent slices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpectedSpend {
    /// What a slice usually spends: the [`TYPICAL_PERCENTILE`]th percentile (nearest rank) of
    /// their tokens, and of their cost.
    pub typical: Amount,
    /// The most one of them spent.
    pub largest: Amount,
    /// How many slices it was learned from.
    pub from: usize,
}

impl ExpectedSpend {
    /// Where the typical figure comes from, for a decision's reason.
    pub fn basis(&self) -> String {
        match self.from {
            n if n < LEARNING => format!("twice the largest of its first {n}, while loopx learns"),
            n => format!("the {TYPICAL_PERCENTILE}th percentile of its last {n} slices"),
        }
    }
}

/// What a slice of `agent` is expected to spend, learned from its last [`EXPECTED_FROM`]
/// slices that spent anything and were not cut short by a usage limit or by loopx: twice the
/// largest of them while there are fewer than [`LEARNING`]; `None` with none.
pub fn expected_spend(agent: &AgentName, slices: &[SliceView]) -> Option<ExpectedSpend> {
    let spent: Vec<&SliceView> = slices
        .iter()
        .rev()
        .filter(|s| s.agent == *agent && (s.tokens > 0 || s.cost_usd > 0.0))
        // A slice the vendor's limit or loopx cut short says nothing of a slice's appetite.
        .filter(|s| {
            !matches!(
                s.outcome,
                Some(Outcome::UsageLimited | Outcome::Interrupted)
            )
        })
        .take(EXPECTED_FROM)
        .collect();
    if spent.is_empty() {
        return None;
    }
    let mut tokens: Vec<u64> = spent.iter().map(|s| s.tokens).collect();
    tokens.sort_unstable();
    // A cost that is not a number (a CLI's garbled report) counts as none.
    let mut costs: Vec<f64> = spent
        .iter()
        .map(|s| {
            if s.cost_usd.is_finite() {
                s.cost_usd
            } else {
                0.0
            }
        })
        .collect();
    costs.sort_unstable_by(f64::total_cmp);
    let from = spent.len();
    let at = |rank: usize| Amount {
        tokens: tokens[rank],
        cost_usd: costs[rank],
    };
    let largest = at(from - 1);
    if from < LEARNING {
        let twice = largest + largest;
        return Some(ExpectedSpend {
            typical: twice,
            largest: twice,
            from,
        });
    }
    // Nearest rank: the smallest value that much of the sample is at or below.
    let rank = (from * TYPICAL_PERCENTILE).div_ceil(100).max(1) - 1;
    Some(ExpectedSpend {
        typical: at(rank),
        largest,
        from,
    })
}

/// What the slices running on the account are expected to spend, together, and how many
/// there are: each counts as its own agent's expected spend (nothing for an agent too new to
/// have one). Their spend is charged only when they end, so without this two agents on one
/// account would each be admitted on the same room.
pub(crate) fn reserved_spend(input: &DecideInput<'_>) -> (Amount, Amount, usize) {
    input
        .in_flight
        .iter()
        .filter_map(|agent| expected_spend(agent, input.slices))
        .fold((Amount::default(), Amount::default(), 0), |(t, l, n), e| {
            (t + e.typical, l + e.largest, n + 1)
        })
}

/// The most tokens a slice admitted now may spend before loopx stops it: what keeps every
/// token window of the agent's account at most [`OVERRUN_TOLERATED`] percent past its budget,
/// `reserved` (what the account's running slices usually spend) kept aside for them.
/// Admission alone bounds the overrun only as far as an agent's history foretells its next
/// slice (one whose slices had spent at most 19 k spent 51 k and took a window to 129 %);
/// this bounds it whatever the slice does, as far as the agent reports its usage as it goes.
/// `None` when no window counts tokens, and for the one slice an empty window with nothing
/// running admits whatever it costs (a budget smaller than one slice must still get work
/// done: cut, such a slice would never finish).
pub(crate) fn spend_ceiling(input: &DecideInput<'_>, reserved: Amount) -> Option<u64> {
    input
        .agent
        .windows
        .iter()
        .zip(input.windows)
        .filter_map(|(limit, state)| {
            let budget = limit.tokens?;
            let rolled = state.rolled(limit, input.now);
            let fresh = rolled.tokens == 0 && rolled.cost_micros == 0;
            if fresh && input.in_flight.is_empty() {
                return None;
            }
            Some(
                tolerated(budget)
                    .saturating_sub(rolled.tokens)
                    .saturating_sub(reserved.tokens),
            )
        })
        .min()
}

/// A token budget and the overrun it tolerates.
fn tolerated(budget: u64) -> u64 {
    budget.saturating_add((budget / 100).saturating_mul(OVERRUN_TOLERATED))
}

/// The blocker when `state`'s window has room left, but not for what a slice usually spends on
/// top of what the account's running slices are expected to spend, or so little that a slice
/// as large as the agent's largest recent one would take it more than [`OVERRUN_TOLERATED`]
/// percent past its budget. Admitted anyway, the slice would overrun the budget (the excess
/// becomes the next window's debt, and the vendor's own limit may stop it half-way). An agent
/// with no estimate yet counts as spending nothing itself, but the running slices' share is
/// kept all the same. A window with nothing spent in it and no slice running on the account
/// admits one slice whatever it is expected to cost: a budget smaller than one slice would
/// otherwise never run anything.
pub(crate) fn too_small(
    input: &DecideInput<'_>,
    limit: &WindowLimit,
    state: WindowState,
    expected: Option<ExpectedSpend>,
    (reserved, reserved_largest, running): (Amount, Amount, usize),
) -> Option<(Option<Millis>, String)> {
    let now = input.now;
    let rolled = state.rolled(limit, now);
    if rolled.tokens == 0 && rolled.cost_micros == 0 && input.in_flight.is_empty() {
        return None;
    }
    if expected.is_none() && running == 0 {
        return None;
    }
    let own = expected.map_or(Amount::default(), |e| e.typical);
    let own_largest = expected.map_or(Amount::default(), |e| e.largest);
    let typical = own + reserved;
    let largest = own_largest + reserved_largest;
    let tolerated = WindowLimit {
        period_ms: limit.period_ms,
        tokens: limit.tokens.map(tolerated),
        cost_usd: limit
            .cost_usd
            .map(|c| c + c * OVERRUN_TOLERATED as f64 / 100.0),
    };
    let fits = |limit: &WindowLimit, amount: Amount| {
        rolled.fits(limit, now, amount.tokens, amount.cost_usd)
    };
    let (at, checked, amount, each, why) = match fits(limit, typical) {
        Err(at) => (
            at,
            limit,
            typical,
            own,
            expected.map(|e| e.basis()).unwrap_or_default(),
        ),
        Ok(()) => {
            let at = fits(&tolerated, largest).err()?;
            let why = expected
                .map(|e| {
                    format!(
                        "the largest of its last {}; at most {OVERRUN_TOLERATED} % past the budget",
                        e.from
                    )
                })
                .unwrap_or_default();
            (at, &tolerated, largest, own_largest, why)
        }
    };
    let tokens_short = checked
        .tokens
        .is_some_and(|max| rolled.tokens.saturating_add(amount.tokens) > max);
    let (tokens_left, cost_left) = rolled.remaining(limit, now);
    // In tokens when they are what is short, or all the window counts; else in dollars.
    let in_tokens = tokens_short || cost_left.is_none();
    let (left, each, together) = match (tokens_left, cost_left) {
        (Some(left), _) if in_tokens => (
            format!("{left} tokens"),
            each.tokens.to_string(),
            amount.tokens.to_string(),
        ),
        (_, Some(left)) => (
            format!("${left:.2}"),
            format!("${:.2}", each.cost_usd),
            format!("${:.2}", amount.cost_usd),
        ),
        _ => return None,
    };
    let slices = match running {
        1 => "the running slice on it".to_owned(),
        n => format!("the {n} running slices on it"),
    };
    let what = match (expected, running) {
        (Some(_), 0) => format!(
            "a slice of {} spends up to {each} ({why})",
            input.agent.name
        ),
        (Some(_), _) => format!(
            "a slice of {} spends up to {each} ({why}), and {slices} {together} with it",
            input.agent.name
        ),
        (None, 1) => format!("{slices} is expected to spend {together}"),
        (None, _) => format!("{slices} are expected to spend {together}"),
    };
    Some((
        Some(at),
        format!(
            "the {} window of {} has {left} left; {what}",
            window_name(limit.period_ms),
            input.agent.account,
        ),
    ))
}
