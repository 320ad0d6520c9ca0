//! Evidence and handoffs a person (or a script outside any slice) records, and reading them.
//! Files named as evidence are pinned by their content when recorded.

use std::io::Read;
use std::path::{Path, PathBuf};

use loopx_adapters::EvidenceRules;
use loopx_domain::freshness::Freshness;
use loopx_kernel::model::{Evidence, EvidenceKind, FileRef, Handoff};
use loopx_kernel::store::{NewEvidence, NewHandoff};
use loopx_kernel::{Invalid, KernelError, SliceId, Snapshot, Timestamp, TodoId};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::{App, AppError, UsageError};

/// Evidence to record. Files are pinned by content; paths inside the project are shown
/// relative to it.
#[derive(Debug, Clone)]
pub struct AddEvidence {
    pub kind: EvidenceKind,
    pub summary: String,
    pub detail: String,
    pub files: Vec<PathBuf>,
    pub todo: Option<TodoId>,
    /// The claim it is recorded under, when an agent records it by hand.
    pub epoch: Option<u64>,
    /// A metric's unit (`%`): only with kind `metric`.
    pub unit: Option<String>,
}

/// The summary and measurement of evidence of `kind` written as `text`: for `metric`, text
/// that begins `NAME=VALUE` (words after it are a note: `accuracy=0.913 on the held-out
/// set`), shown as `accuracy = 0.913 % — on the held-out set`; any other kind is its text and
/// takes no unit. What `evidence add` and `report evidence` both read.
pub fn measured(
    kind: EvidenceKind,
    text: &str,
    unit: Option<&str>,
) -> Result<(String, Option<loopx_vocab::Metric>), UsageError> {
    if kind != EvidenceKind::Metric {
        return match unit {
            Some(_) => Err(UsageError::UnitWithoutMetric),
            None => Ok((text.to_owned(), None)),
        };
    }
    let text = text.trim();
    let (name, after) = text.split_once('=').unwrap_or((text, ""));
    let after = after.trim_start();
    let (value, note) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
    let pair = match text.contains('=') {
        true => format!("{name}={value}"),
        false => text.to_owned(),
    };
    let metric = loopx_vocab::Metric::parse(&pair, unit)?;
    let summary = match note.trim() {
        "" => metric.to_string(),
        note => format!("{metric} — {note}"),
    };
    Ok((summary, Some(metric)))
}

/// Evidence or a handoff as every surface shows it: with whether it still holds
/// (`evidence list --json`, `handoff --json`, `status --json`, the board). The record's own
/// fields come first, flattened.
#[derive(Debug, Clone, Serialize)]
pub struct Judged<T> {
    #[serde(flatten)]
    pub item: T,
    pub stale: bool,
    /// Why it is stale, in a few words (`src/lib.rs changed since it was recorded`).
    pub stale_reason: Option<String>,
}

impl<T> Judged<T> {
    fn new(item: T, stale_reason: Option<String>) -> Self {
        Judged {
            item,
            stale: stale_reason.is_some(),
            stale_reason,
        }
    }
}

pub type JudgedEvidence = Judged<Evidence>;
pub type JudgedHandoff = Judged<Handoff>;

/// Judges evidence the one way (`loopx_domain::freshness`) for a read of the store.
#[derive(Debug)]
pub struct EvidenceJudge {
    project: loopx_kernel::Project,
    rules: EvidenceRules,
    now: Timestamp,
}

impl EvidenceJudge {
    /// Each of `evidence`, judged; the tree is read once however many there are.
    pub fn all(
        &self,
        s: &Snapshot<'_>,
        evidence: Vec<Evidence>,
    ) -> Result<Vec<JudgedEvidence>, KernelError> {
        let mut judge = Freshness::new(&self.project, &self.rules, self.now);
        evidence
            .into_iter()
            .map(|evidence| {
                let stale = judge.stale(s, &evidence)?;
                Ok(Judged::new(evidence, stale))
            })
            .collect()
    }

    /// The judgement itself, for a caller that judges many pieces one by one (the tree is
    /// read once however many there are).
    pub fn freshness(&self) -> Freshness<'_> {
        Freshness::new(&self.project, &self.rules, self.now)
    }

    /// A handoff, judged: whether its todo or goal changed since it was written.
    pub fn handoff(
        &self,
        s: &Snapshot<'_>,
        handoff: Handoff,
    ) -> Result<JudgedHandoff, KernelError> {
        let stale = Freshness::new(&self.project, &self.rules, self.now).handoff(s, &handoff)?;
        Ok(Judged::new(handoff, stale))
    }
}

