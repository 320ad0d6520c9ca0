//! What the parsers yield: typed events, and the running [`StreamSummary`] of a slice.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use crate::adapter::{ExitMeaning, OutputFormat};

/// Token counts. `cached_input` is the part of the input served from the vendor's cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TokenUsage {
    /// Input tokens (Claude: uncached input plus cache writes).
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from cache.
    pub cached_input: u64,
}

impl TokenUsage {
    fn add(&mut self, other: Self) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cached_input = self.cached_input.saturating_add(other.cached_input);
    }
}

/// How a usage event relates to earlier ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageScope {
    /// The whole run so far (a final result); replaces everything else.
    Total,
    /// One turn; turns add up (Codex `turn.completed`).
    Turn,
    /// All that answering one input cost (Claude `result`): it replaces the messages' usage
    /// since the previous one, and adds to earlier ones (with stream-json input, each line a
    /// person writes is answered with a `result` of its own; `crate::live`).
    Answer,
    /// One message, repeated as it streams; the last value per id counts (Claude `assistant`).
    Message(String),
}

/// Which vendor window a limit belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitWindow {
    /// The rolling five-hour (session) window.
    FiveHour,
    /// The weekly window.
    SevenDay,
    /// A window of this many minutes (as Codex reports it).
    Minutes(u32),
    /// Anything else, as the vendor named it.
    Named(String),
}

impl LimitWindow {
    /// Normalise a Codex `window_minutes` (older builds said 299 and 10079).
    pub fn from_minutes(minutes: u32) -> Self {
        match minutes {
            295..=305 => Self::FiveHour,
            10_070..=10_090 => Self::SevenDay,
            m => Self::Minutes(m),
        }
    }

    /// Normalise a Claude `rateLimitType`.
    pub fn from_name(name: &str) -> Self {
        match name {
            "five_hour" => Self::FiveHour,
            "seven_day" => Self::SevenDay,
            other => Self::Named(other.to_owned()),
        }
    }
}

/// How serious a limit signal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitStatus {
    /// The vendor refused: no more work until the reset.
    Rejected,
    /// Close to the limit (e.g. Claude `allowed_warning`, Codex at 71 %).
    Warning,
    /// Within the limit.
    Allowed,
}

/// A usage or rate limit the agent reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitSignal {
    /// Rejected, warning or allowed.
    pub status: LimitStatus,
    /// When the window resets (absolute UTC), when known.
    pub resets_at: Option<Timestamp>,
    /// Which window.
    pub window: Option<LimitWindow>,
    /// Percentage used, when reported.
    pub used_percent: Option<f64>,
    /// The vendor's words, when the signal came from text.
    pub text: Option<String>,
}

/// Why the agent waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// A question or permission dialog a human can answer.
    Human,
    /// Blocked reading stdin, which nobody will ever write: a launch bug, not a question.
    Stdin,
}

/// How the agent's own run ended, as its final event said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishKind {
    /// Finished normally and without error.
    Success,
    /// Stopped at its turn limit (Claude `error_max_turns`).
    MaxTurns,
    /// Stopped at its budget (Claude `error_max_budget_usd`).
    MaxBudget,
    /// Ended with an error.
    Error,
}

/// The agent's final event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finish {
    /// How it ended. Claude `subtype:"success"` with `is_error:true` is `Error`.
    pub kind: FinishKind,
    /// The HTTP status of the API error behind it, when reported.
    pub api_status: Option<u16>,
    /// The result or error text.
    pub text: Option<String>,
}

/// One thing the agent did or said, in stream order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The session (resume) id and model.
    Session {
        /// Claude `session_id`, Codex `thread_id`, Gemini `session_id`.
        id: String,
        /// The model, when reported.
        model: Option<String>,
    },
    /// Tokens used.
    Usage {
        /// The counts.
        usage: TokenUsage,
        /// How they combine with earlier ones.
        scope: UsageScope,
    },
    /// Total cost so far in US dollars.
    Cost {
        /// Dollars.
        usd: f64,
    },
    /// The agent called a tool (or ran a command, or changed a file).
    ToolCall {
        /// Tool name (`Bash`, `write_file`, `command_execution`, …).
        name: String,
    },
    /// Text the agent wrote (not tool output).
    Message {
        /// The text.
        text: String,
    },
    /// The CLI is retrying a failed request. Not progress.
    Retry {
        /// Attempt number, when given.
        attempt: Option<u32>,
        /// Maximum attempts, when given.
        max_attempts: Option<u32>,
        /// Delay before the next attempt, when given.
        delay: Option<Duration>,
        /// Why (status or message).
        reason: String,
    },
    /// A usage or rate limit signal.
    Limit(LimitSignal),
    /// Credentials missing or refused.
    AuthFailed {
        /// The vendor's words.
        text: String,
    },
    /// The conversation no longer fits the context window.
    ContextOverflow {
        /// The vendor's words.
        text: String,
    },
    /// The agent waits for input.
    Waiting {
        /// For whom.
        kind: WaitKind,
        /// What it shows.
        text: String,
    },
    /// An error the CLI reported that matched nothing more specific.
    Error {
        /// The message.
        message: String,
        /// Whether the wording says it is temporary (server trouble, overload).
        transient: bool,
    },
    /// The run's final event (with input on a pipe, of one turn: a later line may start
    /// another; `crate::live`).
    Finished(Finish),
    /// The CLI took a line of its stream-json input, now (Claude Code's replay of it; see
    /// [`crate::live`]).
    InputUsed {
        /// The `uuid` loopx gave the line.
        uuid: String,
    },
}

