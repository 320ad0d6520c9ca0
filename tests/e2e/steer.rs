//! Steering from the terminal (issue 16): one meaning for an answer, whichever way it is given.

use crate::support::Loopx;

fn ask(loopx: &Loopx, question: &str) {
    loopx.ok(&[
        "gate", "ask", question, "--option", "ship it", "--option", "hold it", "--option",
        "drop it", "--global",
    ]);
}

fn answer_of(loopx: &Loopx, gate: &str) -> (String, u64) {
    let shown = loopx.ok(&["gate", "show", gate, "--json"]).json();
    let answer = &shown["gate"]["answer"];
    (
        answer["text"].as_str().unwrap_or_default().to_owned(),
        answer["option"].as_u64().unwrap_or(0),
    )
}

#[test]
fn a_number_means_that_option_and_an_out_of_range_one_is_refused() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Release 2.0"]);
    ask(&loopx, "Ship the release candidate to users?");
    ask(&loopx, "Ship the second candidate to users?");
    ask(&loopx, "Ship the third candidate to users?");

    let listed = loopx.ok(&["gate", "list"]).stdout;
    assert!(listed.contains("loopx gate answer q1 N"), "{listed}");
    let status = loopx.ok(&["status", "--json"]).json();
    assert_eq!(
        status["needs_you"][0]["answer_command"], "loopx gate answer q1 N",
        "{status}"
    );

    let refused = loopx.run(&["gate", "answer", "q1", "7"]);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains('7'), "{}", refused.stderr);
    assert_eq!(
        answer_of(&loopx, "q1"),
        (String::new(), 0),
        "nothing recorded"
    );

    loopx.ok(&["gate", "answer", "q1", "2"]);
    loopx.ok(&["gate", "answer", "q2", "--option", "2"]);
    loopx.ok(&["gate", "answer", "q3", "Hold it"]);
    for gate in ["q1", "q2"] {
        assert_eq!(answer_of(&loopx, gate), ("hold it".to_owned(), 2), "{gate}");
    }
    // In words, as the person wrote it, and still option 2.
    assert_eq!(answer_of(&loopx, "q3"), ("Hold it".to_owned(), 2));
}
