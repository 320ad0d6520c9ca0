//! What a slice's launch and a monitor's check both take from an adapter's [`LaunchPlan`].

use loopx_adapters::{LaunchPlan, PromptDelivery, StdinMode};

/// The agent's stdin under `plan`: the pipe its prompt and a person's messages are written to
/// (`prompt.delivery = "stream-json"`), else `/dev/null` or the terminal, as `[process] stdin`
/// says (a monitor's check: `/dev/null`).
pub fn stdin(plan: &LaunchPlan) -> loopx_pty::Stdin {
    match (&plan.prompt_delivery, plan.stdin) {
        (PromptDelivery::StreamJson { .. }, _) => loopx_pty::Stdin::Pipe,
        (_, StdinMode::Null) => loopx_pty::Stdin::Null,
        (_, StdinMode::Pty) => loopx_pty::Stdin::Terminal,
    }
}