impl AgentEvent {
    /// Whether this event shows the agent working, for the idle clock: retries and limit
    /// chatter do not.
    pub fn is_progress(&self) -> bool {
        matches!(
            self,
            Self::ToolCall { .. } | Self::Message { .. } | Self::Usage { .. } | Self::Finished(_)
        )
    }
}

/// Errors kept in a summary; older ones are dropped so memory stays bounded.
const MAX_ERRORS: usize = 16;

/// Everything a slice's stream said, folded as events arrive.
#[derive(Debug, Clone, Serialize)]
pub struct StreamSummary {
    /// The format it was parsed as.
    pub format: OutputFormat,
    /// Session (resume) id.
    pub session_id: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Total cost in US dollars, when reported.
    pub cost_usd: Option<f64>,
    /// Tool calls seen.
    pub tool_calls: u32,
    /// Retries seen.
    pub retries: u32,
    /// The most serious limit signal (rejected over warning; later over earlier).
    pub limit: Option<LimitSignal>,
    /// The first auth failure.
    pub auth_failed: Option<String>,
    /// The first context overflow.
    pub context_overflow: Option<String>,
    /// The latest wait for input.
    pub waiting: Option<(WaitKind, String)>,
    /// The last errors (bounded).
    pub errors: Vec<(String, bool)>,
    /// The final event, if there was one.
    pub finish: Option<Finish>,
    /// The agent's last message (the report block is read from it).
    pub final_message: Option<String>,
    /// The last answer (a successful final event's text) that held a report block. An agent
    /// answers more than once when a person's message starts another turn (stream-json input,
    /// `crate::live`); an answer to that message without a block does not take the report back.
    pub reported_answer: Option<String>,
    /// Lines read.
    pub lines: u64,
    /// Lines that were not understood and skipped (non-JSON, unknown types, too long).
    pub skipped_lines: u64,
    #[serde(skip)]
    pub(crate) exit_codes: BTreeMap<i32, ExitMeaning>,
    #[serde(skip)]
    usage_total: Option<TokenUsage>,
    #[serde(skip)]
    usage_turns: TokenUsage,
    #[serde(skip)]
    usage_answers: TokenUsage,
    #[serde(skip)]
    usage_messages: BTreeMap<String, TokenUsage>,
}

impl StreamSummary {
    pub(crate) fn new(format: OutputFormat) -> Self {
        Self {
            format,
            session_id: None,
            model: None,
            cost_usd: None,
            tool_calls: 0,
            retries: 0,
            limit: None,
            auth_failed: None,
            context_overflow: None,
            waiting: None,
            errors: Vec::new(),
            finish: None,
            final_message: None,
            reported_answer: None,
            lines: 0,
            skipped_lines: 0,
            exit_codes: BTreeMap::new(),
            usage_total: None,
            usage_turns: TokenUsage::default(),
            usage_answers: TokenUsage::default(),
            usage_messages: BTreeMap::new(),
        }
    }

    /// Tokens used: the final total when the stream reported one, else the sum of what it
    /// reported on the way (so a slice killed mid-run is still charged).
    pub fn usage(&self) -> TokenUsage {
        self.usage_total.unwrap_or_else(|| {
            let mut sum = self.usage_turns;
            sum.add(self.usage_answers);
            self.usage_messages.values().for_each(|u| sum.add(*u));
            sum
        })
    }

