//! The lanes: a timeline per agent, its slices as bars coloured by outcome (outlined by kind),
//! its waits as thinner bars coloured by what it waited on, a row of questions from asked to
//! answered, amendments and landings as marks, and a time axis.

use std::fmt::Write;

use super::super::{GoalHistory, Lane, LaneSlice, Wait};
use super::{esc, ms, tokens};

/// The drawing's width in pixels, and where the bars begin (after the agent's name).
const WIDTH: f64 = 1200.0;
const LEFT: f64 = 110.0;
const ROW: f64 = 34.0;
/// A lane draws at most this many slices (the newest); the page says how many it left out.
const MAX_SLICES: usize = 600;
/// At most this many wait bars per lane; waits closer than a pixel are merged first.
const MAX_WAITS: usize = 600;
/// Wait words that have a colour of their own; any other is drawn as `other`.
const WAIT_WORDS: [&str; 9] = [
    "hold", "share", "pacing", "window", "backoff", "rest", "question", "monitor", "nothing",
];

/// Maps instants to x.
struct Scale {
    from: u64,
    to: u64,
}

impl Scale {
    fn x(&self, at: u64) -> f64 {
        let span = (self.to - self.from).max(1) as f64;
        LEFT + (at.clamp(self.from, self.to) - self.from) as f64 / span * (WIDTH - LEFT - 10.0)
    }

    /// Milliseconds in one pixel.
    fn pixel_ms(&self) -> u64 {
        ((self.to - self.from) as f64 / (WIDTH - LEFT - 10.0)).ceil() as u64
    }
}

pub(super) fn lanes(h: &GoalHistory) -> String {
    let from = h.since.unwrap_or(h.started_at).0;
    let scale = Scale {
        from,
        to: h.now.0.max(from + 1000),
    };
    let mut notes = Vec::new();
    // The agents, then the questions and the monitors.
    let rows = h.lanes.len() + 2;
    let height = 30.0 + rows as f64 * ROW + 40.0;
    let mut svg = format!(
        "<div class=\"scroll\"><svg id=\"lanes-svg\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"lanes\">"
    );
    axis(&scale, height - 40.0, &mut svg);
    for (i, lane) in h.lanes.iter().enumerate() {
        let y = 20.0 + i as f64 * ROW;
        lane_row(&scale, lane, y, &mut svg, &mut notes);
    }
    questions_row(h, &scale, 20.0 + h.lanes.len() as f64 * ROW, &mut svg);
    monitors_row(h, &scale, 20.0 + (h.lanes.len() + 1) as f64 * ROW, &mut svg);
    marks(h, &scale, height - 40.0, &mut svg);
    svg.push_str("</svg></div>\n");
    if h.lanes.is_empty() {
        notes.push("No slices in this span.".to_owned());
    }
    let mut out = legend();
    out.push_str(&svg);
    for note in notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&note));
    }
    out
}

fn lane_row(scale: &Scale, lane: &Lane, y: f64, svg: &mut String, notes: &mut Vec<String>) {
    let _ = write!(
        svg,
        "<g class=\"lane\" id=\"lane-{}\"><text class=\"lane-name\" x=\"4\" y=\"{:.0}\">{}</text>",
        esc(&lane.agent),
        y + 14.0,
        esc(&loopx_kernel::limits::clip(&lane.agent, 14))
    );
    let waits = merged(&lane.waits, scale.pixel_ms());
    for w in waits.iter().rev().take(MAX_WAITS).rev() {
        wait_bar(scale, w, y, svg);
    }
    let skip = lane.slices.len().saturating_sub(MAX_SLICES);
    for s in &lane.slices[skip..] {
        slice_bar(scale, s, y, svg);
    }
    svg.push_str("</g>");
    if skip > 0 {
        notes.push(format!(
            "{}: the oldest {skip} of {} slices are not drawn (see the cost tables).",
            lane.agent,
            lane.slices.len()
        ));
    }
    if waits.len() > MAX_WAITS {
        notes.push(format!(
            "{}: the oldest {} waits are not drawn.",
            lane.agent,
            waits.len() - MAX_WAITS
        ));
    }
}

