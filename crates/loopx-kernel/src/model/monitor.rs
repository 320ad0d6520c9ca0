//! Monitors: todos loopx works itself, with no agent, by running a check command on a cadence
//! (`docs/monitors.md`).
//!
//! A monitor's state lives in its todo ([`super::Todo::monitor`]): the check, when it is next
//! due, who polls it now, and its recent observations. Observations are compacted as they are
//! recorded: a poll whose verdict and exit code are the same as the last one's only counts into
//! it (keeping the latest output: a check that prints a timestamp or a progress figure is
//! still one observation), and at most [`RECENT_OBSERVATIONS`] distinct results are kept, each
//! with a clipped output tail. A monitor polled every minute for 200 hours is one todo record of a
//! few kilobytes, rewritten in place.

use serde::{Deserialize, Serialize};

use super::Lease;
use crate::errors::Invalid;
use crate::ids::GateId;
use crate::time::Timestamp;
pub use loopx_vocab::MonitorWords;

/// How many distinct results a monitor keeps.
pub const RECENT_OBSERVATIONS: usize = 8;
/// How much of a poll's output (its tail) an observation keeps.
pub const OUTPUT_TAIL_BYTES: usize = 1024;
/// Failed polls in a row before a person is asked.
pub const FAILURES_BEFORE_ASKING: u32 = 3;

/// A check loopx runs on a cadence until it is met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Monitor {
    /// The check: a shell command, run with `sh -c` in the goal's work tree.
    pub check: String,
    /// How long between polls, in milliseconds.
    pub every_ms: u64,
    /// After this a person is asked (extend, mark met, or drop).
    pub expires_at: Option<Timestamp>,
    /// How long it may go unmet (`--expires`): `poll` on an expired one gives it this long
    /// again, from the answer.
    pub expires_after_ms: Option<u64>,
    /// Met when the check's output differs from its first poll's, rather than on exit 0.
    pub until_changed: bool,
    /// The profile whose environment allowlist (and secrets) the check runs with; only a
    /// person may name one. `None`: loopx's base environment, read-only, in the sandbox.
    pub profile: Option<String>,
    /// When the next poll is due.
    pub next_at: Timestamp,
    /// The supervisor polling it now: a claim like a slice's, so two never poll it at once.
    pub poll: Option<Lease>,
    /// Polls recorded.
    pub polls: u64,
    /// Failed polls in a row (a time-out, an output flood, an exit other than 0 or 1).
    pub failures: u32,
    /// The hash of the first poll's output, for `until_changed`.
    pub first_hash: Option<String>,
    /// The latest distinct results, oldest first.
    pub recent: Vec<Observation>,
    /// The open gate asking a person about it (expired, failing, or a pinned file changed).
    pub asked: Option<GateId>,
    /// A person's check: the files of the project it names, as they were when the person added
    /// it or last said to run them as they are (record version 15). A check that runs with a
    /// person's rights does not run a file an agent may have changed since (`docs/monitors.md`).
    pub pins: Vec<Pin>,
}

/// A file a person's check names, pinned by its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Relative to the project's root.
    pub path: String,
    /// The hex SHA-256 of its content as the person last saw it.
    pub sha256: String,
    /// What it is now, when that differs and a person is asked about it: `poll` pins this, so
    /// a person trusts the content they were asked about and no later one. `""`: it is gone.
    pub changed_to: Option<String>,
}

/// What one poll (or a run of polls with the same result) saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub at: Timestamp,
    /// The latest poll with this same result.
    pub last_at: Timestamp,
    /// How many polls in a row had this result.
    pub count: u64,
    pub verdict: PollVerdict,
    /// The check's exit code (`None`: loopx stopped it, or it never started).
    pub exit: Option<i32>,
    /// A short hash of its whole output.
    pub hash: String,
    /// The tail of its output, redacted and clipped to [`OUTPUT_TAIL_BYTES`].
    pub tail: String,
}

/// What a poll means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PollVerdict {
    /// The condition holds: the monitor is done.
    Met,
    /// Not yet: poll again one cadence later.
    NotYet,
    /// The check failed (time-out, output flood, another exit code, could not start).
    Failed,
}

impl PollVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            PollVerdict::Met => "met",
            PollVerdict::NotYet => "not yet",
            PollVerdict::Failed => "failed",
        }
    }
}

impl Monitor {
    /// A new monitor, first due at `now`.
    pub fn new(spec: MonitorSpec, now: Timestamp) -> Monitor {
        Monitor {
            check: spec.check,
            every_ms: spec.every_ms,
            expires_at: spec
                .expires_after_ms
                .map(|ms| now.plus(std::time::Duration::from_millis(ms))),
            expires_after_ms: spec.expires_after_ms,
            until_changed: spec.until_changed,
            profile: spec.profile,
            next_at: now,
            poll: None,
            polls: 0,
            failures: 0,
            first_hash: None,
            recent: Vec::new(),
            asked: None,
            pins: spec.pins,
        }
    }

