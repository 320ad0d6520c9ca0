//! New evidence, and what the kernel refuses in any: a blank or too long text, too many files,
//! a file pinned by anything but its SHA-256, a measurement on evidence of another kind (or
//! none on `metric` evidence), a measurement of no todo's work.

use crate::errors::Invalid;
use crate::ids::{SliceId, TodoId};
use crate::limits;
use crate::model::{EvidenceKind, FileRef, Metric, WorkMark};

/// New evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvidence {
    pub kind: EvidenceKind,
    pub summary: String,
    pub detail: String,
    pub files: Vec<FileRef>,
    pub todo: Option<TodoId>,
    pub slice: Option<SliceId>,
    /// The epoch of the claim the writer works under: a stale one is refused.
    pub epoch: Option<u64>,
    /// The state of the work it speaks about, as the writer found it (the kernel sees no
    /// files); the goal's revision the kernel adds itself.
    pub work: Option<WorkMark>,
    /// The measurement: `metric` evidence has one, no other kind does.
    pub metric: Option<Metric>,
}

impl NewEvidence {
    /// What the kernel refuses in any new evidence: a blank or too long summary, a too long
    /// detail, too many files.
    pub fn check(&self) -> Result<(), Invalid> {
        limits::check_text(
            "summary",
            &self.summary,
            limits::SUMMARY,
            "; put the rest in --detail",
        )?;
        limits::check_len("detail", &self.detail, limits::DETAIL)?;
        match (&self.metric, self.kind == EvidenceKind::Metric) {
            // A measurement is of some todo's work, or of a slice's: else no goal's history
            // would show it, and no question compare it.
            (Some(_), true) if self.todo.is_none() && self.slice.is_none() => {
                return Err(Invalid::Other(
                    "a measurement is of a todo's work: name the todo (`--todo t3`)".to_owned(),
                ));
            }
            (Some(metric), true) => metric.check().map_err(|e| Invalid::Other(e.to_string()))?,
            (None, true) => {
                return Err(Invalid::Other(
                    "metric evidence needs its measurement: `loopx report evidence metric NAME=VALUE`"
                        .to_owned(),
                ));
            }
            (Some(_), false) => {
                return Err(Invalid::Other(format!(
                    "{} evidence carries no measurement: record it as `metric`",
                    self.kind
                )));
            }
            (None, false) => {}
        }
        if self.files.len() > limits::LIST_ITEMS {
            return Err(Invalid::TooLong {
                field: "files",
                len: self.files.len(),
                max: limits::LIST_ITEMS,
                hint: "",
            });
        }
        // A pin is compared with the file's content later: one that is no SHA-256 could never
        // match, and is a report written by hand, not by `loopx report`.
        for f in &self.files {
            let hex = f.sha256.len() == 64
                && f.sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex || f.path.trim().is_empty() {
                return Err(Invalid::Other(format!(
                    "evidence file `{}` is pinned by `{}`, which is no SHA-256 (64 lowercase hex digits)\n(hint: name the file with `--file PATH`: loopx pins it)",
                    limits::clip(&f.path, 80),
                    limits::clip(&f.sha256, 80)
                )));
            }
        }
        Ok(())
    }
}
