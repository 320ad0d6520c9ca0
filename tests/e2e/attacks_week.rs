//! Attacks on what issue 47 ("the person's first week") added: `loopx clean`, `loopx notify
//! set`, and the cards loopx posts in Lark for a change it put back and for a goal.

use serde_json::json;

use crate::support::{Loopx, committed_repo};

/// A committed git project whose goal g1 was started and marked done: `loopx clean` has g1's
/// leftovers to remove.
fn finished_goal() -> Loopx {
    let loopx = Loopx::new();
    let root = loopx.path();
    committed_repo(root, &[("a.txt", "a\n")]);
    loopx.ok(&["goal", "start", "Fix a"]);
    loopx.ok(&["goal", "done", "g1"]);
    loopx
}

/// Whoever can write `.loopx/worktrees/` (an agent of a shared goal under Landlock alone, any
/// tool of the person's) replaces a finished goal's directory there by a link to a directory
/// of the person's that holds a `plan/` and a `t1/`. `loopx clean` took them for g1's planning
/// and t1 worktrees and deleted them, files and all, outside `.loopx/`.
#[test]
fn clean_removes_nothing_through_a_goal_directory_replaced_by_a_link() {
    let loopx = finished_goal();
    let elsewhere = tempfile::tempdir().expect("dir");
    for seat in ["plan", "t1"] {
        std::fs::create_dir_all(elsewhere.path().join(seat)).expect("seat");
        std::fs::write(elsewhere.path().join(seat).join("notes.txt"), "mine\n").expect("notes");
    }
    let worktrees = loopx.path().join(".loopx/worktrees");
    std::fs::create_dir_all(&worktrees).expect("worktrees");
    let _ = std::fs::remove_dir_all(worktrees.join("g1"));
    std::os::unix::fs::symlink(elsewhere.path(), worktrees.join("g1")).expect("link");

    let dry = loopx.ok(&["clean", "--dry-run"]).stdout;
    let cleaned = loopx.ok(&["clean", "--all"]).stdout;
    for seat in ["plan", "t1"] {
        let notes = elsewhere.path().join(seat).join("notes.txt");
        assert!(
            notes.is_file(),
            "{} deleted through the link:\n{dry}\n{cleaned}",
            notes.display()
        );
    }
    assert!(!dry.contains("would remove planning worktree"), "{dry}");
    assert!(!dry.contains("would remove worktree"), "{dry}");
    assert!(
        cleaned.contains("is a symbolic link") && cleaned.contains(".loopx/worktrees/g1"),
        "{cleaned}"
    );
    // g1's branch, merged (it holds nothing of its own), still goes.
    assert!(
        cleaned.contains("removed branch loopx/g1 (was "),
        "{cleaned}"
    );
}

/// A project on the scripted Lark server with t1 (`title`), answerers `ou_ann`; `loopx lark
/// sync` as the person runs it, with the callback secrets (its put-backs get cards).
fn lark_project(server: &loopx_lark_server::LarkServer, title: &str) -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the retry client"]);
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\n[lark.board]\napp_token = \"bascnTest\"\n[lark.questions]\nchat_id = \"oc_team\"\nanswerers = [\"ou_ann\"]\nlisten = \"127.0.0.1:{}\"\n",
        server.url(),
        crate::lark::free_port()
    ));
    loopx.ok(&["todo", "add", title]);
    loopx
}

fn lark_sync(loopx: &Loopx) -> crate::support::Run {
    use crate::lark::{KEY, SECRET, TOKEN};
    let env = [
        ("LOOPX_LARK_APP_SECRET", SECRET),
        ("LOOPX_LARK_VERIFICATION_TOKEN", TOKEN),
        ("LOOPX_LARK_ENCRYPT_KEY", KEY),
    ];
    let run = loopx.run_env(&["lark", "sync"], &env);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    run
}

/// What was typed into the table sits inside loopx's own sentence on the put-back card. A
/// right-to-left override in it (`U+202E`) turned the rest of that sentence around: the card
/// read `… to "x0` and then the typed text and loopx's "was put back: …" backwards. The
/// same from a todo's title, which an agent writes. The cards carry neither; each `loopx lark
/// sync` that puts a change back counts against the same five cards in ten minutes as `loopx
/// run`'s passes.
#[test]
fn text_that_reorders_loopx_s_sentence_is_left_out_of_the_put_back_card() {
    use loopx_lark_server::LarkServer;
    let server = LarkServer::start("cli_test", crate::lark::SECRET, "bascnTest").expect("server");
    let loopx = lark_project(&server, "Add retry\u{202e}");
    let sync = || drop(lark_sync(&loopx));
    sync();
    for i in 0..7 {
        let typed = format!("x{i}\u{202e}\u{2066} deniatbo saw lavorppa");
        server.edit_as("ou_eve", "t1", json!({ "Agent": typed }));
        sync();
    }
    let said = crate::lark_words::cards_saying(&server, "put back");
    assert_eq!(said.len(), 5, "{said:#?}");
    let card = &said[0];
    assert!(
        card.contains(
            r#"The change of the Agent of "Add retry" (t1) to "x0 deniatbo saw lavorppa" was put back"#
        ),
        "{card:?}"
    );
    for card in &said {
        assert!(
            !card.contains(['\u{202e}', '\u{2066}']),
            "a character that reorders the text on the card: {card:?}"
        );
    }
}

/// A change put back is logged (`WARN … change=t1 Agent set to "…"`) on the person's terminal,
/// and the formatter escapes an event's message but not its fields: what an outsider typed
/// into the table reached the terminal as it was, `ESC[8m` (hide what follows) and `U+202E`
/// included. The log shows them as visible escapes, as every line loopx prints.
#[test]
fn what_an_outsider_typed_reaches_the_person_s_terminal_log_escaped() {
    let server = loopx_lark_server::LarkServer::start("cli_test", crate::lark::SECRET, "bascnTest")
        .expect("server");
    let loopx = lark_project(&server, "Add retry");
    lark_sync(&loopx);
    let typed = "ok\u{1b}[8m hidden\u{1b}]52;c;ZXZpbA==\u{7}\u{202e}";
    server.edit_as("ou_eve", "t1", json!({ "Agent": typed }));
    let run = lark_sync(&loopx);
    let warned = run
        .stderr
        .lines()
        .find(|l| l.contains("refused and put back"))
        .unwrap_or_else(|| panic!("no warning: {}", run.stderr));
    assert!(
        !run.stderr.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "raw on the terminal: {:?}",
        run.stderr
    );
    assert!(
        warned.contains(r#"Agent set to "ok^[[8m hidden^[]52;c;ZXZpbA==^G\u{202e}""#),
        "{warned}"
    );
}
