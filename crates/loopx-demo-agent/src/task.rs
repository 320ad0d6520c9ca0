//! What a prompt asks of the demo agent. The conventions are documented in
//! `docs/design/demo-agent.md`; this is the one place that reads them.

/// The file a work or review slice handles when the todo names none.
pub(crate) const DEFAULT_FILE: &str = "demo/NOTES.md";

/// Which behaviour the prompt selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Propose next todos (or declare the goal done).
    Plan,
    /// Write or extend the todo's file.
    Work,
    /// Check what an interrupted slice left, then do the work again.
    Repair,
    /// Read the file and judge it.
    Review,
    /// Ask a human for a decision.
    Ask,
}

/// The prompt, reduced to what the demo agent acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Task {
    pub kind: Kind,
    /// The todo's title without its `[demo:…]` tags (or a stand-in for a planning slice).
    pub title: String,
    /// The goal, when the prompt states one.
    pub goal: Option<String>,
    /// The file to write or review, as the todo names it (checked later by the workspace).
    pub file: String,
    /// `[demo:usage-limit]`: the first run hits a simulated usage limit.
    pub usage_limit: bool,
    /// `[demo:report-cli]`: after the work, report through `loopx report` as well.
    pub report_cli: bool,
    /// A human's answer to an earlier question, when the prompt carries one.
    pub answer: Option<String>,
}

/// Headings of the default prompt template that end the task section.
const SECTION_HEADINGS: [&str; 4] = [
    "handoff from the previous slice:",
    "answered questions:",
    "recent evidence:",
    "you may change only:",
];

/// What an empty template section is rendered as.
const EMPTY_SECTION: [&str; 4] = ["", "none", "(none)", "-"];

impl Task {
    /// Reads `prompt`. Never fails: an unrecognised prompt is a work slice on the goal.
    pub fn from_prompt(prompt: &str) -> Task {
        let section = task_section(prompt);
        let tags_in = section.as_deref().unwrap_or(prompt);
        let title = section
            .as_deref()
            .and_then(first_line)
            .or_else(|| line_value(prompt, "todo:"))
            .map(|t| strip_tags(&t))
            .filter(|t| !t.is_empty());
        let goal = line_value(prompt, "goal:").or_else(|| line_after(prompt, "on this goal:"));
        let slice = line_value(prompt, "slice:").map(|s| s.to_ascii_lowercase());
        let has = |tag: &str| tags_in.contains(tag);
        // Only a todo that asked reads answers: other answered gates are context, not input.
        let answer = has("[demo:ask]")
            .then(|| line_value(prompt, "answer:").or_else(|| section_body(prompt, 1)))
            .flatten();
        let reviewer = prompt.contains("working as reviewer")
            || line_value(prompt, "role:").is_some_and(|r| r.eq_ignore_ascii_case("reviewer"));
        let kind = if has("[demo:ask]") && answer.is_none() {
            Kind::Ask
        } else if slice.as_deref() == Some("plan") || has("[demo:plan]") || title.is_none() {
            Kind::Plan
        } else if has("[demo:review]")
            || reviewer
            || title
                .as_deref()
                .is_some_and(|t| t.to_ascii_lowercase().starts_with("review"))
        {
            Kind::Review
        } else if slice.as_deref() == Some("repair") {
            Kind::Repair
        } else {
            Kind::Work
        };
        Task {
            kind,
            title: title.unwrap_or_else(|| "Plan the next steps".to_owned()),
            goal,
            file: tag_value(tags_in, "[demo:file=").unwrap_or_else(|| DEFAULT_FILE.to_owned()),
            usage_limit: has("[demo:usage-limit]"),
            report_cli: has("[demo:report-cli]"),
            answer,
        }
    }
}

/// The lines after `Your task:` up to the next template heading, when the prompt has one.
fn task_section(prompt: &str) -> Option<String> {
    let mut lines = prompt.lines();
    lines.find(|l| l.trim().eq_ignore_ascii_case("your task:"))?;
    let body: Vec<&str> = lines
        .take_while(|l| !SECTION_HEADINGS.contains(&l.trim().to_ascii_lowercase().as_str()))
        .collect();
    Some(body.join("\n"))
}

/// The body of the `index`-th heading in [`SECTION_HEADINGS`] when it says something.
fn section_body(prompt: &str, index: usize) -> Option<String> {
    let heading = SECTION_HEADINGS[index];
    line_after(prompt, heading)
}

/// The first non-empty line after the line ending with `marker` (case-insensitive), unless it
/// is an empty-section placeholder or another heading.
fn line_after(prompt: &str, marker: &str) -> Option<String> {
    let mut lines = prompt.lines();
    lines.find(|l| l.trim().to_ascii_lowercase().ends_with(marker))?;
    let next = lines.find(|l| !l.trim().is_empty())?.trim();
    let lower = next.to_ascii_lowercase();
    (!EMPTY_SECTION.contains(&lower.as_str()) && !SECTION_HEADINGS.contains(&lower.as_str()))
        .then(|| next.to_owned())
}

