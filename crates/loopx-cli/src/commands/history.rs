//! `loopx goal history`: the course of a goal (`loopx_app::history`), shown in 100 columns,
//! as JSON, or its lineage as a graph.

use std::path::{Path, PathBuf};
use std::time::Duration;

use loopx_app::App;
use loopx_app::history::{GoalHistory, GraphFormat, Lane, Spent, render_graph, render_html};
use loopx_kernel::model::Outcome;
use loopx_kernel::time::short_duration;
use loopx_kernel::{GoalId, Timestamp};

use super::{duration, id};
use crate::context::Ctx;
use crate::errors::ExpectedError;

/// With at most this many slices, each gets a line; more, and a lane is a bar.
const SLICE_LINES: usize = 30;
/// The view fits this many columns.
const WIDTH: usize = 100;
/// A lane's bar shows its newest this many slices.
const BAR_SLICES: usize = 80;

/// How to show it besides the terminal view and `--json`.
pub struct Show {
    /// `--graph`: the lineage alone.
    pub graph: Option<String>,
    /// `--html FILE`: the page.
    pub html: Option<PathBuf>,
}

pub fn run(
    ctx: &mut Ctx,
    app: &App,
    goal: Option<String>,
    since: Option<String>,
    show: Show,
) -> Result<(), ExpectedError> {
    let goal = goal.as_deref().map(id::<GoalId>).transpose()?;
    let since = since.map(|t| since_time(ctx.now(), &t)).transpose()?;
    let history = app.goal_history(goal, since)?;
    if let Some(path) = show.html {
        return write_page(ctx, &history, &path);
    }
    if let Some(format) = show.graph {
        let format: GraphFormat = format.parse().map_err(ExpectedError::Usage)?;
        for line in render_graph(&history.lineage, format).lines() {
            ctx.line(line)?;
        }
        return Ok(());
    }
    if ctx.json {
        return ctx.json_out(&history);
    }
    // Titles and questions are clipped where they stand; a line that still runs over is cut.
    for line in text(&history) {
        ctx.line(loopx_kernel::limits::clip(&line, WIDTH))?;
    }
    Ok(())
}

/// `--html FILE`: the page, written whole (to a temporary file renamed over FILE, so that a
/// browser never reads half a page).
pub(super) fn write_page(
    ctx: &mut Ctx,
    history: &GoalHistory,
    path: &Path,
) -> Result<(), ExpectedError> {
    let page = render_html(history);
    let partial = path.with_extension("html.partial");
    std::fs::write(&partial, &page)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            ExpectedError::Usage(format!(
                "cannot write the history page to {}: {e}\n(hint: name a file in a directory you can write to)",
                path.display()
            ))
        })?;
    if ctx.json {
        return ctx.json_out(&serde_json::json!({"wrote": path, "bytes": page.len()}));
    }
    ctx.line(format!(
        "wrote {} ({} KiB)",
        path.display(),
        page.len().div_ceil(1024)
    ))
}

/// `--since`: an RFC 3339 time, or a duration back from now.
fn since_time(now: Timestamp, text: &str) -> Result<Timestamp, ExpectedError> {
    if let Some(at) = Timestamp::parse_rfc3339(text) {
        return Ok(at);
    }
    if text.chars().next().is_some_and(|c| c.is_ascii_digit()) && !text.contains('-') {
        let back = duration("--since", text)?;
        return Ok(Timestamp(now.0.saturating_sub(back.as_millis() as u64)));
    }
    Err(ExpectedError::Usage(format!(
        "invalid time `{text}` for --since\n(hint: an RFC 3339 time like 2026-12-07T04:00:00Z, or how long ago: 6h, 3d)"
    )))
}

fn ms(ms: u64) -> String {
    short_duration(Duration::from_millis(ms))
}

/// `12.3k`: a token count in a few characters.
fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn spent(s: &Spent) -> String {
    format!(
        "{:>5} slices {:>8} tok {:>9} {:>8}",
        s.slices,
        tokens(s.tokens),
        format!("${:.2}", s.cost_usd),
        ms(s.duration_ms)
    )
}

