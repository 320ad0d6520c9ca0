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
