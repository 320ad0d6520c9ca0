//! What the demo agent does for each kind of task, turn by turn, ending in a `loopx-report`.

use std::io::Write;

use loopx_adapters::{Report, ReportEvidence, ReportQuestion, ReportStatus, ReportTodo};
use serde_json::json;

use super::stream::{Stop, Stream, ToolResult};
use super::task::{DEFAULT_FILE, Kind, Task};
use super::workspace::Workspace;

/// The final message: a sentence for people, then the report block for loopx.
#[derive(Debug)]
pub(crate) struct Ending {
    pub lead: String,
    pub report: Report,
}

impl Ending {
    pub fn message(&self) -> String {
        let block = serde_json::to_string(&self.report).expect("a report always serialises");
        format!("{}\n\n```loopx-report\n{block}\n```", self.lead)
    }
}

/// Runs `task`'s turns on `stream` and returns how it ends.
pub(crate) fn perform<W: Write>(
    task: &Task,
    ws: &Workspace,
    stream: &mut Stream<W>,
) -> Result<Ending, Stop> {
    match task.kind {
        Kind::Plan => plan(task, ws, stream),
        Kind::Work if task.report_cli => {
            let ending = work(task, ws, stream)?;
            super::report_cli::report_through_cli(ending, stream)
        }
        Kind::Work => work(task, ws, stream),
        Kind::Repair => {
            read_file(
                &task.file,
                ws,
                stream,
                "Checking what the interrupted slice left.",
            )?;
            let mut ending = work(task, ws, stream)?;
            ending.report.summary = format!("Repaired: {}", ending.report.summary);
            Ok(ending)
        }
        Kind::Review => review(task, ws, stream),
        Kind::Ask => Ok(ask(task)),
    }
}

fn plan<W: Write>(task: &Task, ws: &Workspace, stream: &mut Stream<W>) -> Result<Ending, Stop> {
    let file = DEFAULT_FILE;
    let exists = ws.read(file).ok().flatten().is_some();
    stream.tool(
        "Looking at what exists before proposing work.",
        "Glob",
        json!({ "pattern": "demo/**" }),
        || ToolResult::ok(if exists { file } else { "No files found" }),
    )?;
    if exists {
        let summary = format!("The goal looks complete: `{file}` exists and nothing is open.");
        return Ok(Ending {
            lead: summary.clone(),
            report: report(ReportStatus::Done, summary, "Nothing left to plan."),
        });
    }
    let goal = task.goal.as_deref().unwrap_or("the goal");
    let todo = |title: &str, detail: String, role: &str| ReportTodo {
        title: title.to_owned(),
        detail: Some(detail),
        role: Some(role.to_owned()),
        ..ReportTodo::default()
    };
    let mut report = report(
        ReportStatus::Progress,
        format!("Planned three steps toward: {goal}"),
        "Write the notes first; the review and the format decision follow.",
    );
    report.next_todos = vec![
        todo(
            "Write the demo notes",
            // The first attempt hits a simulated usage limit (a real CLI's most common
            // interruption), so `loopx demo` shows a pause and a resume.
            format!(
                "Create `{file}` with a line about the goal: {goal}. [demo:file={file}] [demo:usage-limit]"
            ),
            "executor",
        ),
        todo(
            "Review the demo notes",
            format!(
                "Read `{file}` and check that it states the goal. [demo:review] [demo:file={file}]"
            ),
            "reviewer",
        ),
        todo(
            "Choose the format of the demo notes",
            format!("A human decides how `{file}` lists its items. [demo:ask] [demo:file={file}]"),
            "executor",
        ),
    ];
    report.evidence = vec![evidence("note", format!("`{file}` does not exist yet"))];
    Ok(Ending {
        lead: "I propose three todos: write the notes, review them, and decide their format."
            .to_owned(),
        report,
    })
}

