//! What loopx writes to Lark, in words a person reads: todos and goals by their titles, no
//! command lines and no markdown.
//!
//! The kernel's texts are written for the terminal: a gate's context says "`retry` gives it a
//! fresh budget … (`loopx gate answer ID 1 --note "…"`)", an agent's question ends with
//! "asked by `rev` in slice s8 on t6". In Lark nobody can type a command, and a card's
//! `plain_text` shows backticks as they are. [`plain`] turns loopx's own texts into words:
//! a command is left out with its parenthesis or its sentence, and a quoted name
//! (`` `retry` ``) is quoted with `"`. An agent's or a person's words are only unquoted
//! ([`unquote_code`]): nothing of theirs is left out. What a person typed into the table and
//! loopx repeats is [`quote`]d: on one line, bounded, between quotes.

use std::collections::HashMap;

use loopx_kernel::model::{Blocks, Gate, GateKind, Goal, Todo};
use loopx_kernel::{GoalId, TodoId};

/// The longest todo title named in a sentence.
const TITLE: usize = 80;

/// Todos and goals by their ids, to name them by their titles.
#[derive(Debug, Default)]
pub struct Names {
    todos: HashMap<TodoId, (String, GoalId)>,
    goals: HashMap<GoalId, Goal>,
    /// The goal a gate that names none is about.
    current: Option<GoalId>,
}

impl Names {
    pub fn new(goals: Vec<Goal>, todos: &[Todo], current: Option<GoalId>) -> Names {
        Names {
            todos: todos
                .iter()
                .map(|t| (t.id, (t.title.clone(), t.goal)))
                .collect(),
            goals: goals.into_iter().map(|g| (g.id, g)).collect(),
            current,
        }
    }

    /// Every todo and goal of the store.
    pub fn load(app: &loopx_app::App) -> Result<Names, loopx_app::AppError> {
        app.read(|s| {
            let current = s.current_goal()?.map(|g| g.id);
            Ok(Names::new(s.goals()?, &s.todos()?, current))
        })
    }

    /// `"Add stdev()" (t6)`, or `t6` for a todo it does not know.
    pub fn todo(&self, id: TodoId) -> String {
        match self.todos.get(&id) {
            Some((title, _)) => format!("{} ({id})", quote(title, TITLE)),
            None => id.to_string(),
        }
    }

    /// `goal g1 "Add mean() and stdev()"`.
    pub fn goal(&self, id: GoalId) -> String {
        match self.goals.get(&id) {
            Some(goal) => format!("goal {id} {}", quote(&goal.objective, TITLE)),
            None => format!("goal {id}"),
        }
    }

    pub fn goals(&self) -> impl Iterator<Item = &Goal> {
        self.goals.values()
    }

    /// The goal a todo belongs to.
    pub fn goal_of_todo(&self, id: TodoId) -> Option<GoalId> {
        self.todos.get(&id).map(|(_, goal)| *goal)
    }

    /// The goal a gate is about: the one it names, its todo's, the goal it holds back
    /// (`gate ask --goal`), or the current goal.
    pub fn goal_of(&self, gate: &Gate) -> Option<GoalId> {
        let todo = match &gate.kind {
            GateKind::Budget { goal }
            | GateKind::GoalMet { goal }
            | GateKind::GoalProposal { goal, .. }
            | GateKind::ScopeNarrowed { goal, .. } => return Some(*goal),
            GateKind::Stall { todo }
            | GateKind::Land { todo }
            | GateKind::Monitor { todo }
            | GateKind::Rollback { todo, .. } => Some(*todo),
            GateKind::Scope { todo, .. } => *todo,
            _ => None,
        };
        let todo = todo.or(match &gate.blocks {
            Blocks::Todos(todos) => todos.first().copied(),
            _ => None,
        });
        let held = match gate.blocks {
            Blocks::Goal(goal) => Some(goal),
            _ => None,
        };
        (todo.and_then(|t| self.goal_of_todo(t)))
            .or(held)
            .or(self.current)
    }

    /// The todo a gate is about, if one.
    pub fn todo_of(gate: &Gate) -> Option<TodoId> {
        match &gate.kind {
            GateKind::Stall { todo }
            | GateKind::Land { todo }
            | GateKind::Monitor { todo }
            | GateKind::Rollback { todo, .. } => Some(*todo),
            GateKind::Scope { todo, .. } => *todo,
            _ => match &gate.blocks {
                Blocks::Todos(todos) => todos.first().copied(),
                _ => None,
            },
        }
    }
}

