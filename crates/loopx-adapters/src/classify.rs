//! The outcome of a slice, from what the stream said first and the exit code last. The rules
//! and the evidence behind each are in `docs/design/classification.md`.

use jiff::Timestamp;
use serde::Serialize;

use crate::adapter::{ExitMeaning, OutputFormat};
use crate::event::{FinishKind, LimitStatus, LimitWindow, StreamSummary, WaitKind};
use crate::report::{MalformedReport, Report, ReportStatus, parse_report};

/// What a slice amounted to.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The agent finished and said (or did not deny) it is done.
    Completed,
    /// Work was done and more remains (including a turn or budget limit: the fixtures'
    /// `slice_budget_exhausted`; the `reason` says which).
    Progress,
    /// The agent needs a human decision.
    Asked {
        /// The question, when it gave one.
        question: Option<String>,
        /// Suggested answers.
        options: Vec<String>,
    },
    /// A vendor usage limit: hold the account until `resets_at` (unknown: probe later).
    UsageLimited {
        /// When the window resets.
        resets_at: Option<Timestamp>,
        /// Which window.
        window: Option<LimitWindow>,
    },
    /// Credentials missing or refused: a human must log in.
    AuthFailed,
    /// Temporary trouble (server errors, retries that ran out): try again later.
    Transient,
    /// The conversation outgrew the context: start a fresh session, do not wait.
    ContextOverflow,
    /// The agent blocked on something nobody will answer (e.g. an open stdin).
    Stalled,
    /// It failed.
    Failed,
}

/// An outcome with its reason and the report it was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classification {
    /// The outcome.
    pub outcome: Outcome,
    /// Why, in a sentence, for evidence and `loopx log`.
    pub reason: String,
    /// The report block of the final message, if any.
    pub report: Option<Result<Report, MalformedReport>>,
}

/// Classify a slice. `exit_code` is `None` when the process was killed by a signal (the
/// supervisor records timeouts and interruptions itself).
pub fn classify(summary: &StreamSummary, exit_code: Option<i32>) -> Classification {
    let report = summary.final_message.as_deref().and_then(parse_report);
    let (outcome, reason) = decide(summary, exit_code, report.as_ref());
    Classification {
        outcome,
        reason,
        report,
    }
}

fn decide(
    s: &StreamSummary,
    exit: Option<i32>,
    report: Option<&Result<Report, MalformedReport>>,
) -> (Outcome, String) {
    let finish = s.finish.as_ref().map(|f| f.kind);
    // A successful final result outranks earlier chatter: a `rejected` rate-limit event followed
    // by success means overage or another window carried the run.
    if finish == Some(FinishKind::Success) {
        return from_report(report, "the agent finished without error");
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
        return (
            Outcome::Progress,
            format!("slice budget exhausted: the agent hit its {what} limit{resume}"),
        );
    }
    if let Some(limit) = s
        .limit
        .as_ref()
        .filter(|l| l.status == LimitStatus::Rejected)
    {
        let when = limit
            .resets_at
            .map_or_else(|| "an unknown time".to_owned(), |t| t.to_string());
        return (
            Outcome::UsageLimited {
                resets_at: limit.resets_at,
                window: limit.window.clone(),
            },
            format!("usage limit reached; resets at {when}"),
        );
    }
    if let Some(text) = &s.auth_failed {
        return (
            Outcome::AuthFailed,
            format!("authentication failed: {text}"),
        );
    }
    if let Some(text) = &s.context_overflow {
        return (
            Outcome::ContextOverflow,
            format!("context overflow: {text}"),
        );
    }
    // Waiting counts only when the agent was still there to wait (it did not exit by itself).
    match s.waiting.as_ref().filter(|_| exit.is_none()) {
        Some((WaitKind::Stdin, text)) => {
            return (Outcome::Stalled, format!("blocked reading stdin: {text}"));
        }
        Some((WaitKind::Human, text)) => {
            return (
                Outcome::Asked {
                    question: Some(text.clone()),
                    options: Vec::new(),
                },
                "the agent waits for input".to_owned(),
            );
        }
        None => {}
    }
    let transient_error = s.errors.iter().rev().find(|(_, transient)| *transient);
    let api_transient = s
        .finish
        .as_ref()
        .and_then(|f| f.api_status)
        .is_some_and(|c| c >= 500);
    if api_transient || transient_error.is_some() || (finish.is_none() && s.retries > 0) {
        let why =
            transient_error.map_or_else(|| format!("{} retries", s.retries), |(m, _)| m.clone());
        return (Outcome::Transient, format!("temporary failure: {why}"));
    }
    if let Some(meaning) = exit.and_then(|code| s.exit_codes.get(&code)) {
        return from_exit(*meaning, exit, report);
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
        Some(0) if s.format == OutputFormat::Text => from_report(report, "exited 0"),
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

fn from_exit(
    meaning: ExitMeaning,
    exit: Option<i32>,
    report: Option<&Result<Report, MalformedReport>>,
) -> (Outcome, String) {
    let code = exit.map_or_else(String::new, |c| c.to_string());
    let reason = |what: &str| format!("exit code {code} means {what}");
    match meaning {
        ExitMeaning::Completed => from_report(report, &reason("success")),
        ExitMeaning::TurnLimit => (
            Outcome::Progress,
            reason("the turn limit was hit (slice budget exhausted)"),
        ),
        ExitMeaning::AuthFailed => (Outcome::AuthFailed, reason("authentication failed")),
        ExitMeaning::UsageLimited => (
            Outcome::UsageLimited {
                resets_at: None,
                window: None,
            },
            reason("a usage limit"),
        ),
        ExitMeaning::Transient => (Outcome::Transient, reason("a temporary failure")),
        ExitMeaning::ContextOverflow => (Outcome::ContextOverflow, reason("a context overflow")),
        ExitMeaning::Failed => (Outcome::Failed, reason("failure")),
    }
}

fn from_report(report: Option<&Result<Report, MalformedReport>>, base: &str) -> (Outcome, String) {
    match report {
        None => (Outcome::Completed, format!("{base}; no report block")),
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
            (Some(q), _) => (
                Outcome::Asked {
                    question: Some(q.text.clone()),
                    options: q.options.clone(),
                },
                format!("{base}; it asks a question"),
            ),
            (None, ReportStatus::Blocked) => (
                Outcome::Asked {
                    question: None,
                    options: Vec::new(),
                },
                format!("{base}; it reports blocked without a question"),
            ),
            (None, ReportStatus::Done) => (Outcome::Completed, format!("{base}; it reports done")),
            (None, ReportStatus::Progress) => {
                (Outcome::Progress, format!("{base}; it reports progress"))
            }
        },
    }
}

impl Outcome {
    /// The snake_case name (`usage_limited`, …), as in `--json` output.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Progress => "progress",
            Self::Asked { .. } => "asked",
            Self::UsageLimited { .. } => "usage_limited",
            Self::AuthFailed => "auth_failed",
            Self::Transient => "transient",
            Self::ContextOverflow => "context_overflow",
            Self::Stalled => "stalled",
            Self::Failed => "failed",
        }
    }
}
