//! Errors of this crate. Configuration problems are collected per file and rendered with their
//! location; everything else is a small `thiserror` enum.

use std::fmt;
use std::path::PathBuf;

use miette::{Diagnostic, NamedSource, SourceSpan};

/// One thing wrong in a configuration file, with its location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Diagnostic, serde::Serialize)]
#[error("{message}")]
pub struct Problem {
    /// The file as given to the loader (or `<builtin>/NAME.toml` for an embedded adapter).
    pub file: String,
    /// 1-based line of the offending key or value.
    pub line: usize,
    /// 1-based column (in characters) of the offending key or value.
    pub column: usize,
    /// Dotted key path (`limits.max_time`), when the problem belongs to a key.
    pub key: Option<String>,
    /// What is wrong, as a lowercase fragment.
    pub message: String,
    /// What to do about it.
    #[help]
    pub help: Option<String>,
    #[label("{label}")]
    #[serde(skip)]
    pub(crate) span: SourceSpan,
    /// What the label under the source line says (the key, so the message is not repeated).
    #[serde(skip)]
    pub(crate) label: String,
}

impl Problem {
    /// `file:line:column: message (hint: …)`, the one-line form for logs and `--json`-less output.
    pub fn one_line(&self) -> String {
        let mut out = format!(
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        );
        if let Some(help) = &self.help {
            out.push_str(" (hint: ");
            out.push_str(help);
            out.push(')');
        }
        out
    }
}

/// Which kind of file a [`InvalidConfig`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    /// An `adapters/*.toml` file.
    Adapter,
    /// A `profiles/*.toml` file.
    Profile,
    /// The project's `.loopx/loopx.toml`.
    Project,
}

impl fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Adapter => "adapter",
            Self::Profile => "profile",
            Self::Project => "project config",
        })
    }
}

/// Every problem found in one file, reported together.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("invalid {kind} `{name}` ({count} problem{plural} in `{file}`)", count = problems.len(), plural = if problems.len() == 1 { "" } else { "s" })]
#[diagnostic(code(loopx::config::invalid))]
pub struct InvalidConfig {
    /// Adapter or profile.
    pub kind: ConfigKind,
    /// The adapter or profile name (the file stem).
    pub name: String,
    /// The file as given to the loader.
    pub file: String,
    /// Every problem, in file order.
    #[related]
    pub problems: Vec<Problem>,
    #[source_code]
    pub(crate) src: NamedSource<String>,
}

impl InvalidConfig {
    /// One line per problem (`file:line:column: message (hint: …)`).
    pub fn one_line_each(&self) -> String {
        self.problems
            .iter()
            .map(Problem::one_line)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The full miette rendering without colours, as the CLI prints it on a plain terminal.
    pub fn render_plain(&self) -> String {
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_width(100);
        let mut out = String::new();
        // Writing into a String cannot fail; a formatting error here would be a miette bug.
        if handler.render_report(&mut out, self).is_err() {
            out = self.one_line_each();
        }
        out
    }
}

/// Loading an adapter or a profile failed.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum LoadError {
    /// The file could not be read.
    #[error("failed to read `{path}`")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a usable name (the stem must be an id such as `executor`).
    #[error(
        "`{path}` is not a valid {kind} file name\n(hint: names match `^[a-z][a-z0-9-]{{0,63}}$` and end in `.toml`)"
    )]
    BadFileName {
        /// The file.
        path: PathBuf,
        /// Adapter or profile.
        kind: ConfigKind,
    },
    /// No profile by that name.
    #[error("no profile named `{name}` in `{dir}`{hint}")]
    UnknownProfile {
        /// The requested name.
        name: String,
        /// Where we looked.
        dir: PathBuf,
        /// A "did you mean" line, or empty.
        hint: String,
    },
    /// The file was read but is invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(Box<InvalidConfig>),
}

/// Rendering a launch failed: the request does not fit the profile or adapter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Diagnostic)]
pub enum LaunchError {
    /// The requested level is above what the profile allows.
    #[error("profile `{profile}` allows at most `{allowed}`, but `{requested}` was requested")]
    AboveProfile {
        /// Profile name.
        profile: String,
        /// The profile's level.
        allowed: crate::PermissionLevel,
        /// The requested level.
        requested: crate::PermissionLevel,
    },
    /// The adapter has no flags for the requested level.
    #[error(
        "adapter `{adapter}` cannot express permission level `{requested}`\n(hint: it supports {supported})"
    )]
    NotExpressible {
        /// Adapter name.
        adapter: String,
        /// The requested level.
        requested: crate::PermissionLevel,
        /// The levels it supports, comma separated.
        supported: String,
    },
    /// The prompt is too long for one argv element (Linux `MAX_ARG_STRLEN`).
    #[error(
        "the prompt is {len} bytes, too long to pass as an argument to `{adapter}` (limit {limit})\n(hint: use an adapter with `delivery = \"file\"` or shorten the handoff)"
    )]
    PromptTooLong {
        /// Adapter name.
        adapter: String,
        /// Prompt length in bytes.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The prompt contains a NUL byte, which no argv element or file path convention can carry.
    #[error("the prompt contains a NUL byte")]
    NulInPrompt,
    /// A stream-json launch whose final command line (the profile's `extra_args` included)
    /// lacks what live input needs.
    #[error(
        "profile `{profile}` launches `{adapter}` with `prompt.delivery = \"stream-json\"` but without `{missing}`\n(hint: remove what overrides them from the profile's `extra_args`)"
    )]
    LiveInputFlags {
        /// Profile name.
        profile: String,
        /// Adapter name.
        adapter: String,
        /// The flags missing, joined.
        missing: String,
    },
}
