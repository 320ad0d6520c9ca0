//! What an agent may write from inside its slice, and under whose name it is written.
//!
//! An agent's `loopx report …` does not open the store (inside its sandbox the store is out of
//! reach). It sends an [`AgentReport`] over its slice's channel; the supervisor that runs the
//! slice checks that the sender is a process of that slice, and writes the report as a
//! [`Reporter`] it built itself from the slice's record. Nothing the agent sends names a slice,
//! an agent, a todo or an epoch, so nothing it can set makes it another slice.

use serde::{Deserialize, Serialize};

use crate::errors::KernelError;
use crate::model::{Blocks, Evidence, EvidenceKind, FileRef, Gate, GateKind, Handoff, Todo};
use crate::store::{Applied, NewEvidence, NewGate, NewHandoff, NewTodo};
use crate::{AgentName, Op, SliceId, TodoId};

/// The variable naming the slice's channel in the agent's environment.
pub const SOCKET_VAR: &str = "LOOPX_REPORT_SOCKET";

/// Longest request a channel reads: a report is text an agent wrote, bounded by the kernel's
/// own limits well below this.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// One report, as `loopx report` sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "report", rename_all = "snake_case", deny_unknown_fields)]
pub enum AgentReport {
    /// `loopx report evidence KIND TEXT`.
    Evidence {
        kind: EvidenceKind,
        summary: String,
        detail: String,
        files: Vec<FileRef>,
        /// `loopx report evidence metric NAME=VALUE`: the measurement.
        #[serde(default)]
        metric: Option<crate::model::Metric>,
    },
    /// `loopx report handoff`.
    Handoff {
        done: String,
        next: String,
        files: Vec<String>,
        questions: Vec<String>,
    },
    /// `loopx report todo TITLE`: with `monitor`, a check loopx polls (never with a profile:
    /// an agent's check runs read-only in the sandbox).
    Todo {
        title: String,
        detail: String,
        priority: i32,
        role: Option<String>,
        #[serde(default)]
        after: Vec<TodoId>,
        #[serde(default)]
        monitor: Option<crate::model::MonitorWords>,
        #[serde(default)]
        not_before: Option<crate::time::Timestamp>,
    },
    /// `loopx report ask QUESTION`.
    Ask {
        question: String,
        options: Vec<String>,
        context: String,
    },
    /// `loopx report done`.
    Done { summary: Option<String> },
    /// `loopx report propose-goal`: a change to the goal, for a person to accept.
    ProposeGoal {
        objective: Option<String>,
        #[serde(default)]
        scope: Vec<String>,
        why: String,
    },
}

/// The slice a report is written for, as the supervisor knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reporter {
    pub slice: SliceId,
    pub agent: AgentName,
    /// The slice's todo and the epoch of its claim.
    pub claim: Option<(TodoId, u64)>,
}

/// What a report wrote, sent back to `loopx report` to print.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reported {
    Evidence(Evidence),
    Handoff(Handoff),
    Todo(Todo),
    Gate(Gate),
}

/// Why a report was not written, with the class of error `loopx report` exits with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportRefused {
    pub message: String,
    /// What kind of refusal it is: the CLI's exit code comes from it.
    pub class: loopx_vocab::ErrorClass,
}

/// The channel's one answer per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportReply {
    Written(Box<Reported>),
    Refused(ReportRefused),
}

impl ReportRefused {
    /// A refusal with the class of `err`.
    pub fn from_kernel(err: &KernelError) -> ReportRefused {
        ReportRefused {
            message: err.to_string(),
            class: err.class(),
        }
    }

    /// A refusal of the request itself.
    pub fn usage(message: impl Into<String>) -> ReportRefused {
        ReportRefused {
            message: message.into(),
            class: loopx_vocab::ErrorClass::Usage,
        }
    }
}

impl Reporter {
    /// `agent:<name>`, the actor its writes are recorded under.
    pub fn actor(&self) -> String {
        loopx_vocab::actor::agent(self.agent.as_str())
    }

    fn todo(&self) -> Option<TodoId> {
        self.claim.map(|(t, _)| t)
    }