/// Who asked, in words: `the agent "rev"`, `a person in Lark`, `ann`, `loopx`.
pub fn actor(actor: &str) -> String {
    use loopx_vocab::Actor;
    match Actor::of(actor) {
        Actor::Agent(agent) => format!("the agent {}", quote(agent, 40)),
        Actor::Person(person) if person.starts_with("lark") => "a person in Lark".to_owned(),
        Actor::Person(person) => quote(person, 40),
        Actor::Loopx => "loopx".to_owned(),
        Actor::Other(other) => quote(other, 40),
    }
}

/// A gate's text in words: loopx's own is [`plain`]ed, an agent's or a person's only
/// unquoted, and the line the kernel adds to say who asked in which slice (the card says it
/// in words) is left out.
pub fn gate_text(gate: &Gate, text: &str) -> String {
    let text: String = text
        .lines()
        .filter(|l| !is_asked_line(l))
        .collect::<Vec<_>>()
        .join("\n");
    match gate.opened_by_loopx() {
        true => plain(&text),
        false => unquote_code(&text),
    }
    .trim()
    .to_owned()
}

/// `asked by `rev` in slice s8 on t6`, `proposed by `rev` in slice s3`.
fn is_asked_line(line: &str) -> bool {
    let line = line.trim();
    (line.starts_with("asked by `") || line.starts_with("proposed by `"))
        && line.contains("` in slice s")
}

/// loopx's own text without command lines or backticks: a command (a code span that starts
/// with `loopx`, `git`, `--`, or a bare `loopx gate …`) is left out with the parenthesis
/// around it, or else with its sentence; what is left has its code spans quoted.
pub fn plain(text: &str) -> String {
    let mut text = text.to_owned();
    while let Some((start, end)) = first_command(&text) {
        let (from, to) = parenthesis_around(&text, start, end)
            .unwrap_or_else(|| sentence_around(&text, start, end));
        text.replace_range(from..to, "");
    }
    tidy(&unquote_code(&text))
}

/// Code spans as quotes (`` `retry` `` → `"retry"`), fences and a lone backtick left out.
pub fn unquote_code(text: &str) -> String {
    let text = text.replace("```", "");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(open) = rest.find('`') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('`') {
            Some(close) => {
                out.push('"');
                out.push_str(&after[..close]);
                out.push('"');
                rest = &after[close + 1..];
            }
            None => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// What a person typed, to repeat it: on one line, without control characters, at most
/// `max` characters (`…` when cut), its own double quotes made single, between `"`.
pub fn quote(text: &str, max: usize) -> String {
    let unquoted: String = text
        .chars()
        .map(|c| match c {
            '"' | '“' | '”' | '`' => '\'',
            c => c,
        })
        .collect();
    format!("\"{}\"", flat(&unquoted, max))
}

/// `text` on one line, without control characters or the characters that reorder text, at
/// most `max` characters (`…` when cut).
///
/// A quote sits inside loopx's own sentence: a right-to-left override typed into the table
/// (`U+202E`) would turn the rest of that sentence around ("was put back: …" shown backwards),
/// so bidi embeddings, overrides, isolates and marks are left out, as the terminal escapes them
/// (`loopx-cli`'s `output::safe`).
pub fn flat(text: &str, max: usize) -> String {
    let flat: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control() && !reorders(*c))
        .collect();
    match flat.chars().count() > max {
        true => format!("{}…", flat.chars().take(max).collect::<String>().trim_end()),
        false => flat,
    }
}

/// A bidi embedding, override, isolate or mark.
fn reorders(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The first command in `text`: its byte range.
fn first_command(text: &str) -> Option<(usize, usize)> {
    let mut at = 0;
    let mut code = None;
    while let Some(open) = text[at..].find('`').map(|i| at + i) {
        let Some(close) = text[open + 1..].find('`').map(|i| open + 1 + i) else {
            break;
        };
        if is_command(&text[open + 1..close]) {
            code = Some((open, close + 1));
            break;
        }
        at = close + 1;
    }
    let bare = ["loopx gate ", "loopx todo ", "loopx goal ", "loopx agent "]
        .iter()
        .filter_map(|c| text.find(c))
        .min()
        .map(|start| {
            let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
            (start, end)
        });
    match (code, bare) {
        (Some(c), Some(b)) => Some(if c.0 <= b.0 { c } else { b }),
        (c, b) => c.or(b),
    }
}

fn is_command(code: &str) -> bool {
    let code = code.trim();
    code == "loopx"
        || ["loopx ", "git ", "--", "env ", "cargo "]
            .iter()
            .any(|p| code.starts_with(p))
}

/// The parenthesis (on the same line) that holds `start..end`, with the space before it.
fn parenthesis_around(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let mut depth = 0;
    let open = text[line_start..start]
        .char_indices()
        .rev()
        .find_map(|(i, c)| {
            match c {
                ')' => depth += 1,
                '(' if depth == 0 => return Some(line_start + i),
                '(' => depth -= 1,
                _ => {}
            }
            None
        })?;
    let mut depth = 0;
    let close = text[end..line_end].char_indices().find_map(|(i, c)| {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(end + i),
            ')' => depth -= 1,
            _ => {}
        }
        None
    })?;
    let from = match text[..open].ends_with(' ') {
        true => open - 1,
        false => open,
    };
    Some((from, close + 1))
}

/// The sentence that holds `start..end`: from the end of the one before (or the line's
/// start) to its own end, with the spaces after it.
fn sentence_around(text: &str, start: usize, end: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let ends = |i: usize| {
        matches!(bytes[i], b'.' | b'?' | b'!')
            && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace())
    };
    let from = (0..start)
        .rev()
        .find(|&i| bytes[i] == b'\n' || ends(i))
        .map_or(0, |i| i + 1);
    let from = from + text[from..start].len() - text[from..start].trim_start().len();
    let to = (end..bytes.len())
        .find(|&i| bytes[i] == b'\n' || ends(i))
        .map_or(bytes.len(), |i| if bytes[i] == b'\n' { i } else { i + 1 });
    let to = to + text[to..].len() - text[to..].trim_start_matches(' ').len();
    // A whole line left out takes its line break along.
    let whole_line = (from == 0 || bytes[from - 1] == b'\n') && bytes.get(to) == Some(&b'\n');
    (from, to + usize::from(whole_line))
}

