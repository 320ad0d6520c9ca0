//! `loopx __demo-agent`: read the arguments and the prompt, run the task, print the stream.

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::args::DemoArgs;
use super::behaviour::perform;
use super::stream::{Stop, Stream};
use super::task::Task;
use super::workspace::Workspace;
use crate::errors::DemoAgentError;

/// Seconds until a simulated usage limit resets, unless `LOOPX_DEMO_RESET_SECS` says otherwise.
const DEFAULT_RESET_SECS: i64 = 5;
/// Claude Code exits 1 when its run ends in an error (a limit, the turn limit).
const EXIT_ERROR: u8 = 1;

/// Runs the demo agent with the arguments after `__demo-agent`.
pub fn main(rest: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args = match DemoArgs::parse_from_rest(rest) {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            let code = if e.use_stderr() {
                crate::errors::exit_code::USAGE
            } else {
                crate::errors::exit_code::OK
            };
            return ExitCode::from(code);
        }
    };
    match run(&args, std::io::stdout().lock()) {
        Ok(code) => ExitCode::from(code),
        Err(DemoAgentError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(crate::errors::exit_code::OK)
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "loopx __demo-agent: error: {}",
                e.render()
            );
            let code = match e {
                DemoAgentError::NoPrompt => crate::errors::exit_code::USAGE,
                _ => EXIT_ERROR,
            };
            ExitCode::from(code)
        }
    }
}

/// One run; returns the exit code a real agent would give.
fn run(args: &DemoArgs, out: impl Write) -> Result<u8, DemoAgentError> {
    let prompt = read_prompt(args)?;
    let root = std::env::current_dir().map_err(DemoAgentError::Cwd)?;
    let cwd = root.display().to_string();
    let ws = Workspace::new(root, args.read_only);
    let task = Task::from_prompt(&prompt);
    let delay = Duration::from_millis(env_number("LOOPX_DEMO_DELAY_MS").unwrap_or(0));
    let mut stream = Stream::new(out, &prompt, &cwd, delay, args.max_turns);
    let mode = if args.read_only {
        "plan"
    } else {
        "acceptEdits"
    };
    // A subscription login reports its standing before anything else, as in the captures.
    stream
        .rate_limit("allowed", None)
        .map_err(DemoAgentError::Output)?;
    stream.init(&cwd, mode).map_err(DemoAgentError::Output)?;
    if task.usage_limit && !ws.limit_hit() {
        ws.mark_limit_hit()
            .map_err(|reason| DemoAgentError::Marker { reason })?;
        let reset_secs = env_number("LOOPX_DEMO_RESET_SECS")
            .and_then(|s| i64::try_from(s).ok())
            .unwrap_or(DEFAULT_RESET_SECS);
        // The one use of the clock: a reset time is only meaningful relative to now.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let resets_at = now.saturating_add(reset_secs);
        let text = format!(
            "You've hit your session limit \u{b7} resets {} (UTC)",
            clock_time(resets_at)
        );
        stream
            .usage_limit(resets_at, &text)
            .map_err(DemoAgentError::Output)?;
        return Ok(EXIT_ERROR);
    }
    let ended =
        perform(&task, &ws, &mut stream).and_then(|ending| stream.finish(&ending.message()));
    match ended {
        Ok(()) => Ok(crate::errors::exit_code::OK),
        Err(Stop::MaxTurns) => {
            stream.max_turns_result().map_err(DemoAgentError::Output)?;
            Ok(EXIT_ERROR)
        }
        Err(Stop::Io(e)) => Err(DemoAgentError::Output(e)),
    }
}

fn read_prompt(args: &DemoArgs) -> Result<String, DemoAgentError> {
    if let Some(path) = &args.prompt_file {
        return std::fs::read_to_string(path).map_err(|source| DemoAgentError::Prompt {
            path: path.clone(),
            source,
        });
    }
    // A terminal would wait for typing nobody does: a supervised slice always passes a file.
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(DemoAgentError::NoPrompt);
    }
    let mut prompt = String::new();
    stdin
        .read_to_string(&mut prompt)
        .map_err(DemoAgentError::Stdin)?;
    if prompt.trim().is_empty() {
        return Err(DemoAgentError::NoPrompt);
    }
    Ok(prompt)
}

/// A `LOOPX_DEMO_*` number; unset or unreadable means the default.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// `4:20am`, the way Claude Code words a reset time.
fn clock_time(epoch_secs: i64) -> String {
    let of_day = epoch_secs.rem_euclid(86_400);
    let (hour, minute) = (of_day / 3600, of_day % 3600 / 60);
    let (h12, half) = match hour {
        0 => (12, "am"),
        1..=11 => (hour, "am"),
        12 => (12, "pm"),
        _ => (hour - 12, "pm"),
    };
    format!("{h12}:{minute:02}{half}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_time_reads_like_claude() {
        assert_eq!(clock_time(0), "12:00am");
        assert_eq!(clock_time(4 * 3600 + 20 * 60), "4:20am");
        assert_eq!(clock_time(12 * 3600 + 5 * 60), "12:05pm");
        assert_eq!(clock_time(15 * 3600 + 20 * 60 + 59), "3:20pm");
    }
}
