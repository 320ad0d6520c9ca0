//! Secrets never reach disk: every text bound for the store passes through a [`Redactor`].
//!
//! Known credential shapes are replaced by `[redacted:<kind>]`; so are the values of environment
//! variables named like secrets (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, …) and of any names
//! a profile marks secret. The patterns favour false positives: a redacted note costs little, a
//! leaked key costs a rotation.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use loopx_vocab::looks_like_credential;

/// Replaces secrets in text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Literal values to hide, longest first so that a value containing another is hidden whole.
    values: Vec<String>,
}

/// Shorter values would redact ordinary words.
const MIN_SECRET_VALUE_LEN: usize = 8;

fn patterns() -> &'static Regex {
    static PATTERNS: OnceLock<Regex> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let alternatives = [
            // PEM blocks, including a BEGIN whose END was cut off.
            r"(?P<pem>-----BEGIN [A-Z0-9 ]+-----(?s:.*?)(?:-----END [A-Z0-9 ]+-----|\z))",
            r"(?P<anthropic>\bsk-ant-[A-Za-z0-9_\-]{8,})",
            r"(?P<openai>\bsk-[A-Za-z0-9_\-]{16,})",
            r"(?P<github>\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}))",
            r"(?P<aws>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)",
            r"(?P<slack>\bxox[abposr]-[A-Za-z0-9\-]{10,})",
            r"(?P<google>\bAIza[0-9A-Za-z_\-]{30,})",
            r"(?P<jwt>\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,})",
            // `scheme://user:password@host`: keep the user so the note stays readable.
            r"(?P<url>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@]+:)(?P<password>[^\s/@]+)@",
        ];
        Regex::new(&alternatives.join("|")).expect("the redaction patterns are valid")
    })
}

impl Redactor {
    /// Redacts the built-in patterns only.
    pub fn new() -> Self {
        Redactor::default()
    }

    /// Also hides the values of secret-looking variables in `vars` (e.g. `std::env::vars()`) and
    /// of the variables named in `extra_names`.
    pub fn with_env<I>(mut self, vars: I, extra_names: &[String]) -> Self
    where
        I: IntoIterator<Item = (String, String)>,
    {
        for (name, value) in vars {
            if looks_like_credential(&name) || extra_names.contains(&name) {
                self = self.with_value(value);
            }
        }
        self
    }

    /// The built-in patterns plus the values of this process's secret-looking variables and of
    /// the variables named in `extra_names` (a profile's secrets).
    pub fn for_process_env(extra_names: &[String]) -> Self {
        Redactor::new().with_env(
            // `vars()` panics on a non-UTF-8 variable; such a value cannot appear in our text.
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            extra_names,
        )
    }

    /// The literal values hidden, longest first.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Also hides this literal value (ignored when shorter than 8 bytes).
    pub fn with_value(mut self, value: String) -> Self {
        if value.len() >= MIN_SECRET_VALUE_LEN && !self.values.contains(&value) {
            self.values.push(value);
            self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
        self
    }

    /// The text with every secret replaced. A value split by escape sequences
    /// (`hunt\x1b[0mer2`) is found too: the text is then stored without its escape sequences.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        if text.contains('\x1b') {
            let plain = loopx_vocab::strip_escapes(text.as_bytes());
            if self
                .values
                .iter()
                // Also when the value appears whole elsewhere in the text: a split copy of
                // it would survive the replacement below.
                .any(|v| plain.contains(v.as_str()))
            {
                out = Cow::Owned(plain);
            }
        }
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), "[redacted:env]"));
            }
        }
        if !patterns().is_match(&out) {
            return out;
        }
        let replaced = patterns().replace_all(&out, |caps: &Captures<'_>| {
            if let Some(prefix) = caps.name("url") {
                return format!("{}[redacted]@", prefix.as_str());
            }
            let kind = [
                "pem",
                "anthropic",
                "openai",
                "github",
                "aws",
                "slack",
                "google",
                "jwt",
            ]
            .into_iter()
            .find(|name| caps.name(name).is_some())
            .unwrap_or("secret");
            format!("[redacted:{kind}]")
        });
        Cow::Owned(replaced.into_owned())
    }

    /// Redacts a text an operation stores, in place, and drops what a terminal would obey:
    /// escape sequences, control characters but newline and tab, bidirectional overrides.
    /// Stored text is printed to people's terminals (`loopx run`, `gate list`, `status`,
    /// `log`): an agent's question must not retitle the window or clear the screen.
    pub fn redact_in_place(&self, text: &mut String) {
        if let Cow::Owned(safe) = terminal_safe(text) {
            *text = safe;
        }
        if let Cow::Owned(clean) = self.redact(text) {
            *text = clean;
        }
    }
}

