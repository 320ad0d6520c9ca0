//! The outcome of a slice, from what the stream said first and the exit code last. The rules
//! and the evidence behind each are in `docs/design/classification.md`.

use jiff::Timestamp;
use serde::Serialize;

use crate::adapter::{ExitMeaning, OutputFormat};
use crate::event::{FinishKind, LimitStatus, LimitWindow, StreamSummary, WaitKind};
use crate::report::{MalformedReport, Report, ReportStatus, parse_report};

pub use loopx_quota::Outcome;

/// When a slice's todo counts as done (a profile's `done_when`).
#[derive(Debug, Clone, Default)]
pub enum DoneWhen {
    /// Only when the agent's report says `done` (the default).
    #[default]
    Report,
    /// When the agent finishes without error (exit 0, or a successful final event) and no
    /// report says otherwise: for CLIs that cannot be taught the report protocol.
    ExitZero,
    /// When a line of the agent's final message matches the pattern and no report says
    /// otherwise.
    Pattern(regex::Regex),
}

impl PartialEq for DoneWhen {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Pattern(a), Self::Pattern(b)) => a.as_str() == b.as_str(),
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

impl Serialize for DoneWhen {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Report => s.serialize_str("report"),
            Self::ExitZero => s.serialize_str("exit-0"),
            Self::Pattern(re) => s.serialize_str(&format!("pattern {}", re.as_str())),
        }
    }
}

/// The question of an `asked` slice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    pub text: String,
    /// Suggested answers.
    pub options: Vec<String>,
}

/// The vendor limit of a `usage_limited` slice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VendorLimit {
    /// When the window resets; `None`: unknown (loopx backs off and probes).
    pub resets_at: Option<Timestamp>,
    /// Which window.
    pub window: Option<LimitWindow>,
}

/// An outcome with its reason, what came with it, and the report it was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classification {
    /// The outcome.
    pub outcome: Outcome,
    /// Why, in a sentence, for evidence and `loopx log`.
    pub reason: String,
    /// The report block of the final message, if any.
    pub report: Option<Result<Report, MalformedReport>>,
    /// `asked`: the question, when the agent gave one.
    pub question: Option<Question>,
    /// `usage_limited`: the limit.
    pub limit: Option<VendorLimit>,
    /// The slice's todo is done: its report says so, or the profile's `done_when` matched.
    pub done: bool,
}

/// Classify a slice with the default `done_when` (the report). `exit_code` is `None` when the
/// process was killed by a signal (the supervisor records timeouts and interruptions itself).
pub fn classify(summary: &StreamSummary, exit_code: Option<i32>) -> Classification {
    classify_for(summary, exit_code, &DoneWhen::Report)
}

/// Classify a slice of a profile whose todos are done `done_when`.
pub fn classify_for(
    summary: &StreamSummary,
    exit_code: Option<i32>,
    done_when: &DoneWhen,
) -> Classification {
    let report = summary
        .final_message
        .as_deref()
        .and_then(parse_report)
        .or_else(|| summary.reported_answer.as_deref().and_then(parse_report));
    let mut c = Classification {
        outcome: Outcome::Failed,
        reason: String::new(),
        report,
        question: None,
        limit: None,
        done: false,
    };
    let (outcome, reason) = decide(summary, exit_code, &mut c);
    c.outcome = outcome;
    c.reason = reason;
    c.done = match (&c.report, outcome) {
        (Some(Ok(r)), Outcome::Completed) => r.status == ReportStatus::Done,
        (None, Outcome::Completed) => match done_when {
            DoneWhen::Report => false,
            DoneWhen::ExitZero => true,
            DoneWhen::Pattern(re) => summary
                .final_message
                .as_deref()
                .is_some_and(|m| re.is_match(m)),
        },
        _ => false,
    };
    if c.done && c.report.is_none() {
        c.reason.push_str(match done_when {
            DoneWhen::Pattern(_) => "; its final message matches the profile's `done_pattern`",
            _ => "; the profile's `done_when = \"exit-0\"` counts that as done",
        });
    }
    c
}

fn decide(s: &StreamSummary, exit: Option<i32>, c: &mut Classification) -> (Outcome, String) {
    if let Some(said) = finished_or_refused(s, c) {
        return said;
    }
    if let Some(said) = waiting_or_transient(s, exit, c) {
        return said;
    }
    ended(s, exit, c)
}

/// What the agent's own final or refusal events say: a result, a turn or budget limit, a
/// usage limit, failed authentication, an overflowing context.
fn finished_or_refused(s: &StreamSummary, c: &mut Classification) -> Option<(Outcome, String)> {
    let finish = s.finish.as_ref().map(|f| f.kind);
    // A successful final result outranks earlier chatter: a `rejected` rate-limit event followed
    // by success means overage or another window carried the run.
    if finish == Some(FinishKind::Success) {
        return Some(from_report(c, "the agent finished without error"));
    }
    if let Some(kind @ (FinishKind::MaxTurns | FinishKind::MaxBudget)) = finish {
        let what = if kind == FinishKind::MaxTurns {
            "turn"
        } else {
            "budget"
        };
        let resume = s
            .session_id
            .as_deref()
            .map(|id| format!("; resume session `{id}`"))
            .unwrap_or_default();
        return Some((
            Outcome::Progress,
            format!("slice budget exhausted: the agent hit its {what} limit{resume}"),
        ));
    }
    if let Some(limit) = s
        .limit
        .as_ref()
        .filter(|l| l.status == LimitStatus::Rejected)
    {
        let when = limit
            .resets_at
            .map_or_else(|| "an unknown time".to_owned(), |t| t.to_string());
        c.limit = Some(VendorLimit {
            resets_at: limit.resets_at,
            window: limit.window.clone(),
        });
        return Some((
            Outcome::UsageLimited,
            format!("usage limit reached; resets at {when}"),
        ));
    }
    if let Some(text) = &s.auth_failed {
        return Some((
            Outcome::AuthFailed,
            format!("authentication failed: {text}"),
        ));
    }
    if let Some(text) = &s.context_overflow {
        return Some((
            Outcome::ContextOverflow,
            format!("context overflow: {text}"),
        ));
    }
    None
}

