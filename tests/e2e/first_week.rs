//! What a person meets in their first week (issue 47): each command's `--help` shows its own
//! options before the global ones, shell completions and a man page to install, and `profile
//! check` taking a name as `profile show` does.

use crate::support::{LOOPX, Loopx};

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

/// Runs `script` in bash and returns its stdout.
fn bash(script: &str) -> String {
    let out = std::process::Command::new("bash")
        .args(["-c", script])
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn bash_completes_loopx_s_commands_and_flags_from_the_generated_script() {
    // What a shell does on `loopx go<TAB>` and `loopx todo add --pri<TAB>`.
    // Bash calls the function with the command, the word being completed and the one before.
    let complete = |words: &str, current: usize| {
        bash(&format!(
            "source <('{LOOPX}' completions bash) && COMP_WORDS=({words}) && COMP_CWORD={current} \
             && COMP_LINE='{words}' && COMP_POINT=${{#COMP_LINE}} \
             && _loopx loopx \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\" \
             && echo \"${{COMPREPLY[@]}}\""
        ))
    };
    assert_eq!(complete("loopx go", 1).trim(), "goal");
    assert!(
        complete("loopx todo add --pri", 3).contains("--priority"),
        "todo add's flags"
    );
}

#[test]
fn completions_are_written_for_zsh_and_fish_and_an_unknown_shell_is_named() {
    let loopx = Loopx::empty();
    let zsh = loopx.ok(&["completions", "zsh"]).stdout;
    assert!(zsh.starts_with("#compdef loopx"), "{zsh}");
    let fish = loopx.ok(&["completions", "fish"]).stdout;
    assert!(fish.contains("complete -c loopx"), "{fish}");
    assert!(fish.contains("-l priority"), "every command's flags");
    let bad = loopx.run(&["completions", "tcsh"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("'tcsh'") && bad.stderr.contains("bash, zsh, fish"),
        "{}",
        bad.stderr
    );
}

#[test]
fn the_man_page_renders_and_lists_every_command() {
    let loopx = Loopx::empty();
    let roff = loopx.ok(&["man"]).stdout;
    assert!(roff.contains(".TH loopx 1"), "{roff}");
    let page = loopx.path().join("loopx.1");
    std::fs::write(&page, &roff).expect("the page is written");
    // As `man` shows it once installed.
    let shown = bash(&format!(
        "MANWIDTH=100 man -l '{}' 2>/dev/null",
        page.display()
    ));
    for command in [
        "goal",
        "todo",
        "run",
        "completions",
        "man",
        "Global options",
    ] {
        assert!(
            shown.contains(command) || shown.contains(&command.to_uppercase()),
            "{command}:\n{shown}"
        );
    }
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
