//! When a live session's stdin closes, as a rule of its own: which message lines wait for
//! their echo, and what a turn's result means for the session.

use std::collections::HashMap;

use loopx_kernel::ids::MessageId;

/// What a turn's result means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtResult {
    /// Nothing written during the turn is still unread: close stdin, the CLI ends.
    Close,
    /// A message written during the turn has no echo yet: the CLI starts the next turn with it
    /// (its echo comes about a quarter of a second after the result). Wait for the echo, for a
    /// bounded time.
    WaitForEcho,
}

/// The lines written into a session and the turns they fall in.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    /// Lines of messages written whose echo has not come, by uuid.
    pending: HashMap<String, MessageId>,
    /// A message line was written since the last result.
    written_this_turn: bool,
}

impl Turns {
    /// `message` was written as the line `uuid`.
    pub(crate) fn written(&mut self, uuid: String, message: MessageId) {
        self.pending.insert(uuid, message);
        self.written_this_turn = true;
    }

    /// The CLI echoed the line `uuid`: the message it carried, the first time.
    pub(crate) fn echoed(&mut self, uuid: &str) -> Option<MessageId> {
        self.pending.remove(uuid)
    }

    /// A turn's result. A line written in an earlier turn and never echoed does not hold the
    /// session open: by now the CLI has read it (a CLI that never echoes cannot keep a slice
    /// open).
    pub(crate) fn result(&mut self) -> AtResult {
        let unread = self.written_this_turn && !self.pending.is_empty();
        self.written_this_turn = false;
        match unread {
            true => AtResult::WaitForEcho,
            false => AtResult::Close,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(n: u64) -> MessageId {
        MessageId(n)
    }

    #[test]
    fn a_message_taken_into_the_running_turn_closes_at_its_result() {
        let mut turns = Turns::default();
        turns.written("u1".into(), m(1));
        assert_eq!(turns.echoed("u1"), Some(m(1)));
        assert_eq!(turns.result(), AtResult::Close);
    }

    #[test]
    fn a_message_queued_for_the_next_turn_holds_the_session_until_that_turn_s_result() {
        let mut turns = Turns::default();
        turns.written("u1".into(), m(1));
        assert_eq!(turns.result(), AtResult::WaitForEcho);
        assert_eq!(turns.echoed("u1"), Some(m(1)));
        assert_eq!(turns.echoed("u1"), None, "delivered once");
        assert_eq!(turns.result(), AtResult::Close);
    }

    #[test]
    fn a_message_never_echoed_holds_the_session_one_turn_at_most() {
        let mut turns = Turns::default();
        turns.written("u1".into(), m(1));
        assert_eq!(turns.result(), AtResult::WaitForEcho);
        assert_eq!(turns.result(), AtResult::Close);
    }

    #[test]
    fn each_turn_with_a_new_unread_message_holds_the_session_again() {
        let mut turns = Turns::default();
        turns.written("u1".into(), m(1));
        assert_eq!(turns.result(), AtResult::WaitForEcho);
        assert_eq!(turns.echoed("u1"), Some(m(1)));
        turns.written("u2".into(), m(2));
        assert_eq!(turns.result(), AtResult::WaitForEcho);
        assert_eq!(turns.echoed("u2"), Some(m(2)));
        assert_eq!(turns.result(), AtResult::Close);
    }

    #[test]
    fn the_prompt_s_echo_and_a_stranger_s_change_nothing() {
        let mut turns = Turns::default();
        assert_eq!(turns.echoed("prompt"), None);
        assert_eq!(turns.result(), AtResult::Close);
    }
}
