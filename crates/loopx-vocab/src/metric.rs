//! A measurement an agent or a person records as evidence: `accuracy = 0.913 %`
//! (`docs/history.md`, "Metrics"). One reading of `NAME=VALUE` for every surface (`loopx report
//! evidence metric`, `loopx evidence add --kind metric`, the report block's `metrics`), and one
//! check of what the kernel stores.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The longest metric name.
pub const NAME_MAX: usize = 64;
/// The longest unit (`%`, `ms`, `tokens/s`).
pub const UNIT_MAX: usize = 16;

/// One measurement: a name, a finite value, a unit (empty: none).
///
/// Equality is the value's bits: a value is never NaN (the check refuses it), so this is
/// the ordinary equality of the numbers but for `0.0` and `-0.0`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    #[serde(default)]
    pub unit: String,
}

impl PartialEq for Metric {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.value.to_bits() == other.value.to_bits()
            && self.unit == other.unit
    }
}

impl Eq for Metric {}

/// Why a metric cannot be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadMetric {
    #[error("`{0}` is not NAME=VALUE: write it as `accuracy=0.913`")]
    NotAPair(String),
    #[error(
        "metric name `{0}` is not a name: a letter, then letters, digits, `_`, `-` or `.`, at most {NAME_MAX} in all"
    )]
    Name(String),
    #[error("metric value `{0}` is not a finite number: write it as `0.913`, `12`, `-3.5e2`")]
    Value(String),
    #[error(
        "metric unit `{0}` is too long or has control or format characters: at most {UNIT_MAX} printable characters, e.g. `%` or `ms`"
    )]
    Unit(String),
}

impl Metric {
    /// Reads `NAME=VALUE` (spaces around `=` allowed) with `unit`.
    pub fn parse(pair: &str, unit: Option<&str>) -> Result<Metric, BadMetric> {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(BadMetric::NotAPair(pair.trim().to_owned()));
        };
        let raw = value.trim();
        let value = raw
            .parse::<f64>()
            .map_err(|_| BadMetric::Value(raw.to_owned()))?;
        let metric = Metric {
            name: name.trim().to_owned(),
            value,
            unit: unit.unwrap_or_default().trim().to_owned(),
        };
        metric.check()?;
        Ok(metric)
    }

    /// Whether the kernel may store it: a name, a finite value, a short unit.
    pub fn check(&self) -> Result<(), BadMetric> {
        let mut chars = self.name.chars();
        let named = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            && self.name.len() <= NAME_MAX;
        if !named {
            return Err(BadMetric::Name(clip(&self.name)));
        }
        if !self.value.is_finite() {
            return Err(BadMetric::Value(self.value.to_string()));
        }
        if self.unit.chars().count() > UNIT_MAX || self.unit.chars().any(unprintable) {
            return Err(BadMetric::Unit(
                clip(&self.unit).escape_default().to_string(),
            ));
        }
        Ok(())
    }
}

/// A value as people read it: `0.913`, `12`, and in scientific notation when it would be long
/// (`1e308`, `5e-324`).
pub fn show_value(value: f64) -> String {
    let magnitude = value.abs();
    if value != 0.0 && !(1e-6..1e15).contains(&magnitude) {
        return format!("{value:e}");
    }
    value.to_string()
}

/// A character a unit may not hold: a control character, or one that changes how the text
/// around it reads without showing itself (bidirectional overrides, zero-width characters,
/// line and paragraph separators): a unit is shown beside a question a person answers.
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

impl fmt::Display for Metric {
    /// `accuracy = 0.913 %`, `loss = 1.2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.name, show_value(self.value))?;
        if !self.unit.is_empty() {
            write!(f, " {}", self.unit)?;
        }
        Ok(())
    }
}

/// Which way a metric is better (`[metrics.NAME] better` in `loopx.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    /// Whether `a` is strictly better than `b`.
    pub fn beats(self, a: f64, b: f64) -> bool {
        match self {
            Better::Higher => a > b,
            Better::Lower => a < b,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

/// Text from outside, shortened for an error message.
fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(80).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_reads_with_its_unit_and_shows_as_written() {
        let m = Metric::parse(" accuracy = 0.913 ", Some("%")).expect("reads");
        assert_eq!(m.name, "accuracy");
        assert_eq!(m.value, 0.913);
        assert_eq!(m.to_string(), "accuracy = 0.913 %");
        assert_eq!(
            Metric::parse("loss=-3.5e2", None)
                .expect("reads")
                .to_string(),
            "loss = -350"
        );
    }

    #[test]
    fn what_is_not_a_measurement_is_refused_naming_it() {
        let cases = [
            ("accuracy", "not NAME=VALUE"),
            ("1acc=2", "is not a name"),
            ("acc uracy=2", "is not a name"),
            ("acc=high", "not a finite number"),
            ("acc=NaN", "not a finite number"),
            ("acc=inf", "not a finite number"),
        ];
        for (pair, says) in cases {
            let e = Metric::parse(pair, None).expect_err(pair).to_string();
            assert!(e.contains(says), "{pair}: {e}");
        }
        let long = Metric::parse("a=1", Some("a very long unit indeed")).expect_err("unit");
        assert!(long.to_string().contains("metric unit"), "{long}");
        for unit in [
            "\u{202E}% 3=pots",
            "m\u{200B}s",
            "a\u{2028}b",
            "\u{1b}[31m%",
        ] {
            let e = Metric::parse("a=1", Some(unit))
                .expect_err(unit)
                .to_string();
            assert!(
                e.contains("format characters") && !e.contains('\u{202E}'),
                "{e}"
            );
        }
        assert!(Metric::parse("t=20", Some("°C")).is_ok());
        assert!(Metric::parse("t=20", Some("µs")).is_ok());
    }

    #[test]
    fn a_long_value_shows_in_scientific_notation() {
        assert_eq!(show_value(0.913), "0.913");
        assert_eq!(show_value(120.0), "120");
        assert_eq!(show_value(0.0), "0");
        assert_eq!(show_value(f64::MAX), "1.7976931348623157e308");
        assert_eq!(show_value(5e-324), "5e-324");
        let m = Metric::parse("big=1e300", None).expect("reads");
        assert_eq!(m.to_string(), "big = 1e300");
    }

    #[test]
    fn better_is_strict_either_way() {
        assert!(Better::Higher.beats(0.9, 0.8));
        assert!(!Better::Higher.beats(0.8, 0.8));
        assert!(Better::Lower.beats(0.1, 0.2));
        assert!(!Better::Lower.beats(0.2, 0.1));
    }
}
