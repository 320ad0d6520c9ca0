//! Reset times from vendor wording, relative to a `now` the caller passes (never the clock).
//!
//! Forms handled (see `docs/design/classification.md` for where each comes from):
//! - `Claude AI usage limit reached|1790004000` (epoch seconds, or milliseconds above 10^12);
//! - `resets 3pm`, `resets 3:20pm (UTC)`, `resets 7am (Europe/London)`, `resets Sep 26, 7am`,
//!   `Your limit will reset at 3pm (Etc/UTC)`;
//! - Codex `try again at Sep 21st, 2026 3:20 PM`, `try again at 4:20 AM`,
//!   `try again in 5 days 22 hours 11 minutes`;
//! - Gemini `Your quota will reset after 8h44m7s`.
//!
//! A clock time without a date is the next occurrence after `now` in its zone (UTC when none is
//! named); a date without a year is the next occurrence of that date. An unknown zone name gives
//! no reset time rather than a wrong one.

use std::sync::LazyLock;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use regex::{Captures, Regex};

/// Seconds-or-milliseconds epoch: values above 10^12 are milliseconds (some SDKs report Claude's
/// `resetsAt` that way).
pub fn epoch_to_timestamp(value: i64) -> Option<Timestamp> {
    let seconds = if value.unsigned_abs() > 1_000_000_000_000 {
        value / 1000
    } else {
        value
    };
    Timestamp::from_second(seconds).ok()
}

static EPOCH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)limit reached\|(\d{9,13})\b").expect("static regex"));

const MONTH: &str = r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?";
const CLOCK: &str = r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?";
const ZONE: &str = r"(?:\s*\((?P<zone>[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*)\))?";

static CLOCK_RESET: LazyLock<Regex> = LazyLock::new(|| {
    let date = format!(
        r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+)?{MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{{4}}),?\s+)?(?:at\s+)?"
    );
    Regex::new(&format!(
        r"(?i)\b(?:resets?|try again)\s+(?:at\s+|on\s+)?(?:{date})?{CLOCK}\b{ZONE}"
    ))
    .expect("static regex")
});

static RELATIVE_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\btry again in\s+(?P<span>(?:\d+\s*(?:days?|hours?|hrs?|minutes?|mins?|seconds?|secs?)[\s,]*(?:and\s+)?)+)")
        .expect("static regex")
});

static RELATIVE_COMPACT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\breset(?:s)?\s+(?:after|in)\s+(?P<span>(?:\d+(?:\.\d+)?(?:d|h|m|s)){1,4})\b")
        .expect("static regex")
});

static UNIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)")
        .expect("static regex")
});

/// The reset time named in `text`, if it names one, as an absolute instant.
pub fn parse_reset_time(text: &str, now: Timestamp) -> Option<Timestamp> {
    if let Some(c) = EPOCH.captures(text) {
        return c[1].parse().ok().and_then(epoch_to_timestamp);
    }
    if let Some(c) = RELATIVE_WORDS
        .captures(text)
        .or_else(|| RELATIVE_COMPACT.captures(text))
    {
        return relative(&c["span"]).and_then(|d| now.checked_add(d).ok());
    }
    CLOCK_RESET.captures(text).and_then(|c| clock_time(&c, now))
}

/// "5 days 22 hours 11 minutes" or "8h44m7s" as a duration.
fn relative(span: &str) -> Option<SignedDuration> {
    let mut seconds = 0f64;
    let mut any = false;
    for c in UNIT.captures_iter(span) {
        let n: f64 = c[1].parse().ok()?;
        let unit = c[2].to_ascii_lowercase();
        let factor = match unit.chars().next()? {
            'd' => 86_400.0,
            'h' => 3_600.0,
            'm' => 60.0,
            _ => 1.0,
        };
        seconds += n * factor;
        any = true;
    }
    // Whole seconds: vendors print rounded values, and sub-second precision would only suggest
    // an accuracy nobody has.
    any.then(|| SignedDuration::from_secs(seconds.ceil() as i64))
}

