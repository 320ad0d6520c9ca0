//! The slice's report channel: the only way its agent writes into the kernel.
//!
//! A Unix socket in the slice's private room (`LOOPX_REPORT_SOCKET`). `loopx report` inside
//! the slice sends one [`AgentReport`] as a JSON line and reads one [`ReportReply`]. The
//! supervisor asks the kernel who connected (`SO_PEERCRED`, `LOCAL_PEERPID`) and accepts only a process whose
//! ancestry reaches the slice's own process; it writes the report under the slice's agent,
//! todo and epoch, never under anything the request says. A connection from outside the slice
//! (another slice's agent that found this socket) is refused, and recorded on this slice as
//! `violation` evidence, because someone tried to speak for it.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use loopx_kernel::model::EvidenceKind;
use loopx_kernel::report::{
    AgentReport, MAX_REQUEST_BYTES, ReportRefused, ReportReply, Reported, Reporter,
};
use loopx_kernel::store::NewEvidence;
use loopx_kernel::{Op, Project, SharedClock};

pub use loopx_domain::judge::ChannelReports;

use super::guard::{ACTOR, patience, retrying};

/// A listening channel; closed (and its thread joined) when dropped.
#[derive(Debug)]
pub(crate) struct Channel {
    path: PathBuf,
    /// The listening socket: shut down to wake the blocking accept.
    waker: UnixListener,
    stop: Arc<AtomicBool>,
    leader: Arc<AtomicU32>,
    /// The agent reported its todo done (`loopx report done`) and it was written.
    done: Arc<AtomicBool>,
    /// Todos, evidence, handoffs and questions written.
    items: Arc<AtomicU32>,
    thread: Option<JoinHandle<()>>,
}

/// What the serving thread needs.
struct Serving {
    project: Project,
    /// The supervisor's store handle, which reports are written through.
    stores: crate::store_cache::StoreCache,
    /// The tree the agent works in (the project's, or its todo's worktree): evidence about
    /// the work is recorded with a mark of it (`freshness.rs`).
    work: PathBuf,
    /// What reports may not store (`contain::slice_redactor`).
    redactor: loopx_kernel::Redactor,
    reporter: Reporter,
    clock: SharedClock,
    leader: Arc<AtomicU32>,
    done: Arc<AtomicBool>,
    items: Arc<AtomicU32>,
    /// Refused connections from outside the slice so far: only the first few are recorded, so
    /// a flood of them cannot flood the store.
    intrusions: u32,
    /// What the slice has written through the channel so far, against [`Budget`].
    spent: Budget,
    /// The budget ran out and the first refusal was recorded: later ones are only logged.
    overspent: bool,
}

/// What one slice may write through its channel: far more than a real agent writes in a
/// slice, and little enough that one slice cannot flood the store (a slice once added 100,000
/// todos in two minutes, and every `todo list` after it was 20 times slower).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Todos proposed (`loopx report todo`).
    pub(crate) todos: u32,
    /// Evidence items, handoffs and questions.
    pub(crate) items: u32,
    /// Bytes of accepted requests.
    pub(crate) bytes: u64,
}

/// The channel's budget per slice.
pub(crate) const SLICE_BUDGET: Budget = Budget {
    todos: 200,
    items: 1000,
    bytes: 4 << 20,
};

impl Budget {
    /// What `report` would spend, or why it is over the budget.
    fn spend(&self, report: &AgentReport, bytes: usize) -> Result<Budget, String> {
        let mut next = *self;
        next.bytes = next.bytes.saturating_add(bytes as u64);
        match report {
            AgentReport::Todo { .. } => next.todos += 1,
            AgentReport::Evidence { .. }
            | AgentReport::Handoff { .. }
            | AgentReport::Ask { .. }
            | AgentReport::ProposeGoal { .. } => {
                next.items += 1;
            }
            AgentReport::Done { .. } => {}
        }
        let over = if next.todos > SLICE_BUDGET.todos {
            format!("{} todos", SLICE_BUDGET.todos)
        } else if next.items > SLICE_BUDGET.items {
            format!(
                "{} evidence items, handoffs and questions",
                SLICE_BUDGET.items
            )
        } else if next.bytes > SLICE_BUDGET.bytes {
            format!("{} MiB of reports", SLICE_BUDGET.bytes >> 20)
        } else {
            return Ok(next);
        };
        Err(over)
    }
}

