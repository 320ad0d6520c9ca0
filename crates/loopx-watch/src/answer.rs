//! The question strip while an answer is written: the question, its options with the chosen
//! one marked, and the note (or the answer in words) as typed.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::model::{Draft, Model};

/// The lines the question strip shows for `draft`.
pub fn lines(model: &Model, draft: &Draft) -> Vec<Line<'static>> {
    let Some(q) = model.questions.iter().find(|q| q.gate == draft.gate) else {
        return Vec::new();
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("Answering {}: ", q.gate),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
        Span::raw(q.question.clone()),
    ])];
    if !q.options.is_empty() {
        let mut spans = vec![Span::raw("  type its number: ")];
        for (i, option) in q.options.iter().enumerate() {
            let n = i as u32 + 1;
            let style = match draft.option == Some(n) {
                true => Style::new().fg(Color::Black).bg(Color::Yellow),
                false => Style::new(),
            };
            spans.push(Span::styled(format!("[{n}] {option}"), style));
            spans.push(Span::raw("  "));
        }
        lines.push(Line::from(spans));
    }
    let what = match q.options.is_empty() {
        true => "answer",
        false => "note",
    };
    let cursor = if draft.typing { "▏" } else { "" };
    lines.push(Line::raw(format!("  {what}: {}{cursor}", draft.text)));
    lines
}
