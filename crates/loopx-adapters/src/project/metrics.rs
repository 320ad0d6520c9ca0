//! `[metrics.NAME]`: which way a metric is better, and whether a new best asks a person
//! (`docs/history.md`, "Metrics"):
//!
//! ```toml
//! [metrics.accuracy]
//! better = "higher"
//! ask_on_best = true     # "promote t14's result, accuracy = 0.913, the best so far?"
//! ```

use std::collections::BTreeMap;

use loopx_vocab::{Better, Metric};
use serde::Deserialize;

use crate::config::{Checked, Problems, take};

/// One metric's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricRule {
    pub better: Better,
    /// A new best (one that beats every earlier measurement of the goal) asks a person
    /// whether to promote it, keep exploring, or stop.
    pub ask_on_best: bool,
}

#[derive(Debug, Deserialize)]
pub(super) struct RawMetric {
    better: Option<Checked<String>>,
    ask_on_best: Option<Checked<bool>>,
}

pub(super) const KEYS: [&str; 2] = ["better", "ask_on_best"];

/// `[metrics]`, each name checked as a metric's name and each rule as a rule.
pub(super) fn metrics(
    raw: BTreeMap<String, RawMetric>,
    p: &mut Problems,
) -> BTreeMap<String, MetricRule> {
    let mut rules = BTreeMap::new();
    for (name, raw) in raw {
        // A table's own name has no span here: a problem points at one of its keys (the
        // message names the table), or at the file's start when it has none.
        let span = raw.better.as_ref().map(|c| c.span.clone());
        let span = span
            .or_else(|| raw.ask_on_best.as_ref().map(|c| c.span.clone()))
            .unwrap_or(0..0);
        let key = format!("metrics.{name}");
        let probe = Metric {
            name: name.clone(),
            value: 0.0,
            unit: String::new(),
        };
        if let Err(e) = probe.check() {
            p.push(span.clone(), Some(&key), e.to_string(), None);
            continue;
        }
        let ask_on_best =
            take(raw.ask_on_best, &format!("{key}.ask_on_best"), p).is_some_and(|(ask, _)| ask);
        let better_key = format!("{key}.better");
        let better = match take(raw.better, &better_key, p) {
            Some((word, _)) if word == "higher" => Better::Higher,
            Some((word, _)) if word == "lower" => Better::Lower,
            Some((word, span)) => {
                p.push(
                    span,
                    Some(&better_key),
                    format!("`better = \"{word}\"` is not a direction"),
                    Some(
                        "`better = \"higher\"` (accuracy) or `better = \"lower\"` (loss, latency)"
                            .to_owned(),
                    ),
                );
                continue;
            }
            None => {
                p.push(
                    span,
                    Some(&key),
                    format!("metric `{name}` does not say which way is better"),
                    Some(format!(
                        "add `better = \"higher\"` or `better = \"lower\"` under [metrics.{name}] (a name with a dot is quoted: [metrics.\"val.loss\"])"
                    )),
                );
                continue;
            }
        };
        rules.insert(
            name,
            MetricRule {
                better,
                ask_on_best,
            },
        );
    }
    rules
}
