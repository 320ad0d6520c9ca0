//! The goal's metrics (`docs/history.md`, "Metrics"): each metric's measurements in the order
//! taken, the best so far marked by the one rule the question uses
//! (`loopx_domain::metrics::records`), and the measurements a person promoted.

use std::collections::{BTreeMap, BTreeSet};

use loopx_kernel::model::{EvidenceKind, GateKind, GateState};
use loopx_kernel::{EvidenceId, Timestamp};

use super::{MetricPoint, MetricSeries, Records};

/// One series per metric name, by name.
pub(super) fn series(r: &Records, counts: &impl Fn(Timestamp) -> bool) -> Vec<MetricSeries> {
    let promoted: BTreeSet<EvidenceId> = r
        .gates
        .iter()
        .filter(|g| g.state == GateState::Answered)
        // Option 1 is `promote` (`BEST_OPTIONS`).
        .filter(|g| g.answer.as_ref().and_then(|a| a.option) == Some(1))
        .filter_map(|g| match g.kind {
            GateKind::Best { evidence, .. } => Some(evidence),
            _ => None,
        })
        .collect();
    let mut by_name: BTreeMap<&str, MetricSeries> = BTreeMap::new();
    for e in r.evidence.iter().filter(|e| e.kind == EvidenceKind::Metric) {
        let Some(metric) = &e.metric else { continue };
        if !counts(e.at) {
            continue;
        }
        let series = by_name
            .entry(metric.name.as_str())
            .or_insert_with(|| MetricSeries {
                name: metric.name.clone(),
                unit: metric.unit.clone(),
                better: r.metric_rules.get(&metric.name).map(|rule| rule.better),
                points: Vec::new(),
            });
        series.points.push(MetricPoint {
            evidence: e.id,
            todo: e.todo,
            slice: e.slice,
            at: e.at,
            value: metric.value,
            by: e.actor.clone(),
            best: false,
            promoted: promoted.contains(&e.id),
        });
    }
    let mut out: Vec<MetricSeries> = by_name.into_values().collect();
    for series in &mut out {
        let Some(better) = series.better else {
            continue;
        };
        let values: Vec<f64> = series.points.iter().map(|p| p.value).collect();
        for i in loopx_domain::metrics::records(&values, better) {
            series.points[i].best = true;
        }
    }
    out
}
