//! Masking known secret values in the output before it reaches the log file.
//!
//! The supervisor knows the values of the credentials it passed to the agent; an agent that
//! prints one (an `env` dump, a verbose HTTP client) must not put it on disk. Each occurrence is
//! overwritten with `*` of the same length, so the log's byte counts stay exact. A value may be
//! split across two reads, so the last `longest - 1` bytes are held back until the next read
//! (or the end, or a quiet spell: see `pump.rs`) shows whether they start a secret. Without
//! values, bytes pass through untouched.
//!
//! An agent can split a value with escape sequences (`sk-ab\x1b[0mcdef` prints as `sk-abcdef`).
//! Matching skips escape sequences (CSI, OSC, DCS and two-byte `ESC x`), so the value's own
//! bytes are masked wherever they are interleaved; the sequences are left as they were.

pub(crate) struct Mask {
    /// A SIMD searcher per value: the output may be a flood, and this runs on all of it.
    values: Vec<memchr::memmem::Finder<'static>>,
    /// Bytes not yet released: they may be the start of a value.
    carry: Vec<u8>,
    /// How many bytes to hold back: the longest value's length minus one, plus room for
    /// escape sequences inside it.
    keep: usize,
}

impl Mask {
    pub(crate) fn new(values: &[Vec<u8>]) -> Mask {
        let values: Vec<memchr::memmem::Finder<'static>> = values
            .iter()
            .filter(|v| !v.is_empty())
            .map(|v| memchr::memmem::Finder::new(v).into_owned())
            .collect();
        // A value interleaved with escape sequences spans more bytes than its length.
        let keep = values.iter().map(|f| f.needle().len()).max().unwrap_or(1) - 1 + ESCAPE_SLACK;
        Mask {
            values,
            carry: Vec::new(),
            keep,
        }
    }

    /// The bytes of `data` (and of earlier reads) that can be released now, masked.
    pub(crate) fn feed<'a>(&mut self, data: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        if self.values.is_empty() {
            return std::borrow::Cow::Borrowed(data);
        }
        self.carry.extend_from_slice(data);
        mask_all(&mut self.carry, &self.values);
        // Every value starting before `release` ends inside the buffer, so it is masked by now.
        let release = self.carry.len().saturating_sub(self.keep);
        std::borrow::Cow::Owned(self.carry.drain(..release).collect())
    }

    /// After a quiet spell: what is held back, masked, except a tail that could still be the
    /// start of a value (`sk-ab` waits for `cdef`). A line the agent finished shows at once.
    pub(crate) fn release_quiet(&mut self) -> Vec<u8> {
        if self.values.is_empty() {
            return std::mem::take(&mut self.carry);
        }
        mask_all(&mut self.carry, &self.values);
        let release = self
            .values
            .iter()
            .filter_map(|v| started_value(&self.carry, v.needle()))
            .chain(unfinished_escape(&self.carry))
            .min()
            .unwrap_or(self.carry.len());
        self.carry.drain(..release).collect()
    }

    /// What is still held back, masked: the output ended.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        mask_all(&mut self.carry, &self.values);
        std::mem::take(&mut self.carry)
    }
}

/// Where the earliest start of `value` is that reaches the end of `buf` unfinished, matching
/// through escape sequences as `mask_through_escapes` does (`sk-ab\x1b[0m` may go on `cdef`).
fn started_value(buf: &[u8], value: &[u8]) -> Option<usize> {
    let first = *value.first()?;
    let from = buf.len().saturating_sub(value.len() + ESCAPE_SLACK);
    (from..buf.len()).find(|&start| {
        if buf[start] != first {
            return false;
        }
        let (mut i, mut matched) = (start, 0);
        while i < buf.len() {
            if buf[i] == 0x1b {
                i = escape_end(buf, i);
                continue;
            }
            if matched == value.len() || buf[i] != value[matched] {
                return false;
            }
            matched += 1;
            i += 1;
        }
        matched < value.len()
    })
}

/// Where an escape sequence that the end of `buf` cuts short begins: it may hide the start of a
/// value's next byte.
fn unfinished_escape(buf: &[u8]) -> Option<usize> {
    let from = buf.len().saturating_sub(ESCAPE_SLACK);
    let esc = from + memchr::memrchr(0x1b, &buf[from..])?;
    let finished = match buf.get(esc + 1) {
        None => false,
        Some(b'[') => buf[esc + 2..].iter().any(|b| (0x40..=0x7e).contains(b)),
        Some(b']' | b'P' | b'X' | b'^' | b'_') => {
            buf[esc + 2..].contains(&0x07) || buf[esc + 2..].windows(2).any(|w| w == b"\x1b\\")
        }
        Some(_) => true,
    };
    (!finished).then_some(esc)
}

/// Bytes of escape sequences a split value may hold inside it and still be found across reads.
const ESCAPE_SLACK: usize = 256;

