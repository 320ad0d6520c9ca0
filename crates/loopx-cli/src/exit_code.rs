//! Exit codes: few, documented in `docs/cli.md`, never renumbered. A test checks that the docs
//! list exactly these.

/// Success.
pub const OK: u8 = 0;
/// A bug in loopx: please report it.
pub const INTERNAL: u8 = 1;
/// Bad usage or invalid input: unknown flag, malformed id, unknown todo, vague gate question.
pub const USAGE: u8 = 2;
/// Project or configuration: no project here, an unsafe `.loopx/` (a symlink, writable by
/// others, someone else's), an invalid profile or adapter file, an adapter that fails its test.
pub const CONFIG: u8 = 3;
/// The state store is missing, corrupt, too new, or stayed busy too long.
pub const STORE: u8 = 4;
/// Someone else holds it, or the state moved on: claimed todo, stale epoch, finished todo.
pub const CONFLICT: u8 = 5;
/// A safety rule refused the action: a gate answered from inside a slice.
pub const REFUSED: u8 = 6;

/// `loopx run --on-gate exit` stopped because a person must answer a gate.
pub const HALTED_ON_GATE: u8 = 7;
/// `loopx run` was stopped by SIGINT or SIGTERM (its running slices were stopped and recorded
/// `interrupted`).
pub const INTERRUPTED: u8 = 8;

/// Every code with its name, for the docs test.
pub const ALL: [(u8, &str); 9] = [
    (OK, "OK"),
    (INTERNAL, "INTERNAL"),
    (USAGE, "USAGE"),
    (CONFIG, "CONFIG"),
    (STORE, "STORE"),
    (CONFLICT, "CONFLICT"),
    (REFUSED, "REFUSED"),
    (HALTED_ON_GATE, "HALTED_ON_GATE"),
    (INTERRUPTED, "INTERRUPTED"),
];

/// The exit code of a failure's class: one mapping, whatever the command.
pub fn of(class: loopx_kernel::model::ErrorClass) -> u8 {
    use loopx_kernel::model::ErrorClass;
    match class {
        ErrorClass::Usage => USAGE,
        ErrorClass::Config => CONFIG,
        ErrorClass::Store => STORE,
        ErrorClass::Conflict => CONFLICT,
        ErrorClass::Refused => REFUSED,
        ErrorClass::Internal => INTERNAL,
    }
}

/// The class an exit code stands for (`None`: success, or a code of `loopx run`'s own).
pub fn class_of(code: u8) -> Option<loopx_kernel::model::ErrorClass> {
    use loopx_kernel::model::ErrorClass;
    Some(match code {
        INTERNAL => ErrorClass::Internal,
        USAGE => ErrorClass::Usage,
        CONFIG => ErrorClass::Config,
        STORE => ErrorClass::Store,
        CONFLICT => ErrorClass::Conflict,
        REFUSED => ErrorClass::Refused,
        _ => return None,
    })
}
