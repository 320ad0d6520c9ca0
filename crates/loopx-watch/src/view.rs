//! The screen drawn from the model, and nothing else: no store, no clock, no terminal. So the
//! layout is tested with ratatui's `TestBackend`.

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use crate::keys;
use crate::model::{Mode, Model, Pane, Transcript};

/// Rows of each strip's list shown at most; the heading says how many there are.
const QUESTION_ROWS: usize = 3;
const STRIP_ROWS: usize = 2;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, model: &Model) {
    let area = frame.area();
    let footer = footer_lines(model, area.width);
    let [body, footer_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(footer.len() as u16)]).areas(area);
    frame.render_widget(Paragraph::new(footer), footer_area);
    if let Mode::Transcript(t) = &model.mode {
        draw_transcript(frame, body, t);
        return;
    }
    if model.zoomed
        && let Some(pane) = model.selected_pane()
    {
        draw_pane(frame, body, pane, true, model.now);
        return;
    }
    let strips = strips(model);
    let [title, panes, strips_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(strips.len() as u16),
    ])
    .areas(body);
    frame.render_widget(Paragraph::new(title_line(model)), title);
    draw_panes(frame, panes, model);
    frame.render_widget(Paragraph::new(strips), strips_area);
}

fn title_line(model: &Model) -> Line<'static> {
    let running = model.panes.iter().filter(|p| p.ended.is_none()).count();
    let mut spans = vec![
        Span::styled("loopx watch", Style::new().bold()),
        Span::raw(format!(" · {running} running")),
    ];
    if let Some(goal) = &model.goal {
        spans.push(Span::raw(format!(" · goal {goal}")));
    }
    if !model.questions.is_empty() {
        spans.push(Span::styled(
            format!(" · {} waiting on you", model.questions.len()),
            Style::new().fg(Color::Yellow).bold(),
        ));
    }
    Line::from(spans)
}

/// The panes in a grid: as many columns as rows or one more, filled row by row.
fn draw_panes(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    if model.panes.is_empty() {
        let text = "No slice is running. A pane opens here when `loopx run` starts one.";
        frame.render_widget(
            Paragraph::new(text).block(Block::bordered().title(" agents ")),
            area,
        );
        return;
    }
    let n = model.panes.len();
    let cols = (1..=n).find(|c| c * c >= n).unwrap_or(1);
    let rows = n.div_ceil(cols);
    let row_areas = Layout::vertical(vec![Constraint::Ratio(1, rows as u32); rows]).split(area);
    for (r, row_area) in row_areas.iter().enumerate() {
        let in_row = cols.min(n - r * cols);
        let cells =
            Layout::horizontal(vec![Constraint::Ratio(1, in_row as u32); in_row]).split(*row_area);
        for (c, cell) in cells.iter().enumerate() {
            let i = r * cols + c;
            draw_pane(frame, *cell, &model.panes[i], i == model.pane, model.now);
        }
    }
}

fn draw_pane(
    frame: &mut Frame<'_>,
    area: Rect,
    pane: &Pane,
    selected: bool,
    now: loopx_kernel::Timestamp,
) {
    let border = match (selected, pane.ended.is_some()) {
        (true, _) => Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        (false, true) => Style::new().fg(Color::DarkGray),
        (false, false) => Style::new(),
    };
    let block = Block::bordered()
        .border_style(border)
        .title(header(pane, now));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // A pane smaller than the agent's terminal shows the rows up to where it last wrote.
    let height = usize::from(inner.height);
    let end = (pane.focus_row + 1).max(height).min(pane.screen.len());
    let start = end.saturating_sub(height);
    let shown: Vec<Line<'static>> = pane.screen[start..end].to_vec();
    frame.render_widget(Paragraph::new(shown), inner);
}

/// `a · s3 · t1 Count slowly · 0:42/30m · 1.2k tokens`, and how an ended slice ended.
pub fn header(pane: &Pane, now: loopx_kernel::Timestamp) -> Line<'static> {
    let elapsed = clock(now.since(pane.started_at));
    let limit = match pane.limit_secs {
        0 => String::new(),
        secs => format!(
            "/{}",
            loopx_kernel::time::short_duration(Duration::from_secs(secs))
        ),
    };
    let over = pane.limit_secs > 0 && now.since(pane.started_at).as_secs() > pane.limit_secs;
    let tokens = pane
        .tokens
        .map_or(String::new(), |t| format!(" · {} tokens", count(t)));
    let mut spans = vec![
        Span::styled(format!(" {} ", pane.agent), Style::new().bold()),
        Span::raw(format!("· {} · {} · ", pane.slice, pane.todo)),
    ];
    match &pane.ended {
        Some(outcome) => spans.push(Span::styled(
            format!("ended: {outcome}"),
            Style::new().fg(Color::DarkGray),
        )),
        None if pane.orphaned => spans.push(Span::styled(
            "its loopx run is gone (the next recovers it)",
            Style::new().fg(Color::Red),
        )),
        None => spans.push(Span::styled(
            format!("{elapsed}{limit}"),
            match over {
                true => Style::new().fg(Color::Red).bold(),
                false => Style::new(),
            },
        )),
    }
    spans.push(Span::raw(format!("{tokens} ")));
    Line::from(spans)
}

