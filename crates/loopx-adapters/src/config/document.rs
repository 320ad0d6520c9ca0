//! Parsing one TOML file into a `Raw*` value while recording problems with their locations.

use std::ops::Range;

use miette::{NamedSource, SourceSpan};
use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::did_you_mean;
use crate::errors::{ConfigKind, InvalidConfig, Problem};

/// Known keys of the table at a dotted path (array indices removed), for "did you mean".
pub(crate) type KnownKeys = fn(&[&str]) -> &'static [&'static str];

/// The problems found in one file so far.
#[derive(Debug)]
pub(crate) struct Problems {
    file: String,
    text: String,
    list: Vec<Problem>,
}

impl Problems {
    pub(crate) fn new(file: &str, text: &str) -> Self {
        Self {
            file: file.to_owned(),
            text: text.to_owned(),
            list: Vec::new(),
        }
    }

    /// Record a problem at a byte span of the file.
    pub(crate) fn push(
        &mut self,
        span: Range<usize>,
        key: Option<&str>,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        let start = span.start.min(self.text.len());
        let (line, column) = loopx_kernel::toml_file::line_column(&self.text, start);
        let len = span.end.saturating_sub(start).min(self.text.len() - start);
        self.list.push(Problem {
            file: self.file.clone(),
            line,
            column,
            key: key.map(str::to_owned),
            label: key.map_or_else(|| "here".to_owned(), |k| format!("`{k}`")),
            message: message.into(),
            help,
            span: SourceSpan::new(start.into(), len),
        });
    }

    /// Record that the text is not TOML (`message` is the parser's).
    pub(crate) fn invalid_toml(&mut self, span: Range<usize>, message: &str) {
        self.push(
            span,
            None,
            format!("invalid TOML: {}", message.trim()),
            None,
        );
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// `Ok(value)` when nothing was recorded, else every problem in file order.
    pub(crate) fn finish<T>(
        mut self,
        kind: ConfigKind,
        name: &str,
        value: Option<T>,
    ) -> Result<T, Box<InvalidConfig>> {
        match value {
            Some(value) if self.list.is_empty() => Ok(value),
            _ => {
                self.list.sort_by_key(|p| (p.line, p.column));
                Err(Box::new(InvalidConfig {
                    kind,
                    name: name.to_owned(),
                    file: self.file.clone(),
                    problems: self.list,
                    src: NamedSource::new(self.file, self.text),
                }))
            }
        }
    }
}

/// Parse `text` into `R`, recording syntax errors, whole-table type errors and unknown keys.
/// Leaf type errors are not recorded here: they live in the [`super::Checked`] values.
pub(crate) fn parse_document<R: DeserializeOwned>(
    text: &str,
    known: KnownKeys,
    problems: &mut Problems,
) -> Option<R> {
    match DeTable::parse(text) {
        Ok(tree) => document_from_tree(&tree, known, problems),
        Err(err) => {
            problems.invalid_toml(err.span().unwrap_or(0..0), err.message());
            None
        }
    }
}

/// [`parse_document`] of a tree already parsed ([`loopx_kernel::toml_file::read_toml`]).
pub(crate) fn document_from_tree<R: DeserializeOwned>(
    tree: &Spanned<DeTable<'_>>,
    known: KnownKeys,
    problems: &mut Problems,
) -> Option<R> {
    let mut unknown: Vec<Vec<String>> = Vec::new();
    let deserializer = toml::Deserializer::from(tree.clone());
    let result = serde_ignored::deserialize(deserializer, |path| unknown.push(segments(&path)));
    for path in &unknown {
        report_unknown(tree, path, known, problems);
    }
    match result {
        Ok(raw) => Some(raw),
        Err(err) => {
            let span = err.span().unwrap_or(0..0);
            problems.push(span, None, err.message().trim().to_owned(), None);
            None
        }
    }
}

fn segments(path: &serde_ignored::Path<'_>) -> Vec<String> {
    match path {
        serde_ignored::Path::Root => Vec::new(),
        serde_ignored::Path::Seq { parent, index } => {
            let mut p = segments(parent);
            p.push(index.to_string());
            p
        }
        serde_ignored::Path::Map { parent, key } => {
            let mut p = segments(parent);
            p.push(key.clone());
            p
        }
        serde_ignored::Path::Some { parent }
        | serde_ignored::Path::NewtypeStruct { parent }
        | serde_ignored::Path::NewtypeVariant { parent } => segments(parent),
    }
}

fn report_unknown(
    tree: &Spanned<DeTable<'_>>,
    path: &[String],
    known: KnownKeys,
    problems: &mut Problems,
) {
    let Some((key, parents)) = path.split_last() else {
        return;
    };
    let table_path: Vec<&str> = parents
        .iter()
        .map(String::as_str)
        .filter(|s| s.parse::<usize>().is_err())
        .collect();
    let candidates = known(&table_path);
    let dotted = path.join(".");
    let help = match did_you_mean(key, candidates.iter().copied()) {
        Some(best) => Some(format!("did you mean `{best}`?")),
        None if candidates.is_empty() => None,
        None => Some(format!("known keys here: {}", candidates.join(", "))),
    };
    let span = locate_key(tree, path).unwrap_or(0..0);
    problems.push(span, Some(&dotted), format!("unknown key `{dotted}`"), help);
}

/// The span of the last key of `path` in the parsed document.
fn locate_key(tree: &Spanned<DeTable<'_>>, path: &[String]) -> Option<Range<usize>> {
    let mut table = tree.get_ref();
    let mut value: Option<&Spanned<DeValue<'_>>> = None;
    for (i, segment) in path.iter().enumerate() {
        if let Some(current) = value {
            match current.get_ref() {
                DeValue::Table(t) => table = t,
                DeValue::Array(items) => {
                    let index: usize = segment.parse().ok()?;
                    value = Some(items.get(index)?);
                    continue;
                }
                _ => return None,
            }
        }
        let (k, v) = table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == segment.as_str())?;
        if i + 1 == path.len() {
            return Some(k.span());
        }
        value = Some(v);
    }
    None
}
