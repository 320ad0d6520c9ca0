//! Whether a slice that reported `progress` moved anything a person could see.
//!
//! A report's word is not progress. A shell agent whose every write the sandbox refused
//! reported `progress` after each try: 1,341 slices in two minutes, and the stall guard never
//! fired, because a `progress` outcome ended its streak. So the supervisor, which sees the
//! tree, checks the word against facts before the slice is recorded: a change in the slice's
//! work tree (or its todo's worktree, commits included), evidence of the agent's own (in its
//! report block or through `loopx report`), a todo it proposed, a question it asked, a
//! handoff it wrote through `loopx report handoff`. Outside git the change is the goal's scope
//! walked before and after the slice (`loopx_git::walk`: size, time, and content where those
//! changed). A `progress` slice with none of these is
//! recorded `unchanged`: it counts toward the stall guard like a slice without a report, and
//! its todo rests (`docs/design/classification.md`).
//!
//! The handoff loopx writes from every report block's summary does not count on its own: an
//! agent's words change for free from one slice to the next. A tree loopx cannot check (git
//! failed, or a scope past the walk's bounds) is not held against the agent: its word stands,
//! and the goal's budget bounds what it spends.

use loopx_adapters::{Classification, Outcome};

use super::{ChannelReports, Judged};
use loopx_git::scope::SliceChanges;

/// What a slice left that a person could see, in a few words; `None` when nothing.
pub fn what_moved(
    changes: &SliceChanges,
    classification: Option<&Classification>,
    channel: ChannelReports,
) -> Option<String> {
    // Outside git the goal's scope was walked instead (`loopx_git::walk`).
    let files = match (&changes.unchecked, &changes.walked) {
        (None, _) => &changes.files,
        (Some(_), Some(Ok(walked))) => walked,
        (Some(why), Some(Err(walk))) => {
            return Some(format!("its tree could not be checked ({why}; {walk})"));
        }
        (Some(why), None) => return Some(format!("its tree could not be checked ({why})")),
    };
    if !files.is_empty() {
        let n = files.len();
        return Some(format!("{n} file{} changed", if n == 1 { "" } else { "s" }));
    }
    if channel.items > 0 {
        return Some(format!(
            "{} item(s) written with `loopx report`",
            channel.items
        ));
    }
    let report = classification.and_then(|c| c.report.as_ref()?.as_ref().ok());
    match report {
        Some(r) if !r.evidence.is_empty() => Some("evidence in its report".to_owned()),
        Some(r) if !r.next_todos.is_empty() => Some("todos proposed in its report".to_owned()),
        Some(r) if r.question.is_some() => Some("a question in its report".to_owned()),
        _ => None,
    }
}

/// A `progress` slice that moved nothing becomes `unchanged`, with the reason saying so.
/// Every other outcome stands as judged.
pub fn check(judged: &mut Judged, changes: &SliceChanges, channel: ChannelReports) {
    if judged.outcome != Outcome::Progress {
        return;
    }
    if what_moved(changes, judged.classification.as_ref(), channel).is_some() {
        // Its word stands where the walk could not compare: a person hears why.
        if let Some(Err(walk)) = &changes.walked {
            judged.reason = format!("{}; its scope was not compared ({walk})", judged.reason);
        }
        return;
    }
    judged.outcome = Outcome::Unchanged;
    judged.reason = format!(
        "{}; but nothing a person could see moved: no file changed, and no evidence, todo or question of its own",
        judged.reason
    );
}

