//! What a person meets in their first week (issue 47): each command's `--help` shows its own
//! options before the global ones, shell completions and a man page to install, and `profile
//! check` taking a name as `profile show` does.

use crate::support::Loopx;

/// The option lines of one section (`Options:`, `Global options:`) of a `--help` text.
fn section<'a>(help: &'a str, heading: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn a_command_s_help_lists_its_own_options_before_the_global_ones() {
    let loopx = Loopx::empty();
    for args in [
        &["todo", "add", "--help"][..],
        &["run", "--help"],
        &["--help"],
    ] {
        let help = loopx.ok(args).stdout;
        let own = section(&help, "Options:").join("\n");
        let global = section(&help, "Global options:").join("\n");
        for flag in ["--project", "--json", "--color", "--verbose"] {
            assert!(
                !own.contains(flag),
                "{args:?}: {flag} among own options\n{help}"
            );
            assert!(global.contains(flag), "{args:?}: {flag} not global\n{help}");
        }
        let (at_own, at_global) = (help.find("\nOptions:"), help.find("\nGlobal options:"));
        assert!(at_own < at_global, "{args:?}: own options first\n{help}");
    }
    let help = loopx.ok(&["todo", "add", "--help"]).stdout;
    assert!(
        section(&help, "Options:")
            .iter()
            .any(|l| l.contains("--priority")),
        "{help}"
    );
}

#[test]
fn profile_check_takes_a_name_as_profile_show_does_or_a_path() {
    let loopx = Loopx::new();
    for name in ["executor", "executor.toml"] {
        let check = loopx.ok(&["profile", "check", name]);
        assert!(
            check.stdout.contains(".loopx/profiles/executor.toml"),
            "{name}: {}",
            check.stdout
        );
    }
    // A path is relative to the current directory, here a subdirectory of the project.
    let sub = loopx.path().join("src");
    std::fs::create_dir(&sub).expect("a subdirectory");
    let mut from_sub = loopx.command(&["profile", "check", "../.loopx/profiles/demo.toml"]);
    let out = from_sub.current_dir(&sub).output().expect("loopx runs");
    assert!(out.status.success(), "{out:?}");
    // A file of that name in the current directory is the one checked.
    std::fs::write(loopx.path().join("executor.toml"), "adapter = \"nope\"\n").expect("written");
    let local = loopx.run(&["profile", "check", "executor.toml"]);
    assert_eq!(local.code, 3, "{}{}", local.stdout, local.stderr);
}

#[test]
fn profile_check_of_nothing_names_what_it_tried() {
    let loopx = Loopx::new();
    let missing = loopx.run(&["profile", "check", "shellrev"]);
    assert_eq!(missing.code, 3, "{}{}", missing.stdout, missing.stderr);
    let cwd_file = loopx.path().join("shellrev");
    for tried in [
        cwd_file.display().to_string(),
        ".loopx/profiles/shellrev.toml".to_owned(),
        "loopx profile list".to_owned(),
    ] {
        assert!(
            missing.stderr.contains(&tried),
            "{tried}: {}",
            missing.stderr
        );
    }
    let path = loopx.run(&["profile", "check", "profiles/shellrev.toml"]);
    assert_eq!(path.code, 3, "{}", path.stderr);
    assert!(
        path.stderr
            .contains("profiles/shellrev.toml` does not exist"),
        "{}",
        path.stderr
    );
}