    /// Whether a poll is due at `now`: its time has come (or it expired, which asks a person
    /// at once rather than at the next poll), nobody polls it under a live claim, and no
    /// question about it is open.
    pub fn due(&self, now: Timestamp) -> bool {
        (self.next_at <= now || self.expired(now))
            && self.asked.is_none()
            && self.poll.as_ref().is_none_or(|l| !l.is_live(now))
    }

    /// When it is next due: its next poll, or its expiry if that comes first.
    pub fn next_due(&self) -> Timestamp {
        self.expires_at
            .map_or(self.next_at, |at| at.min(self.next_at))
    }

    /// Whether it expired at `now`.
    pub fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// The latest observation.
    pub fn last(&self) -> Option<&Observation> {
        self.recent.last()
    }

    /// What a poll that exited with `exit` and printed output hashing to `hash` means:
    /// `failed` stays failed; with `until_changed`, met once the output differs from the first
    /// poll's (whatever the exit code, 0 or 1); else exit 0 is met and 1 is not yet.
    pub fn judge(&self, failed: bool, exit: Option<i32>, hash: &str) -> PollVerdict {
        match (failed, exit) {
            (true, _) | (false, None) => PollVerdict::Failed,
            (false, Some(0 | 1)) if self.until_changed => match &self.first_hash {
                Some(first) if first != hash => PollVerdict::Met,
                _ => PollVerdict::NotYet,
            },
            (false, Some(0)) => PollVerdict::Met,
            (false, Some(1)) => PollVerdict::NotYet,
            (false, Some(_)) => PollVerdict::Failed,
        }
    }

    /// Records one poll's observation, compacting: the same verdict and exit code as the last
    /// one counts into it, which takes the new output (its hash and tail); a new result is
    /// appended, and the oldest goes past [`RECENT_OBSERVATIONS`]. `until_changed` compares
    /// with [`Monitor::first_hash`], which compaction never touches.
    pub fn observe(&mut self, seen: Observation) {
        self.polls += 1;
        if self.first_hash.is_none() && seen.verdict != PollVerdict::Failed {
            self.first_hash = Some(seen.hash.clone());
        }
        match self.recent.last_mut() {
            Some(last) if last.verdict == seen.verdict && last.exit == seen.exit => {
                last.count += 1;
                last.last_at = seen.at;
                last.hash = seen.hash;
                last.tail = seen.tail;
            }
            _ => {
                self.recent.push(seen);
                if self.recent.len() > RECENT_OBSERVATIONS {
                    self.recent.remove(0);
                }
            }
        }
    }

    /// How long after a failed poll the next one comes: the cadence, doubled per failure in a
    /// row, at most an hour more than the cadence.
    pub fn backoff_ms(&self) -> u64 {
        let doubled = self
            .every_ms
            .saturating_mul(1 << self.failures.min(6))
            .min(self.every_ms.saturating_add(3_600_000));
        doubled.max(self.every_ms)
    }
}

/// What a person or an agent gives to make a todo a monitor.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MonitorSpec {
    pub check: String,
    pub every_ms: u64,
    /// Expires this long after it is added.
    pub expires_after_ms: Option<u64>,
    pub until_changed: bool,
    pub profile: Option<String>,
    /// The files of the project a person's check names ([`Monitor::pins`]): set by loopx where
    /// a person adds the monitor, refused from an agent.
    pub pins: Vec<Pin>,
}