/// A slice without a report block whose agent reported done through `loopx report done` (the
/// slice's channel) did report: its reason says so and by which channel, where it said `no
/// report block` (read as no report in the run's line, the slice record and the handoff).
pub fn name_channel(judged: &mut Judged, channel: ChannelReports) {
    if !channel.done {
        return;
    }
    // What the slice's end added after it (a log cut short) stays.
    judged.reason = judged.reason.replacen(
        loopx_adapters::NO_REPORT_BLOCK,
        "; it reported done through `loopx report`",
        1,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopx_adapters::{Report, ReportEvidence, ReportStatus};

    fn judged(report: Option<Report>) -> Judged {
        let classification = Classification {
            outcome: Outcome::Progress,
            reason: "the agent reports progress".to_owned(),
            report: report.map(Ok),
            question: None,
            limit: None,
            done: false,
        };
        Judged {
            outcome: Outcome::Progress,
            reason: classification.reason.clone(),
            leftovers: 0,
            exit: Some("exit 0".to_owned()),
            classification: Some(classification),
            disk_full: None,
        }
    }

    fn progress(evidence: Vec<ReportEvidence>) -> Report {
        Report {
            status: ReportStatus::Progress,
            summary: "working on it".to_owned(),
            evidence,
            handoff: Some("carry on".to_owned()),
            next_todos: vec![],
            question: None,
            propose_goal: None,
            drop_todos: vec![],
            rewrite_todos: vec![],
            metrics: None,
        }
    }

    fn checked() -> SliceChanges {
        SliceChanges::default()
    }

    #[test]
    fn a_progress_report_that_moved_nothing_is_unchanged() {
        let mut j = judged(Some(progress(vec![])));
        check(&mut j, &checked(), ChannelReports::default());
        assert_eq!(j.outcome, Outcome::Unchanged);
        assert!(
            j.reason.contains("nothing a person could see moved"),
            "{}",
            j.reason
        );
    }

    #[test]
    fn a_changed_file_evidence_or_a_channel_item_is_progress() {
        let mut changed = checked();
        changed.files = vec!["src/lib.rs".to_owned()];
        let mut j = judged(Some(progress(vec![])));
        check(&mut j, &changed, ChannelReports::default());
        assert_eq!(j.outcome, Outcome::Progress);

        let evidence = ReportEvidence {
            kind: Some("test".to_owned()),
            summary: "cargo test: 12 passed".to_owned(),
        };
        let mut j = judged(Some(progress(vec![evidence])));
        check(&mut j, &checked(), ChannelReports::default());
        assert_eq!(j.outcome, Outcome::Progress);

        let mut j = judged(Some(progress(vec![])));
        let wrote = ChannelReports {
            done: false,
            items: 1,
        };
        check(&mut j, &checked(), wrote);
        assert_eq!(j.outcome, Outcome::Progress);
    }

    #[test]
    fn outside_git_a_walk_of_the_scope_that_found_no_change_is_unchanged() {
        let mut walked = checked();
        walked.unchecked = Some("not a git repository".to_owned());
        walked.walked = Some(Ok(vec![]));
        let mut j = judged(Some(progress(vec![])));
        check(&mut j, &walked, ChannelReports::default());
        assert_eq!(j.outcome, Outcome::Unchanged);
        walked.walked = Some(Ok(vec!["app.py".to_owned()]));
        let mut j = judged(Some(progress(vec![])));
        check(&mut j, &walked, ChannelReports::default());
        assert_eq!(j.outcome, Outcome::Progress);
        walked.walked = Some(Err("more than 10000 files in the goal's scope".to_owned()));
        let mut j = judged(Some(progress(vec![])));
        check(&mut j, &walked, ChannelReports::default());
        assert_eq!(j.outcome, Outcome::Progress);
        assert!(
            j.reason.ends_with(
                "its scope was not compared (more than 10000 files in the goal's scope)"
            ),
            "{}",
            j.reason
        );
    }

    #[test]
    fn a_tree_that_cannot_be_checked_keeps_the_agent_s_word() {
        let mut unchecked = checked();
        unchecked.unchecked = Some("not a git repository".to_owned());
        let mut j = judged(Some(progress(vec![])));
        check(&mut j, &unchecked, ChannelReports::default());
        assert_eq!(j.outcome, Outcome::Progress);
    }
}