/// Waits on the same thing less than a pixel apart become one bar (its reason: the first's).
fn merged(waits: &[Wait], pixel: u64) -> Vec<Wait> {
    let mut out: Vec<Wait> = Vec::new();
    for w in waits {
        if let Some(last) = out.last_mut()
            && last.on == w.on
            && w.from.0.saturating_sub(last.to.0) <= pixel
        {
            last.to = last.to.max(w.to);
            continue;
        }
        out.push(w.clone());
    }
    out
}

fn wait_bar(scale: &Scale, w: &Wait, y: f64, svg: &mut String) {
    let on = WAIT_WORDS
        .iter()
        .find(|word| **word == w.on)
        .copied()
        .unwrap_or("other");
    let x = scale.x(w.from.0);
    let width = (scale.x(w.to.0) - x).max(1.0);
    let _ = write!(
        svg,
        "<rect class=\"wait w-{on}\" x=\"{x:.1}\" y=\"{:.0}\" width=\"{width:.1}\" height=\"6\">\
         <title>waits on {}: {} ({})</title></rect>",
        y + 18.0,
        esc(&w.on),
        esc(&w.reason),
        ms(w.to.0.saturating_sub(w.from.0))
    );
}

fn slice_bar(scale: &Scale, s: &LaneSlice, y: f64, svg: &mut String) {
    let outcome = s.outcome.map_or("running", |o| o.as_str());
    let kind = s.kind.as_str();
    let x = scale.x(s.started_at.0);
    let end = s.started_at.0 + s.duration_ms;
    let width = (scale.x(end) - x).max(1.5);
    let todo = s.todo.map(|t| format!(" on {t}")).unwrap_or_default();
    let nothing = if s.changed_nothing {
        ", changed nothing"
    } else {
        ""
    };
    let _ = write!(
        svg,
        "<rect class=\"slice k-{kind} o-{outcome}\" x=\"{x:.1}\" y=\"{y:.0}\" width=\"{width:.1}\" \
         height=\"16\"><title>{} {kind}{} — {outcome}{nothing}, {}, {} tokens, ${:.2}</title></rect>",
        s.id,
        esc(&todo),
        ms(s.duration_ms),
        tokens(s.tokens),
        s.cost_usd
    );
}

/// Questions as spans from asked to answered (open ones run to now).
fn questions_row(h: &GoalHistory, scale: &Scale, y: f64, svg: &mut String) {
    row_start("questions", y, svg);
    for q in &h.questions {
        let class = if q.answered_at.is_some() {
            "q-span"
        } else {
            "q-span q-open"
        };
        let title = format!(
            "{} ({}) by {}: {} — {}",
            q.gate,
            q.kind,
            q.asked_by,
            loopx_kernel::limits::clip(&q.question, 200),
            q.state
        );
        let to = q.answered_at.unwrap_or(h.now);
        span(scale, class, (q.asked_at.0, to.0), y, &title, svg);
    }
    svg.push_str("</g>");
}

/// Monitors as spans from their first poll to met (one still polling runs to now).
fn monitors_row(h: &GoalHistory, scale: &Scale, y: f64, svg: &mut String) {
    row_start("monitors", y, svg);
    for m in &h.monitors {
        let Some(first) = m.first_poll else { continue };
        let title = format!(
            "{} {}: {} polls, {}",
            m.todo,
            m.title,
            m.polls,
            m.state.as_str()
        );
        let to = m.met_at.unwrap_or(h.now);
        span(scale, "m-span", (first.0, to.0), y, &title, svg);
    }
    svg.push_str("</g>");
}

/// Opens a row of spans named `name` (one of ours, never the store's).
fn row_start(name: &str, y: f64, svg: &mut String) {
    let _ = write!(
        svg,
        "<g class=\"lane\" id=\"lane-{name}\"><text class=\"lane-name\" x=\"4\" y=\"{:.0}\">{name}</text>",
        y + 14.0
    );
}

