//! The simulated vendors: each account's own window, kept in true time, and what the vendor
//! does to a slice that starts when it is full or the agent is logged out.

use super::*;

impl SimHost {
    /// Where `account` is in the scenario.
    pub(super) fn account_index(&self, account: &str) -> usize {
        self.plan
            .scenario
            .accounts
            .iter()
            .position(|a| a.name == account)
            .expect("a scenario account")
    }

    /// Whether the vendor refuses `account` now: a usage limit not yet reset, or logged out.
    pub(crate) fn vendor_holds(&self, account: &str) -> bool {
        let now = self.clock.true_now();
        self.vendors
            .get(account)
            .is_some_and(|v| v.logged_out || v.limited_until.is_some_and(|until| until > now))
    }

    /// Charges the vendor's own window (true time): full, the next slice meets the limit.
    pub(super) fn vendor_spend(&mut self, account: &str, tokens: u64) {
        let now = self.clock.true_now();
        let acct = self.account_index(account);
        let period = self.plan.windows[acct];
        let vendor = self.vendors.get_mut(account).expect("account");
        let window = match vendor.window {
            Some((start, used)) if now < start.plus(period) => (start, used),
            _ => (now, 0),
        };
        vendor.window = Some((window.0, window.1.saturating_add(tokens)));
    }

    /// What the vendor does to a slice starting now on `account`: the act it forces, if any.
    pub(super) fn vendor_forces(&mut self, account: &str) -> Option<(Act, Option<Timestamp>)> {
        let now = self.clock.true_now();
        let acct = self.account_index(account);
        let spec = &self.plan.scenario.accounts[acct];
        let period = self.plan.windows[acct];
        let vendor = self.vendors.get_mut(account).expect("account");
        if vendor.logged_out {
            return Some((Act::NotLoggedIn, None));
        }
        if let Some(until) = vendor.limited_until {
            if now < until {
                return Some((Act::UsageLimit, Some(until)));
            }
            vendor.limited_until = None;
        }
        let allowance = spec.vendor_tokens.unwrap_or(spec.tokens);
        if let Some((start, used)) = vendor.window
            && now < start.plus(period)
            && used >= allowance
        {
            // Vendors announce resets to the second: the window ends at the next whole one.
            let end = start.plus(period).0.div_ceil(1000) * 1000;
            return Some((Act::UsageLimit, Some(Timestamp(end))));
        }
        None
    }
}
