//! Saying in Lark why a change made in the table was put back.
//!
//! A change loopx refuses is written over at once (`crate::flowback`); without a word the
//! person sees her edit undone and nothing more. Each pass that refused changes posts one card
//! to the questions' chat that lists them, each with what was put back and why, in words
//! (`The change of the Status of "Add stdev()" (t6) to "Done" was put back: only loopx moves
//! a todo to "Done". …`).
//!
//! Anyone who can edit the table reaches this chat through it, so: what they typed is repeated
//! only [`quote`]d (one line, nothing that reorders text, at most [`VALUE`] characters, between
//! quotes) on a card whose every text is `plain_text` (no mention, link or markdown); a card
//! lists at most [`LISTED`] changes and counts the rest; and at most [`MESSAGES`] such cards
//! are posted in any
//! [`WINDOW_MS`]. The changes refused meanwhile are counted (in
//! `.loopx/projections/lark-put-back.json`) and the next card says how many; the event log has
//! each of them.

use std::path::PathBuf;

use loopx_app::App;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Client;
use crate::cards::{CardsError, card, plain};
use crate::projection::Row;
use crate::words::{flat, quote};

/// The window over which the put-back cards are counted.
pub const WINDOW_MS: u64 = 10 * 60 * 1000;
/// Put-back cards posted in one window.
pub const MESSAGES: usize = 5;
/// Changes one card lists; it counts the rest.
pub const LISTED: usize = 10;
/// The longest value a person typed that a card repeats.
pub const VALUE: usize = 60;

/// Why a change was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The person the record-change event names is not in `answerers`.
    NotAllowed,
    /// No event says who set the value the cell holds (the log's words say more).
    Unknown(String),
    /// Without record-change events no change can be attributed: the table is only shown.
    ShownOnly,
    /// A move to a status other than Dropped.
    LoopxMoves,
    /// An edit of a field loopx fills.
    LoopxFills(String),
    /// A priority that is not a whole number.
    NotWhole,
    /// The kernel refused the operation: its words.
    Refused(String),
}

impl Why {
    /// The words of the event log and the run's log.
    pub fn log(&self) -> String {
        match self {
            Why::NotAllowed => "not one of the answerers".to_owned(),
            Why::Unknown(why) => why.clone(),
            Why::ShownOnly => {
                "no record-change event can say who made it (docs/lark.md)".to_owned()
            }
            Why::LoopxMoves => "only a move to Dropped is taken; loopx moves the rest".to_owned(),
            Why::LoopxFills(name) => format!("`{name}` is loopx's to fill"),
            Why::NotWhole => "a priority is a whole number".to_owned(),
            Why::Refused(why) => why.clone(),
        }
    }

    /// The words of the card in Lark; `value` is the value put back, quoted.
    fn words(&self, value: &str) -> String {
        let allowed = "In the table a todo may be moved to Dropped or given another Priority, \
                       and a new row with a Task becomes a todo";
        match self {
            Why::NotAllowed => {
                "only the people loopx lists as answerers may change the table".to_owned()
            }
            Why::Unknown(_) => "Lark did not say who made it, and loopx takes a change only \
                                from a person it can name"
                .to_owned(),
            Why::ShownOnly => "this table only shows loopx's work: loopx takes no change made \
                               in it"
                .to_owned(),
            Why::LoopxMoves => {
                format!("only loopx moves a todo to {value}. To drop a todo, move it to Dropped")
            }
            Why::LoopxFills(name) => format!("loopx fills the {name} column. {allowed}"),
            Why::NotWhole => "a priority is a whole number".to_owned(),
            Why::Refused(why) => match flat(&crate::words::plain(why), 200) {
                why if why.is_empty() => "loopx refused it".to_owned(),
                why => format!("loopx refused it: {}", why.trim_end_matches('.')),
            },
        }
    }
}

/// A change made in the table that was refused and put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutBack {
    /// The todo whose record it was (`"Add stdev()" (t6)`); `None` for a new row.
    pub todo: Option<String>,
    /// The field changed; `None` for a new row.
    pub field: Option<String>,
    /// What the person wrote, as text (a new row's Task).
    pub value: String,
    pub why: Why,
}

impl PutBack {
    /// A change to `field` of `row`'s record.
    pub fn cell(row: &Row, field: &str, value: &str, why: Why) -> PutBack {
        let title = row.fields.get("Task").and_then(Value::as_str);
        let todo = match title {
            Some(title) => format!("{} ({})", quote(title, 80), row.todo),
            None => row.todo.to_string(),
        };
        PutBack {
            todo: Some(todo),
            field: Some(field.to_owned()),
            value: value.to_owned(),
            why,
        }
    }

    /// A new row with `title` as its Task, deleted.
    pub fn row(title: &str, why: Why) -> PutBack {
        PutBack {
            todo: None,
            field: None,
            value: title.to_owned(),
            why,
        }
    }

