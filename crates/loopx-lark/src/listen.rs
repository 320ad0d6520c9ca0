//! The callback listener: Lark POSTs a card's button press to `/lark/callback` on
//! `[lark.questions] listen` (through the HTTPS proxy or tunnel a person puts in front). Each
//! request is opened by the [`Verifier`](crate::callback::Verifier); a press becomes the
//! gate's answer by the person `human:lark:<open_id>`, through the application layer's one
//! rule for an answer, and the card is changed to show it. A record-change event of the board's
//! Base is recorded for the board's next pass ([`crate::changes`]). Anything refused changes
//! nothing and is logged with its reason.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loopx_app::{App, Caller};
use loopx_http::{Limits, Request, Response};
use loopx_kernel::store::AnswerChoice;
use loopx_kernel::{GateId, Project};
use serde_json::{Value, json};

use crate::callback::{Callback, MAX_SKEW, Verifier};
use crate::slots::{SIGNED_DEADLINE, Slot, Slots, claims_signature};

/// The path Lark is told to call.
pub const CALLBACK_PATH: &str = "/lark/callback";
/// Reached from the internet through a proxy: every byte is hostile until checked.
const LIMITS: Limits = Limits {
    // A card callback is a few KiB.
    max_body: 64 * 1024,
    max_head: 16 * 1024,
    max_headers: 64,
    // The whole request (head and body) within 5 s of connecting: a deadline per read let a
    // client that sent a byte every 4 s hold a slot for as long as it liked.
    header_timeout: Duration::from_secs(5),
    request_timeout: Duration::from_secs(5),
    write_timeout: Duration::from_secs(5),
    // A bound on connections alive at once; the slots of [`crate::slots`] decide who is
    // served, and cut reserved ones, well below it.
    max_connections: 128,
    // Unused: the listener serves until `loopx run`'s process ends.
    shutdown_grace: Duration::from_secs(2),
};

/// What answering needs besides the request.
#[derive(Debug)]
pub struct Answering {
    pub project: Project,
    pub loopx_exe: Option<PathBuf>,
    /// Approvals may be answered from Lark (`[lark.questions] approvals`).
    pub approvals: bool,
    pub verifier: Mutex<Verifier>,
    /// The board's Base (`[lark.board] app_token`) and where its record-change events are
    /// kept; `None` without a board.
    pub board: Option<(String, PathBuf)>,
}

/// Serves `listener` until the process ends, in the slots of [`crate::slots`]:
/// [`crate::slots::GENERAL`] for any request, [`crate::slots::SIGNED`] more for signed ones.
pub fn serve(listener: TcpListener, answering: Arc<Answering>) {
    let listening = Listening {
        answering,
        slots: Arc::new(Slots::default()),
    };
    match loopx_http::Server::start(listener, LIMITS, listening) {
        Ok(server) => server.wait(),
        Err(e) => tracing::warn!(error = %e, "cannot serve Lark's callbacks"),
    }
}

/// The listener as `loopx-http` serves it.
struct Listening {
    answering: Arc<Answering>,
    slots: Arc<Slots>,
}

/// A connection's slot, given back when it closes.
struct Held {
    slot: Slot,
    slots: Arc<Slots>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.slots.give_back(self.slot);
    }
}

impl loopx_http::Service for Listening {
    type Conn = Held;

    fn accept(&self, stream: &TcpStream) -> Result<Held, Response> {
        // An agent shares the host's loopback: its connections would hold the slots a
        // person's press needs (the board refuses them the same way).
        if let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr())
            && loopx_os::tcp_peer_in_slice(local, peer)
        {
            return Err(reply(
                403,
                &json!({"error": "connections from inside a slice are refused"}),
            ));
        }
        let slot = self.slots.take(stream);
        let slots = Arc::clone(&self.slots);
        Ok(Held { slot, slots })
    }

    fn request_timeout(&self, held: &Held) -> Option<Duration> {
        matches!(held.slot, Slot::Signed(_)).then_some(SIGNED_DEADLINE)
    }

    /// A reserved slot serves only a request that claims a signature; the body is not waited
    /// for otherwise.
    fn head(&self, held: &Held, request: &Request) -> Result<(), Response> {
        let signed_only = matches!(held.slot, Slot::Signed(_));
        if signed_only && !claims_signature(&request.headers, now_secs(), MAX_SKEW) {
            return Err(self.refused(503, "busy: only a signed request is served now"));
        }
        Ok(())
    }

    fn handle(&self, held: &Held, request: Request) -> Response {
        self.slots.arrived(held.slot);
        let (status, body) = match (request.method.as_str(), request.path.as_str()) {
            ("POST", CALLBACK_PATH) => callback(&self.answering, &request.headers, &request.body),
            _ => (404, json!({"error": format!("POST {CALLBACK_PATH} only")})),
        };
        reply(status, &body)
    }

    fn refused(&self, status: u16, why: &str) -> Response {
        reply(status, &json!({"error": why}))
    }
}