/// How many refused connections a slice records as evidence; later ones are only logged.
const RECORDED_INTRUSIONS: u32 = 3;

impl Channel {
    /// Listens at `path` for the slice `reporter` names.
    pub(crate) fn open(
        path: &Path,
        (project, stores, work): (Project, crate::store_cache::StoreCache, PathBuf),
        reporter: Reporter,
        clock: SharedClock,
        redactor: loopx_kernel::Redactor,
    ) -> std::io::Result<Channel> {
        let listener = UnixListener::bind(path)?;
        // Kept to wake the accept at the end, whatever became of the socket's path.
        let waker = listener.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let leader = Arc::new(AtomicU32::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let items = Arc::new(AtomicU32::new(0));
        let serving = Serving {
            project,
            stores,
            work,
            redactor,
            reporter,
            clock,
            leader: leader.clone(),
            done: done.clone(),
            items: items.clone(),
            intrusions: 0,
            spent: Budget::default(),
            overspent: false,
        };
        let mut serving = serving;
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("loopx-report-channel".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serving.answer(stream);
                    }
                }
            })?;
        Ok(Channel {
            path: path.to_owned(),
            waker,
            stop,
            leader,
            done,
            items,
            thread: Some(thread),
        })
    }

    /// What the agent wrote through this channel so far.
    pub(crate) fn reports(&self) -> ChannelReports {
        ChannelReports {
            done: self.done.load(Ordering::SeqCst),
            items: self.items.load(Ordering::SeqCst),
        }
    }

    /// The slice's process (the PTY's leader): every reporter must descend from it.
    pub(crate) fn serve_slice(&self, pid: u32) {
        self.leader.store(pid, Ordering::SeqCst);
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accept (it fails once the socket is shut down); the thread sees
        // `stop` and ends. A request being read ends by its own deadline.
        let _ = nix::sys::socket::shutdown(
            std::os::fd::AsRawFd::as_raw_fd(&self.waker),
            nix::sys::socket::Shutdown::Both,
        );
        let _ = UnixStream::connect(&self.path);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Serving {
    fn answer(&mut self, mut stream: UnixStream) {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
        let reply = self.reply(&stream);
        if let Ok(mut line) = serde_json::to_vec(&reply) {
            line.push(b'\n');
            let _ = stream.write_all(&line);
        }
    }

    fn reply(&mut self, stream: &UnixStream) -> ReportReply {
        let peer = loopx_os::unix_peer_pid(stream).and_then(|pid| u32::try_from(pid).ok());
        let leader = self.leader();
        let inside = match (peer, leader) {
            (Some(peer), Some(leader)) => descends_from(peer, leader),
            _ => false,
        };
        if !inside {
            let who = peer.map_or_else(
                || "an unknown process".to_owned(),
                |p| format!("process {p}"),
            );
            self.intrusions = self.intrusions.saturating_add(1);
            if self.intrusions <= RECORDED_INTRUSIONS {
                self.record_intrusion(&who);
            } else {
                tracing::warn!(slice = %self.reporter.slice, %who, "refused another report from outside the slice");
            }
            return ReportReply::Refused(ReportRefused {
                message: format!(
                    "this channel belongs to slice {}, and {who} is not part of it; nothing was written and the attempt was recorded",
                    self.reporter.slice
                ),
                class: loopx_kernel::model::ErrorClass::Refused,
            });
        }
        let line = match read_request(stream) {
            Ok(line) => line,
            Err(e) => {
                return ReportReply::Refused(ReportRefused::usage(format!(
                    "cannot read the report: {e}"
                )));
            }
        };
        if line.len() > MAX_REQUEST_BYTES {
            return ReportReply::Refused(ReportRefused::usage(format!(
                "a report is at most {MAX_REQUEST_BYTES} bytes"
            )));
        }
        let report: AgentReport = match serde_json::from_slice(&line) {
            Ok(report) => report,
            Err(e) => {
                return ReportReply::Refused(ReportRefused::usage(format!(
                    "not a report: {e}\n(hint: write with `loopx report …`)"
                )));
            }
        };
        let done = matches!(report, AgentReport::Done { .. });
        // Done once: the slice's end finishes the todo; saying it again changes nothing.
        if done && self.done.load(Ordering::SeqCst) {
            return ReportReply::Refused(ReportRefused {
                message: format!(
                    "this slice already reported its todo done; the slice's end finishes it (slice {})",
                    self.reporter.slice
                ),
                class: loopx_kernel::model::ErrorClass::Conflict,
            });
        }
        let spent = match self.spent.spend(&report, line.len()) {
            Ok(spent) => spent,
            Err(limit) => return self.over_budget(&limit),
        };
        let mut batch = match self.reporter.batch(report) {
            Ok(batch) => batch,
            Err(refused) => return ReportReply::Refused(refused),
        };
        for op in &mut batch {
            if let Op::EvidenceAdd(new) = op
                && new.kind.speaks_about_work()
            {
                new.work =
                    loopx_git::work::mark_or_unknown(loopx_git::Git::of(&self.project), &self.work);
            }
        }
        let written = retrying(&*self.clock, patience(&self.project), || {
            self.stores.with(&self.project, |store| {
                store
                    .apply_batch_redacted(
                        batch.clone(),
                        &self.reporter.actor(),
                        self.clock.now(),
                        &self.redactor,
                    )
                    .map_err(|refused| refused.error)
            })
        });
        if written.is_ok() {
            self.spent = spent;
            if done {
                self.done.store(true, Ordering::SeqCst);
            } else {
                self.items.fetch_add(1, Ordering::SeqCst);
            }
        }
        match written {
            Ok(mut applied) => match applied.pop().and_then(Reported::from_applied) {
                Some(reported) => ReportReply::Written(Box::new(reported)),
                None => ReportReply::Refused(ReportRefused::usage("the report wrote nothing")),
            },
            Err(e) => ReportReply::Refused(ReportRefused::from_kernel(&e)),
        }
    }

    /// The slice's process, once spawned (a report cannot come before; waits briefly for the
    /// spawn to be noted).
    fn leader(&self) -> Option<u32> {
        for _ in 0..40 {
            match self.leader.load(Ordering::SeqCst) {
                0 => std::thread::sleep(Duration::from_millis(25)),
                pid => return Some(pid),
            }
        }
        None
    }

    /// The slice spent its channel's budget: the request is refused, and the first refusal is
    /// recorded as `violation` evidence on the slice. Later ones are logged only at debug: an
    /// agent that kept sending wrote 118,000 warnings (17 MB of the run's log) in 15 s.
    fn over_budget(&mut self, limit: &str) -> ReportReply {
        let slice = self.reporter.slice;
        if !self.overspent {
            self.overspent = true;
            self.record(NewEvidence {
                kind: EvidenceKind::Violation,
                summary: format!(
                    "slice {slice} reached its report budget ({limit}); later reports were refused"
                ),
                detail: format!(
                    "A slice may write at most {} todos, {} evidence items, handoffs and questions, \
                     and {} MiB through its report channel. What it wrote before stays.",
                    SLICE_BUDGET.todos,
                    SLICE_BUDGET.items,
                    SLICE_BUDGET.bytes >> 20
                ),
                files: vec![],
                todo: self.reporter.claim.map(|(t, _)| t),
                slice: Some(slice),
                epoch: None,
                work: None,
                metric: None,
            });
        } else {
            tracing::debug!(%slice, %limit, "refused another report over the slice's budget");
        }
        ReportReply::Refused(ReportRefused {
            message: format!(
                "slice {slice} has written {limit} through its report channel, the most one slice may; nothing was written\n(hint: put what is left in the report block of your final message)"
            ),
            class: loopx_kernel::model::ErrorClass::Refused,
        })
    }

    /// Someone outside the slice tried to write as it: `violation` evidence on the slice.
    fn record_intrusion(&self, who: &str) {
        let r = &self.reporter;
        let evidence = NewEvidence {
            kind: EvidenceKind::Violation,
            summary: format!(
                "refused a report on slice {}'s channel from {who}, outside the slice",
                r.slice
            ),
            detail: "A process that is not part of this slice connected to its report channel \
                     (LOOPX_REPORT_SOCKET) and tried to write as it. Nothing was written."
                .to_owned(),
            files: vec![],
            todo: r.claim.map(|(t, _)| t),
            slice: Some(r.slice),
            epoch: None,
            work: None,
            metric: None,
        };
        self.record(evidence);
    }

    /// Records loopx's own evidence about the slice.
    fn record(&self, evidence: NewEvidence) {
        let written = retrying(&*self.clock, patience(&self.project), || {
            self.stores.with(&self.project, |store| {
                store.apply(Op::EvidenceAdd(evidence.clone()), ACTOR, self.clock.now())
            })
        });
        if let Err(e) = written {
            tracing::warn!(error = %e, "cannot record a refused report");
        }
    }
}

/// The longest a request may take to arrive, whole: a peer trickling bytes cannot hold the
/// channel (and the slice's end, which waits for it).
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// One request line, at most [`MAX_REQUEST_BYTES`] (plus one, to tell), within
/// [`REQUEST_DEADLINE`].
fn read_request(mut stream: &UnixStream) -> std::io::Result<Vec<u8>> {
    let deadline = std::time::Instant::now() + REQUEST_DEADLINE;
    let mut line = Vec::new();
    let mut chunk = [0u8; 8192];
    while line.len() <= MAX_REQUEST_BYTES {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "it did not arrive within 10 s",
            ));
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut chunk)?;
        line.extend_from_slice(&chunk[..n]);
        if n == 0 || chunk[..n].contains(&b'\n') {
            break;
        }
    }
    if let Some(end) = line.iter().position(|b| *b == b'\n') {
        line.truncate(end + 1);
    }
    Ok(line)
}

