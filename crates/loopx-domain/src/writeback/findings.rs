//! What the scope check of a finished slice writes back (part of [`writeback`](crate::writeback)).
//!
//! Pure: the slice's [`SliceChanges`] in, operations out. The files the slice changed become a
//! `diff` evidence with the diff stat; files outside the goal's scope or in `.loopx/` become one
//! `violation` evidence naming each file, and a gate that asks a person whether to keep the
//! changes or roll them back. loopx rolls nothing back itself: the answer reaches the agent in
//! its next prompt, and the gate holds the agent back until then.

use loopx_kernel::model::{Blocks, EvidenceKind, GateKind};
use loopx_kernel::store::{NewGate, Op};

use loopx_git::scope::SliceChanges;
use loopx_kernel::limits::{self, bounded, clip};

use crate::writeback::{Finished, evidence};

/// Files named in a question or a summary; the evidence's detail names them all.
const NAMED: usize = 5;
/// Characters of one path named in a question or a summary: five of them, with the rest of the
/// sentence, stay well inside a question's bound, so its `?` is never cut off.
const NAMED_CHARS: usize = 120;

pub const KEEP: &str = "keep";
pub const ROLLBACK: &str = "rollback";

/// The `changes:` line of the slice's own evidence.
pub fn changes_line(c: &SliceChanges) -> String {
    match &c.unchecked {
        Some(why) => format!("changes: not checked ({why})\n"),
        None => format!("changes: {} files\n", c.files.len()),
    }
}

/// The diff evidence, the violation evidence and its gate, in that order.
pub fn ops(f: &Finished<'_>) -> Vec<Op> {
    let c = &f.end.changes;
    let mut ops = Vec::new();
    if !c.files.is_empty() {
        let summary = format!(
            "slice {} changed {}: {}",
            f.record.id,
            files(c.files.len()),
            named(&c.files)
        );
        let detail = loopx_kernel::model::diff_detail(&c.stat, &c.files);
        ops.push(Op::EvidenceAdd(evidence(
            f,
            EvidenceKind::Diff,
            &summary,
            &detail,
        )));
    }
    // What the commit left out: the person and the next slice (whose prompt shows the todo's
    // evidence) hear of it.
    if let Some(said) = &c.left_out {
        let summary = format!("slice {} {said}", f.record.id);
        ops.push(Op::EvidenceAdd(evidence(
            f,
            EvidenceKind::Note,
            &summary,
            said,
        )));
    }
    let bad = c.violations();
    if bad.is_empty() {
        return ops;
    }
    // `slice s4 of agent `exec` changed 2 files outside the goal's scope`
    let changed = format!(
        "lice {} of agent `{}` changed {} {}",
        f.record.id,
        f.record.agent,
        files(bad.len()),
        violated(c)
    );
    let summary = format!("s{changed}: {}", named(&bad));
    let detail = violation_detail(c);
    ops.push(Op::EvidenceAdd(evidence(
        f,
        EvidenceKind::Violation,
        &summary,
        &detail,
    )));
    let question = format!(
        "S{changed} ({}): keep the changes or roll them back?",
        named(&bad)
    );
    ops.push(Op::GateAsk(gate(f, question, &detail)));
    ops
}

/// The gate that asks whether to keep a slice's violating changes or roll them back.
fn gate(f: &Finished<'_>, question: String, detail: &str) -> NewGate {
    // In a worktree the slice is one commit on its todo's branch: `rollback` undoes it, and
    // until then nobody builds on it. In the shared tree loopx can only tell the agent.
    let (context, blocks, kind) = match (f.branch(), f.record.todo) {
        (Some((checkpoint, commit)), Some(todo)) => (
            format!(
                "scope check of slice {} (agent `{}`) in {todo}'s worktree: its commit {} on \
                 {todo}'s branch. `rollback` puts the branch and the worktree back at {} (the \
                 commit before the slice); `keep` keeps them.\n{detail}",
                f.record.id,
                f.record.agent,
                loopx_git::worktree::short(commit),
                loopx_git::worktree::short(checkpoint),
            ),
            Blocks::Todos(vec![todo]),
            GateKind::Rollback {
                todo,
                checkpoint: checkpoint.to_owned(),
                commit: commit.to_owned(),
                reported_done: claimed_done(f),
            },
        ),
        // In the shared tree loopx rolls nothing back; the todo waits for the answer (keep
        // finishes it as reported), and a planning slice's agent waits instead.
        _ => (
            format!(
                "scope check of slice {} (agent `{}`); loopx rolls nothing back itself: `keep` \
                 keeps the changes{}, `rollback` asks the next slice to undo them.\n{detail}",
                f.record.id,
                f.record.agent,
                if claimed_done(f) {
                    " and marks the todo done, as the agent reported"
                } else {
                    ""
                }
            ),
            f.record.todo.map_or_else(
                || Blocks::Agent(f.record.agent.clone()),
                |t| Blocks::Todos(vec![t]),
            ),
            GateKind::Scope {
                todo: f.record.todo,
                reported_done: f.record.todo.is_some() && claimed_done(f),
            },
        ),
    };
    NewGate {
        question,
        options: vec![KEEP.to_owned(), ROLLBACK.to_owned()],
        context: bounded(&context, limits::DETAIL),
        blocks,
        kind,
    }
}

/// The violation evidence's detail: each file outside the scope, then each in `.loopx/`.
fn violation_detail(c: &SliceChanges) -> String {
    let mut detail = String::new();
    if !c.outside.is_empty() {
        detail.push_str(&format!(
            "outside the goal's scope:\n{}",
            listed(&c.outside)
        ));
    }
    if !c.state_files.is_empty() {
        detail.push_str(&format!(
            "in loopx's state directory:\n{}",
            listed(&c.state_files)
        ));
    }
    detail
}

