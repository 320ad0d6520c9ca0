//! The third and fourth stages: launch the agent in its PTY, then observe it to the end —
//! output through the adapter's parser, the claim renewed meanwhile, the outcome judged, the
//! scope checked.

use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use loopx_adapters::{Outcome, Parser};
use loopx_kernel::model::ProcessIdentity;
use loopx_kernel::store::QuotaRequest;
use loopx_kernel::{AgentName, Op, SliceId, Store, Timestamp};

use super::begin::{Begun, lease_ttl, slice_path};
use super::channel::{Channel, ChannelReports};
use super::contain::contain;
use super::guard::{patience, retrying};
use super::launch::{FirstInput, SliceEnv, launch_spec};
use super::live::Mailroom;
use super::redact_log::redact_log;
use super::stream::{Spawned, observe, reached_ceiling, spawn};
use crate::errors::SupervisorError;
use crate::once::{RunOnce, Step};
use crate::renew::Renewal;
use loopx_domain::judge::{AgentEnd, Judged, judge};
use loopx_git::Git;
use loopx_git::scope::{self, SliceChanges};
use loopx_kernel::report::Reporter;
use loopx_pty::LaunchSpec;
use loopx_pty::Room;

/// An agent spawned (or that failed to spawn), not yet observed.
#[derive(Debug)]
pub(crate) struct Launched {
    begun: Begun,
    /// The supervisor's runtime, which the agent's PTY is supervised on.
    runtime: tokio::runtime::Handle,
    spawned: Result<Spawned, String>,
    first: FirstInput,
    /// Where its messages come from while it runs, when its agent takes input then.
    mailroom: Mailroom,
    parser: Parser,
    before: scope::Before,
    /// Records the spawned process in the store, off the PTY's runtime.
    recorder: Option<JoinHandle<()>>,
    /// When it was spawned, on the supervisor's monotonic clock.
    started: Duration,
    /// What contains the agent (`Sandbox::describe`).
    containment: &'static str,
    /// The slice's report channel, closed once it ended (none when the spawn failed before).
    channel: Option<Channel>,
    /// The slice's private directory, removed once it ended (none when it could not be made).
    room: Option<Room>,
}

