//! The quota part of the decision: holds, the goal's share, pacing and windows, each a
//! blocker with a reason and the moment it lifts (`None`: when a person resumes). The kernel
//! calls [`admission`] inside the write transaction that records a spend; [`decide`] calls it
//! to wait.
//!
//! [`decide`]: crate::decide

use serde::Serialize;

use crate::Millis;
use crate::decide::{DecideInput, Hold, window_name};
use crate::expected::{expected_spend, reserved_spend, too_small};
use crate::pacing::pacing_check;
use crate::share::share_wait;

/// Why quota does not allow a slice now, and until when (`None`: until a person resumes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocked {
    pub until: Option<Millis>,
    /// The binding constraint, in one word.
    pub on: crate::WaitOn,
    pub reason: String,
}

/// What blocks a slice: until when (`None`: until a person resumes), which constraint, and why.
type Blocker = (Option<Millis>, crate::WaitOn, String);

/// The quota part of the decision: holds, the goal's share, pacing and windows. `Ok` when all
/// of them allow a slice at `input.now`; otherwise the moment they all do, with the reason of
/// the binding one. The kernel calls this inside the write transaction that records a spend,
/// so concurrent spends are admitted one at a time against the same budget.
pub fn admission(input: &DecideInput<'_>) -> Result<(), Blocked> {
    let now = input.now;
    let mut blockers: Vec<Blocker> = input
        .holds
        .iter()
        .filter_map(|hold| hold_blocker(hold, now))
        .collect();
    blockers.extend(share_blocker(input));
    blockers.extend(pacing_blocker(input));
    blockers.extend(window_blockers(input));
    // Indefinite blockers win; otherwise the latest time, since every constraint must allow it.
    let binding = blockers
        .iter()
        .find(|(at, _, _)| at.is_none())
        .or_else(|| blockers.iter().max_by_key(|(at, _, _)| *at));
    match binding {
        None => Ok(()),
        Some((until, on, reason)) => Err(Blocked {
            until: *until,
            on: *on,
            reason: reason.clone(),
        }),
    }
}

/// A hold a person set (until resumed), or one that has not ended yet.
fn hold_blocker(hold: &Hold, now: Millis) -> Option<Blocker> {
    match hold.ends(now) {
        None => Some((
            None,
            crate::WaitOn::Hold,
            format!(
                "{} is paused by a person ({}); `loopx quota resume` lifts it",
                hold.key, hold.reason
            ),
        )),
        Some(until) if until > now => Some((
            Some(until),
            crate::WaitOn::Hold,
            format!("{} is on hold: {}", hold.key, hold.reason),
        )),
        Some(_) => None,
    }
}

/// A goal paused by a share of 0, or one that used its share of the window.
fn share_blocker(input: &DecideInput<'_>) -> Option<Blocker> {
    let goal = input.goal?;
    if goal.share <= 0.0 {
        return Some((
            None,
            crate::WaitOn::Share,
            format!("goal {} has a share of 0 (paused)", goal.id),
        ));
    }
    let at = share_wait(
        input.busy,
        goal.share,
        input.policy.share_window_ms,
        input.now,
    )?;
    Some((
        Some(at),
        crate::WaitOn::Share,
        format!(
            "goal {} used its {:.0}% share of the last hour",
            goal.id,
            goal.share * 100.0
        ),
    ))
}

/// The agent's pacing, naming the profile that sets it.
fn pacing_blocker(input: &DecideInput<'_>) -> Option<Blocker> {
    let pacing = input.agent.pacing?;
    let at = pacing_check(pacing, input.pacing_tat, input.now).err()?;
    let set_in = input
        .agent
        .profile_file
        .as_deref()
        .map(|file| format!(" (quota.slices_per_hour in {file})"))
        .unwrap_or_default();
    Some((
        Some(at),
        crate::WaitOn::Pacing,
        format!(
            "{} is paced at {} slices an hour{set_in}",
            input.agent.name, pacing.slices_per_hour
        ),
    ))
}

/// Each window that is spent, or too small for what the agent's slices are expected to spend.
fn window_blockers(input: &DecideInput<'_>) -> Vec<Blocker> {
    let expected = expected_spend(&input.agent.name, input.slices);
    let reserved = reserved_spend(input);
    let windows = input.agent.windows.iter().zip(input.windows);
    windows
        .filter_map(
            |(limit, state)| match state.exhausted_until(limit, input.now) {
                Some(at) => Some((
                    Some(at),
                    crate::WaitOn::Window,
                    format!(
                        "the {} window of {} is spent",
                        window_name(limit.period_ms),
                        input.agent.account
                    ),
                )),
                None => too_small(input, limit, *state, expected, reserved)
                    .map(|(at, why)| (at, crate::WaitOn::Window, why)),
            },
        )
        .collect()
}
