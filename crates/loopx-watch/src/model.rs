//! What the screen shows, as plain data: the panes, the three strips, what is selected and
//! what the person is typing. The view draws it ([`crate::view`]); keys change it
//! ([`crate::keys`]); the loop fills it from the store and the slices' logs.

use loopx_kernel::{GateId, Timestamp};
use ratatui::text::Line;

/// The whole screen's data.
#[derive(Debug, Default)]
pub struct Model {
    /// The project's store clock's now: elapsed times and countdowns are seen from it.
    pub now: Timestamp,
    /// One per agent, for its newest slice (running or ended), in agent order.
    pub panes: Vec<Pane>,
    /// Open questions, oldest first.
    pub questions: Vec<Question>,
    /// The goal's monitors, one line each.
    pub monitors: Vec<String>,
    /// The accounts' windows and the holds, one line each.
    pub accounts: Vec<String>,
    /// The pane keys act on.
    pub pane: usize,
    /// The question `a` answers.
    pub question: usize,
    /// The selected pane fills the screen.
    pub zoomed: bool,
    pub mode: Mode,
    /// What the last key did, or why it could not (a refused answer, a store that could not
    /// be read): shown above the keys until the next key.
    pub notice: Option<Notice>,
    /// `--goal`, shown in the title.
    pub goal: Option<String>,
}

/// A line of news for the person; `error` shows it in red.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub error: bool,
}

/// What keys do now.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Moving between panes and questions.
    #[default]
    Panes,
    /// Answering the selected question.
    Answer(Draft),
    /// A finished slice's transcript over the whole screen.
    Transcript(Transcript),
    /// Writing a message to the selected pane's agent (`loopx say`).
    Message(Message),
}

/// A message being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub agent: String,
    pub text: String,
}

/// An answer being put together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub gate: GateId,
    /// The option chosen (1-based, as `gate answer --option N` counts), for a question with
    /// options.
    pub option: Option<u32>,
    /// The note beside the option, or the answer in words for a question without options.
    pub text: String,
    /// Keys go into `text`.
    pub typing: bool,
}

/// A transcript shown whole, scrolled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    pub title: String,
    pub lines: Vec<String>,
    /// The first line shown.
    pub top: usize,
}

/// One slice's pane.
#[derive(Debug, Clone)]
pub struct Pane {
    pub agent: String,
    pub slice: String,
    /// Its todo (`t3 Fix the parser`), or what kind of slice it is (`planning`).
    pub todo: String,
    pub started_at: Timestamp,
    /// The wall-time limit in seconds (0: none recorded).
    pub limit_secs: u64,
    /// Tokens the agent reported so far; `None` when its output says nothing of them.
    pub tokens: Option<u64>,
    /// `Some(outcome)` once the slice ended: the last screen stays until the agent's next.
    pub ended: Option<String>,
    /// Its `loopx run` is gone (the record says running; the next `loopx run` recovers it).
    pub orphaned: bool,
    /// The agent's screen, re-emulated and redacted, one line per row.
    pub screen: Vec<Line<'static>>,
    /// The row the agent last wrote near (its cursor, or the last row with text): a pane
    /// smaller than the agent's terminal shows the rows up to it.
    pub focus_row: usize,
}

/// An open question, as the strip shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub gate: GateId,
    pub question: String,
    pub options: Vec<String>,
    /// `agent:a`, `human:ana`, `loopx`.
    pub asked_by: String,
}

impl Model {
    /// The selected pane, if any.
    pub fn selected_pane(&self) -> Option<&Pane> {
        self.panes.get(self.pane)
    }

    /// The selected question, if any.
    pub fn selected_question(&self) -> Option<&Question> {
        self.questions.get(self.question)
    }

    /// Keeps the selections on something that exists after the lists changed.
    pub fn clamp(&mut self) {
        self.pane = self.pane.min(self.panes.len().saturating_sub(1));
        self.question = self.question.min(self.questions.len().saturating_sub(1));
        if let Mode::Answer(draft) = &self.mode
            && !self.questions.iter().any(|q| q.gate == draft.gate)
        {
            // Answered elsewhere (the CLI, the board) or withdrawn while typing.
            self.notice = Some(Notice {
                text: format!("{} is no longer open", draft.gate),
                error: true,
            });
            self.mode = Mode::Panes;
        }
    }

    pub fn say(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice::new(text.into(), false));
    }

    /// An error's message, its hint included, on the one line above the keys.
    pub fn warn(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice::new(text.into(), true));
    }
}

impl Notice {
    fn new(text: String, error: bool) -> Notice {
        Notice {
            text: text.split('\n').collect::<Vec<_>>().join(" "),
            error,
        }
    }
}