fn callback(answering: &Answering, headers: &[(String, String)], body: &[u8]) -> (u16, Value) {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let now = now_secs();
    let opened = answering
        .verifier
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .open(header, body, now);
    match opened {
        Err(refusal) => {
            tracing::warn!(%refusal, "refused a Lark callback");
            (401, json!({"error": refusal.to_string()}))
        }
        Ok(Callback::Challenge(challenge)) => (200, json!({"challenge": challenge})),
        Ok(Callback::Press {
            open_id,
            gate,
            option,
            ..
        }) => (200, press(answering, &open_id, &gate, option)),
        Ok(Callback::RecordChanged(event)) => record_changed(answering, &event),
    }
}

/// Keeps who changed which cell of the board's Base for the board's next pass. Lark is answered
/// 200 unless the event could not be kept (then it sends it again).
fn record_changed(answering: &Answering, event: &Value) -> (u16, Value) {
    let now = crate::changes::now_ms();
    let changed = match crate::changes::parse(event, now) {
        Ok(changed) => changed,
        Err(why) => {
            tracing::warn!(%why, "refused a Lark record-change event");
            return (200, json!({"ignored": why}));
        }
    };
    let Some((base, file)) = &answering.board else {
        return (200, json!({"ignored": "no [lark.board]"}));
    };
    if &changed.file_token != base {
        tracing::warn!(file_token = %changed.file_token, "refused a record-change event of another Base");
        return (200, json!({"ignored": "another Base"}));
    }
    match crate::changes::record(file, &changed, now) {
        Ok(true) => (200, json!({})),
        Ok(false) => (200, json!({"ignored": "heard already, or too old"})),
        Err(why) => {
            tracing::warn!(%why, "cannot keep a Lark record-change event");
            (503, json!({"error": why}))
        }
    }
}

/// Answers `gate` with `option` as `human:lark:<open_id>`; the callback's answer: a toast and,
/// when answered, the card showing it.
fn press(answering: &Answering, open_id: &str, gate: &str, option: u32) -> Value {
    let toast = |kind: &str, text: String| json!({"toast": {"type": kind, "content": text}});
    // A refusal in words: the kernel's errors end with the command that would help at the
    // terminal, which nobody can type in Lark.
    let refused = |e: &dyn std::fmt::Display| match crate::words::plain(&e.to_string()) {
        why if why.is_empty() => toast("error", "loopx refused the answer".to_owned()),
        why => toast("error", why),
    };
    let Ok(id) = gate.parse::<GateId>() else {
        let gate = crate::words::quote(gate, 40);
        return toast("error", format!("{gate} is not a question of loopx"));
    };
    let app = App::new(
        answering.project.clone(),
        Caller::person(&format!("lark:{open_id}")),
        answering.loopx_exe.clone(),
    );
    match app.gate(id) {
        Ok(g) if loopx_app::gate::is_approval(&g) && !answering.approvals => {
            tracing::warn!(gate, open_id, "refused an approval answered from Lark");
            return toast(
                "error",
                format!("{id} is an approval: answer it at the machine"),
            );
        }
        Ok(_) => {}
        Err(e) => return refused(&e),
    }
    match app.answer_gate(id, AnswerChoice::Option(option), None) {
        Ok(answered) => {
            tracing::info!(gate, open_id, option, "a question was answered from Lark");
            let text = answered
                .gate
                .answer
                .as_ref()
                .map_or(String::new(), |a| a.text.clone());
            let mut out = toast("success", format!("Answered {id}: {text}"));
            out["card"] = json!({"type": "raw", "data": crate::cards::closed_card(&answered.gate)});
            out
        }
        Err(e) => {
            tracing::warn!(gate, open_id, error = %e, "an answer from Lark was refused");
            refused(&e)
        }
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn reply(status: u16, body: &Value) -> Response {
    Response::new(status, "application/json", body.to_string())
}
