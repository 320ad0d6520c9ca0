//! Where the store is, as `.loopx/loopx.toml` says (`docs/design/multi-host.md`): the file is
//! read by one loader, with its limits, and its `[store] url` checked by one rule, whichever
//! command opens the store.

use crate::support::{Loopx, SOON, finished_within};

/// Puts `text` in `.loopx/loopx.toml` as it is (no `[store]` of a test database kept).
fn write_config(loopx: &Loopx, text: &str) {
    std::fs::write(loopx.path().join(".loopx/loopx.toml"), text).expect("write loopx.toml");
}

/// The commands that open the store without loading the rest of `loopx.toml` first, and one
/// that loads it too.
const COMMANDS: [&[&str]; 3] = [&["todo", "list"], &["status"], &["doctor"]];

/// Every command in [`COMMANDS`] fails within a deadline, and its message has each of `words`.
fn refused_by_every_command(loopx: &Loopx, words: &[&str]) {
    for args in COMMANDS {
        let run = finished_within(loopx.command(args), SOON)
            .unwrap_or_else(|| panic!("loopx {args:?} was still waiting after {SOON:?}"));
        assert_ne!(run.code, 0, "loopx {args:?}: {}", run.stdout);
        let said = format!("{}{}", run.stdout, run.stderr);
        for word in words {
            assert!(said.contains(word), "loopx {args:?} says {word:?}: {said}");
        }
    }
}

/// A FIFO in place of `loopx.toml` (a slip, or an agent's way to stall every loopx of the
/// project) is refused, named, instead of waited on for a writer that never comes.
#[test]
fn a_fifo_in_place_of_loopx_toml_is_refused_not_waited_on() {
    let loopx = Loopx::with_work();
    let config = loopx.path().join(".loopx/loopx.toml");
    let _ = std::fs::remove_file(&config);
    nix::unistd::mkfifo(&config, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    refused_by_every_command(&loopx, &["loopx.toml", "is a FIFO"]);
}

/// A `loopx.toml` over the size loopx reads of any configuration file is refused by every
/// command, the store's lookup included, rather than read whole into memory.
#[test]
fn an_oversized_loopx_toml_is_refused_by_every_command() {
    let loopx = Loopx::with_work();
    let padding = "# padding\n".repeat(120_000);
    write_config(&loopx, &padding);
    refused_by_every_command(&loopx, &["loopx.toml", "larger than 1024 KiB"]);
}

/// A `loopx.toml` that does not parse names the file and the line, and never reads as "no
/// `[store]`": the project may have moved to a database, and its old `.loopx/state.redb` is
/// stale.
#[test]
fn a_loopx_toml_that_does_not_parse_names_its_line_and_opens_no_store() {
    let loopx = Loopx::with_work();
    write_config(
        &loopx,
        "# moved to the database\n[store\nurl = \"postgres://loopx@db/loopx\"\n",
    );
    refused_by_every_command(&loopx, &["loopx.toml:2"]);
}

/// A password in `[store] url` is refused by the store's lookup too, by the same rule as the
/// checked config (the file may be shared and committed), before any connection is tried.
#[test]
fn a_password_in_the_store_url_is_refused_before_connecting() {
    let loopx = Loopx::with_work();
    write_config(
        &loopx,
        "[store]\nurl = \"postgres://loopx:hunter2@db.invalid/loopx\"\n",
    );
    refused_by_every_command(&loopx, &["loopx.toml:2", "holds a password"]);
    for args in COMMANDS {
        let run = loopx.run(args);
        assert!(
            !format!("{}{}", run.stdout, run.stderr).contains("hunter2"),
            "loopx {args:?} never shows the password"
        );
    }
}
