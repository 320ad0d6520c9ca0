//! Every file in `adapters/` and `profiles/` loads, the permission mapping of every adapter is
//! safe, and launches render as the supervisor expects.

use std::path::{Path, PathBuf};

use loopx_adapters::{
    AdapterCatalog, BUILTIN_ADAPTERS, LaunchContext, LaunchError, PermissionLevel, PromptDelivery,
    find_bypass, find_write_grant, load_adapter_file, load_profile_file, load_profiles_dir,
    render_launch,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn toml_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .expect("directory exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

fn ctx() -> LaunchContext {
    LaunchContext {
        loopx_exe: PathBuf::from("/usr/local/bin/loopx"),
        project_root: PathBuf::from("/work/project"),
        prompt_file: PathBuf::from("/work/project/.loopx/slices/s1.prompt"),
    }
}

#[test]
fn every_adapter_file_loads_and_is_embedded() {
    let files = toml_files("adapters");
    assert_eq!(
        files.len(),
        BUILTIN_ADAPTERS.len(),
        "adapters/ and BUILTIN_ADAPTERS differ"
    );
    for path in files {
        let adapter =
            load_adapter_file(&path).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let embedded = BUILTIN_ADAPTERS
            .iter()
            .find(|(n, _)| *n == adapter.name)
            .expect("embedded");
        assert_eq!(
            embedded.1,
            std::fs::read_to_string(&path).expect("readable"),
            "{} embedded copy is stale",
            adapter.name
        );
    }
}

#[test]
fn every_profile_file_loads() {
    let files = toml_files("profiles");
    assert!(files.len() >= 4);
    for path in &files {
        let loaded = load_profile_file(path, &AdapterCatalog::builtin())
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert_eq!(loaded.content_hash.to_string().len(), 64);
    }
    let listed = load_profiles_dir(&repo().join("profiles"), &AdapterCatalog::builtin())
        .expect("readable dir");
    assert_eq!(listed.len(), files.len());
    assert!(listed.iter().all(|e| e.result.is_ok()));
}

#[test]
fn read_only_never_grants_writes_and_only_full_bypasses() {
    let catalog = AdapterCatalog::builtin();
    for name in catalog.names() {
        let adapter = catalog.load(&name).expect("loads").expect("exists");
        for (level, flags) in &adapter.permissions {
            match level {
                PermissionLevel::ReadOnly => {
                    assert_eq!(find_write_grant(flags), None, "{name} read-only: {flags:?}")
                }
                PermissionLevel::WorkspaceWrite => assert_eq!(
                    find_bypass(flags),
                    None,
                    "{name} workspace-write: {flags:?}"
                ),
                PermissionLevel::Full => {}
            }
        }
        // Flags outside [permissions] apply at every level.
        assert_eq!(find_bypass(&adapter.args), None, "{name} args");
    }
}

#[test]
fn vendor_bypass_flags_appear_only_at_full() {
    let expected = [
        ("claude-code", "--dangerously-skip-permissions"),
        ("codex", "danger-full-access"),
        ("gemini", "yolo"),
        ("qwen", "yolo"),
        ("opencode", "--auto"),
    ];
    let catalog = AdapterCatalog::builtin();
    for (name, bypass) in expected {
        let adapter = catalog.load(name).expect("loads").expect("exists");
        for level in PermissionLevel::ALL {
            // OpenCode has no read-only flag: that level is left out, so it cannot be asked for.
            let Some(flags) = adapter.permissions.get(&level) else {
                assert_eq!(
                    (name, level),
                    ("opencode", PermissionLevel::ReadOnly),
                    "vendor adapters express every level they can"
                );
                continue;
            };
            let has = flags.iter().any(|f| f.contains(bypass));
            assert_eq!(
                has,
                level == PermissionLevel::Full,
                "{name} {level}: {flags:?}"
            );
        }
    }
}

#[test]
fn an_adapter_that_leaks_a_bypass_below_full_is_refused() {
    for (level, flags) in [
        ("read-only", r#"["--permission-mode", "acceptEdits"]"#),
        ("workspace-write", r#"["--dangerously-skip-permissions"]"#),
        ("read-only", r#"["--sandbox", "danger-full-access"]"#),
    ] {
        let text = format!(
            "program = \"x\"\nargs = [\"{{prompt}}\"]\noutput = \"text\"\n[permissions]\n{level} = {flags}\n"
        );
        let err = loopx_adapters::load_adapter_str("leaky", "leaky.toml", &text)
            .expect_err("a leaking flag is refused");
        let loopx_adapters::LoadError::Invalid(invalid) = err else {
            panic!("expected an invalid adapter, got {err}")
        };
        assert!(
            invalid
                .problems
                .iter()
                .all(|p| p.message.contains("which grants more than")),
            "{}",
            invalid.one_line_each()
        );
    }
}

#[test]
fn claude_launch_renders_flags_and_takes_the_prompt_as_its_first_stream_json_line() {
    let loaded = load_profile_file(
        &repo().join("profiles/executor.toml"),
        &AdapterCatalog::builtin(),
    )
    .expect("loads");
    let plan = render_launch(
        &loaded,
        PermissionLevel::WorkspaceWrite,
        "-fix {model} the bug",
        &ctx(),
    )
    .expect("renders");
    assert_eq!(plan.program, "claude");
    assert_eq!(
        plan.args,
        [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--replay-user-messages",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash",
            "--model",
            "claude-sonnet-4-5",
            "--max-turns",
            "60",
        ]
    );
    // Never in argv, whatever it holds: it goes on stdin.
    assert_eq!(
        plan.prompt_delivery,
        PromptDelivery::StreamJson {
            contents: "-fix {model} the bug".into()
        }
    );
    assert!(
        plan.secret_env_names
            .contains(&"ANTHROPIC_API_KEY".to_owned())
    );
    assert!(plan.env_allowlist.contains(&"CARGO_HOME".to_owned()));
    assert!(!plan.env_allowlist.iter().any(|n| n.contains("KEY")));
    assert!(!plan.requires_approval);
    assert_eq!(plan.workdir, PathBuf::from("/work/project/."));
}

#[test]
fn a_lower_level_than_the_profile_is_allowed_and_a_higher_one_refused() {
    let loaded = load_profile_file(
        &repo().join("profiles/executor.toml"),
        &AdapterCatalog::builtin(),
    )
    .expect("loads");
    let plan = render_launch(&loaded, PermissionLevel::ReadOnly, "look", &ctx()).expect("renders");
    assert!(plan.args.contains(&"plan".to_owned()));
    assert!(matches!(
        render_launch(&loaded, PermissionLevel::Full, "go", &ctx()),
        Err(LaunchError::AboveProfile { .. })
    ));
}

#[test]
fn demo_launch_uses_the_loopx_binary_and_a_prompt_file() {
    let loaded = load_profile_file(
        &repo().join("profiles/demo.toml"),
        &AdapterCatalog::builtin(),
    )
    .expect("loads");
    let plan = render_launch(
        &loaded,
        PermissionLevel::WorkspaceWrite,
        "do the demo",
        &ctx(),
    )
    .expect("renders");
    assert_eq!(plan.program, "/usr/local/bin/loopx");
    assert_eq!(plan.args[0], "__demo-agent");
    assert!(
        plan.args
            .contains(&"/work/project/.loopx/slices/s1.prompt".to_owned())
    );
    assert!(
        matches!(plan.prompt_delivery, PromptDelivery::File { ref contents, .. } if contents == "do the demo")
    );
}

#[test]
fn codex_full_asks_for_approval_and_long_prompts_are_refused() {
    let text = "adapter = \"codex\"\npermission = \"full\"\n";
    let loaded =
        loopx_adapters::load_profile_str("yolo", "yolo.toml", text, &AdapterCatalog::builtin())
            .expect("loads");
    let plan = render_launch(&loaded, PermissionLevel::Full, "go", &ctx()).expect("renders");
    assert!(plan.requires_approval);
    assert!(
        plan.args
            .windows(2)
            .any(|w| w == ["--sandbox", "danger-full-access"])
    );
    let long = "x".repeat(loopx_adapters::MAX_ARG_BYTES + 1);
    assert!(matches!(
        render_launch(&loaded, PermissionLevel::Full, &long, &ctx()),
        Err(LaunchError::PromptTooLong { .. })
    ));
}

#[test]
fn generic_needs_a_program_and_takes_the_prompt_on_stdin() {
    let catalog = AdapterCatalog::builtin();
    let missing = loopx_adapters::load_profile_str(
        "g",
        "g.toml",
        "adapter = \"generic\"\npermission = \"workspace-write\"\n",
        &catalog,
    );
    assert!(missing.is_err());
    let text = "adapter = \"generic\"\npermission = \"workspace-write\"\nprogram = \"aider\"\nextra_args = [\"--yes-always\"]\n";
    let loaded = loopx_adapters::load_profile_str("g", "g.toml", text, &catalog).expect("loads");
    let plan =
        render_launch(&loaded, PermissionLevel::WorkspaceWrite, "hi", &ctx()).expect("renders");
    assert_eq!(
        (plan.program.as_str(), plan.args.as_slice()),
        ("aider", ["--yes-always".to_owned()].as_slice())
    );
    assert!(matches!(plan.prompt_delivery, PromptDelivery::Stdin { .. }));
}

#[test]
fn project_adapters_override_builtin_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "description = \"patched\"\nprogram = \"my-claude\"\nargs = [\"{prompt}\"]\noutput = \"claude-stream-json\"\n[permissions]\nread-only = []\n";
    std::fs::write(dir.path().join("claude-code.toml"), text).expect("write");
    let catalog = AdapterCatalog::with_dir(dir.path());
    let adapter = catalog.load("claude-code").expect("loads").expect("exists");
    assert_eq!(adapter.program.as_deref(), Some("my-claude"));
}

#[test]
fn content_hash_changes_when_the_profile_changes() {
    let catalog = AdapterCatalog::builtin();
    let a = loopx_adapters::load_profile_str(
        "p",
        "p.toml",
        "adapter = \"codex\"\npermission = \"full\"\n",
        &catalog,
    )
    .expect("loads");
    let b = loopx_adapters::load_profile_str(
        "p",
        "p.toml",
        "adapter = \"codex\"\npermission = \"full\"\n# edited\n",
        &catalog,
    )
    .expect("loads");
    let c = loopx_adapters::load_profile_str(
        "p",
        "p.toml",
        "adapter = \"gemini\"\npermission = \"full\"\n",
        &catalog,
    )
    .expect("loads");
    assert_ne!(a.content_hash, b.content_hash);
    assert_ne!(a.content_hash, c.content_hash);
}

/// What live input needs is checked on the final command line too, whatever a profile built
/// in code (not loaded from a checked file) adds.
#[test]
fn a_claude_launch_without_the_live_input_flags_is_refused() {
    let mut loaded = load_profile_file(
        &repo().join("profiles/executor.toml"),
        &AdapterCatalog::builtin(),
    )
    .expect("loads");
    loaded.profile.extra_args = vec!["--input-format".into(), "text".into()];
    let err =
        render_launch(&loaded, PermissionLevel::WorkspaceWrite, "hi", &ctx()).expect_err("refused");
    assert!(matches!(err, LaunchError::LiveInputFlags { .. }), "{err}");
    assert!(
        err.to_string().contains("--input-format stream-json"),
        "{err}"
    );
}