fn clock_time(c: &Captures<'_>, now: Timestamp) -> Option<Timestamp> {
    let zone = match c.name("zone") {
        Some(name) => TimeZone::get(name.as_str()).ok()?,
        None => TimeZone::UTC,
    };
    let mut hour: i8 = c["hour"].parse().ok()?;
    let minute: i8 = c
        .name("minute")
        .map_or(Some(0), |m| m.as_str().parse().ok())?;
    match c
        .name("ampm")
        .map(|m| m.as_str().to_ascii_lowercase().starts_with('p'))
    {
        Some(pm) if (1..=12).contains(&hour) => hour = hour % 12 + if pm { 12 } else { 0 },
        Some(_) => return None,
        // A bare number without a minute ("resets 3") is too vague to trust.
        None if c.name("minute").is_none() => return None,
        None => {}
    }
    let today = now.to_zoned_datetime(zone.clone()).date();
    match c.name("month") {
        None => next_at(&zone, today, hour, minute, now, |d| d.tomorrow().ok()),
        Some(month) => {
            let month = month_number(month.as_str())?;
            let day: i8 = c["day"].parse().ok()?;
            match c.name("year") {
                Some(year) => {
                    let date = Date::new(year.as_str().parse().ok()?, month, day).ok()?;
                    zone.to_timestamp(date.at(hour, minute, 0, 0)).ok()
                }
                None => {
                    let first = Date::new(today.year(), month, day).ok()?;
                    next_at(&zone, first, hour, minute, now, |d| {
                        Date::new(d.year() + 1, month, day).ok()
                    })
                }
            }
        }
    }
}

/// The first of `date`, `next(date)` at `hour:minute` in `zone` that is after `now`.
fn next_at(
    zone: &TimeZone,
    date: Date,
    hour: i8,
    minute: i8,
    now: Timestamp,
    next: impl Fn(Date) -> Option<Date>,
) -> Option<Timestamp> {
    let at = |d: Date| -> Option<Timestamp> { zone.to_timestamp(d.at(hour, minute, 0, 0)).ok() };
    let first = at(date)?;
    if first > now {
        Some(first)
    } else {
        at(next(date)?)
    }
}

fn month_number(name: &str) -> Option<i8> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let prefix = name.get(..3)?.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == prefix)
        .and_then(|i| i8::try_from(i + 1).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    fn now() -> Timestamp {
        "2026-09-21T10:00:00Z".parse().expect("valid timestamp")
    }

    #[test_case("try again at Sep 21st, 2026 3:20 PM.", "2026-09-21T15:20:00Z")]
    #[test_case(
        "purchase more credits or try again at 4:20 AM.",
        "2026-09-22T04:20:00Z"
    )]
    #[test_case("try again in 5 days 22 hours 11 minutes.", "2026-09-27T08:11:00Z")]
    #[test_case("Your quota will reset after 8h44m7s.", "2026-09-21T18:44:07Z")]
    #[test_case("reset after 4h28m20s", "2026-09-21T14:28:20Z")]
    #[test_case("resets 12:50am (America/Los_Angeles)", "2026-09-22T07:50:00Z")]
    #[test_case("resets 11:30am (Asia/Colombo)", "2026-09-22T06:00:00Z")]
    #[test_case("resets 9am", "2026-09-22T09:00:00Z")]
    #[test_case("resets 12pm", "2026-09-21T12:00:00Z")]
    #[test_case("resets Jan 3, 7am", "2027-01-03T07:00:00Z")]
    #[test_case("resets 14:30", "2026-09-21T14:30:00Z")]
    #[test_case("Claude AI usage limit reached|1790004000000", "2026-09-21T15:20:00Z")]
    fn reset_times(text: &str, expected: &str) {
        let expected: Timestamp = expected.parse().expect("valid timestamp");
        assert_eq!(parse_reset_time(text, now()), Some(expected), "{text}");
    }

    #[test_case("resets 3pm (Mars/Olympus_Mons)"; "unknown zone gives nothing rather than a wrong time")]
    #[test_case("resets 13pm"; "impossible hour")]
    #[test_case("resets 3"; "bare number")]
    #[test_case("Retrying after 6173ms..."; "a retry delay is not a reset")]
    #[test_case("the limit resets eventually"; "no time")]
    fn no_reset_time(text: &str) {
        assert_eq!(parse_reset_time(text, now()), None, "{text}");
    }

    #[test]
    fn epoch_units() {
        assert_eq!(
            epoch_to_timestamp(1_790_004_000).map(Timestamp::as_second),
            Some(1_790_004_000)
        );
        assert_eq!(
            epoch_to_timestamp(1_790_004_000_123).map(Timestamp::as_second),
            Some(1_790_004_000)
        );
    }
}