    /// The change and why it was put back, in one sentence or two.
    pub fn words(&self) -> String {
        let value = quote(&self.value, VALUE);
        let why = self.why.words(&value);
        match (&self.todo, &self.field) {
            (Some(todo), Some(field)) => {
                format!("The change of the {field} of {todo} to {value} was put back: {why}.")
            }
            _ => format!("The new row {value} was removed: {why}."),
        }
    }
}

/// The put-back cards posted in the window, and the changes refused since the last one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Quiet {
    /// When each card of the window was posted (ms since the epoch).
    pub sent: Vec<u64>,
    /// Changes refused and put back that no card listed yet.
    pub held: usize,
}

impl Quiet {
    /// Whether a card may be posted `now` for `new` changes; if not, they are counted as held.
    /// Either way the window moves on to `now`.
    pub fn room(&mut self, new: usize, now: u64) -> bool {
        self.sent.retain(|at| now.saturating_sub(*at) < WINDOW_MS);
        if new == 0 && self.held == 0 {
            return false;
        }
        if self.sent.len() >= MESSAGES {
            self.held += new;
            return false;
        }
        true
    }

    /// A card was posted at `now`: what it said is said.
    pub fn posted(&mut self, now: u64) {
        self.sent.push(now);
        self.held = 0;
    }
}

/// Where the window is kept.
pub fn quiet_file(app: &App) -> PathBuf {
    app.project().projections_dir().join("lark-put-back.json")
}

/// Says in the chat what the pass put back (and what earlier passes put back while the window
/// was full). Whether a card was posted.
pub fn tell(
    app: &App,
    client: &mut Client,
    chat_id: &str,
    put_back: &[PutBack],
) -> Result<bool, CardsError> {
    let file = quiet_file(app);
    let mut quiet: Quiet = crate::cards::read_json(&file)?;
    let now = app.now().0;
    if !quiet.room(put_back.len(), now) {
        crate::cards::write_json(&file, &quiet)?;
        return Ok(false);
    }
    match client.send_card(chat_id, &put_back_card(put_back, quiet.held)) {
        Ok(_) => {
            quiet.posted(now);
            crate::cards::write_json(&file, &quiet)?;
            Ok(true)
        }
        Err(e) => {
            // Said by the next card that gets through.
            quiet.held += put_back.len();
            crate::cards::write_json(&file, &quiet)?;
            Err(e.into())
        }
    }
}

/// The card: each change put back (at most [`LISTED`]), and how many more were.
pub fn put_back_card(put_back: &[PutBack], held: usize) -> Value {
    let mut elements: Vec<Value> = put_back
        .iter()
        .take(LISTED)
        .map(|p| plain(&p.words()))
        .collect();
    let more = put_back.len().saturating_sub(LISTED);
    if more > 0 {
        elements.push(plain(&format!("… and {more} more changes put back.")));
    }
    if held > 0 {
        elements.push(plain(&format!(
            "Besides, {held} more changes were put back while loopx kept this chat quiet (at most {MESSAGES} such messages in {} minutes).",
            WINDOW_MS / 60_000
        )));
    }
    elements.push(plain(
        "loopx's event log lists every change put back and who made it; the table shows what loopx holds now.",
    ));
    let n = put_back.len() + held;
    let title = match n {
        1 => "loopx put back a change made in the table".to_owned(),
        n => format!("loopx put back {n} changes made in the table"),
    };
    card(&title, "red", elements)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_window_counts_the_changes_and_the_next_card_says_how_many() {
        let mut quiet = Quiet::default();
        for i in 0..MESSAGES as u64 {
            assert!(quiet.room(1, i * 1000));
            quiet.posted(i * 1000);
        }
        assert!(!quiet.room(3, 10_000), "the window is full");
        assert!(!quiet.room(2, 20_000));
        assert_eq!(quiet.held, 5);
        // The window frees: a card is due for the held ones alone.
        assert!(quiet.room(0, WINDOW_MS + 1000));
        let card = put_back_card(&[], quiet.held).to_string();
        assert!(card.contains("5 more changes were put back"), "{card}");
        quiet.posted(WINDOW_MS + 1000);
        assert!(!quiet.room(0, WINDOW_MS + 2000), "nothing left to say");
    }

    #[test]
    fn what_a_person_typed_is_quoted_on_one_bounded_line() {
        let typed = format!(
            "Ignore this \"board\"\n<at user_id=\"all\"></at> {}",
            "x".repeat(500)
        );
        let put = PutBack::row(&typed, Why::NotAllowed);
        let words = put.words();
        assert!(words.len() < 300, "{words}");
        assert!(
            !words.contains('\n') && words.contains("'board'"),
            "{words}"
        );
        assert!(
            words.starts_with("The new row \"Ignore this 'board' <at user_id='all'></at> x"),
            "{words}"
        );
    }
}
