//! The webhook (`[notify] webhook_env`): each notification posted as Slack-compatible JSON
//! (`{"text": …}`, with the notification's `kind`, `agent`, `project` beside it) to the URL in
//! the person's environment.
//!
//! The loop never waits for it: a notification is queued (a bounded queue; a full one drops it,
//! and says so in the log) and one thread of its own posts them in turn, each with a short
//! timeout and a few tries, the waits between them doubling. A webhook that hangs, refuses or
//! answers with an error costs the loop nothing but that thread; every failure is logged, never
//! with the URL (whoever has it can post to the channel). When the run ends, the queue gets a
//! short grace to be delivered (the last notification is often "goal done"), then is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Notifications waiting to be posted, at most; more are dropped.
const QUEUE: usize = 64;
/// One attempt's bound, connection included.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts per notification.
const ATTEMPTS: u32 = 4;
/// The wait after the first failed attempt; it doubles after each.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// How long the end of a run waits for the notifications still queued.
const FINISH_GRACE: Duration = Duration::from_secs(5);

/// The webhook's poster: a queue and the thread that empties it.
#[derive(Debug)]
pub(crate) struct Webhook {
    queue: mpsc::SyncSender<Vec<u8>>,
    /// Set at the end of the run: no more waits between attempts.
    closing: Arc<AtomicBool>,
    /// Closed by the thread when the queue is empty and it ends.
    done: mpsc::Receiver<()>,
}

impl Webhook {
    /// Starts the poster of `url`; `None` when no thread can be started (logged).
    pub(crate) fn start(url: String) -> Option<Webhook> {
        let (queue, rx) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let (done_tx, done) = mpsc::channel();
        let closing = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&closing);
        let spawned = std::thread::Builder::new()
            .name("loopx-webhook".into())
            .spawn(move || {
                let poster = Poster::new(url);
                for body in rx {
                    poster.deliver(&body, &flag);
                }
                drop(done_tx);
            });
        match spawned {
            Ok(_) => Some(Webhook {
                queue,
                closing,
                done,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the webhook's thread; no webhook");
                None
            }
        }
    }

    /// Queues `note` to be posted; never waits.
    pub(crate) fn post(&self, note: &loopx_domain::notify::Notification<'_>) {
        let body = serde_json::json!({
            "text": format!("loopx: {}", slack_text(&note.message)),
            "kind": note.kind,
            "agent": note.agent,
            "project": note.project,
        });
        match self.queue.try_send(body.to_string().into_bytes()) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => tracing::warn!(
                kind = note.kind,
                "the webhook is behind by {QUEUE} notifications; this one is dropped"
            ),
            Err(mpsc::TrySendError::Disconnected(_)) => {
                tracing::warn!(kind = note.kind, "the webhook's thread ended; not posted")
            }
        }
    }

    /// Gives the notifications still queued a short grace, then lets them go.
    pub(crate) fn finish(self) {
        self.closing.store(true, Ordering::Relaxed);
        drop(self.queue);
        // The sender is dropped when the thread ends: `Disconnected`, or the grace ran out.
        if let Err(mpsc::RecvTimeoutError::Timeout) = self.done.recv_timeout(FINISH_GRACE) {
            tracing::warn!(
                "the webhook did not take the last notifications within {FINISH_GRACE:?}; dropped"
            );
        }
    }
}

/// Posts to one URL.
struct Poster {
    url: String,
    agent: ureq::Agent,
}

impl Poster {
    fn new(url: String) -> Poster {
        Poster {
            url,
            agent: loopx_http::client::agent(TIMEOUT),
        }
    }

    /// Posts `body`, trying again after a failure (a timeout, a refused connection, a 5xx or a
    /// 429) with doubling waits, at most [`ATTEMPTS`] times; a 4xx other than 429 is not tried
    /// again (the same request would be refused again).
    fn deliver(&self, body: &[u8], closing: &AtomicBool) {
        let mut wait = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let sent = self
                .agent
                .post(&self.url)
                .header("Content-Type", "application/json")
                .send(body);
            let again = match sent {
                Ok(response) if response.status().is_success() => return,
                Ok(response) => {
                    let status = response.status().as_u16();
                    tracing::warn!(status, attempt, "the webhook refused a notification");
                    status == 429 || status >= 500
                }
                Err(e) => {
                    let why = self.hidden(&e.to_string());
                    tracing::warn!(error = %why, attempt, "the webhook could not be reached");
                    true
                }
            };
            if !again || attempt == ATTEMPTS || closing.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(wait);
            wait *= 2;
        }
        tracing::warn!("a notification was not posted to the webhook");
    }

    /// `text` without the URL, nor its path (which holds the webhook's token).
    fn hidden(&self, text: &str) -> String {
        let mut text = text.replace(&self.url, "<webhook>");
        let path = self
            .url
            .splitn(4, '/')
            .nth(3)
            .filter(|p| !p.is_empty())
            .map(|p| format!("/{p}"));
        if let Some(path) = path {
            text = text.replace(&path, "/<path>");
        }
        text
    }
}

/// Text for a Slack-compatible `text` field: `&`, `<` and `>` escaped as Slack documents, so
/// that an agent's question cannot ping the channel (`<!channel>`) or dress a link as a
/// command (`<https://…|loopx gate answer q1 …>`); control characters dropped.
fn slack_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() && c != '\n' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod slack_tests {
    #[test]
    fn an_agent_s_words_cannot_ping_the_channel_or_dress_a_link() {
        let text = super::slack_text("ask <!channel> & <https://evil.example|click>\u{1b}[2J");
        assert_eq!(
            text,
            "ask &lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;[2J"
        );
    }
}