/// One span of a row, `title` (escaped here) its tooltip.
fn span(scale: &Scale, class: &str, (from, to): (u64, u64), y: f64, title: &str, svg: &mut String) {
    let x = scale.x(from);
    let width = (scale.x(to) - x).max(2.0);
    let _ = write!(
        svg,
        "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.0}\" width=\"{width:.1}\" height=\"12\">\
         <title>{}</title></rect>",
        esc(title)
    );
}

/// Amendments and landings: a vertical line each across the lanes.
fn marks(h: &GoalHistory, scale: &Scale, bottom: f64, svg: &mut String) {
    for a in &h.amendments {
        let x = scale.x(a.at.0);
        let _ = write!(
            svg,
            "<line class=\"amend\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"14\" y2=\"{bottom:.0}\">\
             <title>revision {} by {}: {}</title></line>",
            a.revision,
            esc(&a.by),
            esc(&a.why)
        );
    }
    for l in &h.landings {
        let x = scale.x(l.at.0);
        let _ = write!(
            svg,
            "<line class=\"landing\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"14\" y2=\"{bottom:.0}\">\
             <title>landed {}: {}</title></line>",
            l.evidence,
            esc(&l.summary)
        );
    }
}

/// Ticks at a round step, at most about twelve, labelled in UTC.
fn axis(scale: &Scale, y: f64, svg: &mut String) {
    const STEPS: [u64; 12] = [
        60_000,
        300_000,
        900_000,
        1_800_000,
        3_600_000,
        10_800_000,
        21_600_000,
        43_200_000,
        86_400_000,
        172_800_000,
        604_800_000,
        2_592_000_000,
    ];
    let span = scale.to - scale.from;
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 12)
        .unwrap_or(span.max(1));
    let _ = write!(
        svg,
        "<g class=\"axis\"><line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.0}\" y2=\"{y:.0}\"/>",
        WIDTH - 10.0
    );
    // The ends, always labelled in full, so that even a run of seconds has a scale.
    for (at, x, anchor) in [(scale.from, LEFT, "start"), (scale.to, WIDTH - 10.0, "end")] {
        let _ = write!(
            svg,
            "<text x=\"{x:.0}\" y=\"{:.0}\" text-anchor=\"{anchor}\">{}</text>",
            y + 30.0,
            esc(&loopx_kernel::Timestamp(at).to_string())
        );
    }
    let mut at = scale.from.div_ceil(step) * step;
    while at <= scale.to {
        let x = scale.x(at);
        let text = loopx_kernel::Timestamp(at).to_string();
        // `12-07 04:00` over a day or more, `04:00` within one.
        let label: String = if span >= 86_400_000 {
            text.chars()
                .skip(5)
                .take(11)
                .collect::<String>()
                .replace('T', " ")
        } else {
            text.chars().skip(11).take(5).collect()
        };
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"14\" y2=\"{:.0}\"/>\
             <text x=\"{x:.1}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            y + 4.0,
            y + 16.0,
            esc(&label)
        );
        at += step;
    }
    svg.push_str("</g>");
}

/// What the colours mean.
fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">");
    let items: [(&str, &str); 13] = [
        ("o-completed", "completed"),
        ("o-progress", "progress"),
        ("o-asked", "asked"),
        ("o-unchanged", "changed nothing"),
        ("o-failed", "failed / timed out / stalled"),
        ("o-usage_limited", "vendor trouble"),
        ("o-running", "running"),
        ("w-question", "waits: question"),
        ("w-monitor", "waits: monitor"),
        ("w-window", "waits: quota"),
        ("w-pacing", "waits: pacing / share"),
        ("w-nothing", "waits: nothing to do"),
        ("m-span", "a monitor polling"),
    ];
    for (class, word) in items {
        let _ = write!(
            out,
            "<span><svg width=\"12\" height=\"10\"><rect class=\"slice {class}\" width=\"12\" height=\"10\"/></svg> {word}</span>"
        );
    }
    out.push_str(
        "<span>outline: black = plan, pink = repair; dashed line = amendment, green line = landing</span></p>\n",
    );
    out
}