/// The value of the first line `key value` (key case-insensitive, e.g. `Slice: plan`).
fn line_value(prompt: &str, key: &str) -> Option<String> {
    prompt.lines().find_map(|line| {
        let line = line.trim();
        let head = line.get(..key.len())?;
        head.eq_ignore_ascii_case(key)
            .then(|| line[key.len()..].trim().to_owned())
            .filter(|v| !v.is_empty())
    })
}

fn first_line(section: &str) -> Option<String> {
    section
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// `[demo:file=PATH]` → `PATH`.
fn tag_value(text: &str, open: &str) -> Option<String> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(']')? + start;
    Some(text[start..end].trim().to_owned()).filter(|v| !v.is_empty())
}

/// The title as a person reads it: without `[demo:…]` tags and doubled spaces.
fn strip_tags(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(start) = rest.find("[demo:") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find(']')
            .map_or("", |end| &rest[start + end + 1..]);
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default prompt template, as a supervisor renders it.
    fn rendered(role: &str, todo: &str, gates: &str) -> String {
        format!(
            "You are `demo`, working as {role} on this goal:\nShip the demo\n\nYou may change only: demo/**\n\n\
             Your task:\n{todo}\n\nHandoff from the previous slice:\nnone\n\n\
             Answered questions:\n{gates}\n\nRecent evidence:\nnone\n\nEnd with a loopx-report block.\n"
        )
    }

    #[test]
    fn a_plain_todo_is_work_on_the_default_file() {
        let task = Task::from_prompt(&rendered("executor", "t1: Write the notes", "none"));
        assert_eq!(task.kind, Kind::Work);
        assert_eq!(task.title, "t1: Write the notes");
        assert_eq!(task.goal.as_deref(), Some("Ship the demo"));
        assert_eq!(task.file, DEFAULT_FILE);
        assert_eq!(task.answer, None);
        assert!(!task.usage_limit);
    }

    #[test]
    fn tags_select_behaviours_and_files() {
        let todo = "Write the changelog [demo:file=demo/CHANGES.md] [demo:usage-limit]";
        let task = Task::from_prompt(&rendered("executor", todo, "none"));
        assert_eq!(task.kind, Kind::Work);
        assert_eq!(task.title, "Write the changelog");
        assert_eq!(task.file, "demo/CHANGES.md");
        assert!(task.usage_limit);
        assert!(!task.report_cli);
        let cli = Task::from_prompt(&rendered("executor", "Write it [demo:report-cli]", "none"));
        assert_eq!((cli.kind, cli.report_cli), (Kind::Work, true));
        assert_eq!(cli.title, "Write it");
        let review = Task::from_prompt(&rendered("executor", "Check it [demo:review]", "none"));
        assert_eq!(review.kind, Kind::Review);
    }

    #[test]
    fn markers_and_roles_select_the_slice_kind() {
        assert_eq!(Task::from_prompt("Slice: plan\nGoal: g").kind, Kind::Plan);
        assert_eq!(
            Task::from_prompt("Slice: repair\nTodo: Write it").kind,
            Kind::Repair
        );
        assert_eq!(
            Task::from_prompt("Todo: Review the notes").kind,
            Kind::Review
        );
        let reviewer = rendered("reviewer", "Look at the notes", "none");
        assert_eq!(Task::from_prompt(&reviewer).kind, Kind::Review);
        assert_eq!(
            Task::from_prompt(&rendered("planner", "", "none")).kind,
            Kind::Plan
        );
    }

    #[test]
    fn a_question_is_asked_until_it_is_answered() {
        let todo = "Choose the format [demo:ask]";
        assert_eq!(
            Task::from_prompt(&rendered("executor", todo, "none")).kind,
            Kind::Ask
        );
        let answered = Task::from_prompt(&rendered("executor", todo, "g1: Markdown list"));
        assert_eq!(answered.kind, Kind::Work);
        assert_eq!(answered.answer.as_deref(), Some("g1: Markdown list"));
        let inline = Task::from_prompt("Todo: Choose [demo:ask]\nAnswer: Table");
        assert_eq!(inline.answer.as_deref(), Some("Table"));
    }

    #[test]
    fn tags_in_the_handoff_do_not_count_when_there_is_a_task_section() {
        let prompt = rendered("executor", "Write the notes", "none").replace(
            "previous slice:\nnone",
            "previous slice:\nearlier [demo:ask]",
        );
        assert_eq!(Task::from_prompt(&prompt).kind, Kind::Work);
    }
}
