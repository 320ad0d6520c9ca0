//! The keys, written once: each mode's bindings are both what the footer shows and what a key
//! press is matched against, so no key works unseen and none is shown that does nothing.
//! [`press`] changes the model and says which operation, if any, the loop must run.

use loopx_kernel::GateId;
use loopx_kernel::store::AnswerChoice;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::model::{Draft, Mode, Model};

/// What a binding does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    NextPane,
    PrevPane,
    Zoom,
    NextQuestion,
    PrevQuestion,
    Answer,
    Pause,
    Resume,
    Transcript,
    /// Write a message to the selected pane's agent.
    Message,
    Quit,
    /// In an answer: type the note (or the answer in words).
    Note,
    Send,
    Cancel,
    ScrollUp,
    ScrollDown,
    PageUp,
    PageDown,
}

/// Keys, their label in the footer, and what they do.
#[derive(Debug)]
pub struct Binding {
    pub keys: &'static [KeyCode],
    pub label: &'static str,
    pub what: &'static str,
    pub action: Action,
}

const fn bind(
    keys: &'static [KeyCode],
    label: &'static str,
    what: &'static str,
    action: Action,
) -> Binding {
    Binding {
        keys,
        label,
        what,
        action,
    }
}

/// Watching.
pub const PANES: &[Binding] = &[
    bind(
        &[KeyCode::Tab, KeyCode::Right],
        "Tab/→",
        "next pane",
        Action::NextPane,
    ),
    bind(
        &[KeyCode::BackTab, KeyCode::Left],
        "←",
        "previous pane",
        Action::PrevPane,
    ),
    bind(&[KeyCode::Char('z')], "z", "zoom", Action::Zoom),
    bind(
        &[KeyCode::Down, KeyCode::Char('j')],
        "↓",
        "next question",
        Action::NextQuestion,
    ),
    bind(
        &[KeyCode::Up, KeyCode::Char('k')],
        "↑",
        "previous question",
        Action::PrevQuestion,
    ),
    bind(&[KeyCode::Char('a')], "a", "answer", Action::Answer),
    bind(&[KeyCode::Char('p')], "p", "pause agent", Action::Pause),
    bind(&[KeyCode::Char('r')], "r", "resume agent", Action::Resume),
    bind(&[KeyCode::Char('m')], "m", "message agent", Action::Message),
    bind(&[KeyCode::Char('t')], "t", "transcript", Action::Transcript),
    bind(&[KeyCode::Char('q')], "q", "quit", Action::Quit),
];

/// Answering: digits choose an option (shown with the options themselves).
pub const ANSWER: &[Binding] = &[
    bind(&[KeyCode::Char('n')], "n", "note", Action::Note),
    bind(&[KeyCode::Enter], "Enter", "send", Action::Send),
    bind(&[KeyCode::Esc], "Esc", "cancel", Action::Cancel),
];

/// Typing a note or an answer in words: every other key is text.
pub const TYPING: &[Binding] = &[
    bind(&[KeyCode::Enter], "Enter", "send", Action::Send),
    bind(&[KeyCode::Esc], "Esc", "cancel", Action::Cancel),
];

/// Reading a transcript.
pub const TRANSCRIPT: &[Binding] = &[
    bind(
        &[KeyCode::Up, KeyCode::Char('k')],
        "↑",
        "up",
        Action::ScrollUp,
    ),
    bind(
        &[KeyCode::Down, KeyCode::Char('j')],
        "↓",
        "down",
        Action::ScrollDown,
    ),
    bind(&[KeyCode::PageUp], "PgUp", "page up", Action::PageUp),
    bind(
        &[KeyCode::PageDown, KeyCode::Char(' ')],
        "PgDn",
        "page down",
        Action::PageDown,
    ),
    bind(
        &[KeyCode::Esc, KeyCode::Char('q')],
        "Esc",
        "close",
        Action::Cancel,
    ),
];

