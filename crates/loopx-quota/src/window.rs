//! Fixed token and cost windows, like the vendors' five-hour and weekly limits.
//!
//! A window opens with the first spend after the previous one ended and lasts `period`; at its
//! end the allowance resets in full. A slice's real usage is only known after it ran, so a
//! window can be overspent: the excess is carried into the next window as debt, so that a
//! burst of expensive slices is paid back instead of forgotten.

use serde::{Deserialize, Serialize};

use crate::Millis;

/// An allowance per period. A window with neither limit only counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowLimit {
    pub period_ms: Millis,
    pub tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// Usage in the current window. Cost is kept in micro-dollars so that sums are exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WindowState {
    /// When the current window opened (0: none yet).
    pub start: Millis,
    pub tokens: u64,
    pub cost_micros: u64,
}

/// Micro-dollars in a dollar.
pub const MICROS: f64 = 1_000_000.0;

impl WindowState {
    /// The state as seen at `now`. Each window that ended since `start` pays back one
    /// allowance of debt; debt that still fills a window keeps it anchored on the vendor's
    /// schedule (`start + k × period`), so its reset time stays fixed instead of receding.
    ///
    /// A window cannot have opened after `now`: one that did was opened before the wall clock
    /// stepped back, and is taken as opening now, so it lasts one period, not the step too.
    pub fn rolled(mut self, limit: &WindowLimit, now: Millis) -> WindowState {
        let period = limit.period_ms;
        self.start = self.start.min(now);
        if self.start == 0 || period == 0 || now < self.start.saturating_add(period) {
            return self;
        }
        let ended = (now - self.start) / period;
        let tokens = limit.tokens.map_or(0, |max| {
            self.tokens.saturating_sub(max.saturating_mul(ended))
        });
        let cost_micros = limit.cost_usd.map_or(0, |max| {
            self.cost_micros
                .saturating_sub(to_micros(max).saturating_mul(ended))
        });
        // Without debt the next window opens at the next spend, as the vendors' do.
        let start = if tokens == 0 && cost_micros == 0 {
            0
        } else {
            self.start + ended * period
        };
        WindowState {
            start,
            tokens,
            cost_micros,
        }
    }

    /// Adds a spend at `now`, opening a window if none is open.
    pub fn charged(
        self,
        limit: &WindowLimit,
        now: Millis,
        tokens: u64,
        cost_usd: f64,
    ) -> WindowState {
        let mut state = self.rolled(limit, now);
        if state.start == 0 {
            state.start = now;
        }
        state.tokens = state.tokens.saturating_add(tokens);
        state.cost_micros = state.cost_micros.saturating_add(to_micros(cost_usd));
        state
    }

    /// When the window is exhausted at `now`, the moment it resets; `None` while there is room.
    pub fn exhausted_until(self, limit: &WindowLimit, now: Millis) -> Option<Millis> {
        let state = self.rolled(limit, now);
        let over_tokens = limit.tokens.is_some_and(|max| state.tokens >= max);
        let over_cost = limit
            .cost_usd
            .is_some_and(|max| state.cost_micros >= to_micros(max));
        if !(over_tokens || over_cost) {
            return None;
        }
        // A window is open whenever usage or debt is on it (see `rolled`); a zero allowance
        // with nothing charged is spent from the start.
        let start = if state.start == 0 { now } else { state.start };
        Some(start.saturating_add(limit.period_ms.max(1)))
    }

    /// Whether a spend of `tokens` and `cost_usd` fits in the window at `now`; when not, the
    /// moment the window resets. A spend whose size is known up front is never admitted past
    /// the budget; usage learnt afterwards is charged regardless (and becomes debt).
    pub fn fits(
        self,
        limit: &WindowLimit,
        now: Millis,
        tokens: u64,
        cost_usd: f64,
    ) -> Result<(), Millis> {
        if let Some(at) = self.exhausted_until(limit, now) {
            return Err(at);
        }
        let state = self.rolled(limit, now);
        let over_tokens = limit
            .tokens
            .is_some_and(|max| state.tokens.saturating_add(tokens) > max);
        let over_cost = limit.cost_usd.is_some_and(|max| {
            state.cost_micros.saturating_add(to_micros(cost_usd)) > to_micros(max)
        });
        if over_tokens || over_cost {
            let start = if state.start == 0 { now } else { state.start };
            return Err(start.saturating_add(limit.period_ms));
        }
        Ok(())
    }

    /// What is left in the window at `now`: (tokens, dollars), `None` where unlimited.
    pub fn remaining(self, limit: &WindowLimit, now: Millis) -> (Option<u64>, Option<f64>) {
        let state = self.rolled(limit, now);
        (
            limit.tokens.map(|max| max.saturating_sub(state.tokens)),
            limit
                .cost_usd
                .map(|max| (to_micros(max).saturating_sub(state.cost_micros)) as f64 / MICROS),
        )
    }
}

fn to_micros(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * MICROS).round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H5: Millis = 5 * 3_600_000;
    const T0: Millis = 1_790_000_000_000;

    fn limit() -> WindowLimit {
        WindowLimit {
            period_ms: H5,
            tokens: Some(1_000),
            cost_usd: None,
        }
    }

    #[test]
    fn a_window_opens_with_the_first_spend_and_resets_in_full() {
        let l = limit();
        let s = WindowState::default().charged(&l, T0, 400, 0.0);
        assert_eq!(s.start, T0);
        assert_eq!(s.exhausted_until(&l, T0 + 1), None);
        let s = s.charged(&l, T0 + 10, 600, 0.0);
        assert_eq!(s.exhausted_until(&l, T0 + 20), Some(T0 + H5));
        assert_eq!(
            s.exhausted_until(&l, T0 + H5),
            None,
            "reset in full at the end"
        );
    }

    /// A slice charged far over the limit blocks for as many windows as it overspent, at
    /// fixed reset times, and then the account is free again.
    #[test]
    fn large_debt_drains_one_allowance_per_window() {
        let l = limit();
        let s = WindowState::default().charged(&l, T0, 3_000, 0.0);
        assert_eq!(
            s.exhausted_until(&l, T0 + H5),
            Some(T0 + 2 * H5),
            "2,000 left after the first window"
        );
        assert_eq!(
            s.exhausted_until(&l, T0 + H5 + 60_000),
            Some(T0 + 2 * H5),
            "the reset does not recede"
        );
        assert_eq!(
            s.exhausted_until(&l, T0 + 2 * H5),
            Some(T0 + 3 * H5),
            "1,000 left: still a full window"
        );
        assert_eq!(s.exhausted_until(&l, T0 + 3 * H5), None, "paid back");
        assert_eq!(
            s.rolled(&l, T0 + 10 * H5),
            WindowState::default(),
            "long idle: nothing carried"
        );
    }

    #[test]
    fn a_window_opened_before_the_clock_stepped_back_resets_one_period_from_now() {
        let l = limit();
        let tomorrow = T0 + 24 * 3_600_000;
        let spent = WindowState::default().charged(&l, tomorrow, 2_000, 0.0);
        assert_eq!(
            spent.exhausted_until(&l, T0),
            Some(T0 + H5),
            "not tomorrow plus five hours"
        );
    }

    #[test]
    fn overspend_is_carried_as_debt() {
        let l = limit();
        let s = WindowState::default().charged(&l, T0, 2_500, 0.0);
        let next = s.rolled(&l, T0 + H5);
        assert_eq!(next.tokens, 1_500, "1,500 over the limit carries over");
        assert_eq!(
            next.exhausted_until(&l, T0 + H5),
            Some(T0 + 2 * H5),
            "the next window is spent already"
        );
    }
}