    fn epoch(&self) -> Option<u64> {
        self.claim.map(|(_, e)| e)
    }

    fn evidence(&self, kind: EvidenceKind, summary: String, detail: String) -> NewEvidence {
        NewEvidence {
            kind,
            summary,
            detail,
            files: vec![],
            todo: self.todo(),
            slice: Some(self.slice),
            epoch: self.epoch(),
            work: None,
            metric: None,
        }
    }

    /// The kernel batch for `report`: the slice's guard ([`Op::InSlice`]: running, this agent,
    /// still holding its claim) first, then the writes, all under this slice's identity.
    pub fn batch(&self, report: AgentReport) -> Result<Vec<Op>, ReportRefused> {
        let in_slice = Op::InSlice {
            slice: self.slice,
            agent: self.agent.clone(),
            todo: self.todo(),
            epoch: self.epoch(),
        };
        let op = match report {
            AgentReport::Evidence {
                kind,
                summary,
                detail,
                files,
                metric,
            } => self.reported_evidence(kind, summary, detail, files, metric)?,
            AgentReport::Handoff {
                done,
                next,
                files,
                questions,
            } => Op::HandoffAdd(NewHandoff {
                todo: self.todo(),
                epoch: self.epoch(),
                done,
                next,
                files,
                questions,
                slice: Some(self.slice),
            }),
            AgentReport::Todo {
                title,
                detail,
                priority,
                role,
                after,
                monitor,
                not_before,
            } => Op::TodoAdd(NewTodo {
                title,
                detail,
                priority,
                role,
                after,
                monitor: monitor
                    .map(|words| crate::model::MonitorSpec::from_words(&words, None))
                    .transpose()
                    .map_err(|e| ReportRefused::usage(e.to_string()))?,
                not_before,
                ..NewTodo::default()
            }),
            AgentReport::Ask {
                question,
                options,
                context,
            } => Op::GateAsk(NewGate {
                question,
                options,
                context: self.ask_context(context),
                blocks: match self.todo() {
                    Some(todo) => Blocks::Todos(vec![todo]),
                    None => Blocks::Agent(self.agent.clone()),
                },
                kind: GateKind::Question,
            }),
            AgentReport::ProposeGoal {
                objective,
                scope,
                why,
            } => Op::GateAsk(goal_proposal(
                objective,
                scope,
                why,
                &self.ask_context(String::new()),
            )),
            AgentReport::Done { summary } => self.done_note(summary)?,
        };
        Ok(vec![in_slice, op])
    }

    /// Evidence the agent reports: of the kinds an agent may report.
    fn reported_evidence(
        &self,
        kind: EvidenceKind,
        summary: String,
        detail: String,
        files: Vec<crate::model::FileRef>,
        metric: Option<crate::model::Metric>,
    ) -> Result<Op, ReportRefused> {
        if !kind.agent_may_report() {
            return Err(ReportRefused::usage(format!(
                "evidence of kind `{}` is loopx's own; an agent reports test, diff, note, artifact or metric",
                kind.as_str()
            )));
        }
        let mut new = self.evidence(kind, summary, detail);
        new.files = files;
        new.metric = metric;
        Ok(Op::EvidenceAdd(new))
    }

    /// `done` of the slice's todo, as a note: the slice's end finishes the todo.
    fn done_note(&self, summary: Option<String>) -> Result<Op, ReportRefused> {
        let Some((todo, _)) = self.claim else {
            return Err(ReportRefused::usage(format!(
                "slice {} has no todo, so there is nothing to mark done\n(hint: a planning slice proposes work with `loopx report todo \"TITLE\"`)",
                self.slice
            )));
        };
        // Recorded as a note: the slice's end finishes the todo, once its changes pass
        // the scope check (and, in a worktree goal, its branch lands). A todo marked
        // done now would let work that depends on it go ahead before the check.
        let said = summary
            .filter(|s| !s.trim().is_empty())
            .map(|s| format!(": {}", s.trim()))
            .unwrap_or_default();
        Ok(Op::EvidenceAdd(
            self.evidence(
                EvidenceKind::Note,
                format!("the agent reported {todo} done{said}"),
                "it is finished as the slice ends, once its changes pass the scope check \
             (and, in a worktree goal, its branch lands)"
                    .to_owned(),
            ),
        ))
    }