fn mask_all(buf: &mut [u8], values: &[memchr::memmem::Finder<'static>]) {
    mask_plain(buf, values);
    if memchr::memchr(0x1b, buf).is_some() {
        for value in values {
            mask_through_escapes(buf, value.needle());
        }
    }
}

/// Masks `value` where its bytes are interleaved with escape sequences.
fn mask_through_escapes(buf: &mut [u8], value: &[u8]) {
    let Some(&first) = value.first() else { return };
    let mut from = 0;
    while let Some(at) = memchr::memchr(first, &buf[from..]) {
        let start = from + at;
        let mut matched = Vec::with_capacity(value.len());
        let mut i = start;
        while matched.len() < value.len() && i < buf.len() {
            if buf[i] == 0x1b {
                i = escape_end(buf, i);
                continue;
            }
            if buf[i] != value[matched.len()] {
                break;
            }
            matched.push(i);
            i += 1;
        }
        if matched.len() == value.len() {
            for at in matched {
                buf[at] = b'*';
            }
            from = i;
        } else {
            from = start + 1;
        }
    }
}

/// The index after the escape sequence starting at `buf[esc]`, looking at most
/// [`ESCAPE_SLACK`] bytes ahead (an unfinished or longer one ends there: a flood of unfinished
/// sequences must not make masking quadratic).
fn escape_end(buf: &[u8], esc: usize) -> usize {
    let buf = &buf[..buf.len().min(esc + ESCAPE_SLACK)];
    let Some(&kind) = buf.get(esc + 1) else {
        return buf.len();
    };
    match kind {
        // CSI: parameters and intermediates, then a final byte 0x40..=0x7e.
        b'[' => buf[esc + 2..]
            .iter()
            .position(|b| (0x40..=0x7e).contains(b))
            .map_or(buf.len(), |p| esc + 2 + p + 1),
        // OSC, DCS, SOS, PM, APC: up to BEL or ST (`ESC \`).
        b']' | b'P' | b'X' | b'^' | b'_' => {
            let mut i = esc + 2;
            while i < buf.len() {
                if buf[i] == 0x07 {
                    return i + 1;
                }
                if buf[i] == 0x1b && buf.get(i + 1) == Some(&b'\\') {
                    return i + 2;
                }
                i += 1;
            }
            buf.len()
        }
        _ => esc + 2,
    }
}

fn mask_plain(buf: &mut [u8], values: &[memchr::memmem::Finder<'static>]) {
    for value in values {
        let len = value.needle().len();
        let mut from = 0;
        while let Some(at) = value.find(&buf[from..]) {
            let start = from + at;
            buf[start..start + len].fill(b'*');
            from = start + len;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_quiet_spell_keeps_a_value_split_by_escape_sequences() {
        let mut mask = Mask::new(&[b"sk-abcdef".to_vec()]);
        assert!(mask.feed(b"key sk-ab\x1b[0m").is_empty());
        assert_eq!(mask.release_quiet(), b"key ");
        assert!(mask.feed(b"cd\x1b[").is_empty());
        assert_eq!(
            mask.release_quiet(),
            b"",
            "an unfinished escape is kept too"
        );
        let rest = mask.feed(b"1mef\n").into_owned();
        let all = [rest, mask.release_quiet(), mask.finish()].concat();
        assert_eq!(all, b"*****\x1b[0m**\x1b[1m**\n");
    }

    #[test]
    fn a_quiet_spell_releases_finished_lines_but_not_the_start_of_a_value() {
        let mut mask = Mask::new(&[b"sk-abcdef".to_vec()]);
        assert!(mask.feed(b"token: sk-ab").is_empty(), "held back");
        assert_eq!(mask.release_quiet(), b"token: ");
        assert_eq!(mask.feed(b"cdef and more\n").as_ref(), b"");
        assert_eq!(mask.release_quiet(), b"********* and more\n");
        assert_eq!(mask.finish(), b"");
    }

    fn through(values: &[&str], chunks: &[&[u8]]) -> Vec<u8> {
        let values: Vec<Vec<u8>> = values.iter().map(|v| v.as_bytes().to_vec()).collect();
        let mut mask = Mask::new(&values);
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend_from_slice(&mask.feed(chunk));
        }
        out.extend(mask.finish());
        out
    }

    #[test]
    fn a_value_split_across_reads_is_masked_and_lengths_are_kept() {
        let out = through(&["hunter2hunter2"], &[b"token=hunter2", b"hunter2 ok"]);
        assert_eq!(out, b"token=************** ok");
    }

    #[test]
    fn a_value_split_by_escape_sequences_is_masked() {
        let out = through(
            &["hunter2hunter2"],
            &[b"k=hunt\x1b[0mer2hu\x1b]0;t\x07nter2 \x1b[1mbold\x1b[0m"],
        );
        assert_eq!(
            out,
            b"k=****\x1b[0m*****\x1b]0;t\x07***** \x1b[1mbold\x1b[0m"
        );
    }

    #[test]
    fn without_values_bytes_pass_untouched() {
        let mut mask = Mask::new(&[]);
        assert!(matches!(mask.feed(b"abc"), std::borrow::Cow::Borrowed(_)));
        assert!(mask.finish().is_empty());
    }

    proptest! {
        #[test]
        fn no_split_lets_a_value_through(
            prefix in proptest::collection::vec(any::<u8>(), 0..40),
            suffix in proptest::collection::vec(any::<u8>(), 0..40),
            cuts in proptest::collection::vec(0usize..100, 0..6),
        ) {
            let secret = b"s3cr3t-v4lue".to_vec();
            let mut input = prefix.clone();
            input.extend_from_slice(&secret);
            input.extend_from_slice(&suffix);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut last = 0;
            for cut in cuts {
                chunks.push(&input[last..cut]);
                last = cut;
            }
            chunks.push(&input[last..]);
            let out = through(&["s3cr3t-v4lue"], &chunks);
            prop_assert_eq!(out.len(), input.len());
            prop_assert!(!out.windows(secret.len()).any(|w| w == secret.as_slice()));
        }
    }
}
