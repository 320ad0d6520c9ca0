//! The metric charts: each metric over time (every measurement a dot, the best so far a line
//! stepping up or down, a promoted one ringed) and across todos (each todo's best and last).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::super::{MetricPoint, MetricSeries};
use super::esc;

/// A chart draws at most this many measurements, the newest; a note says how many are left.
const MAX_POINTS: usize = 2_000;
/// The page draws at most this many metrics, the first by name; a note says how many are left.
const MAX_SERIES: usize = 50;
const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 170.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 12.0;

pub(super) fn metrics(all: &[MetricSeries]) -> String {
    if all.is_empty() {
        return "<p class=\"note\">No metric measured (<code>loopx report evidence metric NAME=VALUE</code>).</p>\n".to_owned();
    }
    let mut out = String::new();
    // Agents name metrics: a page of a thousand charts helps nobody and costs the board.
    for series in all.iter().take(MAX_SERIES) {
        chart(&mut out, series);
        by_todo(&mut out, series);
    }
    if all.len() > MAX_SERIES {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more metrics are not drawn (<code>loopx goal history --json</code> has them all).</p>",
            all.len() - MAX_SERIES
        );
    }
    out
}

/// Where a measurement is drawn: its time across, its value up.
struct Plot {
    first: u64,
    span_t: f64,
    single: bool,
    lo: f64,
    scale: f64,
    span_v: f64,
}

impl Plot {
    fn of(points: &[MetricPoint]) -> Option<Plot> {
        let (first, last) = (points.first()?, points.last()?);
        let (lo, hi) = points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
            (lo.min(p.value), hi.max(p.value))
        });
        // In halves when the span overflows (values near the ends of f64); a span of nothing
        // (one value, or two a denormal apart that halve to the same) draws on one line.
        let scale = if (hi - lo).is_finite() { 1.0 } else { 0.5 };
        let span_v = match hi * scale - lo * scale {
            span if span > 0.0 && span.is_finite() => span,
            _ => 1.0,
        };
        Some(Plot {
            first: first.at.0,
            span_t: (last.at.0.saturating_sub(first.at.0)).max(1) as f64,
            single: points.len() == 1,
            lo,
            scale,
            span_v,
        })
    }

    fn x(&self, p: &MetricPoint) -> f64 {
        match self.single {
            true => LEFT + (WIDTH - LEFT) / 2.0,
            false => {
                LEFT + p.at.0.saturating_sub(self.first) as f64 / self.span_t
                    * (WIDTH - LEFT - 10.0)
            }
        }
    }

    fn y(&self, v: f64) -> f64 {
        TOP + HEIGHT - (v * self.scale - self.lo * self.scale) / self.span_v * HEIGHT
    }
}

fn chart(out: &mut String, s: &MetricSeries) {
    let left_out = s.points.len().saturating_sub(MAX_POINTS);
    let points = &s.points[left_out..];
    let Some(plot) = Plot::of(points) else {
        return;
    };
    let hi = points.iter().map(|p| p.value).fold(f64::MIN, f64::max);
    header(out, s, hi, plot.lo);
    if s.better.is_some() {
        best_line(out, &plot, points);
    }
    for p in points {
        let class = match (p.best, p.promoted) {
            (_, true) => "point best promoted",
            (true, false) => "point best",
            (false, false) => "point",
        };
        let _ = write!(
            out,
            "<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{}\"><title>{}</title></circle>",
            plot.x(p),
            plot.y(p.value),
            if p.best { 5 } else { 3 },
            esc(&point_title(s, p)),
        );
    }
    out.push_str("</svg>\n");
    if left_out > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">The {left_out} oldest measurements are not drawn.</p>"
        );
    }
}

/// The chart's title, the start of its SVG and its axis with the highest and lowest values.
fn header(out: &mut String, s: &MetricSeries, hi: f64, lo: f64) {
    let direction = s
        .better
        .map_or("which way is better is not set".to_owned(), |b| {
            format!("{} is better", b.as_str())
        });
    let _ = write!(
        out,
        "<h3>{} <span class=\"note\">{} · {} measurements · {direction}</span></h3>\
         <svg class=\"metric-chart\" data-metric=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{WIDTH:.0}\" height=\"{:.0}\" role=\"img\" aria-label=\"{} over time\">\
         <g class=\"axis\"><line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{:.0}\"/>\
         <text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\
         <text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text></g>",
        esc(&s.name),
        esc(&s.unit),
        s.points.len(),
        esc(&s.name),
        HEIGHT + TOP + 22.0,
        esc(&s.name),
        TOP + HEIGHT,
        LEFT - 4.0,
        TOP + 4.0,
        esc(&number(hi)),
        LEFT - 4.0,
        TOP + HEIGHT,
        esc(&number(lo)),
    );
}

/// The best so far, as a line that steps at each new best.
fn best_line(out: &mut String, plot: &Plot, points: &[MetricPoint]) {
    let mut steps = String::new();
    let mut best: Option<f64> = None;
    for p in points {
        if p.best {
            if let Some(b) = best {
                let _ = write!(steps, "{:.1},{:.1} ", plot.x(p), plot.y(b));
            }
            best = Some(p.value);
        }
        if let Some(b) = best {
            let _ = write!(steps, "{:.1},{:.1} ", plot.x(p), plot.y(b));
        }
    }
    if !steps.is_empty() {
        let _ = write!(
            out,
            "<polyline class=\"best-line\" points=\"{}\"/>",
            steps.trim_end()
        );
    }
}

/// Each todo's measurements of the metric: how many, its best (by the metric's direction,
/// else its highest) and its last.
fn by_todo(out: &mut String, s: &MetricSeries) {
    let mut todos: BTreeMap<String, Vec<&MetricPoint>> = BTreeMap::new();
    for p in &s.points {
        let todo = p.todo.map_or("none".to_owned(), |t| t.to_string());
        todos.entry(todo).or_default().push(p);
    }
    let better = s.better.unwrap_or(loopx_kernel::model::Better::Higher);
    let _ = write!(
        out,
        "<table class=\"metric-todos\"><caption>{} per todo</caption>\
         <tr><th>todo</th><th>measured</th><th>best</th><th>last</th></tr>",
        esc(&s.name)
    );
    for (todo, points) in &todos {
        let best = points
            .iter()
            .map(|p| p.value)
            .reduce(|a, b| if better.beats(b, a) { b } else { a })
            .unwrap_or(f64::NAN);
        let last = points.last().map_or(f64::NAN, |p| p.value);
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(todo),
            points.len(),
            esc(&number(best)),
            esc(&number(last))
        );
    }
    out.push_str("</table>\n");
}

fn point_title(s: &MetricSeries, p: &MetricPoint) -> String {
    let mut title = format!("{} = {}", s.name, loopx_vocab::show_value(p.value));
    if !s.unit.is_empty() {
        title.push_str(&format!(" {}", s.unit));
    }
    if let Some(todo) = p.todo {
        title.push_str(&format!(" on {todo}"));
    }
    title.push_str(&format!(" ({}, {} at {})", p.evidence, p.by, p.at));
    if p.promoted {
        title.push_str(", promoted");
    } else if p.best {
        title.push_str(", best so far");
    }
    title
}

/// A value to four decimals, as people write them (`0.913`, `12`); a very small or large
/// one in scientific notation (`1.2e-5`, `1e300`).
fn number(v: f64) -> String {
    if v != 0.0 && !(0.001..1e15).contains(&v.abs()) {
        return format!("{v:.2e}");
    }
    let text = format!("{v:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" => "0".to_owned(),
        t => t.to_owned(),
    }
}
