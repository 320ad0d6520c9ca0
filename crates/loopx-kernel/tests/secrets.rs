//! Secrets never reach the disk: the raw bytes of the store hold none of them.

#[path = "support/common.rs"]
mod common;

use common::{HUMAN, T0, fixture};
use loopx_kernel::model::{Blocks, EvidenceKind};
use loopx_kernel::store::{NewEvidence, NewGate, NewHandoff, NewTodo};
use loopx_kernel::{Op, Redactor};
use loopx_testkit::todo;

#[test]
fn the_store_file_holds_no_secret_in_any_field() {
    // Built from pieces so that this file itself trips no secret scanner.
    let secrets = [
        format!("sk-ant-{}", "api03-Zx9Yw8Xv7Wu6Vt5Us4Tr3Sq2"),
        format!("ghp_{}", "Zx9Yw8Xv7Wu6Vt5Us4Tr3Sq2Rp1Qo0Nn"),
        format!("AKIA{}", "ZX9YW8XV7WU6VT5U"),
        format!("xoxb-{}", "998877665544-zyxwvutsrqpo"),
        "hunter2-but-longer".to_owned(),
        "value-from-a-secret-env-var".to_owned(),
    ];
    let mut f = fixture();
    let mut redactor = Redactor::new().with_value(secrets[5].clone());
    redactor = redactor.with_env(
        vec![("DB_PASSWORD".to_owned(), "pw-in-the-environment".to_owned())],
        &[],
    );
    f.store.set_redactor(redactor);
    f.goal();
    // Each text carries one pattern-shaped secret, a URL password, the marked value and a
    // secret environment variable's value.
    let text = |i: usize| {
        format!(
            "uses {} and https://bob:{}@db.internal/x and {} and pw-in-the-environment",
            secrets[i % 4],
            secrets[4],
            secrets[5]
        )
    };
    let new = NewTodo {
        detail: text(1),
        ..todo(text(0))
    };
    f.store.apply(Op::TodoAdd(new), HUMAN, T0).expect("todo");
    let gate = NewGate {
        question: format!("Should we rotate the key {} before Friday?", secrets[2]),
        options: vec![text(3)],
        context: text(5),
        blocks: Blocks::Global,
        kind: loopx_kernel::model::GateKind::Question,
    };
    f.store.apply(Op::GateAsk(gate), HUMAN, T0).expect("gate");
    let evidence = NewEvidence {
        epoch: None,
        kind: EvidenceKind::Note,
        summary: text(1),
        detail: text(2),
        files: vec![],
        todo: None,
        slice: None,
        work: None,
        metric: None,
    };
    f.store
        .apply(Op::EvidenceAdd(evidence), HUMAN, T0)
        .expect("evidence");
    let handoff = NewHandoff {
        epoch: None,
        todo: None,
        done: text(3),
        next: text(4),
        files: vec![text(5)],
        questions: vec![text(0)],
        slice: None,
    };
    f.store
        .apply(Op::HandoffAdd(handoff), HUMAN, T0)
        .expect("handoff");
    let raw = common::stored_bytes(f);
    for secret in secrets
        .iter()
        .map(String::as_str)
        .chain(["pw-in-the-environment"])
    {
        let found = raw.windows(secret.len()).any(|w| w == secret.as_bytes());
        assert!(!found, "`{secret}` reached the store file");
    }
    // The redacted text itself did reach it: the test is looking at the right file.
    assert!(
        raw.windows(10).any(|w| w == b"[redacted:"),
        "redaction markers are stored"
    );
}

/// A file pinned by something that is no SHA-256 (a report written by hand to the socket) is
/// refused whole: its pin could never match, and judging it later must not trip on it.
#[test]
fn evidence_pinned_by_no_sha256_is_refused() {
    let f = fixture();
    for sha256 in ["aéééééééééé".to_owned(), "ABCD".repeat(16), "ab".repeat(31)] {
        let evidence = NewEvidence {
            epoch: None,
            kind: EvidenceKind::Test,
            summary: "3 passed".into(),
            detail: String::new(),
            files: vec![loopx_kernel::model::FileRef {
                path: "src/lib.rs".into(),
                sha256: sha256.clone(),
                bytes: 1,
            }],
            todo: None,
            slice: None,
            work: None,
            metric: None,
        };
        let err = f
            .store
            .apply(Op::EvidenceAdd(evidence), HUMAN, T0)
            .expect_err("refused");
        assert!(
            err.to_string().contains("which is no SHA-256"),
            "{sha256}: {err}"
        );
    }
}
