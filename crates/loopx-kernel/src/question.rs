//! A gate question must be one a person can answer without asking back.
//!
//! It ends with `?`, has enough words to name the decision, and is not one of the placeholders that
//! make a human do the agent's thinking ("waiting for owner", "please review", "what should I
//! do?"). The check is a heuristic: it refuses questions made only of vague words, which is where
//! placeholders live, and accepts anything that names a thing.

use crate::errors::Invalid;

const HOW_TO_ASK: &str = "name the decision and the choices, e.g. \"Should t3 retry with exponential backoff (a) or fail fast (b)?\", and add `--option` for each choice";

/// Words that name no decision on their own.
const VAGUE: &[&str] = &[
    "a",
    "about",
    "advice",
    "an",
    "and",
    "any",
    "anything",
    "approve",
    "approval",
    "are",
    "ask",
    "can",
    "check",
    "confirm",
    "continue",
    "decide",
    "decision",
    "do",
    "does",
    "done",
    "else",
    "feedback",
    "for",
    "go",
    "guidance",
    "have",
    "help",
    "how",
    "i",
    "ideas",
    "input",
    "instructions",
    "is",
    "it",
    "let",
    "look",
    "me",
    "my",
    "next",
    "now",
    "of",
    "ok",
    "okay",
    "on",
    "or",
    "owner",
    "please",
    "proceed",
    "question",
    "ready",
    "review",
    "should",
    "so",
    "some",
    "something",
    "start",
    "step",
    "that",
    "the",
    "then",
    "there",
    "this",
    "thoughts",
    "to",
    "up",
    "user",
    "waiting",
    "want",
    "we",
    "what",
    "which",
    "will",
    "with",
    "work",
    "would",
    "you",
    "your",
];

/// Checks that `text` is a concrete question.
pub fn check_question(text: &str) -> Result<(), Invalid> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Invalid::Question(format!(
            "the question is empty\n(hint: {HOW_TO_ASK})"
        )));
    }
    if !text.ends_with('?') {
        return Err(Invalid::Question(format!(
            "`{text}` is not a question: a gate question ends with `?`\n(hint: {HOW_TO_ASK})"
        )));
    }
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.len() < 4 {
        return Err(Invalid::Question(format!(
            "`{text}` is too short to name a decision\n(hint: {HOW_TO_ASK})"
        )));
    }
    if words.iter().all(|w| VAGUE.contains(&w.as_str())) {
        return Err(Invalid::Question(format!(
            "`{text}` is a placeholder, not a decision a person can make\n(hint: {HOW_TO_ASK})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_refused() {
        for vague in [
            "",
            "waiting for owner",
            "please review",
            "please review?",
            "what should I do?",
            "What should we do next?",
            "Ready to proceed?",
            "Any thoughts on this?",
            "Can you please review this and approve?",
            "ok?",
        ] {
            assert!(check_question(vague).is_err(), "{vague:?} must be refused");
        }
    }

    #[test]
    fn concrete_questions_pass() {
        for concrete in [
            "Should t3 retry with exponential backoff or fail fast?",
            "Deploy the migration to staging before Friday?",
            "Is it OK to delete the legacy `v1/` API handlers?",
            "Which database should the cache use: redis or sqlite?",
        ] {
            assert!(check_question(concrete).is_ok(), "{concrete:?} must pass");
        }
    }
}