/// Whether the slice said its todo is done: a `done` report (in its final block or through
/// `loopx report done`), or the profile's `done_when`.
pub fn claimed_done(f: &Finished<'_>) -> bool {
    (f.judged.outcome == loopx_adapters::Outcome::Completed
        && f.judged.classification.as_ref().is_some_and(|c| c.done))
        || f.reported_done
}

/// `outside the goal's scope`, `in `.loopx/``, or both.
fn violated(c: &SliceChanges) -> String {
    let state = format!("in `{}/`", loopx_kernel::project::STATE_DIR);
    match (c.outside.is_empty(), c.state_files.is_empty()) {
        (false, true) => "outside the goal's scope".to_owned(),
        (true, false) => state,
        _ => format!("outside the goal's scope or {state}"),
    }
}

fn files(n: usize) -> String {
    if n == 1 {
        "1 file".to_owned()
    } else {
        format!("{n} files")
    }
}

/// `a, b, c` or `a, b, c, d, e and 3 more`.
fn named<S: AsRef<str>>(paths: &[S]) -> String {
    let mut text = paths
        .iter()
        .take(NAMED)
        .map(|p| match clip(p.as_ref(), NAMED_CHARS) {
            short if short.len() < p.as_ref().len() => format!("{short}…"),
            whole => whole,
        })
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > NAMED {
        text.push_str(&format!(" and {} more", paths.len() - NAMED));
    }
    text
}

fn listed(paths: &[String]) -> String {
    paths.iter().map(|p| format!("  {p}\n")).collect()
}

#[cfg(test)]
mod tests {
    use loopx_kernel::AgentName;

    use super::*;
    use crate::writeback::{TestSlice, test_slice};

    fn finished(agent: &AgentName, changes: &SliceChanges) -> TestSlice {
        let mut t = test_slice(agent);
        t.end.changes = changes.clone();
        t
    }

    #[test]
    fn changes_in_scope_are_a_diff_only() {
        let agent: AgentName = "exec".parse().expect("a name");
        let changes = SliceChanges {
            files: vec!["docs/a.md".into()],
            stat: " docs/a.md | 1 +\n".into(),
            ..SliceChanges::default()
        };
        let ops = ops(&finished(&agent, &changes).finished());
        let [Op::EvidenceAdd(diff)] = ops.as_slice() else {
            panic!("one diff evidence: {ops:?}")
        };
        assert_eq!(diff.kind, EvidenceKind::Diff);
        assert_eq!(diff.summary, "slice s4 changed 1 file: docs/a.md");
        assert!(diff.detail.contains("docs/a.md | 1 +"), "{}", diff.detail);
        assert_eq!(changes_line(&changes), "changes: 1 files\n");
    }

    #[test]
    fn violations_are_evidence_naming_each_file_and_a_gate() {
        let agent: AgentName = "exec".parse().expect("a name");
        let changes = SliceChanges {
            files: vec!["../x".into(), "docs/a.md".into(), "secrets.txt".into()],
            outside: vec!["../x".into(), "secrets.txt".into()],
            state_files: vec![".loopx/profiles/p.toml".into()],
            ..SliceChanges::default()
        };
        let ops = ops(&finished(&agent, &changes).finished());
        let [_, Op::EvidenceAdd(violation), Op::GateAsk(gate)] = ops.as_slice() else {
            panic!("diff, violation, gate: {ops:?}")
        };
        assert_eq!(violation.kind, EvidenceKind::Violation);
        for file in ["../x", "secrets.txt", ".loopx/profiles/p.toml"] {
            assert!(violation.detail.contains(file), "{}", violation.detail);
        }
        assert_eq!(
            gate.question,
            "Slice s4 of agent `exec` changed 3 files outside the goal's scope or in `.loopx/` \
             (../x, secrets.txt, .loopx/profiles/p.toml): keep the changes or roll them back?"
        );
        loopx_kernel::question::check_question(&gate.question).expect("concrete");
        assert_eq!(gate.options, [KEEP, ROLLBACK]);
        // The todo waits for the answer (a planning slice's agent would instead).
        assert_eq!(gate.blocks, Blocks::Todos(vec![loopx_kernel::TodoId(2)]));
        assert!(
            matches!(
                gate.kind,
                GateKind::Scope {
                    todo: Some(_),
                    reported_done: false
                }
            ),
            "{:?}",
            gate.kind
        );
    }

    #[test]
    fn long_paths_never_cut_the_question_mark_off() {
        let agent: AgentName = "exec".parse().expect("a name");
        let long: Vec<String> = (0..8)
            .map(|n| format!("deep/{}/file{n}.rs", "d".repeat(300)))
            .collect();
        let changes = SliceChanges {
            files: long.clone(),
            outside: long,
            ..SliceChanges::default()
        };
        let t = finished(&agent, &changes);
        let gate = ops(&t.finished()).into_iter().find_map(|op| match op {
            Op::GateAsk(g) => Some(g),
            _ => None,
        });
        let gate = gate.expect("a gate");
        assert!(gate.question.ends_with('?'), "{}", gate.question);
        gate.check().expect("a question the kernel takes");
    }

    #[test]
    fn unchecked_changes_say_why_and_write_nothing() {
        let agent: AgentName = "exec".parse().expect("a name");
        let changes = SliceChanges {
            unchecked: Some("the project is not in a git work tree".into()),
            ..SliceChanges::default()
        };
        assert!(ops(&finished(&agent, &changes).finished()).is_empty());
        assert_eq!(
            changes_line(&changes),
            "changes: not checked (the project is not in a git work tree)\n"
        );
        assert_eq!(
            named(&["a", "b", "c", "d", "e", "f", "g"]),
            "a, b, c, d, e and 2 more"
        );
    }
}