/// `0:42`, `12:05`, `1:02:03`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..3600 => format!("{}:{:02}", s / 60, s % 60),
        _ => format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60),
    }
}

/// `950`, `12.4k`, `3.1M`.
fn count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The three strips: questions (or the answer being written), monitors, accounts.
fn strips(model: &Model) -> Vec<Line<'static>> {
    let heading = |name: &str, n: usize| {
        Line::from(Span::styled(
            format!("── {name} ({n}) "),
            Style::new().add_modifier(Modifier::BOLD),
        ))
    };
    let mut lines = vec![heading("Questions", model.questions.len())];
    match &model.mode {
        Mode::Answer(draft) => lines.extend(crate::answer::lines(model, draft)),
        Mode::Message(message) => lines.push(Line::from(vec![
            Span::styled(
                format!("Message to {}: ", message.agent),
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!("{}▏  (Enter sends it)", message.text)),
        ])),
        _ if model.questions.is_empty() => lines.push(Line::raw("  none: nothing waits on you")),
        _ => lines.extend(question_lines(model)),
    }
    for (name, items) in [("Monitors", &model.monitors), ("Accounts", &model.accounts)] {
        lines.push(heading(name, items.len()));
        if items.is_empty() {
            lines.push(Line::raw("  none"));
        }
        lines.extend(
            items
                .iter()
                .take(STRIP_ROWS)
                .map(|l| Line::raw(format!("  {l}"))),
        );
    }
    lines
}

/// The questions around the selected one, each with its options.
fn question_lines(model: &Model) -> Vec<Line<'static>> {
    let first = model.question.saturating_sub(QUESTION_ROWS - 1);
    model
        .questions
        .iter()
        .enumerate()
        .skip(first)
        .take(QUESTION_ROWS)
        .map(|(i, q)| {
            let selected = i == model.question;
            let options: String = q
                .options
                .iter()
                .enumerate()
                .map(|(n, o)| format!("  [{}] {o}", n + 1))
                .collect();
            let style = match selected {
                true => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
                false => Style::new(),
            };
            Line::from(vec![
                Span::styled(
                    format!(
                        "{} {} {}",
                        if selected { ">" } else { " " },
                        q.gate,
                        q.question
                    ),
                    style,
                ),
                Span::raw(options),
                Span::styled(
                    format!("  ({})", q.asked_by),
                    Style::new().fg(Color::DarkGray),
                ),
            ])
        })
        .collect()
}

fn draw_transcript(frame: &mut Frame<'_>, area: Rect, t: &Transcript) {
    let lines: Vec<Line<'static>> = t.lines[t.top.min(t.lines.len())..]
        .iter()
        .map(|l| Line::raw(l.clone()))
        .collect();
    let title = format!(
        " {} · line {}/{} ",
        t.title,
        (t.top + 1).min(t.lines.len()),
        t.lines.len()
    );
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(title)),
        area,
    );
}

/// The notice, then every key of the mode, wrapped to the width.
fn footer_lines(model: &Model, width: u16) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(notice) = &model.notice {
        let style = match notice.error {
            true => Style::new().fg(Color::Red),
            false => Style::new().fg(Color::Green),
        };
        lines.push(Line::styled(notice.text.clone(), style));
    }
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0usize;
    for binding in keys::bindings(model) {
        let len = binding.label.chars().count() + binding.what.chars().count() + 3;
        if used + len > usize::from(width) && !row.is_empty() {
            lines.push(Line::from(std::mem::take(&mut row)));
            used = 0;
        }
        row.push(Span::styled(binding.label, Style::new().reversed()));
        row.push(Span::raw(format!(" {}  ", binding.what)));
        used += len;
    }
    lines.push(Line::from(row));
    lines
}

#[cfg(test)]
mod tests;