    /// Fold one event in.
    pub fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Session { id, model } => {
                self.session_id = Some(id.clone());
                if model.is_some() {
                    self.model.clone_from(model);
                }
            }
            AgentEvent::Usage { usage, scope } => match scope {
                UsageScope::Total => self.usage_total = Some(*usage),
                UsageScope::Turn => self.usage_turns.add(*usage),
                UsageScope::Answer => {
                    self.usage_answers.add(*usage);
                    self.usage_messages.clear();
                }
                UsageScope::Message(id) => {
                    self.usage_messages.insert(id.clone(), *usage);
                }
            },
            AgentEvent::Cost { usd } => self.cost_usd = Some(*usd),
            AgentEvent::ToolCall { .. } => self.tool_calls = self.tool_calls.saturating_add(1),
            AgentEvent::Message { text } => self.final_message = Some(text.clone()),
            AgentEvent::Retry { .. } => self.retries = self.retries.saturating_add(1),
            AgentEvent::Limit(signal) => self.apply_limit(signal),
            AgentEvent::AuthFailed { text } => {
                self.auth_failed.get_or_insert_with(|| text.clone());
            }
            AgentEvent::ContextOverflow { text } => {
                self.context_overflow.get_or_insert_with(|| text.clone());
            }
            AgentEvent::Waiting { kind, text } => self.waiting = Some((*kind, text.clone())),
            AgentEvent::Error { message, transient } => {
                if self.errors.len() == MAX_ERRORS {
                    self.errors.remove(0);
                }
                self.errors.push((message.clone(), *transient));
            }
            AgentEvent::Finished(finish) => {
                if let (FinishKind::Success, Some(text)) = (finish.kind, &finish.text) {
                    self.final_message = Some(text.clone());
                    if crate::report::parse_report(text).is_some() {
                        self.reported_answer = Some(text.clone());
                    }
                }
                // An answer that said nothing of its usage keeps its messages' (a later answer's
                // `Answer` usage would clear them).
                let messages = std::mem::take(&mut self.usage_messages);
                messages.values().for_each(|u| self.usage_answers.add(*u));
                self.finish = Some(finish.clone());
            }
            AgentEvent::InputUsed { .. } => {}
        }
    }

    /// Keep the signal that binds: a rejection over a warning over "allowed". Between two
    /// rejections, an exact (structured) reset time beats one read from prose, and otherwise the
    /// later reset wins, since work can resume only when every refused window has reset.
    /// Between two non-rejections, the fuller window wins.
    fn apply_limit(&mut self, signal: &LimitSignal) {
        let rank = |s: LimitStatus| match s {
            LimitStatus::Allowed => 0,
            LimitStatus::Warning => 1,
            LimitStatus::Rejected => 2,
        };
        let Some(old) = self.limit.as_mut() else {
            self.limit = Some(signal.clone());
            return;
        };
        match rank(signal.status).cmp(&rank(old.status)) {
            std::cmp::Ordering::Greater => *old = signal.clone(),
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal if signal.status == LimitStatus::Rejected => {
                let old_exact = old.text.is_none() && old.resets_at.is_some();
                let new_exact = signal.text.is_none() && signal.resets_at.is_some();
                let take_new_time = match (old_exact, new_exact) {
                    (true, false) => false,
                    (false, true) => true,
                    _ => signal.resets_at > old.resets_at,
                };
                if take_new_time {
                    old.resets_at = signal.resets_at;
                }
                if old.window.is_none() {
                    old.window.clone_from(&signal.window);
                }
                // A text marks a time read from prose. An exact time must stay recognisable as
                // exact, or a later prose time (rounded to the minute, so perhaps "tomorrow")
                // would replace it: Claude follows its structured reset with two prose ones.
                let exact = if take_new_time { new_exact } else { old_exact };
                if exact {
                    old.text = None;
                } else if old.text.is_none() {
                    old.text.clone_from(&signal.text);
                }
            }
            std::cmp::Ordering::Equal => {
                if signal.used_percent.unwrap_or(0.0) >= old.used_percent.unwrap_or(0.0) {
                    *old = signal.clone();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(resets_at: i64, text: Option<&str>) -> AgentEvent {
        AgentEvent::Limit(LimitSignal {
            status: LimitStatus::Rejected,
            resets_at: Timestamp::from_second(resets_at).ok(),
            window: None,
            used_percent: None,
            text: text.map(str::to_owned),
        })
    }

    #[test]
    fn an_exact_reset_survives_two_later_prose_ones() {
        let mut summary = StreamSummary::new(OutputFormat::ClaudeStreamJson);
        summary.apply(&rejected(1_000, None));
        // "resets 5:19am" read a few seconds after 5:19 rolls over to the next day.
        summary.apply(&rejected(87_000, Some("resets 5:19am")));
        summary.apply(&rejected(87_000, Some("resets 5:19am")));
        let limit = summary.limit.expect("a limit");
        assert_eq!(limit.resets_at.map(|t| t.as_second()), Some(1_000));
    }
}
