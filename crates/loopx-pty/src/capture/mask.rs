//! Masking known secret values in the output before it reaches the log file.
//!
//! The supervisor knows the values of the credentials it passed to the agent; an agent that
//! prints one (an `env` dump, a verbose HTTP client) must not put it on disk. Each occurrence is
//! overwritten with `*` of the same length, so the log's byte counts stay exact. A value may be
//! split across two reads, so the last `longest - 1` bytes are held back until the next read
//! (or the end) shows whether they start a secret. Without values, bytes pass through untouched.

pub(crate) struct Mask {
    /// A SIMD searcher per value: the output may be a flood, and this runs on all of it.
    values: Vec<memchr::memmem::Finder<'static>>,
    /// Bytes not yet released: they may be the start of a value.
    carry: Vec<u8>,
    /// How many bytes to hold back: the longest value's length minus one.
    keep: usize,
}

impl Mask {
    pub(crate) fn new(values: &[Vec<u8>]) -> Mask {
        let values: Vec<memchr::memmem::Finder<'static>> = values
            .iter()
            .filter(|v| !v.is_empty())
            .map(|v| memchr::memmem::Finder::new(v).into_owned())
            .collect();
        let keep = values.iter().map(|f| f.needle().len()).max().unwrap_or(1) - 1;
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

    /// What is still held back, masked: the output ended.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        mask_all(&mut self.carry, &self.values);
        std::mem::take(&mut self.carry)
    }
}

fn mask_all(buf: &mut [u8], values: &[memchr::memmem::Finder<'static>]) {
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
