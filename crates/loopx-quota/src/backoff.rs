//! Pauses the decision derives from recent slices: a todo that keeps ending without progress
//! waits longer each time before it is tried again, and an agent whose slices keep failing for
//! temporary reasons backs off exponentially. Both grow from a base and stop at a ceiling, so
//! nothing loops and nothing waits forever; the stall guard asks a person meanwhile.

use crate::Millis;
use crate::decide::{AgentName, Policy, SliceView, TodoView};
use crate::outcome::Outcome;

/// `base × 2^(n−1)`, at most `ceiling`.
fn doubling(base: Millis, n: u32, ceiling: Millis) -> Millis {
    base.saturating_mul(1u64 << n.saturating_sub(1).min(20))
        .min(ceiling)
}

/// Until when `todo` rests after slices that completed and left it open (no progress loopx
/// can see: no report saying done, nothing `done_when` recognised), or reported progress
/// that moved nothing (`unchanged`). `None` when it need not.
///
/// Times are the wall clock's: a slice that seems to have ended after `now` (the clock stepped
/// back since) is taken as ending now, so a pause never lasts longer than it was meant to.
pub(crate) fn no_progress_pause(
    slices: &[SliceView],
    todo: &TodoView,
    policy: &Policy,
    now: Millis,
) -> Option<(Millis, u32)> {
    let since = todo.attempts_since.unwrap_or(0);
    let mut idle = 0;
    let mut last_end = None;
    for slice in slices
        .iter()
        .rev()
        .take_while(|s| s.id > since)
        .filter(|s| s.todo == Some(todo.id))
    {
        match slice.outcome {
            Some(Outcome::Completed | Outcome::Unchanged) => {
                idle += 1;
                last_end = last_end.or(slice.ended_at);
            }
            Some(o) if o.policy().streak == crate::outcome::Streak::Neutral => {}
            _ => break,
        }
    }
    let end = last_end?.min(now);
    let pause = doubling(policy.no_progress_pause_ms, idle, policy.max_pause_ms);
    Some((end.saturating_add(pause), idle))
}

/// Until when `agent` backs off after temporary failures in a row, and how many. The delay
/// doubles from a base to a ceiling, spread by ±20 % (derived from the slice's number, so the
/// decision stays a pure function) so that peers do not retry in step.
pub(crate) fn transient_backoff(
    slices: &[SliceView],
    agent: &AgentName,
    policy: &Policy,
    now: Millis,
) -> Option<(Millis, u32)> {
    let mut failed = 0;
    let mut last = None;
    for slice in slices.iter().rev().filter(|s| s.agent == *agent) {
        match slice.outcome {
            Some(Outcome::Transient) => {
                failed += 1;
                last = last.or(Some(slice));
            }
            None => {}
            Some(_) => break,
        }
    }
    let last = last?;
    let delay = doubling(policy.transient_backoff_ms, failed, policy.max_backoff_ms);
    let spread = 80 + (last.id.wrapping_mul(2_654_435_761) % 41);
    let delay = delay / 100 * spread;
    Some((last.ended_at?.min(now).saturating_add(delay), failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_stops_at_the_ceiling() {
        assert_eq!(doubling(1_000, 1, 60_000), 1_000);
        assert_eq!(doubling(1_000, 3, 60_000), 4_000);
        assert_eq!(doubling(1_000, 40, 60_000), 60_000);
    }
}