/// The bindings of the model's mode.
pub fn bindings(model: &Model) -> &'static [Binding] {
    match &model.mode {
        Mode::Panes => PANES,
        Mode::Answer(draft) if draft.typing => TYPING,
        Mode::Answer(_) => ANSWER,
        Mode::Message(_) => TYPING,
        Mode::Transcript(_) => TRANSCRIPT,
    }
}

/// An operation on the project the loop runs for a key, as the person running `watch`.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Answer {
        gate: GateId,
        choice: AnswerChoice,
        note: Option<String>,
    },
    Pause(String),
    Resume(String),
    /// A person's message to an agent (`loopx say`): into its running session, or at its next
    /// slice's prompt.
    Say {
        agent: String,
        text: String,
    },
    /// Read the slice's transcript into [`Mode::Transcript`].
    Transcript(String),
    Quit,
}

/// Applies a key press to the model; the operation to run, if the key asks for one.
/// `page` is how many transcript lines one page scrolls.
pub fn press(model: &mut Model, key: KeyEvent, page: usize) -> Option<Command> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Command::Quit);
    }
    model.notice = None;
    if let Mode::Answer(draft) = &mut model.mode
        && draft.typing
        && let Some(text) = typed(key, &mut draft.text)
    {
        return text;
    }
    if let Mode::Message(message) = &mut model.mode
        && let Some(text) = typed(key, &mut message.text)
    {
        return text;
    }
    if let (Mode::Answer(draft), KeyCode::Char(c @ '0'..='9')) = (&mut model.mode, key.code) {
        let count = model
            .questions
            .iter()
            .find(|q| q.gate == draft.gate)
            .map_or(0, |q| q.options.len());
        draft.option = chosen(draft.option, c as u32 - '0' as u32, count);
        return None;
    }
    let action = bindings(model)
        .iter()
        .find(|b| b.keys.contains(&key.code))?
        .action;
    act(model, action, page)
}

/// The option chosen once `digit` is pressed after `before`, of `count` options: the digit
/// joins the number chosen so far while that names an option (`1` then `2` is 12 of 12 or
/// more), else it starts a new one; a digit that names no option changes nothing.
fn chosen(before: Option<u32>, digit: u32, count: usize) -> Option<u32> {
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    let joined = before.map(|n| n.saturating_mul(10).saturating_add(digit));
    match joined {
        Some(n) if n <= count => Some(n),
        _ if (1..=count).contains(&digit) => Some(digit),
        _ => before,
    }
}

/// A key typed into a note: `Some(None)` when it was taken as text, `None` when it is a
/// binding's.
fn typed(key: KeyEvent, text: &mut String) -> Option<Option<Command>> {
    match key.code {
        KeyCode::Char(c) => text.push(c),
        KeyCode::Backspace => {
            text.pop();
        }
        _ => return None,
    }
    Some(None)
}

fn act(model: &mut Model, action: Action, page: usize) -> Option<Command> {
    let panes = model.panes.len().max(1);
    let questions = model.questions.len().max(1);
    match action {
        Action::NextPane => model.pane = (model.pane + 1) % panes,
        Action::PrevPane => model.pane = (model.pane + panes - 1) % panes,
        Action::Zoom => model.zoomed = !model.zoomed,
        Action::NextQuestion => model.question = (model.question + 1) % questions,
        Action::PrevQuestion => model.question = (model.question + questions - 1) % questions,
        Action::Answer => start_answer(model),
        Action::Pause | Action::Resume | Action::Transcript | Action::Message => {
            return on_pane(model, action);
        }
        Action::Quit => return Some(Command::Quit),
        Action::Note => {
            if let Mode::Answer(draft) = &mut model.mode {
                draft.typing = true;
            }
        }
        Action::Send => return send(model),
        Action::Cancel => model.mode = Mode::Panes,
        Action::ScrollUp => scroll(model, -1),
        Action::ScrollDown => scroll(model, 1),
        Action::PageUp => scroll(model, -(page as isize)),
        Action::PageDown => scroll(model, page as isize),
    }
    None
}