fn work<W: Write>(task: &Task, ws: &Workspace, stream: &mut Stream<W>) -> Result<Ending, Stop> {
    let file = task.file.as_str();
    if let Err(reason) = ws.resolve(file) {
        return Ok(blocked(
            format!("Refused to write: {reason}."),
            format!(
                "The todo names `{file}`, outside what I may change; should I write `{DEFAULT_FILE}` instead?"
            ),
            ["Write the default file", "Drop this todo"],
        ));
    }
    let existing = ws.read(file).ok().flatten();
    let line = match &task.answer {
        Some(answer) => format!("- {}: {answer}", task.title),
        None => format!("- {}", task.title),
    };
    let already = existing
        .as_deref()
        .is_some_and(|text| text.lines().any(|l| l == line));
    if !already && let Err(reason) = add_line(task, &line, existing.as_deref(), ws, stream)? {
        return Ok(cannot_write(file, &reason, ws.read_only()));
    }
    let written = ws.read(file).ok().flatten().unwrap_or_default();
    let items = written.lines().filter(|l| l.starts_with("- ")).count();
    let check = format!("grep -c '^- ' {file}");
    stream.tool(
        "Checking the result.",
        "Bash",
        json!({ "command": check }),
        || ToolResult::ok(items.to_string()),
    )?;
    let what = if already { "already had" } else { "now has" };
    let summary = format!(
        "`{file}` {what} the line for \u{201c}{}\u{201d}.",
        task.title
    );
    let mut report = report(
        ReportStatus::Done,
        summary.clone(),
        &format!("`{file}` lists {items} item(s); a reviewer can check that it states the goal."),
    );
    report.evidence = vec![
        evidence("test", format!("{check}: {items} item(s), as expected")),
        evidence(
            "diff",
            format!("{file}: {}", if already { "unchanged" } else { "+1 line" }),
        ),
    ];
    Ok(Ending {
        lead: summary,
        report,
    })
}

/// A `Write` (new file) or `Edit` (append) turn adding `line` to the task's file; the inner
/// error says why the write failed.
fn add_line<W: Write>(
    task: &Task,
    line: &str,
    existing: Option<&str>,
    ws: &Workspace,
    stream: &mut Stream<W>,
) -> Result<Result<(), String>, Stop> {
    let file = task.file.as_str();
    let (tool, input, text) = match existing {
        Some(old) => {
            let last = old.lines().last().unwrap_or_default().to_owned();
            let text = format!("{}{line}\n", with_newline(old));
            let input = json!({ "file_path": file, "old_string": last,
                                "new_string": format!("{last}\n{line}") });
            ("Edit", input, text)
        }
        None => {
            let goal = task.goal.as_deref().unwrap_or("(no goal given)");
            let text = format!("# Demo notes\n\nGoal: {goal}\n\n{line}\n");
            ("Write", json!({ "file_path": file, "content": text }), text)
        }
    };
    let mut outcome = Ok(());
    stream.tool(&format!("Updating `{file}`."), tool, input, || {
        match ws.write(file, &text) {
            Ok(()) if existing.is_some() => {
                ToolResult::ok(format!("The file {file} has been updated."))
            }
            Ok(()) => ToolResult::ok(format!("File created successfully at: {file}")),
            // Worded like Claude's own permission denial, which a real read-only run shows.
            Err(reason) if ws.read_only() => {
                outcome = Err(reason);
                ToolResult::denied(format!(
                    "Claude requested permissions to write to {file}, but you haven't granted it yet."
                ))
            }
            Err(reason) => {
                let result = ToolResult::error(reason.clone());
                outcome = Err(reason);
                result
            }
        }
    })?;
    Ok(outcome)
}