impl Begun {
    /// Spawns the agent, unless loopx is being stopped (then `None`: the guard records the
    /// slice interrupted as it is dropped).
    pub(crate) fn launch(
        mut self,
        req: &RunOnce,
        on_step: &mut dyn FnMut(Step<'_>),
    ) -> Result<Option<Launched>, SupervisorError> {
        if let Some(why) = req.shutdown.reason() {
            self.guard.fail(format!(
                "shutdown: loopx was stopped ({why}) before the agent was spawned"
            ));
            return Ok(None);
        }
        let setup = &self.setup;
        let log = self.record.log.clone().unwrap_or_default();
        let env = SliceEnv {
            project_root: req.project.root(),
            slice: self.record.id,
            agent: &setup.agent.name,
            todo: self.record.todo,
            epoch: self.record.epoch,
        };
        let (mut spec, first) =
            launch_spec(&self.plan, &env, slice_path(req, &log), &self.redactor);
        create_private(&spec.log.path);
        // A room, a sandbox or a channel that cannot be had is a failed spawn: it counts
        // toward the todo's stall guard like any other, never a free retry at once.
        let prepared = match &self.tree {
            Some(Err(why)) => Err(format!(
                "loopx could not make the todo's worktree ready: {why}"
            )),
            _ => self.contain(req, &mut spec),
        };
        let runtime = match req.world.runtime.handle() {
            Ok(runtime) => runtime,
            Err(e) => {
                self.guard
                    .fail(format!("loopx could not start the slice's runtime: {e}"));
                return Err(SupervisorError::Runtime(e));
            }
        };
        // Orphans of the agent are re-parented to loopx, so the sweep can reap them.
        if let Err(e) = loopx_pty::become_child_subreaper()
            && e.kind() != std::io::ErrorKind::Unsupported
        {
            tracing::warn!(error = %e, "cannot become a child subreaper; orphans go to init");
        }
        let parser = Parser::for_adapter(&setup.loaded.adapter);
        // A worktree slice is checked in its worktree; the person's own tree too when no
        // Landlock or Seatbelt keeps the agent out of it.
        let before = match &self.tree {
            Some(_) if spec.sandbox.landlock || spec.sandbox.seatbelt => {
                scope::capture_state(req.project.root())
            }
            _ => scope::capture(Git::of(&req.project), req.project.root(), self.scope()),
        };
        self.renewal = self.renew(req);
        let started = req.world.clock.monotonic();
        let containment = spec.sandbox.describe();
        let (spawned, room, channel) = match prepared {
            Ok((room, channel)) => (spawn(&runtime, spec), Some(room), Some(channel)),
            Err(why) => (Err(why), None, None),
        };
        let mailroom = self.mailroom(req);
        let mut launched = Launched {
            begun: self,
            runtime,
            spawned,
            first,
            mailroom,
            parser,
            before,
            recorder: None,
            started,
            containment,
            channel,
            room,
        };
        launched.watch(req, on_step);
        Ok(Some(launched))
    }

    /// Where the slice's messages come from while it runs.
    fn mailroom(&self, req: &RunOnce) -> Mailroom {
        Mailroom {
            slice: self.record.id,
            prompt_messages: self.messages.clone(),
            agent: self.setup.agent.name.clone(),
            stores: req.world.stores.clone(),
            project: req.project.clone(),
            clock: req.world.clock.clone(),
        }
    }

    /// The claim's renewal while the agent runs (a todo slice's).
    fn renew(&self, req: &RunOnce) -> Option<Renewal> {
        let (epoch, todo) = self.record.epoch.zip(self.record.todo)?;
        Some(Renewal::start(
            req.world.stores.clone(),
            req.project.clone(),
            req.world.clock.clone(),
            self.setup.agent.name.clone(),
            todo,
            epoch,
            lease_ttl(&self.setup, req.world.lease_max),
        ))
    }
}

impl Launched {
    /// Once the agent spawned: the channel serves it, a lost claim or a stop request stops
    /// it, and its process is recorded.
    fn watch(&mut self, req: &RunOnce, on_step: &mut dyn FnMut(Step<'_>)) {
        let Ok(spawned) = &self.spawned else {
            return;
        };
        let begun = &mut self.begun;
        let pid = spawned.slice.pid();
        if let Some(channel) = &self.channel {
            channel.serve_slice(pid);
        }
        let control = spawned.slice.control();
        if let Some(renewal) = &begun.renewal {
            renewal.stop_slice_if_lost(control.clone());
        }
        req.shutdown.register(begun.record.id.0, control);
        // An agent that reads its prompt from stdin as stream-json has read it when its CLI
        // echoes it: the messages the prompt carries are delivered then (`live.rs`).
        let prompt_read = !matches!(self.first, FirstInput::Live(_));
        self.recorder = Some(record_spawned(
            req,
            begun.store.take(),
            (begun.record.id, prompt_read),
            &begun.setup.agent.name,
            req.world.host.identity(pid),
            self.containment,
        ));
        on_step(Step::Spawned {
            slice: begun.record.id,
            pid,
        });
    }
}

impl Begun {
    /// The slice's room, sandbox and report channel, added to `spec`; why not, as a spawn
    /// failure's reason.
    fn contain(&self, req: &RunOnce, spec: &mut LaunchSpec) -> Result<(Room, Channel), String> {
        let room = Room::create(spec.slice_id.as_str())
            .map_err(|e| format!("loopx could not create the slice's private directory: {e}"))?;
        let tree = self.tree.as_ref().and_then(|t| t.as_ref().ok());
        contain(
            spec,
            &self.plan,
            req.project.root(),
            tree.map(|p| &p.tree),
            &room,
            &req.loopx_exe,
        )?;
        let reporter = Reporter {
            slice: self.record.id,
            agent: self.setup.agent.name.clone(),
            claim: self.record.todo.zip(self.record.epoch),
        };
        let work = tree.map_or_else(|| req.project.root().to_path_buf(), |p| p.tree.workdir());
        let channel = Channel::open(
            &room.socket(),
            (req.project.clone(), req.world.stores.clone(), work),
            reporter,
            req.world.clock.clone(),
            self.redactor.clone(),
        )
        .map_err(|e| format!("loopx could not open the slice's report channel: {e}"))?;
        spec.env.set.push((
            loopx_kernel::report::SOCKET_VAR.to_owned(),
            room.socket().into_os_string(),
        ));
        Ok((room, channel))
    }
}

impl Launched {
    /// Waits for the agent to end, then judges what happened.
    pub(crate) fn observe(self, req: &RunOnce) -> (Begun, AgentEnd, Judged) {
        let Launched {
            mut begun,
            runtime,
            spawned,
            first,
            mailroom,
            parser,
            before,
            recorder,
            started,
            containment,
            channel,
            room,
        } = self;
        let pid = spawned.as_ref().ok().map(|s| s.slice.pid());
        let max_tokens = begun.plan.limits.max_tokens;
        let mut end = runtime.block_on(observe(
            spawned,
            (first, mailroom),
            parser,
            max_tokens,
            &req.world.clock,
        ));
        // The slice ended now, not after its bookkeeping (a busy store can hold that up).
        (end.at, end.elapsed) = ended_now(req, started);
        (end.pid, end.containment) = (pid, containment);
        end.reported = channel.as_ref().map(Channel::reports).unwrap_or_default();
        drop(channel);
        drop(room);
        req.shutdown.unregister(begun.record.id.0);
        if let Some(recorder) = recorder {
            let _ = recorder.join();
        }
        // The spawn failed: the decision's store was never handed to the recorder.
        drop(begun.store.take());
        // A worktree slice keeps its claim renewed through its landing (a land check may run
        // for many minutes); any other slice's claim needs no renewing once its agent ended.
        end.lost = match &begun.tree {
            Some(Ok(_)) => begun.renewal.as_ref().and_then(Renewal::lost),
            _ => begun.renewal.take().and_then(Renewal::finish),
        };
        conclude(req, begun, end, &before)
    }
}

/// Now, on the wall clock, and how long since `started` on the monotonic one.
fn ended_now(req: &RunOnce, started: Duration) -> (Timestamp, Duration) {
    let clock = &req.world.clock;
    (clock.now(), clock.monotonic().saturating_sub(started))
}

impl Begun {
    /// The goal's scope (empty: the whole project, or no goal).
    fn scope(&self) -> &[String] {
        self.goal.as_ref().map_or(&[][..], |g| &g.scope)
    }

