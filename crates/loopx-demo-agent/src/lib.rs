//! # The simulated agent (`loopx __demo-agent`)
//!
//! A deterministic stand-in for Claude Code that `loopx demo` drives through the real
//! supervisor, so a newcomer sees the whole loop (plan, work, review, a question, a usage
//! limit) without an API key. It speaks Claude's `stream-json` shapes exactly, so the real
//! parser and classifier read it; what it does is decided by the prompt text and the files in
//! its working directory, never by randomness. The conventions (which marker selects which
//! behaviour) are in `docs/design/demo-agent.md`.
//!
//! It never touches anything outside its working directory, reads no secrets, and never uses
//! the network. The only environment it reads is `LOOPX_DEMO_DELAY_MS` (pacing between lines)
//! and `LOOPX_DEMO_RESET_SECS` (how far ahead a simulated usage limit resets). With
//! `[demo:report-cli]` it runs `loopx report` as a child, which reads the slice's `LOOPX_*`
//! variables and writes to the project's store, as a real agent's own `loopx` calls would.

mod args;
mod behaviour;
mod errors;
mod report_cli;
mod run;
mod stream;
mod task;
mod workspace;

pub use run::main;
