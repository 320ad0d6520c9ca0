//! What a worktree goal's landing writes: the todo's `land` evidence, and the gate that asks a
//! person to rebase or drop a branch that conflicts with the goal's.

use loopx_git::worktree::Prepared;
use loopx_kernel::TodoId;
use loopx_kernel::limits::{self, bounded, clip};
use loopx_kernel::model::{Blocks, EvidenceKind, GateKind};
use loopx_kernel::store::{NewGate, Op};

use super::{Finished, evidence};

/// What a worktree goal's landing writes (its evidence, a gate for a conflict), and whether
/// the todo landed. `wants` says whether it was asked to (the agent said done, nothing to
/// roll back).
pub(super) fn landing_ops(f: &Finished<'_>, tree: &Prepared, wants: bool) -> (Vec<Op>, bool) {
    use loopx_git::worktree::{Landing, short};
    let Some(todo) = f.record.todo else {
        return (Vec::new(), true);
    };
    let into = &loopx_git::worktree::integration_branch(tree.tree.goal);
    let Some(landing) = f.landing.as_ref().filter(|_| wants) else {
        return (Vec::new(), false);
    };
    let land = |summary: String, detail: String| {
        Op::EvidenceAdd(evidence(f, EvidenceKind::Land, &summary, &detail))
    };
    match landing {
        Landing::Landed {
            commit,
            commits,
            files,
        } => {
            let summary = format!(
                "{todo} landed on {into} as {}: {commits} commit{}, {} file{}",
                short(commit),
                if *commits == 1 { "" } else { "s" },
                files.len(),
                if files.len() == 1 { "" } else { "s" },
            );
            let detail = format!(
                "merge commit {commit}\nfiles:\n{}",
                files.iter().map(|p| format!("  {p}\n")).collect::<String>()
            );
            (vec![land(summary, detail)], true)
        }
        Landing::Empty => (
            vec![land(
                format!("{todo} had nothing new to land: its branch is on {into} already"),
                String::new(),
            )],
            true,
        ),
        Landing::Conflict { files, with } => (conflict(f, todo, into, files, with), false),
        Landing::CheckFailed { how, output } => {
            let summary = format!("{todo} did not land: the land check {how}");
            let detail = format!(
                "The project's `[land] check` ran on {todo}'s branch merged with {into} and {how}; \
                 {todo} stays open, and its next slice sees this.\n\n{}",
                tail(output, limits::DETAIL / 2)
            );
            (vec![land(summary, bounded(&detail, limits::DETAIL))], false)
        }
        Landing::Failed(why) => (
            vec![land(
                format!("{todo} could not land on {into}"),
                bounded(why, limits::DETAIL),
            )],
            false,
        ),
    }
}

/// A branch that conflicts: the land evidence, and the gate that asks whether to rebase the
/// todo on the goal branch or drop it.
fn conflict(
    f: &Finished<'_>,
    todo: TodoId,
    into: &str,
    files: &[String],
    with: &[TodoId],
) -> Vec<Op> {
    let named = files
        .iter()
        .take(3)
        .map(|p| clip(p, 80))
        .collect::<Vec<_>>()
        .join(", ");
    let more = match files.len() {
        0..=3 => String::new(),
        n => format!(" and {} more", n - 3),
    };
    let peers = match with {
        [] => format!("the goal's branch {into}"),
        todos => todos
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" and "),
    };
    let summary = format!("{todo}'s branch conflicts with {peers} in {named}{more}");
    let question = bounded(
        &format!(
            "{todo}'s branch conflicts with {peers} in {named}{more}: rebase {todo} on the goal branch, or drop {todo}?"
        ),
        limits::QUESTION,
    );
    let context = format!(
        "{todo} was done by its agent, but its branch {} does not merge cleanly into \
         {into}.\nrebase: loopx merges {into} into {todo}'s branch before its next slice, \
         conflict markers and all, and that slice resolves them and reports done again.\n\
         drop: {todo} is dropped; its branch stays for you to look at.\n\
         conflicting files:\n{}",
        loopx_git::worktree::todo_branch_of(into, todo),
        files.iter().map(|p| format!("  {p}\n")).collect::<String>()
    );
    let gate = NewGate {
        question,
        options: loopx_kernel::model::LAND_OPTIONS
            .iter()
            .map(|o| (*o).to_owned())
            .collect(),
        context: bounded(&context, limits::DETAIL),
        blocks: Blocks::Todos(vec![todo]),
        kind: GateKind::Land { todo },
    };
    vec![
        Op::EvidenceAdd(evidence(f, EvidenceKind::Land, &summary, &context)),
        Op::GateAsk(gate),
    ]
}

/// The last `max` bytes of `text`, at a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
