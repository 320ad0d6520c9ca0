//! `[demo:report-cli]`: after the work, the agent reports through the `loopx report` command
//! the way a real agent would call it from its shell, instead of only in its final message.
//!
//! One `Bash` turn runs `loopx report evidence`, `loopx report handoff` and `loopx report done`
//! in order (stopping at the first failure), with the environment the slice was given. The
//! binary is this very executable: the demo adapter launches `{loopx} __demo-agent`.

use std::ffi::OsString;
use std::io::Write;
use std::process::{Command, Stdio};

use loopx_adapters::ReportStatus;
use serde_json::json;

use super::behaviour::Ending;
use super::stream::{Stop, Stream, ToolResult};

/// Runs the three reports after a finished piece of work, and says in the ending how it went.
pub(crate) fn report_through_cli<W: Write>(
    mut ending: Ending,
    stream: &mut Stream<W>,
) -> Result<Ending, Stop> {
    if ending.report.status != ReportStatus::Done {
        return Ok(ending);
    }
    let summary = ending.report.summary.clone();
    let test = ending
        .report
        .evidence
        .iter()
        .find(|e| e.kind.as_deref() == Some("test"))
        .map_or_else(|| summary.clone(), |e| e.summary.clone());
    let next = ending.report.handoff.clone().unwrap_or_default();
    let calls: [Vec<&str>; 3] = [
        vec!["report", "evidence", "test", &test],
        vec!["report", "handoff", "--done", &summary, "--next", &next],
        vec!["report", "done", "--summary", &summary],
    ];
    let command = calls
        .iter()
        .map(|args| shell_line(args))
        .collect::<Vec<_>>()
        .join(" && ");
    let mut failure = None;
    stream.tool(
        "Recording the evidence, the handoff and the todo's end with `loopx report`.",
        "Bash",
        json!({ "command": command }),
        || match run_all(&calls) {
            Ok(printed) => ToolResult::ok(printed),
            Err(why) => {
                failure = Some(why.clone());
                ToolResult::error(why)
            }
        },
    )?;
    match failure {
        None => {
            // Already recorded: the final report would only repeat it.
            ending
                .report
                .evidence
                .retain(|e| e.kind.as_deref() != Some("test"));
            ending.lead = format!("{} Reported through `loopx report`.", ending.lead);
        }
        Some(why) => {
            ending.report.status = ReportStatus::Progress;
            ending.report.summary = format!("{summary} `loopx report` failed: {why}");
            ending.lead.clone_from(&ending.report.summary);
        }
    }
    Ok(ending)
}

/// Runs each call in turn; their joined output, or why the first failing one failed.
fn run_all(calls: &[Vec<&str>]) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the loopx binary: {e}"))?;
    let mut printed = String::new();
    for args in calls {
        let output = Command::new(&exe)
            .args(args.iter().map(OsString::from))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run `{}`: {e}", shell_line(args)))?;
        printed.push_str(&String::from_utf8_lossy(&output.stdout));
        if !output.status.success() {
            let code = output
                .status
                .code()
                .map_or_else(|| "a signal".to_owned(), |c| format!("exit {c}"));
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!(
                "`{}` ended with {code}: {}",
                shell_line(args),
                stderr.trim()
            ));
        }
    }
    Ok(printed.trim_end().to_owned())
}

/// `loopx ARGS…` as a shell would take it, each argument single-quoted when it needs to be.
fn shell_line(args: &[&str]) -> String {
    let quoted = args.iter().map(|a| {
        if !a.is_empty()
            && a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:".contains(&b))
        {
            (*a).to_owned()
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    });
    std::iter::once("loopx".to_owned())
        .chain(quoted)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_lines_quote_what_needs_it() {
        assert_eq!(
            shell_line(&["report", "done", "--summary", "it's done"]),
            r"loopx report done --summary 'it'\''s done'"
        );
        assert_eq!(shell_line(&["report", ""]), "loopx report ''");
    }
}
