//! What the project's `loopx.toml` says about its store, read by the kernel itself before
//! anything else can be (`[store] url`: where the store is; `[quota] ledger`: where its
//! accounts' quota state is kept). Every other setting is read above the kernel
//! (`loopx_adapters::ProjectConfig`), which checks these two by the same rules.

use std::path::PathBuf;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::errors::{KernelError, StoreError};
use crate::project::Project;
use crate::toml_file::{self, TomlFileError};

/// Where a project's store is: the URL this process was given ([`set_url_override`], the
/// surface's `LOOPX_STORE_URL`), else `[store] url` in `.loopx/loopx.toml`; `None` is the redb
/// file in `.loopx/`.
pub fn store_url(project: &Project) -> Result<Option<String>, KernelError> {
    if project.store_settings().local_only {
        return match configured_url(project)? {
            None => Ok(None),
            Some(url) => Err(StoreError::Config {
                path: project.state_dir().join("loopx.toml"),
                why: format!(
                    "its store is the database {}, which this command does not open (`loopx status` in the project does)",
                    super::pg::redact_url(&url)
                ),
            }
            .into()),
        };
    }
    if let Some(url) = &project.store_settings().url {
        if loopx_vocab::is_postgres_url(url) {
            return Ok(Some(url.clone()));
        }
        return Err(StoreError::Config {
            path: PathBuf::from(super::pg::redact_url(url)),
            why: "the environment variable LOOPX_STORE_URL is not a PostgreSQL URL (postgres://user@host:port/database); unset it to keep the store in .loopx/state.redb".to_owned(),
        }
        .into());
    }
    configured_url(project)
}

/// The `[store] url` of the project's `loopx.toml`, checked; `None` when it names none.
pub fn configured_url(project: &Project) -> Result<Option<String>, KernelError> {
    // A file that does not parse is an error: guessing "no [store]" would quietly use a stale
    // `.loopx/state.redb` of a project that moved to a database.
    read_setting(project, "where the store is", file_url).map(Option::flatten)
}

/// Where the project keeps its accounts' quota state: `[quota] ledger` of its `loopx.toml`
/// (`"account"`, the per-user book, when it says nothing).
pub fn configured_ledger(project: &Project) -> Result<super::account_book::Ledger, KernelError> {
    let found = read_setting(project, "where its quota ledger is", file_ledger)?;
    Ok(found
        .flatten()
        .unwrap_or(super::account_book::Ledger::Account))
}

/// One setting of the project's `loopx.toml`, read by `setting` from the parsed file (`None`
/// when there is no file); an error names the file, the line and `what` cannot be told.
fn read_setting<T>(
    project: &Project,
    what: &str,
    setting: impl FnOnce(&str, &Spanned<DeTable<'_>>) -> Result<T, (usize, String)>,
) -> Result<Option<T>, KernelError> {
    let path = project.state_dir().join("loopx.toml");
    let at_line = |line: usize, why: String| -> KernelError {
        let path = PathBuf::from(format!("{}:{line}", path.display()));
        StoreError::Config { path, why }.into()
    };
    // The one reader of configuration files, so that a FIFO or a huge file is refused here as
    // everywhere.
    match toml_file::read_toml(&path, |text, doc| setting(text, &doc)) {
        Ok(None) => Ok(None),
        Ok(Some(found)) => found.map(Some).map_err(|(line, why)| at_line(line, why)),
        Err(TomlFileError::Read { source, .. }) => Err(StoreError::io(&path, source).into()),
        Err(TomlFileError::Syntax { line, message, .. }) => Err(at_line(
            line,
            format!("it does not parse, so {what} cannot be told ({message})"),
        )),
    }
}

/// The checked `[quota] ledger` of a parsed `loopx.toml`.
fn file_ledger(
    text: &str,
    doc: &Spanned<DeTable<'_>>,
) -> Result<Option<super::account_book::Ledger>, (usize, String)> {
    let line = |value: &Spanned<DeValue<'_>>| toml_file::line_column(text, value.span().start).0;
    let Some(quota) = doc.get_ref().get("quota") else {
        return Ok(None);
    };
    let DeValue::Table(table) = quota.get_ref() else {
        let why = "`quota` must be a table: [quota] with ledger = \"account\" or \"project\"";
        return Err((line(quota), why.to_owned()));
    };
    let Some(ledger) = table.get("ledger") else {
        return Ok(None);
    };
    match ledger.get_ref() {
        DeValue::String(written) => match super::account_book::Ledger::parse(written.trim()) {
            Some(found) => Ok(Some(found)),
            None => Err((
                line(ledger),
                format!(
                    "`[quota] ledger` is \"{written}\"\n(hint: \"account\" shares each account's ledger with this user's other projects; \"project\" keeps it in this project)"
                ),
            )),
        },
        _ => Err((
            line(ledger),
            "`[quota] ledger` must be the string \"account\" or \"project\"".to_owned(),
        )),
    }
}

/// The checked `[store] url` of a parsed `loopx.toml` (only `[store]` is read: the rest is
/// checked where it is used); an error is its line and what is wrong.
fn file_url(text: &str, doc: &Spanned<DeTable<'_>>) -> Result<Option<String>, (usize, String)> {
    let line = |value: &Spanned<DeValue<'_>>| toml_file::line_column(text, value.span().start).0;
    let Some(store) = doc.get_ref().get("store") else {
        return Ok(None);
    };
    let DeValue::Table(table) = store.get_ref() else {
        let why = "`store` must be a table: [store] with url = \"postgres://…\"";
        return Err((line(store), why.to_owned()));
    };
    let Some(url) = table.get("url") else {
        return Ok(None);
    };
    let DeValue::String(written) = url.get_ref() else {
        let why = "`[store] url` must be a string such as \"postgres://loopx@db.internal/loopx\"";
        return Err((line(url), why.to_owned()));
    };
    let written = written.trim();
    match loopx_vocab::store_url_problem(written) {
        None => Ok(Some(written.to_owned())),
        Some(problem) => {
            let (what, hint) = problem.words();
            Err((line(url), format!("`[store] url` {what}\n(hint: {hint})")))
        }
    }
}
