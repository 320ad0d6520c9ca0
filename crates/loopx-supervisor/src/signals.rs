//! Signals for `loopx run` (`docs/design/run-loop.md`, "Signals"): SIGINT and SIGTERM stop it
//! (the first gracefully, the second at once); SIGHUP is caught and ignored, so closing the
//! terminal of a `loopx run` under `nohup`-less ssh does not lose the running slices.
//!
//! The handler only records the signal (signal-hook's self-pipe); a thread of ours reads it
//! and calls [`Shutdown::request`], which may lock and log.

use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::shutdown::{Shutdown, Stopping};

/// Routes SIGINT/SIGTERM to `shutdown` and ignores SIGHUP, for the rest of the process.
pub fn handle_signals(shutdown: Arc<Shutdown>) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("loopx-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let name = match signal {
                    SIGINT => "SIGINT",
                    SIGTERM => "SIGTERM",
                    _ => {
                        tracing::info!("SIGHUP ignored: loopx keeps running");
                        continue;
                    }
                };
                match shutdown.request(name) {
                    Stopping::Now => tracing::warn!("{name} again: killing running slices now"),
                    _ => tracing::info!("{name}: stopping running slices"),
                }
            }
        })?;
    Ok(())
}