    /// The person's context, then who asked and where.
    fn ask_context(&self, context: String) -> String {
        let on = self.todo().map(|t| format!(" on {t}")).unwrap_or_default();
        let asked = format!("asked by `{}` in slice {}{on}", self.agent, self.slice);
        if context.trim().is_empty() {
            asked
        } else {
            format!("{}\n\n{asked}", context.trim_end())
        }
    }
}

impl Reported {
    /// The record the last write of a report's batch yielded.
    pub fn from_applied(applied: Applied) -> Option<Reported> {
        match applied {
            Applied::Evidence(e) => Some(Reported::Evidence(e)),
            Applied::Handoff(h) => Some(Reported::Handoff(h)),
            Applied::Todo(t) => Some(Reported::Todo(t)),
            Applied::Gate(g) => Some(Reported::Gate(g)),
            _ => None,
        }
    }
}

/// An agent's proposal to amend the goal, as a gate to ask: the kernel fills in the goal, the
/// question, the options and the current text (`store/apply/amend.rs`); `asked` says who
/// proposed it and where. The report block's `propose_goal` and `loopx report propose-goal`
/// both make it.
pub fn goal_proposal(
    objective: Option<String>,
    scope: Vec<String>,
    why: String,
    asked: &str,
) -> NewGate {
    NewGate {
        question: String::new(),
        options: Vec::new(),
        context: asked.to_owned(),
        blocks: Blocks::Nothing,
        kind: GateKind::GoalProposal {
            goal: crate::ids::GoalId(0),
            revision: 0,
            objective,
            scope: (!scope.is_empty()).then_some(scope),
            why,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reporter() -> Reporter {
        Reporter {
            slice: SliceId(7),
            agent: "exec".parse().expect("a valid name"),
            claim: Some((TodoId(3), 2)),
        }
    }

    #[test]
    fn done_is_a_note_and_leaves_the_todo_to_the_slice_s_end() {
        let ops = reporter()
            .batch(AgentReport::Done {
                summary: Some("retries added".into()),
            })
            .expect("a batch");
        assert!(
            !ops.iter().any(|op| matches!(op, Op::TodoFinish(_))),
            "{ops:?}"
        );
        let Some(Op::EvidenceAdd(note)) = ops.last() else {
            panic!("a note: {ops:?}")
        };
        assert_eq!(note.summary, "the agent reported t3 done: retries added");
    }

    #[test]
    fn every_write_carries_the_slice_s_own_identity() {
        let ops = reporter()
            .batch(AgentReport::Done {
                summary: Some("tests pass".into()),
            })
            .expect("a todo's slice may finish it");
        let Op::InSlice {
            slice,
            agent,
            todo,
            epoch,
        } = &ops[0]
        else {
            panic!("the guard comes first: {ops:?}")
        };
        assert_eq!(
            (slice.0, agent.as_str(), *todo, *epoch),
            (7, "exec", Some(TodoId(3)), Some(2))
        );
        let Some(Op::EvidenceAdd(note)) = ops.last() else {
            panic!("a note: {ops:?}")
        };
        assert_eq!((note.slice, note.todo), (Some(SliceId(7)), Some(TodoId(3))));
    }

    #[test]
    fn loopx_s_own_evidence_kinds_are_refused() {
        let refused = reporter()
            .batch(AgentReport::Evidence {
                kind: EvidenceKind::Violation,
                summary: "all clear".into(),
                detail: String::new(),
                files: vec![],
                metric: None,
            })
            .expect_err("violation evidence is loopx's");
        assert_eq!(refused.class, loopx_vocab::ErrorClass::Usage);
    }

    #[test]
    fn a_request_naming_a_slice_is_not_a_report() {
        let forged = r#"{"report":"done","summary":null,"slice":1,"agent":"victim"}"#;
        assert!(serde_json::from_str::<AgentReport>(forged).is_err());
    }
}