/// A handoff to write: what was done, what is next, the files and the open questions.
#[derive(Debug, Clone)]
pub struct WriteHandoff {
    pub todo: Option<TodoId>,
    pub epoch: Option<u64>,
    pub done: String,
    pub next: String,
    pub files: Vec<String>,
    pub questions: Vec<String>,
}

impl App {
    pub fn add_evidence(&self, add: AddEvidence) -> Result<Evidence, AppError> {
        let (summary, metric) = measured(add.kind, &add.summary, add.unit.as_deref())?;
        let files = file_refs(self.root(), &add.files)?;
        let work = self.read(|s| {
            Ok(loopx_domain::freshness::mark_for(
                self.project(),
                s,
                add.kind,
                add.todo,
            ))
        })?;
        self.run(NewEvidence {
            epoch: add.epoch,
            kind: add.kind,
            summary,
            detail: add.detail,
            files,
            todo: add.todo,
            slice: self.slice_id(),
            work,
            metric,
        })
    }

    /// The newest evidence, of one todo or of all.
    pub fn evidence(&self, todo: Option<TodoId>, limit: usize) -> Result<Vec<Evidence>, AppError> {
        self.read(|s| s.evidence_newest(limit, |e| todo.is_none() || e.todo == todo))
    }

    /// The newest evidence, each judged fresh or stale against the tree as it is now
    /// (`docs/goals.md`, "Evidence that ages").
    pub fn evidence_judged(
        &self,
        todo: Option<TodoId>,
        limit: usize,
    ) -> Result<Vec<JudgedEvidence>, AppError> {
        let judge = self.evidence_judge(self.evidence_rules()?);
        self.read(|s| {
            judge.all(
                s,
                s.evidence_newest(limit, |e| todo.is_none() || e.todo == todo)?,
            )
        })
    }

    /// A judge of evidence under `rules`, as things are now.
    pub fn evidence_judge(&self, rules: EvidenceRules) -> EvidenceJudge {
        EvidenceJudge {
            project: self.project().clone(),
            rules,
            now: self.now(),
        }
    }

    pub fn write_handoff(&self, write: WriteHandoff) -> Result<Handoff, AppError> {
        self.run(NewHandoff {
            epoch: write.epoch,
            todo: write.todo,
            done: write.done,
            next: write.next,
            files: write.files,
            questions: write.questions,
            slice: self.slice_id(),
        })
    }

    /// The latest handoff, of one todo (which must exist) or of all, judged.
    pub fn latest_handoff(&self, todo: Option<TodoId>) -> Result<Option<JudgedHandoff>, AppError> {
        let judge = self.evidence_judge(self.evidence_rules().unwrap_or_default());
        self.read(|s| {
            if let Some(t) = todo
                && s.todo(t)?.is_none()
            {
                return Err(Invalid::NotFound {
                    what: "todo",
                    id: t.to_string(),
                }
                .into());
            }
            s.latest_handoff(todo)?
                .map(|h| judge.handoff(s, h))
                .transpose()
        })
    }

    /// The caller's slice, when it names a well-formed one.
    fn slice_id(&self) -> Option<SliceId> {
        self.caller().slice.as_deref().and_then(|s| s.parse().ok())
    }
}

/// Pins every file by its content.
pub fn file_refs(root: &Path, files: &[PathBuf]) -> Result<Vec<FileRef>, AppError> {
    files.iter().map(|f| file_ref(root, f)).collect()
}

/// Pins a file by its content: path relative to the project when inside it, size and sha256.
fn file_ref(root: &Path, path: &Path) -> Result<FileRef, AppError> {
    let unreadable = |why| UsageError::Unreadable {
        path: path.to_owned(),
        why,
    };
    let mut file = loopx_adapters::open_regular(path).map_err(unreadable)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(unreadable)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    let absolute = std::path::absolute(path).map_err(unreadable)?;
    let shown = absolute
        .strip_prefix(root)
        .unwrap_or(&absolute)
        .display()
        .to_string();
    Ok(FileRef {
        path: shown,
        sha256: hex::encode(hasher.finalize()),
        bytes,
    })
}
