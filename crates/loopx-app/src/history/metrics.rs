//! The goal's metrics (`docs/history.md`, "Metrics"): each metric's measurements in the order
//! taken, the best so far marked by the one rule the question uses
//! (`loopx_domain::metrics::records`), and the measurements a person promoted.

use std::collections::BTreeSet;

use loopx_kernel::model::{GateKind, GateState};
use loopx_kernel::{EvidenceId, Timestamp};

use super::{MetricPoint, MetricSeries, Records};

/// One series per metric name and unit, by name then unit.
pub(super) fn series(r: &Records, counts: &impl Fn(Timestamp) -> bool) -> Vec<MetricSeries> {
    let promoted: BTreeSet<EvidenceId> = r
        .gates
        .iter()
        .filter(|g| g.state == GateState::Answered && loopx_kernel::model::best_answer(g).0)
        .filter_map(|g| match g.kind {
            GateKind::Best { evidence, .. } => Some(evidence),
            _ => None,
        })
        .collect();
    // The bests are found over every measurement; `--since` only shows fewer of them.
    let mut out = Vec::new();
    for series in loopx_domain::metrics::series(&r.evidence) {
        let better = r.metric_rules.get(series.name).map(|rule| rule.better);
        let values: Vec<f64> = series.measured.iter().map(|e| value(e)).collect();
        let bests: BTreeSet<usize> = better
            .map(|b| {
                loopx_domain::metrics::records(&values, b)
                    .into_iter()
                    .collect()
            })
            .unwrap_or_default();
        let points: Vec<MetricPoint> = (series.measured.iter().enumerate())
            .filter(|(_, e)| counts(e.at))
            .map(|(i, e)| MetricPoint {
                evidence: e.id,
                todo: e.todo,
                slice: e.slice,
                at: e.at,
                value: values[i],
                by: e.actor.clone(),
                best: bests.contains(&i),
                promoted: promoted.contains(&e.id),
            })
            .collect();
        if !points.is_empty() {
            out.push(MetricSeries {
                name: series.name.to_owned(),
                unit: series.unit.to_owned(),
                better,
                points,
            });
        }
    }
    out
}

fn value(e: &loopx_kernel::model::Evidence) -> f64 {
    e.metric.as_ref().map_or(f64::NAN, |m| m.value)
}
