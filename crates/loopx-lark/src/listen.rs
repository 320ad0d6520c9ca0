//! The callback listener: Lark POSTs a card's button press to `/lark/callback` on
//! `[lark.questions] listen` (through the HTTPS proxy or tunnel a person puts in front). Each
//! request is opened by the [`Verifier`](crate::callback::Verifier); a press becomes the
//! gate's answer by the person `human:lark:<open_id>`, through the application layer's one
//! rule for an answer, and the card is changed to show it. A record-change event of the board's
//! Base is recorded for the board's next pass ([`crate::changes`]). Anything refused changes
//! nothing and is logged with its reason.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loopx_app::{App, Caller};
use loopx_kernel::store::AnswerChoice;
use loopx_kernel::{GateId, Project};
use serde_json::{Value, json};

use crate::callback::{Callback, MAX_SKEW, Verifier};
use crate::slots::{SIGNED_DEADLINE, Slot, Slots, claims_signature};

/// The path Lark is told to call.
pub const CALLBACK_PATH: &str = "/lark/callback";
/// A request head larger than this is refused.
const MAX_HEAD: usize = 16 * 1024;
/// A body larger than this is refused (a card callback is a few KiB).
const MAX_BODY: usize = 64 * 1024;
/// How long a client may take to send its whole request (head and body): a deadline per read
/// let a client that sent a byte every 4 s hold a slot for as long as it liked.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

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

/// Serves `listener` until the process ends, one thread per request, in the slots of
/// [`crate::slots`]: [`crate::slots::GENERAL`] for any request, [`crate::slots::SIGNED`] more
/// for signed ones.
pub fn serve(listener: TcpListener, answering: Arc<Answering>) {
    let slots = Arc::new(Slots::default());
    for stream in listener.incoming().flatten() {
        // An agent shares the host's loopback: its connections would hold the slots a
        // person's press needs (the board refuses them the same way).
        if let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr())
            && loopx_os::tcp_peer_in_slice(local, peer)
        {
            let _ = reply(
                &stream,
                403,
                &json!({"error": "connections from inside a slice are refused"}),
            );
            continue;
        }
        let slot = slots.take(&stream);
        let (answering, slots) = (Arc::clone(&answering), Arc::clone(&slots));
        std::thread::spawn(move || {
            handle(&stream, &answering, &slots, slot);
            slots.give_back(slot);
        });
    }
}

fn handle(stream: &TcpStream, answering: &Answering, slots: &Slots, slot: Slot) {
    let deadline = Deadline {
        stream,
        at: std::time::Instant::now()
            + match slot {
                Slot::General => REQUEST_DEADLINE,
                Slot::Signed(_) => SIGNED_DEADLINE,
            },
    };
    let signed_only = matches!(slot, Slot::Signed(_));
    let (status, body) = match read(deadline, signed_only) {
        Ok((method, path, headers, body)) if method == "POST" && path == CALLBACK_PATH => {
            slots.arrived(slot);
            callback(answering, &headers, &body)
        }
        Ok(_) => (404, json!({"error": format!("POST {CALLBACK_PATH} only")})),
        Err((status, why)) => (status, json!({"error": why})),
    };
    let _ = reply(stream, status, &body);
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

type Parsed = (String, String, Vec<(String, String)>, Vec<u8>);

/// Reads with one deadline for the whole request.
struct Deadline<'a> {
    stream: &'a TcpStream,
    at: std::time::Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.at.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the request took longer than its deadline",
            ));
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        stream.read(buf)
    }
}

/// One request: method, path, headers (lowercase names), body; or the status and why not. With
/// `signed_only` (a reserved slot) a head without the signature headers ends it before the body.
fn read(mut stream: Deadline<'_>, signed_only: bool) -> Result<Parsed, (u16, String)> {
    let bad = |why: String| (400, why);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).map_err(|e| bad(e.to_string()))?;
        if n == 0 {
            return Err(bad("the request ended early".into()));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large".into()));
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    request
        .parse(&buf[..head_end])
        .map_err(|e| bad(format!("malformed request: {e}")))?;
    let method = request.method.unwrap_or_default().to_owned();
    let path = request.path.unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).trim().to_owned(),
            )
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return Err(bad("request body too large".into()));
    }
    if signed_only && !claims_signature(&headers, now_secs(), MAX_SKEW) {
        return Err((503, "busy: only a signed request is served now".into()));
    }
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).map_err(|e| bad(e.to_string()))?;
        if n == 0 {
            return Err(bad("the body ended early".into()));
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok((method, path, headers, body))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn reply(mut stream: &TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Service Unavailable",
    };
    // One write: a client reading the first packet sees the status line whole.
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes())?;
    stream.flush()
}
