//! The callback listener's slots: [`GENERAL`] for any request, and [`SIGNED`] more kept for
//! requests that come signed, so that a button press or a record-change event from Lark is
//! answered while someone holds every general slot with slow requests.
//!
//! The signature covers the body, which comes last, so a reserved slot cannot wait for it to
//! know: a request in one must carry the three signature headers with a fresh timestamp
//! (checked as soon as its head is in; refused at once otherwise) and send its whole request
//! within [`SIGNED_DEADLINE`] — Lark sends it in one go, in milliseconds. The headers are not
//! secret, so someone may still claim them; against that, each newcomer that finds every
//! reserved slot taken evicts the one that has waited longest for its request to arrive. To
//! keep a press out an outsider must then open [`SIGNED`] connections within the few
//! milliseconds the press takes to arrive, over and over: a flood, not a few slow clients.

use std::collections::VecDeque;
use std::net::{Shutdown, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Requests of any kind served at once.
pub const GENERAL: usize = 16;
/// Slots kept for requests that come signed, once the general ones are taken.
pub const SIGNED: usize = 4;
/// How long a request in a reserved slot may take to arrive whole.
pub const SIGNED_DEADLINE: Duration = Duration::from_secs(1);

/// Which slot a connection holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    General,
    /// A reserved slot, by its number: only a signed request, quickly.
    Signed(u64),
}

/// The listener's slots, shared by its connections.
#[derive(Debug, Default)]
pub struct Slots {
    general: AtomicUsize,
    /// Reserved slots whose request has not arrived whole yet, oldest first, with a handle to
    /// cut the connection.
    waiting: Mutex<VecDeque<(u64, TcpStream)>>,
    next: AtomicU64,
}

impl Slots {
    /// A slot for `stream`: a general one while there is one, or else a reserved one (the
    /// reserved connection that waited longest for its request is cut when all are taken).
    pub fn take(&self, stream: &TcpStream) -> Slot {
        let general = self
            .general
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < GENERAL).then_some(n + 1)
            });
        if general.is_ok() {
            return Slot::General;
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if waiting.len() >= SIGNED
            && let Some((_, oldest)) = waiting.pop_front()
        {
            let _ = oldest.shutdown(Shutdown::Both);
        }
        if let Ok(handle) = stream.try_clone() {
            waiting.push_back((id, handle));
        }
        Slot::Signed(id)
    }

    /// The request of `slot` arrived whole: it is no longer cut for a newcomer.
    pub fn arrived(&self, slot: Slot) {
        if let Slot::Signed(id) = slot {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            waiting.retain(|(n, _)| *n != id);
        }
    }

    /// The connection of `slot` is done.
    pub fn give_back(&self, slot: Slot) {
        match slot {
            Slot::General => {
                self.general.fetch_sub(1, Ordering::SeqCst);
            }
            Slot::Signed(_) => self.arrived(slot),
        }
    }
}

/// Whether a request's head carries the three signature headers with a timestamp within
/// `max_skew` of `now_secs`: all a reserved slot can check before the body.
pub fn claims_signature(headers: &[(String, String)], now_secs: u64, max_skew: Duration) -> bool {
    let has = |name: &str| headers.iter().any(|(n, v)| n == name && !v.is_empty());
    let fresh = headers
        .iter()
        .find(|(n, _)| n == "x-lark-request-timestamp")
        .and_then(|(_, v)| v.parse::<u64>().ok())
        .is_some_and(|at| at.abs_diff(now_secs) <= max_skew.as_secs());
    has("x-lark-request-nonce") && has("x-lark-signature") && fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_general_slots_a_newcomer_evicts_the_oldest_waiting_reserved_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bound");
        let addr = listener.local_addr().expect("an address");
        let slots = Slots::default();
        let mut held = Vec::new();
        for _ in 0..GENERAL + SIGNED + 1 {
            let _client = TcpStream::connect(addr).expect("connected");
            let (server, _) = listener.accept().expect("accepted");
            held.push((_client, slots.take(&server), server));
        }
        assert!(held[..GENERAL].iter().all(|h| h.1 == Slot::General));
        assert!(
            held[GENERAL..]
                .iter()
                .all(|h| matches!(h.1, Slot::Signed(_)))
        );
        // The first reserved one was cut: its reads end.
        let mut first = &held[GENERAL].2;
        let mut byte = [0u8; 1];
        assert_eq!(std::io::Read::read(&mut first, &mut byte).ok(), Some(0));
        slots.give_back(Slot::General);
        let (_c, _) = (TcpStream::connect(addr).expect("connected"), ());
        let (server, _) = listener.accept().expect("accepted");
        assert_eq!(slots.take(&server), Slot::General, "a freed general slot");
    }

    #[test]
    fn a_reserved_slot_wants_the_signature_headers_with_a_fresh_timestamp() {
        let head = |ts: &str| {
            vec![
                ("x-lark-request-timestamp".to_owned(), ts.to_owned()),
                ("x-lark-request-nonce".to_owned(), "n".to_owned()),
                ("x-lark-signature".to_owned(), "ab".to_owned()),
            ]
        };
        let skew = Duration::from_secs(300);
        assert!(claims_signature(&head("1000"), 1100, skew));
        assert!(!claims_signature(&head("1000"), 2000, skew));
        assert!(!claims_signature(&head("x"), 1000, skew));
        assert!(!claims_signature(&head("1000")[..2], 1000, skew));
    }
}
