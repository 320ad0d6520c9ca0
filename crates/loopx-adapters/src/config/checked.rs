//! A leaf value that remembers its span and never fails deserialization: a wrong type becomes a
//! recorded problem, so one run reports every wrong value in a file instead of the first.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use toml::Spanned;

/// How a type is described in "expected …" messages.
pub(crate) trait Expected {
    /// E.g. "an integer".
    const EXPECTED: &'static str;
    /// A valid TOML value of this type, for the hint.
    const EXAMPLE: &'static str;
}

impl Expected for String {
    const EXPECTED: &'static str = "a string";
    const EXAMPLE: &'static str = r#""text""#;
}
impl Expected for bool {
    const EXPECTED: &'static str = "a boolean (true or false)";
    const EXAMPLE: &'static str = r#"true"#;
}
impl Expected for u32 {
    const EXPECTED: &'static str = "a non-negative integer";
    const EXAMPLE: &'static str = r#"40"#;
}
impl Expected for u64 {
    const EXPECTED: &'static str = "a non-negative integer";
    const EXAMPLE: &'static str = r#"2_000_000"#;
}
impl Expected for f64 {
    const EXPECTED: &'static str = "a number";
    const EXAMPLE: &'static str = r#"5.0"#;
}
impl Expected for Vec<String> {
    const EXPECTED: &'static str = "an array of strings";
    const EXAMPLE: &'static str = r#"["a", "b"]"#;
}
impl Expected for BTreeMap<String, String> {
    const EXPECTED: &'static str = "a table of strings ({ NAME = \"value\" })";
    const EXAMPLE: &'static str = r#"{ NAME = "value" }"#;
}

/// A value of type `T` read from TOML, or the reason it is not one.
#[derive(Debug, Clone)]
pub(crate) struct Checked<T> {
    pub(crate) span: Range<usize>,
    pub(crate) value: Result<T, String>,
    example: &'static str,
}

impl<'de, T: DeserializeOwned + Expected> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<toml::Value>::deserialize(deserializer)?;
        let span = spanned.span();
        let raw = spanned.into_inner();
        let value = T::deserialize(raw.clone()).map_err(|err| mismatch::<T>(&raw, &err));
        Ok(Self {
            span,
            value,
            example: T::EXAMPLE,
        })
    }
}

/// "expected a string, found an integer (`3`)", or serde's own words when the outer shape was
/// right but something inside was not (an array holding a number).
fn mismatch<T: Expected>(raw: &toml::Value, err: &toml::de::Error) -> String {
    let same_shape = matches!(
        (
            raw,
            T::EXPECTED.starts_with("an array"),
            T::EXPECTED.starts_with("a table")
        ),
        (toml::Value::Array(_), true, _) | (toml::Value::Table(_), _, true)
    );
    if same_shape {
        format!("expected {}: {}", T::EXPECTED, err.message().trim())
    } else {
        format!("expected {}, found {}", T::EXPECTED, describe(raw))
    }
}

fn describe(raw: &toml::Value) -> String {
    match raw {
        toml::Value::String(s) => format!("a string (\"{}\")", truncate(s)),
        toml::Value::Integer(i) => format!("an integer ({i})"),
        toml::Value::Float(x) => format!("a float ({x})"),
        toml::Value::Boolean(b) => format!("a boolean ({b})"),
        toml::Value::Datetime(d) => format!("a date-time ({d})"),
        toml::Value::Array(_) => "an array".to_owned(),
        toml::Value::Table(_) => "a table".to_owned(),
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() <= 40 {
        s.to_owned()
    } else {
        let head: String = s.chars().take(37).collect();
        format!("{head}...")
    }
}

impl<T> Checked<T> {
    /// The value, or `None` after recording why it is not one.
    pub(crate) fn get(
        self,
        key: &str,
        problems: &mut super::Problems,
    ) -> Option<(T, Range<usize>)> {
        match self.value {
            Ok(value) => Some((value, self.span)),
            Err(message) => {
                let short_key = key.rsplit('.').next().unwrap_or(key);
                let help = format!("for example `{short_key} = {}`", self.example);
                problems.push(
                    self.span,
                    Some(key),
                    format!("wrong type for `{key}`: {message}"),
                    Some(help),
                );
                None
            }
        }
    }
}

/// [`Checked::get`] on an optional field.
pub(crate) fn take<T>(
    field: Option<Checked<T>>,
    key: &str,
    problems: &mut super::Problems,
) -> Option<(T, Range<usize>)> {
    field.and_then(|f| f.get(key, problems))
}
