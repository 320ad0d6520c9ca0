//! Every line of `usage-limit-text-variants.txt` yields the right reset time, and none of its
//! negative controls is read as a usage limit.

use jiff::Timestamp;
use loopx_adapters::fixtures::USAGE_LIMIT_TEXT_VARIANTS;
use loopx_adapters::{LimitWindow, limit_from_text};
use test_case::test_case;

/// Before every reset in the file: 10:00 UTC on the day of the fixtures' reset instant.
const NOW: &str = "2026-09-21T10:00:00Z";

/// The file's non-comment rows as (era, text).
fn rows() -> Vec<(&'static str, &'static str)> {
    USAGE_LIMIT_TEXT_VARIANTS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut cols = l.splitn(3, '\t');
            let era = cols.next().expect("era column");
            let _surface = cols.next().expect("surface column");
            (era, cols.next().expect("text column"))
        })
        .collect()
}

fn now() -> Timestamp {
    NOW.parse().expect("valid timestamp")
}

#[test_case("Claude AI usage limit reached|1790004000", Some("2026-09-21T15:20:00Z"), None; "legacy epoch")]
#[test_case("Claude usage limit reached. Your limit will reset at 3pm (Etc/UTC).", Some("2026-09-21T15:00:00Z"), None; "reset at 3pm Etc/UTC")]
#[test_case("5-hour limit reached ∙ resets 3pm", Some("2026-09-21T15:00:00Z"), Some(LimitWindow::FiveHour); "five hour, no zone means UTC")]
#[test_case("Weekly limit reached ∙ resets Sep 26, 7am", Some("2026-09-26T07:00:00Z"), Some(LimitWindow::SevenDay); "weekly with a date")]
#[test_case("You've hit your session limit · resets 3:20pm (UTC)", Some("2026-09-21T15:20:00Z"), Some(LimitWindow::FiveHour); "session limit")]
// 7am in London is 06:00 UTC (BST); 7am today has passed at 10:00 UTC, so tomorrow.
#[test_case("You've hit your weekly limit · resets 7am (Europe/London)", Some("2026-09-22T06:00:00Z"), Some(LimitWindow::SevenDay); "weekly in London")]
// 2pm in Toronto is 18:00 UTC (EDT).
#[test_case("You've hit your limit · resets 2pm (America/Toronto)", Some("2026-09-21T18:00:00Z"), None; "toronto")]
#[test_case("You're out of extra usage · resets 9pm", Some("2026-09-21T21:00:00Z"), None; "extra usage")]
#[test_case("API Error: Request rejected (429) · The usage limit has been reached", None, None; "limit without a time")]
fn positive_rows(text: &str, resets_at: Option<&str>, window: Option<LimitWindow>) {
    assert!(
        rows().iter().any(|(_, t)| *t == text),
        "{text} is not a row of the fixture file"
    );
    let signal = limit_from_text(text, now()).expect("a usage limit");
    let expected: Option<Timestamp> = resets_at.map(|t| t.parse().expect("valid timestamp"));
    assert_eq!(signal.resets_at, expected, "{text}");
    assert_eq!(signal.window, window, "{text}");
}

#[test]
fn negative_controls_are_not_limits() {
    let negatives: Vec<&str> = rows()
        .into_iter()
        .filter(|(era, _)| *era == "neg")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(
        negatives.len(),
        3,
        "the fixture's negative controls changed"
    );
    for text in negatives {
        assert!(
            limit_from_text(text, now()).is_none(),
            "{text} was read as a usage limit"
        );
    }
}

#[test]
fn every_positive_row_is_in_the_table() {
    // A new row in the fixture file must get an expectation above.
    let positives = rows().into_iter().filter(|(era, _)| *era != "neg").count();
    assert_eq!(positives, 9, "add the new rows to `positive_rows`");
    for (_, text) in rows().into_iter().filter(|(era, _)| *era != "neg") {
        assert!(
            limit_from_text(text, now()).is_some(),
            "{text} was not read as a usage limit"
        );
    }
}