impl MonitorSpec {
    /// The spec `words` describe, with `profile` (a person's only): durations as `10m`, `48h`;
    /// `until` only `changed`. The kernel checks the rest (the shortest cadence, the check's
    /// length) when the todo is added.
    pub fn from_words(
        words: &MonitorWords,
        profile: Option<String>,
    ) -> Result<MonitorSpec, Invalid> {
        let millis = |field: &str, text: &str| -> Result<u64, Invalid> {
            let d = humantime::parse_duration(text.trim()).map_err(|e| {
                Invalid::Other(format!(
                    "`{text}` for a monitor's {field} is not a duration ({e})\n(hint: `10m`, `2h`, `48h`)"
                ))
            })?;
            if d > crate::time::MAX_DURATION {
                return Err(Invalid::Other(format!(
                    "`{text}` for a monitor's {field} is longer than a year"
                )));
            }
            Ok(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        };
        let every = words.every.as_deref().ok_or_else(|| {
            Invalid::Other(
                "a monitor needs a cadence: `--every 10m` (`\"every\": \"10m\"` in a report block), how often loopx runs its check".to_owned(),
            )
        })?;
        let until_changed = match words.until.as_deref().map(str::trim) {
            None => false,
            Some("changed") => true,
            Some(other) => {
                return Err(Invalid::Other(format!(
                    "a monitor is met on exit 0, or `until changed`; `{other}` is not a condition"
                )));
            }
        };
        Ok(MonitorSpec {
            check: words.check.clone(),
            every_ms: millis("cadence (every)", every)?,
            expires_after_ms: words
                .expires
                .as_deref()
                .map(|e| millis("expiry (expires)", e))
                .transpose()?,
            until_changed,
            profile,
            pins: Vec::new(),
        })
    }
}

/// The shortest cadence: a check more often than this is a busy loop.
pub const MIN_EVERY_MS: u64 = 10_000;
/// The longest check: a check is a look, not a job.
pub const CHECK_LIMIT_MS: u64 = 300_000;

/// How long one poll may run: a tenth of the cadence, between 10 seconds and five minutes.
pub fn check_limit_ms(every_ms: u64) -> u64 {
    (every_ms / 10).clamp(10_000, CHECK_LIMIT_MS)
}

/// A short hash of a poll's output (the first 16 hex digits of its SHA-256).
pub fn output_hash(output: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(output);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor(until_changed: bool) -> Monitor {
        Monitor::new(
            MonitorSpec {
                check: "true".into(),
                every_ms: 60_000,
                until_changed,
                ..MonitorSpec::default()
            },
            Timestamp(1_000),
        )
    }

    fn seen(at: u64, verdict: PollVerdict, hash: &str) -> Observation {
        Observation {
            at: Timestamp(at),
            last_at: Timestamp(at),
            count: 1,
            verdict,
            exit: Some(1),
            hash: hash.into(),
            tail: String::new(),
        }
    }

    #[test]
    fn exit_codes_mean_met_not_yet_and_failed() {
        let m = monitor(false);
        assert_eq!(m.judge(false, Some(0), "a"), PollVerdict::Met);
        assert_eq!(m.judge(false, Some(1), "a"), PollVerdict::NotYet);
        assert_eq!(m.judge(false, Some(2), "a"), PollVerdict::Failed);
        assert_eq!(m.judge(false, None, "a"), PollVerdict::Failed);
        assert_eq!(m.judge(true, Some(0), "a"), PollVerdict::Failed);
    }

    #[test]
    fn until_changed_is_met_when_the_output_differs_from_the_first_poll() {
        let mut m = monitor(true);
        assert_eq!(m.judge(false, Some(0), "a"), PollVerdict::NotYet);
        m.observe(seen(1, PollVerdict::NotYet, "a"));
        assert_eq!(m.judge(false, Some(0), "a"), PollVerdict::NotYet);
        assert_eq!(m.judge(false, Some(1), "b"), PollVerdict::Met);
        assert_eq!(m.judge(false, Some(3), "b"), PollVerdict::Failed);
    }

    #[test]
    fn a_thousand_identical_polls_are_one_observation() {
        let mut m = monitor(false);
        for i in 0..1000 {
            m.observe(seen(i, PollVerdict::NotYet, "same"));
        }
        assert_eq!(m.recent.len(), 1);
        assert_eq!(m.recent[0].count, 1000);
        assert_eq!(m.recent[0].last_at, Timestamp(999));
        assert_eq!(m.polls, 1000);
        // A new output with the same meaning (a timestamp) counts in, and is the latest seen.
        for i in 0..100 {
            m.observe(seen(2000 + i, PollVerdict::NotYet, &i.to_string()));
        }
        assert_eq!(m.recent.len(), 1);
        assert_eq!(m.recent[0].count, 1100);
        assert_eq!(m.recent[0].hash, "99");
        for i in 0..100 {
            let verdict = [PollVerdict::NotYet, PollVerdict::Failed][i % 2];
            m.observe(seen(3000 + i as u64, verdict, &i.to_string()));
        }
        assert_eq!(m.recent.len(), RECENT_OBSERVATIONS);
        assert_eq!(m.recent.last().map(|o| o.hash.as_str()), Some("99"));
    }

    #[test]
    fn failures_back_off_up_to_an_hour_past_the_cadence() {
        let mut m = monitor(false);
        assert_eq!(m.backoff_ms(), 60_000);
        m.failures = 2;
        assert_eq!(m.backoff_ms(), 240_000);
        m.failures = 30;
        assert_eq!(m.backoff_ms(), 3_660_000);
    }
}
