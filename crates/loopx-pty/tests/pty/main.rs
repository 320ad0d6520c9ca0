//! Real processes in real pseudo-terminals: fake agents from `tests/fixtures/agents/`.

mod capture;
mod input;
mod spawn;
mod stdin;
mod support;
mod termination;
