//! Who acts: a person, an agent, or loopx itself. The one place that knows how each is spelled
//! in the records (`human:<user>`, `agent:<name>`, `loopx`) and so the one place that tells
//! them apart: every rule that depends on who acts (only a person amends a goal, answers a
//! question, ends a goal or pins a check; an agent is capped, fenced by its lease, asked before
//! it ends a goal) asks an [`Actor`], never a string prefix.
//!
//! Records keep the spelling (a string, unchanged since the first record version): an actor is
//! read from it where a rule needs one, which costs a prefix test, and spelled back with
//! [`Actor::to_string`].

use std::fmt;

const PERSON: &str = "human:";
const AGENT: &str = "agent:";
/// loopx itself: the supervisor's approvals, stalls, budgets and monitors.
pub const LOOPX: &str = "loopx";

/// Who made a change, as a rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor<'a> {
    /// A person: `human:<user>` (a Lark user reads as `human:lark:<open_id>`).
    Person(&'a str),
    /// An agent, by name: `agent:<name>`.
    Agent(&'a str),
    /// loopx itself.
    Loopx,
    /// Anything else a record holds (an older or foreign spelling): neither a person nor an
    /// agent, so no rule that needs either lets it through.
    Other(&'a str),
}

impl<'a> Actor<'a> {
    /// The actor a record's spelling names.
    pub fn of(spelled: &'a str) -> Actor<'a> {
        if let Some(user) = spelled.strip_prefix(PERSON) {
            Actor::Person(user)
        } else if let Some(name) = spelled.strip_prefix(AGENT) {
            Actor::Agent(name)
        } else if spelled == LOOPX {
            Actor::Loopx
        } else {
            Actor::Other(spelled)
        }
    }

    pub fn is_person(self) -> bool {
        matches!(self, Actor::Person(_))
    }

    pub fn is_agent(self) -> bool {
        matches!(self, Actor::Agent(_))
    }

    /// The agent's name, for an agent.
    pub fn agent(self) -> Option<&'a str> {
        match self {
            Actor::Agent(name) => Some(name),
            _ => None,
        }
    }

    /// The name a person reads: the user or the agent without its kind (`ana`, `exec`).
    pub fn name(self) -> &'a str {
        match self {
            Actor::Person(name) | Actor::Agent(name) | Actor::Other(name) => name,
            Actor::Loopx => LOOPX,
        }
    }
}

/// `human:<user>`: how a person is spelled in the records.
pub fn person(user: &str) -> String {
    format!("{PERSON}{user}")
}

/// `agent:<name>`: how an agent is spelled in the records.
pub fn agent(name: &str) -> String {
    format!("{AGENT}{name}")
}

impl fmt::Display for Actor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Person(user) => write!(f, "{PERSON}{user}"),
            Actor::Agent(name) => write!(f, "{AGENT}{name}"),
            Actor::Loopx => f.write_str(LOOPX),
            Actor::Other(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_reads_as_its_actor_and_back() {
        for (spelled, actor) in [
            ("human:ana", Actor::Person("ana")),
            ("human:lark:ou_1", Actor::Person("lark:ou_1")),
            ("agent:exec", Actor::Agent("exec")),
            ("loopx", Actor::Loopx),
            ("agent", Actor::Other("agent")),
            ("humans:ana", Actor::Other("humans:ana")),
        ] {
            assert_eq!(Actor::of(spelled), actor);
            assert_eq!(actor.to_string(), spelled);
        }
        assert_eq!(person("ana"), "human:ana");
        assert_eq!(agent("exec"), "agent:exec");
        assert_eq!(Actor::of("agent:exec").agent(), Some("exec"));
        assert!(!Actor::of("Human:ana").is_person());
    }
}
