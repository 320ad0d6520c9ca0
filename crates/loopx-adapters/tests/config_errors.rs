//! Error messages for invalid profiles and adapters: located, complete, with hints.

use loopx_adapters::{AdapterCatalog, LoadError, load_profile_str};

fn invalid(name: &str, text: &str) -> Box<loopx_adapters::InvalidConfig> {
    match load_profile_str(
        name,
        &format!("profiles/{name}.toml"),
        text,
        &AdapterCatalog::builtin(),
    ) {
        Err(LoadError::Invalid(invalid)) => invalid,
        Err(other) => panic!("expected an invalid-config error, got {other}"),
        Ok(_) => panic!("expected `{name}` to be invalid"),
    }
}

/// The one-line form and the full miette rendering, as a user sees them.
fn rendered(invalid: &loopx_adapters::InvalidConfig) -> String {
    format!("{}\n\n{}", invalid.one_line_each(), invalid.render_plain())
}

#[test]
fn unknown_key() {
    let err = invalid(
        "nightly",
        "adapter = \"claude-code\"\npermision = \"read-only\"\npermission = \"read-only\"\n",
    );
    assert_eq!(err.problems.len(), 1);
    assert_eq!((err.problems[0].line, err.problems[0].column), (2, 1));
    assert_eq!(
        err.problems[0].help.as_deref(),
        Some("did you mean `permission`?")
    );
    insta::assert_snapshot!(rendered(&err));
}

#[test]
fn unknown_key_in_a_table() {
    let err = invalid(
        "nightly",
        "adapter = \"claude-code\"\npermission = \"read-only\"\n[limits]\nmax_tme = \"30m\"\n",
    );
    assert_eq!(err.problems[0].key.as_deref(), Some("limits.max_tme"));
    assert_eq!(
        err.problems[0].help.as_deref(),
        Some("did you mean `max_time`?")
    );
}

#[test]
fn wrong_type() {
    let err = invalid(
        "nightly",
        "adapter = \"claude-code\"\npermission = \"read-only\"\n[limits]\nmax_turns = \"forty\"\n",
    );
    assert_eq!((err.problems[0].line, err.problems[0].column), (4, 13));
    insta::assert_snapshot!(rendered(&err));
}

#[test]
fn bad_duration() {
    let err = invalid(
        "nightly",
        "adapter = \"claude-code\"\npermission = \"read-only\"\n\n[limits]\nmax_time = \"5 minuets\"\n",
    );
    assert!(err.problems[0].message.contains("minuets"));
    insta::assert_snapshot!(rendered(&err));
}

#[test]
fn missing_adapter() {
    let err = invalid(
        "nightly",
        "adapter = \"cladue-code\"\npermission = \"read-only\"\n",
    );
    assert_eq!(
        err.problems[0].help.as_deref(),
        Some("did you mean `claude-code`?")
    );
    insta::assert_snapshot!(rendered(&err));
}

#[test]
fn permission_the_adapter_cannot_express() {
    let err = invalid("showcase", "adapter = \"demo\"\npermission = \"full\"\n");
    insta::assert_snapshot!(rendered(&err));
}