/// Spaces run together and before punctuation left out; empty lines kept as one.
fn tidy(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut l = l
                .split(' ')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            for p in [" .", " ,", " ;", " ?"] {
                l = l.replace(p, &p[1..]);
            }
            l
        })
        .collect();
    let mut out: Vec<&str> = Vec::new();
    for line in &lines {
        if line.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(line);
    }
    out.join("\n").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_leave_with_their_parenthesis_or_sentence_and_names_are_quoted() {
        assert_eq!(
            plain(
                "Stuck.\n`retry` gives it a fresh budget; `drop` drops it. Guidance for its next slice goes in `--note` (`loopx gate answer ID 1 --note \"…\"`)."
            ),
            "Stuck.\n\"retry\" gives it a fresh budget; \"drop\" drops it."
        );
        assert_eq!(
            plain(
                "`done` ends the goal; `plan` plans again (guidance for the planning slice goes in `--note`)."
            ),
            "\"done\" ends the goal; \"plan\" plans again."
        );
        assert_eq!(
            plain("Look at it (`git diff`, `git log -- <file>`); then run it (poll)?"),
            "Look at it; then run it (poll)?"
        );
        assert_eq!(
            plain("Keep or drop?\nanswer with: loopx gate answer q1 1 (keep) | 2 (drop)\nThanks."),
            "Keep or drop?\nThanks."
        );
    }

    #[test]
    fn code_spans_become_quotes_and_a_lone_backtick_goes() {
        assert_eq!(unquote_code("use `mean()` here"), "use \"mean()\" here");
        assert_eq!(unquote_code("a ` b"), "a  b");
        assert_eq!(unquote_code("```\nx\n```"), "\nx\n");
        assert_eq!(unquote_code("`a` and `b` and `"), "\"a\" and \"b\" and ");
    }

    #[test]
    fn a_quote_is_one_bounded_line_that_cannot_close_early() {
        assert_eq!(quote("a\n\"b\"\tc", 10), "\"a 'b' c\"");
        assert_eq!(quote(&"x".repeat(100), 5), "\"xxxxx…\"");
        assert_eq!(quote("`rm`", 10), "\"'rm'\"");
    }
}
