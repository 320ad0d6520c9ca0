//! A goal's budget: the most it may spend — slices, tokens, dollars — without a todo done.
//! Past it, a person is asked whether to go on, with the figures (`[budget]` in
//! `.loopx/loopx.toml`, `docs/quota.md`). The kernel keeps what the goal spent; a todo done,
//! or the answer `continue`, starts the count again.

use serde::Serialize;

/// The limits; `None` limits nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Budget {
    pub slices: Option<u64>,
    pub tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// What a goal spent since a todo was last done.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spending {
    pub slices: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

impl Budget {
    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.slices.is_some() || self.tokens.is_some() || self.cost_usd.is_some()
    }

    /// The limits `spent` reached, as a person reads them (`12 slices (budget 10)`); empty
    /// while within budget.
    pub fn exceeded(&self, spent: &Spending) -> Vec<String> {
        let mut over = Vec::new();
        if let Some(max) = self.slices.filter(|&m| spent.slices >= m) {
            over.push(format!("{} slices (budget {max})", spent.slices));
        }
        if let Some(max) = self.tokens.filter(|&m| spent.tokens >= m) {
            over.push(format!("{} tokens (budget {max})", spent.tokens));
        }
        if let Some(max) = self.cost_usd.filter(|&m| spent.cost_usd >= m) {
            over.push(format!("${:.2} (budget ${max:.2})", spent.cost_usd));
        }
        over
    }
}

impl Spending {
    /// `12 slices, 340000 tokens, $4.10`.
    pub fn describe(&self) -> String {
        format!(
            "{} slices, {} tokens, ${:.2}",
            self.slices, self.tokens, self.cost_usd
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_is_reached_on_its_own_and_named_with_its_figure() {
        let budget = Budget {
            slices: Some(10),
            tokens: None,
            cost_usd: Some(2.0),
        };
        let spent = |slices, cost_usd| Spending {
            slices,
            tokens: 5_000_000,
            cost_usd,
        };
        assert!(budget.exceeded(&spent(9, 1.99)).is_empty());
        assert_eq!(
            budget.exceeded(&spent(10, 0.5)),
            vec!["10 slices (budget 10)"]
        );
        assert_eq!(
            budget.exceeded(&spent(3, 2.5)),
            vec!["$2.50 (budget $2.00)"]
        );
        assert!(!Budget::default().is_set());
        assert!(Budget::default().exceeded(&spent(1_000, 1e6)).is_empty());
    }
}
