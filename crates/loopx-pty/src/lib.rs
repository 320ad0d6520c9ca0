//! # Theory of operation
//!
//! `loopx-pty` runs one *slice* of an agent: a single process tree in a fresh pseudo-terminal,
//! bounded in time, output and resources, and gone without a trace when the slice ends. It
//! takes a [`LaunchSpec`] and yields [`SliceEvent`]s and a [`SliceReport`]. It knows nothing
//! about goals, profiles, TOML or the store.
//!
//! **Spawn** ([`spawn_slice`]). Everything portable-pty would get silently wrong is checked
//! first: the program is resolved through the *slice's* `PATH` and must be executable, with an
//! existing interpreter on its `#!` line; the working directory must exist. The environment is
//! an allowlist ([`EnvSpec`]) plus `TERM` and the marker `LOOPX_SLICE=<id>`. The agent is a
//! session leader (pid = process group = session id) whose stdout and stderr are the terminal,
//! never a pipe; its stdin is the terminal too, unless the spec asks for `/dev/null` or a pipe
//! the caller writes structured input to ([`Stdin`]). Resource limits ([`ResourceLimits`]) are
//! applied by re-executing a helper ([`exec_with_limits`], wired as `loopx __exec`) that calls `setrlimit` and then
//! `execv`s the agent. A failed exec shows up as an exit within 200 ms with 127 or SIGABRT and
//! is reported as [`SliceExit::SpawnFailed`].
//!
//! **Capture.** One blocking reader thread per slice reads the terminal, writes the raw log with
//! a head and tail cap and exact counts ([`LogCounts`]), keeps an ANSI-stripped text view
//! ([`loopx_vocab::AnsiStripper`], [`loopx_vocab::clean_text`]), and hands each read through a bounded channel to a
//! screen thread. The screen thread feeds a `vt100` screen that answers cursor-position and
//! device-attribute queries, then passes the chunk on to the control loop, so the control loop
//! never sees output the screen has not taken in. The emulator costs about as much per byte as
//! reading the terminal; on its own thread the two overlap. Memory is bounded by the caps and
//! the channels whatever the agent prints. A writer thread owns the terminal's writer for the
//! whole slice (dropping it sends EOF).
//!
//! *When the screen thread falls behind*, the reader gathers further reads into one batch (up to
//! 64 KiB) while the channel is full, then waits: the agent is slowed, as by a slow real
//! terminal, and no byte is ever skipped. Skipping would be cheaper but wrong: the answer to a
//! cursor-position query depends on every byte before it, and a dropped mode switch (alternate
//! screen, scroll region) would corrupt the screen for the rest of the slice. What changes
//! under load is only the size of chunks (and of [`SliceEvent::Output`] events). A query waits
//! at most for the queued batches (about 1 MiB, some 10 ms of emulation) before it is answered.
//!
//! **Control.** One task per slice (on the caller's tokio runtime) selects over output, the
//! agent's exit, requests ([`SliceControl`]) and timers: wall time, idle time, output cap, and
//! waiting-for-input (screen unchanged for a threshold; reported, never answered).
//!
//! **Termination** (`docs/design/termination.md`). Stopping sends SIGTERM to every process
//! group in the slice's session, waits the grace period, then SIGKILL; a second stop kills at
//! once. After *every* slice, also a normal exit, a sweep finds what is left, by session and by
//! the `LOOPX_SLICE` marker in the process's environment (which catches `setsid` escapees),
//! terminates it the same way, and counts it ([`SliceReport::leftover_count`]). The leader is
//! reaped by pid; orphans are reaped too when the process is a child subreaper
//! ([`become_child_subreaper`]).
//!
//! **loopx's own children** (git, notification commands) run through [`run_bounded`]: in a
//! process group of their own, killed at a deadline that counts from the spawn. Every child an
//! owner waits for is registered, so that [`reap_adopted`] can reap the orphans a subreaper
//! adopts (a daemon git or a notification left behind) without stealing anyone's status.
//!
//! **Platforms.** What the operating system is asked about processes (the table, a marker in an
//! environment, orphans) goes through `loopx-os`; containment has its seam in the sandbox
//! module: namespaces and Landlock on Linux, a generated Seatbelt profile on macOS.

mod capture;
mod cgroup;
mod children;
mod errors;
mod exec;
mod launch;
mod rlimits;
mod room;
mod sandbox;
mod slice;
mod spec;
mod sweep;

pub use capture::LogCounts;
pub use cgroup::{CgroupLimits, MemoryLimitHit, SliceCgroup};
pub use children::{Bounded, reap_adopted, run_bounded};
pub use errors::{ExecError, InputError, SpawnError, SpecError, WaitError};
pub use exec::exec_with_limits;
pub use launch::{PROMPT_FILE_ARG, PROMPT_FILE_VAR, SLICE_MARKER_VAR};
pub use rlimits::ResourceLimits;
pub use room::{DEVICES, Room, exec_helper, git_dir, hidden, remove_room, room_has, write_private};
pub use sandbox::{
    NamespaceFailure, NamespaceStep, SUPERVISOR_LOST_FILE, SUPERVISOR_LOST_STATUS, Sandbox,
    SandboxSupport,
};
pub use slice::{
    ChildStatus, RunningSlice, SliceControl, SliceEvent, SliceEvents, SliceExit, SliceReport,
    StopReason, spawn_slice,
};
pub use spec::{
    EnvSpec, ExecHelper, LaunchSpec, LogSpec, PromptFile, SliceId, SliceLimits, Stdin, TerminalSize,
};
pub use sweep::{OrphanSweep, become_child_subreaper, stop_orphaned_slice};
