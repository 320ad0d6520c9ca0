//! Output helpers: styling for people, JSON shapes for scripts.
//!
//! JSON documents are one object with `"format_version": 1` and snake_case fields; fields are
//! only ever added. Records (todos, gates, …) serialize as the kernel defines them, with ids as
//! text (`"t3"`) and times as RFC 3339 UTC. `docs/cli.md` shows every shape.

mod style;
pub mod views;

pub use style::Style;

/// `{"format_version":1, key: value}`.
pub fn document(key: &str, value: impl serde::Serialize) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    object.insert("format_version".to_owned(), 1.into());
    object.insert(
        key.to_owned(),
        serde_json::to_value(value).unwrap_or(serde_json::Value::Null),
    );
    serde_json::Value::Object(object)
}
