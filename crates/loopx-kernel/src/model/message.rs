//! A person's message to an agent (`loopx say`).

use serde::{Deserialize, Serialize};

use crate::ids::{AgentName, MessageId};
use crate::time::Timestamp;

/// A message waiting for its agent's next slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub id: MessageId,
    pub agent: AgentName,
    pub text: String,
    /// Who sent it (`human:alice`).
    pub by: String,
    pub at: Timestamp,
}

/// How a message reached its agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// It headed the prompt of the slice's agent as it started.
    Prompt,
    /// It was written into the slice's running session, and the agent's CLI took it (record
    /// version 18).
    Live,
}

impl Delivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Prompt => "prompt",
            Delivery::Live => "live",
        }
    }
}
