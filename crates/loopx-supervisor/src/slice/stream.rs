//! Spawning the slice and reading its output through the adapter's parser.

use loopx_adapters::{Parser, StreamSummary};
use loopx_pty::{LaunchSpec, RunningSlice, SliceEvent, SliceEvents};

use loopx_domain::judge::AgentEnd;

use super::launch::FirstInput;
use super::live::{LiveInput, Mailroom};
use super::run::{is_refusal, jiff_time};

/// A spawned agent and its events.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub slice: RunningSlice,
    pub events: SliceEvents,
}

/// Spawns `spec`, supervised on the supervisor's `runtime`; the error says why nothing
/// started.
pub(crate) fn spawn(runtime: &tokio::runtime::Handle, spec: LaunchSpec) -> Result<Spawned, String> {
    let _inside = runtime.enter();
    loopx_pty::spawn_slice(spec)
        .map(|(slice, events)| Spawned { slice, events })
        .map_err(|e| crate::errors::chain(&e))
}

/// Writes the agent its first input; for one that takes input while it runs, its live session.
fn write_first(slice: &RunningSlice, first: FirstInput, mailroom: Mailroom) -> Option<LiveInput> {
    match first {
        FirstInput::Nothing => None,
        FirstInput::Typed(bytes) => {
            if let Err(e) = slice.send_input(bytes) {
                tracing::warn!(error = %e, "could not type the prompt into the agent's terminal");
            }
            None
        }
        FirstInput::Live(prompt) => Some(LiveInput::start(&prompt, mailroom, slice.control())),
    }
}

/// The slice's token ceiling, once the usage the agent reported so far reached it.
pub(crate) fn reached_ceiling(summary: &StreamSummary, max_tokens: Option<u64>) -> Option<u64> {
    let max = max_tokens?;
    let usage = summary.usage();
    (usage.input.saturating_add(usage.output) >= max).then_some(max)
}

/// Writes the agent its first input (and, when it takes input while it runs, the person's
/// messages as they come: `live.rs`), feeds every output chunk to `parser` as it arrives
/// (stopping the agent when the vendor refuses it, or when the usage it reports reaches
/// `max_tokens`), and waits for the end and the sweep.
pub(crate) async fn observe(
    spawned: Result<Spawned, String>,
    (first, mailroom): (FirstInput, Mailroom),
    mut parser: Parser,
    max_tokens: Option<u64>,
    clock: &loopx_kernel::SharedClock,
) -> AgentEnd {
    let Spawned {
        mut slice,
        mut events,
    } = match spawned {
        Ok(spawned) => spawned,
        Err(why) => return AgentEnd::new(Err(why), parser.into_summary()),
    };
    let mut live = write_first(&slice, first, mailroom);
    let mut stopped_for_refusal = false;
    let mut stopped_at_ceiling = None;
    loop {
        let event = match &mut live {
            Some(input) => input.next(&mut events).await,
            None => events.next().await,
        };
        let Some(event) = event else { break };
        match event {
            SliceEvent::Output(bytes) => {
                let mut refused = false;
                parser.feed(&bytes, jiff_time(clock.now()), &mut |event| {
                    refused |= is_refusal(&event);
                    if let Some(input) = &mut live {
                        input.saw(&event);
                    }
                });
                // The vendor refused the agent: nothing more will come of this slice, and a CLI
                // can stay alive after it without ever finishing (Claude Code in streaming
                // mode after a rejected limit) or retry for minutes (Claude Code after a 401).
                // A warning (`allowed_warning`) is not a refusal.
                if refused && !stopped_for_refusal {
                    stopped_for_refusal = true;
                    tracing::info!("the vendor refused the agent: stopping the slice");
                    slice.stop();
                }
                // The window's bound holds whatever the slice does: the decision's admission
                // only foretells what it will spend.
                if !stopped_for_refusal
                    && stopped_at_ceiling.is_none()
                    && let Some(max) = reached_ceiling(parser.summary(), max_tokens)
                {
                    stopped_at_ceiling = Some(max);
                    tracing::info!(
                        max,
                        "the agent reached the slice's token ceiling: stopping it"
                    );
                    slice.stop();
                }
            }
            SliceEvent::WaitingForInput { screen } => {
                tracing::info!(screen = %screen, "the agent seems to wait for input");
            }
            SliceEvent::Stopping(why) => tracing::info!(?why, "stopping the slice"),
            SliceEvent::WaitingEnded | SliceEvent::Exited(_) => {}
        }
    }
    parser.finish(jiff_time(clock.now()));
    if let Some(input) = live {
        input.finish().await;
    }
    let report = slice.wait().await.map_err(|e| crate::errors::chain(&e));
    let mut end = AgentEnd::new(report, parser.into_summary());
    end.stopped_for_refusal = stopped_for_refusal;
    end.stopped_at_ceiling = stopped_at_ceiling;
    end
}
