//! Output helpers: styling for people, JSON shapes for scripts.
//!
//! JSON documents are one object with `"format_version": 1` and snake_case fields; fields are
//! only ever added. Records (todos, gates, …) serialize as the kernel defines them, with ids as
//! text (`"t3"`) and times as RFC 3339 UTC. `docs/cli.md` shows every shape.

mod safe;
mod style;
pub mod views;

pub use safe::{needs_escape, safe_line};
pub use style::Style;

/// `{"format_version":1, key: value}`, serialized straight to the output: building a
/// `serde_json::Value` first costs several times as much for a list of 10,000 todos.
pub fn document<T: serde::Serialize>(key: &'static str, value: T) -> Document<T> {
    Document { key, value }
}

/// A JSON document: one record or list under one key, with the format version.
#[derive(Debug)]
pub struct Document<T> {
    key: &'static str,
    value: T,
}

impl<T: serde::Serialize> serde::Serialize for Document<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("format_version", &1)?;
        map.serialize_entry(self.key, &self.value)?;
        map.end()
    }
}