fn start_answer(model: &mut Model) {
    let Some(question) = model.selected_question() else {
        model.warn("no open question to answer");
        return;
    };
    model.mode = Mode::Answer(Draft {
        gate: question.gate,
        option: None,
        text: String::new(),
        // A question without options is answered in words: straight to typing.
        typing: question.options.is_empty(),
    });
}

/// Pause, resume or a transcript: the selected pane's agent or slice.
fn on_pane(model: &mut Model, action: Action) -> Option<Command> {
    let Some(pane) = model.selected_pane() else {
        model.warn("no pane selected: no slice has run since watch started");
        return None;
    };
    match action {
        Action::Pause => Some(Command::Pause(pane.agent.clone())),
        Action::Resume => Some(Command::Resume(pane.agent.clone())),
        Action::Message => {
            model.mode = Mode::Message(crate::model::Message {
                agent: pane.agent.clone(),
                text: String::new(),
            });
            None
        }
        _ if pane.ended.is_none() => {
            let slice = pane.slice.clone();
            model.warn(format!(
                "{slice} is still running: its transcript opens once it ended (its screen is here)"
            ));
            None
        }
        _ => Some(Command::Transcript(pane.slice.clone())),
    }
}

/// The answer or the message as drafted, or why it cannot be sent yet.
fn send(model: &mut Model) -> Option<Command> {
    if let Mode::Message(message) = &model.mode {
        let text = message.text.trim().to_owned();
        if text.is_empty() {
            model.warn("type the message first");
            return None;
        }
        let agent = message.agent.clone();
        model.mode = Mode::Panes;
        return Some(Command::Say { agent, text });
    }
    let Mode::Answer(draft) = &model.mode else {
        return None;
    };
    let has_options = model
        .questions
        .iter()
        .find(|q| q.gate == draft.gate)
        .is_some_and(|q| !q.options.is_empty());
    let text = draft.text.trim().to_owned();
    let (choice, note) = match (has_options, draft.option) {
        (true, Some(n)) => (
            AnswerChoice::Option(n),
            Some(text).filter(|t| !t.is_empty()),
        ),
        (true, None) => {
            model.warn("choose an option first (its number)");
            return None;
        }
        (false, _) if text.is_empty() => {
            model.warn("type the answer first");
            return None;
        }
        (false, _) => (AnswerChoice::Text(text), None),
    };
    let gate = draft.gate;
    model.mode = Mode::Panes;
    Some(Command::Answer { gate, choice, note })
}