#[test]
fn every_error_in_a_file_is_reported_at_once() {
    let text = "\
adapter = \"codex\"
permission = \"workspace-write\"
modle = \"gpt-5\"
capabilities = \"rust\"
workdir = \"../elsewhere\"
[limits]
max_time = \"5 minuets\"
idle_timeout = 30
max_turns = 10
[quota]
slices_per_hour = 0
[[quota.windows]]
window = \"5h\"
[env]
allow = [\"PATH\", \"OPENAI_API_KEY\"]
";
    let err = invalid("many", text);
    let lines: Vec<usize> = err.problems.iter().map(|p| p.line).collect();
    assert_eq!(
        lines,
        vec![3, 4, 5, 7, 8, 9, 11, 13, 15],
        "{}",
        err.one_line_each()
    );
    insta::assert_snapshot!(err.one_line_each());
}

#[test]
fn toml_syntax_errors_are_located() {
    let err = invalid("broken", "adapter = \"codex\"\npermission = \n");
    assert_eq!(err.problems.len(), 1);
    assert_eq!(err.problems[0].line, 2);
}

#[test]
fn adapter_errors_are_located_too() {
    let text = "program = \"x\"\nargs = [\"{promt}\"]\noutput = \"jsonl\"\n[permissions]\nread-only = [\"--approval-mode\", \"yolo\"]\n";
    let err = match loopx_adapters::load_adapter_str("bad", "adapters/bad.toml", text) {
        Err(LoadError::Invalid(err)) => err,
        Err(other) => panic!("expected an invalid-config error, got {other}"),
        Ok(_) => panic!("adapter should be invalid"),
    };
    insta::assert_snapshot!(err.one_line_each());
}

/// The redactor hides `PASSWD` and `COOKIE` variables; validation once let them through a
/// profile's `env.allow` and an adapter's `env.pass` as plain variables, unredacted.
#[test]
fn every_name_the_redactor_treats_as_secret_is_refused_outside_secrets() {
    for (name, word) in [("DB_PASSWD", "PASSWD"), ("SESSION_COOKIE", "COOKIE")] {
        let profile = invalid(
            "nightly",
            &format!(
                "adapter = \"claude-code\"\npermission = \"read-only\"\n[env]\nallow = [\"{name}\"]\n"
            ),
        );
        let adapter = match loopx_adapters::load_adapter_str(
            "bad",
            "adapters/bad.toml",
            &format!(
                "program = \"x\"\nargs = [\"{{prompt}}\"]\noutput = \"text\"\n[permissions]\nread-only = []\n[env]\npass = [\"{name}\"]\n"
            ),
        ) {
            Err(LoadError::Invalid(err)) => err,
            Err(other) => panic!("expected an invalid-config error, got {other}"),
            Ok(_) => panic!("an adapter passing `{name}` must be refused"),
        };
        for (err, key) in [(profile, "env.allow"), (adapter, "env.pass")] {
            assert_eq!(err.problems.len(), 1, "{name}: {}", err.one_line_each());
            let problem = &err.problems[0];
            assert_eq!(problem.key.as_deref(), Some(key));
            assert_eq!(
                problem.message,
                format!(
                    "`{name}` looks like a credential (its name contains `{word}`) and cannot be \
                     in `{key}`"
                )
            );
            assert_eq!(
                problem.help.as_deref(),
                Some("list it in `env.secrets` so its value is redacted")
            );
        }
    }
}

/// Live input needs Claude Code's stream (the only one that echoes what it took) and the
/// agent's stdin for its pipe.
#[test]
fn stream_json_delivery_needs_claude_s_stream_and_its_own_stdin() {
    let text = "program = \"x\"\nargs = [\"-p\", \"--input-format\", \"stream-json\"]\noutput = \"codex-json\"\n[prompt]\ndelivery = \"stream-json\"\n[process]\nstdin = \"null\"\n[permissions]\nfull = [\"-y\"]\n";
    let err = match loopx_adapters::load_adapter_str("live", "adapters/live.toml", text) {
        Err(LoadError::Invalid(err)) => err.one_line_each(),
        Err(other) => panic!("expected an invalid-config error, got {other}"),
        Ok(_) => panic!("adapter should be invalid"),
    };
    assert!(
        err.contains("adapters/live.toml:7")
            && err
                .contains("`process.stdin` cannot be set with `prompt.delivery = \"stream-json\"`"),
        "{err}"
    );
    assert!(
        err.contains("adapters/live.toml:5")
            && err.contains("needs `output = \"claude-stream-json\"`"),
        "{err}"
    );
    assert!(
        err.contains("needs `--replay-user-messages` in `args`")
            && !err.contains("needs `--input-format stream-json"),
        "{err}"
    );
    let fine = "program = \"x\"\nargs = [\"--input-format=stream-json\", \"--replay-user-messages\"]\noutput = \"claude-stream-json\"\n[prompt]\ndelivery = \"stream-json\"\n[permissions]\nfull = [\"-y\"]\n";
    assert!(loopx_adapters::load_adapter_str("live", "adapters/live.toml", fine).is_ok());
}

/// A profile cannot take back what live input needs from the adapter's command line.
#[test]
fn extra_args_cannot_undo_the_live_input_flags() {
    let text = "adapter = \"claude-code\"\npermission = \"workspace-write\"\nextra_args = [\"--input-format\", \"text\"]\n";
    let err = invalid("live", text).one_line_each();
    assert!(
        err.contains("profiles/live.toml:3")
            && err
                .contains("`extra_args` leaves `claude-code` without `--input-format stream-json`"),
        "{err}"
    );
    let fine = "adapter = \"claude-code\"\npermission = \"workspace-write\"\nextra_args = [\"--add-dir\", \"../docs\"]\n";
    assert!(
        load_profile_str(
            "live",
            "profiles/live.toml",
            fine,
            &AdapterCatalog::builtin()
        )
        .is_ok()
    );
}
