//! Value syntaxes shared by adapters and profiles: durations (`"30m"`) and sizes (`"16MiB"`).

use std::time::Duration;

/// A duration such as `"30m"`, `"90s"` or `"1h 30m"`; the error names the unit that was not
/// understood (humantime's wording).
/// A duration in JSON as people write it in the TOML (`"30m"`, `"5h"`), not as seconds and
/// nanoseconds.
pub(crate) fn serialize_duration<S: serde::Serializer>(
    d: &Duration,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty duration".to_owned());
    }
    humantime::parse_duration(trimmed).map_err(|err| err.to_string())
}

/// A size in bytes: an integer, or a string with a unit (`"16MiB"`, `"500kB"`, `"1024"`).
pub(crate) fn parse_byte_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("`{trimmed}` does not start with a whole number"))?;
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "kB" | "KB" => 1_000,
        "KiB" => 1 << 10,
        "MB" => 1_000_000,
        "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit \"{other}\", supported units: B, kB, KiB, MB, MiB, GB, GiB"
            ));
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("`{trimmed}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("30m", 1800)]
    #[test_case("90s", 90)]
    #[test_case("1h 30m", 5400)]
    #[test_case("5h", 18000)]
    fn durations(text: &str, secs: u64) {
        assert_eq!(parse_duration(text), Ok(Duration::from_secs(secs)));
    }

    #[test]
    fn misspelt_unit_is_named() {
        let err = parse_duration("5 minuets").expect_err("minuets is not a unit");
        assert!(err.contains("minuets"), "{err}");
    }

    #[test_case("16MiB", 16 << 20)]
    #[test_case("500kB", 500_000)]
    #[test_case("1024", 1024)]
    #[test_case("2 GiB", 2 << 30)]
    fn sizes(text: &str, bytes: u64) {
        assert_eq!(parse_byte_size(text), Ok(bytes));
    }

    #[test_case("lots")]
    #[test_case("16 parsecs")]
    #[test_case("99999999999999GiB")]
    fn bad_sizes(text: &str) {
        assert!(parse_byte_size(text).is_err());
    }
}

/// A size written either as an integer or as a string with a unit; parsed in stage two so the
/// unit error keeps its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SizeValue {
    Bytes(u64),
    Text(String),
}

impl<'de> serde::Deserialize<'de> for SizeValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SizeValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a size in bytes (16777216) or a string (\"16MiB\")")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SizeValue, E> {
                u64::try_from(v)
                    .map(SizeValue::Bytes)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SizeValue, E> {
                Ok(SizeValue::Bytes(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SizeValue, E> {
                Ok(SizeValue::Text(v.to_owned()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl super::Expected for SizeValue {
    const EXPECTED: &'static str = "a size in bytes (16777216) or a string (\"16MiB\")";
    const EXAMPLE: &'static str = r#""16MiB""#;
}

/// A duration as written (`"30m"`), parsed in stage two so a bad unit keeps its location.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct DurationText(pub(crate) String);

impl super::Expected for DurationText {
    const EXPECTED: &'static str = "a duration string such as \"30m\"";
    const EXAMPLE: &'static str = r#""30m""#;
}
