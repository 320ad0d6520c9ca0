//! How records age: the mark of the work tree evidence records, the files a `diff` item
//! lists, and what a handoff saw of its todo (`docs/goals.md`, "Evidence that ages" and
//! "Handoffs and answers that age"). Judging them against the tree is the supervisor's
//! (`loopx_domain::freshness`); what they record and compare without I/O is here.

use serde::{Deserialize, Serialize};

use super::revision;
use crate::model::{Evidence, EvidenceKind, Handoff, Todo};

impl Evidence {
    /// The files a `diff` item lists, as [`diff_detail`] wrote them; none for another kind.
    pub fn diff_files(&self) -> impl Iterator<Item = &str> {
        let listed = match self.kind {
            EvidenceKind::Diff => self.detail.strip_prefix(DIFF_FILES),
            _ => None,
        };
        listed
            .unwrap_or_default()
            .lines()
            .map_while(|l| l.strip_prefix("  "))
    }
}

/// How a `diff` item's detail starts: its files come first.
const DIFF_FILES: &str = "files:\n";

/// The detail of a `diff` item: every changed file, one indented a line, then the `git diff
/// --stat` ([`Evidence::diff_files`] reads the files back: what a narrowed scope checks). The
/// files come first, so that a detail clipped to its limit loses the stat, not them.
pub fn diff_detail(stat: &str, files: &[String]) -> String {
    let listed: String = files.iter().map(|f| format!("  {f}\n")).collect();
    format!("{DIFF_FILES}{listed}\n{}", stat.trim_end())
}

/// The state of a work tree when evidence about it was recorded: what `loopx evidence list`
/// compares with the tree as it is now to tell whether the evidence went stale
/// (`docs/goals.md`, "Evidence that ages").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkMark {
    /// The commit checked out (`HEAD`); `None` before the first commit.
    pub commit: Option<String>,
    /// Files that differed from it, project-relative, each with the git blob id of its
    /// content (empty: deleted).
    pub dirty: Vec<(String, String)>,
    /// More files differed than were recorded (`WorkMark::MAX_DIRTY`): a change to any file
    /// not listed may be one of them.
    pub overflow: bool,
}

impl WorkMark {
    /// At most this many uncommitted files are recorded with one piece of evidence.
    pub const MAX_DIRTY: usize = 200;
}

/// A todo's words as a handoff about it saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoSeen {
    pub title: String,
    pub priority: i32,
    /// SHA-256 of the detail, hex.
    pub detail_sha256: String,
}

impl TodoSeen {
    pub fn of(todo: &Todo) -> TodoSeen {
        TodoSeen {
            title: todo.title.clone(),
            priority: todo.priority,
            detail_sha256: revision::text_digest(&todo.detail),
        }
    }
}

impl Handoff {
    /// What changed since it was written, in a few words (`the todo's priority (2 → 5); the
    /// goal (revision 1 → 2)`); `None` while nothing did. `todo` is its todo as it is now,
    /// `goal_revision` the revision its goal is at now.
    pub fn changed_since(&self, todo: Option<&Todo>, goal_revision: u32) -> Option<String> {
        let mut what = Vec::new();
        if let (Some(seen), Some(todo)) = (&self.seen, todo) {
            if seen.title != todo.title {
                what.push(format!("the todo's title (was \"{}\")", seen.title));
            }
            if seen.detail_sha256 != revision::text_digest(&todo.detail) {
                what.push("the todo's detail".to_owned());
            }
            if seen.priority != todo.priority {
                what.push(format!(
                    "the todo's priority ({} → {})",
                    seen.priority, todo.priority
                ));
            }
        }
        if self.revision > 0 && self.revision < goal_revision {
            what.push(format!(
                "the goal (revision {} → {goal_revision})",
                self.revision
            ));
        }
        (!what.is_empty()).then(|| format!("written before {} changed", what.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_item_gives_back_the_files_it_listed_and_another_kind_none() {
        let files = vec!["src/a b.rs".to_owned(), "proto/api.proto".to_owned()];
        let mut e = Evidence {
            id: crate::ids::EvidenceId(1),
            kind: EvidenceKind::Diff,
            summary: "slice s1 changed 2 files".into(),
            // A stat line that looks like a listed file is not one.
            detail: diff_detail("  files:\n 2 files changed\n", &files),
            files: vec![],
            todo: None,
            slice: None,
            actor: "agent:a".into(),
            at: crate::time::Timestamp(0),
            revision: 1,
            work: None,
            metric: None,
        };
        assert_eq!(e.diff_files().collect::<Vec<_>>(), files);
        e.kind = EvidenceKind::Note;
        assert_eq!(e.diff_files().count(), 0);
    }
}
