//! A goal's duty share: the fraction of a rolling window its slices may be running.
//!
//! Like the Python LoopX's compute share: `0.5` over an hour means at most thirty minutes of
//! slice time in any hour. Slices are charged by how long they ran; when the window's busy time
//! reaches the share, the next slice waits until enough old busy time has slid out of it.

use crate::Millis;

/// Given past slices as `(start, end)` intervals, when may the next slice start? `None`: now.
pub fn share_wait(
    busy: &[(Millis, Millis)],
    share: f64,
    window_ms: Millis,
    now: Millis,
) -> Option<Millis> {
    if share >= 1.0 || window_ms == 0 {
        return None;
    }
    let allowed = (share.max(0.0) * window_ms as f64) as u64;
    let used = |at: Millis| -> u64 {
        let from = at.saturating_sub(window_ms);
        busy.iter()
            .map(|&(s, e)| e.min(at).saturating_sub(s.max(from)))
            .sum()
    };
    if used(now) < allowed {
        return None;
    }
    // Busy time only leaves the window as it slides; find the first moment it drops below the
    // allowance. The candidates are the moments an interval's edge leaves the window.
    let mut candidates: Vec<Millis> = busy
        .iter()
        .flat_map(|&(s, e)| [s.saturating_add(window_ms), e.saturating_add(window_ms)])
        .filter(|&t| t > now)
        .collect();
    candidates.sort_unstable();
    let mut previous = now;
    for candidate in candidates {
        // Within (previous, candidate] used time falls linearly or stays; check the end and,
        // by linearity, solve for the exact moment.
        let (u0, u1) = (used(previous), used(candidate));
        if u1 < allowed {
            let falling = u0.saturating_sub(u1);
            if falling == 0 {
                return Some(candidate);
            }
            let need = u0 - allowed + 1;
            let span = candidate - previous;
            return Some(previous + (need * span).div_ceil(falling).min(span));
        }
        previous = candidate;
    }
    Some(previous)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: Millis = 3_600_000;
    const T0: Millis = 1_790_000_000_000;

    #[test]
    fn half_share_allows_thirty_minutes_an_hour() {
        let busy = [(T0, T0 + H / 2)];
        let now = T0 + H / 2;
        let wake = share_wait(&busy, 0.5, H, now).expect("the half hour is used");
        // The busy half hour starts leaving the window at T0 + H.
        assert_eq!(wake, T0 + H + 1);
        assert_eq!(share_wait(&busy, 0.5, H, wake), None);
    }

    /// The worked example of `docs/quota.md`: three 12-minute slices from 09:00 at share 0.5.
    #[test]
    fn the_worked_example_waits_until_ten_past_six() {
        let m = 60_000;
        let nine = T0;
        let busy = [
            (nine, nine + 12 * m),
            (nine + 12 * m, nine + 24 * m),
            (nine + 24 * m, nine + 36 * m),
        ];
        let wake = share_wait(&busy, 0.5, H, nine + 36 * m).expect("over the share");
        assert_eq!(wake, nine + 66 * m + 1, "just after 10:06");
        let busy = [
            (nine + 12 * m, nine + 24 * m),
            (nine + 24 * m, nine + 36 * m),
            (nine + 66 * m, nine + 78 * m),
        ];
        assert_eq!(
            share_wait(&busy, 0.5, H, nine + 78 * m),
            Some(nine + 78 * m + 1),
            "at 10:18 slice 2 is leaving the hour: a millisecond later it fits"
        );
    }

    #[test]
    fn full_share_never_waits_and_idle_history_never_waits() {
        assert_eq!(share_wait(&[(T0, T0 + H)], 1.0, H, T0 + H), None);
        assert_eq!(share_wait(&[], 0.5, H, T0), None);
    }
}