/// An agent still waiting (on stdin or a person), or one that failed for a while.
fn waiting_or_transient(
    s: &StreamSummary,
    exit: Option<i32>,
    c: &mut Classification,
) -> Option<(Outcome, String)> {
    // Waiting counts only when the agent was still there to wait (it did not exit by itself).
    match s.waiting.as_ref().filter(|_| exit.is_none()) {
        Some((WaitKind::Stdin, text)) => {
            return Some((Outcome::Stalled, format!("blocked reading stdin: {text}")));
        }
        Some((WaitKind::Human, text)) => {
            c.question = Some(Question {
                text: text.clone(),
                options: Vec::new(),
            });
            return Some((Outcome::Asked, "the agent waits for input".to_owned()));
        }
        None => {}
    }
    let transient_error = s.errors.iter().rev().find(|(_, transient)| *transient);
    let api_transient = s
        .finish
        .as_ref()
        .and_then(|f| f.api_status)
        .is_some_and(|c| c >= 500);
    if api_transient || transient_error.is_some() || (s.finish.is_none() && s.retries > 0) {
        let why =
            transient_error.map_or_else(|| format!("{} retries", s.retries), |(m, _)| m.clone());
        return Some((Outcome::Transient, format!("temporary failure: {why}")));
    }
    None
}

/// How the process ended, when its events said nothing more telling: its exit code's
/// meaning, its final error, or the code itself.
fn ended(s: &StreamSummary, exit: Option<i32>, c: &mut Classification) -> (Outcome, String) {
    if let Some(meaning) = exit.and_then(|code| s.exit_codes.get(&code)) {
        return from_exit(*meaning, exit, c);
    }
    if let Some(finish) = &s.finish {
        let text = finish
            .text
            .clone()
            .unwrap_or_else(|| "no message".to_owned());
        return (
            Outcome::Failed,
            format!("the agent ended with an error: {text}"),
        );
    }
    match exit {
        // A plain-text agent has no final event: its exit code is all there is.
        Some(0) if s.format == OutputFormat::Text => from_report(c, "exited 0"),
        Some(0) => (
            Outcome::Failed,
            "exited 0 without a final result event".to_owned(),
        ),
        Some(code) => {
            let last = s
                .errors
                .last()
                .map(|(m, _)| format!(": {m}"))
                .unwrap_or_default();
            (Outcome::Failed, format!("exited {code}{last}"))
        }
        None => (
            Outcome::Failed,
            "killed by a signal before a final result".to_owned(),
        ),
    }
}

fn from_exit(meaning: ExitMeaning, exit: Option<i32>, c: &mut Classification) -> (Outcome, String) {
    let code = exit.map_or_else(String::new, |c| c.to_string());
    let reason = |what: &str| format!("exit code {code} means {what}");
    match meaning {
        ExitMeaning::Completed => from_report(c, &reason("success")),
        ExitMeaning::TurnLimit => (
            Outcome::Progress,
            reason("the turn limit was hit (slice budget exhausted)"),
        ),
        ExitMeaning::AuthFailed => (Outcome::AuthFailed, reason("authentication failed")),
        ExitMeaning::UsageLimited => {
            c.limit = Some(VendorLimit {
                resets_at: None,
                window: None,
            });
            (Outcome::UsageLimited, reason("a usage limit"))
        }
        ExitMeaning::Transient => (Outcome::Transient, reason("a temporary failure")),
        ExitMeaning::ContextOverflow => (Outcome::ContextOverflow, reason("a context overflow")),
        ExitMeaning::Failed => (Outcome::Failed, reason("failure")),
    }
}

/// How a reason ends when the agent's output has no report block (a report through the
/// slice's channel, `loopx report done`, is named instead where the supervisor knows of it).
pub const NO_REPORT_BLOCK: &str = "; no report block";

fn from_report(c: &mut Classification, base: &str) -> (Outcome, String) {
    match &c.report {
        None => (Outcome::Completed, format!("{base}{NO_REPORT_BLOCK}")),
        Some(Err(malformed)) => (
            Outcome::Progress,
            format!(
                "{base}, but its report block is malformed ({})",
                malformed.error
            ),
        ),
        // A blank question asks nothing (and is dropped from the writeback).
        Some(Ok(report)) => match (
            report
                .question
                .as_ref()
                .filter(|q| !q.text.trim().is_empty()),
            report.status,
        ) {
            (Some(q), _) => {
                c.question = Some(Question {
                    text: q.text.clone(),
                    options: q.options.clone(),
                });
                (Outcome::Asked, format!("{base}; it asks a question"))
            }
            (None, ReportStatus::Blocked) => (
                Outcome::Asked,
                format!("{base}; it reports blocked without a question"),
            ),
            (None, ReportStatus::Done) => (Outcome::Completed, format!("{base}; it reports done")),
            (None, ReportStatus::Progress) => {
                (Outcome::Progress, format!("{base}; it reports progress"))
            }
        },
    }
}
