//! The one list of words that make an environment variable's name look like a credential.
//!
//! Two rules read it and must agree: a profile may pass such a variable to an agent only by
//! naming it a secret (`[env] secrets`), never through `pass` or `allow`; and the redactor hides
//! the value of every such variable wherever it shows up. When the lists were written twice,
//! `DB_PASSWD` and `SESSION_COOKIE` were redacted but passed validation as plain variables.

/// Upper-case words that, anywhere in a variable's name, mark it as credential-like.
pub const CREDENTIAL_WORDS: [&str; 7] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "COOKIE",
];

/// Whether an environment variable's name looks like it holds a credential.
pub fn looks_like_credential(name: &str) -> bool {
    credential_word(name).is_some()
}

/// The first of [`CREDENTIAL_WORDS`] in a variable's name (any case): the rule a refusal names.
pub fn credential_word(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    CREDENTIAL_WORDS
        .into_iter()
        .find(|word| upper.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_both_rules_once_disagreed_on_are_credentials() {
        for name in ["DB_PASSWD", "SESSION_COOKIE", "api_key", "GH_TOKEN"] {
            assert!(looks_like_credential(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "TERM"] {
            assert!(!looks_like_credential(name), "{name}");
        }
    }
}
