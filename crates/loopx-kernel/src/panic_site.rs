//! Where the last panic on this thread happened: the store tells the database engine's panics
//! (redb panics on some kinds of damage instead of returning an error) from loopx's own (a bug),
//! which used to be reported alike as "the store is damaged, run doctor".
//!
//! Only a panic hook sees a panic's location, and hooks are the binary's to install: the binary
//! calls [`record`] from its hook. Without one (a library user, a unit test) no site is known and
//! a panic under the store is taken for damage, as before.

use std::cell::RefCell;
use std::panic::PanicHookInfo;

/// A panic's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanicSite {
    pub file: String,
    pub line: u32,
}

impl PanicSite {
    /// Whether the panic came from inside the database engine (redb): damage, not a bug.
    pub fn in_engine(&self) -> bool {
        self.file.contains("/redb-")
    }
}

thread_local! {
    static LAST: RefCell<Option<PanicSite>> = const { RefCell::new(None) };
}

/// Notes where a panic happened, for the thread it happened on. Call it from the panic hook.
pub fn record(info: &PanicHookInfo<'_>) {
    let site = info.location().map(|l| PanicSite {
        file: l.file().to_owned(),
        line: l.line(),
    });
    LAST.with(|last| *last.borrow_mut() = site);
}

/// The site [`record`] noted last on this thread, left in place: for naming where a panic that
/// is unwinding (or was just caught) began.
pub fn last() -> Option<PanicSite> {
    LAST.with(|last| last.borrow().clone())
}

impl std::fmt::Display for PanicSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// The site [`record`] noted last on this thread, taken.
pub(crate) fn take() -> Option<PanicSite> {
    LAST.with(|last| last.borrow_mut().take())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::errors::StoreError;
    use crate::store::open::shield;

    const STORE: &str = "/p/.loopx/state.redb";

    #[test]
    fn a_panic_in_loopx_code_under_the_store_is_a_bug_with_its_location() {
        std::panic::set_hook(Box::new(record));
        let err = shield(Path::new(STORE), || -> u32 {
            panic!("an index out of step")
        })
        .expect_err("it panicked");
        let _ = std::panic::take_hook();
        let StoreError::Bug {
            location, message, ..
        } = &err
        else {
            panic!("expected a bug, got {err}");
        };
        assert!(location.contains("panic_site.rs:"), "{location}");
        assert_eq!(message, "an index out of step");
        let text = err.to_string();
        assert!(
            text.contains("loopx hit a bug at") && !text.contains("damaged"),
            "{text}"
        );
    }

    #[test]
    fn a_panic_inside_the_database_engine_is_damage() {
        std::panic::set_hook(Box::new(|_| {
            LAST.with(|last| {
                *last.borrow_mut() = Some(PanicSite {
                    file: "/root/.cargo/registry/src/index/redb-4.6.0/src/tree_store/page.rs"
                        .into(),
                    line: 412,
                });
            });
        }));
        let err = shield(Path::new(STORE), || -> u32 { panic!("invalid page") })
            .expect_err("it panicked");
        let _ = std::panic::take_hook();
        assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    }

    #[test]
    fn without_a_hook_no_site_is_known_and_a_panic_is_taken_for_damage() {
        let err =
            shield(Path::new(STORE), || -> u32 { panic!("who knows") }).expect_err("it panicked");
        assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    }
}