fn scroll(model: &mut Model, by: isize) {
    if let Mode::Transcript(t) = &mut model.mode {
        let last = t.lines.len().saturating_sub(1);
        t.top = t.top.saturating_add_signed(by).min(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Question;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn asked(options: &[&str]) -> Model {
        Model {
            questions: vec![Question {
                gate: "q1".parse().expect("gate id"),
                question: "Ship it?".to_owned(),
                options: options.iter().map(|o| (*o).to_owned()).collect(),
                asked_by: "agent:a".to_owned(),
            }],
            ..Model::default()
        }
    }

    #[test]
    fn an_option_with_a_note_is_answered_with_keys() {
        let mut model = asked(&["yes", "no"]);
        assert_eq!(press(&mut model, key(KeyCode::Char('a')), 10), None);
        press(&mut model, key(KeyCode::Char('2')), 10);
        press(&mut model, key(KeyCode::Char('n')), 10);
        for c in "not yet".chars() {
            press(&mut model, key(KeyCode::Char(c)), 10);
        }
        let sent = press(&mut model, key(KeyCode::Enter), 10);
        assert_eq!(
            sent,
            Some(Command::Answer {
                gate: "q1".parse().expect("gate id"),
                choice: AnswerChoice::Option(2),
                note: Some("not yet".to_owned()),
            })
        );
        assert_eq!(model.mode, Mode::Panes);
    }

    /// Past nine options, digits join: 1 then 2 picks the twelfth of twelve.
    #[test]
    fn any_of_more_than_nine_options_can_be_chosen() {
        let options: Vec<String> = (1..=12).map(|n| format!("o{n}")).collect();
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let mut model = asked(&options);
        press(&mut model, key(KeyCode::Char('a')), 10);
        let option = |model: &Model| match &model.mode {
            Mode::Answer(draft) => draft.option,
            _ => None,
        };
        for (c, want) in [
            ('1', 1),
            ('2', 12),
            ('3', 3),
            ('0', 3),
            ('1', 1),
            ('0', 10),
            ('9', 9),
        ] {
            press(&mut model, key(KeyCode::Char(c)), 10);
            assert_eq!(option(&model), Some(want), "after {c}");
        }
        // With two options, a digit past them changes nothing.
        let mut model = asked(&["yes", "no"]);
        press(&mut model, key(KeyCode::Char('a')), 10);
        press(&mut model, key(KeyCode::Char('2')), 10);
        press(&mut model, key(KeyCode::Char('7')), 10);
        assert_eq!(option(&model), Some(2));
    }

    #[test]
    fn sending_without_an_option_says_what_is_missing() {
        let mut model = asked(&["yes", "no"]);
        press(&mut model, key(KeyCode::Char('a')), 10);
        assert_eq!(press(&mut model, key(KeyCode::Enter), 10), None);
        assert!(model.notice.as_ref().is_some_and(|n| n.error));
        assert!(matches!(model.mode, Mode::Answer(_)));
    }

    #[test]
    fn a_question_without_options_is_answered_in_words() {
        let mut model = asked(&[]);
        press(&mut model, key(KeyCode::Char('a')), 10);
        // `q` is text here, not quit.
        for c in "qa first".chars() {
            assert_eq!(press(&mut model, key(KeyCode::Char(c)), 10), None);
        }
        let sent = press(&mut model, key(KeyCode::Enter), 10);
        assert!(matches!(
            sent,
            Some(Command::Answer { choice: AnswerChoice::Text(t), note: None, .. }) if t == "qa first"
        ));
    }

    #[test]
    fn every_binding_is_reachable_and_keys_do_not_collide_within_a_mode() {
        for mode in [PANES, ANSWER, TYPING, TRANSCRIPT] {
            let mut seen = Vec::new();
            for binding in mode {
                for code in binding.keys {
                    assert!(!seen.contains(code), "{code:?} bound twice");
                    seen.push(*code);
                }
            }
        }
    }

    #[test]
    fn ctrl_c_quits_in_every_mode() {
        let mut model = asked(&[]);
        press(&mut model, key(KeyCode::Char('a')), 10);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(press(&mut model, ctrl_c, 10), Some(Command::Quit));
    }

    #[test]
    fn a_message_to_the_selected_pane_s_agent_is_written_with_keys() {
        let mut model = Model {
            panes: vec![crate::model::Pane {
                agent: "exec".to_owned(),
                slice: "s1".to_owned(),
                todo: "t1 Tidy".to_owned(),
                started_at: loopx_kernel::Timestamp(0),
                limit_secs: 60,
                tokens: None,
                ended: None,
                orphaned: false,
                screen: Vec::new(),
                focus_row: 0,
            }],
            ..Model::default()
        };
        assert_eq!(press(&mut model, key(KeyCode::Char('m')), 10), None);
        assert_eq!(
            bindings(&model).len(),
            TYPING.len(),
            "every key is text now"
        );
        assert_eq!(
            press(&mut model, key(KeyCode::Enter), 10),
            None,
            "nothing typed"
        );
        for c in "look at t7 first".chars() {
            press(&mut model, key(KeyCode::Char(c)), 10);
        }
        let sent = press(&mut model, key(KeyCode::Enter), 10);
        assert_eq!(
            sent,
            Some(Command::Say {
                agent: "exec".to_owned(),
                text: "look at t7 first".to_owned()
            })
        );
        assert_eq!(model.mode, Mode::Panes);
        assert!(
            PANES
                .iter()
                .any(|b| b.action == Action::Message && b.label == "m")
        );
    }
}
