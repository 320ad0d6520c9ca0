//! Metric evidence over a goal, and the question a new best asks (`docs/history.md`,
//! "Metrics"). An experiment campaign measures (`loopx report evidence metric
//! accuracy=0.913`); `[metrics.NAME] better` says which way is better, and with
//! `ask_on_best` a measurement that beats every earlier one of the goal asks a person before
//! the goal goes on: promote it, keep exploring, or stop.
//!
//! One definition of "best so far" ([`records`]) serves the question and the history's chart.
//! A series is one metric in one unit: loopx compares numbers, not quantities.
//! The question is asked once per measurement (the kernel gives back the gate asked before,
//! whatever its answer), and only about an agent's measurement beating an earlier one: the
//! first measurement is the baseline, and a person's own is known to them.

use std::collections::{BTreeMap, BTreeSet};

use loopx_adapters::MetricRule;
use loopx_kernel::model::{Evidence, EvidenceKind, GateKind, Metric};
use loopx_kernel::{EvidenceId, GoalId, KernelError, Snapshot, TodoId};
use loopx_quota::{AskAbout, Decision};

/// The indices of the records in `values` (in the order measured): each better than every
/// value before it. The first value is one; a value equal to the best is not.
pub fn records(values: &[f64], better: loopx_vocab::Better) -> Vec<usize> {
    let mut best: Option<f64> = None;
    let mut out = Vec::new();
    for (i, &value) in values.iter().enumerate() {
        if best.is_none_or(|b| better.beats(value, b)) {
            best = Some(value);
            out.push(i);
        }
    }
    out
}

/// `goal`'s measurements of `names`, oldest first: metric evidence on one of its todos, or
/// recorded by one of its slices.
pub fn goal_measurements(
    snap: &Snapshot<'_>,
    goal: GoalId,
    names: &BTreeSet<&str>,
) -> Result<Vec<Evidence>, KernelError> {
    let mut found = snap.evidence_newest(usize::MAX, |e| {
        e.kind == EvidenceKind::Metric
            && e.metric
                .as_ref()
                .is_some_and(|m| names.contains(m.name.as_str()))
    })?;
    found.reverse();
    let mut goal_of_todo: BTreeMap<TodoId, Option<GoalId>> = BTreeMap::new();
    let mut ours = Vec::new();
    for e in found {
        let of = match (e.todo, e.slice) {
            (Some(todo), _) => match goal_of_todo.get(&todo) {
                Some(goal) => *goal,
                None => {
                    let goal = snap.todo(todo)?.map(|t| t.goal);
                    goal_of_todo.insert(todo, goal);
                    goal
                }
            },
            (None, Some(slice)) => snap.slice(slice)?.and_then(|s| s.goal),
            (None, None) => None,
        };
        if of == Some(goal) {
            ours.push(e);
        }
    }
    Ok(ours)
}

/// `decision`, or a question instead when an agent's measurement is a new best of a metric
/// that asks on one and nobody was asked about it yet. A decision that stops, or asks
/// already, stays.
pub fn guard(
    snap: &Snapshot<'_>,
    decision: Decision,
    rules: &BTreeMap<String, MetricRule>,
    goal: Option<GoalId>,
) -> Result<Decision, KernelError> {
    let asking: BTreeSet<&str> = rules
        .iter()
        .filter(|(_, rule)| rule.ask_on_best)
        .map(|(name, _)| name.as_str())
        .collect();
    let (Some(goal), false) = (goal, asking.is_empty()) else {
        return Ok(decision);
    };
    if matches!(decision, Decision::Stop { .. } | Decision::Ask { .. }) {
        return Ok(decision);
    }
    let measured = goal_measurements(snap, goal, &asking)?;
    let asked: BTreeSet<EvidenceId> = snap
        .gates()?
        .into_iter()
        .filter_map(|g| match g.kind {
            GateKind::Best { evidence, .. } => Some(evidence),
            _ => None,
        })
        .collect();
    for series in series(&measured) {
        let Some(rule) = rules.get(series.name).filter(|r| r.ask_on_best) else {
            continue;
        };
        let Some(new) = new_best(&series.measured, rule.better) else {
            continue;
        };
        if asked.contains(&new.best.id) {
            continue;
        }
        return Ok(Decision::Ask {
            about: AskAbout::NewBest(new.best.id),
            gate: None,
            reason: new.reason(),
        });
    }
    Ok(decision)
}

/// One metric in one unit, its measurements in the order taken.
#[derive(Debug)]
pub struct Series<'a> {
    pub name: &'a str,
    pub unit: &'a str,
    pub measured: Vec<&'a Evidence>,
}

/// The series in `evidence` (in the order recorded), by name then unit: `120 ms` and `0.2 s`
/// are two (a person reads the unit; loopx does not convert). What the question and the
/// history both group by.
pub fn series(evidence: &[Evidence]) -> Vec<Series<'_>> {
    let mut by_key: BTreeMap<(&str, &str), Vec<&Evidence>> = BTreeMap::new();
    for e in evidence {
        if let Some(m) = e.metric.as_ref().filter(|_| e.kind == EvidenceKind::Metric) {
            by_key.entry((&m.name, &m.unit)).or_default().push(e);
        }
    }
    by_key
        .into_iter()
        .map(|((name, unit), measured)| Series {
            name,
            unit,
            measured,
        })
        .collect()
}

/// The newest record of a series, when an agent measured it and it beat an earlier value.
struct NewBest<'a> {
    best: &'a Evidence,
    before: &'a Evidence,
}

fn new_best<'a>(series: &[&'a Evidence], better: loopx_vocab::Better) -> Option<NewBest<'a>> {
    let values: Vec<f64> = series.iter().map(|e| value(e)).collect();
    let found = records(&values, better);
    let (&last, &previous) = (found.last()?, found.iter().rev().nth(1)?);
    let best = series[last];
    let by_agent = loopx_vocab::Actor::of(&best.actor).is_agent();
    by_agent.then_some(NewBest {
        best,
        before: series[previous],
    })
}

impl NewBest<'_> {
    fn reason(&self) -> String {
        format!(
            "{} is the best so far ({}, before it {}{}): a person is asked whether to promote it (`ask_on_best`)",
            measured_by(self.best),
            self.best.id,
            metric(self.before).map_or(String::new(), |m| m.value.to_string()),
            self.before
                .todo
                .map_or(String::new(), |t| format!(" on {t}")),
        )
    }
}

/// `t14's result, accuracy = 0.913 %`, or the measurement alone without a todo.
pub fn measured_by(e: &Evidence) -> String {
    let shown = metric(e).map_or_else(|| e.summary.clone(), ToString::to_string);
    match e.todo {
        Some(todo) => format!("{todo}'s result, {shown}"),
        None => shown,
    }
}

fn metric(e: &Evidence) -> Option<&Metric> {
    e.metric.as_ref()
}

fn value(e: &Evidence) -> f64 {
    metric(e).map_or(f64::NAN, |m| m.value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopx_vocab::Better;

    #[test]
    fn a_record_beats_every_value_before_it() {
        let values = [0.5, 0.7, 0.6, 0.7, 0.9];
        assert_eq!(records(&values, Better::Higher), vec![0, 1, 4]);
        assert_eq!(records(&values, Better::Lower), vec![0]);
        assert_eq!(records(&[3.0, 2.0, 2.5, 1.0], Better::Lower), vec![0, 1, 3]);
        assert!(records(&[], Better::Higher).is_empty());
    }
}