/// The whole view: the goal, its lanes, questions, cost, progress, metrics and lineage.
fn text(h: &GoalHistory) -> Vec<String> {
    let mut out = vec![format!(
        "Goal {} ({}): {}",
        h.goal,
        h.status.as_str(),
        loopx_kernel::limits::clip(&h.objective, 70)
    )];
    out.push(match h.since {
        Some(since) => format!("From {since} to {}", h.now),
        None => format!("From {} to {}", h.started_at, h.now),
    });
    out.push(String::new());
    out.push("Lanes".to_owned());
    let lines = h.lanes.iter().map(|l| l.slices.len()).sum::<usize>() <= SLICE_LINES;
    for lane in &h.lanes {
        lane_lines(lane, lines, &mut out);
    }
    if h.lanes.is_empty() {
        out.push("  no slices".to_owned());
    }
    events(h, &mut out);
    cost(h, &mut out);
    progress(h, &mut out);
    metrics(h, &mut out);
    lineage(h, &mut out);
    out
}

/// A letter per outcome, for a lane's bar.
fn letter(outcome: Option<Outcome>) -> char {
    match outcome {
        None => '>',
        Some(Outcome::Completed) => 'C',
        Some(Outcome::Progress) => 'P',
        Some(Outcome::Asked) => '?',
        Some(Outcome::Unchanged) => '.',
        Some(Outcome::Unverified) => 'V',
        Some(Outcome::TimedOut) => 'T',
        Some(Outcome::Interrupted) => 'I',
        Some(Outcome::UsageLimited) => 'Q',
        Some(_) => 'x',
    }
}

fn lane_lines(lane: &Lane, each: bool, out: &mut Vec<String>) {
    let tok: u64 = lane.slices.iter().map(|s| s.tokens).sum();
    let usd: f64 = lane.slices.iter().map(|s| s.cost_usd).sum();
    out.push(format!(
        "  {:<12} {} slices, {} working, {} tokens, ${usd:.2}",
        loopx_kernel::limits::clip(&lane.agent, 12),
        lane.slices.len(),
        ms(lane.working_ms),
        tokens(tok)
    ));
    if each {
        for s in &lane.slices {
            out.push(format!(
                "    {:<6} {:<6} {:<5} {:<14} {:>6} {:>8} tok ${:.2}",
                s.id.to_string(),
                s.kind.as_str(),
                s.todo.map(|t| t.to_string()).unwrap_or_else(|| "-".into()),
                s.outcome.map_or("running", |o| o.as_str()),
                ms(s.duration_ms),
                tokens(s.tokens),
                s.cost_usd
            ));
        }
        return;
    }
    let skip = lane.slices.len().saturating_sub(BAR_SLICES);
    let bar: String = lane.slices[skip..]
        .iter()
        .map(|s| letter(s.outcome))
        .collect();
    let more = if skip > 0 { "…" } else { "" };
    out.push(format!("    {more}{bar}"));
}

/// Questions, monitors, amendments and landings, one line each.
fn events(h: &GoalHistory, out: &mut Vec<String>) {
    if !h.questions.is_empty() {
        out.push(String::new());
        out.push("Questions".to_owned());
    }
    for q in &h.questions {
        let answered = match (&q.answered_by, q.wait_ms) {
            (Some(by), Some(wait)) => format!("answered by {by} after {}", ms(wait)),
            _ => q.state.clone(),
        };
        out.push(format!(
            "  {:<4} {} by {}: {} ({answered})",
            q.gate.to_string(),
            q.kind,
            loopx_kernel::limits::clip(&q.asked_by, 20),
            loopx_kernel::limits::clip(q.question.trim(), 30)
        ));
    }
    for m in &h.monitors {
        let met = m
            .met_at
            .map_or_else(|| m.state.as_str().to_owned(), |at| format!("met {at}"));
        let first = m
            .first_poll
            .map_or_else(|| "never polled".into(), |at| format!("first poll {at}"));
        out.push(format!("  monitor {} {}: {first}, {met}", m.todo, m.polls));
    }
    for a in &h.amendments {
        out.push(format!(
            "  amended to revision {} at {} by {}: {} changed",
            a.revision,
            a.at,
            a.by,
            a.changed.join(", ")
        ));
    }
    for l in &h.landings {
        let todo = l.todo.map(|t| t.to_string()).unwrap_or_default();
        out.push(format!(
            "  landing {} {todo}: {}",
            l.evidence,
            loopx_kernel::limits::clip(&l.summary, 60)
        ));
    }
}

