//! A goal's scope: the path globs, relative to the project root, that its agents may change.
//!
//! Globs are `globset`'s syntax with `/` literal: `*` and `?` stay within one path segment,
//! `**` spans any number of them, `{a,b}` is either, `[ab]` and `[!a]` are classes. A pattern
//! covers the paths it matches and everything beneath them: `docs`, `docs/` and `docs/**` all
//! cover `docs/a/b.md`. Patterns are anchored at the project root. An empty scope allows the
//! whole project; nothing outside the project (`../x`) is ever in scope.
//!
//! One definition for both sides of the rule: the kernel refuses a goal whose scope does not
//! parse (`goal start`), and the supervisor's scope check compiles the scope once per slice.

use globset::{GlobBuilder, GlobMatcher};

/// A compiled scope.
#[derive(Debug, Clone)]
pub struct Scope {
    /// `None`: the whole project.
    patterns: Option<Vec<GlobMatcher>>,
}

/// A pattern that is not a glob, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scope `{pattern}` is not a glob: {why}")]
pub struct InvalidScope {
    pub pattern: String,
    pub why: String,
}

impl Scope {
    /// Compiles `patterns`, refusing the first that does not parse.
    pub fn new(patterns: &[String]) -> Result<Scope, InvalidScope> {
        Self::build(patterns, |pattern, why| {
            Err(InvalidScope {
                pattern: pattern.to_owned(),
                why,
            })
        })
    }

    /// Compiles `patterns` recorded before globs were checked: one that does not parse is
    /// taken literally (as it was then), so it still covers what it names and no more.
    pub fn recorded(patterns: &[String]) -> Scope {
        let built = Self::build(patterns, |pattern, _| {
            Ok(glob(&globset::escape(pattern)).ok())
        });
        built.unwrap_or(Scope {
            patterns: Some(Vec::new()),
        })
    }

    fn build(
        patterns: &[String],
        mut invalid: impl FnMut(&str, String) -> Result<Option<GlobMatcher>, InvalidScope>,
    ) -> Result<Scope, InvalidScope> {
        let mut matchers = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            let Some(normal) = normalise(pattern) else {
                return Ok(Scope { patterns: None });
            };
            match glob(normal) {
                Ok(m) => matchers.push(m),
                Err(why) => matchers.extend(invalid(normal, why)?),
            }
        }
        Ok(Scope {
            patterns: (!patterns.is_empty()).then_some(matchers),
        })
    }

    /// Whether the scope allows changing `path` (project-relative).
    pub fn contains(&self, path: &str) -> bool {
        if path.starts_with("../") {
            return false;
        }
        let Some(patterns) = &self.patterns else {
            return true;
        };
        // The path itself or any directory above it.
        let mut prefixes = path
            .match_indices('/')
            .map(|(i, _)| &path[..i])
            .chain(std::iter::once(path));
        prefixes.any(|prefix| patterns.iter().any(|m| m.is_match(prefix)))
    }
}

/// The pattern without `./`, surrounding space and trailing `/`; `None` when it names the
/// whole project (`.`, `./`, empty).
fn normalise(pattern: &str) -> Option<&str> {
    let pattern = pattern.trim();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let pattern = pattern.trim_end_matches('/');
    (!pattern.is_empty() && pattern != ".").then_some(pattern)
}

fn glob(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(patterns: &[&str]) -> Scope {
        Scope::new(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())
            .expect("valid globs")
    }

    #[test]
    fn patterns_cover_what_they_match_and_everything_beneath() {
        let docs = scope(&["docs/"]);
        assert!(docs.contains("docs/a.md"));
        assert!(docs.contains("docs/deep/b.md"));
        assert!(!docs.contains("src/x.md"));
        assert!(!docs.contains("docsx/a.md"));
        assert!(scope(&["src/**"]).contains("src/lib.rs"));
        assert!(scope(&["src"]).contains("src/a/lib.rs"));
        assert!(scope(&["**/*.md"]).contains("a/b/c.md"));
        assert!(scope(&["*.md"]).contains("README.md"));
        assert!(
            !scope(&["*.md"]).contains("docs/a.md"),
            "anchored at the root"
        );
        assert!(scope(&["v?.txt"]).contains("v1.txt"));
        assert!(scope(&[]).contains("anything/at/all"));
        assert!(!scope(&[]).contains("../x"), "outside the project");
        assert!(scope(&["./"]).contains("x"));
    }

    #[test]
    fn alternatives_and_classes_are_globs_too() {
        let both = scope(&["{src,tests}/**"]);
        assert!(both.contains("src/a.rs") && both.contains("tests/b.rs"));
        assert!(!both.contains("docs/c.md"));
        let class = scope(&["v[12].txt"]);
        assert!(class.contains("v1.txt") && !class.contains("v3.txt"));
        assert!(scope(&["[!.]*"]).contains("src/a.rs"));
        assert!(!scope(&["[!.]*"]).contains(".env"));
    }

    #[test]
    fn a_pattern_that_does_not_parse_is_refused_with_its_text_or_read_literally_when_recorded() {
        let err = Scope::new(&["src/{a,b".to_owned()]).expect_err("unclosed");
        assert_eq!(err.pattern, "src/{a,b");
        assert!(
            err.to_string()
                .starts_with("scope `src/{a,b` is not a glob: "),
            "{err}"
        );
        let old = Scope::recorded(&["src/{a,b".to_owned()]);
        assert!(old.contains("src/{a,b"));
        assert!(old.contains("src/{a,b/x.rs"));
        assert!(!old.contains("src/a"));
    }
}
