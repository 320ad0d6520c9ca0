//! `loopx say AGENT TEXT`: a person's message to an agent (`docs/watch.md`, "Messages"). It
//! waits for the agent's next slice, whose prompt it heads; the log records it when sent and
//! when it arrived. A person's operation: refused inside a slice (the kernel refuses it from
//! an agent too), so an agent cannot put words in a person's mouth to another agent.

use loopx_kernel::model::Message;
use loopx_kernel::store::NewMessage;
use loopx_kernel::{AgentName, Refused};

use crate::{App, AppError};

impl App {
    /// Sends `text` to `agent`, as the caller.
    pub fn say(&self, agent: AgentName, text: String) -> Result<Message, AppError> {
        self.refuse_in_slice(|actor| Refused::SayByAgent { actor })?;
        self.run(NewMessage { agent, text })
    }

    /// The messages waiting for `agent`'s next slice, oldest first.
    pub fn waiting_messages(&self, agent: &AgentName) -> Result<Vec<Message>, AppError> {
        self.read(|s| s.waiting_messages(agent))
    }
}