fn cost(h: &GoalHistory, out: &mut Vec<String>) {
    let c = &h.cost;
    out.push(String::new());
    out.push(format!(
        "Cost {:>27} {:>8} {:>9} {:>8}",
        "", "tokens", "dollars", "time"
    ));
    out.push(format!("  {:<20} {}", "total", spent(&c.total)));
    let rows = c.by_agent.iter().map(|(k, v)| (format!("agent {k}"), v));
    let rows = rows.chain(c.by_kind.iter().map(|(k, v)| (format!("kind {k}"), v)));
    let rows = rows.chain(c.by_day.iter().map(|(k, v)| (format!("day {k}"), v)));
    for (name, s) in rows {
        out.push(format!(
            "  {:<20} {}",
            loopx_kernel::limits::clip(&name, 20),
            spent(s)
        ));
    }
    let mut todos: Vec<_> = c.by_todo.iter().collect();
    todos.sort_by_key(|t| std::cmp::Reverse(t.1.tokens));
    for (todo, s) in todos.into_iter().take(5) {
        out.push(format!("  {:<20} {}", format!("todo {todo}"), spent(s)));
    }
    out.push(format!(
        "  {:<20} {}",
        "changed nothing",
        spent(&c.changed_nothing)
    ));
}

fn progress(h: &GoalHistory, out: &mut Vec<String>) {
    let p = &h.progress;
    out.push(String::new());
    out.push("Progress".to_owned());
    let days: Vec<String> = p
        .done_by_day
        .iter()
        .map(|(d, n)| format!("{d} {n}"))
        .collect();
    out.push(format!(
        "  todos done: {}{}",
        p.to_done.len(),
        if days.is_empty() {
            String::new()
        } else {
            format!(" ({})", days.join(", "))
        }
    ));
    if let Some(median) = p.median_to_done_ms {
        out.push(format!("  creation to done: median {}", ms(median)));
    }
    out.push(format!(
        "  questions: {} asked, {} answered{}",
        p.questions_asked,
        p.questions_answered,
        p.median_to_answer_ms
            .map(|m| format!(", median {} to an answer", ms(m)))
            .unwrap_or_default()
    ));
}

/// A line per metric: how many measurements, the best so far and the last.
fn metrics(h: &GoalHistory, out: &mut Vec<String>) {
    if h.metrics.is_empty() {
        return;
    }
    out.push(String::new());
    out.push("Metrics".to_owned());
    for m in &h.metrics {
        let unit = match m.unit.as_str() {
            "" => String::new(),
            unit => format!(" {unit}"),
        };
        let on = |p: &loopx_app::history::MetricPoint| {
            p.todo.map_or(String::new(), |t| format!(" on {t}"))
        };
        let best = m.points.iter().rfind(|p| p.best).map_or_else(
            || "no direction set".to_owned(),
            |p| {
                let promoted = if p.promoted { ", promoted" } else { "" };
                let value = loopx_vocab::show_value(p.value);
                format!("best {value}{unit}{} ({}{promoted})", on(p), p.evidence)
            },
        );
        let last = m.points.last().map_or(String::new(), |p| {
            format!(", last {}{unit}{}", loopx_vocab::show_value(p.value), on(p))
        });
        out.push(format!(
            "  {}: {} measured, {best}{last}",
            m.name,
            m.points.len()
        ));
    }
}

fn lineage(h: &GoalHistory, out: &mut Vec<String>) {
    let todos = &h.lineage.todos;
    let count =
        |f: &dyn Fn(&loopx_app::history::TodoLine) -> bool| todos.iter().filter(|t| f(t)).count();
    use loopx_app::history::EdgeKind as E;
    out.push(String::new());
    out.push(format!(
        "Lineage: {} todos ({} made by a person, {} proposed by a slice, {} --next)",
        todos.len(),
        count(&|t| t.made == E::Made),
        count(&|t| t.made == E::Proposed),
        count(&|t| t.made == E::Next),
    ));
    out.push(format!(
        "  {} dropped (dead ends), {} rest on stale evidence",
        count(&|t| t.dead_end),
        count(&|t| t.rests_on_stale),
    ));
    for t in todos.iter().filter(|t| t.rests_on_stale).take(10) {
        let line = format!(
            "  {} rests on stale evidence: {}",
            t.todo,
            t.stale_because.as_deref().unwrap_or_default()
        );
        out.push(loopx_kernel::limits::clip(&line, WIDTH));
    }
    out.push("  (the graph: loopx goal history --graph mermaid|dot)".to_owned());
}