/// Whether `pid`'s ancestry (by the process table's parents) reaches `leader`. A process that
/// left the slice's tree (double fork, `setsid`) was re-parented to the init of the slice's
/// PID namespace, which descends from the leader, or to loopx, which does not.
fn descends_from(pid: u32, leader: u32) -> bool {
    let mut current = pid;
    for _ in 0..256 {
        if current == leader {
            return true;
        }
        match parent_of(current) {
            Some(parent) if parent > 1 && parent != current => current = parent,
            _ => return false,
        }
    }
    false
}

fn parent_of(pid: u32) -> Option<u32> {
    let process = loopx_os::process(i32::try_from(pid).ok()?)?;
    u32::try_from(process.ppid).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_the_first_report_past_it_and_no_earlier_one() {
        let todo = AgentReport::Todo {
            title: "x".into(),
            detail: String::new(),
            priority: 0,
            role: None,
            after: vec![],
            monitor: None,
            not_before: None,
        };
        let mut spent = Budget::default();
        for _ in 0..SLICE_BUDGET.todos {
            spent = spent.spend(&todo, 10).expect("within the budget");
        }
        let over = spent.spend(&todo, 10).expect_err("one todo too many");
        assert_eq!(over, "200 todos");
        let note = AgentReport::Handoff {
            done: String::new(),
            next: String::new(),
            files: vec![],
            questions: vec![],
        };
        assert!(
            spent.spend(&note, 10).is_ok(),
            "other items have their own count"
        );
        let big = Budget {
            bytes: SLICE_BUDGET.bytes,
            ..Budget::default()
        };
        assert_eq!(big.spend(&note, 1), Err("4 MiB of reports".to_owned()));
    }

    #[test]
    fn a_process_descends_from_its_ancestors_only() {
        let me = std::process::id();
        let parent = parent_of(me).expect("this process has a parent");
        assert!(descends_from(me, me));
        assert!(descends_from(me, parent));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep starts");
        assert!(descends_from(child.id(), me), "a child descends from us");
        assert!(
            !descends_from(me, child.id()),
            "we do not descend from our child"
        );
        let _ = child.kill();
        let _ = child.wait();
    }
}
