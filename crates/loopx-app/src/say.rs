//! `loopx say AGENT TEXT`: a person's message to an agent (`docs/watch.md`, "Messages"). It
//! goes into the agent's running session when its CLI takes input while it runs (Claude
//! Code), else it waits for the agent's next slice, whose prompt it heads; the log records it
//! when sent and when it arrived. A person's operation: refused inside a slice (the kernel
//! refuses it from an agent too), so an agent cannot put words in a person's mouth to another
//! agent.

use loopx_kernel::model::Message;
use loopx_kernel::store::NewMessage;
use loopx_kernel::{AgentName, Refused};

use crate::{App, AppError};

/// Where a message sent now goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Into the agent's running session, within about a second (its CLI takes input while it
    /// runs): unless that session is past its last turn, then to the next prompt.
    Live,
    /// To the agent's next slice's prompt.
    NextPrompt,
}

/// A message sent: where it goes, and how many wait for the agent with it.
#[derive(Debug, Clone)]
pub struct Said {
    pub message: Message,
    pub route: Route,
    pub waiting: usize,
}

impl Said {
    /// The sentence every surface prints.
    pub fn sentence(&self) -> String {
        let (id, agent) = (&self.message.id, &self.message.agent);
        match self.route {
            Route::Live => format!(
                "Message {id} to {agent}: it goes into {agent}'s running session (or heads its next slice's prompt if that session is done)"
            ),
            Route::NextPrompt => {
                let more = match self.waiting {
                    0 | 1 => String::new(),
                    n => format!(" ({n} wait for it now)"),
                };
                format!("Message {id} to {agent}: it heads {agent}'s next slice's prompt{more}")
            }
        }
    }
}

impl App {
    /// Sends `text` to `agent`, as the caller.
    pub fn say(&self, agent: AgentName, text: String) -> Result<Said, AppError> {
        self.refuse_in_slice(|actor| Refused::SayByAgent { actor })?;
        let message: Message = self.run(NewMessage { agent, text })?;
        let route = self.route(&message.agent)?;
        let waiting = self.waiting_messages(&message.agent)?.len();
        Ok(Said {
            message,
            route,
            waiting,
        })
    }

    /// Where a message to `agent` goes now: live when a slice of its runs and its profile's
    /// CLI takes input while it runs.
    pub fn route(&self, agent: &AgentName) -> Result<Route, AppError> {
        let (running, agents) = self.read(|s| {
            let mut running = false;
            for slice in s.running_slices()?.iter().filter(|r| &r.agent == agent) {
                // A slice whose `loopx run` was killed takes nothing: the next run recovers it.
                let owner = s.slice_owner(slice.id)?;
                running |= !owner.is_some_and(|o| loopx_domain::process::owner_gone(&o));
            }
            Ok((running, s.agents()?))
        })?;
        let live = running
            && loopx_domain::agent::load_agent(self.project(), agents, Some(agent.as_str()))
                .is_ok_and(|setup| {
                    setup.loaded.adapter.prompt_delivery
                        == loopx_adapters::PromptDeliveryKind::StreamJson
                });
        Ok(if live { Route::Live } else { Route::NextPrompt })
    }

    /// The messages waiting for `agent`'s next slice, oldest first.
    pub fn waiting_messages(&self, agent: &AgentName) -> Result<Vec<Message>, AppError> {
        self.read(|s| s.waiting_messages(agent))
    }
}
