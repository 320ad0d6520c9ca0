//! The last bytes of a stream, kept in bounded memory at a constant cost per byte.

use std::collections::VecDeque;

/// The last `cap` bytes pushed, cut at line starts where possible.
#[derive(Debug)]
pub(super) struct Tail {
    bytes: VecDeque<u8>,
    cap: usize,
}

impl Tail {
    pub(super) fn new(cap: usize) -> Tail {
        Tail {
            bytes: VecDeque::new(),
            cap,
        }
    }

    /// Appends one line and its `\n`, dropping the oldest bytes beyond the cap.
    pub(super) fn push_line(&mut self, line: &[u8]) {
        let line = &line[line.len().saturating_sub(self.cap.saturating_sub(1))..];
        let over = (self.bytes.len() + line.len() + 1).saturating_sub(self.cap);
        self.bytes.drain(..over.min(self.bytes.len()));
        self.bytes.extend(line);
        self.bytes.push_back(b'\n');
    }

    /// Everything kept, from the first whole line; the tail is empty afterwards.
    pub(super) fn take(&mut self) -> Vec<u8> {
        let mut bytes: Vec<u8> = std::mem::take(&mut self.bytes).into();
        if bytes.len() >= self.cap
            && let Some(start) = memchr::memchr(b'\n', &bytes)
        {
            // The first line was cut: keep only whole lines.
            bytes.drain(..=start);
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_whole_lines_within_the_cap() {
        let mut tail = Tail::new(16);
        for line in ["first line", "second", "third", "fourth"] {
            tail.push_line(line.as_bytes());
        }
        assert_eq!(tail.take(), b"third\nfourth\n");
        assert!(tail.take().is_empty());
        let mut tail = Tail::new(8);
        tail.push_line(b"a line far longer than the cap");
        assert!(tail.take().len() <= 8);
    }
}