    /// The agent "started" now, for a host that runs it itself (the simulation): the project
    /// as it is before the agent runs, and the start on the monotonic clock.
    pub(crate) fn start_simulated(&mut self, req: &RunOnce) -> (scope::Before, Duration) {
        drop(self.store.take());
        let log = slice_path(req, self.record.log.as_deref().unwrap_or_default());
        create_private(&log);
        (
            scope::capture(Git::of(&req.project), req.project.root(), self.scope()),
            req.world.clock.monotonic(),
        )
    }

    /// The agent of a simulated slice ended, having printed `output` and ended `exit`: its
    /// output goes through the adapter's parser and into the slice's log, then on as any
    /// slice's does.
    pub(crate) fn observe_simulated(
        self,
        req: &RunOnce,
        started: (scope::Before, Duration),
        output: &[u8],
        exit: loopx_pty::SliceExit,
        lost_claim: Option<String>,
        reported: ChannelReports,
    ) -> (Begun, AgentEnd, Judged) {
        let (before, started) = started;
        let clock = &req.world.clock;
        let log = slice_path(req, self.record.log.as_deref().unwrap_or_default());
        if let Err(e) = std::fs::write(&log, output) {
            tracing::warn!(path = %log.display(), error = %e, "cannot write the slice log");
        }
        let mut parser = Parser::for_adapter(&self.setup.loaded.adapter);
        let now = jiff_time(clock.now());
        let mut refused = false;
        parser.feed(output, now, &mut |event| refused |= is_refusal(&event));
        parser.finish(now);
        // loopx stops an agent the vendor refused at once, and one that reached its token
        // ceiling (`stream.rs`): the host printed only what came before.
        let ceiling = match refused {
            true => None,
            false => reached_ceiling(parser.summary(), self.plan.limits.max_tokens),
        };
        let exit = match refused || ceiling.is_some() {
            true => loopx_pty::SliceExit::Stopped(loopx_pty::StopReason::Requested),
            false => exit,
        };
        let (at, elapsed) = ended_now(req, started);
        // A simulated agent runs in no process at all.
        let end = AgentEnd {
            exit: Ok(exit),
            summary: parser.into_summary(),
            stopped_for_refusal: refused,
            stopped_at_ceiling: ceiling,
            leftovers: 0,
            bytes: u64::try_from(output.len()).unwrap_or(u64::MAX),
            capture_error: None,
            memory_limit_hit: None,
            pid: None,
            containment: "simulated",
            reported,
            at,
            elapsed,
            lost: lost_claim,
            changes: SliceChanges::default(),
            commit: None,
        };
        conclude(req, self, end, &before)
    }
}

/// Whether the vendor refused the agent: a rejected limit, or credentials refused.
pub(crate) fn is_refusal(event: &loopx_adapters::AgentEvent) -> bool {
    match event {
        loopx_adapters::AgentEvent::Limit(l) => l.status == loopx_adapters::LimitStatus::Rejected,
        loopx_adapters::AgentEvent::AuthFailed { .. } => true,
        _ => false,
    }
}

/// A stored time as the parser's.
pub(crate) fn jiff_time(at: Timestamp) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(i64::try_from(at.0).unwrap_or(i64::MAX))
        .unwrap_or(jiff::Timestamp::MAX)
}

/// What every slice's end shares, real or simulated: the log redacted, the outcome judged, the
/// scope checked, the usage measured.
fn conclude(
    req: &RunOnce,
    mut begun: Begun,
    mut end: AgentEnd,
    before: &scope::Before,
) -> (Begun, AgentEnd, Judged) {
    let log = slice_path(req, begun.record.log.as_deref().unwrap_or_default());
    if let Err(e) = redact_log(&log, &begun.redactor) {
        tracing::warn!(slice = %begun.record.id, error = %e, "cannot redact the slice log");
    }
    let mut judged = judge(&end, &begun.setup.loaded.profile.done_when);
    (end.changes, end.commit) = begun.changes(req, before, &judged);
    let changes = &end.changes;
    if judged.outcome == Outcome::Interrupted {
        if let Some(why) = &end.lost {
            judged.reason = format!("the slice was stopped: it lost its claim ({why})");
        } else if let Some(why) = req.shutdown.reason() {
            judged.reason = format!("shutdown: loopx was stopped ({why}) during the slice");
        }
    }
    if let Some(said) = &changes.left_out {
        judged.reason = format!("{}; loopx {said}", judged.reason);
    }
    let capture_error = end.capture_error.as_deref();
    if let Some(why) = capture_error {
        judged.reason = format!("{}; its log was cut short ({why})", judged.reason);
    }
    let work_dir = match &begun.tree {
        Some(Ok(prepared)) => prepared.tree.dir.clone(),
        _ => req.project.root().to_path_buf(),
    };
    super::disk::fail_on_full_disk(
        &mut judged,
        &work_dir,
        changes.unchecked.as_deref().or(capture_error),
    );
    let spent = begun.spent(&end);
    begun.guard.ran(judged.exit.clone(), end.bytes, spent);
    (begun, end, judged)
}

impl Begun {
    /// What the slice spent (tokens, cost) over the time its agent ran, as the quota is
    /// charged.
    pub(crate) fn spent(&self, end: &AgentEnd) -> QuotaRequest {
        let usage = end.summary.usage();
        self.setup.quota_request(
            (
                usage.input.saturating_add(usage.output),
                end.summary.cost_usd.unwrap_or(0.0),
            ),
            Some(loopx_domain::writeback::ran_between(end.at, end.elapsed)),
            self.record.goal,
        )
    }

