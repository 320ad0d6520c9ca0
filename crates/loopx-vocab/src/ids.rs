//! Identifiers: short, human-typeable, and safe to put in a path.
//!
//! Every id matches `^[a-z][a-z0-9-]{0,63}$`. Entities that loopx numbers itself (goals, todos,
//! gates, evidence, handoffs, slices) are a one-letter prefix plus a counter (`g1`, `t12`, `q3`);
//! they are stored as the number so that tables iterate in creation order. Agent names are chosen
//! by people and only checked against the grammar.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An id that does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} `{value}`: expected {expected}")]
pub struct InvalidId {
    /// What kind of id was expected (`todo id`, `agent name`).
    pub kind: &'static str,
    /// The text that was given.
    pub value: String,
    /// What a valid one looks like.
    pub expected: &'static str,
}

/// Checks an id against the grammar `^[a-z][a-z0-9-]{0,63}$`.
pub fn check_id(kind: &'static str, text: &str) -> Result<(), InvalidId> {
    let bytes = text.as_bytes();
    let valid = !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if valid {
        Ok(())
    } else {
        Err(InvalidId {
            kind,
            value: text.to_owned(),
            expected: "a lowercase letter, then up to 63 lowercase letters, digits or `-`",
        })
    }
}

macro_rules! numbered_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u64);

        impl $name {
            /// The letter every id of this kind starts with.
            pub const PREFIX: char = $prefix;
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;
            fn from_str(text: &str) -> Result<Self, InvalidId> {
                let bad = || InvalidId {
                    kind: $kind,
                    value: text.to_owned(),
                    expected: concat!("`", $prefix, "` followed by a number, e.g. `", $prefix, "3`"),
                };
                check_id($kind, text).map_err(|_| bad())?;
                let digits = text.strip_prefix($prefix).ok_or_else(bad)?;
                if digits.is_empty() || digits.starts_with('0') {
                    return Err(bad());
                }
                digits.parse().map($name).map_err(|_| bad())
            }
        }

        // JSON shows the id as people type it; the store keeps the bare number.
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if s.is_human_readable() {
                    s.collect_str(self)
                } else {
                    s.serialize_u64(self.0)
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                if d.is_human_readable() {
                    let text = String::deserialize(d)?;
                    text.parse().map_err(serde::de::Error::custom)
                } else {
                    u64::deserialize(d).map($name)
                }
            }
        }
    };
}

numbered_id!(
    /// A goal: `g1`.
    GoalId, 'g', "goal id"
);
numbered_id!(
    /// A todo: `t12`.
    TodoId, 't', "todo id"
);
numbered_id!(
    /// A gate (a question for a human): `q3`.
    GateId, 'q', "gate id"
);
numbered_id!(
    /// A piece of evidence: `e7`.
    EvidenceId, 'e', "evidence id"
);
numbered_id!(
    /// A handoff note: `h2`.
    HandoffId, 'h', "handoff id"
);
numbered_id!(
    /// One bounded agent run: `s9`.
    SliceId, 's', "slice id"
);
numbered_id!(
    /// A person's message to an agent (`loopx say`): `m4`.
    MessageId, 'm', "message id"
);

/// A registered agent's name, chosen by a person (`exec`, `reviewer-2`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct AgentName(String);

impl AgentName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for AgentName {
    type Err = InvalidId;
    fn from_str(text: &str) -> Result<Self, InvalidId> {
        check_id("agent name", text)?;
        Ok(AgentName(text.to_owned()))
    }
}

impl<'de> Deserialize<'de> for AgentName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_ids_round_trip_and_refuse_other_shapes() {
        assert_eq!("t12".parse::<TodoId>().expect("valid"), TodoId(12));
        assert_eq!(TodoId(12).to_string(), "t12");
        for bad in [
            "",
            "t",
            "t0",
            "t01",
            "T1",
            "g1",
            "t1x",
            "t-1",
            "../t1",
            "t99999999999999999999",
        ] {
            assert!(bad.parse::<TodoId>().is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn agent_names_follow_the_grammar() {
        for good in ["a", "exec", "reviewer-2", &"a".repeat(64)] {
            assert!(good.parse::<AgentName>().is_ok(), "{good:?}");
        }
        for bad in [
            "",
            "Exec",
            "2exec",
            "a b",
            "a/b",
            "..",
            &"a".repeat(65),
            "é",
        ] {
            assert!(bad.parse::<AgentName>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn json_shows_typed_ids_and_the_store_keeps_numbers() {
        assert_eq!(serde_json::to_string(&GateId(3)).expect("json"), "\"q3\"");
        let bytes = postcard::to_allocvec(&GateId(3)).expect("postcard");
        assert_eq!(
            postcard::from_bytes::<GateId>(&bytes).expect("decode"),
            GateId(3)
        );
    }
}
