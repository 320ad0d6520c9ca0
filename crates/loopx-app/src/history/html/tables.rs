//! The cost tables (per agent, per kind, per day, per todo; what changed nothing), progress
//! (todos done per day as a bar chart) and the questions.

use std::fmt::Write;

use super::super::{Cost, GoalHistory, Progress, Spent};
use super::{esc, ms, tokens};

/// The by-todo table shows the costliest this many todos.
const MAX_TODO_ROWS: usize = 20;
/// The questions table shows the newest this many.
const MAX_QUESTIONS: usize = 200;

pub(super) fn cost(c: &Cost) -> String {
    let mut out = String::new();
    table(&mut out, "cost-total", "Total", [("all", &c.total)]);
    table(
        &mut out,
        "cost-agent",
        "Per agent",
        c.by_agent.iter().map(|(k, s)| (k.as_str(), s)),
    );
    table(
        &mut out,
        "cost-kind",
        "Per kind",
        c.by_kind.iter().map(|(k, s)| (k.as_str(), s)),
    );
    table(
        &mut out,
        "cost-day",
        "Per day (UTC)",
        c.by_day.iter().map(|(k, s)| (k.as_str(), s)),
    );
    let mut by_todo: Vec<&(String, Spent)> = c.by_todo.iter().collect();
    // Dollars first; tokens where an agent reports no dollars.
    by_todo
        .sort_by(|a, b| (b.1.cost_usd.total_cmp(&a.1.cost_usd)).then(b.1.tokens.cmp(&a.1.tokens)));
    table(
        &mut out,
        "cost-todo",
        "Per todo (costliest first)",
        by_todo
            .iter()
            .take(MAX_TODO_ROWS)
            .map(|(k, s)| (k.as_str(), s)),
    );
    if by_todo.len() > MAX_TODO_ROWS {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more todos not listed.</p>",
            by_todo.len() - MAX_TODO_ROWS
        );
    }
    table(
        &mut out,
        "cost-unchanged",
        "Changed nothing",
        [("slices", &c.changed_nothing)],
    );
    let _ = writeln!(
        out,
        "<p class=\"note\">Changed nothing: {}.</p>",
        esc(c.changed_nothing_rule)
    );
    out
}

fn table<'a>(
    out: &mut String,
    id: &str,
    caption: &str,
    rows: impl IntoIterator<Item = (&'a str, &'a Spent)>,
) {
    let _ = write!(
        out,
        "<table id=\"{id}\"><caption>{caption}</caption>\
         <tr><th></th><th>slices</th><th>tokens</th><th>cost</th><th>time</th></tr>"
    );
    for (name, s) in rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>${:.2}</td><td>{}</td></tr>",
            esc(name),
            s.slices,
            tokens(s.tokens),
            s.cost_usd,
            ms(s.duration_ms)
        );
    }
    out.push_str("</table>\n");
}

/// Todos done per day as bars, and the medians.
pub(super) fn progress(p: &Progress) -> String {
    const BAR: f64 = 28.0;
    const HEIGHT: f64 = 120.0;
    let days = &p.done_by_day;
    let most = days.values().copied().max().unwrap_or(0).max(1) as f64;
    let width = 40.0 + days.len().max(1) as f64 * (BAR + 8.0);
    let mut out = format!(
        "<svg id=\"progress-chart\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width:.0}\" height=\"{:.0}\" role=\"img\" aria-label=\"todos done per day\">",
        HEIGHT + 34.0
    );
    for (i, (day, done)) in days.iter().enumerate() {
        let x = 30.0 + i as f64 * (BAR + 8.0);
        let h = (*done as f64 / most * HEIGHT).max(1.0);
        let y = 10.0 + HEIGHT - h;
        let _ = write!(
            out,
            "<rect class=\"done-bar\" x=\"{x:.0}\" y=\"{y:.1}\" width=\"{BAR}\" height=\"{h:.1}\">\
             <title>{}: {done} done</title></rect>\
             <text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"middle\">{done}</text>\
             <text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            esc(day),
            x + BAR / 2.0,
            y - 2.0,
            x + BAR / 2.0,
            HEIGHT + 28.0,
            esc(day.get(5..).unwrap_or(day))
        );
    }
    out.push_str("</svg>\n");
    if days.is_empty() {
        out.push_str("<p class=\"note\">No todo done in this span.</p>\n");
    }
    let median = |m: Option<u64>| m.map_or("—".to_owned(), ms);
    let _ = writeln!(
        out,
        "<p>{} todos done; median from creation to done: {}. {} questions asked, {} answered; \
         median time to an answer: {}.</p>",
        p.to_done.len(),
        median(p.median_to_done_ms),
        p.questions_asked,
        p.questions_answered,
        median(p.median_to_answer_ms)
    );
    out
}

/// Every question from asked to answered, newest last.
pub(super) fn questions(h: &GoalHistory) -> String {
    if h.questions.is_empty() {
        return "<p class=\"note\">No questions.</p>\n".to_owned();
    }
    let skip = h.questions.len().saturating_sub(MAX_QUESTIONS);
    let mut out = String::from(
        "<table id=\"questions-table\"><tr><th>gate</th><th>kind</th><th>asked</th>\
         <th>by</th><th>question</th><th>state</th><th>answer</th><th>waited</th></tr>",
    );
    for q in &h.questions[skip..] {
        let answer = match (&q.answer, &q.answered_by) {
            (Some(a), Some(by)) => format!("{a} ({by})"),
            (Some(a), None) => a.clone(),
            _ => String::new(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"words\">{}</td>\
             <td>{}</td><td class=\"words\">{}</td><td>{}</td></tr>",
            q.gate,
            esc(&q.kind),
            esc(&q.asked_at.to_string()),
            esc(&q.asked_by),
            esc(&loopx_kernel::limits::clip(&q.question, 600)),
            esc(&q.state),
            esc(&loopx_kernel::limits::clip(&answer, 300)),
            q.wait_ms.map_or(String::new(), ms)
        );
    }
    out.push_str("</table>\n");
    if skip > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">The oldest {skip} questions are not listed.</p>"
        );
    }
    out
}
