//! Exit codes: few, documented in `docs/cli.md`, never renumbered. A test checks that the docs
//! list exactly these.

/// Success.
pub const OK: u8 = 0;
/// A bug in loopx: please report it.
pub const INTERNAL: u8 = 1;
/// Bad usage or invalid input: unknown flag, malformed id, unknown todo, vague gate question.
pub const USAGE: u8 = 2;
/// No project here, or its `.loopx/` is unsafe (a symlink, writable by others, someone else's).
pub const PROJECT: u8 = 3;
/// The state store is missing, corrupt, too new, or stayed busy too long.
pub const STORE: u8 = 4;
/// Someone else holds it, or the state moved on: claimed todo, stale epoch, finished todo.
pub const CONFLICT: u8 = 5;
/// A safety rule refused the action: a gate answered from inside a slice.
pub const REFUSED: u8 = 6;

/// Every code with its name, for the docs test.
pub const ALL: [(u8, &str); 7] = [
    (OK, "OK"),
    (INTERNAL, "INTERNAL"),
    (USAGE, "USAGE"),
    (PROJECT, "PROJECT"),
    (STORE, "STORE"),
    (CONFLICT, "CONFLICT"),
    (REFUSED, "REFUSED"),
];