/// `text` without what a terminal would obey (escape sequences, control characters but newline
/// and tab, bidirectional overrides): what the kernel stores of an operation's text, and what
/// its checks judge (a title of escape sequences alone is blank).
pub(crate) fn terminal_safe(text: &str) -> Cow<'_, str> {
    let obeyed = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    match text.chars().any(obeyed) {
        true => {
            let stripped = loopx_vocab::strip_escapes(text.as_bytes());
            Cow::Owned(loopx_vocab::clean_text(stripped.as_bytes()))
        }
        false => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples of each shape; split so that this file itself trips no scanner.
    pub(crate) fn samples() -> Vec<String> {
        vec![
            format!("sk-ant-{}", "api03-AbCdEfGhIjKlMnOpQrStUv"),
            format!("sk-{}", "proj-AbCdEfGhIjKlMnOpQrStUvWx"),
            format!("ghp_{}", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
            format!("github_pat_{}", "11ABCDEFG0123456789_abcdefghijklmnop"),
            format!("AKIA{}", "IOSFODNN7EXAMPLE"),
            format!("xoxb-{}", "123456789012-abcdefghijkl"),
            format!(
                "eyJhbGciOiJIUzI1NiJ9.{}",
                "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
            ),
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEow{}\n-----END RSA PRIVATE KEY-----",
                "IBAAKCAQEA"
            ),
        ]
    }

    #[test]
    fn every_known_shape_is_redacted() {
        let r = Redactor::new();
        for secret in samples() {
            let text = format!("before {secret} after");
            let clean = r.redact(&text);
            assert!(!clean.contains(&secret), "{secret:?} survived: {clean}");
            assert!(clean.starts_with("before [redacted:"), "{clean}");
        }
    }

    #[test]
    fn stored_text_keeps_nothing_a_terminal_obeys() {
        let mut text = "Proceed \u{1b}]0;PWNED\u{7} with \u{1b}[2J\u{1b}[31mred\u{1b}[0m?\r\nsecond\tline \u{202E}rev".to_owned();
        Redactor::new().redact_in_place(&mut text);
        assert_eq!(text, "Proceed  with red?\nsecond\tline rev");
        let mut plain = "two\nlines\tand a tab".to_owned();
        Redactor::new().redact_in_place(&mut plain);
        assert_eq!(plain, "two\nlines\tand a tab");
    }

    #[test]
    fn url_passwords_are_hidden_and_users_kept() {
        let clean =
            Redactor::new().redact("clone https://alice:hunter2hunter2@example.com/repo.git");
        assert_eq!(clean, "clone https://alice:[redacted]@example.com/repo.git");
    }

    #[test]
    fn secret_env_values_are_hidden() {
        let vars = vec![
            ("MY_API_KEY".to_owned(), "value-of-the-key-123".to_owned()),
            ("HOME".to_owned(), "/home/someone-long".to_owned()),
            ("CUSTOM".to_owned(), "custom-secret-value".to_owned()),
        ];
        let r = Redactor::new().with_env(vars, &["CUSTOM".to_owned()]);
        let clean = r.redact("k=value-of-the-key-123 h=/home/someone-long c=custom-secret-value");
        assert_eq!(
            clean,
            "k=[redacted:env] h=/home/someone-long c=[redacted:env]"
        );
    }

    #[test]
    fn a_value_split_by_escape_sequences_is_hidden() {
        let r = Redactor::new().with_value("hunter2hunter2".to_owned());
        let clean = r.redact("pw=hunt\x1b[0mer2hu\x1b]0;x\x07nter2 done");
        assert_eq!(clean, "pw=[redacted:env] done");
        // A whole copy beside a split one: both go.
        let clean = r.redact("a hunter2hunter2 b hunt\x1b[0mer2hunter2");
        assert_eq!(clean, "a [redacted:env] b [redacted:env]");
        // Escape sequences alone are kept as written.
        assert_eq!(r.redact("a \x1b[1mbold\x1b[0m"), "a \x1b[1mbold\x1b[0m");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let text = "Add retry to the HTTP client; see task-queue and sk-8 notes, risky=yes";
        assert!(matches!(Redactor::new().redact(text), Cow::Borrowed(_)));
    }

    #[test]
    fn a_pem_block_without_end_is_redacted_to_the_end() {
        let clean = Redactor::new().redact("key: -----BEGIN PRIVATE KEY-----\nMIIabc\nmore");
        assert_eq!(clean, "key: [redacted:pem]");
    }
}