fn review<W: Write>(task: &Task, ws: &Workspace, stream: &mut Stream<W>) -> Result<Ending, Stop> {
    let file = task.file.as_str();
    let text = read_file(file, ws, stream, &format!("Reading `{file}` to review it."))?;
    let Some(text) = text else {
        let summary = format!("Nothing to review: `{file}` does not exist yet.");
        let mut report = report(
            ReportStatus::Done,
            summary.clone(),
            "Write the file, then review it again.",
        );
        report.next_todos = vec![ReportTodo {
            title: format!("Write {file}"),
            detail: Some(format!("The review found no `{file}`. [demo:file={file}]")),
            role: Some("executor".to_owned()),
            ..ReportTodo::default()
        }];
        return Ok(Ending {
            lead: summary,
            report,
        });
    };
    let items = text.lines().filter(|l| l.starts_with("- ")).count();
    let states_goal = text.lines().any(|l| l.starts_with("Goal: "));
    let verdict = if states_goal {
        "states the goal"
    } else {
        "does not state the goal"
    };
    let summary = format!("Reviewed `{file}`: {items} item(s); it {verdict}.");
    let mut report = report(ReportStatus::Done, summary.clone(), "Review finished.");
    report.evidence = vec![evidence(
        "note",
        format!(
            "{file}: {} line(s), {items} item(s), {verdict}",
            text.lines().count()
        ),
    )];
    if !states_goal {
        report.next_todos = vec![ReportTodo {
            title: format!("Add the goal to {file}"),
            detail: Some(format!(
                "The review found no `Goal:` line. [demo:file={file}]"
            )),
            role: Some("executor".to_owned()),
            ..ReportTodo::default()
        }];
    }
    Ok(Ending {
        lead: summary,
        report,
    })
}

fn ask(task: &Task) -> Ending {
    let file = &task.file;
    blocked(
        format!(
            "\u{201c}{}\u{201d} needs a decision from a person.",
            task.title
        ),
        format!("Should `{file}` list its items as a Markdown list or as a table?"),
        ["Markdown list", "Table"],
    )
}

/// A `Read` turn; the file's text, or `None` when it is missing or refused.
fn read_file<W: Write>(
    file: &str,
    ws: &Workspace,
    stream: &mut Stream<W>,
    narration: &str,
) -> Result<Option<String>, Stop> {
    let found = ws.read(file);
    stream.tool(
        narration,
        "Read",
        json!({ "file_path": file }),
        || match &found {
            Ok(Some(text)) => ToolResult::ok(numbered(text)),
            Ok(None) => ToolResult::error("File does not exist."),
            Err(reason) => ToolResult::error(reason.clone()),
        },
    )?;
    Ok(found.ok().flatten())
}

fn cannot_write(file: &str, reason: &str, read_only: bool) -> Ending {
    if read_only {
        return blocked(
            format!("I could not write `{file}`: this slice runs read-only."),
            format!(
                "Should this todo run with workspace-write permission so that `{file}` can be written?"
            ),
            ["Grant workspace-write", "Drop this todo"],
        );
    }
    blocked(
        format!("I could not write `{file}`: {reason}."),
        format!("Writing `{file}` failed; should I retry it in the next slice?"),
        ["Retry", "Drop this todo"],
    )
}

fn blocked(summary: String, question: String, options: [&str; 2]) -> Ending {
    let mut report = report(
        ReportStatus::Blocked,
        summary.clone(),
        "Waiting for the answer.",
    );
    report.question = Some(ReportQuestion {
        text: question,
        options: options.map(str::to_owned).to_vec(),
    });
    Ending {
        lead: summary,
        report,
    }
}

fn report(status: ReportStatus, summary: String, handoff: &str) -> Report {
    Report {
        status,
        summary,
        evidence: Vec::new(),
        handoff: Some(handoff.to_owned()),
        next_todos: Vec::new(),
        question: None,
        propose_goal: None,
        drop_todos: vec![],
        rewrite_todos: vec![],
        metrics: None,
    }
}

fn evidence(kind: &str, summary: String) -> ReportEvidence {
    ReportEvidence {
        kind: Some(kind.to_owned()),
        summary,
    }
}

/// `text` as Claude's `Read` tool shows it: right-aligned line numbers and a tab.
fn numbered(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, line)| format!("{:>6}\t{line}\n", i + 1))
        .collect()
}

fn with_newline(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}
