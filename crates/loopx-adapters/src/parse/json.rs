//! Small lookups on `serde_json::Value` that treat a wrong type as absent.

use serde_json::Value;

pub(super) fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

pub(super) fn u64_at(v: &Value, pointer: &str) -> Option<u64> {
    let value = v.pointer(pointer)?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

/// The event's own `timestamp` (RFC 3339), else `now`: relative reset times count from when
/// the vendor said them.
pub(super) fn timestamp_or(v: &Value, now: jiff::Timestamp) -> jiff::Timestamp {
    str_at(v, "/timestamp")
        .and_then(|t| t.parse().ok())
        .unwrap_or(now)
}
