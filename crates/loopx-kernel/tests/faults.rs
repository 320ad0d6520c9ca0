//! The fault wrapper the simulation puts around a store handle: it injects into that handle's
//! writes only, a crash marks its process dead, and handles without it are untouched.

#[path = "support/common.rs"]
mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use loopx_kernel::errors::StoreError;
use loopx_kernel::fault::{Crashed, Fault, Faults};
use loopx_kernel::{KernelError, Op, Store};
use loopx_testkit::todo;

/// Faults that answer every write with `fault`, counting the writes they were asked about.
fn always(fault: Option<Fault>) -> (Faults, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    let faults = Faults::new(Arc::new(move |_action| {
        count.fetch_add(1, Ordering::SeqCst);
        fault
    }));
    (faults, asked)
}

fn add_todo(store: &Store, title: &str) -> Result<(), KernelError> {
    let new = todo(title);
    store
        .apply(Op::TodoAdd(new), common::HUMAN, common::T0)
        .map(drop)
}

fn titles(f: &common::Fixture) -> Vec<String> {
    let store = Store::open_read(&f.project).expect("opens");
    let todos = store.read(|s| s.todos()).expect("reads");
    todos.into_iter().map(|t| t.title).collect()
}

#[test]
fn a_busy_or_full_fault_refuses_the_write_of_its_handle_only() {
    let f = common::fixture();
    f.goal();
    let (busy, asked) = always(Some(Fault::Busy));
    let faulty = Store::open(&f.project).expect("opens").with_faults(busy);
    let err = add_todo(&faulty, "refused").expect_err("busy");
    assert!(
        matches!(err, KernelError::Store(StoreError::Busy { .. })),
        "{err:?}"
    );
    let (full, _) = always(Some(Fault::NoSpace));
    let err = add_todo(
        &Store::open(&f.project).expect("opens").with_faults(full),
        "refused too",
    )
    .expect_err("full");
    assert!(
        matches!(err, KernelError::Store(StoreError::NoSpace { .. })),
        "{err:?}"
    );
    // A handle without the wrapper, on the same file, writes as ever.
    add_todo(&f.store, "written").expect("no faults");
    assert_eq!(titles(&f), ["written"]);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked once, for its own write"
    );
}

#[test]
fn a_crash_after_the_commit_keeps_the_write_and_the_dead_process_writes_nothing_more() {
    let f = common::fixture();
    f.goal();
    let (faults, _) = always(Some(Fault::CrashAfter));
    let faulty = Store::open(&f.project)
        .expect("opens")
        .with_faults(faults.clone());
    let unwound = catch_unwind(AssertUnwindSafe(|| add_todo(&faulty, "committed")))
        .expect_err("the process crashed");
    assert!(unwound.is::<Crashed>(), "a simulated crash, not a bug");
    assert!(faults.dying());
    assert_eq!(titles(&f), ["committed"], "it crashed after the commit");
    // Every handle of the dead process refuses, whatever its injector would say.
    let err = add_todo(&faulty, "after death").expect_err("dead");
    assert!(
        matches!(err, KernelError::Store(StoreError::Damaged { .. })),
        "{err:?}"
    );
    assert_eq!(titles(&f), ["committed"]);
}

#[test]
fn a_crash_before_the_commit_writes_nothing() {
    let f = common::fixture();
    f.goal();
    let (faults, _) = always(Some(Fault::CrashBefore));
    let faulty = Store::open(&f.project)
        .expect("opens")
        .with_faults(faults.clone());
    let unwound = catch_unwind(AssertUnwindSafe(|| add_todo(&faulty, "lost")))
        .expect_err("the process crashed");
    assert!(unwound.is::<Crashed>());
    assert!(faults.dying());
    assert!(titles(&f).is_empty(), "{:?}", titles(&f));
}
