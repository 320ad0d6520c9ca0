//! The layout, drawn on ratatui's `TestBackend` from models made by hand.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::text::Line;

use super::draw;
use crate::keys;
use crate::model::{Draft, Mode, Model, Pane, Question};
use loopx_kernel::Timestamp;

const NOW: Timestamp = Timestamp(1_800_000_000_000);

fn pane(agent: &str, slice: &str, rows: &[&str]) -> Pane {
    Pane {
        agent: agent.to_owned(),
        slice: slice.to_owned(),
        todo: format!("t1 Work of {agent}"),
        started_at: Timestamp(NOW.0 - 42_000),
        limit_secs: 1800,
        tokens: Some(1234),
        ended: None,
        orphaned: false,
        screen: rows.iter().map(|r| Line::raw((*r).to_owned())).collect(),
        focus_row: rows.len().saturating_sub(1),
    }
}

fn model() -> Model {
    Model {
        now: NOW,
        panes: vec![
            pane("alpha", "s1", &["alpha says hello"]),
            pane("bravo", "s2", &["bravo says hi"]),
        ],
        questions: vec![Question {
            gate: "q1".parse().expect("gate"),
            question: "Ship it?".to_owned(),
            options: vec!["yes".to_owned(), "no".to_owned()],
            asked_by: "agent:alpha".to_owned(),
        }],
        monitors: vec!["t4 CI is green · next poll in 30s · not polled yet".to_owned()],
        accounts: vec!["hold agent:bravo · until resumed · by human:ana".to_owned()],
        ..Model::default()
    }
}

fn screen(model: &Model, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal.draw(|f| draw(f, model)).expect("draw");
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn two_panes_side_by_side_with_their_headers_strips_and_every_key() {
    let shown = screen(&model(), 120, 30);
    let row = shown
        .lines()
        .find(|l| l.contains("alpha says hello"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(row.contains("bravo says hi"), "side by side:\n{shown}");
    assert!(
        shown.contains("alpha · s1 · t1 Work of alpha · 0:42/30m · 1.2k tokens"),
        "{shown}"
    );
    assert!(
        shown.contains("> q1 Ship it?  [1] yes  [2] no  (agent:alpha)"),
        "{shown}"
    );
    assert!(shown.contains("t4 CI is green"), "{shown}");
    assert!(shown.contains("hold agent:bravo"), "{shown}");
    assert!(shown.contains("1 waiting on you"), "{shown}");
    for binding in keys::PANES {
        assert!(
            shown.contains(binding.what),
            "key {} shown:\n{shown}",
            binding.label
        );
    }
}

#[test]
fn zoom_gives_the_selected_pane_the_screen() {
    let mut model = model();
    model.pane = 1;
    model.zoomed = true;
    let shown = screen(&model, 100, 30);
    assert!(shown.contains("bravo says hi"), "{shown}");
    assert!(!shown.contains("alpha says hello"), "{shown}");
    assert!(!shown.contains("Ship it?"), "the strips give way:\n{shown}");
    assert!(shown.contains("zoom"), "the keys stay:\n{shown}");
}

#[test]
fn a_pane_smaller_than_the_agents_terminal_shows_the_rows_it_wrote_last() {
    let rows: Vec<String> = (1..=40).map(|i| format!("line {i}")).collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let mut model = model();
    model.panes = vec![pane("alpha", "s1", &rows)];
    let shown = screen(&model, 80, 24);
    assert!(shown.contains("│line 40 "), "{shown}");
    assert!(
        !shown.contains("│line 2 "),
        "the oldest rows give way:\n{shown}"
    );
}

#[test]
fn an_answer_being_written_shows_the_choice_the_note_and_its_keys() {
    let mut model = model();
    model.mode = Mode::Answer(Draft {
        gate: "q1".parse().expect("gate"),
        option: Some(2),
        text: "after the release".to_owned(),
        typing: false,
    });
    let shown = screen(&model, 120, 30);
    assert!(shown.contains("Answering q1: Ship it?"), "{shown}");
    assert!(shown.contains("[2] no"), "{shown}");
    assert!(shown.contains("note: after the release"), "{shown}");
    for binding in keys::ANSWER {
        assert!(
            shown.contains(binding.what),
            "key {} shown:\n{shown}",
            binding.label
        );
    }
    assert!(
        !shown.contains("pause agent"),
        "only this mode's keys:\n{shown}"
    );
}

#[test]
fn an_ended_slice_says_how_and_a_slice_past_its_limit_is_marked() {
    let mut model = model();
    model.panes[0].ended = Some("completed".to_owned());
    model.panes[1].started_at = Timestamp(NOW.0 - 1_900_000);
    let shown = screen(&model, 140, 30);
    assert!(shown.contains("ended: completed"), "{shown}");
    model.panes[0].ended = None;
    model.panes[0].orphaned = true;
    let orphaned = screen(&model, 160, 30);
    assert!(orphaned.contains("its loopx run is gone"), "{orphaned}");
    assert!(shown.contains("31:40/30m"), "{shown}");
}

#[test]
fn a_narrow_terminal_wraps_the_keys_and_nothing_is_lost() {
    let shown = screen(&model(), 50, 30);
    for binding in keys::PANES {
        assert!(
            shown.contains(binding.what),
            "key {} shown:\n{shown}",
            binding.label
        );
    }
    // Nothing panics on a terminal too small for the layout.
    screen(&model(), 10, 4);
}