    /// What the slice changed: a worktree slice's work committed (and any change it made to
    /// the person's own tree named as one it may not make), any other slice's tree compared
    /// with `before` against the goal's scope.
    fn changes(
        &self,
        req: &RunOnce,
        before: &scope::Before,
        judged: &Judged,
    ) -> (SliceChanges, Option<loopx_git::worktree::SliceCommit>) {
        let scope = self.scope();
        match &self.tree {
            Some(Ok(prepared)) => {
                let summary = judged
                    .classification
                    .as_ref()
                    .and_then(|c| c.report.as_ref()?.as_ref().ok())
                    .map(|r| r.summary.as_str());
                let slice = self.record.id.to_string();
                let agent = self.setup.agent.name.as_str();
                let root = req.project.root();
                // Without Landlock the agent could write the person's tree: every change there is
                // one it may not make.
                let in_checkout = if before.checks_git() {
                    scope::compare(root, before, &[]).files
                } else {
                    Vec::new()
                };
                let state_files = scope::compare_state(root, before);
                match loopx_git::worktree::finish(prepared, &slice, agent, summary, scope) {
                    Ok(mut commit) => {
                        commit.changes.state_files.extend(state_files);
                        commit.changes.left_out = commit.left_out.describe();
                        for file in in_checkout {
                            let named = format!("{file} (in the project's own tree)");
                            commit.changes.outside.push(named.clone());
                            commit.changes.files.push(named);
                        }
                        (commit.changes.clone(), Some(commit))
                    }
                    Err(why) => (
                        SliceChanges {
                            unchecked: Some(format!("the worktree could not be committed: {why}")),
                            state_files,
                            ..SliceChanges::default()
                        },
                        None,
                    ),
                }
            }
            _ => (scope::compare(req.project.root(), before, scope), None),
        }
    }
}

/// Records the spawned process's identity through the decision's store (then closes it), on a
/// thread of its own: a busy store must not hold up the PTY while the agent starts printing.
/// A failure is logged, not fatal: the agent runs either way, its slice is recorded as begun,
/// and a sweep finds its processes by their marker.
fn record_spawned(
    req: &RunOnce,
    store: Option<std::sync::Arc<Store>>,
    (slice, prompt_read): (SliceId, bool),
    agent: &AgentName,
    process: ProcessIdentity,
    containment: &str,
) -> JoinHandle<()> {
    let actor = loopx_vocab::actor::agent(agent.as_str());
    let pid = process.pid;
    let op = Op::SliceSpawned {
        slice,
        process,
        containment: containment.to_owned(),
        prompt_read,
    };
    let (project, clock, stores) = (
        req.project.clone(),
        req.world.clock.clone(),
        req.world.stores.clone(),
    );
    std::thread::spawn(move || {
        let mut first = store;
        let recorded = retrying(&*clock, patience(&project), || match first.take() {
            Some(store) => store.apply(op.clone(), &actor, clock.now()),
            None => stores.with(&project, |s| s.apply(op.clone(), &actor, clock.now())),
        });
        if let Err(e) = recorded {
            tracing::warn!(%slice, pid, error = %e, "could not record the spawned process");
        }
    })
}

/// Creates the slice's log as 0600 before the PTY crate opens it: agent output may hold
/// secrets, and truncating an existing file keeps its mode. A symlink planted in its place is
/// not followed. A failure here is left to the PTY crate, which reports it as a spawn failure.
fn create_private(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path);
    if let Err(e) = created {
        tracing::warn!(path = %path.display(), error = %e, "cannot create the slice log");
    }
}
