//! The Lark board kept in step while `loopx run` runs: a thread that reconciles the table and
//! the question cards after every change the doorbell announces (and every
//! [`IN_STEP_EVERY`] regardless), and a thread that serves card callbacks. A failure never
//! reaches the run loop: it is logged, retried with backoff, and shown by `loopx status`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loopx_adapters::LarkConfig;
use loopx_app::projection::ProjectionHealth;
use loopx_app::{App, Caller};
use loopx_kernel::Project;

use crate::api::Client;
use crate::callback::Verifier;
use crate::flowback::People;
use crate::listen::{Answering, serve};
use crate::sync::Board;

/// A pass runs at least this often, changes or not (a person may have edited the table).
pub const IN_STEP_EVERY: Duration = Duration::from_secs(60);
/// After a ring, changes that follow within this long are taken in the same pass.
const SETTLE: Duration = Duration::from_millis(300);
/// How long a change made in Lark that no record-change event accounts for yet is left alone
/// before it is refused: Lark sends an event within a second or two, and again 15 s later when
/// the first try failed.
pub const EVENT_GRACE: Duration = Duration::from_secs(20);
/// The longest wait between failing passes.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The secrets, read from the environment by the caller (libraries read no environment).
#[derive(Clone)]
pub struct Secrets {
    pub app_secret: String,
    /// `LOOPX_LARK_VERIFICATION_TOKEN` and `LOOPX_LARK_ENCRYPT_KEY`: both, or no callbacks.
    pub callback: Option<(String, String)>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(…)")
    }
}

/// What started.
#[derive(Debug)]
pub struct Started {
    /// Where card callbacks are heard, if they are.
    pub listening: Option<std::net::SocketAddr>,
    project: Project,
    stop: Arc<AtomicBool>,
    done: Receiver<()>,
}

impl Started {
    /// Runs a last pass (so a card answered or a todo finished just before the run ended shows
    /// it) and waits for it, at most `patience`.
    pub fn finish(self, patience: Duration) {
        self.stop.store(true, Ordering::SeqCst);
        loopx_kernel::doorbell::ring(&self.project);
        if self.done.recv_timeout(patience).is_err() {
            tracing::warn!("the Lark board's last pass did not finish in time");
        }
    }
}

/// Starts the threads. Fails only when the callback address cannot be bound.
pub fn start(
    project: Project,
    loopx_exe: Option<PathBuf>,
    config: LarkConfig,
    secrets: Secrets,
) -> Result<Started, String> {
    let (finished, done) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let mut started = Started {
        listening: None,
        project: project.clone(),
        stop: Arc::clone(&stop),
        done,
    };
    if let (Some(questions), Some((token, key))) = (&config.questions, &secrets.callback) {
        let listener = TcpListener::bind(questions.listen).map_err(|e| {
            format!(
                "cannot listen for Lark's callbacks on {}: {e}",
                questions.listen
            )
        })?;
        started.listening = listener.local_addr().ok();
        let answering = Arc::new(Answering {
            project: project.clone(),
            loopx_exe: loopx_exe.clone(),
            approvals: questions.approvals,
            verifier: Mutex::new(Verifier::new(token, key, &questions.answerers)),
            board: config
                .board
                .as_ref()
                .map(|b| (b.app_token.clone(), crate::changes::file(&project))),
        });
        std::thread::Builder::new()
            .name("lark-callbacks".into())
            .spawn(move || serve(listener, answering))
            .map_err(|e| e.to_string())?;
    }
    std::thread::Builder::new()
        .name("lark-board".into())
        .spawn(move || {
            keep_in_step(&project, loopx_exe, &config, &secrets, &stop);
            let _ = finished.send(());
        })
        .map_err(|e| e.to_string())?;
    Ok(started)
}

/// Passes until `stop`, then one more.
fn keep_in_step(
    project: &Project,
    exe: Option<PathBuf>,
    config: &LarkConfig,
    secrets: &Secrets,
    stop: &AtomicBool,
) {
    let app = App::new(project.clone(), Caller::person("lark"), exe);
    let bell = loopx_kernel::doorbell::Listener::bind(project);
    let mut client = Client::new(&config.base_url, &config.app_id, &secrets.app_secret);
    let mut health = ProjectionHealth {
        name: "lark".into(),
        ok_at: None,
        failing_since: None,
        error: None,
        detail: String::new(),
    };
    let answers = crate::projection::Answers {
        cards: config.questions.is_some(),
        approvals: config.questions.as_ref().is_some_and(|q| q.approvals),
    };
    let mut board = config
        .board
        .clone()
        .map(|b| Board::new(b).answered(answers));
    // Changes people make in the table are read this often, besides after every change here.
    let idle = config
        .board
        .as_ref()
        .filter(|_| config.questions.is_some())
        .map_or(IN_STEP_EVERY, |b| b.poll.min(IN_STEP_EVERY));
    let mut backoff = Duration::from_secs(1);
    loop {
        let wait = match pass(&app, &mut client, board.as_mut(), config) {
            Ok(detail) => {
                health.ok_at = Some(app.now());
                health.failing_since = None;
                health.error = None;
                health.detail = detail;
                backoff = Duration::from_secs(1);
                idle
            }
            Err(why) => {
                tracing::warn!(error = %why, retry_in_s = backoff.as_secs(), "the Lark board could not be brought in step");
                health.failing_since.get_or_insert(app.now());
                health.error = Some(why);
                let wait = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                wait
            }
        };
        if let Err(e) = app.record_projection_health(&health) {
            tracing::warn!(error = %e, "cannot record the Lark board's health");
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if bell.wait(wait) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(SETTLE);
        }
    }
}

/// One pass: the table (and a word in the chat for the changes it put back), then the
/// questions' and the goals' cards; what they show, in words.
fn pass(
    app: &App,
    client: &mut Client,
    board: Option<&mut Board>,
    config: &LarkConfig,
) -> Result<String, String> {
    let mut said = Vec::new();
    if let Some(board) = board {
        let people = People {
            project: app.project(),
            loopx_exe: app.loopx_exe(),
            answerers: config.questions.as_ref().map_or(&[], |q| &q.answerers),
            // The listener runs (and hears record-change events) exactly when questions do.
            events: config
                .questions
                .as_ref()
                .map(|_| (crate::changes::file(app.project()), EVENT_GRACE)),
        };
        let report = board
            .sync(app, client, &people)
            .map_err(|e| e.to_string())?;
        said.push(format!(
            "table {}: {} created, {} updated, {} deleted",
            report.table_id, report.created, report.updated, report.deleted
        ));
        let taken = &report.taken;
        if !taken.applied.is_empty() || !taken.refused.is_empty() {
            said.push(format!(
                "from Lark: {} taken, {} refused{}",
                taken.applied.len(),
                taken.refused.len(),
                taken
                    .refused
                    .last()
                    .map_or(String::new(), |r| format!(" (last: {r})"))
            ));
        }
        if let Some(questions) = &config.questions {
            crate::putback::tell(app, client, &questions.chat_id, &taken.put_back)
                .map_err(|e| e.to_string())?;
        }
    }
    if let Some(questions) = &config.questions {
        let report =
            crate::cards::post_questions(app, client, questions).map_err(|e| e.to_string())?;
        said.push(format!(
            "questions: {} posted, {} closed{}",
            report.posted,
            report.closed,
            match report.waiting {
                0 => String::new(),
                n => format!(", {n} of agents' waiting on the digest card"),
            }
        ));
        crate::goals::keep_cards(app, client, questions).map_err(|e| e.to_string())?;
    }
    Ok(said.join("; "))
}
